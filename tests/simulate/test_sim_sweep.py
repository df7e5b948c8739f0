"""Sweeps: sim.sweep plans and simulates without a database (and never imports gpudb);
gpudb.simulate.sweep stores them in a real DuckDB file: rows, idempotence, experiment ids."""

import hashlib
import pkgutil
import subprocess
import sys
from contextlib import closing

import pytest

import gpudb
import sim
from gpudb.simulate.sweep import sweep
from gpudb.store.runs import experiment_id
from sim.config import load_gpu, load_suite
from sim.model import run_id, simulate
from sim.sweep import plan, simulate_tasks


def test_sim_never_imports_gpudb():
    modules = ["sim"] + [f"sim.{m.name}" for m in pkgutil.iter_modules(sim.__path__)]
    assert {"sim.config", "sim.model", "sim.sweep", "sim.bench"} <= set(modules)
    code = (f"import sys, {', '.join(modules)}\n"
            "leaked = sorted(m for m in sys.modules if m == 'gpudb' or m.startswith('gpudb.'))\n"
            "assert not leaked, leaked\n"
            "from sim.config import load_gpu, load_suite\n"
            "assert load_gpu('gtx480').n_sm == 15 and load_suite('default').kernels\n"
            "assert not any(m == 'gpudb' or m.startswith('gpudb.') for m in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("jobs", [1, 2])
def test_simulate_tasks_yields_every_planned_run(tiny_suite_path, jobs):
    g, s = load_gpu("gtx480"), load_suite(tiny_suite_path)
    tasks = plan(g, s, core_mhz=[700, 100], mem_mhz=[924], interval_instructions=500)
    with closing(simulate_tasks(tasks, jobs)) as results:
        got = {r.run["run_id"]: r for r in results}
    assert set(got) == {t.run_id for t in tasks}
    for r in got.values():
        assert r.intervals.column("run_id").to_pylist() == [r.run["run_id"]] * len(r.intervals)
        assert sum(r.intervals.column("instructions").to_pylist()) == r.run["instructions"]


def test_closing_simulate_tasks_early_leaves_no_worker(tiny_suite_path):
    g, s = load_gpu("gtx480"), load_suite(tiny_suite_path)
    tasks = plan(g, s, core_mhz=[700, 500, 300, 100], mem_mhz=[924], interval_instructions=500)
    results = simulate_tasks(tasks, jobs=2)
    first = next(results)
    assert first.run["run_id"] in {t.run_id for t in tasks}
    results.close()
    import multiprocessing

    assert multiprocessing.active_children() == []


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
        assert con.execute("SELECT count(*) FROM pstate WHERE gpu_id = 'gtx480'"
                           ).fetchone()[0] == 10
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


def test_interrupted_sweep_keeps_finished_runs_and_resumes(tmp_path, tiny_suite_path):
    import multiprocessing

    from gpudb.simulate.runner import RunsInterrupted

    db = tmp_path / "x.duckdb"
    grid = dict(core_mhz=[700, 500, 300, 100], mem_mhz=[924], interval_instructions=500)

    def ctrl_c_after_the_second(done, total, instructions):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(RunsInterrupted) as stop:
        sweep(db, "gtx480", tiny_suite_path, jobs=2, progress=ctrl_c_after_the_second, **grid)
    assert stop.value.summary["runs_added"] == 2
    assert multiprocessing.active_children() == []
    con = gpudb.connect(db, read_only=True)
    kept = con.execute("SELECT count(*), sum(instructions) FROM run").fetchall()[0]
    assert kept[0] == 2
    assert con.execute("SELECT sum(instructions) FROM interval").fetchall()[0][0] == kept[1]
    con.close()
    rest = sweep(db, "gtx480", tiny_suite_path, jobs=2, **grid)
    assert (rest["runs_added"], rest["runs_skipped"]) == (6, 2)


def test_a_setting_named_twice_is_simulated_once(tmp_path, tiny_suite_path):
    db = tmp_path / "x.duckdb"
    got = sweep(db, "gtx480", tiny_suite_path, kernels=["alu"], core_mhz=[700, 700],
                mem_mhz=[924], interval_instructions=500)
    assert got["runs_added"] == 1 and got["runs_skipped"] == 1


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


@pytest.mark.parametrize("fail_at", [1, 2])
def test_a_sweep_that_fails_leaves_nothing_it_did_not_finish(tmp_path, tiny_suite_path,
                                                             monkeypatch, fail_at):
    """The gpu, kernel and experiment rows go in with the first run: a sweep failing before
    it finished one leaves no row at all; failing later, it keeps the runs and their rows."""
    from conftest import row_counts

    import sim.sweep

    real, calls = sim.sweep.simulate_task, []

    def simulate_or_fail(task):
        calls.append(task)
        if len(calls) == fail_at:
            raise RuntimeError("simulator failed")
        return real(task)

    monkeypatch.setattr(sim.sweep, "simulate_task", simulate_or_fail)
    db = tmp_path / "x.duckdb"
    with pytest.raises(RuntimeError, match="simulator failed"):
        sweep(db, "gtx480", tiny_suite_path, core_mhz=[700, 100], mem_mhz=[924],
              interval_instructions=500, jobs=1)
    counts = row_counts(db)
    if fail_at == 1:
        assert counts == dict.fromkeys(counts, 0)
    else:
        assert (counts["run"], counts["gpu"], counts["kernel"], counts["experiment"]) == (
            1, 1, 2, 1)
