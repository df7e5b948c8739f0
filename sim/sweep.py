"""Plan a sweep of a kernel suite over a grid of settings and simulate it; no database.

:func:`plan` lists the runs (each :class:`Task` carries its ``run_id``, a content hash of the
inputs and SIM_VERSION, so a caller can drop the runs it already has before simulating) and
:func:`simulate_tasks` simulates them, yielding each :class:`~sim.model.SimResult` (the run row
and its intervals as an Arrow table) as it finishes; a task may run in the closed loop (its
``make_controller``). Storing results is the caller's business: gpudb's one runner
(gpudb.simulate.runner) writes each one as it arrives.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass

from sim.config import ConfigError, GpuConfig, KernelSpec, Suite
from sim.model import (
    DEFAULT_INTERVAL_INSTRUCTIONS,
    Controller,
    SimResult,
    Simulation,
    check_run,
    check_engine,
    check_setting,
    run_id,
)
from sim.sampled import SampledSimulation


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
    # a closed-loop run: make_controller(sim) returns the sim.model.Controller deciding between
    # intervals, made in the process that simulates, from the Simulation it runs in (picklable
    # where the tasks go to worker processes); None: the run stays at its setting
    make_controller: Callable[[Simulation], Controller] | None = None
    epoch_cycles: int | None = None      # None: intervals cut by work (see Simulation)
    core_headroom: float = 0.0
    engine: str = "reference"            # sim.ENGINES: the Simulation class that runs it


@dataclass(frozen=True)
class GivenController:
    """A Task's ``make_controller`` for a controller that needs nothing of the Simulation:
    returns the controller it holds (in a worker process, its own copy)."""

    controller: Controller

    def __call__(self, sim: Simulation) -> Controller:
        return self.controller


# Runs one sweep may plan (all seeds together): 160 times the long suite's three-seed sweep
# (609 runs). Planning a grid holds every run in memory, and a grid of 10^8 runs took minutes
# to refuse later or never ended (issue 41 item 4).
MAX_SWEEP_RUNS = 100_000
# The largest seed: run.seed is a BIGINT
MAX_SEED = 2**63 - 1


def check_sweep_size(runs: int) -> None:
    """Refuse, before a grid is expanded, a sweep of more than MAX_SWEEP_RUNS runs."""
    if runs > MAX_SWEEP_RUNS:
        raise ConfigError(f"the sweep has {runs:,} runs, more than the {MAX_SWEEP_RUNS:,} one "
                          "sweep may plan: sweep fewer kernels, settings or seeds at a time")


def plan(gpu: GpuConfig, suite: Suite, kernels: list[str] | None = None,
         core_mhz: list[float] | None = None, mem_mhz: list[float] | None = None,
         sms: list[int] | None = None, ctas: list[int | None] | None = None,
         interval_instructions: int | None = None, seed: int = 0,
         engine: str = "reference") -> list[Task]:
    """The runs of a sweep: every kernel at every (core, mem, SM count, CTA limit), simulated
    by ``engine`` (sim.ENGINES).

    Defaults: every core and memory P-state, all SMs, the hardware CTA limit.
    """
    simulation_class(engine)        # an unknown engine stops the sweep before it plans
    specs = [suite.kernel(n) for n in kernels] if kernels else list(suite.kernels)
    cores = list(core_mhz) if core_mhz else list(gpu.core_mhz)
    mems = list(mem_mhz) if mem_mhz else list(gpu.mem_mhz)
    sm_list = list(sms) if sms else [gpu.n_sm]
    cta_list = list(ctas) if ctas else [None]
    n_inst = int(interval_instructions or DEFAULT_INTERVAL_INSTRUCTIONS)
    check_sweep_size(len(specs) * len(cores) * len(mems) * len(sm_list) * len(cta_list))
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"a seed is an integer in 0..{MAX_SEED:,} (a BIGINT), got {seed:,}")
    # the whole grid is checked before anything runs, so a bad setting stops the sweep whole
    for n in sm_list:
        if n not in gpu.sm_counts:
            raise ConfigError(f"{gpu.name} supports SM counts {list(gpu.sm_counts)}, not {n}")
    for c, m in itertools.product(cores, mems):
        check_setting(gpu, c, m)
    for k, n, cta in itertools.product(specs, sm_list, cta_list):
        check_run(gpu, k, n, cta, n_inst)
    tasks = []
    for k, c, m, n, cta in itertools.product(specs, cores, mems, sm_list, cta_list):
        rid = run_id(gpu, k, c, m, n, cta, n_inst, seed, engine=engine)
        tasks.append(Task(gpu, k, float(c), float(m), int(n), cta, n_inst, int(seed), rid,
                          engine=engine))
    return tasks


def simulate_tasks(tasks: Iterable[Task], jobs: int = 1) -> Iterator[SimResult]:
    """Simulate ``tasks``, yielding each result as it finishes.

    With ``jobs`` > 1 (and more than one task) ``jobs`` worker processes simulate, longest-
    looking runs first, so results come in completion order; otherwise this process simulates
    them in order. Workers ignore Ctrl-C and hang-ups (sent to the whole process group),
    leaving the decision to the caller: an exception in the caller's loop (KeyboardInterrupt
    included) or closing the generator cancels the queued tasks and waits for the running
    ones, so no process is left behind. (Killing them instead deadlocks the pool now and then
    on Python 3.11: a worker killed while writing its result leaves half a message that the
    pool's manager thread waits on for ever.) Use it as
    ``with contextlib.closing(simulate_tasks(...)) as results:`` to close it promptly.
    A worker whose parent process is gone (killed with SIGKILL, say) exits by itself.
    """
    todo = list(tasks)
    jobs = worker_count(jobs, len(todo))
    if jobs <= 1:
        for task in todo:
            yield simulate_task(task)
        return
    queue = sorted(todo, key=lambda t: -t.kernel.warp_instructions * 1000.0 / t.core_mhz)
    pool = worker_pool(jobs)
    try:
        pending = set()
        it = iter(queue)
        for task in itertools.islice(it, 2 * jobs):
            pending.add(pool.submit(simulate_task, task))
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                yield fut.result()
                nxt = next(it, None)
                if nxt is not None:
                    pending.add(pool.submit(simulate_task, nxt))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def worker_count(jobs: int, tasks: int) -> int:
    """The worker processes worth starting for ``tasks`` runs: at most one per run and per
    CPU this process may use (``--jobs 100000`` on 4 runs started 100,000 processes: load 62
    on a 2-core machine; issue 41 item 4)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(jobs, tasks, cpus))


