"""SQLAlchemy access: an Engine (duckdb-engine) whose connections have gpudb's UDFs and views,
opened locked down like every gpudb connection.

Table reflection does not work with this driver (docs/DESIGN.md section 7), so the core tables are
declared in :mod:`gpudb.store.tables`; use them with SQLAlchemy Core, e.g.
``select(tables.run.c.kernel_id).where(tables.run.c.core_mhz == 700)``.
"""

from __future__ import annotations

import os

import duckdb
import sqlalchemy
from duckdb_engine import ConnectionWrapper
from sqlalchemy import event

from gpudb.store import trust, udfs
from gpudb.store.db import (
    OPEN_LOCK,
    open_error,
    connect,
    connection_config,
    default_path,
    opened_path,
    own_views,
)


def _register_udfs(dbapi_connection, _record) -> None:
    with OPEN_LOCK:  # a pool's connections may open on several threads at once
        udfs.register(dbapi_connection)
        own_views(dbapi_connection)


def engine(path: str | os.PathLike | None = None, read_only: bool = False) -> sqlalchemy.Engine:
    """An SQLAlchemy Engine on a gpudb database (migrated first when writable)."""
    target = str(path) if path is not None else default_path()
    connect(target, read_only=read_only).close()  # migrate, or refuse a mismatched file

    def open_connection() -> ConnectionWrapper:
        # Exactly gpudb.connect's configuration (db.connection_config: locked down), not
        # duckdb-engine's own connect, which adds a user-agent setting: DuckDB keeps one
        # database instance per file and process and refuses a second configuration, so
        # gpudb.connect and this engine could not be open on one file together.
        trust.refuse_side_files(target, opened_path(target))  # a link planted since
        try:
            return ConnectionWrapper(duckdb.connect(opened_path(target), read_only=read_only,
                                                    config=connection_config()))
        except duckdb.Error as exc:
            raise open_error(target, exc) from None

    eng = sqlalchemy.create_engine(f"duckdb:///{target}", creator=open_connection)
    event.listen(eng, "connect", _register_udfs)
    return eng
