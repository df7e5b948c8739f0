"""Opening a gpudb database: the one :func:`connect` every code path uses.

It turns DuckDB's open errors into one-line :class:`GpudbError` messages, applies the
``schema/NNNN_*.sql`` migrations when the file is writable (refusing a read-only file from an
older or newer gpudb with a clear message), registers every Python UDF once per database
instance and re-applies ``schema/views/*.sql``. :func:`atomic` is the one way gpudb code
groups statements into a transaction.

Every file is treated as a teammate's, that is as data only (README, "Files from elsewhere"):
every connection is opened locked down (gpudb.store.trust: no file or network access, no extension
installed or loaded implicitly, the configuration locked) before anything stored in the file
can run, and gpudb.store.trust refuses what is not a gpudb database or would replace gpudb's or
DuckDB's functions; gpudb's own code does the file work of ingest and export with pyarrow. The
file's views under gpudb's names are checked against gpudb's definitions on every open (never
trusting its ``views_sha256``): rewritten when writable, shadowed by TEMP views when read-only.
So gpudb's functions, views and stored queries are always gpudb's.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import duckdb

from gpudb.store import trust, udfs
from gpudb.store.base import (  # noqa: F401 - the store's names, imported from here too
    BOOTSTRAP,
    DEFAULT_DB,
    DUCKDB_2,
    MEMORY,
    GpudbError,
    Migration,
    atomic,
    default_path,
    first_row,
    interrupted,
    migrations,
    opened_path,
    schema_version,
)
from gpudb.store.resources import resource_dir

_VIEW = re.compile(r"CREATE OR REPLACE VIEW\s+(\w+)\s+AS\b", re.IGNORECASE)
# DuckDB 2.0 creates a view without binding its query (CREATE VIEW ... WITH (DEFER_BINDING)):
# binding gpudb's nested views at creation took 0.9 s, paid by each process's first open (to
# learn how DuckDB writes them) and by every new file. A view's query is bound where it is
# used, bound at creation or not, so what the views return is the same; the catalog's text
# of the view is too. (1.x has no such clause.)
_DEFER = " WITH (DEFER_BINDING)" if DUCKDB_2 else ""
_MEMORY = re.compile(r"[0-9]+(?:\.[0-9]+)?\s*(?:[KMGT]i?B|B)", re.IGNORECASE)
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<exe>.+?) \(PID (?P<pid>\d+)\)")


# how often a fired bound interrupts again, s: a statement started after the deadline stops
# within this
_REINTERRUPT_S = 0.05


class _TimeBound:
    """The time bound of a command reading files from elsewhere (:func:`time_bound`): every
    connection :func:`connect` opens while it holds is interrupted at the deadline."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.connections: list[duckdb.DuckDBPyConnection] = []
        self.fired = False
        self.doing = "reading the database"
        self.lock = threading.Lock()
        self.left_s = seconds
        self.timer: threading.Thread | None = None

    def start(self) -> None:
        self.started = time.monotonic()
        self.stopping = threading.Event()
        self.timer = threading.Thread(target=self._watch, args=(self.left_s, self.stopping),
                                      name="gpudb-time-bound", daemon=True)
        self.timer.start()

    def _watch(self, left_s: float, stopping: threading.Event) -> None:
        """Fire at the deadline, then keep interrupting until the block ends: DuckDB clears a
        connection's interrupt when its next statement starts, so one interrupt sent between
        two statements was lost and the next ran unbounded (issue 41 item 4: a bound of
        0.3 s expiring in Python code before a recursive CTE let it run past 60 s)."""
        if stopping.wait(min(left_s, threading.TIMEOUT_MAX)):
            return
        self.fire()
        while not stopping.wait(_REINTERRUPT_S):
            self.fire()

    def stop(self) -> None:
        if self.timer is not None:
            self.stopping.set()
            # joined, so the watching thread holds nothing when the block ends (see release)
            self.timer.join()
            self.timer = None
            self.left_s = max(0.0, self.left_s - (time.monotonic() - self.started))

    def release(self) -> None:
        """Drop the connections, on the thread that ends the block. Were the last reference
        to a connection dropped by the timer's thread as the interpreter exits, DuckDB would
        close the database there, releasing the GIL, and that thread, stopped by the
        finalizing interpreter as it takes the GIL back inside DuckDB's destructor, aborts
        the process (exit 134, "terminate called ... FATAL: exception not rethrown": 31 of 60
        runs of a bounded block whose connection was not closed)."""
        with self.lock:
            self.connections.clear()

    def fire(self) -> None:
        with self.lock:
            self.fired = True
            for con in self.connections:
                try:
                    con.interrupt()
                except Exception:  # noqa: BLE001 - closed meanwhile: nothing to stop
                    pass

    def add(self, con: duckdb.DuckDBPyConnection) -> None:
        with self.lock:
            self.connections.append(con)
            if self.fired:
                con.interrupt()


