"""`gpudb sql` writes all or nothing (issue 41 item 3): its statements run in one transaction,
a failure rolls every one back, SQL that would leave a file gpudb refuses is rolled back, and
a mistyped path is not a new database."""

from __future__ import annotations

import hashlib

import pytest
from conftest import invoke, one_line_error

import gpudb


def runs(path) -> int:
    result = invoke("--db", path, "sql", "SELECT count(*) AS n FROM run", "--format", "csv")
    assert result.exit_code == 0, result.output
    return int(result.output.splitlines()[1])


def test_a_failing_statement_rolls_back_the_ones_before_it(tiny_db):
    """Before: exit 1, and the DELETE before the failing SELECT stayed done (12 of 14 runs
    gone in the report)."""
    assert runs(tiny_db) == 8
    line = one_line_error(invoke("--db", tiny_db, "sql",
                                 "DELETE FROM run WHERE core_mhz < 700; SELECT 1 + 'x'"))
    assert line.startswith("Error: SQL error: Could not choose a best candidate function")
    assert runs(tiny_db) == 8
    # the same statements without the failing one are committed, and print the last's rows
    result = invoke("--db", tiny_db, "sql", "--format", "csv",
                    "DELETE FROM run WHERE core_mhz < 700; SELECT count(*) AS left FROM run")
    assert (result.exit_code, result.output) == (0, "left\n4\n")
    assert runs(tiny_db) == 4


@pytest.mark.parametrize("statement, refused", [
    ("CREATE MACRO abs(x) AS 42",
     "lab.duckdb defines its own macro 'abs', which would replace DuckDB's abs"),
    ("CREATE SCHEMA s; CREATE MACRO s.predict_linear(a, b, c, d) AS 0",
     "lab.duckdb defines its own macro 's.predict_linear', which would replace gpudb's "
     "predict_linear"),
    ("CREATE TABLE t AS SELECT 1 AS a; CREATE VIEW duckdb_tables AS SELECT 1",
     "lab.duckdb defines a view 'duckdb_tables', which would replace DuckDB's catalog view "
     "duckdb_tables"),
    ("CREATE TABLE note (a INT); "
     "CREATE TRIGGER wipe AFTER INSERT ON note FOR EACH STATEMENT DELETE FROM run",
     "lab.duckdb holds a trigger 'wipe' on table 'note', whose SQL would run on writes to it"),
])
def test_sql_that_would_lock_gpudb_out_is_rolled_back(tiny_db, monkeypatch, statement, refused):
    """Before: `CREATE MACRO abs(x) AS 42` was committed, every later command refused the
    file, and `DROP MACRO abs` through gpudb sql was refused too."""
    monkeypatch.chdir(tiny_db.parent)
    tiny_db.rename("lab.duckdb")
    before = hashlib.sha256(open("lab.duckdb", "rb").read()).hexdigest()
    assert one_line_error(invoke("--db", "lab.duckdb", "sql", statement)) == (
        f"Error: rolled back, nothing written: {refused}, and gpudb would refuse the file")
    assert runs("lab.duckdb") == 8  # still a file gpudb opens
    assert hashlib.sha256(open("lab.duckdb", "rb").read()).hexdigest() == before


def test_transaction_statements_are_refused(tiny_db):
    assert one_line_error(invoke("--db", tiny_db, "sql", "BEGIN; DELETE FROM run")) == (
        "Error: the SQL runs in one transaction of gpudb's (all statements or none): leave "
        "out BEGIN, COMMIT and ROLLBACK")
    assert runs(tiny_db) == 8


def test_sql_on_a_missing_file_creates_nothing(tmp_path):
    assert one_line_error(invoke("--db", tmp_path / "lab.dukcdb", "sql", "SELECT 1")) == (
        f"Error: no database at {tmp_path / 'lab.dukcdb'} (create it with `gpudb init`)")
    assert list(tmp_path.iterdir()) == []


def test_the_api_rolls_back_too(tiny_db):
    with gpudb.open(tiny_db) as lab:
        with pytest.raises(gpudb.GpudbError, match="^SQL error: "):
            lab.sql("DELETE FROM run; SELECT 1 + 'x'")
        assert lab.sql("SELECT count(*) FROM run").fetchall() == [(8,)]
        # a lone SELECT stays a lazy relation; several statements give the last one's rows
        assert lab.sql("DELETE FROM run WHERE core_mhz < 700; "
                       "SELECT count(*) AS n FROM run").fetchall() == [(4,)]
