"""The one runner of closed-loop controllers: load the GPU and kernels, let the controller
kind plan its runs (gpudb.control.kinds), skip those the database has, simulate the rest
(sim.model.Simulation) and store each whole (run, intervals, metrics and the rows they refer
to, in one transaction) through gpudb.store.runs."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from gpudb.control.kinds import get


def run(db_path, kind: str, gpu: str, suite, kernels: list[str] | None = None, *,
        seed: int = 0, experiment: str | None = None,
        progress: Callable[[int, int], None] | None = None, **options) -> list[dict]:
    """Simulate and store what the database lacks of the runs controller ``kind`` plans for
    ``gpu`` (a shipped name) and ``suite``'s kernels (all, or those named), with the
    simulator's ``seed``; ``options`` are the kind's. Returns one row per planned run:
    kernel_id, run_id, time_ns, energy_j, added (False: it was stored already)."""
    from gpudb.store.db import atomic, connect
    from gpudb.store.runs import (
        ensure_experiment,
        ensure_gpu,
        ensure_kernels,
        insert_metrics,
        insert_runs,
    )
    from sim.config import load_gpu, load_suite
    from sim.model import DEFAULT_INTERVAL_INSTRUCTIONS, Simulation, run_id

    controller_kind = get(kind)
    g = load_gpu(gpu)
    s = load_suite(suite)
    specs = [s.kernel(k) for k in kernels] if kernels else list(s.kernels)
    jobs = controller_kind.plan(g, specs, **options)
    con = connect(db_path)
    done = []
    try:
        if progress:
            progress(0, len(jobs))
        for n, job in enumerate(jobs):
            interval = int(job.interval_instructions or DEFAULT_INTERVAL_INSTRUCTIONS)
            rid = run_id(g, job.kernel, job.core_mhz, job.mem_mhz, g.n_sm, None, interval,
                         seed, job.run_key, job.epoch_cycles, job.core_headroom)
            have = con.execute("SELECT run_id, time_ns, energy_j FROM run WHERE run_id = ?",
                               [rid]).fetchall()
            added = not have
            if added:
                sim = Simulation(g, job.kernel, job.core_mhz, job.mem_mhz, seed=seed,
                                 interval_instructions=interval, epoch_cycles=job.epoch_cycles,
                                 core_headroom=job.core_headroom)
                controller = job.make(sim)
                result = sim.run(controller)
                if result.run["run_id"] != rid:     # the skip test above would be wrong
                    raise RuntimeError(f"run id {result.run['run_id']} != planned {rid}")
                result.run.update(job.columns)
                metrics = job.metrics(controller, rid) if job.metrics else None
                with atomic(con):
                    ensure_gpu(con, g)
                    ensure_kernels(con, specs)
                    name, description = controller_kind.experiment(g, s)
                    eid = ensure_experiment(con, experiment or name, description)
                    insert_runs(con, pa.Table.from_pylist([dict(result.run, experiment_id=eid)]),
                                result.intervals)
                    if metrics is not None:
                        insert_metrics(con, metrics, skip_stored=False)
                have = [(rid, result.run["time_ns"], result.run["energy_j"])]
            done.append({"kernel_id": job.kernel.kernel_id, "run_id": have[0][0],
                         "time_ns": have[0][1], "energy_j": have[0][2], "added": added})
            if progress:
                progress(n + 1, len(jobs))
    finally:
        con.close()
    return done
