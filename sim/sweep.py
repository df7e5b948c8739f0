"""Sweep a kernel suite over a grid of settings into a gpudb database.

Worker processes simulate; the parent alone writes (one writer per DuckDB file, DESIGN.md
section 7), each run with its intervals in one transaction through Arrow tables, so an
interrupted sweep keeps every run it finished and a re-run skips them (``run_id`` is a content
hash of the inputs and SIM_VERSION).
"""

from __future__ import annotations

import itertools
import json
import signal
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from gpudb.ingest import experiment_id
from sim.config import GpuConfig, KernelSpec, Suite, load_gpu, load_suite
from sim.model import DEFAULT_INTERVAL_INSTRUCTIONS, SimResult, run_id, simulate

Progress = Callable[[int, int, int], None]


@dataclass(frozen=True)
class Task:
    """One run to simulate (picklable: sent to a worker process)."""

    gpu: GpuConfig
    kernel: KernelSpec
    core_mhz: float
    mem_mhz: float
    n_sm: int
    ctas_per_sm: int | None
    interval_instructions: int
    seed: int
    run_id: str


class SweepInterrupted(Exception):
    """Ctrl-C during a sweep; ``summary`` counts the runs that were written."""

    def __init__(self, summary: dict):
        super().__init__(f"sweep interrupted after {summary['runs_added']} new runs "
                         "(finished runs are kept; re-run to resume)")
        self.summary = summary


def _simulate(task: Task) -> SimResult:
    return simulate(task.gpu, task.kernel, task.core_mhz, task.mem_mhz, task.n_sm,
                    task.ctas_per_sm, task.interval_instructions, task.seed)


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group; only the parent decides what to do with it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def ensure_gpu(con, gpu: GpuConfig) -> None:
    if con.execute("SELECT 1 FROM gpu WHERE gpu_id = ?", [gpu.name]).fetchone():
        return
    con.execute("INSERT INTO gpu VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [gpu.name, gpu.name, gpu.n_sm, gpu.max_warps_per_sm, gpu.max_ctas_per_sm,
                 gpu.nominal_core_mhz, gpu.nominal_mem_mhz, json.dumps(gpu.raw)])
    rows = ([(gpu.name, "core", f, v) for f, v in zip(gpu.core_mhz, gpu.core_v)]
            + [(gpu.name, "mem", f, v) for f, v in zip(gpu.mem_mhz, gpu.mem_v)])
    con.register("pstate_new", pa.table({
        "gpu_id": [r[0] for r in rows], "domain": [r[1] for r in rows],
        "freq_mhz": [r[2] for r in rows], "voltage_v": [r[3] for r in rows]}))
    con.execute("INSERT INTO pstate BY NAME SELECT * FROM pstate_new")
    con.unregister("pstate_new")


def ensure_kernels(con, kernels: Iterable[KernelSpec]) -> None:
    for k in kernels:
        con.execute(
            "INSERT INTO kernel SELECT ?, ?, ?, ?, ?, ? "
            "WHERE NOT EXISTS (SELECT 1 FROM kernel WHERE kernel_id = ?)",
            [k.kernel_id, k.name, k.suite, k.category, k.description, json.dumps(k.raw),
             k.kernel_id])


def ensure_experiment(con, name: str, description: str) -> str:
    from gpudb import __version__
    from gpudb.db import whoami

    eid = experiment_id(name)
    user, host = whoami()
    con.execute(
        "INSERT INTO experiment SELECT ?, ?, ?, now(), ?, ?, ? "
        "WHERE NOT EXISTS (SELECT 1 FROM experiment WHERE experiment_id = ?)",
        [eid, name, description, user, host, __version__, eid])
    return eid


def write_run(con, result: SimResult, eid: str) -> None:
    """Insert one run and its intervals in one transaction (all or nothing)."""
    run = dict(result.run, experiment_id=eid)
    con.register("run_new", pa.Table.from_pylist([run]))
    con.register("interval_new", result.intervals)
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute("INSERT INTO run BY NAME SELECT *, now() AS created_at FROM run_new")
            con.execute("INSERT INTO interval BY NAME SELECT * FROM interval_new")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.unregister("run_new")
        con.unregister("interval_new")


