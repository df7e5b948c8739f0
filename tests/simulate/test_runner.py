"""The one runner (gpudb.simulate.runner) under its three planners: a sweep, a controller
kind's runs (gpudb.control.runner) and the dynamic optimal's schedules
(gpudb.control.schedule_run). Worker processes store what one process stores; a run is
stored whole, with its metrics and the rows it refers to; an interrupt keeps the finished
runs and says how many, alike for every planner; a re-run resumes."""

from __future__ import annotations

import multiprocessing

import pytest

import gpudb
from gpudb.control.runner import run
from gpudb.simulate.runner import Planned, RunsInterrupted, simulate_and_store

# Equalizer on one kernel, one mode and variant, with its five static baselines: six runs,
# one with metric rows ('equalizer_ctas_mean'), its controller made from the Simulation
EQUALIZER = dict(modes=("performance",), variants=("full",))


def _stored(db) -> dict[str, list]:
    """Every row the runs wrote, in key order, without the time it was written."""
    con = gpudb.connect(db, read_only=True)
    try:
        return {table: con.execute(f"SELECT * EXCLUDE (created_at) FROM {table} "
                                   f"ORDER BY {key}").fetchall() if created else
                con.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall()
                for table, key, created in (
                    ("run", "run_id", True), ("interval", "run_id, idx", False),
                    ("metric", "run_id, idx, name", False), ("kernel", "kernel_id", False),
                    ("gpu", "gpu_id", False), ("pstate", "gpu_id, domain, freq_mhz", False),
                    ("experiment", "experiment_id", True))}
    finally:
        con.close()


def test_a_controller_kind_in_worker_processes_stores_what_one_process_stores(
        tmp_path, tiny_suite_path):
    serial, parallel = tmp_path / "one.duckdb", tmp_path / "two.duckdb"
    rows = run(serial, "equalizer", "gtx480", tiny_suite_path, ["mem"], **EQUALIZER)
    rows2 = run(parallel, "equalizer", "gtx480", tiny_suite_path, ["mem"], jobs=2,
                **EQUALIZER)
    assert multiprocessing.active_children() == []
    assert len(rows) == 6 and all(r["added"] for r in rows)
    assert rows2 == rows                      # plan order, whatever the completion order
    one, two = _stored(serial), _stored(parallel)
    assert one == two
    # what a closed-loop run stores beside its run: its metrics, from the controller that
    # ran in the worker (one per epoch after the first), and the rows it refers to
    [equalizer_run] = {m[0] for m in one["metric"]}
    epochs = sum(1 for i in one["interval"] if i[0] == equalizer_run)
    assert len(one["metric"]) == epochs - 1 > 0
    assert [k[0] for k in one["kernel"]] == ["tiny/mem"]
    assert [g[0] for g in one["gpu"]] == ["gtx480"]
    assert [e[1] for e in one["experiment"]] == ["equalizer-gtx480-tiny"]


def test_an_interrupted_controller_kind_keeps_finished_runs_and_resumes(tmp_path,
                                                                        tiny_suite_path):
    """Ctrl-C after the second run of a controller kind ends it as a sweep ends
    (test_sim_sweep.py): RunsInterrupted (a KeyboardInterrupt still) counting two runs, those
    two stored whole, and the same call again stores the other four, reporting the first two
    as stored already."""
    db = tmp_path / "x.duckdb"

    def ctrl_c_after_the_second(done, total):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(RunsInterrupted) as stop:
        run(db, "equalizer", "gtx480", tiny_suite_path, ["mem"],
            progress=ctrl_c_after_the_second, **EQUALIZER)
    assert isinstance(stop.value, KeyboardInterrupt)
    assert stop.value.summary["runs_added"] == 2
    assert str(stop.value) == ("interrupted by SIGINT after 2 new runs (finished runs are "
                               "kept; re-run to resume)")
    kept = _stored(db)
    assert len(kept["run"]) == 2
    assert sorted({i[0] for i in kept["interval"]}) == sorted(r[0] for r in kept["run"])
    rows = run(db, "equalizer", "gtx480", tiny_suite_path, ["mem"], **EQUALIZER)
    assert [r["added"] for r in rows] == [False, False, True, True, True, True]
    assert len(_stored(db)["run"]) == 6


def test_a_run_other_than_the_planned_one_is_refused_and_nothing_stored(
        tmp_path, tiny_suite_path):
    """A controller whose run_key is not the one its run_id was planned with would make the
    skip test wrong: the runner refuses the result before storing anything."""
    from dataclasses import replace

    from sim.config import load_gpu, load_suite
    from sim.sweep import plan

    gpu, suite = load_gpu("gtx480"), load_suite(tiny_suite_path)
    [task] = plan(gpu, suite, ["alu"], [700], [924], interval_instructions=500)
    db = tmp_path / "x.duckdb"
    con = gpudb.connect(db)
    try:
        with pytest.raises(RuntimeError, match="was not planned"):
            simulate_and_store(con, [Planned(replace(task, run_id="0" * 64), "e", "d")])
        assert con.execute("SELECT count(*) FROM run").fetchall() == [(0,)]
        assert con.execute("SELECT count(*) FROM kernel").fetchall() == [(0,)]
        # planned right, and twice: simulated once, stored once, the second skipped
        summary = simulate_and_store(con, [Planned(task, "e", "d")] * 2)
        assert (summary.runs_added, summary.runs_skipped) == (1, 1)
        again = simulate_and_store(con, [Planned(task, "e", "d")])
        assert (again.runs_added, again.runs_skipped, again.skipped) == (
            0, 1, frozenset({task.run_id}))
    finally:
        con.close()
