"""Materialised predictions: the `prediction` view written to a plain table.

The view calls gpudb's Python UDFs, so a teammate with a plain DuckDB client cannot query it
(docs/DESIGN.md section 7); `gpudb materialize` writes it to ``prediction_materialized``, which any
client can read. A fingerprint of the runs, intervals and view definitions at that moment is
kept in ``gpudb_meta`` so ``gpudb info`` can say whether the table is stale.
"""

from __future__ import annotations

import json

import duckdb

from gpudb.store.base import atomic, first_row

TABLE = "prediction_materialized"
_META_KEY = "prediction_materialized"


def fingerprint(con: duckdb.DuckDBPyConnection) -> dict:
    """What the prediction view depends on: runs, intervals, P-states and view definitions."""
    runs, run_hash = first_row(con.execute(
        "SELECT count(*), coalesce(bit_xor(hash(run_id, time_ns)), 0) FROM run"))
    intervals = first_row(con.execute("SELECT count(*) FROM interval"))[0]
    pstates = first_row(con.execute("SELECT count(*) FROM pstate"))[0]
    views = first_row(con.execute("SELECT value FROM gpudb_meta WHERE key = 'views_sha256'"))
    return {"runs": runs, "run_hash": str(run_hash), "intervals": intervals,
            "pstates": pstates, "views_sha256": views[0] if views else None}


def materialize(con: duckdb.DuckDBPyConnection) -> int:
    """Replace the materialised table with the current view; returns its row count."""
    with atomic(con):
        con.execute(f"CREATE OR REPLACE TABLE {TABLE} AS SELECT * FROM prediction")
        rows = first_row(con.execute(f"SELECT count(*) FROM {TABLE}"))[0]
        con.execute("INSERT OR REPLACE INTO gpudb_meta VALUES (?, ?)",
                    [_META_KEY, json.dumps(fingerprint(con))])
    return rows


def status(con: duckdb.DuckDBPyConnection) -> str:
    """'absent', 'current' or 'stale (...)' for `gpudb info`."""
    stored = first_row(con.execute("SELECT value FROM gpudb_meta WHERE key = ?", [_META_KEY]))
    if not stored:
        return "absent (run `gpudb materialize`)"
    then, now = json.loads(stored[0]), fingerprint(con)
    changed = [k for k in now if then.get(k) != now[k]]
    if not changed:
        return "current"
    return f"stale: {', '.join(changed)} changed since (run `gpudb materialize`)"
