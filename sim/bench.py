"""Numbers for ``gpudb bench sim``: simulator speed per process and the jit speed-up.

Speed is simulated warp instructions per second of wall time in this process, after a warm-up
run so that loading numba's cache is not counted.
"""

from __future__ import annotations

import time
from statistics import fmean, median

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


def sim_speeds(gpu: str = "gtx480", suite: str = "default",
               kernels: dict[str, str] | None = None, repeat: int = 1,
               engines=("reference",)) -> dict[str, list[dict]]:
    """Simulated warp instructions per second (one process) for each kernel, at nominal
    clocks, by each of ``engines``, the best of ``repeat`` runs (one process's speed swings by
    several per cent from run to run on a shared machine). The engines' runs are interleaved,
    each kernel's i-th run by every engine back to back, so that a slow spell of the machine
    falls on a pair rather than on one engine's runs. Per engine, rows: {'case', 'kernel',
    'engine', 'instructions', 'seconds' (of the best run), 'warp_instructions_per_s' (the
    best), 'all_per_s' (every run's), 'all_seconds' (every run's, in order), and the
    simulator's work: 'sm_cycles' (GPU cycles x SMs), 'sm_cycles_processed' (the rest were
    skipped as idle, or copied by the sampled engine), 'sm_cycles_issuing' (processed cycles
    that issued an instruction)}."""
    from sim.sweep import simulation_class

    g = load_gpu(gpu)
    s = load_suite(suite)
    classes = {engine: simulation_class(engine) for engine in engines}
    tiny = kernel_from_table(TINY_KERNEL, "bench")
    # warm-up: load the jit cache (1,000-instruction intervals give the sampled engine copies)
    for cls in classes.values():
        cls(g, tiny, n_sm=2, interval_instructions=1000).run()
    out = {engine: [] for engine in engines}
    for case, name in (kernels or BENCH_KERNELS).items():
        runs = {engine: [] for engine in engines}
        for _ in range(repeat):
            for engine, cls in classes.items():
                runs[engine].append(_timed(lambda cls=cls, name=name:
                                           cls(g, s.kernel(name)).run()))
        for engine in engines:
            result = runs[engine][0][1]
            n = int(result.run["instructions"])
            seconds = [t for t, _ in runs[engine]]
            out[engine].append({
                "case": case, "kernel": f"{s.name}/{name}", "engine": engine,
                "instructions": n, "seconds": min(seconds),
                "warp_instructions_per_s": n / min(seconds),
                "all_per_s": [n / t for t in seconds], "all_seconds": seconds,
                "sm_cycles": int(result.extra["end_cycle"][-1]) * int(result.run["n_sm"]),
                "sm_cycles_processed": int(result.extra["sm_cycles_processed"].sum()),
                "sm_cycles_issuing": int(result.extra["sm_cycles_issuing"].sum())})
    return out


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


def bench_sim(gpu: str = "gtx480", suite: str = "default", repeat: int = 3,
              engines=("reference", "sampled")) -> list[dict]:
    """Every figure of ``gpudb bench sim`` as rows {'metric', 'value', 'unit'}: for each of
    ``engines``, each kernel's best speed of ``repeat`` runs (with the range), the simulator's
    work per instruction, and the memory-bound kernel's speed over the compute-bound one's;
    each engine's speed over the reference's, kernel by kernel (measured in this run, the
    engines' runs interleaved: best over best, and with ``repeat`` > 1 the median of the
    back-to-back pairs' ratios); and the jit against pure Python."""
    rows = []
    by_engine = {}
    all_speeds = sim_speeds(gpu, suite, repeat=repeat, engines=engines)
    for engine in engines:
        speeds = all_speeds[engine]
        by_engine[engine] = {r["case"]: r["warp_instructions_per_s"] for r in speeds}
        tag = "" if engine == "reference" else f"_{engine}"
        for r in speeds:
            spread = (f"; best of {repeat}, {min(r['all_per_s']) / 1e6:,.2f}-"
                      f"{max(r['all_per_s']) / 1e6:,.2f} M" if repeat > 1 else "")
            rows.append({"metric": f"sim_speed{tag}_{r['case']}",
                         "value": r["warp_instructions_per_s"],
                         "unit": f"warp instructions/s ({engine} engine, {r['kernel']}, "
                                 f"{r['instructions']} instructions{spread})"})
        # Where the time goes: how many SM-cycles the model had to process per instruction
        # (an instruction issues only in a processed cycle, so "issuing" bounds it from
        # below) and what one processed SM-cycle cost, in the best run.
        for r in speeds:
            n, done = r["instructions"], r["sm_cycles_processed"]
            rows.append({"metric": f"sim_work{tag}_{r['case']}", "value": done / n,
                         "unit": f"SM-cycles processed per warp instruction "
                                 f"({r['sm_cycles_issuing'] / n:.3f} of them issuing; "
                                 f"{done / r['sm_cycles']:.1%} of {r['sm_cycles']:,} "
                                 "SM-cycles, the rest skipped as idle or copied; "
                                 f"{r['seconds'] / max(done, 1) * 1e9:.0f} ns per processed "
                                 "SM-cycle)"})
        speed = by_engine[engine]
        if "memory" in speed and "compute" in speed:
            rows.append({"metric": f"sim_speed{tag}_memory_vs_compute",
                         "value": speed["memory"] / speed["compute"],
                         "unit": f"(memory-bound speed / compute-bound speed, {engine} "
                                 "engine)"})
    ref = by_engine.get("reference")
    for engine in engines:
        if engine == "reference" or ref is None:
            continue
        for case, v in by_engine[engine].items():
            rows.append({"metric": f"{engine}_vs_reference_{case}", "value": v / ref[case],
                         "unit": f"x the reference engine's speed ({case}-bound kernel, "
                                 "same run, best over best)"})
        if repeat > 1:
            # the same ratio pair by pair (each pair run back to back): a slow spell of a
            # shared machine during one engine's best-of runs moves the ratio of the bests,
            # the pairs' median far less
            for mine, theirs in zip(all_speeds[engine], all_speeds["reference"], strict=True):
                r = [a / b for a, b in zip(theirs["all_seconds"], mine["all_seconds"],
                                           strict=True)]
                rows.append({"metric": f"{engine}_vs_reference_{mine['case']}_paired",
                             "value": median(r),
                             "unit": f"x the reference engine's speed (median of {len(r)} "
                                     f"back-to-back pairs, {min(r):.3f}-{max(r):.3f})"})
    ratio = jit_speedup(gpu)
    rows.append({"metric": "jit_vs_python", "value": ratio["speedup"],
                 "unit": f"x faster than pure Python ({ratio['kernel']}, "
                         f"{ratio['instructions']} instructions)"})
    return rows


