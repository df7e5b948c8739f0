"""What keeps a database file from elsewhere only data (README, "Files from elsewhere").

Every gpudb connection is opened with :func:`locked_down` (no file or network access, no
extension installed or loaded implicitly, the configuration locked) before anything stored in
the file can run. :func:`gpudb.store.db.connect` calls the checks here before it reads the file's
tables: a ``--db`` that is not a DuckDB database is refused saying what it is
(:func:`refuse_non_database`, :func:`refuse_in_memory`), as is another program's DuckDB file
(:func:`refuse_foreign_duckdb`), a file whose macros would replace gpudb's functions or
DuckDB's own (:func:`refuse_shadowing`) and one holding a trigger (:func:`refuse_triggers`).
:func:`no_new_file_on_error` lets a failed command leave no new file (what a file carries
beyond gpudb's schema, for ``gpudb info``, is :mod:`gpudb.store.foreign`'s). gpudb's views are
checked on every open in gpudb.store.db.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import duckdb

from gpudb.store import base
from gpudb.store.base import (
    BOOTSTRAP,
    DUCKDB_2,
    MEMORY,
    GpudbError,
    default_path,
    first_row,
    migrations,
)

# The settings gpudb's own code changes on a connection (progress bar off, ingest's insertion
# order, bench's threads): the only ones lock_configuration leaves settable.
_SETTABLE = ("enable_progress_bar", "preserve_insertion_order", "threads")


@cache
def locked_down() -> dict:
    """The ``config`` every gpudb connection is opened with, before the file's catalog is read.

    External access off: no stored view, macro, default or statement reads or writes a file
    (DuckDB itself still reads the database file and its WAL and spills to ``<file>.tmp``,
    which it removes on close) or reaches the network, and it cannot be switched back on.
    No extension is installed or loaded implicitly (opening a SQLite file would download one).
    The configuration is locked but for :data:`_SETTABLE` where this DuckDB has
    ``allowed_configs`` (2.0 has); with an older one it is left unlocked, as ingest and bench
    set options, and external access still cannot be switched back on.
    """
    config = {"enable_external_access": False, "autoinstall_known_extensions": False,
              "autoload_known_extensions": False}
    probe = duckdb.connect(config=dict(config))
    try:
        settings = {row[0] for row in probe.execute(
            "SELECT name FROM system.main.duckdb_settings()").fetchall()}
    finally:
        probe.close()
    if "allowed_configs" in settings:
        config.update(allowed_configs=list(_SETTABLE), lock_configuration=True)
    return config


# What a file starts with, for saying what a --db that is not a DuckDB database is.
_MAGIC = ((b"SQLite format 3\x00", "a SQLite database"), (b"PAR1", "a Parquet file"),
          (b"\x1f\x8b", "a gzip file"), (b"PK\x03\x04", "a zip file"),
          (b"ARROW1", "an Arrow file"), (b"\x89HDF", "an HDF5 file"))


def _what_file(path: Path, head: bytes) -> str:
    """What a file that is not a DuckDB database is, from its name and first bytes."""
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    if b"\0" in head:
        return "a binary file of another kind"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        # a multi-byte character cut at the end of the sample is still text
        try:
            text = head[:-3].decode("utf-8")
        except UnicodeDecodeError:
            return "a binary file of another kind"
    first = text.lstrip().split("\n", 1)[0]
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv") or "," in first or "\t" in first:
        return "a CSV file"
    if suffix in (".json", ".jsonl", ".ndjson") or first.startswith(("{", "[")):
        return "a JSON file"
    if suffix == ".toml":
        return "a TOML file"
    return "a text file"


def refuse_non_database(target: str) -> None:
    """Refuse, with what it is, a --db that DuckDB would not open as a database file: DuckDB
    opens ``""`` and an existing CSV or Parquet file as an in-memory database."""
    if target == MEMORY:
        return
    if not target.strip():
        raise GpudbError("the database path is empty: name a .duckdb file (--db or GPUDB_DB)")
    try:
        target.encode("utf-8")
    except UnicodeEncodeError:  # bytes the file system gave Python as surrogates
        raise GpudbError(f"the database path {target!a} is not valid UTF-8, which DuckDB "
                         "cannot open: rename the file") from None
    path = Path(target)
    try:
        info = path.stat()
    except FileNotFoundError:
        folder = os.path.dirname(os.path.abspath(target))
        if not os.path.isdir(folder):
            raise GpudbError(f"cannot create {target}: {folder} is not a folder") from None
        return  # a new database (a writable open creates it)
    except OSError as exc:
        raise GpudbError(f"cannot open {target}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise GpudbError(f"{target} is a directory, not a gpudb database (name a .duckdb file)")
    if not stat.S_ISREG(info.st_mode):
        raise GpudbError(f"{target} is not a regular file (a device, FIFO or socket), not a "
                         "gpudb database")
    if info.st_size == 0:
        raise GpudbError(f"{target} is not a DuckDB database: it is an empty file")
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise GpudbError(f"cannot open {target}: {exc.strerror or exc}") from None
    if head[8:12] != b"DUCK":
        raise GpudbError(f"{target} is not a DuckDB database: it is {_what_file(path, head)}")


def refuse_side_files(target: str, opened: str) -> None:
    """Refuse a database whose side files DuckDB would write through something else: a WAL
    (``NAME.wal``) or spill folder (``NAME.tmp``) that is a symbolic link, or not a regular
    file (a FIFO hung every command) or folder; and a --db that is a symbolic link to
    nothing, where DuckDB would create a database at the link's target. A teammate's folder
    or archive can carry such links: DuckDB wrote the WAL into the file a ``lab.duckdb.wal``
    link named, then removed the link (issue 41 item 1). ``opened``: the file DuckDB opens
    for ``target`` (the temporary one while built aside)."""
    if target == MEMORY:
        return
    if os.path.islink(target) and not os.path.exists(target):
        raise GpudbError(f"{target} is a symbolic link to nothing "
                         f"({os.readlink(target)!a}): gpudb creates a new database only at a "
                         "path of its own; remove the link or name the file it should open")
    for suffix, is_kind, kind in ((".wal", stat.S_ISREG, "a WAL file"),
                                  (".tmp", stat.S_ISDIR, "DuckDB's spill folder")):
        try:
            info = os.lstat(opened + suffix)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise GpudbError(f"cannot open {target}: {target}{suffix}: "
                             f"{exc.strerror or exc}") from None
        if stat.S_ISLNK(info.st_mode):
            raise GpudbError(f"{target}{suffix} is a symbolic link: gpudb never writes "
                             f"{kind} through one (DuckDB would overwrite what it points "
                             "to); remove the link")
        if not is_kind(info.st_mode):
            raise GpudbError(f"{target}{suffix} is {file_kind(info.st_mode)}, not {kind}: "
                             "remove it or move it aside")


def refuse_in_memory(con: duckdb.DuckDBPyConnection, target: str) -> None:
    """Never let a file name end up as an in-memory database (whatever DuckDB decides)."""
    if target == MEMORY:
        return
    row = first_row(con.execute(
        "SELECT path FROM system.main.duckdb_databases() "
        "WHERE database_name = system.main.current_database()"))
    if row is None or row[0] is None:
        raise GpudbError(f"{target} is not a DuckDB database file (DuckDB would open it as an "
                         "empty in-memory database)")


# Files this process created by opening them: {absolute path: (st_dev, st_ino)}.
_CREATED: dict[str, tuple[int, int]] = {}


def note_created(path: str) -> None:
    """Remember that this process created the database file at ``path``."""
    _CREATED[os.path.abspath(path)] = file_identity(path)


def file_identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def remove_created(path: str | os.PathLike) -> bool:
    """Delete a database file (and its WAL) that a :func:`connect` of this process created,
    so that a command that failed leaves no new file; True if it did. A file this process did
    not create (or that was replaced since) is never touched."""
    key = os.path.abspath(os.fspath(path))
    created = _CREATED.pop(key, None)
    if created is None or file_identity(key) != created:
        return False
    for name in (key, key + ".wal"):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass
    return True


@contextmanager
def no_new_file_on_error(path: str | os.PathLike | None,
                         on_interrupt: bool = False) -> Iterator[None]:
    """Around a command: when the block raises (an error, not an exit with status 0), the
    database file at ``path`` is removed if the block's :func:`connect` created it, so a
    failed command leaves no new file. None: $GPUDB_DB or ./gpudb.duckdb. A closed output
    pipe (``gpudb demo | head``) is no failure of the command: what it wrote is kept.
    ``on_interrupt``: so does Ctrl-C (or SIGTERM/SIGHUP, as gpudb.store.stop_signals raises them),
    for a command that writes all or nothing (a sweep's new file keeps its finished runs)."""
    target = str(path) if path is not None else default_path()
    existed = target == MEMORY or not target.strip() or os.path.lexists(target)
    try:
        yield
    except BrokenPipeError:
        raise
    except KeyboardInterrupt:
        if not existed and on_interrupt:
            remove_created(target)
        raise
    except Exception as exc:
        if not existed and getattr(exc, "exit_code", 1) != 0:
            remove_created(target)
        raise


# The temporary name of a new database being built aside: ".NAME.gpudb-new.HOST.PID" beside it.
_ASIDE_MARK = ".gpudb-new."
# the bytes of the target's name kept in the temporary's: 255 less the mark, a host name of at
# most 40, a process id and DuckDB's ".wal"
_ASIDE_NAME_BYTES = 180


def _aside_prefix(target: str) -> str:
    """``.NAME.gpudb-new.HOST.`` beside ``target``, to which a process adds its id."""
    import socket

    folder, name = os.path.split(os.path.abspath(target))
    host = "".join(c if c.isalnum() or c in "-_" else "_" for c in socket.gethostname())[:40]
    if len(os.fsencode(name)) > _ASIDE_NAME_BYTES:
        # the temporary's name must fit the file system's 255 bytes where the target's does
        # (a 245-character name was refused with a traceback): a long name is shortened,
        # kept apart from others by its digest
        import hashlib

        digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:16]
        short = name[:_ASIDE_NAME_BYTES - 17]
        while len(os.fsencode(short)) > _ASIDE_NAME_BYTES - 17:  # whole characters only
            short = short[:-1]
        name = short + "~" + digest
    return os.path.join(folder, f".{name}{_ASIDE_MARK}{host}.")