def plan(gpu: GpuConfig, suite: Suite, kernels: list[str] | None = None,
         core_mhz: list[float] | None = None, mem_mhz: list[float] | None = None,
         sms: list[int] | None = None, ctas: list[int | None] | None = None,
         interval_instructions: int | None = None, seed: int = 0) -> list[Task]:
    """The runs of a sweep: every kernel at every (core, mem, SM count, CTA limit).

    Defaults: every core and memory P-state, all SMs, the hardware CTA limit.
    """
    specs = [suite.kernel(n) for n in kernels] if kernels else list(suite.kernels)
    cores = list(core_mhz) if core_mhz else list(gpu.core_mhz)
    mems = list(mem_mhz) if mem_mhz else list(gpu.mem_mhz)
    sm_list = list(sms) if sms else [gpu.n_sm]
    cta_list = list(ctas) if ctas else [None]
    n_inst = int(interval_instructions or DEFAULT_INTERVAL_INSTRUCTIONS)
    for n in sm_list:
        if n not in gpu.sm_counts:
            raise ValueError(f"{gpu.name} supports SM counts {list(gpu.sm_counts)}, not {n}")
    tasks = []
    for k, c, m, n, cta in itertools.product(specs, cores, mems, sm_list, cta_list):
        rid = run_id(gpu, k, c, m, n, cta, n_inst, seed)
        tasks.append(Task(gpu, k, float(c), float(m), int(n), cta, n_inst, int(seed), rid))
    return tasks


def sweep(db_path: str | Path, gpu: str | GpuConfig, suite: str | Suite,
          kernels: list[str] | None = None, core_mhz: list[float] | None = None,
          mem_mhz: list[float] | None = None, sms: list[int] | None = None,
          ctas: list[int | None] | None = None, interval_instructions: int | None = None,
          seed: int = 0, jobs: int = 1, experiment: str | None = None,
          progress: Progress | None = None) -> dict:
    """Simulate the missing runs of a sweep and write them to the database at ``db_path``.

    ``progress(runs_done, runs_total, instructions_simulated)`` is called after each run
    written (and once at the start). Returns {'experiment_id', 'runs_added', 'runs_skipped',
    'instructions', 'seconds'}. Raises SweepInterrupted on Ctrl-C, after closing the database
    with every finished run committed.
    """
    import gpudb

    started = time.perf_counter()
    gpu = load_gpu(gpu) if not isinstance(gpu, GpuConfig) else gpu
    suite = load_suite(suite) if not isinstance(suite, Suite) else suite
    tasks = plan(gpu, suite, kernels, core_mhz, mem_mhz, sms, ctas, interval_instructions, seed)
    name = experiment or f"sim-{gpu.name}-{suite.name}"
    con = gpudb.connect(db_path)
    summary = {"experiment_id": None, "runs_added": 0, "runs_skipped": 0, "instructions": 0,
               "seconds": 0.0}
    try:
        ensure_gpu(con, gpu)
        ensure_kernels(con, {t.kernel.kernel_id: t.kernel for t in tasks}.values())
        eid = ensure_experiment(con, name, f"simulated sweep of suite {suite.name} on "
                                            f"{gpu.name} ({suite.description})")
        summary["experiment_id"] = eid
        have = {r[0] for r in con.execute("SELECT run_id FROM run").fetchall()}
        todo = [t for t in tasks if t.run_id not in have]
        summary["runs_skipped"] = len(tasks) - len(todo)

        def written(result: SimResult) -> None:
            write_run(con, result, eid)
            summary["runs_added"] += 1
            summary["instructions"] += int(result.run["instructions"])
            if progress:
                progress(summary["runs_added"], len(todo), summary["instructions"])

        if progress:
            progress(0, len(todo), 0)
        try:
            if jobs <= 1 or len(todo) <= 1:
                for task in todo:
                    written(_simulate(task))
            else:
                _run_pool(todo, jobs, written)
        except KeyboardInterrupt:
            summary["seconds"] = time.perf_counter() - started
            raise SweepInterrupted(summary) from None
    finally:
        con.close()
    summary["seconds"] = time.perf_counter() - started
    return summary


def _run_pool(todo: list[Task], jobs: int, written: Callable[[SimResult], None]) -> None:
    """Keep ``jobs`` workers busy, longest-looking runs first, writing results as they come."""
    queue = sorted(todo, key=lambda t: -t.kernel.warp_instructions * 1000.0 / t.core_mhz)
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_ignore_sigint)
    try:
        pending = set()
        it = iter(queue)
        for task in itertools.islice(it, 2 * jobs):
            pending.add(pool.submit(_simulate, task))
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                written(fut.result())
                nxt = next(it, None)
                if nxt is not None:
                    pending.add(pool.submit(_simulate, nxt))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