# The settings `gpudb bench engine` compares the engines at (issue 42): gtx480 at its nominal
# and a low core clock, gtx980 at two, memory clocks nominal. (gpu, core MHz, mem MHz).
ENGINE_SETTINGS = (("gtx480", 700.0, 924.0), ("gtx480", 300.0, 924.0),
                   ("gtx980", 1000.0, 1000.0), ("gtx980", 500.0, 1000.0))
# The tolerances a coarser engine owes the reference (issue 42): run time within 3% (or the
# reference's own spread over the seeds where larger), run energy within 2%. The energy bar is
# also reported with the time bar's clause (``energy_seed_ok``): where the reference's own
# energy varies from seed to seed by more than 2%, it misses 2% against itself (cache_histo at
# gtx480 300 MHz, its seeds 3-5 against 0-2: +2.3%; twoslope_hw +2.7%; docs/simulator.md).
TIME_TOLERANCE = 0.03
ENERGY_TOLERANCE = 0.02
# The interval shares a controller and the predictors read (queries/interval_shares.sql):
# each one's mean over a run's intervals, in share of the interval's cycles.
SHARE_TOLERANCE = 0.03
SHARES = ("computation", "load_outstanding", "crit_path", "load_stall", "store_stall")


def interval_shares(intervals) -> dict[str, float]:
    """Mean over a run's intervals (those with cycles) of each share in SHARES: computation
    as CRISP classifies it (paper 000 section 3.5: not a load or store stall), cycles with a
    load outstanding (CRISP-L's load critical path), CRIT's critical path through memory
    (paper 004 section 3.1.1), CRISP's load and store stalls."""
    import numpy as np

    col = {c: np.asarray(intervals.column(c).to_pylist(), float) for c in (
        "cycles", "crit_path_cycles", "load_outstanding_cycles", "crisp_load_stall_cycles",
        "crisp_store_stall_cycles")}
    keep = col["cycles"] > 0
    cyc = col["cycles"][keep]
    load = col["crisp_load_stall_cycles"][keep] / cyc
    store = col["crisp_store_stall_cycles"][keep] / cyc
    return {"computation": float(np.mean(1.0 - load - store)),
            "load_outstanding": float(np.mean(col["load_outstanding_cycles"][keep] / cyc)),
            "crit_path": float(np.mean(col["crit_path_cycles"][keep] / cyc)),
            "load_stall": float(np.mean(load)), "store_stall": float(np.mean(store))}


_warm = False


def _timed_run(task) -> tuple[dict, float]:
    """One task simulated in this process: (its run row, wall seconds), after a warm-up of
    both engines on the tiny kernel in this process (loading numba's cache is not counted)."""
    global _warm
    from sim.sampled import SampledSimulation
    from sim.sweep import simulate_task

    if not _warm:
        tiny = kernel_from_table(TINY_KERNEL, "bench")
        # 1,000-instruction intervals: the tiny kernel then has copies, which load their code
        SampledSimulation(task.gpu, tiny, n_sm=2, interval_instructions=1000).run()
        simulate(task.gpu, tiny, n_sm=2, interval_instructions=200)
        _warm = True
    start = time.perf_counter()
    result = simulate_task(task)
    seconds = time.perf_counter() - start
    return {**result.run, "shares": interval_shares(result.intervals)}, seconds