def remove_stale_aside(target: str) -> list[str]:
    """Remove what a killed run left of building ``target`` aside (its temporary database,
    WAL and DuckDB's spill folder): only names of this host whose process no longer runs, so
    a run still going (here or on another host sharing the folder) is never touched. Returns
    the paths removed. A stale temporary file is never opened as the target: each run builds
    under its own process id."""
    import glob
    import shutil

    prefix = _aside_prefix(target)
    removed = []
    for path in glob.glob(glob.escape(prefix) + "*"):
        pid_text = path[len(prefix):].split(".", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
            continue  # that process still runs: its file
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError):
            continue
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
            removed.append(path)
        except OSError:
            pass
    return removed


@contextmanager
def built_aside(path: str | os.PathLike | None) -> Iterator[None]:
    """Around a command that writes all or nothing: a database file that does not exist yet
    is built under a temporary name beside it (``.NAME.gpudb-new.HOST.PID``; every
    :func:`connect` of the block opens that) and put in place by a hard link, which is
    atomic and never replaces a file created meanwhile, only when the command succeeds. So
    nothing at all, not even an empty database, appears at the path when the command fails
    or is killed, kill -9 included (issue 31). What a killed run left is removed by the next
    run on the same path (:func:`remove_stale_aside`). An existing file is written in place
    (its transaction keeps it all or nothing)."""
    import gc

    target = str(path) if path is not None else default_path()
    if target == MEMORY or not target.strip() or os.path.lexists(target):
        yield
        return
    key = os.path.abspath(target)
    remove_stale_aside(target)
    aside = _aside_prefix(target) + str(os.getpid())
    base._ASIDE[key] = aside
    succeeded = False
    try:
        yield
        succeeded = True
    except BaseException as exc:
        # click ends a successful command with Exit(0) raised through its context; a closed
        # output pipe (`gpudb ingest ... | head -0`) comes after the work was committed
        succeeded = (isinstance(exc, SystemExit) and exc.code in (0, None)) or (
            type(exc).__name__ == "Exit" and getattr(exc, "exit_code", 1) == 0) or (
            isinstance(exc, BrokenPipeError))
        raise
    finally:
        del base._ASIDE[key]
        gc.collect()  # a connection the command left unreferenced closes (and checkpoints)
        try:
            if succeeded and os.path.exists(aside):
                _put_in_place(aside, target)
        finally:
            _CREATED.pop(aside, None)
            _remove_aside(aside)


