"""Prediction error from the base core P-state (paper 000 section 5.1): by target P-state
(figure 8) and by kernel (figure 9), with paper 000's average MAPE per model where it gives one
(GTX 480 in GPGPU-Sim, Rodinia, base 700 MHz; gpudb.predictors' paper_000_mape_pct)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpudb.predictors import registry
from gpudb.present.plots import Plot, Result, add_note
from gpudb.present.plots.common import (
    clip_note,
    grouped_bars,
    mark_clipped,
    name_key,
    number,
    on_gpu,
    ordered,
    robust_limits,
    short_labels,
)

PAPER_000_MAPE_PCT = {p.name: p.paper_000_mape_pct for p in registry()
                      if p.paper_000_mape_pct is not None}
_EMPTY = "needs fixed runs at several core P-states: gpudb sweep, or gpudb demo"
# mape_by_kernel's widest figure (inches), its margins and legend (3 inches), and the most bars
# it draws: one pixel each at the default 100 dpi. A file of 8,000 measured kernels (one
# predictor) drew 8,000 bars and labels that no one could read, in 78 s of its report's 163 s;
# past this, the kernels with the largest errors are drawn (the means stay over all of them)
MAX_WIDTH_IN = 30.0
MAX_BARS = int((MAX_WIDTH_IN - 3.0) * 100)


@dataclass(frozen=True)
class TargetError:
    """Per predictor, its signed mean error (%) at each target core MHz and the range
    (smallest, largest) over the kernels; NaN where a predictor has no prediction there."""
    targets_mhz: list[float]
    mean_pct: dict[str, list[float]]
    low_pct: dict[str, list[float]]
    high_pct: dict[str, list[float]]
    gpu_id: str | None = None


def error_by_target_data(results: Mapping[str, Result], params) -> TargetError:
    rows = results["error_by_target"].records()
    targets = sorted({r["target_core_mhz"] for r in rows})
    at = {(r["predictor"], r["target_core_mhz"]): r for r in rows}
    predictors = ordered(r["predictor"] for r in rows)

    def series(column):
        return {p: [number(at[(p, t)][column]) if (p, t) in at else float("nan")
                    for t in targets] for p in predictors}

    return TargetError(targets, series("mean_error_pct"), series("min_error_pct"),
                       series("max_error_pct"), params.get("gpu_id"))


def draw_error_by_target(figure, data: TargetError) -> None:
    """Signed mean error bars with their range over the kernels, on an axis set by the bars
    (robust_limits): a bar beyond it is written at the edge, a range line running past it is
    counted in the caption. Paper 000 gives MAPE, not a signed mean, per predictor: its figures
    are compared, MAPE with MAPE, in mape_by_kernel, not quoted here."""
    ax = figure.subplots()
    centres = grouped_bars(ax, [f"{t:g}" for t in data.targets_mhz], data.mean_pct,
                           {p: (data.low_pct[p], data.high_pct[p]) for p in data.mean_pct})
    ax.set_ylim(*robust_limits([v for s in data.mean_pct.values() for v in s]))
    marked = [m for p, values in data.mean_pct.items()
              for m in mark_clipped(ax, centres[p], values)]
    low, high = ax.get_ylim()
    past = sum(1 for p in data.mean_pct for lo, hi in zip(data.low_pct[p], data.high_pct[p],
                                                              strict=True)
               if lo < low or hi > high)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside: not over bars
    ax.set_xlabel("target core clock (MHz)")
    ax.set_ylabel("signed time prediction error (%)")
    ax.set_title(on_gpu(data.gpu_id, "time prediction error by target core clock"),
                 fontsize=10)
    add_note(figure, "bars: signed mean error over the kernels (> 0: over-predicted), lines: "
             "its range")
    add_note(figure, clip_note(ax, marked, "mean errors"))
    if past:
        add_note(figure, f"{past} range lines cut at the axis")


@dataclass(frozen=True)
class KernelError:
    """Per predictor, its MAPE (%) over the target P-states for each kernel, the mean over the
    kernels, the number of kernels each mean is over, and paper 000's average where it gives
    one."""
    kernels: list[str]
    mape_pct: dict[str, list[float]]
    mean_pct: dict[str, float]
    paper_pct: dict[str, float]
    counted: dict[str, int] = field(default_factory=dict)
    gpu_id: str | None = None
    of_kernels: int | None = None   # where only some kernels are drawn: how many there are


def mape_by_kernel_data(results: Mapping[str, Result], params) -> KernelError:
    result = results["mape_by_kernel"]
    rows = result.records()
    kernels = [r["kernel_id"] for r in rows]  # one GPU's (plots.fetch_results)
    # a predictor column with no value (no predictions on these runs) is left out
    scored = [c.removesuffix("_pct") for c in result.columns
              if c.endswith("_pct") and any(r[c] is not None for r in rows)]
    predictors = ordered(scored)
    mape = {p: [number(r[f"{p}_pct"]) for r in rows] for p in predictors}
    mean, counted = {}, {}
    for p in predictors:
        values = [r[f"{p}_pct"] for r in rows if r[f"{p}_pct"] is not None]
        mean[p], counted[p] = sum(values) / len(values), len(values)
    gpu_id = params.get("gpu_id") or (rows[0].get("gpu_id") if rows else None)
    room = MAX_BARS // max(len(predictors), 1) - 1      # kernels, beside the means' cluster
    of_kernels = None
    if len(kernels) > room:
        # the kernels with the largest MAPE of any predictor, in the query's order
        worst = [max((v[i] for v in mape.values() if not math.isnan(v[i])), default=-1.0)
                 for i in range(len(kernels))]
        keep = sorted(sorted(range(len(kernels)), key=lambda i: -worst[i])[:room])
        of_kernels = len(kernels)
        kernels = [kernels[i] for i in keep]
        mape = {p: [v[i] for i in keep] for p, v in mape.items()}
    return KernelError(kernels, mape, mean,
                       {p: PAPER_000_MAPE_PCT[p] for p in predictors if p in PAPER_000_MAPE_PCT},
                       counted, gpu_id, of_kernels)


def fit_kernels(data: KernelError, size: tuple[float, float]) -> tuple[float, float]:
    """Wide enough for every kernel's bars and its label: 0.1 inch a bar, at least the
    default, at most MAX_WIDTH_IN."""
    bars = (len(data.kernels) + 1) * max(len(data.mape_pct), 1)
    return min(max(size[0], 3.0 + 0.1 * bars + 0.12 * len(data.kernels)), MAX_WIDTH_IN), size[1]


def draw_mape_by_kernel(figure, data: KernelError) -> None:
    """A cluster of bars per kernel (its label shortened, the full names in a key) and the
    mean of each predictor; where the means are over different kernels (a model scored on its
    validation kernels only), each mean bar says over how many."""
    ax = figure.subplots()
    labels = short_labels(data.kernels)
    groups = [*labels.labels, "mean"]
    series = {p: [*v, data.mean_pct[p]] for p, v in data.mape_pct.items()}
    centres = grouped_bars(ax, groups, series)
    ax.set_ylim(*robust_limits([v for s in series.values() for v in s],
                               include=(0.0, *data.paper_pct.values())))
    marked = [m for p, values in series.items() for m in mark_clipped(ax, centres[p], values)]
    for k, (p, value) in enumerate(data.paper_pct.items()):
        ax.plot(centres[p][-1], value, "kx", markersize=7, zorder=4,
                label="paper 000's MAPE (Rodinia, GTX 480)" if k == 0 else None)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside: not over bars
    ax.set_ylabel("MAPE over target P-states (%)")
    ax.set_title(on_gpu(data.gpu_id, "time prediction MAPE by kernel"), fontsize=10)
    if len(set(data.counted.values())) > 1:
        low, high = ax.get_ylim()
        for p, n in data.counted.items():
            value = min(max(data.mean_pct[p], low), high)
            ax.annotate(f"n={n}", (centres[p][-1], value), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=6,
                        rotation=90)
        add_note(figure, "mean: over the kernels each predictor has predictions for (n=)")
    if data.of_kernels:
        add_note(figure, f"the {len(data.kernels):,} of {data.of_kernels:,} kernels with the "
                         "largest MAPE (a bar a pixel wide at most); the means are over all")
    add_note(figure, name_key(ax, labels))
    add_note(figure, clip_note(ax, marked, "MAPEs"))


PLOTS = (
    Plot("error_by_target", ("error_by_target",), "paper 000 figure 8",
         "signed time prediction error per predictor and target core P-state, with its range "
         "over the kernels", error_by_target_data, draw_error_by_target, _EMPTY),
    Plot("mape_by_kernel", ("mape_by_kernel",), "paper 000 figure 9",
         "each predictor's MAPE over the target P-states per kernel, and the mean beside "
         "paper 000's", mape_by_kernel_data, draw_mape_by_kernel, _EMPTY, size=(12.0, 5.0),
         fit=fit_kernels),
)
