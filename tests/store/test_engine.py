"""SQLAlchemy: an Engine with the UDFs, and explicit table declarations matching the schema."""

from __future__ import annotations

import shutil

import pytest
from conftest import REPO
from sqlalchemy import func, select, text

import gpudb
from gpudb.store import tables
from gpudb.store.db import GpudbError


def test_core_select_through_engine(tiny_db):
    eng = gpudb.engine(tiny_db, read_only=True)
    try:
        with eng.connect() as con:
            rows = con.execute(
                select(tables.run.c.kernel_id, func.min(tables.run.c.time_ns))
                .where(tables.run.c.core_mhz == 1000)
                .group_by(tables.run.c.kernel_id)
                .order_by(tables.run.c.kernel_id)).all()
            assert rows == [("tiny/alpha", 1.5e6), ("tiny/beta", 5.0e6)]
            assert con.execute(text("SELECT predict_linear(31, 20, 2, 1)")).scalar() == 42.0
    finally:
        eng.dispose()


def test_declared_tables_match_the_migrated_schema(fresh_db):
    con = gpudb.connect(fresh_db, read_only=True)
    for table in tables.metadata.sorted_tables:
        columns = [r[0] for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = ? "
            "ORDER BY column_index", [table.name]).fetchall()]
        assert sorted(c.name for c in table.columns) == sorted(columns), table.name
    con.close()


def test_connect_and_engine_on_one_file_in_one_process(tiny_db):
    """A notebook opens both: DuckDB keeps one instance per file and process and refuses a
    second configuration, so the engine opens exactly gpudb.connect's (issue 30 item 1)."""
    for read_only in (True, False):
        for connect_first in (True, False):
            con = gpudb.connect(tiny_db, read_only=read_only) if connect_first else None
            eng = gpudb.engine(tiny_db, read_only=read_only)
            with eng.connect() as sa:
                con = con or gpudb.connect(tiny_db, read_only=read_only)
                assert sa.execute(text("SELECT count(*) FROM run")).scalar() == \
                    con.execute("SELECT count(*) FROM run").fetchone()[0] == 8
            con.close()
            eng.dispose()


def test_read_only_beside_writable_is_one_line(tiny_db):
    con = gpudb.connect(tiny_db, read_only=True)
    try:
        with pytest.raises(GpudbError) as info:
            gpudb.engine(tiny_db)
        message = str(info.value)
        assert "\n" not in message
        assert "already open in this process with the other read_only setting" in message
    finally:
        con.close()
    eng = gpudb.engine(tiny_db)      # closed, the other setting opens
    eng.dispose()


def test_readme_python_snippet_runs_as_printed(tiny_db, tmp_path, monkeypatch, capsys):
    readme = (REPO / "README.md").read_text()
    snippet = readme.split("```python\n", 1)[1].split("```", 1)[0]
    assert 'gpudb.connect("lab.duckdb", read_only=True)' in snippet
    assert 'gpudb.engine("lab.duckdb", read_only=True)' in snippet
    shutil.copy(tiny_db, tmp_path / "lab.duckdb")
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(snippet, "README.md", "exec"), scope)
    printed = capsys.readouterr().out
    assert "tiny/alpha" in printed and "tiny/beta" in printed
    scope["con"].close()


def test_connect_and_engine_together_under_a_memory_limit(tiny_db, monkeypatch):
    """GPUDB_MEMORY_LIMIT is part of every gpudb connection's configuration, the engine's
    too: otherwise DuckDB refuses the second configuration for the file already open."""
    monkeypatch.setenv("GPUDB_MEMORY_LIMIT", "2GB")
    con = gpudb.connect(tiny_db, read_only=True)
    eng = gpudb.engine(tiny_db, read_only=True)
    try:
        with eng.connect() as sa:
            assert sa.execute(text("SELECT current_setting('memory_limit')")).scalar() == \
                con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == "1.8 GiB"
    finally:
        con.close()
        eng.dispose()
