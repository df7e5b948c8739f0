"""SQLAlchemy access: an Engine (duckdb-engine) whose connections have gpudb's UDFs and views,
opened locked down like every gpudb connection.

Table reflection does not work with this driver (docs/DESIGN.md section 7), so the core tables are
declared in :mod:`gpudb.tables`; use them with SQLAlchemy Core, e.g.
``select(tables.run.c.kernel_id).where(tables.run.c.core_mhz == 700)``.
"""

from __future__ import annotations

import os

import sqlalchemy
from sqlalchemy import event

from gpudb import udfs
from gpudb.db import connect, default_path, own_views
from gpudb.trust import locked_down


def _register_udfs(dbapi_connection, _record) -> None:
    udfs.register(dbapi_connection)
    own_views(dbapi_connection)


def engine(path: str | os.PathLike | None = None, read_only: bool = False) -> sqlalchemy.Engine:
    """An SQLAlchemy Engine on a gpudb database (migrated first when writable)."""
    target = str(path) if path is not None else default_path()
    connect(target, read_only=read_only).close()  # migrate, or refuse a mismatched file
    # opened locked down like every connection (gpudb.trust.locked_down)
    eng = sqlalchemy.create_engine(f"duckdb:///{target}",
                                   connect_args={"read_only": read_only,
                                                 "config": dict(locked_down())})
    event.listen(eng, "connect", _register_udfs)
    return eng