def _put_in_place(aside: str, target: str) -> None:
    """Link the finished database to the target's name (a WAL still beside it after: a
    connection left open; the database file alone is consistent at its last checkpoint)."""
    move = os.link
    try:
        os.link(aside, target)
    except FileExistsError:
        raise GpudbError(f"{target} was created by another process meanwhile; this "
                         "command's database was not put in its place") from None
    except OSError as exc:
        if os.path.lexists(target):
            raise GpudbError(f"cannot put the new database at {target}: "
                             f"{exc.strerror or exc}") from None
        move = os.rename  # a file system without hard links
        os.rename(aside, target)
    if os.path.exists(aside + ".wal"):
        try:
            move(aside + ".wal", target + ".wal")
        except FileExistsError:
            raise GpudbError(f"{target}.wal, a WAL without its database, was in the way of "
                             "the new database's: its last statements are not in "
                             f"{target}") from None


def _remove_aside(aside: str) -> None:
    import shutil

    for name in (aside, aside + ".wal"):
        try:
            os.unlink(name)
        except OSError:  # never made: missing, a file as the folder, a read-only file system
            pass
    shutil.rmtree(aside + ".tmp", ignore_errors=True)


def file_kind(mode: int) -> str:
    """What a non-regular file is, for error messages."""
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def open_regular(path: str | os.PathLike, max_bytes: int, what: str) -> int:
    """A descriptor of the regular file ``path``, ``what`` it should be ("a calibration file
    (TOML)"), of at most ``max_bytes``, for the caller to read and close. Opened without
    blocking and checked on the open descriptor, so a FIFO cannot hang the command and
    /dev/zero cannot fill memory; a directory, device, FIFO, socket, missing, unreadable or
    larger file is a GpudbError of one line."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise GpudbError(f"{path}: no such file") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise GpudbError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
                         ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise GpudbError(f"{path} is {file_kind(info.st_mode)}, not {what}")
        if info.st_size > max_bytes:
            raise GpudbError(f"{path} is larger than {max_bytes:,} bytes, too large for {what}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike, max_bytes: int, what: str) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`), at most ``max_bytes``
    even of a file still growing."""
    fd = open_regular(path, max_bytes, what)
    try:
        chunks, size = [], 0
        while size <= max_bytes:  # a file still growing stops at the limit too
            block = os.read(fd, max_bytes + 1 - size)
            if not block:
                break
            chunks.append(block)
            size += len(block)
        if size > max_bytes:
            raise GpudbError(f"{path} is larger than {max_bytes:,} bytes, too large for {what}")
        return b"".join(chunks)
    except OSError as exc:
        raise GpudbError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


