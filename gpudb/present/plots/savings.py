"""What the DVFS controllers save against always running at the highest core P-state: the
saving per predictor and kernel category with the offline bounds (paper 000 figures 11-12), and
the fraction of the dynamic-optimal saving each controller realises (paper 004 figure 1). Both
read `control_result` (`gpudb evaluate control`); by default the papers' unguarded controller
(-p guard paper) in the chip's energy (-p scope chip), as the papers report; every caption
names the guard and scope it shows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpudb.predictors import registry
from gpudb.present.plots import Plot, Result, add_note
from gpudb.present.plots.common import (
    BOUND_STYLE,
    BOUNDS,
    clip_note,
    colour,
    grouped_bars,
    mark_clipped,
    name_key,
    number,
    on_gpu,
    ordered,
    robust_limits,
    short_labels,
)

# Paper 000 section 5.2, the average over its Rodinia kernels on a GTX 480 (GPGPU-Sim):
# EDP saving when seeking the least EDP (figure 11; CRISP-L from section 5.3, in the predictor
# registry) and ED2P saving when seeking the least ED2P (figure 12), %.
PAPER_000_SAVING_PCT = {
    "edp": {p.name: p.paper_000_edp_saving_pct for p in registry()
            if p.paper_000_edp_saving_pct is not None},
    "ed2p": {"crisp": 9.0, "crit": 3.5, "lead": 4.9, "stall": 0.0},
}
# Paper 004 section 1 (figure 1 and the abstract): the fraction of the potential (dynamic
# optimal) energy saving realised on SPEC 2006 by an energy-minimising controller, on a CPU.
PAPER_004_ENERGY_FRACTION = {"critbw": 0.65, "stall": 0.34, "lead": 0.12}
FRACTION_FLOOR = -1.0
# the objective's metric: energy_perf minimises energy under a performance-loss bound
METRIC = {"edp": "edp", "ed2p": "ed2p", "energy": "energy", "energy_perf": "energy"}
# the papers' unguarded controllers in the papers' energy scope (the chip's), which paper
# 000's averages drawn beside them are counted in; `gpudb demo` draws -p guard guarded too
DEFAULTS = {"guard": "paper", "scope": "chip"}
_EMPTY = "needs control results: gpudb evaluate control (or gpudb demo)"


def _objective(params) -> str:
    return params.get("objective") or "edp"


def shown_controllers(params) -> str:
    """Which controllers a figure shows, from its -p guard, for its caption."""
    return {"paper": "the papers' controllers, unguarded",
            "guarded": "gpudb's guarded controllers"}.get(
                params.get("guard"), "the controllers under every guard")


def energy_scope(params) -> str:
    """The energy the savings are counted in, from its -p scope, for its caption."""
    return {"chip": "chip energy (the papers' scope)",
            "run": "run energy (board power included)"}.get(params.get("scope") or "run")


def _label(row: dict, guards: set) -> str:
    """A controller's name: its predictor, with its guard when the rows mix guards."""
    name = row["predictor"] or row["policy"]
    return f"{name} ({row['guard']})" if len(guards) > 1 and row["guard"] else name


@dataclass(frozen=True)
class Savings:
    """The objective's metric ('edp', 'ed2p', 'energy'), the categories ('all' last), each
    controller's mean saving (%) per category, each offline bound's, and paper 000's average
    saving per predictor (for the 'all' category), where it gives one."""
    metric: str
    categories: list[str]
    controllers: dict[str, list[float]]
    bounds: dict[str, list[float]]
    paper_pct: dict[str, float]
    shown: str = ""
    scope: str = ""
    gpu_id: str | None = None


def savings_data(results: Mapping[str, Result], params) -> Savings:
    rows = results["savings_summary"].records()
    metric = METRIC[_objective(params)]
    column = f"{metric}_saving_pct"
    categories = sorted({r["category"] for r in rows} - {"all"}) + ["all"]
    guards = {r["guard"] for r in rows if r["policy"] == "replay"}
    at = {(_label(r, guards), r["category"]): number(r[column]) for r in rows}
    names = ordered({_label(r, guards) for r in rows if r["policy"] == "replay"})
    bounds = [b for b in BOUNDS if any(r["policy"] == b for r in rows)]

    def series(name):
        return [at.get((name, c), float("nan")) for c in categories]

    paper = PAPER_000_SAVING_PCT.get(_objective(params), {})
    return Savings(metric, categories, {n: series(n) for n in names},
                   {b: series(b) for b in bounds}, {n: paper[n] for n in names if n in paper},
                   shown_controllers(params), energy_scope(params), params.get("gpu_id"))


def draw_savings(figure, data: Savings) -> None:
    ax = figure.subplots()
    centres = grouped_bars(ax, data.categories, data.controllers)
    ax.set_ylim(*robust_limits(
        [v for s in data.controllers.values() for v in s],
        include=(0.0, *(v for s in data.bounds.values() for v in s), *data.paper_pct.values())))
    marked = [m for name, values in data.controllers.items()
              for m in mark_clipped(ax, centres[name], values)]
    half = 0.42
    for bound, values in data.bounds.items():
        for g, value in enumerate(values):
            ax.hlines(value, g - half, g + half, colors="k", linestyles=BOUND_STYLE[bound],
                      label=bound if g == 0 else None)
    for k, (name, value) in enumerate(data.paper_pct.items()):
        ax.plot(centres[name][-1], value, "kx", markersize=7, zorder=4,
                label="paper 000 (Rodinia, GTX 480)" if k == 0 else None)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside, not over bars
    ax.set_xlabel("kernel category")
    ax.set_ylabel(f"{data.metric.upper()} saving against the highest P-state (%)")
    ax.set_title(on_gpu(data.gpu_id, f"{data.metric.upper()} saving per kernel category"),
                 fontsize=10)
    add_note(figure, f"bars: {data.shown}, in {data.scope}; lines: the offline bounds")
    add_note(figure, clip_note(ax, marked, "savings"))


