"""Numbers for ``gpudb bench sim``: simulator speed per process and the jit speed-up.

Speed is simulated warp instructions per second of wall time in this process, after a warm-up
run so that loading numba's cache is not counted.
"""

from __future__ import annotations

import time

from sim.config import kernel_from_table, load_gpu, load_suite
from sim.model import simulate

# The suite kernels timed by default, one per behaviour the issue names.
BENCH_KERNELS = {"compute": "compute_ilp", "memory": "mem_stream", "store": "store_scatter"}

# A tiny kernel for the jit-versus-Python comparison: loads, ALU, SFU, shared memory, a
# barrier and stores, on two SMs, so every code path runs.
TINY_KERNEL = {
    "name": "tiny_mix", "category": "bench", "ctas": 8, "warps_per_cta": 4,
    "description": "Synthetic tiny kernel exercising every instruction type (bench only).",
    "shared_bytes": 1024,
    "phase": [{"iterations": 32, "body": [
        {"op": "ld", "id": "a", "trans": 2, "l1_hit": 0.3, "l2_hit": 0.3},
        {"op": "alu", "n": 3, "dep": "a"},
        {"op": "sfu", "dep": "prev"},
        {"op": "shared", "trans": 2},
        {"op": "bar"},
        {"op": "st", "trans": 2, "dram_write": 0.5},
    ]}],
}


def _timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def sim_speed(gpu: str = "gtx480", suite: str = "default",
              kernels: dict[str, str] | None = None, repeat: int = 1) -> list[dict]:
    """Simulated warp instructions per second (one process) for each kernel, at nominal
    clocks, the best of ``repeat`` runs (one process's speed swings by several per cent from
    run to run on a shared machine). Rows: {'case', 'kernel', 'instructions', 'seconds' (of
    the best run), 'warp_instructions_per_s' (the best), 'all_per_s' (every run's), and the
    simulator's work: 'sm_cycles' (GPU cycles x SMs), 'sm_cycles_processed' (the rest were
    skipped as idle), 'sm_cycles_issuing' (processed cycles that issued an instruction)}."""
    g = load_gpu(gpu)
    s = load_suite(suite)
    tiny = kernel_from_table(TINY_KERNEL, "bench")
    simulate(g, tiny, n_sm=2, interval_instructions=200)       # warm-up: load the jit cache
    rows = []
    for case, name in (kernels or BENCH_KERNELS).items():
        runs = [_timed(lambda name=name: simulate(g, s.kernel(name))) for _ in range(repeat)]
        result = runs[0][1]
        n = int(result.run["instructions"])
        seconds = min(t for t, _ in runs)
        rows.append({"case": case, "kernel": f"{s.name}/{name}", "instructions": n,
                     "seconds": seconds, "warp_instructions_per_s": n / seconds,
                     "all_per_s": [n / t for t, _ in runs],
                     "sm_cycles": int(result.extra["end_cycle"][-1]) * int(result.run["n_sm"]),
                     "sm_cycles_processed": int(result.extra["sm_cycles_processed"].sum()),
                     "sm_cycles_issuing": int(result.extra["sm_cycles_issuing"].sum())})
    return rows


def jit_speedup(gpu: str = "gtx480") -> dict:
    """Wall time of the jitted model and of its pure-Python execution on the tiny kernel.

    Returns {'kernel', 'instructions', 'jit_seconds', 'python_seconds', 'speedup'}; the
    results of the two are identical (tests check it).
    """
    g = load_gpu(gpu)
    tiny = kernel_from_table(TINY_KERNEL, "bench")
    args = dict(n_sm=2, interval_instructions=200)
    simulate(g, tiny, **args)                                    # warm-up
    jit_s, result = _timed(lambda: simulate(g, tiny, **args))
    py_s, _ = _timed(lambda: simulate(g, tiny, reference=True, **args))
    return {"kernel": "bench/tiny_mix", "instructions": int(result.run["instructions"]),
            "jit_seconds": jit_s, "python_seconds": py_s, "speedup": py_s / jit_s}


def bench_sim(gpu: str = "gtx480", suite: str = "default", repeat: int = 3) -> list[dict]:
    """Every figure of ``gpudb bench sim`` as rows {'metric', 'value', 'unit'}: each kernel's
    best speed of ``repeat`` runs (with the range), the memory-bound kernel's speed over the
    compute-bound one's, and the jit against pure Python."""
    speeds = sim_speed(gpu, suite, repeat=repeat)
    rows = []
    for r in speeds:
        spread = (f"; best of {repeat}, {min(r['all_per_s']) / 1e6:,.2f}-"
                  f"{max(r['all_per_s']) / 1e6:,.2f} M" if repeat > 1 else "")
        rows.append({"metric": f"sim_speed_{r['case']}", "value": r["warp_instructions_per_s"],
                     "unit": f"warp instructions/s ({r['kernel']}, {r['instructions']} "
                             f"instructions{spread})"})
    # Where the time goes: how many SM-cycles the model had to process per instruction (an
    # instruction issues only in a processed cycle, so "issuing" bounds it from below) and
    # what one processed SM-cycle cost, in the best run.
    for r in speeds:
        n, done = r["instructions"], r["sm_cycles_processed"]
        rows.append({"metric": f"sim_work_{r['case']}", "value": done / n,
                     "unit": f"SM-cycles processed per warp instruction "
                             f"({r['sm_cycles_issuing'] / n:.3f} of them issuing; "
                             f"{done / r['sm_cycles']:.1%} of {r['sm_cycles']:,} SM-cycles, "
                             f"the rest skipped as idle; {r['seconds'] / done * 1e9:.0f} ns "
                             "per processed SM-cycle)"})
    by_case = {r["case"]: r["warp_instructions_per_s"] for r in speeds}
    if "memory" in by_case and "compute" in by_case:
        rows.append({"metric": "sim_speed_memory_vs_compute",
                     "value": by_case["memory"] / by_case["compute"],
                     "unit": "(memory-bound speed / compute-bound speed)"})
    ratio = jit_speedup(gpu)
    rows.append({"metric": "jit_vs_python", "value": ratio["speedup"],
                 "unit": f"x faster than pure Python ({ratio['kernel']}, "
                         f"{ratio['instructions']} instructions)"})
    return rows
