"""The one write path: gpudb.store.db.atomic (all or nothing on a real file) and gpudb.store.runs,
the one writer of runs, which never changes a stored run."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from conftest import REPO, TABLES, row_counts

import gpudb
from gpudb.store.db import atomic
from gpudb.store.runs import (
    KEYS,
    ensure_experiment,
    ensure_gpu,
    ensure_kernels,
    experiment_id,
    insert_metrics,
    insert_missing,
    insert_runs,
    stored_run_ids,
    write_run,
)
from sim.config import kernel_from_table, load_gpu
from sim.model import simulate

KERNEL = {"name": "k", "category": "compute", "description": "synthetic ALU loop (test)",
          "ctas": 4, "warps_per_cta": 2,
          "phase": [{"iterations": 10, "body": [{"op": "alu", "n": 4, "dep": "prev"}]}]}


@pytest.mark.parametrize("failure", [RuntimeError, KeyboardInterrupt, duckdb.Error])
def test_atomic_failure_midway_leaves_no_rows(fresh_db, failure):
    con = gpudb.connect(fresh_db)
    with pytest.raises(failure):
        with atomic(con):
            ensure_experiment(con, "half", "written, then rolled back")
            con.execute("INSERT INTO gpu (gpu_id, name, n_sm) VALUES ('g', 'g', 1)")
            assert con.execute("SELECT count(*) FROM gpu").fetchall()[0][0] == 1
            if failure is duckdb.Error:   # a statement DuckDB refuses: the key is taken
                con.execute("INSERT INTO gpu (gpu_id, name, n_sm) VALUES ('g', 'g', 1)")
            raise failure("midway")
    # the connection is usable again, and a second process sees nothing of it
    assert con.execute("SELECT count(*) FROM gpu").fetchall()[0][0] == 0
    con.close()
    assert row_counts(fresh_db) == dict.fromkeys(TABLES, 0)


def test_atomic_commits_the_block(fresh_db):
    con = gpudb.connect(fresh_db)
    with atomic(con) as same:
        assert same is con
        ensure_experiment(con, "kept", "committed")
    con.close()
    assert row_counts(fresh_db)["experiment"] == 1


def test_atomic_failed_commit_raises_the_commit_error(fresh_db):
    # two transactions insert the same key: the second COMMIT fails and already ended its
    # transaction, so atomic must not try to roll it back (that would hide the error)
    con = gpudb.connect(fresh_db)
    other = con.cursor()
    with pytest.raises(duckdb.Error, match="(?i)commit"):
        with atomic(other):
            other.execute("INSERT INTO gpu (gpu_id, name, n_sm) VALUES ('g', 'other', 1)")
            with atomic(con):
                con.execute("INSERT INTO gpu (gpu_id, name, n_sm) VALUES ('g', 'first', 1)")
    assert con.execute("SELECT name FROM gpu").fetchall() == [("first",)]
    con.close()


def _sim_db(path: Path):
    """A connection to a new file holding the gtx480 GPU, kernel k and an experiment."""
    con = gpudb.connect(path)
    gpu, kern = load_gpu("gtx480"), kernel_from_table(KERNEL, "t")
    ensure_gpu(con, gpu)
    ensure_kernels(con, [kern])
    return con, gpu, kern, ensure_experiment(con, "runs", "test")


def test_write_run_stores_a_run_once(fresh_db):
    con, gpu, kern, eid = _sim_db(fresh_db)
    result = simulate(gpu, kern, interval_instructions=50)
    assert write_run(con, result, eid) is True
    assert write_run(con, result, eid) is False
    assert stored_run_ids(con, [result.run["run_id"], "nope"]) == {result.run["run_id"]}
    run = con.execute("SELECT experiment_id, source, policy, instructions, created_at IS NOT NULL "
                      "FROM run").fetchall()
    assert run == [(eid, "sim", "fixed", result.run["instructions"], True)]
    assert con.execute("SELECT count(*) FROM interval").fetchall()[0][0] == len(result.intervals)
    # referenced rows are added once, never replaced
    ensure_gpu(con, gpu)
    ensure_kernels(con, [kern, kern])
    assert ensure_experiment(con, "runs", "other description") == eid == experiment_id("runs")
    assert con.execute("SELECT description FROM experiment").fetchall() == [("test",)]
    con.close()
    assert {k: v for k, v in row_counts(fresh_db).items() if v} == {
        "gpu": 1, "pstate": 10, "kernel": 1, "experiment": 1, "run": 1,
        "interval": len(result.intervals)}


def test_insert_runs_never_changes_a_stored_run(fresh_db):
    con, gpu, kern, eid = _sim_db(fresh_db)
    stored = simulate(gpu, kern, 700, interval_instructions=50)
    new = simulate(gpu, kern, 300, interval_instructions=50)
    write_run(con, stored, eid)
    before = con.execute("SELECT * FROM interval ORDER BY ALL").fetchall()
    # the stored run again with another time and an extra interval, beside a new run
    runs = pa.Table.from_pylist([dict(stored.run, experiment_id=eid, time_ns=1.0),
                                 dict(new.run, experiment_id=eid)])
    extra = stored.intervals.slice(0, 1).set_column(
        1, "idx", pa.array([999], pa.int32()))
    intervals = pa.concat_tables([stored.intervals, extra, new.intervals])
    with atomic(con):
        written = insert_runs(con, runs, intervals)
    assert written == (1, len(new.intervals))
    assert con.execute("SELECT time_ns FROM run WHERE run_id = ?",
                       [stored.run["run_id"]]).fetchall()[0][0] == stored.run["time_ns"]
    assert con.execute("SELECT * FROM interval WHERE run_id = ? ORDER BY ALL",
                       [stored.run["run_id"]]).fetchall() == before
    assert insert_runs(con, runs, intervals) == (0, 0)
    con.close()


def test_insert_runs_takes_sql_and_a_failure_leaves_nothing(fresh_db):
    con, gpu, kern, eid = _sim_db(fresh_db)
    result = simulate(gpu, kern, interval_instructions=50)
    con.register("staged", pa.Table.from_pylist([dict(result.run, experiment_id=eid)]))
    bad = result.intervals.set_column(1, "idx", pa.array([-1] * len(result.intervals),
                                                         pa.int32()))
    with pytest.raises(duckdb.ConstraintException):
        with atomic(con):
            insert_runs(con, "SELECT * FROM staged", bad)
    assert con.execute("SELECT count(*) FROM run").fetchall()[0][0] == 0
    assert insert_runs(con, "SELECT * FROM staged").runs == 1
    # with a stored run among them, the error is still the one that caused the failure
    other = simulate(gpu, kern, 300, interval_instructions=50)
    con.register("staged", pa.Table.from_pylist([dict(result.run, experiment_id=eid),
                                                 dict(other.run, experiment_id=eid)]))
    bad = other.intervals.set_column(1, "idx", pa.array([-1] * len(other.intervals),
                                                        pa.int32()))
    with pytest.raises(duckdb.ConstraintException):
        with atomic(con):
            insert_runs(con, "SELECT * FROM staged", bad)
    assert con.execute("SELECT count(*) FROM run").fetchall()[0][0] == 1
    assert insert_runs(con, "SELECT * FROM staged", other.intervals) == (1, len(other.intervals))
    con.close()


def test_metrics_and_parents_are_added_only_where_missing(fresh_db):
    con, gpu, kern, eid = _sim_db(fresh_db)
    result = simulate(gpu, kern, interval_instructions=50)
    write_run(con, result, eid)
    rid = result.run["run_id"]
    rows = pa.table({"run_id": [rid, rid], "name": ["a", "b"], "value": [1.0, 2.0]})
    assert insert_metrics(con, rows, skip_stored=False) == 2
    again = pa.table({"run_id": [rid, rid], "name": ["b", "c"], "value": [9.0, 3.0]})
    assert insert_metrics(con, again) == 1
    per_interval = pa.table({"run_id": [rid], "idx": [0], "name": ["a"], "value": [4.0]})
    assert insert_metrics(con, per_interval) == 1
    assert con.execute("SELECT idx, name, value FROM metric ORDER BY ALL").fetchall() == [
        (0, "a", 4.0), (None, "a", 1.0), (None, "b", 2.0), (None, "c", 3.0)]
    # insert_missing: the first of rows sharing a key, none that is stored
    kernels = pa.table({"kernel_id": ["t/k", "m/x", "m/x"], "name": ["k", "x", "y"],
                        "suite": ["t", "m", "m"]})
    assert insert_missing(con, "kernel", kernels) == 1
    assert con.execute("SELECT name, category FROM kernel WHERE kernel_id = 'm/x'"
                       ).fetchall() in ([("x", None)], [("y", None)])
    con.close()


def test_keys_cover_every_merged_table():
    from gpudb.store.transfer import TABLES as MERGED

    assert set(KEYS) == set(MERGED) == set(TABLES)


def test_runs_is_the_only_writer_of_run_rows():
    # bench.py's DuckDB reference inserts the rows gpudb produced, by design not through gpudb
    writes = re.compile(r"INSERT\s+(OR\s+\w+\s+)?INTO\s+(run|interval|metric|gpu|pstate|kernel"
                        r"|experiment)\b", re.I)
    found = [f"{path.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}"
             for path in sorted((REPO / "gpudb").rglob("*.py"))
             if path.name not in ("runs.py", "bench.py")
             for text in [path.read_text()] for m in writes.finditer(text)]
    assert found == []