@cache
def _system_names() -> frozenset[str]:
    """Lower-cased names of DuckDB's own functions, operators and catalog views (those of
    this DuckDB build, read once from a scratch database), and gpudb's UDFs."""
    from gpudb.store.udfs import functions as gpudb_udfs

    scratch = duckdb.connect(config=dict(locked_down()))
    try:
        names = {row[0].lower() for row in scratch.execute(
            "SELECT DISTINCT function_name FROM system.main.duckdb_functions() "
            "WHERE database_name = 'system'").fetchall()}
        names |= {row[0].lower() for row in scratch.execute(
            "SELECT view_name FROM system.main.duckdb_views() WHERE database_name = 'system'"
        ).fetchall()}
    finally:
        scratch.close()
    return frozenset(names | {udf.name.lower() for udf in gpudb_udfs()})


def refuse_shadowing(con: duckdb.DuckDBPyConnection, target: str) -> None:
    """Refuse a file whose macros (in any schema) or views are named like gpudb's UDFs or
    DuckDB's own functions, operators or catalog views: DuckDB resolves a name in the file
    before its own catalog, so a stored ``predict_linear``, ``abs`` or ``+`` would decide
    what gpudb's views and queries compute. Every name is compared here in Python: a query
    filtering by name could itself call a replaced function or operator."""
    own = file_catalog(con)
    system = _system_names()
    for schema, name, kind in con.execute(
            "SELECT DISTINCT schema_name, function_name, function_type "
            "FROM system.main.duckdb_functions() WHERE database_name = ?", [own]).fetchall():
        # in any schema: DuckDB's binder finds a function of another schema too, and then
        # reports gpudb's own as missing (issue 31: s.predict_linear broke every command)
        if name.lower() in system:
            what, drop = (("table macro", "DROP MACRO TABLE") if kind == "table_macro" else
                          ("macro", "DROP MACRO") if kind == "macro" else
                          (f"{kind} function", "DROP FUNCTION"))
            qualified = name if schema == "main" else f"{schema}.{name}"
            quoted = '"' + schema.replace('"', '""') + '"."' + name.replace('"', '""') + '"'
            raise GpudbError(
                f"{target} defines its own {what} {qualified!r}, which would replace "
                f"{'gpudb' if _is_udf(name) else 'DuckDB'}'s {name}; refusing to use it "
                f"(drop it with a plain DuckDB client: {drop} {quoted})")
    for schema, name in con.execute(
            "SELECT schema_name, view_name FROM system.main.duckdb_views() "
            "WHERE database_name = ?", [own]).fetchall():
        if schema == "main" and name.lower() in system and not _is_udf(name):
            raise GpudbError(f"{target} defines a view {name!r}, which would replace DuckDB's "
                             f"catalog view {name}; refusing to use it")


