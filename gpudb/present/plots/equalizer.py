"""Equalizer against the static operating points (paper 001 figures 7-8): geometric-mean
speedup (top) and energy change (bottom) against each kernel's nominal static run, per kernel
category, one bar per policy, with paper 001's figures (section V-B) as markers where the paper
gives them (query equalizer_vs_static's paper_001_* columns)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpudb.present.plots import Plot, Result, add_note
from gpudb.present.plots.common import grouped_bars, number


@dataclass(frozen=True)
class Equalizer:
    """One GPU. Per policy, the speedup (%) and energy change (%) in each category, and the
    paper's (NaN where paper 001 gives none)."""
    gpu_id: str
    categories: list[str]
    speedup_pct: dict[str, list[float]]
    energy_change_pct: dict[str, list[float]]
    paper_speedup_pct: dict[str, list[float]]
    paper_energy_change_pct: dict[str, list[float]]


def equalizer_data(results: Mapping[str, Result], params) -> Equalizer:
    rows = results["equalizer_vs_static"].records()
    gpu_id = rows[0]["gpu_id"]  # one GPU's rows (plots.fetch_results)
    rows = [r for r in rows if r["gpu_id"] == gpu_id and r["kernel_id"] is None]
    categories = list(dict.fromkeys(r["category"] for r in rows))  # the query's order
    policies = sorted({r["policy"] for r in rows})
    at = {(r["policy"], r["category"]): r for r in rows}

    def series(column):
        return {p: [number(at[(p, c)][column]) if (p, c) in at else float("nan")
                    for c in categories] for p in policies}

    return Equalizer(gpu_id, categories, series("speedup_pct"), series("energy_change_pct"),
                     series("paper_001_speedup_pct"), series("paper_001_energy_change_pct"))


def draw_equalizer(figure, data: Equalizer) -> None:
    top, bottom = figure.subplots(2, 1, sharex=True)
    for ax, ours, paper, label in (
            (top, data.speedup_pct, data.paper_speedup_pct, "speedup (%)"),
            (bottom, data.energy_change_pct, data.paper_energy_change_pct,
             "energy change (%)")):
        centres = grouped_bars(ax, data.categories, ours)
        marked = False
        for policy, values in paper.items():
            for x, value in zip(centres[policy], values, strict=True):
                if value == value:  # not NaN: the paper gives this one
                    ax.plot(x, value, "kx", markersize=6,
                            label=None if marked else "paper 001 (GPGPU-Sim, Fermi)")
                    marked = True
        ax.set_ylabel(label)
    top.legend(fontsize=7, ncols=3)
    top.set_title(f"{data.gpu_id}: Equalizer and the static operating points against nominal",
                  fontsize=10)
    add_note(figure, "geometric means over the kernels of each category")


PLOTS = (
    Plot("equalizer_vs_static", ("equalizer_vs_static",), "paper 001 figures 7-8",
         "Equalizer's speedup and energy change in each mode against the static operating "
         "points, per kernel category, beside paper 001's figures", equalizer_data,
         draw_equalizer, "needs Equalizer runs: gpudb evaluate equalizer", size=(11.0, 7.0)),
)
