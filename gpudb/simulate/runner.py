"""The one runner: simulate the planned runs the database lacks and store each as it arrives.

Every simulate-then-store loop of gpudb is this one (docs/DESIGN.md section 1): a sweep
(gpudb.simulate.sweep), a controller kind's closed-loop runs (gpudb.control.runner) and the
dynamic optimal's schedules run in the closed loop (gpudb.control.schedule_run) only plan
:class:`Planned` runs and hand them to :func:`simulate_and_store`, which

- skips the runs stored already, with one query for all (``run_id`` is a content hash of the
  inputs and SIM_VERSION), and simulates a run planned twice once;
- simulates the rest in worker processes (sim.sweep.simulate_tasks), or on a Dask cluster
  (gpudb.simulate.dask_sweep), the database open in this process only (section 7);
- stores each result as it arrives through the runs writer (gpudb.store.runs), in one
  transaction: the run, its intervals, its metrics, and the rows they refer to (the plan's GPUs
  and kernels with the first run stored, an experiment with its first run), so a call that
  fails before finishing a run leaves the file as it was;
- stops the same way for every caller: Ctrl-C, SIGTERM or SIGHUP end the worker processes and
  raise :class:`RunsInterrupted` with what was stored; finished runs are kept and the same call
  again resumes.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures.process import BrokenProcessPool
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from gpudb.store.db import GpudbError, atomic
from gpudb.store.runs import (
    ensure_experiment,
    ensure_gpu,
    ensure_kernels,
    insert_metrics,
    insert_runs,
    run_engine,
    stored_run_ids,
)
from gpudb.store.stop_signals import stop_on_signals
from sim.model import SimResult
from sim.sweep import Task, simulate_tasks

# progress(runs_done, runs_total, warp_instructions_simulated), after each run stored and once
# at the start; the total counts the runs to simulate (those stored already left out)
Progress = Callable[[int, int, int], None]


@dataclass(frozen=True)
class Planned:
    """One run to simulate and how to store it.

    task: what the simulator runs (sim.sweep.Task, with its run_id; a closed loop's controller
    made by its make_controller); experiment / description: the experiment the run is stored
    in (the description used where the experiment is new); columns: run columns beyond the
    simulator's (a controller's predictor, objective, variant, ...); metrics(controller,
    run_id): metric rows to store with the run (None: none).
    """
    task: Task
    experiment: str
    description: str
    columns: dict = field(default_factory=dict)
    metrics: Callable[[Any, str], pa.Table | None] | None = None

    @property
    def run_id(self) -> str:
        return self.task.run_id


@dataclass
class Summary:
    """What a call did: runs stored, runs skipped (stored already: their ids in
    ``skipped``), warp instructions simulated, seconds."""
    runs_added: int = 0
    runs_skipped: int = 0
    instructions: int = 0
    seconds: float = 0.0
    skipped: frozenset[str] = frozenset()

    def counts(self) -> dict:
        """{'runs_added', 'runs_skipped', 'instructions', 'seconds'}."""
        return {"runs_added": self.runs_added, "runs_skipped": self.runs_skipped,
                "instructions": self.instructions, "seconds": self.seconds}


class RunsInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM, SIGHUP) while runs were simulated; ``summary`` counts the runs that
    were stored (:meth:`Summary.counts`), ``signum`` is the signal (SIGINT for Ctrl-C). An
    interrupt still: a caller that does not ask what was kept stops as on Ctrl-C."""

    def __init__(self, summary: dict, signum: int = signal.SIGINT):
        super().__init__(f"interrupted by {signal.Signals(signum).name} after "
                         f"{summary['runs_added']} new runs (finished runs are kept; re-run "
                         "to resume)")
        self.summary = summary
        self.signum = int(signum)


