"""Sweeps on a Dask cluster (issue 15 item 2): the same runs as the process pool, and every
run exactly once when a worker is killed mid-sweep."""

import os
import signal

import pytest

import gpudb
from gpudb.simulate.dask_sweep import chunk_tasks
from gpudb.simulate.sweep import sweep
from sim.config import load_gpu, load_suite
from sim.sweep import plan

distributed = pytest.importorskip("distributed")

GRID = {"suite": "micro", "kernels": ["stream_read", "alu_chain"],
        "core_mhz": [700.0, 400.0, 100.0], "mem_mhz": [924.0]}


def stored(db):
    con = gpudb.connect(db, read_only=True)
    try:
        runs = con.execute("SELECT run_id, time_ns, energy_j, instructions FROM run "
                           "ORDER BY run_id").fetchall()
        intervals = con.execute(
            "SELECT run_id, idx, cycles, time_ns, instructions, dram_reads, core_dynamic_j "
            "FROM interval ORDER BY run_id, idx").fetchall()
    finally:
        con.close()
    return runs, intervals


def test_chunks_hold_a_budget_of_instructions_and_every_task_once():
    gpu, suite = load_gpu("gtx480"), load_suite("micro")
    tasks = plan(gpu, suite, ["stream_read", "alu_chain"], [700.0, 400.0], [924.0])
    # in plan order, warp instructions 384000, 384000, 1000, 1000: the second chunk takes the
    # second stream_read and both alu_chain runs (386,000 <= 400,000)
    assert [t.kernel.warp_instructions for t in tasks] == [384000, 384000, 1000, 1000]
    chunks = chunk_tasks(tasks, budget=400_000)
    assert [[t.run_id for t in c] for c in chunks] == [[tasks[0].run_id],
                                                       [t.run_id for t in tasks[1:]]]
    # a run larger than the budget still gets a chunk of its own
    assert [len(c) for c in chunk_tasks(tasks, budget=1)] == [1, 1, 1, 1]


def test_local_cluster_stores_the_same_runs_as_the_process_pool(tmp_path):
    pool = sweep(tmp_path / "pool.duckdb", "gtx480", jobs=2, **GRID)
    dask = sweep(tmp_path / "dask.duckdb", "gtx480", jobs=2, scheduler="local",
                 chunk_instructions=400_000, **GRID)
    assert pool["runs_added"] == dask["runs_added"] == 6
    assert stored(tmp_path / "pool.duckdb") == stored(tmp_path / "dask.duckdb")
    # run again: everything is skipped, nothing simulated, no cluster needed
    again = sweep(tmp_path / "dask.duckdb", "gtx480", jobs=2, scheduler="local", **GRID)
    assert (again["runs_added"], again["runs_skipped"]) == (0, 6)


def test_a_worker_killed_mid_sweep_loses_no_run_and_duplicates_none(tmp_path):
    """Seven one-run chunks on a 2-worker cluster given by its address; when the first result
    arrives, the worker busy with a chunk is killed (SIGKILL). Its nanny starts a new worker,
    the scheduler hands the lost chunk to a live one, and the database ends with each of the
    seven planned runs exactly once."""
    grid = dict(GRID, kernels=["stream_read"],
                core_mhz=[700.0, 600.0, 500.0, 400.0, 300.0, 200.0, 100.0])
    killed = []
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        def progress(done, total, instructions=0):
            if done == 1 and not killed:
                # the scheduler runs in this process: its view of who is busy, and their pids
                busy = [ws for ws in cluster.scheduler.workers.values() if ws.processing]
                assert busy, "no worker had a chunk in flight"
                killed.append(busy[0].pid)
                os.kill(busy[0].pid, signal.SIGKILL)

        summary = sweep(tmp_path / "dask.duckdb", "gtx480", jobs=2,
                        scheduler=cluster.scheduler_address, chunk_instructions=1,
                        progress=progress, **grid)
    assert killed and summary["runs_added"] == 7
    con = gpudb.connect(tmp_path / "dask.duckdb", read_only=True)
    try:
        ids = [r[0] for r in con.execute("SELECT run_id FROM run").fetchall()]
    finally:
        con.close()
    planned = plan(load_gpu("gtx480"), load_suite("micro"), grid["kernels"], grid["core_mhz"],
                   grid["mem_mhz"])
    assert sorted(ids) == sorted(t.run_id for t in planned)       # 7 rows, 7 distinct ids


def test_an_unreachable_scheduler_is_one_error_line(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import gpudb.simulate.dask_sweep
    from gpudb.cli import cli

    monkeypatch.setattr(gpudb.simulate.dask_sweep, "CONNECT_TIMEOUT_S", 2)   # retries until then

    db = tmp_path / "x.duckdb"
    result = CliRunner().invoke(cli, ["--db", str(db), "sweep", "--suite", "micro", "--kernel",
                                      "alu_chain", "--core-mhz", "700", "--mem-mhz", "924",
                                      "--scheduler", "tcp://127.0.0.1:9"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines[-1:]) == 1 and lines[-1].startswith("Error: cannot reach the Dask "
                                                         "scheduler at tcp://127.0.0.1:9")
    assert not db.exists() or stored(db) == ([], [])
