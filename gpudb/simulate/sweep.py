"""``gpudb sweep``: simulate the runs of a sweep that the database lacks, and store them.

The simulator plans (sim.sweep.plan: a grid of settings, no database); this module names the
experiment and hands the runs to the one runner (gpudb.simulate.runner), which skips the runs
stored already, simulates the rest in worker processes (or on Dask) and stores each result as
it arrives, so an interrupted sweep keeps every run it finished and a re-run resumes without
duplicates. A sweep that fails before finishing a run leaves the file as it was. SIGTERM and
SIGHUP stop a sweep as Ctrl-C does, and its worker processes end with it.
"""

from __future__ import annotations

import time
from contextlib import closing
from pathlib import Path

from gpudb.simulate.runner import Planned, Progress, simulate_and_store
from gpudb.store.db import connect
from gpudb.store.runs import experiment_id, run_engine
from sim.config import GpuConfig, Suite, load_gpu, load_suite
from sim.sweep import check_sweep_size, plan


def sweep(db_path: str | Path, gpu: str | GpuConfig, suite: str | Suite,
          kernels: list[str] | None = None, core_mhz: list[float] | None = None,
          mem_mhz: list[float] | None = None, sms: list[int] | None = None,
          ctas: list[int | None] | None = None, interval_instructions: int | None = None,
          seed: int | list[int] = 0, jobs: int = 1, experiment: str | None = None,
          progress: Progress | None = None, scheduler: str | None = None,
          chunk_instructions: int | None = None, engine: str | None = None) -> dict:
    """Simulate the missing runs of a sweep (sim.sweep.plan) and write them to the database
    at ``db_path``; ``seed`` is one seed or a list (the grid is run once per seed).

    ``progress(runs_done, runs_total, instructions_simulated)`` is called after each run
    written (and once at the start). Returns {'experiment_id', 'runs_added', 'runs_skipped',
    'instructions', 'seconds'}. Raises gpudb.simulate.runner.RunsInterrupted on Ctrl-C, SIGTERM
    or SIGHUP, after closing the database with every finished run committed. A sweep that
    writes no run leaves no row at all.

    ``scheduler``: simulate on a Dask cluster instead of local processes, ``"local"`` (a
    LocalCluster of ``jobs`` workers) or a scheduler address (gpudb.simulate.dask_sweep), in chunks
    of ``chunk_instructions`` warp instructions (default ``CHUNK_WARP_INSTRUCTIONS``).

    ``engine``: the simulator engine (sim.ENGINES); None: the one whose runs the database
    holds, else the reference. A database holds one engine's runs (GpudbError otherwise).
    """
    started = time.perf_counter()
    gpu = load_gpu(gpu) if not isinstance(gpu, GpuConfig) else gpu
    suite = load_suite(suite) if not isinstance(suite, Suite) else suite
    seeds = list(seed) if isinstance(seed, (list, tuple)) else [seed]
    name = experiment or f"sim-{gpu.name}-{suite.name}"
    description = (f"simulated sweep of suite {suite.name} on {gpu.name} "
                   f"({suite.description})")

    def planned_by(engine: str) -> list[Planned]:
        planned = []
        for one in seeds:
            tasks = plan(gpu, suite, kernels, core_mhz, mem_mhz, sms, ctas,
                         interval_instructions, one, engine)
            check_sweep_size(len(tasks) * len(seeds))  # before the other seeds' grids
            planned += [Planned(task, name, description) for task in tasks]
        return planned

    # the grid (and the engine's name) checked before the file is opened
    planned = planned_by(engine or "reference")
    with closing(connect(db_path)) as con:
        held = run_engine(con, engine)
        if held != (engine or "reference"):
            planned = planned_by(held)
        summary = simulate_and_store(con, planned, jobs, progress, scheduler,
                                     chunk_instructions)
    return {"experiment_id": experiment_id(name), **summary.counts(),
            "seconds": time.perf_counter() - started}
