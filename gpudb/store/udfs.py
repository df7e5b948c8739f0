"""The SQL functions gpudb registers on every connection it opens, through one hook.

Any layer contributes SQL functions by handing the store a provider, a function returning its
:class:`gpudb.predictors.Udf` declarations, with :func:`provide` (the idea of sqlite-utils'
and datasette's ``prepare_connection`` hook); :func:`register` walks the providers on every
connection :func:`gpudb.connect` opens. The store imports no higher layer
(tests/test_layers.py), so the layers add themselves: gpudb.control.guard (``guard_replay``)
when it is imported, and the package root, imported before any gpudb module, adds the
predictors' (which open no connection and import no store) and imports the control layer's
module, so every process has them all before its first connection.

DuckDB keeps a Python UDF in the database instance, shared by every connection to the same
file in one process, and refuses to register a name twice; so :func:`register` adds only the
names ``duckdb_functions()`` does not list yet. It asks the catalog only once DuckDB refuses a
name: a scan of ``duckdb_functions()`` (every built-in function) costs tens of milliseconds,
about a fifth of opening a file, and a new instance (most commands, most connections) has
none. Only module-level functions are registered: a function object that is garbage-collected
while DuckDB still holds it crashes the process (docs/DESIGN.md section 7).

All UDFs are Arrow UDFs computing with numpy: ~10x faster than scalar Python UDFs. DuckDB's
default NULL handling drops rows with a NULL argument before the call and returns NULL for
them, which is the NULL-in, NULL-out contract of every predictor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:
    from gpudb.predictors import Udf

_PROVIDERS: list[Callable[[], Iterable[Udf]]] = []


def provide(provider: Callable[[], Iterable[Udf]]) -> None:
    """Add a layer's SQL functions: ``provider()`` returns its Udf declarations, each a
    module-level function (called at each connect, so it may collect them lazily)."""
    if provider not in _PROVIDERS:
        _PROVIDERS.append(provider)


def functions() -> tuple[Udf, ...]:
    """Every SQL function the layers contribute, in the order they were provided; a name
    declared twice is an error (DuckDB would keep only the first)."""
    found = tuple(udf for provider in _PROVIDERS for udf in provider())
    names = [udf.name.lower() for udf in found]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise RuntimeError(f"two layers declare the SQL function {twice[0]}")
    return found


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Register every UDF this database instance does not have yet (callers hold
    gpudb.store.db.OPEN_LOCK, so no other thread registers meanwhile)."""
    every = functions()
    for k, udf in enumerate(every):
        try:
            _create(con, udf)
        except duckdb.CatalogException:
            # another connection of this process registered them: add only the missing ones
            _register_missing(con, every[k:])
            return


def _create(con: duckdb.DuckDBPyConnection, udf: Udf) -> None:
    con.create_function(udf.name, udf.function, list(udf.params), udf.returns, type="arrow",
                        side_effects=False, null_handling=udf.null_handling)


def _register_missing(con: duckdb.DuckDBPyConnection, every: tuple[Udf, ...]) -> None:
    names = [udf.name for udf in every]
    present = {row[0] for row in con.execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_name IN "
        "(SELECT unnest(?::TEXT[]))", [names]).fetchall()}
    for udf in every:
        if udf.name not in present:
            _create(con, udf)
