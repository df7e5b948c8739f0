"""A file from someone else is data only (issue 12, items 1-3).

A hostile database is built here the way a teammate could: a real gpudb file, then edited with
a plain DuckDB client to hold views and a table macro that read a secret file of this user, a
gpudb view (`prediction`) replaced by one with perfect predictions while its views_sha256 still
matches, and a table of its own with a default.
Every command must refuse or neutralise each, never show the secret, and the accuracy table
from that file must equal the one from a clean copy. Macros named like gpudb's UDFs or DuckDB's
functions and operators are refused by name. A --db that is not a gpudb database is refused
with one line saying what it is, and a failed command leaves no new file.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest
from conftest import TINY_CSV, TINY_MAPPING, invoke, one_line_error, row_counts
from hostile_files import (  # noqa: F401  (built, tiny, hostile: fixtures)
    SECRET,
    SHADOWS,
    built,
    hostile,
    not_database_files,
    plain_edit,
    shadowing,
    tiny,
)

import gpudb


def test_every_open_is_locked_down(fresh_db, built):
    secret = built[2]
    con = gpudb.connect(fresh_db, read_only=True)
    try:
        settings = dict(con.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access', "
            "'autoinstall_known_extensions', 'autoload_known_extensions', 'lock_configuration')"
        ).fetchall())
        assert settings == {"enable_external_access": "false",
                            "autoinstall_known_extensions": "false",
                            "autoload_known_extensions": "false", "lock_configuration": "true"}
        with pytest.raises(duckdb.PermissionException):
            con.execute(f"SELECT * FROM read_text('{secret}')").fetchall()
        for setting in ("enable_external_access = true", "autoload_known_extensions = true",
                        "allowed_directories = ['/']", "lock_configuration = false"):
            with pytest.raises(duckdb.Error):
                con.execute(f"SET {setting}")
        con.execute("SET threads = 1")  # what gpudb's own code sets stays settable
    finally:
        con.close()
    eng = gpudb.engine(fresh_db, read_only=True)
    try:
        from sqlalchemy import text
        with eng.connect() as sa, pytest.raises(Exception, match="disabled by configuration"):
            sa.execute(text(f"SELECT * FROM read_text('{secret}')")).all()
    finally:
        eng.dispose()


def test_hostile_views_read_no_file_in_any_command(hostile, tiny, tmp_path):
    outputs = []
    for view in ("leak", "leak_csv", "leak_table()"):
        result = invoke("--db", hostile, "sql", f"SELECT * FROM {view}")
        assert "disabled by configuration" in one_line_error(result)
        outputs.append(result.output)
    for args in (("info",), ("info", "--format", "json"), ("query", "mape_by_predictor"),
                 ("evaluate", "accuracy", "--gpu", "tiny"), ("export", tmp_path / "out")):
        result = invoke("--db", hostile, *args)
        assert result.exit_code == 0, (args, result.output)
        outputs.append(result.output)
    target = tmp_path / "target.duckdb"
    result = invoke("--db", target, "merge", hostile)
    assert result.exit_code == 0 and "8 runs added" in result.output, result.output
    assert row_counts(target) == row_counts(tiny)
    outputs.append(result.output)
    assert not any(SECRET in out for out in outputs)
    exported = [p.name for p in (tmp_path / "out").iterdir()]
    assert "note.parquet" in exported  # the file's own table is data and goes along
    assert not any(SECRET.encode() in p.read_bytes() for p in (tmp_path / "out").iterdir())


def test_accuracy_from_a_hostile_file_equals_a_clean_copy(hostile, tiny):
    for args in (("evaluate", "accuracy", "--gpu", "tiny", "--format", "csv"),
                 ("query", "mape_by_predictor", "--format", "csv"),
                 ("sql", ("SELECT predictor, avg(abs(predicted_ns - actual_ns) / actual_ns) "
                          "AS e FROM prediction GROUP BY ALL ORDER BY ALL"), "--format", "csv")):
        clean = invoke("--db", tiny, *args)
        faked = invoke("--db", hostile, *args)
        assert clean.exit_code == 0 and faked.exit_code == 0, faked.output
        assert faked.output == clean.output, args
    assert "proportional,0.0,5.0,2.5,10.0,4" in invoke(
        "--db", hostile, "evaluate", "accuracy", "--gpu", "tiny", "--format", "csv").output


def test_writable_open_puts_gpudbs_views_back_and_materializes_real_predictions(hostile,
                                                                                  tiny):
    assert invoke("--db", tiny, "materialize").exit_code == 0
    result = invoke("--db", hostile, "materialize")
    assert result.exit_code == 0, result.output
    query = ("SELECT predictor, run_id, target_core_mhz, target_mem_mhz, predicted_ns "
             "FROM {} ORDER BY ALL")
    plain = duckdb.connect(str(hostile), read_only=True)
    clean = duckdb.connect(str(tiny), read_only=True)
    try:
        rows = plain.execute(query.format("prediction_materialized")).fetchall()
        assert rows == clean.execute(query.format("prediction_materialized")).fetchall()
        stored = plain.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'prediction'"
                               ).fetchall()[0][0]
        assert "prediction_real" not in stored  # the file's own definition is gone
    finally:
        plain.close()
        clean.close()


def test_a_column_default_of_the_file_reads_no_file(hostile):
    result = invoke("--db", hostile, "sql", "INSERT INTO note (n) VALUES (1); "
                    "SELECT body FROM note", "--format", "csv")
    assert SECRET not in result.output
    if result.exit_code == 0:  # DuckDB refused the file-reading default: the file's own one
        assert result.output == "body\nstamped by the file\n"
    else:
        assert "disabled by configuration" in one_line_error(result)


PSTATE = ("CREATE TABLE pstate (gpu_id TEXT NOT NULL REFERENCES gpu (gpu_id), domain TEXT NOT "
          "NULL CHECK (domain IN ('core', 'mem')), freq_mhz DOUBLE NOT NULL CHECK (freq_mhz > "
          "0), voltage_v DOUBLE {voltage}, PRIMARY KEY (gpu_id, domain, freq_mhz))")


@pytest.mark.parametrize("statements, said", [
    (["DROP TABLE pstate", PSTATE.format(voltage="GENERATED ALWAYS AS (freq_mhz / 1000)")],
     "column pstate.voltage_v is generated (AS CAST((freq_mhz / 1000) AS DOUBLE))"),
    (["DROP TABLE pstate", PSTATE.format(voltage="CHECK (voltage_v > -1)")],
     "table pstate has the constraint CHECK((voltage_v > -1)) of its own"),
    (["DROP TABLE pstate", PSTATE.format(voltage="")],
     "table pstate lacks gpudb's constraint CHECK((voltage_v > 0))"),
    (["DROP TABLE pstate", PSTATE.format(voltage="CHECK (voltage_v > 0)").replace(
        ", PRIMARY KEY (gpu_id, domain, freq_mhz)", "")],
     "table pstate lacks gpudb's constraint PRIMARY KEY(gpu_id, \"domain\", freq_mhz)"),
    (["DROP TABLE pstate", PSTATE.format(voltage="CHECK (voltage_v > 0) DEFAULT 1.0")],
     "column pstate.voltage_v has the default 1.0 where gpudb's has none"),
    (["ALTER TABLE experiment ALTER COLUMN description SET DEFAULT repeat('x', 2000000000)"],
     "column experiment.description has the default repeat('x', 2000000000) where gpudb's "
     "has none"),
    (["ALTER TABLE kernel ADD COLUMN stamp TEXT DEFAULT 'theirs'"],
     "its own column kernel.stamp has a default ('theirs')"),
    (["ALTER TABLE metric ALTER COLUMN value TYPE TEXT"],
     "column metric.value is VARCHAR where gpudb's is DOUBLE"),
])
def test_a_gpudb_table_defined_otherwise_is_refused_in_one_line(tiny, tmp_path, statements,
                                                                said):
    """Issue 31: a file's gpudb tables must be defined as gpudb's migrations define them: a
    generated column computes what gpudb reads as data, and a default or constraint of the
    file's own runs on gpudb's inserts (a default of repeat('x', 2e9) fills memory on every
    row). Every command refuses such a file in one line and writes nothing to it."""
    plain_edit(tiny, *statements)
    before = tiny.read_bytes()
    expected = (f"Error: {tiny}: {said}, not as gpudb's migrations define it; refusing to use "
                "the file")
    for args in [("info",), ("query", "mape_by_predictor"), ("init",),
                 ("ingest", *tiny_paths(tmp_path))]:
        assert one_line_error(invoke("--db", tiny, *args)) == expected, args
    assert one_line_error(invoke("--db", tmp_path / "new.duckdb", "merge", tiny)) == expected
    assert tiny.read_bytes() == before and not (tmp_path / "new.duckdb").exists()


def test_a_clean_file_is_checked_from_its_table_statements(tiny):
    """trust.refuse_altered_tables compares each gpudb table's CREATE TABLE statement, as
    DuckDB writes it from its catalog, with the migrations' first, and column by column only
    where one differs (the test above): on a file gpudb wrote, every statement is the
    migrations' own, so the comparison is one catalog query."""
    from gpudb.store import db, trust

    con = gpudb.connect(tiny, read_only=True)
    try:
        applied = db.applied_migrations(con)
        shipped, statements = trust._definitions_at(tuple(sorted(applied)))
        here = trust._statements(con, trust.file_catalog(con))
    finally:
        con.close()
    assert set(statements) == set(shipped) and "run" in statements
    assert {t: here.get(t) for t in statements} == statements


