"""What an evaluation covers, with the simulated runs it needs: a simulated GPU's suite is
swept at the nominal memory clock where the database lacks it (paper 000's evaluation scales
the core clock only)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from gpudb.analysis.evaluate import Scope, missing_sweep, resolve_scope
from gpudb.store import db
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
