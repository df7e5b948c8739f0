"""gpudb: a SQL-backed experiment database and query toolkit for GPU DVFS research.

:func:`open` gives a :class:`Database`, the Python API (docs/python.md): stored queries and
SQL into DataFrames, ingest, sweeps, evaluations and figures, each as the CLI does them.
Underneath, every code path opens a database through :func:`connect` (DuckDB) or
:func:`engine` (SQLAlchemy); both migrate the file when writable and register the Python UDFs.
"""

__version__ = "0.3.0"

from gpudb.api import Database, open  # noqa: E402, A004
from gpudb.store import tables  # noqa: E402  (README: `from gpudb import tables`)
from gpudb.store.db import GpudbError, connect  # noqa: E402
from gpudb.store.engine import engine  # noqa: E402

__all__ = ["Database", "GpudbError", "__version__", "connect", "engine", "open", "tables"]