def engine_comparison(suite: str = "default", kernels: list[str] | None = None,
                      settings=ENGINE_SETTINGS, seeds=(0,), engine: str = "sampled",
                      jobs: int = 1, progress=None) -> list[dict]:
    """Every kernel of ``suite`` at every setting, seed by seed, by the reference engine and
    by ``engine``: one row per (gpu, core MHz, mem MHz, kernel) with the mean run time and
    energy of each over ``seeds``, their relative differences, the reference's spread over
    the seeds ((max - min) / mean of its times; ``reference_energy_spread`` of its energies),
    the largest difference of one seed's run time from the reference's of that seed
    (``seed_time_diff``, signed), the largest difference of an interval share's
    mean over the seeds (interval_shares; ``share_diff``, signed, and which one,
    ``share_worst``), whether each is within tolerance (time: TIME_TOLERANCE or the spread
    where larger; energy: ENERGY_TOLERANCE, and ``energy_seed_ok`` it or the energy spread
    where larger; shares: SHARE_TOLERANCE), both engines'
    simulation seconds (in ``jobs`` worker processes: per-run times are comparable only
    between runs timed alike), and whether the instruction totals are equal."""
    from sim.sweep import plan, worker_count, worker_pool

    s = load_suite(suite)
    tasks = []
    for gpu, core, mem in settings:
        g = load_gpu(gpu)
        for seed in seeds:
            for eng in ("reference", engine):
                tasks += plan(g, s, kernels, [core], [mem], seed=seed, engine=eng)
    runs: dict = {}
    jobs = worker_count(jobs, len(tasks))
    if jobs == 1:
        done = (_timed_run(t) for t in tasks)
    else:
        pool = worker_pool(jobs)
        done = pool.map(_timed_run, tasks)
    for i, (run, seconds) in enumerate(done):
        key = (run["gpu_id"], run["core_mhz"], run["mem_mhz"], run["kernel_id"])
        runs.setdefault(key, {}).setdefault(run["engine"], []).append((run, seconds))
        if progress:
            progress(i + 1, len(tasks))
    if jobs > 1:
        pool.shutdown()
    rows = []
    for (gpu, core, mem, kernel), by in runs.items():
        ref, other = by["reference"], by[engine]
        t_ref = [r["time_ns"] for r, _ in ref]
        dt = fmean([r["time_ns"] for r, _ in other]) / fmean(t_ref) - 1.0
        de = fmean([r["energy_j"] for r, _ in other]) / fmean([r["energy_j"] for r, _ in ref]) - 1.0
        spread = (max(t_ref) - min(t_ref)) / fmean(t_ref)
        e_ref = [r["energy_j"] for r, _ in ref]
        e_spread = (max(e_ref) - min(e_ref)) / fmean(e_ref)
        # seed by seed, the engine's run against the reference's of the same seed: the means
        # above can meet the tolerance while single runs, which a controller sees, miss it
        # (compute_fma on gtx980 at 1000 MHz: -4.6, +6.3, -4.1% for seeds 0-2, mean -0.8%)
        by_seed = {r["seed"]: r["time_ns"] for r, _ in ref}
        per_seed = [r["time_ns"] / by_seed[r["seed"]] - 1.0 for r, _ in other]
        share = {k: fmean([r["shares"][k] for r, _ in other])
                 - fmean([r["shares"][k] for r, _ in ref]) for k in SHARES}
        worst = max(SHARES, key=lambda k: abs(share[k]))
        rows.append({
            "gpu": gpu, "core_mhz": core, "mem_mhz": mem, "kernel": kernel.split("/")[-1],
            "reference_time_ns": fmean(t_ref), "time_diff": dt, "energy_diff": de,
            "reference_spread": spread, "reference_energy_spread": e_spread,
            "time_ok": abs(dt) <= max(TIME_TOLERANCE, spread),
            "seed_time_diff": max(per_seed, key=abs),
            "energy_ok": abs(de) <= ENERGY_TOLERANCE,
            "energy_seed_ok": abs(de) <= max(ENERGY_TOLERANCE, e_spread),
            "share_diff": share[worst], "share_worst": worst,
            "shares_ok": abs(share[worst]) <= SHARE_TOLERANCE,
            "reference_s": sum(t for _, t in ref), "engine_s": sum(t for _, t in other),
            "instructions_equal": all(a["instructions"] == b["instructions"]
                                      for (a, _), (b, _) in zip(ref, other, strict=True)),
        })
    return rows