def worker_pool(jobs: int) -> ProcessPoolExecutor:
    """``jobs`` worker processes that leave Ctrl-C and hang-ups to their parent and end with it
    (see :func:`simulate_tasks`); the caller shuts the pool down."""
    context = multiprocessing.get_context()
    # a worker's parent is this process (but the fork server under "forkserver"), and the
    # workers start in this thread (PR_SET_PDEATHSIG fires when the creating thread ends)
    parent = None if context.get_start_method() == "forkserver" else os.getpid()
    main = threading.current_thread() is threading.main_thread()
    return ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_init_worker,
                               initargs=(parent, main))


def simulation_class(engine: str) -> type[Simulation]:
    """The Simulation class of an engine name (sim.ENGINES)."""
    check_engine(engine)
    return SampledSimulation if engine == "sampled" else Simulation


def simulate_task(task: Task) -> SimResult:
    """Simulate one task, in this process (a closed-loop one under the controller its
    ``make_controller`` makes; the result holds it as the run left it)."""
    sim = simulation_class(task.engine)(
        task.gpu, task.kernel, task.core_mhz, task.mem_mhz, task.n_sm, task.ctas_per_sm,
        task.interval_instructions, task.seed, epoch_cycles=task.epoch_cycles,
        core_headroom=task.core_headroom)
    return sim.run(None if task.make_controller is None else task.make_controller(sim))


def _init_worker(parent: int | None = None, die_with_parent: bool = True) -> None:
    """Worker initializer: signals sent to the whole process group (Ctrl-C, a hang-up) are
    the parent's to decide on; and a worker outlives no parent (``parent``: its pid, where
    known)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    # a forked worker inherits the parent's Python handlers: SIGTERM ends a worker outright
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    ppid = os.getppid()
    if die_with_parent:
        _pdeathsig()
    if os.getppid() != (parent or ppid):  # the parent died before the kernel was told
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(ppid,), name="sim-watch-parent",
                     daemon=True).start()


def _pdeathsig() -> None:
    """Linux: the kernel sends this process SIGKILL when its parent ends; elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _watch_parent(parent: int, every_s: float = 0.5) -> None:
    """The portable fallback: exit once the parent is gone (the process is re-parented). A
    jitted call holds the GIL, so this notices between calls."""
    while True:
        time.sleep(every_s)
        if os.getppid() != parent:
            os._exit(1)
