"""Files a teammate could hand over, for the trust tests (tests/store/test_trust.py through
the CLI, tests/api/test_api_trust.py through gpudb.open): a real gpudb file edited with a plain
DuckDB client to hold views and a macro reading a file of this user's, gpudb's ``prediction``
view faked under a matching digest, a table of its own with a default; macros named like
gpudb's or DuckDB's functions; files that are not gpudb databases."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import TINY_CSV, TINY_MAPPING

import gpudb
from gpudb.store import udfs

SECRET = "s3cr3t-ssh-key-material"


def plain_edit(path, *statements):
    con = duckdb.connect(str(path))  # a plain DuckDB client: what a teammate's file may hold
    try:
        for sql in statements:
            con.execute(sql)
    finally:
        con.close()


def build_files(tmp: Path) -> tuple[Path, Path, Path]:
    """(clean, hostile, secret text file): the tiny dataset, once, and a copy of it holding
    what a hostile teammate could put in a file, beside a file of this user's that no
    database may read."""
    from gpudb.sources.tabular.ingest import ingest
    from gpudb.sources.tabular.mapping import load_mapping

    text = tmp / "secret.txt"
    text.write_text(SECRET + "\n")
    table = tmp / "secret.csv"
    table.write_text(f"key\n{SECRET}\n")
    (tmp / "tiny.csv").write_text(TINY_CSV)
    (tmp / "tiny.toml").write_text(TINY_MAPPING)
    clean = tmp / "clean.duckdb"
    con = gpudb.connect(clean)
    ingest(con, [tmp / "tiny.csv"], load_mapping(tmp / "tiny.toml"))
    con.close()
    path = tmp / "hostile.duckdb"
    shutil.copy(clean, path)
    con = duckdb.connect(str(path))
    udfs.register(con)  # a plain client with the same function names, to create views
    try:
        digest = con.execute("SELECT value FROM gpudb_meta WHERE key = 'views_sha256'").fetchall()
        con.execute(f"CREATE VIEW leak AS SELECT content FROM read_text('{text}')")
        con.execute(f"CREATE VIEW leak_csv AS SELECT * FROM read_csv('{table}')")
        con.execute(f"CREATE MACRO leak_table() AS TABLE SELECT content FROM read_text('{text}')")
        # gpudb's prediction view with perfect predictions, under gpudb's name
        real = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'prediction'"
                           ).fetchall()[0][0]
        con.execute(real.replace("CREATE VIEW prediction AS",
                                 "CREATE VIEW prediction_real AS", 1))
        con.execute("CREATE OR REPLACE VIEW prediction AS "
                    "SELECT * REPLACE (actual_ns AS predicted_ns) FROM prediction_real")
        # a file-reading default where DuckDB takes one (2.0 refuses subqueries in defaults)
        try:
            con.execute("CREATE TABLE note (n INTEGER, body TEXT DEFAULT "
                        f"((SELECT content FROM read_text('{text}'))))")
        except duckdb.BinderException:
            con.execute("CREATE MACRO stamp() AS 'stamped by the file'")
            con.execute("CREATE TABLE note (n INTEGER, body TEXT DEFAULT (stamp()))")
        # the digest still says these are gpudb's views
        assert con.execute("SELECT value FROM gpudb_meta WHERE key = 'views_sha256'"
                           ).fetchall() == digest
    finally:
        con.close()
    return clean, path, text


def shadowing(tiny, tmp_path, name, macro):
    path = tmp_path / f"shadow-{abs(hash(name))}.duckdb"
    shutil.copy(tiny, path)
    plain_edit(path, macro)
    return path


SHADOWS = [
    ("predict_linear", "CREATE MACRO predict_linear(t, c, b, x) AS t"),
    ("predict_crisp", "CREATE MACRO predict_crisp(a, b, c, d, e, f) AS 1.0"),
    ("abs", "CREATE MACRO abs(x) AS 0"),
    ("+", 'CREATE MACRO "+"(a, b) AS 0'),
    ("duckdb_functions", "CREATE MACRO duckdb_functions() AS TABLE SELECT 1 AS function_name"),
]


def not_database_files(tmp_path: Path) -> dict[str, tuple]:
    """{label: (path, what the refusal must say it is)}."""
    csv = tmp_path / "runs.csv"
    csv.write_text(TINY_CSV)
    parquet = tmp_path / "runs.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), parquet)
    text = tmp_path / "notes.duckdb"
    text.write_text("just some notes\n")
    lite = tmp_path / "other.sqlite"
    with sqlite3.connect(lite) as con:
        con.execute("CREATE TABLE t (a)")
    con.close()
    empty = tmp_path / "empty.duckdb"
    empty.touch()
    other = tmp_path / "other.duckdb"
    plain_edit(other, "CREATE TABLE sales (amount DOUBLE)")
    return {"csv": (csv, "a CSV file"), "parquet": (parquet, "a Parquet file"),
            "text": (text, "a text file"), "sqlite": (lite, "a SQLite database"),
            "empty": (empty, "an empty file"), "directory": (tmp_path, "a directory"),
            "empty path": ("", "empty"), "other duckdb": (other, "not a gpudb database")}


# The fixtures both trust test files use (imported there by name, as pytest allows)
@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(clean, hostile, secret text file): build_files, once a module."""
    return build_files(tmp_path_factory.mktemp("trust"))


@pytest.fixture
def tiny(built, tmp_path):
    """A copy of the clean tiny database."""
    return Path(shutil.copy(built[0], tmp_path / "tiny.duckdb"))


@pytest.fixture
def hostile(built, tmp_path):
    """A copy of the hostile database."""
    return Path(shutil.copy(built[1], tmp_path / "hostile.duckdb"))
