"""``gpudb sweep``: simulate the runs of a sweep that the database lacks, and store them.

The simulator plans and simulates (sim.sweep: worker processes, no database); this module is
the one writer process of the file (DESIGN.md section 7): it skips the runs stored already
(``run_id`` is a content hash of the inputs and SIM_VERSION) and stores each result as it
arrives through gpudb.runs, each run with its intervals in one transaction, so an interrupted
sweep keeps every run it finished and a re-run resumes without duplicates.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from gpudb.db import connect
from gpudb.runs import ensure_experiment, ensure_gpu, ensure_kernels, stored_run_ids, write_run
from sim.config import GpuConfig, Suite, load_gpu, load_suite
from sim.sweep import plan, simulate_tasks

Progress = Callable[[int, int, int], None]


class SweepInterrupted(Exception):
    """Ctrl-C during a sweep; ``summary`` counts the runs that were written."""

    def __init__(self, summary: dict):
        super().__init__(f"sweep interrupted after {summary['runs_added']} new runs "
                         "(finished runs are kept; re-run to resume)")
        self.summary = summary


def sweep(db_path: str | Path, gpu: str | GpuConfig, suite: str | Suite,
          kernels: list[str] | None = None, core_mhz: list[float] | None = None,
          mem_mhz: list[float] | None = None, sms: list[int] | None = None,
          ctas: list[int | None] | None = None, interval_instructions: int | None = None,
          seed: int = 0, jobs: int = 1, experiment: str | None = None,
          progress: Progress | None = None) -> dict:
    """Simulate the missing runs of a sweep (sim.sweep.plan) and write them to the database
    at ``db_path``.

    ``progress(runs_done, runs_total, instructions_simulated)`` is called after each run
    written (and once at the start). Returns {'experiment_id', 'runs_added', 'runs_skipped',
    'instructions', 'seconds'}. Raises SweepInterrupted on Ctrl-C, after closing the database
    with every finished run committed.
    """
    started = time.perf_counter()
    gpu = load_gpu(gpu) if not isinstance(gpu, GpuConfig) else gpu
    suite = load_suite(suite) if not isinstance(suite, Suite) else suite
    tasks = plan(gpu, suite, kernels, core_mhz, mem_mhz, sms, ctas, interval_instructions, seed)
    name = experiment or f"sim-{gpu.name}-{suite.name}"
    con = connect(db_path)
    summary = {"experiment_id": None, "runs_added": 0, "runs_skipped": 0, "instructions": 0,
               "seconds": 0.0}
    try:
        ensure_gpu(con, gpu)
        ensure_kernels(con, {t.kernel.kernel_id: t.kernel for t in tasks}.values())
        eid = ensure_experiment(con, name, f"simulated sweep of suite {suite.name} on "
                                            f"{gpu.name} ({suite.description})")
        summary["experiment_id"] = eid
        have = stored_run_ids(con, (t.run_id for t in tasks))
        # a grid naming a setting twice plans its runs twice: simulate them once
        todo = list({t.run_id: t for t in tasks if t.run_id not in have}.values())
        summary["runs_skipped"] = len(tasks) - len(todo)
        if progress:
            progress(0, len(todo), 0)
        try:
            with closing(simulate_tasks(todo, jobs)) as results:
                for result in results:
                    write_run(con, result, eid)
                    summary["runs_added"] += 1
                    summary["instructions"] += int(result.run["instructions"])
                    if progress:
                        progress(summary["runs_added"], len(todo), summary["instructions"])
        except KeyboardInterrupt:
            summary["seconds"] = time.perf_counter() - started
            raise SweepInterrupted(summary) from None
    finally:
        con.close()
    summary["seconds"] = time.perf_counter() - started
    return summary
