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

from gpudb.plots import Plot, Result
from gpudb.plots.common import BOUND_STYLE, BOUNDS, colour, number, ordered

SHARES = ("crit_share", "lead_share", "stall_share", "load_outstanding_share",
          "computation_share")


@dataclass(frozen=True)
class Trace:
    """One kernel on one GPU. Per policy: each interval's start (ms, the intervals' times at
    the clocks chosen, summed) and core MHz, plus the end of the last interval; and at the
    highest P-state each interval's start (ms) and its shares of time (0-1)."""
    gpu_id: str
    kernel_id: str
    start_ms: dict[str, list[float]]
    core_mhz: dict[str, list[float]]
    end_ms: dict[str, float]
    top_start_ms: list[float]
    top_end_ms: float
    shares: dict[str, list[float]]


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
    starts, mhz, ends = {}, {}, {}
    for name in names:
        mine = sorted((r for r in rows if label(r) == name), key=lambda r: r["idx"])
        starts[name], ends[name] = _starts([r["time_ns"] for r in mine])
        mhz[name] = [r["core_mhz"] for r in mine]
    top = sorted((r for r in results["interval_shares"].records()
                  if (r["gpu_id"], r["kernel_id"]) == (gpu_id, kernel_id)),
                 key=lambda r: r["idx"])
    top_start, top_end = _starts([r["time_ns"] for r in top])
    return Trace(gpu_id, kernel_id, starts, mhz, ends, top_start, top_end,
                 {s: [number(r[s]) for r in top] for s in SHARES})


def draw_clock_trace(figure, data: Trace) -> None:
    trace, shares = figure.subplots(2, 1, height_ratios=(1.4, 1))
    for name, starts in data.start_ms.items():
        # a step per interval, held to the end of the last one
        xs = [*starts, data.end_ms[name]]
        ys = [*data.core_mhz[name], data.core_mhz[name][-1]]
        if name in BOUNDS:
            trace.step(xs, ys, where="post", color="k", linestyle=BOUND_STYLE[name], label=name)
        else:
            trace.step(xs, ys, where="post", color=colour(name), label=name)
    trace.set_xlabel("time under the policy (ms)")
    trace.set_ylabel("core clock (MHz)")
    trace.legend(fontsize=7, ncols=3)
    trace.set_title(f"{data.kernel_id} on {data.gpu_id}: core clock per interval under each "
                    "policy", fontsize=10)
    if data.top_start_ms:
        for name, values in data.shares.items():
            shares.step([*data.top_start_ms, data.top_end_ms], [*values, values[-1]], where="post",
                        label=name.removesuffix("_share"))
        shares.legend(fontsize=7, ncols=5)
    shares.set_ylim(0, 1.05)
    shares.set_xlabel("time at the highest core P-state (ms)")
    shares.set_ylabel("share of the interval")


PLOTS = (
    Plot("clock_trace", ("clock_trace", "interval_shares"), "no paper figure (explains "
         "paper 000 figures 11-12)",
         "a kernel's core clock per interval under each controller and offline policy, over "
         "time, beside its per-interval critical-path and memory-time shares",
         clock_trace_data, draw_clock_trace,
         "needs control results: gpudb evaluate control (or gpudb demo); -p kernel_id names "
         "a kernel", defaults={"guard": "paper"}, size=(10.0, 7.0)),
)
