"""Core x memory heat maps: a predictor's error from one base setting to every (core, memory)
target (paper 003 figures 13-14), a kernel's (or the kernels' mean) time, power and EDP over the
grid of fixed runs, and Wu et al.'s error by the base setting a model was trained at (paper 002
figures 10-11: SM count x memory MHz at one core MHz)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpudb.analysis.evaluate_grid import PAPER_003_MAPE_PCT
from gpudb.present.plots import Plot, Result, add_note
from gpudb.present.plots.common import grid, heatmap, number, on_gpu, ordered
from gpudb.store.db import GpudbError

# Paper 002 section V (abstract): average validation error of 15% for performance, 10% power
PAPER_002_ERROR_PCT = {"time": 15.0, "power": 10.0}


@dataclass(frozen=True)
class Heat:
    """One heat map: x (columns) and y (rows) values, values[i][j] at (ys[i], xs[j]) (NaN
    where there is no row), the axis and colour bar labels, a title, and a caption note."""
    xs: list[float]
    ys: list[float]
    values: list[list[float]]
    xlabel: str
    ylabel: str
    label: str
    title: str
    note: str = ""


def _draw(figure, heats: list[Heat]) -> None:
    for ax, heat in zip(figure.subplots(1, len(heats), squeeze=False)[0], heats, strict=True):
        heatmap(ax, heat.xs, heat.ys, heat.values, heat.xlabel, heat.ylabel, heat.label)
        ax.set_title(heat.title, fontsize=9)
        add_note(figure, heat.note)
    gaps = sum(v != v for heat in heats for row in heat.values for v in row)  # NaN: no rows
    if gaps:
        add_note(figure, f"grey: no runs at that setting ({gaps} cells)")


ERROR_COLUMN = {"mape": ("mape_pct", "MAPE (%)"),
                "mean_error": ("mean_error_pct", "mean signed error (%)"),
                "max_error": ("max_ape_pct", "largest absolute error (%)")}


def error_by_setting_data(results: Mapping[str, Result], params) -> list[Heat]:
    rows = results["error_by_setting"].records()
    # without -p predictor the first (in table order) with targets at several memory clocks
    predictors = ordered({r["predictor"] for r in rows})
    by = {p: [r for r in rows if r["predictor"] == p and r["target_core_mhz"] is not None]
          for p in predictors}
    two_d = [p for p in predictors if len({r["target_mem_mhz"] for r in by[p]}) > 1]
    predictor = (two_d or predictors)[0]
    column, label = ERROR_COLUMN[params["metric"]]
    overall = next(r for r in rows if r["predictor"] == predictor
                   and r["target_core_mhz"] is None)
    paper = (f"; paper 003: {PAPER_003_MAPE_PCT:g}%" if predictor == "wangchu" else "")
    xs, ys, values = grid(by[predictor], "target_core_mhz", "target_mem_mhz", column)
    return [Heat(xs, ys, values, "target core clock (MHz)", "target memory clock (MHz)", label,
                 on_gpu(params.get("gpu_id"), f"{predictor}'s {label} by target setting"),
                 f"{predictor}'s error from the base setting, over the kernels; MAPE over all "
                 f"targets {number(overall['mape_pct']):.3g}%{paper}")]


RUN_COLUMN = {"edp": ("edp_j_s", "EDP (J s)", "edp_ratio"),
              "time": ("time_ns", "time (ns)", "time_ratio"),
              "power": ("power_w", "average power (W)", "power_ratio")}


def run_by_setting_data(results: Mapping[str, Result], params) -> list[Heat]:
    rows = results["run_by_setting"].records()
    gpu_id = rows[0]["gpu_id"]  # one GPU's rows (plots.fetch_results)
    absolute, label, ratio = RUN_COLUMN[params["metric"]]
    if params.get("kernel_id"):
        column, title = absolute, f"{params['kernel_id']} on {gpu_id}: {label}"
    else:
        # kernels differ in size: their geometric mean relative to the highest setting
        column, label = ratio, f"{params['metric']} / at the highest setting"
        title = (f"{gpu_id}: {params['metric']} relative to the highest setting, geometric "
                 f"mean over {max(r['kernels'] for r in rows)} kernels")
    xs, ys, values = grid(rows, "core_mhz", "mem_mhz", column)
    return [Heat(xs, ys, values, "core clock (MHz)", "memory clock (MHz)", label, title)]


def wu_error_by_base_data(results: Mapping[str, Result], params) -> list[Heat]:
    rows = [r for r in results["wu_error_by_base"].records() if r["model_id"] is not None]
    if not rows:
        raise GpudbError("plot wu_error_by_base: no wu model at any base setting (gpudb train "
                         "wu --gpu G --base all)")
    gpu_id = rows[0]["gpu_id"]  # one GPU's rows (plots.fetch_results)
    # paper 002 draws one heat map per base engine clock; ours: the highest with models
    core = max(r["base_core_mhz"] for r in rows)
    rows = [r for r in rows if r["base_core_mhz"] == core]
    heats = []
    for what in ("time", "power"):
        xs, ys, values = grid(rows, "base_n_sm", "base_mem_mhz", f"{what}_mape_pct")
        heats.append(Heat(xs, ys, values, "base SM count", "base memory clock (MHz)",
                          f"{what} MAPE (%)",
                          f"{gpu_id}, base core {core:g} MHz: {what} error",
                          f"paper 002's average {what} error {PAPER_002_ERROR_PCT[what]:g}%"))
    return heats


PLOTS = (
    Plot("error_by_setting", ("error_by_setting",), "paper 003 figures 13-14",
         "a predictor's error from one base (core, memory) setting to every target, as a "
         "core x memory heat map (-p metric mape|mean_error|max_error)",
         error_by_setting_data, _draw,
         "needs runs over a core x memory grid: gpudb sweep --mem-mhz LIST, or measured data",
         options={"metric": tuple(ERROR_COLUMN)}, size=(7.0, 5.5)),
    Plot("run_by_setting", ("run_by_setting",), "paper 003's 7x7 grid (no figure)",
         "one kernel's time, power or EDP over the core x memory grid of fixed runs, or the "
         "kernels' geometric mean relative to the highest setting (-p metric edp|time|power)",
         run_by_setting_data, _draw, "needs fixed runs: gpudb sweep or gpudb ingest",
         options={"metric": tuple(RUN_COLUMN)}, size=(7.0, 5.5)),
    Plot("wu_error_by_base", ("wu_error_by_base",), "paper 002 figures 10-11",
         "Wu et al.'s time and power error by the base setting a model was trained at (SM count "
         "x memory MHz at the highest base core MHz)", wu_error_by_base_data, _draw,
         "needs fixed runs and wu models: gpudb train wu --gpu G --base all", size=(11.0, 4.5)),
)