_BOUND: list[_TimeBound] = []

@contextmanager
def time_bound(seconds: float | None) -> Iterator[None]:
    """Within the block, every gpudb connection is interrupted ``seconds`` after the block
    began (None or 0: no bound): DuckDB stops the statement it runs with InterruptException,
    and :func:`ran_over` says so. A file from elsewhere can hold a table of a billion rows
    or an object that computes for hours; a command that only reads must end."""
    if not seconds:
        yield
        return
    bound = _TimeBound(seconds)
    _BOUND.append(bound)
    bound.start()
    try:
        yield
    finally:
        bound.stop()
        _BOUND.remove(bound)
        bound.release()


class _SignalInterrupts:
    """Ctrl-C (or SIGTERM, SIGHUP where gpudb.store.stop_signals handles them) stops the
    statement a gpudb connection runs (:func:`interrupt_on_signals`)."""

    def __init__(self):
        self.connections: list[duckdb.DuckDBPyConnection] = []
        self.lock = threading.Lock()

    def add(self, con: duckdb.DuckDBPyConnection) -> None:
        with self.lock:
            self.connections.append(con)

    def fire(self) -> None:
        with self.lock:
            for con in self.connections:
                try:
                    con.interrupt()
                except Exception:  # noqa: BLE001 - closed meanwhile: nothing to stop
                    pass

    def release(self) -> None:
        """Drop the connections on the thread that ends the block (_TimeBound.release)."""
        with self.lock:
            self.connections.clear()


_SIGNAL_WATCHERS: list[_SignalInterrupts] = []


