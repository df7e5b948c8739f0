"""The store's foundations, below every other store module: the one-line error, the first row
of a result, transactions, where the database is by default and the migrations gpudb ships.
:mod:`gpudb.store.db` (connect) and :mod:`gpudb.store.trust` (the checks connect runs) both
build on these, so neither needs the other to define them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import duckdb

from gpudb.store.resources import resource_dir

DEFAULT_DB = "gpudb.duckdb"
MEMORY = ":memory:"
# DuckDB 2 stores triggers and can create a view unbound; gpudb still runs on 1.4 and later
DUCKDB_2 = int(duckdb.__version__.split(".")[0]) >= 2

_MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

# DuckDB's error kind at the start of its messages ("Binder Error: ", "Invalid Input Error: ")
_ERROR_KIND = re.compile(r"^(?:[A-Z][A-Za-z]* )+Error: ")
# the lines after the first that say what to do instead
_HINTS = ("Did you mean", "Candidate bindings")


BOOTSTRAP = """
CREATE TABLE IF NOT EXISTS gpudb_migration (
    version        INTEGER PRIMARY KEY,
    name           TEXT NOT NULL,
    applied_at     TIMESTAMPTZ NOT NULL,
    gpudb_version  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS gpudb_meta (
    key    TEXT PRIMARY KEY,
    value  TEXT
);
"""


# New database files being built under a temporary name: {absolute target: temporary path}
# (gpudb.store.trust.built_aside). gpudb.store.db.connect opens the temporary file wherever
# the target is named.
_ASIDE: dict[str, str] = {}


def opened_path(target: str) -> str:
    """The file gpudb.store.db.connect opens for ``target``: the temporary one while a new database
    is built aside (gpudb.store.trust.built_aside), else ``target`` itself."""
    if target == MEMORY:
        return target
    return _ASIDE.get(os.path.abspath(target), target)


def first_row(result: duckdb.DuckDBPyConnection) -> tuple | None:
    """The first row of an executed statement, reading the result to its end: DuckDB 2.0
    refuses other work on a connection while a result is partly fetched."""
    rows = result.fetchall()
    return rows[0] if rows else None


@contextmanager
def atomic(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """Run the block in one transaction: COMMIT when it ends, ROLLBACK and re-raise when it
    raises (Ctrl-C included), so it writes all or nothing. DuckDB has no nested transactions:
    code called inside the block must not open one."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException as exc:
        stopped = isinstance(exc, KeyboardInterrupt) or interrupted(exc)
        try:
            con.execute("ROLLBACK")
        except duckdb.ConnectionException:
            # closed first (a stop unwinding the command closes it before an abandoned
            # block is finalized): its transaction ended uncommitted with it
            pass
        except duckdb.Error:
            # Ctrl-C or SIGTERM inside a fetch leaves a result DuckDB will not roll back
            # over; the transaction ends uncommitted when the connection closes
            if not stopped:
                raise
        if stopped and not isinstance(exc, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        raise
    # Outside the try: a COMMIT that fails has already ended the transaction.
    try:
        con.execute("COMMIT")
    except RuntimeError as exc:
        if interrupted(exc):
            raise KeyboardInterrupt from None
        raise


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is Ctrl-C arriving while DuckDB ran a statement: DuckDB's Python
    client then raises RuntimeError('Query interrupted'), not KeyboardInterrupt, which
    callers turn back into the KeyboardInterrupt it was (a sweep keeps its finished runs and
    exits 130 instead of a traceback)."""
    return type(exc) is RuntimeError and str(exc) == "Query interrupted"


class GpudbError(Exception):
    """An error with a one-line message meant for the user (the CLI prints it as is)."""


def refuse_read_only(read_only: bool, what: str) -> None:
    """The one read-only guard: a command (or workflow) about to write says so and stops."""
    if read_only:
        raise GpudbError(f"{what} writes the database; drop --read-only")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def default_path() -> str:
    """The database a command uses when none is given: $GPUDB_DB or ./gpudb.duckdb."""
    return os.environ.get("GPUDB_DB") or DEFAULT_DB


def migrations() -> list[Migration]:
    """The migrations this gpudb ships, in version order."""
    found = []
    for path in sorted(resource_dir("schema").glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise GpudbError(f"badly named migration {path.name} (want NNNN_description.sql)")
        found.append(Migration(int(match.group(1)), match.group(2), path.read_text()))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise GpudbError("two migrations share a version number")
    return found


def schema_version() -> int:
    """The newest schema version this gpudb knows."""
    return max(m.version for m in migrations())


def error_line(exc: BaseException) -> str:
    """A DuckDB error as one line of gpudb's: the message without DuckDB's error kind, with
    its "Did you mean" hint, without the SQL excerpt that follows."""
    lines = [line.strip() for line in str(exc).splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return type(exc).__name__
    first = _ERROR_KIND.sub("", lines[0], count=1)
    rest = lines[1:]
    if first.endswith(":") and rest and not rest[0].startswith("LINE "):
        first = f"{first} {rest.pop(0)}"  # a message continued on the next line
    hints = [line for line in rest if line.startswith(_HINTS)]
    return " ".join([first, *hints])