@dataclass(frozen=True)
class Fraction:
    """Overall fraction of the potential saving realised per policy (controllers, then the
    offline bounds); per kernel the potential (dynamic-optimal) saving (%) and each
    controller's realised saving (%); paper 004's fractions (energy objectives only)."""
    metric: str
    policies: list[str]
    fraction: list[float]
    kernels: list[str]
    potential_pct: list[float]
    saving_pct: dict[str, list[float]]
    paper: dict[str, float]
    shown: str = ""
    scope: str = ""
    gpu_id: str | None = None


def fraction_data(results: Mapping[str, Result], params) -> Fraction:
    rows = results["fraction_of_potential"].records()
    guards = {r["guard"] for r in rows if r["policy"] == "replay"}
    overall = {_label(r, guards): number(r["fraction_realised"])
               for r in rows if r["kernel_id"] is None}
    controllers = ordered(_label(r, guards) for r in rows if r["policy"] == "replay")
    policies = controllers + [b for b in BOUNDS if b in overall]
    per_kernel = [r for r in rows if r["kernel_id"] is not None]
    kernels = sorted({r["kernel_id"] for r in per_kernel})
    potential = {r["kernel_id"]: number(r["potential_pct"]) for r in per_kernel}
    saving = {(_label(r, guards), r["kernel_id"]): number(r["saving_pct"]) for r in per_kernel}
    metric = METRIC[_objective(params)]
    paper = PAPER_004_ENERGY_FRACTION if metric == "energy" else {}
    return Fraction(metric, policies, [overall[p] for p in policies], kernels,
                    [potential[k] for k in kernels],
                    {c: [saving.get((c, k), float("nan")) for k in kernels]
                     for c in controllers},
                    {p: v for p, v in paper.items() if p in policies},
                    shown_controllers(params), energy_scope(params), params.get("gpu_id"))


def draw_fraction(figure, data: Fraction) -> None:
    top, bottom = figure.subplots(2, 1, height_ratios=(1, 1.3))
    colours = [colour(p) or "0.6" for p in data.policies]
    xs = list(range(len(data.policies)))
    top.bar(xs, data.fraction, color=colours)
    # a fraction below -1 (losing more than the whole potential saving) is cut at -1: the
    # controllers worth comparing, and paper 004's markers, lie between 0 and 1
    top.set_ylim(*robust_limits([max(f, FRACTION_FLOOR) for f in data.fraction],
                                include=(0.0, 1.0, *data.paper.values())))
    marked = mark_clipped(top, xs, data.fraction, fmt="{:.2f}")
    top.set_xticks(xs, data.policies, rotation=30, ha="right", fontsize=8)
    for k, (name, value) in enumerate(data.paper.items()):
        top.plot(data.policies.index(name), value, "kx", markersize=8, zorder=4,
                 label="paper 004 (SPEC 2006, CPU)" if k == 0 else None)
    if data.paper:
        top.legend(fontsize=7)
    top.axhline(1.0, color="k", linewidth=0.6)
    top.axhline(0.0, color="0.3", linewidth=0.6)
    top.set_ylabel("fraction of potential")
    top.set_title(on_gpu(data.gpu_id, f"fraction of the dynamic-optimal {data.metric} saving "
                         "realised"), fontsize=10)
    add_note(figure, f"{data.shown}, in {data.scope}")
    add_note(figure, clip_note(top, marked, "fractions"))
    ks = list(range(len(data.kernels)))
    bottom.bar(ks, data.potential_pct, 0.8, color="0.85", label="potential (dynamic optimal)")
    for name, values in data.saving_pct.items():
        bottom.plot(ks, values, "o", markersize=4, color=colour(name), label=name)
    bottom.set_ylim(*robust_limits([*data.potential_pct,
                                    *(v for s in data.saving_pct.values() for v in s)]))
    # one mark per kernel: the count beyond and the farthest, over every series
    every = (data.potential_pct, *data.saving_pct.values())
    cut = mark_clipped(bottom, ks * len(every), [v for values in every for v in values])
    labels = short_labels(data.kernels)
    bottom.set_xticks(ks, labels.labels, rotation=45, ha="right", fontsize=7)
    bottom.axhline(0.0, color="0.3", linewidth=0.6)
    bottom.set_ylabel(f"{data.metric} saving (%)")
    bottom.legend(fontsize=6, ncols=4)
    bottom.set_title("per kernel: the potential saving (grey) and each controller's", fontsize=8)
    add_note(figure, name_key(bottom, labels))
    add_note(figure, clip_note(bottom, cut, "savings (per kernel)"))


PLOTS = (
    Plot("savings_summary", ("savings_summary",), "paper 000 figures 11-12",
         "the objective's saving (EDP, ED2P or energy) per controller and kernel category, with "
         "the offline bounds and paper 000's averages", savings_data, draw_savings, _EMPTY,
         defaults=DEFAULTS, size=(11.0, 5.0)),
    Plot("fraction_of_potential", ("fraction_of_potential",), "paper 004 figure 1",
         "the fraction of the dynamic-optimal saving each controller realises, overall and per "
         "kernel", fraction_data, draw_fraction, _EMPTY, defaults=DEFAULTS,
         size=(11.0, 8.0)),
)