@contextmanager
def interrupt_on_signals(*connections: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Within the block, Ctrl-C interrupts the statement every gpudb connection opened in it
    (and each of ``connections``, opened before it: the Python API's) is running, from a
    thread of its own: a long query otherwise runs on with the main
    thread blocked in DuckDB, where Python's own handler cannot run until it returns, so
    Ctrl-C did nothing for as long (seen: a 1e11-row query on a database with runs). The
    KeyboardInterrupt is raised as usual once the main thread runs again. Python's signal
    handlers write the signal's number to a wakeup fd even while the main thread is blocked;
    a thread reading it interrupts the connections (as :func:`time_bound` does at its
    deadline). Main thread only; SIGTERM and SIGHUP count where a Python handler turned them
    into Ctrl-C (gpudb.store.stop_signals), ignored signals write nothing."""
    import signal
    import socket as sockets

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stops = {int(signal.SIGINT)} | {int(getattr(signal, n)) for n in ("SIGTERM", "SIGHUP")
                                    if hasattr(signal, n)}
    reader, writer = sockets.socketpair()
    writer.setblocking(False)
    try:
        previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except ValueError:  # not the main thread of the main interpreter
        reader.close()
        writer.close()
        yield
        return
    watcher = _SignalInterrupts()
    for con in connections:
        watcher.add(con)
    _SIGNAL_WATCHERS.append(watcher)

    def watch() -> None:
        while True:
            try:
                got = reader.recv(64)
            except OSError:
                return
            if not got:
                return
            if stops.intersection(got):
                watcher.fire()
            if previous >= 0:
                # the wakeup fd taken over (an asyncio loop's, as in a notebook's kernel) gets
                # its signals still: its loop dispatches its handlers from what it reads
                with suppress(OSError):
                    os.write(previous, got)

    thread = threading.Thread(target=watch, name="gpudb-signal-interrupts", daemon=True)
    thread.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        _SIGNAL_WATCHERS.remove(watcher)
        writer.close()  # the reader sees the end and the thread returns
        thread.join(timeout=5)
        reader.close()
        watcher.release()


@contextmanager
def unbounded() -> Iterator[None]:
    """Within the block the time bound (:func:`time_bound`) is paused, the time left kept:
    for gpudb's own simulation inside a reading command (evaluate's sweep of a missing
    suite, its closed-loop runs), whose length the file does not decide."""
    paused = [bound for bound in _BOUND if bound.timer is not None and not bound.fired]
    for bound in paused:
        bound.stop()
    try:
        yield
    finally:
        for bound in paused:
            if not bound.fired:
                bound.start()


def doing(what: str) -> None:
    """What the command reads now ("counting the rows of table run"), for the line
    :func:`ran_over` prints when the time bound stops it."""
    for bound in _BOUND:
        bound.doing = what


def ran_over() -> str | None:
    """The one line saying that the time bound stopped the command and what it was reading,
    or None when it did not fire."""
    for bound in _BOUND:
        if bound.fired:
            return (f"stopped after {bound.seconds:g} s, the time bound of a command reading a "
                    f"database (--timeout-s or GPUDB_TIMEOUT_S; 0: none), while "
                    f"{bound.doing}")
    return None


def view_files() -> list[Path]:
    return sorted(resource_dir("schema").joinpath("views").glob("*.sql"))


def view_definitions() -> list[tuple[str, str]]:
    """(key, SQL) of gpudb's views, in the order they are created (by key): the files of
    schema/views/ (key: the file's name) and the views made from the predictors'
    declarations (gpudb.predictors), keyed as their files would be: each formula
    predictor's ``pred_<name>`` (:attr:`Predictor.view_sql`), ``analytic_prediction``, the
    union of every predictor view that 50_prediction.sql takes as it is (each Predictor's
    ``union``), and ``prediction_by_predictor`` and ``core_scaling_error_by_predictor``, a
    column per predictor (:func:`_by_predictor`). SQL is built from declared names, never
    by editing a file."""
    from gpudb.predictors import registry

    views = {path.name: path.read_text() for path in view_files()}
    made = {f"40_pred_{p.name}.sql": p.view_sql for p in registry() if p.view_sql}
    union = "\nUNION ALL ".join(f"SELECT * FROM {p.view}" for p in registry() if p.union)
    made["49_analytic_prediction.sql"] = (
        "CREATE OR REPLACE VIEW analytic_prediction AS\n"
        f"{union};\n")
    made["50_prediction_by_predictor.sql"] = _by_predictor(
        "prediction", "predicted_ns", "ns", "Predicted times side by side")
    made["55_core_scaling_error_by_predictor.sql"] = _by_predictor(
        "core_scaling_error", "ape", "ape", "Accuracy side by side")
    both = sorted(set(views) & set(made))
    if both:
        raise GpudbError(f"schema/views/{both[0]} is also made from the predictors' "
                         "declarations: remove the file")
    return sorted({**views, **made}.items())


def _by_predictor(view: str, value: str, suffix: str, what: str) -> str:
    """A view of ``view`` with a column ``pred_<name>_<suffix>`` per registered predictor, in
    table order: ``value`` on that predictor's rows, NULL on the others'. A stored query
    reads it with ``COLUMNS('^pred_(\\w+)_<suffix>$')`` for a column per predictor, so a new
    predictor gets its column without an edit of the query."""
    from gpudb.predictors import registry

    columns = ",\n       ".join(
        f"CASE WHEN predictor = '{p.name}' THEN {value} END AS pred_{p.name}_{suffix}"
        for p in registry())
    return (f"-- {what}: view {view} with a column pred_<name>_{suffix} per registered\n"
            f"-- predictor, its {value} on that predictor's rows and NULL on the others'\n"
            f"CREATE OR REPLACE VIEW {view}_by_predictor AS\n"
            f"SELECT *,\n       {columns}\nFROM {view};\n")


def _views_digest(views: list[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for key, sql in views:
        digest.update(key.encode())
        digest.update(sql.encode())
    return digest.hexdigest()


def open_error(path: str, exc: duckdb.Error) -> GpudbError:
    text = str(exc)
    holder = _LOCK_HOLDER.search(text)
    if holder:
        return GpudbError(
            f"{path} is locked by another process: {holder['exe']} (PID {holder['pid']}); "
            "wait for it to finish or stop it"
        )
    if "not a valid DuckDB database" in text:
        return GpudbError(f"{path} is not a DuckDB database")
    if "database does not exist" in text:
        return GpudbError(f"no database at {path} (create it with `gpudb init`)")
    if "different configuration than existing connections" in text:
        # DuckDB keeps one database instance per file and process: a file open read-only
        # cannot be opened writable beside it, nor the reverse
        return GpudbError(
            f"{path} is already open in this process with the other read_only setting; "
            "DuckDB allows one per file and process: open it read-only everywhere, or "
            "writable everywhere, or close the other connection first (an engine: dispose())")
    damaged = damage_line(exc, path)
    if damaged:
        return GpudbError(damaged)
    first_line = text.splitlines()[0] if text else type(exc).__name__
    return GpudbError(f"cannot open {path}: {first_line}")


def damage_line(exc: duckdb.Error, path: str | None = None) -> str | None:
    """The one line naming a database as damaged when DuckDB's error says it is (a block
    read past the end of a file cut short, a checksum that does not match, a database
    DuckDB invalidated after such a failure), else None."""
    text = str(exc)
    if not any(sign in text for sign in _DAMAGE):
        return None
    first = text.splitlines()[0] if text else type(exc).__name__
    named = f"{path} is damaged" if path else "the database file is damaged"
    return (f"{named} (cut short or corrupted); what this command had not committed is not "
            f"written: restore it from a copy (DuckDB: {first})")


# DuckDB's words for a file that is cut short or whose blocks fail their checksums
_DAMAGE = ("Could not read enough bytes", "Corrupt database file", "checksum",
           "database has been invalidated")


def applied_migrations(con: duckdb.DuckDBPyConnection,
                       path: str = "the database") -> list[int] | None:
    """Migration versions recorded in the file, or None if it has no migrations table."""
    exists = first_row(con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'gpudb_migration' "
        "AND schema_name = 'main' AND database_name = current_database()"
    ))[0]
    if not exists:
        return None
    try:
        values = [row[0] for row in con.execute("SELECT version FROM gpudb_migration").fetchall()]
    except duckdb.Error:  # no version column: a table of another shape under gpudb's name
        values = None
    return migration_versions(values, f"{path}: table gpudb_migration")


def migration_versions(values: list | None, where: str) -> list[int]:
    """The migration versions a file records (``values``: its gpudb_migration.version
    column, None when it has none), sorted; a GpudbError of one line when one is not a
    migration number (NULL, text, a fraction): the file is not one gpudb wrote."""
    if values is None:
        raise GpudbError(f"{where} has no version column: not a gpudb database this gpudb "
                         "can use")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 9999:
            shown = "NULL" if value is None else repr(value)[:40]
            raise GpudbError(f"{where} records version {shown}, not a migration number: not "
                             "a gpudb database this gpudb can use")
    return sorted(values)


def _meta(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    row = first_row(con.execute("SELECT value FROM gpudb_meta WHERE key = ?", [key]))
    return row[0] if row else None


def _check_version(path: str, applied: list[int] | None, known: list[Migration],
                   writer: str | None, read_only: bool) -> list[Migration]:
    """Migrations still to apply; raises when the file cannot be used by this gpudb."""
    from gpudb.version import __version__

    newest = max(m.version for m in known)
    if applied is None:
        if read_only:
            raise GpudbError(f"{path} is not a gpudb database (no gpudb_migration table)")
        return known
    unknown = sorted(set(applied) - {m.version for m in known})
    if unknown:
        raise GpudbError(
            f"{path} was written by a newer gpudb ({writer or 'unknown version'}, schema "
            f"{max(applied)}); this is gpudb {__version__} with schema {newest}: upgrade gpudb"
        )
    pending = [m for m in known if m.version not in set(applied)]
    if pending and read_only:
        missing = ", ".join(f"{m.version:04d}_{m.name}" for m in pending)
        raise GpudbError(
            f"{path} has an older schema (written by gpudb {writer or 'unknown version'}) and "
            f"lacks migration {missing} of gpudb {__version__}: migrate it with `gpudb --db "
            f"{path} init` (or any command without --read-only that writes)"
        )
    return pending


def _migrate(con: duckdb.DuckDBPyConnection, pending: list[Migration]) -> None:
    from gpudb.version import __version__

    for migration in pending:
        try:
            with atomic(con):
                con.execute(migration.sql)
                con.execute(
                    "INSERT INTO gpudb_migration VALUES (?, ?, now(), ?)",
                    [migration.version, migration.name, __version__],
                )
        except duckdb.Error as exc:
            raise GpudbError(f"migration {migration.version:04d}_{migration.name} failed: "
                             f"{str(exc).splitlines()[0]}") from exc


def _create_view(sql: str, temp: bool = False) -> str:
    """A view file's statement as gpudb runs it: TEMP where asked, its binding deferred."""
    return _VIEW.sub(lambda m: f"CREATE OR REPLACE {'TEMP ' if temp else ''}VIEW {m[1]}{_DEFER} AS",
                     sql, count=1)


def _view_name(sql: str) -> str:
    match = _VIEW.search(sql)
    if not match:
        raise GpudbError("a view file does not start with CREATE OR REPLACE VIEW <name> AS")
    return match.group(1)


# gpudb's view definitions as DuckDB writes them in its catalog ({name: sql}), learnt from the
# first connection of this process that creates them; keyed by the views' digest.
_CANONICAL: dict[str, dict[str, str]] = {}


# DuckDB writes the columns of an EXCLUDE list in no fixed order.
_EXCLUDE = re.compile(r"EXCLUDE \(([^()]*)\)")


def _canonical(sql: str) -> str:
    """A view definition as DuckDB writes it, with TEMP dropped and EXCLUDE lists sorted."""
    sql = sql.replace("CREATE TEMP VIEW ", "CREATE VIEW ", 1)
    return _EXCLUDE.sub(lambda m: f"EXCLUDE ({', '.join(sorted(m[1].split(', ')))})", sql)


def _stored_views(con: duckdb.DuckDBPyConnection, database: str) -> dict[str, str]:
    """{lower-cased name: canonical definition} of the views in schema main of ``database``."""
    return {name.lower(): _canonical(sql) for _db, schema, name, sql in con.execute(
        "SELECT database_name, schema_name, view_name, sql FROM system.main.duckdb_views() "
        "WHERE database_name = ?", [database]).fetchall() if schema == "main"}


def _apply_views(con: duckdb.DuckDBPyConnection, read_only: bool) -> None:
    """gpudb's views, always gpudb's, whatever ``views_sha256`` the file claims.

    The file's stored views of gpudb's names are compared with gpudb's definitions as DuckDB
    writes them. When one differs (a file from another gpudb, or one carrying views of its
    own under gpudb's names), a writable open rewrites them all in one transaction, and a
    read-only one gets gpudb's as TEMP views, which come first in DuckDB's search path, so
    the file's answer nothing on this connection."""
    views = view_definitions()
    sqls = [sql for _key, sql in views]
    names = [_view_name(sql).lower() for sql in sqls]
    digest = _views_digest(views)
    own = trust.file_catalog(con)
    stored = _stored_views(con, own)
    canonical = _CANONICAL.get(digest)
    shadowed = canonical is None
    if shadowed:  # learn how DuckDB writes gpudb's views: create them as TEMP views
        _create_views(con, [_create_view(sql, temp=True) for sql in sqls])
        temp = _stored_views(con, "temp")
        canonical = _CANONICAL[digest] = {n: temp[n] for n in names}
    current = all(stored.get(n) == canonical[n] for n in names)
    if read_only:
        if not (current or shadowed):
            _create_views(con, [_create_view(sql, temp=True) for sql in sqls])
    elif not current or _meta(con, "views_sha256") != digest:
        _create_views(con, [*map(_create_view, sqls), ("INSERT OR REPLACE INTO gpudb_meta "
                                    f"VALUES ('views_sha256', '{digest}')")], atomically=True)


def _create_views(con: duckdb.DuckDBPyConnection, statements: list[str],
                  atomically: bool = False) -> None:
    try:
        if atomically:
            with atomic(con):
                for sql in statements:
                    con.execute(sql)
        else:
            for sql in statements:
                con.execute(sql)
    except duckdb.Error as exc:
        raise GpudbError(f"view definitions failed to apply: {str(exc).splitlines()[0]}") from exc


def own_views(con: duckdb.DuckDBPyConnection) -> None:
    """For a connection :func:`connect` did not open (SQLAlchemy's): gpudb's views as TEMP
    views wherever the file's stored ones differ from them. Writes nothing."""
    _apply_views(con, read_only=True)


def connection_config() -> dict:
    """The ``config`` of every gpudb connection (gpudb.connect's and gpudb.store.engine's alike:
    DuckDB refuses a second configuration for a file already open): locked down
    (gpudb.store.trust.locked_down) with DuckDB's memory limit from $GPUDB_MEMORY_LIMIT (e.g. 4GB;
    unset: DuckDB's own, 80% of the memory)."""
    config = dict(trust.locked_down())
    limit = os.environ.get("GPUDB_MEMORY_LIMIT")
    if limit:
        # DuckDB takes '-1GB' (no limit at all) and other text it reads its own way
        if not _MEMORY.fullmatch(limit.strip()):
            raise GpudbError(f"GPUDB_MEMORY_LIMIT={ascii(limit)} is not an amount of memory "
                             "such as 4GB or 512MB")
        config["memory_limit"] = limit.strip()
    return config


def connect(path: str | os.PathLike | None = None,
            read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) a gpudb database and return a DuckDB connection.

    path: file name; None means $GPUDB_DB or ./gpudb.duckdb; ':memory:' an in-memory database.
    read_only: open without writing; the file must exist and carry this gpudb's schema.
    Every file is opened as one from elsewhere: locked down (:func:`locked_down`) before any
    stored view or macro can run.
    Raises GpudbError with a one-line message for locks, files that are not gpudb databases
    (saying what they are), files whose functions would replace gpudb's or DuckDB's, and
    schema mismatches. A file this call created is removed again when it fails.
    """
    target = str(path) if path is not None else default_path()
    # One connect at a time in a process: two threads on a new file both saw it missing, and
    # the one that lost the race to register gpudb's functions ("predict_crisp already
    # exists") deleted the file the other had created and written to (issue 41 item 2).
    with OPEN_LOCK:
        return _connect(target, read_only)


# Held while a connection of this process is opened and set up (gpudb.store.engine's too):
# whether the file existed, the functions the database instance has and its views are then
# one thread's view at a time.
OPEN_LOCK = threading.RLock()


def _connect(target: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    from gpudb.version import __version__
    opened = opened_path(target)  # messages name the target, never a temporary file
    trust.refuse_non_database(target)
    trust.refuse_side_files(target, opened)
    if target != MEMORY and read_only and not Path(opened).exists():
        raise GpudbError(f"no database at {target} (create it with `gpudb init`)")
    created = target != MEMORY and not os.path.lexists(opened)
    try:
        con = duckdb.connect(opened, read_only=read_only, config=connection_config())
    except duckdb.Error as exc:
        if opened != target:  # DuckDB's message names the temporary file: name the target
            exc = type(exc)(str(exc).replace(opened, target))
        raise open_error(target, exc) from None
    if created:
        trust.note_created(opened)
    for bound in [*_BOUND, *_SIGNAL_WATCHERS]:
        bound.add(con)
    try:
        # gpudb commands draw their own progress bars; DuckDB's would garble their output.
        # Only where it is on: in a Jupyter kernel without ipywidgets DuckDB 2.0.1 starts
        # with it off and refuses to set it at all ("required package 'ipywidgets' is
        # missing"), which failed every gpudb.open in such a notebook.
        if con.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0]:
            con.execute("SET enable_progress_bar = false")
        trust.refuse_in_memory(con, target)
        trust.refuse_shadowing(con, target)
        trust.refuse_views_for_tables(con, target)
        trust.refuse_triggers(con, target)
        known = migrations()
        applied = applied_migrations(con, target)
        if applied is None and not read_only:
            trust.refuse_foreign_duckdb(con, target)
        writer = _meta(con, "gpudb_version") if applied is not None else None
        pending = _check_version(target, applied, known, writer, read_only)
        if applied:  # before anything is written to the file
            trust.refuse_altered_tables(con, target, applied)
        udfs.register(con)
        if not read_only:
            con.execute(BOOTSTRAP)
            _migrate(con, pending)
        _apply_views(con, read_only)
        if not read_only and writer != __version__:
            con.execute("INSERT OR REPLACE INTO gpudb_meta VALUES ('gpudb_version', ?)",
                        [__version__])
    except BaseException:
        con.close()
        if created:
            trust.remove_created(opened)
        raise
    return con


def stored_engines(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The simulator engines (run.engine) of the runs the database holds, in order: one at
    most, since gpudb never adds a second (gpudb.store.runs.run_engine). A read, here so
    that the layers that never write runs (present) can say which engine made them."""
    return [r[0] for r in con.execute(
        "SELECT DISTINCT engine FROM run WHERE engine IS NOT NULL ORDER BY 1").fetchall()]


def file_info(con: duckdb.DuckDBPyConnection) -> dict:
    """Schema version, the gpudb that last wrote the file, and this gpudb's versions."""
    from gpudb.version import __version__

    applied = applied_migrations(con) or []
    return {
        "schema_version": max(applied, default=0),
        "written_by": _meta(con, "gpudb_version"),
        "gpudb_version": __version__,
        "gpudb_schema_version": schema_version(),
    }


def whoami() -> tuple[str, str]:
    """(user, host) recorded with experiments and ingested files."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return user, socket.gethostname()
