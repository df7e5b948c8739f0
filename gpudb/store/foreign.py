"""What a database file carries beyond what gpudb ships (``gpudb info``): its catalog against
a fresh in-memory gpudb database's. Apart from :mod:`gpudb.store.trust` because it opens that
fresh database through :func:`gpudb.store.db.connect`, which runs trust's checks.
"""

from __future__ import annotations

from functools import cache

import duckdb

from gpudb.store.base import MEMORY
from gpudb.store.db import connect
from gpudb.store.trust import file_catalog, table_columns


def _catalog(con: duckdb.DuckDBPyConnection, database: str) -> dict[str, set]:
    """The objects of one database by kind (names qualified by schema outside main) and
    its tables' columns' defaults {(table, column): default}."""
    def rows(sql: str) -> list[tuple]:
        return con.execute(sql, [database]).fetchall()

    def named(schema: str, name: str) -> str:
        return name if schema == "main" else f"{schema}.{name}"

    found: dict[str, set] = {
        "schema": {r[0] for r in rows("SELECT schema_name FROM system.main.duckdb_schemas() "
                                      "WHERE database_name = ? AND NOT internal")
                   if r[0] != "main"},
        "table": {named(*r) for r in rows("SELECT schema_name, table_name FROM "
                                          "system.main.duckdb_tables() WHERE database_name = ?")},
        "view": {named(*r) for r in rows("SELECT schema_name, view_name FROM "
                                         "system.main.duckdb_views() WHERE database_name = ? "
                                         "AND NOT internal")},
        "sequence": {named(*r) for r in rows("SELECT schema_name, sequence_name FROM "
                                             "system.main.duckdb_sequences() "
                                             "WHERE database_name = ?")},
        "type": {named(*r) for r in rows("SELECT schema_name, type_name FROM "
                                         "system.main.duckdb_types() WHERE database_name = ? "
                                         "AND NOT internal")},
        "index": {named(*r) for r in rows("SELECT schema_name, index_name FROM "
                                          "system.main.duckdb_indexes() WHERE database_name = ?")},
    }
    for schema, name, kind in rows("SELECT DISTINCT schema_name, function_name, function_type "
                                   "FROM system.main.duckdb_functions() "
                                   "WHERE database_name = ?"):
        found.setdefault("table macro" if kind == "table_macro" else "macro" if kind == "macro"
                         else f"{kind} function", set()).add(named(schema, name))
    found["column"] = {(named(schema, table), column, default) for schema, table, column, default
                       in table_columns(con, database, "column_name, column_default")}
    return found


@cache
def _shipped() -> dict[str, set]:
    """What gpudb itself puts in a database: a fresh in-memory one's catalog."""
    con = connect(MEMORY)
    try:
        return _catalog(con, file_catalog(con))
    finally:
        con.close()


def foreign_objects(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """The database's own objects that gpudb does not ship, as (kind, name) in name order:
    views, macros, tables, schemas, sequences, types and indexes, and extra columns of gpudb's
    tables (without a default: any other change to gpudb's tables is refused on open).
    `gpudb info` lists them, so a user
    sees what a teammate's file carries beyond gpudb's data (none of it can touch files: every
    connection is locked down, and names that would replace gpudb's are refused on open)."""
    from gpudb.store.materialize import TABLE as MATERIALIZED

    shipped = _shipped()
    here = _catalog(con, file_catalog(con))
    found = []
    for kind, names in here.items():
        if kind == "column":
            continue
        extra = names - shipped.get(kind, set()) - ({MATERIALIZED} if kind == "table" else set())
        found += [(kind, name) for name in extra]
    # a default differing from gpudb's is refused on open (trust.refuse_altered_tables)
    gpudb_tables = shipped["table"]
    columns = {(t, c) for t, c, _ in shipped["column"]}
    found += [("column", f"{table}.{column}") for table, column, _ in here["column"]
              if table in gpudb_tables and (table, column) not in columns]
    return sorted(found, key=lambda item: (item[1], item[0]))
