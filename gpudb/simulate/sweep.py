"""``gpudb sweep``: simulate the runs of a sweep that the database lacks, and store them.

The simulator plans and simulates (sim.sweep: worker processes, no database); this module is
the one writer process of the file (docs/DESIGN.md section 7): it skips the runs stored already
(``run_id`` is a content hash of the inputs and SIM_VERSION) and stores each result as it
arrives through gpudb.store.runs, each run with its intervals in one transaction, so an interrupted
sweep keeps every run it finished and a re-run resumes without duplicates. The gpu, kernel and
experiment rows go in with the first run, in its transaction, so a sweep that fails before
finishing a run leaves the file as it was. SIGTERM and SIGHUP stop a sweep as Ctrl-C does,
and its worker processes end with it (sim.sweep).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from contextlib import closing
from pathlib import Path

import pyarrow as pa

from gpudb.store.db import GpudbError, atomic, connect
from gpudb.store.runs import (
    ensure_experiment,
    ensure_gpu,
    ensure_kernels,
    experiment_id,
    insert_runs,
    stored_run_ids,
    write_run,
)
from gpudb.store.stop_signals import stop_on_signals
from sim.config import GpuConfig, Suite, load_gpu, load_suite
from sim.sweep import plan, simulate_tasks

Progress = Callable[[int, int, int], None]


class SweepInterrupted(Exception):
    """Ctrl-C (or SIGTERM, SIGHUP) during a sweep; ``summary`` counts the runs that were
    written, ``signum`` is the signal (SIGINT for Ctrl-C)."""

    def __init__(self, summary: dict, signum: int = signal.SIGINT):
        super().__init__(f"sweep interrupted by {signal.Signals(signum).name} after "
                         f"{summary['runs_added']} new runs (finished runs are kept; re-run "
                         "to resume)")
        self.summary = summary
        self.signum = int(signum)


def sweep(db_path: str | Path, gpu: str | GpuConfig, suite: str | Suite,
          kernels: list[str] | None = None, core_mhz: list[float] | None = None,
          mem_mhz: list[float] | None = None, sms: list[int] | None = None,
          ctas: list[int | None] | None = None, interval_instructions: int | None = None,
          seed: int | list[int] = 0, jobs: int = 1, experiment: str | None = None,
          progress: Progress | None = None, scheduler: str | None = None,
          chunk_instructions: int | None = None) -> dict:
    """Simulate the missing runs of a sweep (sim.sweep.plan) and write them to the database
    at ``db_path``; ``seed`` is one seed or a list (the grid is run once per seed).

    ``progress(runs_done, runs_total, instructions_simulated)`` is called after each run
    written (and once at the start). Returns {'experiment_id', 'runs_added', 'runs_skipped',
    'instructions', 'seconds'}. Raises SweepInterrupted on Ctrl-C, SIGTERM or SIGHUP, after
    closing the database with every finished run committed. A sweep that writes no run leaves
    no row at all.

    ``scheduler``: simulate on a Dask cluster instead of local processes, ``"local"`` (a
    LocalCluster of ``jobs`` workers) or a scheduler address (gpudb.simulate.dask_sweep), in chunks
    of ``chunk_instructions`` warp instructions (default ``CHUNK_WARP_INSTRUCTIONS``).
    """
    started = time.perf_counter()
    gpu = load_gpu(gpu) if not isinstance(gpu, GpuConfig) else gpu
    suite = load_suite(suite) if not isinstance(suite, Suite) else suite
    seeds = list(seed) if isinstance(seed, (list, tuple)) else [seed]
    tasks = [t for one in seeds
             for t in plan(gpu, suite, kernels, core_mhz, mem_mhz, sms, ctas,
                           interval_instructions, one)]
    name = experiment or f"sim-{gpu.name}-{suite.name}"
    eid = experiment_id(name)
    con = connect(db_path)
    summary = {"experiment_id": eid, "runs_added": 0, "runs_skipped": 0, "instructions": 0,
               "seconds": 0.0}

    def write_first(result) -> None:
        # the rows the runs refer to, in the first run's transaction: all or nothing
        with atomic(con):
            ensure_gpu(con, gpu)
            ensure_kernels(con, {t.kernel.kernel_id: t.kernel for t in tasks}.values())
            ensure_experiment(con, name, f"simulated sweep of suite {suite.name} on "
                                         f"{gpu.name} ({suite.description})")
            insert_runs(con, pa.Table.from_pylist([dict(result.run, experiment_id=eid)]),
                        result.intervals)

    try:
        have = stored_run_ids(con, (t.run_id for t in tasks))
        # a grid naming a setting twice plans its runs twice: simulate them once
        todo = list({t.run_id: t for t in tasks if t.run_id not in have}.values())
        summary["runs_skipped"] = len(tasks) - len(todo)
        if progress:
            progress(0, len(todo), 0)
        try:
            with stop_on_signals(), closing(_results(todo, jobs, scheduler,
                                                      chunk_instructions)) as results:
                for result in results:
                    if summary["runs_added"] == 0:
                        write_first(result)
                    else:
                        write_run(con, result, eid)
                    summary["runs_added"] += 1
                    summary["instructions"] += int(result.run["instructions"])
                    if progress:
                        progress(summary["runs_added"], len(todo), summary["instructions"])
        except KeyboardInterrupt as stop:
            summary["seconds"] = time.perf_counter() - started
            raise SweepInterrupted(summary, getattr(stop, "signum", signal.SIGINT)) from None
        except BrokenProcessPool:
            raise GpudbError(f"a simulator process died (killed, or out of memory?); the "
                             f"{summary['runs_added']} runs finished are kept: run the same "
                             "command again to resume") from None
    finally:
        con.close()
    summary["seconds"] = time.perf_counter() - started
    return summary


def _results(todo, jobs: int, scheduler: str | None, chunk_instructions: int | None):
    if scheduler is None:
        return simulate_tasks(todo, jobs)
    from gpudb.simulate.dask_sweep import CHUNK_WARP_INSTRUCTIONS, simulate_on_cluster

    return simulate_on_cluster(todo, scheduler, jobs,
                               chunk_instructions or CHUNK_WARP_INSTRUCTIONS)
