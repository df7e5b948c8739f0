"""A kernel's core clock interval by interval under each control policy (query clock_trace),
over the time the intervals take under that policy, above the kernel's per-interval shares of
time at the highest P-state that the predictors read (query interval_shares): CRIT's critical
path (paper 004 section 3.1.1), LEAD's leading loads, STALL's stalls, CRISP-L's load
outstanding time and CRISP's computation (paper 000 section 3.5). Where the memory shares rise,
a good controller steps the clock down. No paper draws this; it shows why a controller's saving
in savings_summary is what it is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpudb.present.plots import Plot, Result, add_note
from gpudb.present.plots.common import BOUND_STYLE, BOUNDS, colour, number, ordered
from gpudb.present.plots.savings import DEFAULTS

SHARE_COLOURS = ("0.15", "#b8860b", "#008b8b", "#8b0000", "0.55")
SHARES = ("crit_share", "lead_share", "stall_share", "load_outstanding_share",
          "computation_share")


@dataclass(frozen=True)
class Trace:
    """One kernel on one GPU. Per policy: each interval's start (ms, the intervals' times at
    the clocks chosen, summed), core MHz and index, plus the end of the last interval; at the
    highest P-state each interval's index, start (ms) and its shares of time (0-1); the title
    (kernel and GPU) and the caption note naming the controller, guard and energy scope."""
    gpu_id: str
    kernel_id: str
    start_ms: dict[str, list[float]]
    core_mhz: dict[str, list[float]]
    end_ms: dict[str, float]
    top_start_ms: list[float]
    top_end_ms: float
    shares: dict[str, list[float]]
    idx: dict[str, list[int]]
    top_idx: list[int]
    title: str
    note: str = ""


def _starts(times_ns: list[float]) -> tuple[list[float], float]:
    starts, clock = [], 0.0
    for t in times_ns:
        starts.append(clock / 1e6)
        clock += t
    return starts, clock / 1e6


def clock_trace_data(results: Mapping[str, Result], params) -> Trace:
    rows = results["clock_trace"].records()
    # without -p kernel_id (and gpu_id) the first kernel of the rows
    gpu_id, kernel_id = rows[0]["gpu_id"], rows[0]["kernel_id"]
    rows = [r for r in rows if (r["gpu_id"], r["kernel_id"]) == (gpu_id, kernel_id)]
    guards = {r["guard"] for r in rows if r["policy"] == "replay"}

    def label(r):
        name = r["predictor"] or r["policy"]
        return f"{name} ({r['guard']})" if len(guards) > 1 and r["guard"] else name

    names = ordered({label(r) for r in rows if r["policy"] == "replay"})
    names += [b for b in BOUNDS if any(r["policy"] == b for r in rows)]
    starts, mhz, ends, idx = {}, {}, {}, {}
    for name in names:
        mine = sorted((r for r in rows if label(r) == name), key=lambda r: r["idx"])
        starts[name], ends[name] = _starts([r["time_ns"] for r in mine])
        mhz[name] = [r["core_mhz"] for r in mine]
        idx[name] = [r["idx"] for r in mine]
    top = sorted((r for r in results["interval_shares"].records()
                  if (r["gpu_id"], r["kernel_id"]) == (gpu_id, kernel_id)),
                 key=lambda r: r["idx"])
    top_start, top_end = _starts([r["time_ns"] for r in top])
    return Trace(gpu_id, kernel_id, starts, mhz, ends, top_start, top_end,
                 {s: [number(r[s]) for r in top] for s in SHARES}, idx,
                 [r["idx"] for r in top], f"{kernel_id} on {gpu_id}: core clock per interval",
                 _note(params, guards))


def _note(params, guards: set) -> str:
    """The caption: the controller (predictor and guard), the objective and energy scope."""
    predictor = params.get("predictor") or "every predictor"
    guard = params.get("guard")
    if guard == "paper":
        who = f"{predictor}'s controller as the papers give it, unguarded"
    elif guard == "guarded":
        who = f"{predictor}'s controller with gpudb's guard"
    else:
        who = f"{predictor}'s controller under {' and '.join(sorted(guards)) or 'every'} guard"
    scope = {"chip": "chip energy", "run": "run energy"}.get(params.get("scope") or "run")
    objective = (params.get("objective") or "edp").upper()
    return (f"coloured: {who}; black: the offline policies; minimising {objective} in "
            f"{scope}")


def draw_clock_trace(figure, data: Trace) -> None:
    """Both panels over one axis, the kernel's progress: each interval from where it starts
    at the highest P-state, so a clock step lies above the shares it answers to (the
    policies' own times differ; the legend gives each one's total). The offline policies are
    drawn first, thin and black, the controllers over them, thick and coloured."""
    trace, shares = figure.subplots(2, 1, height_ratios=(1.4, 1), sharex=True)
    at = dict(zip(data.top_idx, data.top_start_ms, strict=True))
    order = sorted(data.core_mhz, key=lambda n: n not in BOUNDS)  # bounds first, underneath
    for k, name in enumerate(order):
        # a step per interval at its start at the highest P-state, held to the kernel's end
        xs = [at.get(i, float("nan")) for i in data.idx[name]] + [data.top_end_ms]
        ys = [*data.core_mhz[name], data.core_mhz[name][-1]]
        label = f"{name}: {data.end_ms[name]:.3g} ms"
        if name in BOUNDS:
            trace.step(xs, ys, where="post", color="k", linestyle=BOUND_STYLE[name],
                       linewidth=0.9, alpha=0.7, label=label, zorder=2)
        else:
            trace.step(xs, ys, where="post", color=colour(name) or f"C{k % 10}",
                       linewidth=2.2, label=label, zorder=3)
    trace.set_ylabel("core clock (MHz)")
    trace.legend(fontsize=7, ncols=3, title="policy: its time", title_fontsize=7)
    trace.set_title(data.title, fontsize=10)
    add_note(figure, data.note)
    if data.top_start_ms:
        # colours apart from the predictors' (tab20) above, so a share is not read as one
        for k, (name, values) in enumerate(data.shares.items()):
            shares.step([*data.top_start_ms, data.top_end_ms], [*values, values[-1]],
                        where="post", label=name.removesuffix("_share"),
                        color=SHARE_COLOURS[k % len(SHARE_COLOURS)], linestyle=(0, (4, 1.5)))
        shares.legend(fontsize=7, ncols=5)
    shares.set_ylim(0, 1.05)
    shares.set_xlabel("kernel progress: time the intervals take at the highest core P-state (ms)")
    shares.set_ylabel("share of the interval")


PLOTS = (
    Plot("clock_trace", ("clock_trace", "interval_shares"), "no paper figure (explains "
         "paper 000 figures 11-12)",
         "a kernel's core clock per interval under each controller and offline policy, over "
         "time, beside its per-interval critical-path and memory-time shares",
         clock_trace_data, draw_clock_trace,
         "needs control results: gpudb evaluate control (or gpudb demo); -p kernel_id names "
         "a kernel", defaults=DEFAULTS, size=(10.0, 7.0)),
)