def simulate_and_store(con: duckdb.DuckDBPyConnection, planned: list[Planned], jobs: int = 1,
                       progress: Progress | None = None, scheduler: str | None = None,
                       chunk_instructions: int | None = None) -> Summary:
    """Simulate the ``planned`` runs the database lacks and store each as it finishes.

    ``jobs``: worker processes (1: simulated in this process, in plan order, so the runs are
    stored in that order; more: longest-looking first, stored in completion order).
    ``scheduler``: a Dask cluster instead, ``"local"`` (a LocalCluster of ``jobs`` workers) or
    a scheduler address, in chunks of ``chunk_instructions`` warp instructions (default
    gpudb.simulate.dask_sweep.CHUNK_WARP_INSTRUCTIONS). Raises RunsInterrupted on Ctrl-C,
    SIGTERM or SIGHUP with every finished run committed; GpudbError when a worker process died.
    """
    started = time.perf_counter()
    summary = Summary()
    for engine in sorted({p.task.engine for p in planned}):
        run_engine(con, engine)     # one engine's runs to a database: refused before any run
    have = stored_run_ids(con, (p.run_id for p in planned)) if planned else set()
    # a plan naming a run twice (a grid naming a setting twice) simulates it once
    todo = list({p.run_id: p for p in planned if p.run_id not in have}.values())
    summary.skipped = frozenset(have)
    summary.runs_skipped = len(planned) - len(todo)
    by_id = {p.run_id: p for p in todo}
    store = _Writer(con, planned)
    if progress:
        progress(0, len(todo), 0)
    try:
        with stop_on_signals(), closing(_results([p.task for p in todo], jobs, scheduler,
                                                  chunk_instructions)) as results:
            for result in results:
                rid = result.run["run_id"]
                if rid not in by_id:    # a controller whose run_key is not the planned one
                    raise RuntimeError(f"simulated run {rid} was not planned")
                store(by_id[rid], result)
                summary.runs_added += 1
                summary.instructions += int(result.run["instructions"])
                if progress:
                    progress(summary.runs_added, len(todo), summary.instructions)
    except KeyboardInterrupt as stop:
        summary.seconds = time.perf_counter() - started
        raise RunsInterrupted(summary.counts(), getattr(stop, "signum", signal.SIGINT)) from None
    except BrokenProcessPool:
        raise GpudbError(f"a simulator process died (killed, or out of memory?); the "
                         f"{summary.runs_added} runs finished are kept: run the same "
                         "command again to resume") from None
    summary.seconds = time.perf_counter() - started
    return summary


class _Writer:
    """Stores one result (run, intervals, metrics, the rows they refer to) in one transaction.
    The GPUs and kernels of the whole plan go in with the first run stored, in plan order; an
    experiment with the first run stored in it."""

    def __init__(self, con: duckdb.DuckDBPyConnection, planned: list[Planned]):
        self.con = con
        self.gpus = list({p.task.gpu.name: p.task.gpu for p in planned}.values())
        self.kernels = list({p.task.kernel.kernel_id: p.task.kernel for p in planned}.values())
        self.parents_stored = False
        self.experiments: dict[str, str] = {}   # name -> experiment_id, once ensured

    def __call__(self, planned: Planned, result: SimResult) -> None:
        con = self.con
        run = dict(result.run, **planned.columns)
        metrics = (planned.metrics(result.controller, planned.run_id)
                   if planned.metrics else None)
        with atomic(con):
            if not self.parents_stored:
                for gpu in self.gpus:
                    ensure_gpu(con, gpu)
                ensure_kernels(con, self.kernels)
            eid = self.experiments.get(planned.experiment)
            if eid is None:
                eid = ensure_experiment(con, planned.experiment, planned.description)
            insert_runs(con, pa.Table.from_pylist([dict(run, experiment_id=eid)]),
                        result.intervals)
            if metrics is not None:
                insert_metrics(con, metrics, skip_stored=False)
        # only once committed: a rolled-back transaction took these rows with it
        self.parents_stored = True
        self.experiments[planned.experiment] = eid


def _results(tasks: list[Task], jobs: int, scheduler: str | None,
             chunk_instructions: int | None) -> Iterator[SimResult]:
    if scheduler is None:
        return simulate_tasks(tasks, jobs)
    from gpudb.simulate.dask_sweep import CHUNK_WARP_INSTRUCTIONS, simulate_on_cluster

    return simulate_on_cluster(tasks, scheduler, jobs,
                               chunk_instructions or CHUNK_WARP_INSTRUCTIONS)
