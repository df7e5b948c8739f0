"""gpudb: a SQL-backed experiment database and query toolkit for GPU DVFS research.

:func:`open` gives a :class:`Database`, the Python API (docs/python.md): stored queries and
SQL into DataFrames, ingest, sweeps, evaluations and figures, each as the CLI does them.
Underneath, every code path opens a database through :func:`connect` (DuckDB) or
:func:`engine` (SQLAlchemy); both migrate the file when writable and register the Python UDFs.

The package root, imported before any gpudb module, wires the layers that contribute SQL
functions to the store's one hook (gpudb.store.udfs.provide): the predictors' formulas (the
lowest layer, which imports no store) and the control layer's ``guard_replay``
(gpudb.control.guard adds itself when imported).
"""

from gpudb import predictors as _predictors  # noqa: E402
from gpudb.store import udfs as _sql_functions  # noqa: E402
from gpudb.store.db import GpudbError, connect  # noqa: E402
from gpudb.version import __version__  # noqa: E402

_sql_functions.provide(_predictors.udfs)
from gpudb.control import guard as _control_functions  # noqa: E402, F401  (guard_replay)

from gpudb.api import Database, open  # noqa: E402, A004  (after the wiring above)

__all__ = ["Database", "GpudbError", "__version__", "connect", "engine", "open", "tables"]


def __getattr__(name: str):
    """``gpudb.tables`` (README: `from gpudb import tables`) and ``gpudb.engine``, imported on
    first use: they load SQLAlchemy, a third of a `gpudb` command's start (0.46 of 1.4 s),
    which no command needs."""
    if name == "tables":
        from gpudb.store import tables

        return tables
    if name == "engine":
        from gpudb.store.engine import engine

        return engine
    raise AttributeError(f"module 'gpudb' has no attribute {name!r}")
