"""Sweeps into a real DuckDB file: rows, idempotence, experiment ids; the bench numbers."""

import hashlib

import pytest

import gpudb
from sim.model import run_id, simulate
from sim.config import load_gpu, load_suite
from gpudb.ingest import experiment_id
from sim.sweep import plan, sweep



@pytest.mark.parametrize("jobs", [1, 2])
def test_sweep_writes_runs_once(tmp_path, tiny_suite_path, jobs):
    db = tmp_path / "x.duckdb"
    calls = []
    first = sweep(db, "gtx480", tiny_suite_path, core_mhz=[700, 100], mem_mhz=[924],
                  interval_instructions=500, jobs=jobs, progress=lambda *a: calls.append(a))
    assert first["runs_added"] == 4 and first["runs_skipped"] == 0
    assert calls[0] == (0, 4, 0) and calls[-1][:2] == (4, 4)
    again = sweep(db, "gtx480", tiny_suite_path, core_mhz=[700, 100], mem_mhz=[924],
                  interval_instructions=500, jobs=jobs)
    assert again["runs_added"] == 0 and again["runs_skipped"] == 4
    con = gpudb.connect(db, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM run").fetchone()[0] == 4
        runs = con.execute("SELECT run_id, instructions, source, policy, experiment_id "
                           "FROM run").fetchall()
        assert {r[2] for r in runs} == {"sim"} and {r[3] for r in runs} == {"fixed"}
        assert {r[4] for r in runs} == {experiment_id("sim-gtx480-tiny")}
        for rid, n, *_ in runs:
            got = con.execute("SELECT sum(instructions), count(*) FROM interval WHERE run_id = ?",
                              [rid]).fetchone()
            assert got[0] == n and got[1] >= 2
        assert con.execute("SELECT count(*) FROM pstate WHERE gpu_id = 'gtx480'").fetchone()[0] == 10
        assert con.execute("SELECT count(*) FROM kernel").fetchone()[0] == 2
        name = con.execute("SELECT name FROM experiment").fetchone()[0]
        assert experiment_id(name) == hashlib.sha256(name.encode()).hexdigest()[:16]
        # nothing NULL that the simulator fills
        nulls = con.execute("SELECT count(*) FROM interval WHERE stall_cycles IS NULL "
                            "OR crisp_lcp_cycles IS NULL OR eq_samples IS NULL "
                            "OR core_static_j IS NULL OR dram_min_ns IS NULL").fetchone()[0]
        assert nulls == 0
    finally:
        con.close()


def test_run_id_is_the_simulated_runs_id(tiny_suite_path):
    g, s = load_gpu("gtx480"), load_suite(tiny_suite_path)
    task = plan(g, s, core_mhz=[300], mem_mhz=[924], interval_instructions=500)[0]
    result = simulate(g, task.kernel, 300, 924, interval_instructions=500)
    assert result.run["run_id"] == task.run_id
    assert run_id(g, task.kernel, 300, 924, 15, None, 500, 1) != task.run_id


def test_default_plan_is_every_pstate(tiny_suite_path):
    g = load_gpu("gtx480")
    tasks = plan(g, load_suite(tiny_suite_path))
    assert len(tasks) == 2 * 7 * 3
    with pytest.raises(ValueError, match="SM counts"):
        plan(g, load_suite(tiny_suite_path), sms=[8])