def refuse_triggers(con: duckdb.DuckDBPyConnection, target: str) -> None:
    """Refuse a file holding a trigger (DuckDB 2.0's CREATE TRIGGER), on any table of any
    schema: its SQL runs on every write to its table, gpudb's inserts included (a trigger
    stored AFTER INSERT ON run ran ``count(*) FROM range(300000000)`` on a `gpudb sweep`, and
    one could delete or add the rows gpudb writes), and on the writes of `gpudb sql` to the
    file's own tables. Only the catalog is read."""
    if not DUCKDB_2:
        return      # (DuckDB 1.x has no triggers, nor duckdb_triggers())
    for schema, name, table in con.execute(
            "SELECT schema_name, trigger_name, table_name FROM system.main.duckdb_triggers() "
            "WHERE database_name = ? ORDER BY schema_name, table_name, trigger_name",
            [file_catalog(con)]).fetchall():
        qualified = table if schema == "main" else f"{schema}.{table}"
        drop = ('DROP TRIGGER "' + name.replace('"', '""') + '" ON "'
                + schema.replace('"', '""') + '"."' + table.replace('"', '""') + '"')
        raise GpudbError(f"{target} holds a trigger {name!r} on table {qualified!r}, whose SQL "
                         "would run on writes to it; refusing to use the file (drop it with a "
                         f"plain DuckDB client: {drop})")


