"""A `gpudb sweep --jobs 2` killed mid-sweep: no process of it lives on, finished runs are kept
and the same command resumes to the planned run ids (issue 12, item 9). Real processes, found
through /proc (Linux)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

import gpudb
from sim.config import load_gpu, load_suite
from sim.sweep import plan

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

GRID = ("--core-mhz", "700", "--mem-mhz", "924")
SHORTS = ("short1", "short2", "short3", "short4")
# ~5 s of simulation at 700 MHz (sim 7060df6): far longer than the short runs take, with room
# for a loaded machine (at ~1 s, CI once stored the long run before the kill came)
LONG_ITERATIONS = 6000


def suite_file(tmp_path: Path, long_iterations: int) -> Path:
    """One long memory-bound kernel (simulated first: the longest-looking run goes first) and
    four short ones that the second worker finishes in well under a second."""
    text = ['name = "signals"', 'description = "one long kernel and four short ones"',
            '[[kernel]]', 'name = "long"', 'category = "memory"', 'description = "long loads"',
            'ctas = 120', 'warps_per_cta = 8', '[[kernel.phase]]',
            f'iterations = {long_iterations}',
            'body = [{op = "ld", id = "a", trans = 4}, {op = "alu", dep = "a"}]']
    for i, name in enumerate(SHORTS, 1):
        text += ['[[kernel]]', f'name = "{name}"', 'category = "compute"',
                 'description = "short ALU loop"', 'ctas = 30', 'warps_per_cta = 4',
                 '[[kernel.phase]]', f'iterations = {10 * i}',
                 'body = [{op = "alu", n = 4, dep = "prev"}]']
    path = tmp_path / "signals.toml"
    path.write_text("\n".join(text) + "\n")
    return path


# `gpudb` with SIGTERM and SIGHUP as a shell gives them, even if the tests run under nohup
GPUDB = ("import signal\n"
         "for s in (signal.SIGTERM, signal.SIGHUP): signal.signal(s, signal.SIG_DFL)\n"
         "from gpudb.cli import main\n"
         "main()\n")


def sweep_command(db: Path, suite: Path) -> list[str]:
    return [sys.executable, "-c", GPUDB, "--db", str(db), "sweep", "--suite", str(suite),
            *GRID, "--jobs", "2"]


def planned_ids(suite: Path) -> set[str]:
    return {t.run_id for t in plan(load_gpu("gtx480"), load_suite(suite), core_mhz=[700],
                                   mem_mhz=[924])}


def stored_ids(db: Path) -> dict[str, str]:
    """run_id -> kernel name of the runs in ``db``."""
    con = gpudb.connect(db, read_only=True)
    try:
        return dict(con.execute("SELECT r.run_id, k.name FROM run AS r "
                                "JOIN kernel AS k USING (kernel_id)").fetchall())
    finally:
        con.close()


def start(command: list[str], log: Path) -> subprocess.Popen:
    # output to a file, not a pipe: a worker left alive would hold a pipe open for ever
    with open(log, "w") as out:
        return subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) "
    return fields[0], int(fields[1]), int(fields[19])


def descendants(pid: int) -> dict[int, int]:
    """pid -> start time of every process below ``pid``."""
    parents: dict[int, list[int]] = {}
    starts = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat:
                parents.setdefault(stat[1], []).append(int(entry))
                starts[int(entry)] = stat[2]
    found, todo = {}, [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found[child] = starts[child]
            todo.append(child)
    return found


def alive(processes: dict[int, int]) -> list[int]:
    """Those of ``processes`` (pid -> start time) still running (a zombie has ended)."""
    out = []
    for pid, started in processes.items():
        stat = _stat(pid)
        if stat and stat[2] == started and stat[0] not in ("Z", "X"):
            out.append(pid)
    return out


def wait_for_workers(proc: subprocess.Popen, count: int = 2, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = descendants(proc.pid)
        if len(found) >= count:
            return found
        assert proc.poll() is None, proc.args
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"no {count} worker processes after {timeout} s")


def wal_size(db: Path) -> int:
    wal = db.with_name(db.name + ".wal")
    return wal.stat().st_size if wal.exists() else 0


def wait_for_a_run(proc: subprocess.Popen, db: Path, log: Path, timeout: float = 120.0) -> None:
    """Until the sweep has committed a run: its write-ahead log grows (the file is locked
    against readers while the sweep writes). The database was created and closed before the
    sweep started (:func:`fresh`), so its schema is not in the log: the first growth is the
    first run's transaction, given a moment to finish. The timeout is generous: on a loaded
    2-core CI machine the first write once took over 30 s."""
    before = wal_size(db)
    started = time.monotonic()
    while wal_size(db) <= before:
        assert proc.poll() is None, f"the sweep ended early: {log.read_text()}"
        assert time.monotonic() - started < timeout, \
            f"no run was written in {timeout:g} s; sweep output: {log.read_text()!r}"
        time.sleep(0.02)
    time.sleep(0.5)


@pytest.fixture(scope="module", autouse=True)
def compiled(tmp_path_factory):
    """The simulator's jitted code compiled and cached before any timed sweep, so that the
    two workers load it rather than compile it side by side (which, unevenly fast, could
    let the long run end before the first short one is written)."""
    from sim.sweep import simulate_task

    suite = suite_file(tmp_path_factory.mktemp("warm"), 1)
    for task in plan(load_gpu("gtx480"), load_suite(suite), ["long", SHORTS[0]], [700], [924]):
        simulate_task(task)  # as a worker does


def fresh(tmp_path: Path) -> Path:
    """A new gpudb file, closed (so checkpointed: no write-ahead log) before the sweep."""
    db = tmp_path / "sweep.duckdb"
    gpudb.connect(db).close()
    assert wal_size(db) == 0
    return db


def wait_gone(processes: dict[int, int], timeout: float = 5.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while alive(processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive(processes)


def test_kill_9_leaves_no_process_and_the_same_command_resumes(tmp_path):
    suite = suite_file(tmp_path, LONG_ITERATIONS)
    db = fresh(tmp_path)
    command = sweep_command(db, suite)
    log = tmp_path / "sweep.log"
    proc = start(command, log)
    workers = {}
    try:
        workers = wait_for_workers(proc)
        wait_for_a_run(proc, db, log)  # a short run is written; the long one is being simulated
        assert proc.poll() is None, "the sweep ended before it could be killed"
        workers.update(descendants(proc.pid))
    finally:
        proc.kill()
        proc.wait()
        left = wait_gone(workers)
        for pid in left:  # a failure leaves nothing behind either
            os.kill(pid, signal.SIGKILL)
    assert left == [], "worker processes outlived kill -9 of the sweep"
    kept = stored_ids(db)
    assert kept and set(kept) < planned_ids(suite) and "long" not in kept.values()
    resumed = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                             timeout=120, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert f"already in {db}" in resumed.stdout
    assert set(stored_ids(db)) == planned_ids(suite)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_end_the_sweep_and_its_workers_and_keep_finished_runs(tmp_path,
                                                                                 signum):
    # the sweep stops once the running simulations end (their results are dropped;
    # killing a worker mid-write can deadlock the pool on Python 3.11)
    suite = suite_file(tmp_path, LONG_ITERATIONS)
    db = fresh(tmp_path)
    log = tmp_path / "sweep.log"
    proc = start(sweep_command(db, suite), log)
    workers = {}
    try:
        workers = wait_for_workers(proc)
        wait_for_a_run(proc, db, log)
        time.sleep(1.0)  # the other short runs are written; the long one is being simulated
        assert proc.poll() is None, "the sweep ended before the signal"
        workers.update(descendants(proc.pid))
        proc.send_signal(signum)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
        left = wait_gone(workers, timeout=1.0)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    err = log.read_text()
    assert proc.returncode == 128 + signum, err
    # stopped, not finished: the long run in flight is not among the kept runs (the wait above
    # bounds the test; how fast it stops is a timing, not asserted on a shared machine)
    assert left == []
    name = signal.Signals(signum).name
    assert f"interrupted ({name}): 4 runs written and kept" in err.strip().splitlines()[-1]
    kept = stored_ids(db)
    assert sorted(kept.values()) == list(SHORTS) and set(kept) < planned_ids(suite)


def test_a_worker_without_pdeathsig_notices_its_parent_gone(tmp_path):
    """The portable fallback (no PR_SET_PDEATHSIG): the worker's watcher thread."""
    code = ("import os, sys, time\n"
            "from sim.sweep import _init_worker\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    _init_worker(die_with_parent=False)\n"
            "    time.sleep(60)\n"
            "    os._exit(0)\n"
            "print(pid, flush=True)\n"
            "time.sleep(60)\n")
    log = tmp_path / "fork.log"
    parent = start([sys.executable, "-c", code], log)
    try:
        deadline = time.monotonic() + 30
        while not log.read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.02)
        child = int(log.read_text())
        processes = {child: _stat(child)[2]}
        time.sleep(0.2)  # the watcher is running
    finally:
        parent.kill()
        parent.wait()
    left = wait_gone(processes, timeout=3.0)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []
