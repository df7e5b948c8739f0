"""The SQL functions gpudb registers on every connection it opens: those the predictor
modules declare (gpudb.predictors.udfs()).

DuckDB keeps a Python UDF in the database instance, shared by every connection to the same
file in one process, and refuses to register a name twice; so :func:`register` adds only the
names ``duckdb_functions()`` does not list yet. Only module-level functions are registered: a
function object that is garbage-collected while DuckDB still holds it crashes the process
(docs/DESIGN.md section 7).

All UDFs are Arrow UDFs computing with numpy: ~10x faster than scalar Python UDFs. DuckDB's
default NULL handling drops rows with a NULL argument before the call and returns NULL for
them, which is the NULL-in, NULL-out contract of every predictor.
"""

from __future__ import annotations

import duckdb

from gpudb.predictors import udfs


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Register every UDF this database instance does not have yet."""
    names = [udf.name for udf in udfs()]
    present = {row[0] for row in con.execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_name IN "
        "(SELECT unnest(?::TEXT[]))", [names]).fetchall()}
    for udf in udfs():
        if udf.name not in present:
            con.create_function(udf.name, udf.function, list(udf.params), udf.returns,
                                type="arrow", side_effects=False,
                                null_handling=udf.null_handling)