def test_a_file_holding_a_trigger_is_refused_before_it_fires(tiny, tmp_path):
    """DuckDB 2.0 stores triggers in the file: one on gpudb's run table ran its own SQL on
    every `gpudb ingest` and `gpudb sweep` (here: a row into a table of the file's; it could
    as well delete gpudb's rows or count to 1e12). Every command refuses such a file in one
    line naming the trigger and how to drop it, before anything is written: the trigger
    never fires."""
    plain_edit(tiny, "CREATE TABLE spy (n BIGINT)",
               "CREATE TRIGGER stamp AFTER INSERT ON run FOR EACH STATEMENT "
               "INSERT INTO spy VALUES (1)")
    before = tiny.read_bytes()
    expected = (f"Error: {tiny} holds a trigger 'stamp' on table 'run', whose SQL would run on "
                "writes to it; refusing to use the file (drop it with a plain DuckDB client: "
                'DROP TRIGGER "stamp" ON "main"."run")')
    for args in [("info",), ("query", "mape_by_predictor"), ("sql", "SELECT 1"), ("init",),
                 ("ingest", *tiny_paths(tmp_path))]:
        assert one_line_error(invoke("--db", tiny, *args)) == expected, args
    assert one_line_error(invoke("--db", tmp_path / "new.duckdb", "merge", tiny)) == expected
    assert tiny.read_bytes() == before and not (tmp_path / "new.duckdb").exists()
    with pytest.raises(gpudb.GpudbError, match="holds a trigger 'stamp'"):
        gpudb.open(tiny)
    con = duckdb.connect(str(tiny), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM spy").fetchall() == [(0,)]
    finally:
        con.close()
    # dropped as the message says, the file is gpudb's again
    plain_edit(tiny, 'DROP TRIGGER "stamp" ON "main"."run"')
    assert invoke("--db", tiny, "ingest", *tiny_paths(tmp_path)).exit_code == 0


def tiny_paths(folder: Path) -> list[str]:
    (folder / "t.csv").write_text(TINY_CSV)
    (folder / "t.toml").write_text(TINY_MAPPING)
    return [str(folder / "t.csv"), "--mapping", str(folder / "t.toml")]


def test_info_lists_the_files_own_objects(hostile, tiny):
    listed = invoke("--db", hostile, "info")
    assert listed.exit_code == 0, listed.output
    line = next(s for s in listed.output.splitlines() if s.startswith("not gpudb's:"))
    for item in ("view leak", "view leak_csv", "table macro leak_table", "view prediction_real",
                 "table note"):
        assert item in line, (item, line)
    assert "view prediction," not in line and "table run" not in line
    clean = invoke("--db", tiny, "info")
    assert "not gpudb's:   nothing" in clean.output
    values = invoke("--db", hostile, "info", "--format", "csv").output
    assert "not_gpudb.view,leak\n" in values


@pytest.mark.parametrize("name, macro", SHADOWS, ids=[s[0] for s in SHADOWS])
def test_files_replacing_gpudbs_or_duckdbs_functions_are_refused(tiny, tmp_path, name, macro):
    path = shadowing(tiny, tmp_path, name, macro)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    commands = [("info",), ("query", "mape_by_predictor"), ("sql", "SELECT 1"),
                ("evaluate", "accuracy", "--gpu", "tiny"), ("materialize",),
                ("export", tmp_path / "out")]
    for args in commands:
        line = one_line_error(invoke("--db", path, *args))
        assert "defines its own" in line and repr(name) in line, (args, line)
    line = one_line_error(invoke("--db", tmp_path / "target.duckdb", "merge", path))
    assert repr(name) in line and not (tmp_path / "target.duckdb").exists()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert not (tmp_path / "out").exists()


def test_no_spill_directory_is_left_behind(hostile, tiny, tmp_path):
    pattern = os.path.join(tempfile.gettempdir(), "gpudb-untrusted-*")
    before = set(glob.glob(pattern))
    for args in (("--db", tmp_path / "t.duckdb", "merge", hostile), ("--db", hostile, "info"),
                 ("--db", tiny, "query", "mape_by_predictor")):
        assert invoke(*args).exit_code == 0
    assert set(glob.glob(pattern)) == before
    assert not list(tmp_path.glob("*.tmp"))  # DuckDB's own spill directories are gone too


# --- item 3: a --db that is not a gpudb database -------------------------------------------

@pytest.fixture
def not_databases(tmp_path):
    """{label: (path, what the refusal must say it is)}."""
    return not_database_files(tmp_path)


def _commands(inputs):
    from conftest import TINY_SUITE

    inputs.mkdir()
    (inputs / "suite.toml").write_text(TINY_SUITE)
    (inputs / "data.csv").write_text(TINY_CSV)
    (inputs / "map.toml").write_text(TINY_MAPPING)
    return [("info",), ("sql", "SELECT 1"), ("init",),
            ("ingest", inputs / "data.csv", "--mapping", inputs / "map.toml"),
            ("sweep", "--suite", inputs / "suite.toml", "--core-mhz", "700", "--mem-mhz", "924",
             "--jobs", "1", "--interval-instructions", "1000"),
            ("query", "mape_by_predictor"), ("materialize",), ("merge", inputs / "none.duckdb")]


def test_a_db_that_is_not_a_gpudb_database_is_refused_saying_what_it_is(not_databases,
                                                                        tmp_path):
    commands = _commands(tmp_path / "inputs")
    listing = sorted(str(p) for p in tmp_path.rglob("*"))
    for label, (path, what) in not_databases.items():
        before = path.read_bytes() if path and os.path.isfile(path) else None
        for args in commands:
            line = one_line_error(invoke("--db", path, *args))
            assert what in line and "memory" not in line, (label, args, line)
            if before is not None:
                assert path.read_bytes() == before, (label, args)
        assert sorted(str(p) for p in tmp_path.rglob("*")) == listing, (label, "new file")


def test_a_closed_output_pipe_keeps_what_the_command_wrote(tmp_path, tiny_files):
    # `gpudb ingest ... | head -0`: the report cannot be written once the ingest committed
    new = tmp_path / "new.duckdb"
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-c", "from gpudb.cli import main; main()",
                               "--db", str(new), "ingest", str(tiny_files[0]), "--mapping",
                               str(tiny_files[1])], stdout=write, stderr=subprocess.PIPE,
                              timeout=120)
    finally:
        os.close(write)
    assert proc.returncode != 0  # the report could not be written
    con = duckdb.connect(str(new), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM run").fetchone()[0] > 0
    finally:
        con.close()


def test_empty_db_path_creates_nothing_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for args in (("init",), ("sql", "SELECT 1")):
        assert "empty" in one_line_error(invoke("--db", "", *args))
    assert os.listdir(tmp_path) == []


def test_a_failed_command_creates_no_new_file(tmp_path, tiny_files):
    bad = tmp_path / "bad.csv"
    bad.write_text("kernel,core_mhz,mem_mhz,time_ms,power_w\nalpha,500,800,oops,100\n")
    for args in (("sql", "SELEC 1"), ("merge", tmp_path / "missing.duckdb"),
                 ("ingest", bad, "--mapping", tiny_files[1]),
                 ("train", "wu", "--gpu", "nothere")):
        new = tmp_path / "new.duckdb"
        one_line_error(invoke("--db", new, *args))
        assert not new.exists() and not (tmp_path / "new.duckdb.wal").exists(), args
    good = tmp_path / "good.duckdb"
    # issue 41 item 3: sql on a mistyped path is refused, not a new database
    assert one_line_error(invoke("--db", good, "sql", "SELECT 1")) == (
        f"Error: no database at {good} (create it with `gpudb init`)")
    assert invoke("--db", good, "init").exit_code == 0
    assert good.exists()  # a command that succeeds keeps the file it created
    one_line_error(invoke("--db", good, "sql", "SELEC 1"))
    assert good.exists()  # and one that fails never removes a file it did not create


# --- issue 31: a teammate's file, round three ---------------------------------------------------

# a view name that, printed raw, clears the line and rewrites it as the all-clear
CLEARING = "z\x1b[2K\x1b[1Gnot gpudb's: nothing (only gpudb's own tables and views)"
# a category that, printed raw, sets the terminal's title and blanks the row
TITLING = "memory\x1b]0;pwned\x07\x1b[2K\r\u202e\x9b"


def control_characters(text: str) -> list[str]:
    """The C0/C1 controls (but line breaks and tabs), DEL and bidi overrides in ``text``."""
    return sorted({c for c in text if (ord(c) < 0x20 and c not in "\n\t")
                   or 0x7f <= ord(c) <= 0x9f or c in "\u202a\u202b\u202c\u202d\u202e"})


def test_strings_from_the_file_reach_the_terminal_escaped(tiny, tmp_path):
    plain_edit(tiny, f"CREATE VIEW \"{CLEARING}\" AS SELECT 1 AS one",
               f"UPDATE kernel SET category = '{TITLING}'",
               "INSERT INTO experiment SELECT * REPLACE ('e31' AS experiment_id, "
               "'tiny\x1b[31m' AS name) FROM experiment")
    listed = invoke("--db", tiny, "info")
    assert listed.exit_code == 0, listed.output
    assert not control_characters(listed.output), listed.output
    line = next(s for s in listed.output.splitlines() if s.startswith("not gpudb's:"))
    assert line == "not gpudb's:   view z\\x1b[2K\\x1b[1Gnot gpudb's: nothing (only gpudb's " \
                   "own tables and views)"
    assert "tiny\\x1b[31m" in listed.output  # the experiment's name, in the table
    for fmt in ("table", "csv", "markdown", "json"):
        shown = invoke("--db", tiny, "evaluate", "accuracy", "--gpu", "tiny", "--format", fmt)
        assert shown.exit_code == 0, shown.output
        assert not control_characters(shown.output), (fmt, shown.output)
    table = invoke("--db", tiny, "query", "mape_by_kernel", "-p", "gpu_id", "tiny").output
    assert not control_characters(table)
    assert "memory\\x1b]0;pwned\\x07\\x1b[2K \\u202e\\x9b" in table  # \r: a line break
    # an error line naming the file's object
    refused = invoke("--db", tiny, "sql", f"SELECT * FROM \"{CLEARING}x\"")
    assert not control_characters(refused.output) and "\\x1b[2K" in one_line_error(refused)


@pytest.mark.parametrize("macro", ["predict_linear(a, b, c, d) AS 0", "abs(x) AS 0",
                                   "read_csv(x) AS TABLE SELECT 1"])
def test_a_macro_in_another_schema_named_like_a_function_is_refused(tiny, tmp_path, macro):
    name = macro.split("(", 1)[0]
    plain_edit(tiny, "CREATE SCHEMA other", f"CREATE MACRO other.{macro}")
    before = hashlib.sha256(tiny.read_bytes()).hexdigest()
    for args in [("info",), ("materialize",), ("query", "mape_by_predictor"),
                 ("sql", "SELECT 1")]:
        line = one_line_error(invoke("--db", tiny, *args))
        assert "defines its own" in line and f"'other.{name}'" in line, (args, line)
        assert f'DROP MACRO{" TABLE" if "TABLE" in macro else ""} "other"."{name}"' in line
    assert hashlib.sha256(tiny.read_bytes()).hexdigest() == before


def test_other_schemas_of_the_file_leave_gpudbs_functions_registered(tiny, tmp_path):
    clean = shutil.copy(tiny, tmp_path / "clean.duckdb")
    plain_edit(tiny, "CREATE SCHEMA other", "CREATE MACRO other.mine(x) AS x + 1",
               "CREATE TABLE other.notes (n INTEGER)")
    for args in [("materialize",), ("sql", "SELECT predict_linear(31, 20, 2, 1) AS t"),
                 ("query", "mape_by_predictor")]:
        done, expected = invoke("--db", tiny, *args), invoke("--db", clean, *args)
        assert done.exit_code == 0 and done.output == expected.output, (args, done.output)
    line = next(s for s in invoke("--db", tiny, "info").output.splitlines()
                if s.startswith("not gpudb's:"))
    assert all(item in line for item in ("schema other", "macro other.mine", "table other.notes"))


def test_a_view_where_gpudb_keeps_a_table_is_refused_without_running_it(tiny, tmp_path):
    """Issue 31: ``run`` replaced by a view over range(1e12) kept `gpudb info` (and query,
    evaluate, plot, report, merge) running for minutes; the catalog says what it is, so the
    file is refused in one line before anything reads it."""

    plain_edit(tiny, "CREATE TABLE rd AS SELECT * FROM run",
               "CREATE TABLE i2 AS SELECT * FROM interval",
               "CREATE TABLE m2 AS SELECT * FROM metric",
               "DROP TABLE metric", "DROP TABLE interval", "DROP TABLE run",
               "ALTER TABLE i2 RENAME TO interval", "ALTER TABLE m2 RENAME TO metric",
               "CREATE VIEW run AS SELECT rd.* FROM rd, range(1000000000000)")
    expected = (f"Error: {tiny} holds a view 'run' where gpudb keeps its table run: not "
                "gpudb's data; refusing to use it")
    for args in [("info",), ("query", "mape_by_predictor"), ("report", "--out", tmp_path / "r"),
                 ("evaluate", "accuracy", "--gpu", "tiny"), ("export", tmp_path / "e")]:
        result = invoke("--db", tiny, *args)
        assert one_line_error(result) == expected, args
    merged = invoke("--db", tmp_path / "new.duckdb", "merge", tiny)
    assert one_line_error(merged) == expected
    assert not (tmp_path / "new.duckdb").exists() and not (tmp_path / "r").exists()
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize("signum, code, said", [
    (15, 143, "interrupted (SIGTERM): nothing written"),
    (2, 130, "interrupted (SIGINT): nothing written")])
def test_an_interrupted_ingest_into_a_new_file_leaves_no_file(tmp_path, tiny_files, signum,
                                                               code, said):
    """Issue 31: SIGTERM (or Ctrl-C) to `gpudb ingest` into a new file left an empty
    database and its WAL; an ingest writes all or nothing, so the new file goes too."""
    import signal
    import time

    csv_path, mapping = tiny_files
    rows = "".join(f"k{k},{c},800,{1 + k % 7},{100 + k % 13},0.5\n"
                   for k in range(100_000) for c in (500, 1000))  # ingest takes ~5 s
    csv_path.write_text(TINY_CSV.splitlines()[0] + "\n" + rows)
    target = tmp_path / "new.duckdb"
    # SIGINT back to its default in the child: under a shell's background job (CI's may be
    # one) it starts ignored, and Python would install no KeyboardInterrupt handler
    proc = subprocess.Popen([sys.executable, "-m", "gpudb.cli", "--db", str(target), "ingest",
                             str(csv_path), "--mapping", str(mapping)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 30
    while not _building(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)  # inside the ingest, past the file's creation and migration
    proc.send_signal(signal.Signals(signum))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, (out, err)
    assert err.strip().splitlines()[-1] == said and out == ""
    assert glob.glob(f"{target}*") == [] and _building(tmp_path) == []


def _building(folder) -> list[str]:
    """The database files in ``folder``, hidden temporary ones included."""
    return sorted(p.name for p in Path(folder).iterdir() if ".duckdb" in p.name)


@pytest.mark.parametrize("command", ["ingest", "merge"])
def test_kill_9_during_a_command_into_a_new_file_leaves_no_file(tmp_path, tiny_files, built,
                                                                 command):
    """Issue 31: kill -9 during an all-or-nothing command into a new database file left an
    empty database and its WAL at the path. The new file is built under a temporary name
    beside it and linked into place only on success, so nothing appears at the path; the
    next run removes what the killed one left and succeeds."""
    import signal
    import time

    csv_path, mapping = tiny_files
    rows = "".join(f"k{k},{c},800,{1 + k % 7},{100 + k % 13},0.5\n"
                   for k in range(100_000) for c in (500, 1000))  # ingest takes ~5 s
    csv_path.write_text(TINY_CSV.splitlines()[0] + "\n" + rows)
    target = tmp_path / "new.duckdb"
    args = ([str(csv_path), "--mapping", str(mapping)] if command == "ingest"
            else [str(built[0])])
    proc = subprocess.Popen([sys.executable, "-m", "gpudb.cli", "--db", str(target), command,
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not _building(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    left = _building(tmp_path)
    assert left and all(name.startswith(".new.duckdb.gpudb-new.") for name in left), left
    assert not target.exists() and not Path(f"{target}.wal").exists()
    again = subprocess.run([sys.executable, "-m", "gpudb.cli", "--db", str(target), command,
                            *args], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert _building(tmp_path) == ["new.duckdb"]  # the killed run's leftovers removed
    con = duckdb.connect(str(target), read_only=True)
    try:
        runs = con.execute("SELECT count(*) FROM run").fetchone()[0]
    finally:
        con.close()
    assert runs == (200_000 if command == "ingest" else 8)


def test_a_command_reading_the_file_stops_at_its_time_bound(tiny, monkeypatch):
    """Issue 31 item 2: a command that only reads a file ends within --timeout-s (env
    GPUDB_TIMEOUT_S), saying in one line what it was reading; the file's slow view itself is
    never evaluated by info."""

    plain_edit(tiny, "CREATE VIEW slow AS SELECT count(*) AS n FROM range(1000000000000)")
    listed = invoke("--db", tiny, "--timeout-s", "5", "info")
    assert listed.exit_code == 0 and "not gpudb's:   view slow" in listed.output
    stopped = invoke("--db", tiny, "--timeout-s", "1", "sql", "SELECT * FROM slow")
    assert one_line_error(stopped) == (
        "Error: stopped after 1 s, the time bound of a command reading a database "
        "(--timeout-s or GPUDB_TIMEOUT_S; 0: none), while running the SQL given")
    monkeypatch.setenv("GPUDB_TIMEOUT_S", "0.5")
    stopped = invoke("--db", tiny, "sql", "SELECT * FROM slow")
    assert "stopped after 0.5 s" in one_line_error(stopped)


def test_evaluate_stops_at_the_time_bound_too(tiny):
    """Issue 31: `evaluate` had no time bound: a file of 1.6 M runs kept `evaluate accuracy`
    running past 120 s. It now stops at --timeout-s like the other reading commands, saying
    what it was computing; gpudb's own simulation inside it (db.unbounded) does not count."""

    # 1.6 M runs: far past the bound on any machine (20,000 kernels finished within 0.5 s
    # on a quiet one)
    n_kernels = 200_000
    plain_edit(tiny, f"INSERT INTO kernel SELECT 'tiny/k' || i, 'k' || i, 'tiny', NULL, NULL, "
                     f"NULL FROM range({n_kernels}) t(i)",
               "INSERT INTO run SELECT r.* REPLACE (r.run_id || '-' || i AS run_id, 'tiny/k' || "
               "i AS kernel_id, time_ns * (1 + i % 7) AS time_ns) "
               f"FROM run r, range({n_kernels}) t(i)")
    stopped = invoke("--db", tiny, "--timeout-s", "0.5", "evaluate", "accuracy", "--gpu", "tiny")
    # which of evaluate's steps the bound meets depends on the machine's load
    assert one_line_error(stopped) in {
        "Error: stopped after 0.5 s, the time bound of a command reading a database "
        f"(--timeout-s or GPUDB_TIMEOUT_S; 0: none), while {doing}"
        for doing in ("computing evaluate accuracy", "running stored query mape_by_predictor",
                      "running stored query mape_by_kernel")}


def test_the_time_bound_pauses_for_gpudbs_own_simulation():
    """db.unbounded: the time left is kept while gpudb simulates inside a bounded command."""
    import time

    from gpudb.store import db

    with db.time_bound(0.3):
        with db.unbounded():
            time.sleep(0.5)
        assert db.ran_over() is None
        time.sleep(0.5)
        assert db.ran_over() is not None


def test_duckdbs_memory_limit_comes_from_the_environment(tiny, monkeypatch):
    monkeypatch.setenv("GPUDB_MEMORY_LIMIT", "2GB")
    shown = invoke("--db", tiny, "sql", "SELECT current_setting('memory_limit') AS m")
    assert shown.exit_code == 0 and "1.8 GiB" in shown.output, shown.output
    monkeypatch.setenv("GPUDB_MEMORY_LIMIT", "lots")
    assert one_line_error(invoke("--db", tiny, "info")) == (
        "Error: GPUDB_MEMORY_LIMIT='lots' is not an amount of memory such as 4GB or 512MB")


def test_a_new_file_built_aside_never_replaces_one_created_meanwhile(tmp_path):
    """trust.built_aside links the new database into place only if the path is still free;
    a stale temporary of a finished process is removed, one of a running process kept."""
    from gpudb.store import trust

    target = tmp_path / "new.duckdb"
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    prefix = trust._aside_prefix(str(target))
    stale, running = Path(prefix + done.stdout.strip()), Path(prefix + "1")  # pid 1 runs
    stale.write_bytes(b"left by a killed run")
    running.write_bytes(b"another run's")
    with pytest.raises(gpudb.GpudbError, match=r"new\.duckdb was created by another process "
                                               r"meanwhile; this command's database was not put"):
        with trust.built_aside(target):
            gpudb.connect(target).close()  # builds the temporary file
            assert not target.exists()
            target.write_bytes(b"theirs")
    assert target.read_bytes() == b"theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["new.duckdb", running.name])


def test_the_default_bound_never_cuts_gpudbs_own_evaluation(tiny, monkeypatch):
    """Issue 41 item 5: the default bound stopped the demo's paper-scale `evaluate control`
    after 25 minutes of the user's own work. A reading command still stops at the default;
    evaluate, materialize and train only at a bound the user gives (option or environment)."""
    from gpudb.cli.main import cli as root

    timeout = next(p for p in root.params if p.name == "timeout_s")
    monkeypatch.setattr(timeout, "default", 0.001)
    monkeypatch.delenv("GPUDB_TIMEOUT_S", raising=False)
    assert one_line_error(invoke("--db", tiny, "info")).startswith(
        "Error: stopped after 0.001 s, the time bound of a command reading a database")
    evaluated = invoke("--db", tiny, "evaluate", "accuracy", "--gpu", "tiny", "--format", "csv")
    assert evaluated.exit_code == 0, evaluated.output
    given = invoke("--db", tiny, "--timeout-s", "0.001", "evaluate", "accuracy", "--gpu", "tiny")
    assert one_line_error(given).startswith("Error: stopped after 0.001 s")
    monkeypatch.setenv("GPUDB_TIMEOUT_S", "0.001")
    from_env = invoke("--db", tiny, "evaluate", "accuracy", "--gpu", "tiny")
    assert one_line_error(from_env).startswith("Error: stopped after 0.001 s")


@pytest.mark.parametrize("value", ["inf", "nan", "1e400"])
def test_the_time_bound_is_a_finite_number(tiny, value):
    """Before: GPUDB_TIMEOUT_S=inf printed an OverflowError traceback and ran unbounded."""
    result = invoke("--db", tiny, "--timeout-s", value, "info")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"Error: invalid value for '--timeout-s': "
        f"{value!r} is not a finite number (see cli --help)"]  # CliRunner names it cli
