"""Sweeps on a Dask cluster: ``gpudb sweep --scheduler ADDRESS|local``.

Workers only simulate: each gets a chunk of runs (a few seconds of work) and sends back the
results, the run row and its intervals as an Arrow table; the one runner
(gpudb.simulate.runner) stores them as they arrive, so the database file is only ever open in
this process (docs/DESIGN.md section 7). A worker that dies (killed, out of memory) loses its
chunk to the scheduler, which hands it to another worker; the chunk's future completes once,
so no run is stored twice, and run ids are content hashes, so a sweep interrupted and run again
skips what it stored.

``local`` starts a LocalCluster of ``jobs`` single-threaded worker processes on this machine;
an address (``tcp://host:8786``) connects to a scheduler the user started (``dask scheduler``,
``dask worker ADDRESS`` on each machine, or dask-jobqueue on a batch cluster). Workers need the
same gpudb installed (``pip install 'gpudb-dvfs[dask]'``), since they import the simulator.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from gpudb.store.db import GpudbError
from sim.model import SimResult
from sim.sweep import Task, simulate_task, worker_count

# Warp instructions per chunk: 2-10 s of one worker at the simulator's 5-50 M warp
# instructions/s (`gpudb bench sim`), long enough that scheduling costs little, short enough
# that a lost worker costs little and the progress bar moves.
CHUNK_WARP_INSTRUCTIONS = 50_000_000

# seconds to wait for a remote scheduler before giving up with one error line
CONNECT_TIMEOUT_S = 20


def chunk_tasks(tasks: Iterable[Task], budget: int = CHUNK_WARP_INSTRUCTIONS) -> list[list[Task]]:
    """Consecutive tasks grouped until a chunk holds ``budget`` warp instructions (one task
    at least per chunk). The cost of a run is its kernel's warp instructions."""
    chunks: list[list[Task]] = []
    current: list[Task] = []
    size = 0
    for task in tasks:
        if current and size + task.kernel.warp_instructions > budget:
            chunks.append(current)
            current, size = [], 0
        current.append(task)
        size += task.kernel.warp_instructions
    if current:
        chunks.append(current)
    return chunks


def simulate_chunk(tasks: list[Task]) -> list[SimResult]:
    """A worker's job: simulate each run of the chunk, in order."""
    return [simulate_task(t) for t in tasks]


def _distributed():
    try:
        import distributed
    except ImportError:
        raise GpudbError("--scheduler needs dask.distributed: pip install 'gpudb-dvfs[dask]'"
                         ) from None
    return distributed


def simulate_on_cluster(tasks: list[Task], scheduler: str, jobs: int = 1,
                        chunk_instructions: int = CHUNK_WARP_INSTRUCTIONS
                        ) -> Iterator[SimResult]:
    """Simulate ``tasks`` on a Dask cluster, yielding each result as its chunk finishes.

    ``scheduler``: ``"local"`` (a LocalCluster of ``jobs`` worker processes, closed at the
    end) or a scheduler address. Closing the generator (or an exception in the caller's loop)
    cancels the chunks not yet done and disconnects. A chunk whose workers kept dying (the
    scheduler's allowed failures, 3 by default) ends the sweep with one error line.
    """
    if not tasks:
        return
    distributed = _distributed()
    cluster = None
    try:
        if scheduler == "local":
            cluster = distributed.LocalCluster(
                n_workers=worker_count(jobs, len(tasks)), threads_per_worker=1, processes=True,
                dashboard_address=None, silence_logs=logging.ERROR)
            client = distributed.Client(cluster)
        else:
            client = distributed.Client(scheduler, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        raise GpudbError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    futures = []
    try:
        # pure=False: a chunk resubmitted by a second sweep is a new task, not a cached one
        planned = {}
        for chunk in chunk_tasks(tasks, chunk_instructions):
            future = client.submit(simulate_chunk, chunk, pure=False)
            planned[future.key] = [t.run_id for t in chunk]
            futures.append(future)
        for future in distributed.as_completed(futures):
            try:
                results = future.result()
            except distributed.KilledWorker as exc:
                raise GpudbError(f"Dask workers kept dying on a chunk of runs ({exc}); the "
                                 "runs finished are kept: run the same command again to resume"
                                 ) from None
            # a worker with another gpudb (SIM_VERSION, configs) computes other run ids
            if [r.run["run_id"] for r in results] != planned[future.key]:
                raise GpudbError("a Dask worker returned runs other than those planned: its "
                                 "gpudb (simulator version or configurations) differs from "
                                 "this one's; install the same version on every worker")
            future.release()
            yield from results
    finally:
        if futures:
            client.cancel(futures)
        client.close()
        if cluster is not None:
            cluster.close()
