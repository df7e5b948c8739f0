"""What an evaluation covers, with the simulated runs it needs: a simulated GPU's suite is
swept at the nominal memory clock where the database lacks it (paper 000's evaluation scales
the core clock only)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpudb.analysis.evaluate import Scope, Table, missing_sweep, resolve_scope
from gpudb.store import db
from gpudb.store.base import refuse_read_only
from gpudb.store.db import GpudbError

# sweep's progress: (runs done, runs in all, warp instructions simulated so far)
SweepProgress = Callable[[int, int, int | None], None]


def evaluation_scope(path: str, gpu: str, suite: str | None, *, read_only: bool,
                     do_sweep: bool, seeds: list[int] | None = None,
                     progress: SweepProgress | None = None,
                     on_sweep: Callable[[Scope, str], None] | None = None
                     ) -> tuple[Scope, dict | None]:
    """The evaluation's Scope, and the summary of the sweep run for it (None: none was
    needed). A simulated GPU's suite is swept at the nominal memory clock if the database
    at ``path`` lacks it (of each of ``seeds``; None: of any seed, else seed 0);
    ``on_sweep(scope, command)`` is told the equivalent ``gpudb sweep`` command first. Without
    ``do_sweep``, or ``read_only``, a missing sweep is a GpudbError naming that command."""
    exists = Path(path).exists()
    con = db.connect(path, read_only=True) if exists else None
    try:
        scope = resolve_scope(con, gpu, suite)
    finally:
        if con is not None:
            con.close()
    if not scope.simulated:
        return scope, None
    missing = [s for s in (seeds or [None])
               if not exists or _needs_sweep(path, read_only, scope, s)]
    if not missing:
        return scope, None
    missing = [0 if s is None else s for s in missing]
    command = f"gpudb --db {path} sweep --gpu {gpu} --suite {suite or 'default'}"
    if missing != [0]:
        command += f" --seed {','.join(map(str, missing))}"
    if not do_sweep or read_only:
        raise GpudbError(f"no simulated runs of suite {scope.suite} on {gpu} in "
                         f"{path}; run: {command}")
    if on_sweep is not None:
        on_sweep(scope, command)
    from gpudb.simulate.sweep import sweep

    # the simulation's length is gpudb's, not the file's: outside evaluate's time bound
    with db.unbounded():
        summary = sweep(path, gpu, suite or "default", progress=progress,
                        mem_mhz=nominal_mem(gpu), jobs=os.cpu_count() or 1, seed=missing)
    return scope, summary


def _needs_sweep(path: str, read_only: bool, scope: Scope, seed: int | None = None) -> bool:
    # a writable open migrates a file from an older gpudb before it is looked at
    con = db.connect(path, read_only=read_only)
    try:
        return missing_sweep(con, scope.gpu, scope.suite, seed)
    finally:
        con.close()


def nominal_mem(gpu: str) -> list[float]:
    """The paper 000 evaluation scales the core clock only: memory stays at its nominal."""
    from sim.config import load_gpu

    return [load_gpu(gpu).nominal_mem_mhz]


def counted_steps(progress: Callable[[int, int], None] | None,
                  steps: int) -> Callable[[object], None]:
    """A replay's per-step callback that reports (steps done, steps) to ``progress``, which
    hears (0, steps) at once."""
    done = 0

    def step(_step) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, steps)

    if progress is not None:
        progress(0, steps)
    return step


@dataclass
class ControlTables:
    """The control evaluation's tables: (objective, energy scope, table), the scope None for
    a GPU with whole runs only (static optimal over its settings, ``replayed`` False); the
    seeds replayed (each on its own runs)."""
    tables: list[tuple[str, str | None, Table]]
    replayed: bool
    run_seeds: list[int] = field(default_factory=list)


def control_tables(path: str, scope: Scope, objectives: list[str], max_loss_pct: float, *,
                   read_only: bool, seeds: list[int] | None = None,
                   energy_scopes: tuple[str, ...] = ("chip", "run"),
                   run_progress: Callable[..., None] | None = None,
                   replay_progress: Callable[[int, int], None] | None = None,
                   notice: Callable[[str], None] | None = None) -> ControlTables:
    """Energy savings of the DVFS controllers against the highest P-state (paper 000 figures
    11-12, paper 004 section 4.3). With per-interval runs: the dynamic optimal's schedules run
    in the closed loop (stored runs reused; ``run_progress(done, total)``), then each seed's
    trace replay into control_result (``replay_progress(step, steps)``), then the tables
    (the mean over ``seeds`` with 95% intervals; without, every seed the database has,
    pooled). With whole runs only: the static optimal over the GPU's settings. ``notice``
    hears what could not be run."""
    from gpudb.analysis.evaluate import (
        check_same_kernels,
        control_over_seeds,
        control_table,
        has_interval_runs,
        interval_seeds,
        run_static_table,
    )
    from gpudb.control import schedule_run
    from gpudb.control.results import REPLAY_PREDICTORS
    from gpudb.control.results import evaluate as evaluate_policies

    con = db.connect(path, read_only=read_only)
    try:
        if not has_interval_runs(con, scope):
            return ControlTables([(objective, None,
                                   run_static_table(con, scope, objective, max_loss_pct))
                                  for objective in objectives], replayed=False)
        refuse_read_only(read_only, "gpudb evaluate control (into control_result)")
        run_seeds = seeds or interval_seeds(con, scope)
        if seeds:
            check_same_kernels(con, scope, seeds)
        # the achievable bound: the dynamic optimal's schedules run in the closed loop
        # (stored runs are reused); their length is gpudb's, outside evaluate's time bound
        with db.unbounded():
            _, unrunnable = schedule_run.simulate(
                con, objectives, max_loss_pct, scope.gpu, scope.suite, energy_scopes,
                progress=run_progress, seeds=run_seeds, workers=os.cpu_count() or 1)
        if unrunnable and notice is not None:
            notice(f"{unrunnable} dynamic-optimal schedules not run: their GPU is not a "
                   "shipped simulator configuration")
        steps = (len(run_seeds) * len(energy_scopes) * len(objectives)
                 * (2 * len(REPLAY_PREDICTORS) + 1))
        step = counted_steps(replay_progress, steps)
        evaluate_policies(con, REPLAY_PREDICTORS, objectives, max_loss_pct, scope.gpu,
                          scope.suite, progress=step, scopes=energy_scopes, seeds=run_seeds)
        if seeds:
            tables = [(objective, energy_scope,
                       control_over_seeds(con, scope.gpu, scope.suite, objective,
                                          max_loss_pct, seeds, energy_scope))
                      for objective in objectives for energy_scope in energy_scopes]
        else:
            tables = [(objective, energy_scope,
                       control_table(con, scope.gpu, scope.suite, objective, max_loss_pct,
                                     energy_scope))
                      for objective in objectives for energy_scope in energy_scopes]
        return ControlTables(tables, replayed=True, run_seeds=run_seeds)
    finally:
        con.close()
