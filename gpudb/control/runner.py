"""A controller kind's closed-loop runs: load the GPU and kernels, let the kind plan its runs
(gpudb.control.kinds), and hand them to the one runner (gpudb.simulate.runner: skip what is
stored, simulate, store each run whole with its metrics and the rows it refers to)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing

from gpudb.control.kinds import Job, get


def run(db_path, kind: str, gpu: str, suite, kernels: list[str] | None = None, *,
        seed: int = 0, experiment: str | None = None,
        progress: Callable[[int, int], None] | None = None, jobs: int = 1,
        **options) -> list[dict]:
    """Simulate and store what the database lacks of the runs controller ``kind`` plans for
    ``gpu`` (a shipped name) and ``suite``'s kernels (all, or those named), with the
    simulator's ``seed``, in ``jobs`` worker processes (1: in this process, in plan order);
    ``options`` are the kind's. ``progress(done, total)`` counts the runs to simulate. Returns
    one row per planned run: kernel_id, run_id, time_ns, energy_j, added (False: it was stored
    already). Raises gpudb.simulate.runner.RunsInterrupted on Ctrl-C, SIGTERM or SIGHUP
    (finished runs are kept)."""
    from gpudb.simulate.runner import Planned, simulate_and_store
    from gpudb.store.db import connect
    from gpudb.store.runs import run_engine
    from sim.config import load_gpu, load_suite

    controller_kind = get(kind)
    g = load_gpu(gpu)
    s = load_suite(suite)
    specs = [s.kernel(k) for k in kernels] if kernels else list(s.kernels)
    name, description = controller_kind.experiment(g, s)
    with closing(connect(db_path)) as con:
        engine = run_engine(con, None)
        planned = [Planned(task(g, job, seed, engine), experiment or name, description,
                           job.columns, job.metrics)
                   for job in controller_kind.plan(g, specs, **options)]
        summary = simulate_and_store(
            con, planned, jobs, progress and (lambda done, total, _: progress(done, total)))
        stored = {r[0]: r[1:] for r in con.execute(
            "SELECT run_id, time_ns, energy_j FROM run WHERE run_id IN (SELECT unnest(?))",
            [[p.run_id for p in planned]]).fetchall()}
    return [{"kernel_id": p.task.kernel.kernel_id, "run_id": p.run_id,
             "time_ns": stored[p.run_id][0], "energy_j": stored[p.run_id][1],
             "added": p.run_id not in summary.skipped} for p in planned]


def task(gpu, job: Job, seed: int, engine: str = "reference"):
    """The sim.sweep.Task of a kind's Job: all SMs, the hardware CTA limit, the controller
    made in the process that simulates, simulated by ``engine``; its run_id the one
    Simulation.run gives it."""
    from sim.model import DEFAULT_INTERVAL_INSTRUCTIONS, run_id
    from sim.sweep import Task

    interval = int(job.interval_instructions or DEFAULT_INTERVAL_INSTRUCTIONS)
    if job.epoch_cycles is not None and engine != "reference":
        from gpudb.store.db import GpudbError
        raise GpudbError(f"this database holds the {engine} engine's runs, and runs cut by "
                         "cycles (epoch mode, Equalizer's) need the reference engine: run "
                         "them in a database of the reference engine's runs")
    rid = run_id(gpu, job.kernel, job.core_mhz, job.mem_mhz, gpu.n_sm, None, interval, seed,
                 job.run_key, job.epoch_cycles, job.core_headroom, engine)
    return Task(gpu, job.kernel, float(job.core_mhz), float(job.mem_mhz), gpu.n_sm, None,
                interval, int(seed), rid, job.make, job.epoch_cycles, job.core_headroom, engine)
