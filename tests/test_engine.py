"""SQLAlchemy: an Engine with the UDFs, and explicit table declarations matching the schema."""

from __future__ import annotations

from sqlalchemy import func, select, text

import gpudb
from gpudb import tables


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
