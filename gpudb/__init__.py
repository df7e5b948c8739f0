"""gpudb: a SQL-backed experiment database and query toolkit for GPU DVFS research.

Every code path opens a database through :func:`connect` (DuckDB) or :func:`engine`
(SQLAlchemy); both migrate the file when writable and register the Python UDFs.
"""

__version__ = "0.3.0"

from gpudb.db import GpudbError, connect  # noqa: E402
from gpudb.engine import engine  # noqa: E402

__all__ = ["GpudbError", "__version__", "connect", "engine"]