@cache
def _table_names() -> frozenset[str]:
    """Lower-cased names of every table gpudb creates (its migrations' CREATE TABLE
    statements, the bookkeeping tables and the materialised predictions)."""
    import re

    from gpudb.store.materialize import TABLE as MATERIALIZED

    names = {m.lower() for migration in migrations() for m in re.findall(
        r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", migration.sql, re.IGNORECASE)}
    return frozenset(names | {"gpudb_migration", "gpudb_meta", MATERIALIZED.lower()})


def refuse_views_for_tables(con: duckdb.DuckDBPyConnection, target: str) -> None:
    """Refuse a file holding a view where gpudb keeps a table (``run`` as ``SELECT ... FROM
    rd, range(1e12)``): every command reads gpudb's tables, so such a view would run for as
    long as it likes (issue 31: `gpudb info` never ended on an 8.6 MB file). Only the
    catalog is read: nothing the file defines is evaluated."""
    tables = _table_names()
    for schema, name in con.execute(
            "SELECT schema_name, view_name FROM system.main.duckdb_views() "
            "WHERE database_name = ? AND NOT internal", [file_catalog(con)]).fetchall():
        if schema == "main" and name.lower() in tables:
            raise GpudbError(f"{target} holds a view {name!r} where gpudb keeps its table "
                             f"{name}: not gpudb's data; refusing to use it")


def _definitions(con: duckdb.DuckDBPyConnection, database: str, only: set | None = None
                 ) -> dict[str, dict]:
    """Each main-schema table's definition as DuckDB keeps it: {table (lower-cased):
    {"columns": {column: (type, default, generation expression or None)}, "constraints":
    sorted [(kind, text)]}}, for the tables in ``only`` (lower-cased names; None: all)."""
    found: dict[str, dict] = {}
    for schema, table, column, kind, default, generated, expression in table_columns(
            con, database, "column_name, data_type, column_default, is_generated, "
            "generation_expression"):
        if schema == "main" and (only is None or table.lower() in only):
            entry = found.setdefault(table.lower(), {"columns": {}, "constraints": []})
            entry["columns"][column] = (kind, default, expression if generated else None)
    for table, kind, text in con.execute(
            "SELECT table_name, constraint_type, constraint_text "
            "FROM system.main.duckdb_constraints() "
            "WHERE database_name = ? AND schema_name = 'main'", [database]).fetchall():
        if table.lower() in found:
            found[table.lower()]["constraints"].append((kind, text))
    for entry in found.values():
        entry["constraints"].sort()
    return found


def table_columns(con: duckdb.DuckDBPyConnection, database: str, select: str) -> list[tuple]:
    """(schema, table, *select) for each column of the tables of ``database``, in column
    order: ``select`` names columns of duckdb_columns(). The tables are named in the query
    because duckdb_columns() binds every view it lists that was created unbound (gpudb's
    own are, WITH (DEFER_BINDING): 0.6 s for them on every connection), and DuckDB skips
    only the entries that a constant list of names excludes."""
    tables = set(con.execute("SELECT schema_name, table_name FROM system.main.duckdb_tables() "
                             "WHERE database_name = ?", [database]).fetchall())
    names = sorted({name for _schema, name in tables})
    if not names:
        return []
    marks = ", ".join("?" * len(names))
    rows = con.execute(
        f"SELECT schema_name, table_name, {select} FROM system.main.duckdb_columns() "
        f"WHERE database_name = ? AND NOT internal AND table_name IN ({marks}) "
        "ORDER BY schema_name, table_name, column_index", [database, *names]).fetchall()
    # (a view of another schema may share a table's name)
    return [row for row in rows if (row[0], row[1]) in tables]


def _statements(con: duckdb.DuckDBPyConnection, database: str) -> dict[str, str]:
    """Each main-schema table's CREATE TABLE statement as DuckDB writes it from its catalog
    entry (columns, types, defaults, generated columns and constraints, in one canonical
    text): {table (lower-cased): statement}."""
    return dict(con.execute(
        "SELECT lower(table_name), sql FROM system.main.duckdb_tables() "
        "WHERE database_name = ? AND schema_name = 'main'", [database]).fetchall())


@cache
def _definitions_at(versions: tuple[int, ...]) -> tuple[dict[str, dict], dict[str, str]]:
    """gpudb's tables as its migrations ``versions`` define them (a scratch database): their
    definitions (_definitions) and statements (_statements)."""
    scratch = duckdb.connect(config=dict(locked_down()))
    try:
        scratch.execute(BOOTSTRAP)
        for migration in migrations():
            if migration.version in versions:
                scratch.execute(migration.sql)
        own = file_catalog(scratch)
        return _definitions(scratch, own), _statements(scratch, own)
    finally:
        scratch.close()


# gpudb's bookkeeping tables: files of early gpudb versions (and tests' hand-made old files)
# hold them with other constraints; gpudb reads them through its own checks
# (db.migration_versions), so only generated columns are refused there.
_BOOKKEEPING = ("gpudb_migration", "gpudb_meta")


def refuse_altered_tables(con: duckdb.DuckDBPyConnection, target: str,
                          applied: list[int]) -> None:
    """Refuse a file whose gpudb tables are not defined as gpudb's migrations (those it has
    applied) define them: a generated column computes what gpudb reads as data, and a column
    default, CHECK or other constraint of the file's own runs on gpudb's inserts (a default
    like ``repeat('x', 2000000000)`` fills memory on every row). Columns the file added
    without a default or constraint are only listed by `gpudb info`. Only the catalog is
    read."""
    shipped, statements = _definitions_at(tuple(sorted(applied)))
    own = file_catalog(con)
    # every table written as gpudb's migrations write it: nothing of the file's own (one
    # catalog query: 2.7 ms on a clean file, against 13 ms for the comparison below)
    here_statements = _statements(con, own)
    if all(here_statements.get(table) == sql for table, sql in statements.items()):
        return
    here = _definitions(con, own, set(shipped))

    def refuse(what: str) -> GpudbError:
        return GpudbError(f"{target}: {what}, not as gpudb's migrations define it; refusing "
                          "to use the file")

    for table, entry in sorted(here.items()):
        own = shipped[table]
        for column, (kind, default, generated) in entry["columns"].items():
            if generated is not None:
                raise refuse(f"column {table}.{column} is generated (AS {generated})")
            if table in _BOOKKEEPING:
                continue
            if column not in own["columns"]:
                if default is not None:
                    raise refuse(f"its own column {table}.{column} has a default ({default})")
                continue
            own_kind, own_default, _ = own["columns"][column]
            if kind != own_kind:
                raise refuse(f"column {table}.{column} is {kind} where gpudb's is {own_kind}")
            if default != own_default:
                raise refuse(f"column {table}.{column} has the default {default} where "
                             f"gpudb's has {own_default or 'none'}")
        if table not in _BOOKKEEPING and entry["constraints"] != own["constraints"]:
            theirs = sorted(set(entry["constraints"]) - set(own["constraints"]))
            ours = sorted(set(own["constraints"]) - set(entry["constraints"]))
            if theirs:
                raise refuse(f"table {table} has the constraint {theirs[0][1]} of its own")
            raise refuse(f"table {table} lacks gpudb's constraint "
                         f"{ours[0][1] if ours else '(a repeated one)'}")


def _is_udf(name: str) -> bool:
    from gpudb.store.udfs import functions as gpudb_udfs

    return name.lower() in {udf.name.lower() for udf in gpudb_udfs()}


def file_catalog(con: duckdb.DuckDBPyConnection) -> str:
    """The name DuckDB gives the opened file in its catalog (not 'system' or 'temp')."""
    return first_row(con.execute("SELECT system.main.current_database()"))[0]


def refuse_foreign_duckdb(con: duckdb.DuckDBPyConnection, target: str) -> None:
    """A DuckDB file without gpudb's tables gets them only if it holds nothing else: gpudb
    never grafts its schema onto another program's database."""
    own = file_catalog(con)
    held = [row[0] for row in con.execute(
        "SELECT table_name FROM system.main.duckdb_tables() WHERE database_name = ? "
        "UNION ALL SELECT view_name FROM system.main.duckdb_views() WHERE database_name = ? "
        "AND NOT internal", [own, own]).fetchall()]
    if held:
        raise GpudbError(f"{target} is a DuckDB database of something else (it holds "
                         f"{held[0]!r} and no gpudb_migration table), not a gpudb database")
