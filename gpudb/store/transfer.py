"""Moving runs between databases: Parquet export, and merge from another .duckdb file or export.

Export streams each table through Arrow into Parquet with pyarrow: no path is ever part of an
SQL statement. A merge source is opened read-only and locked down (external access off,
configuration locked) because a teammate's file may hold views or macros that read or write
files. It is then checked whole before anything is written, with the rules ingest applies
(each table's own constraints and finite numbers, :func:`gpudb.store.runs.invalid_row`), and
refused when interval or metric rows have no run in it or a run_id names different contents
here and there. Its rows are written through gpudb.store.runs like every other run: runs are
matched by ``run_id`` (a content hash), so merging the same source twice adds nothing and a
run already here is never changed. Control results, Wu models and materialised predictions
are computed from runs and not merged; the report lists them.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from gpudb.store.db import (
    MEMORY,
    GpudbError,
    atomic,
    connect,
    doing,
    first_row,
    migration_versions,
    migrations,
    schema_version,
    stored_engines,
)
from gpudb.store.runs import (
    insert_missing,
    insert_runs,
    invalid_row,
    row_name,
)
from gpudb.store.trust import file_kind

# Tables in dependency order: referenced rows first.
TABLES = ("gpu", "pstate", "kernel", "experiment", "ingest_file", "run", "interval", "metric")


# Rows per Arrow batch while exporting: a table streams to its file in batches of this many
# rows, so memory stays bounded however many intervals a table holds.
_EXPORT_BATCH_ROWS = 65_536


def export(con: duckdb.DuckDBPyConnection, directory: str | Path) -> dict[str, int]:
    """Write every table (core, control results, materialised predictions, schema
    bookkeeping) to DIRECTORY/<table>.parquet; returns rows per table.

    The directory must not exist yet; files are written to a temporary sibling first and
    renamed at the end, so a failed export leaves nothing behind. Each table is fetched as
    Arrow record batches and written with pyarrow: no path is ever part of an SQL statement
    (a directory name with a quote in it is only a name), and the connection needs no
    access to the file system.
    """
    target = Path(directory)
    if target.exists() or target.is_symlink():
        raise GpudbError(f"{target} already exists; export into a new directory")
    parent = target.resolve().parent
    if not parent.is_dir():
        raise GpudbError(f"cannot export to {target}: {parent} is not a directory")
    tables = [r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND NOT temporary ORDER BY table_name").fetchall()]
    for table in tables:
        if not table or table != Path(table).name or table.startswith(".") or "\0" in table:
            raise GpudbError(f"cannot export table {table!r}: its name is not a file name")
    try:
        staging = Path(tempfile.mkdtemp(prefix=".gpudb-export-", dir=parent))
    except OSError as exc:
        raise GpudbError(f"cannot export to {target}: {_os_reason(exc)}") from None
    counts = {}
    try:
        for table in tables:
            doing(f"exporting table {table}")
            counts[table] = _write_parquet(con, f"SELECT * FROM {_quote(table)}",
                                           staging / f"{table}.parquet")
        os.replace(staging, target)
    except (OSError, pa.ArrowException) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise GpudbError(f"cannot export to {target}: {_os_reason(exc)}") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return counts


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _os_reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text


def _write_parquet(con: duckdb.DuckDBPyConnection, query: str, path: Path) -> int:
    """Stream a query's rows into a Parquet file, a batch at a time; returns the rows.
    Timestamps with a time zone are written as UTC (DuckDB hands them over in the session's
    zone), as DuckDB's own Parquet writer did."""
    reader = con.sql(query).to_arrow_reader(_EXPORT_BATCH_ROWS)
    given = reader.schema
    schema = pa.schema([f.with_type(pa.timestamp(f.type.unit, "UTC"))
                        if pa.types.is_timestamp(f.type) and f.type.tz else f for f in given],
                       metadata=given.metadata)
    rows = 0
    try:
        # the file opened here and closed whatever the writer's close does: on a full disk
        # its own file stayed open after the failed write (a descriptor leaked per export)
        with open(path, "wb") as sink, pq.ParquetWriter(sink, schema) as writer:
            for batch in reader:
                writer.write_batch(batch if schema == given else batch.cast(schema))
                rows += batch.num_rows
    finally:
        reader.close()
    return rows


# Tables of a file that describe the file itself, never merged or reported.
_BOOKKEEPING = ("gpudb_migration", "gpudb_meta")

# Rows (all tables together) merge reads from one source: it checks a source whole before
# writing, holding its tables in memory (22 M rows: 4.2 GB peak, about 190 bytes a row), so
# a merge stays under 2 GB; a larger source is refused before it is read (a 9 MB export held
# 600 M metric rows).
MERGE_MAX_ROWS = 8_000_000


def _check_rows(source: Path, rows: dict[str, int]) -> None:
    total = sum(rows.values())
    if total > MERGE_MAX_ROWS:
        biggest = max(rows, key=rows.get)
        raise GpudbError(f"{source} holds {total:,} rows ({rows[biggest]:,} in {biggest}), more "
                         f"than the {MERGE_MAX_ROWS:,} merge reads from one source (it checks "
                         "them in memory): merge part of it (export a smaller database)")


@dataclass
class MergeReport:
    source: str
    runs_added: int = 0
    runs_skipped: int = 0
    rows_added: dict[str, int] = field(default_factory=dict)
    # Tables of the source that merge does not copy, with their rows (None: not countable):
    # control results, Wu models and materialised predictions are computed from runs, so
    # they are recomputed on the merged database rather than copied.
    not_merged: dict[str, int | None] = field(default_factory=dict)


def _refuse_odd_entries(source: Path) -> None:
    """Refuse an export folder whose ``*.parquet`` entries are not all regular files, before
    any is read: a FIFO among them hung merge past --timeout-s (pyarrow's read blocks in
    open), and a symbolic link reads a file outside the folder the user named (issue 41
    items 1 and 4)."""
    try:
        entries = sorted(source.glob("*.parquet"))
        for path in entries:
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                raise GpudbError(f"{path} is a symbolic link: an export's files are read only "
                                 "from its own folder (copy the file in)")
            if not stat.S_ISREG(info.st_mode):
                raise GpudbError(f"{path} is {file_kind(info.st_mode)}, not a Parquet file of "
                                 "an export")
    except OSError as exc:
        raise GpudbError(f"cannot read export {source}: {exc.strerror or exc}") from None


def _read_source(source: Path) -> tuple[dict[str, pa.Table], dict[str, int | None]]:
    """The source's tables as Arrow tables (a locked-down database, or a Parquet export), and
    its other tables (those merge does not copy) with their row counts."""
    if source.is_dir():
        _refuse_odd_entries(source)
        missing = [t for t in ("run", "gpudb_migration") if not (source / f"{t}.parquet").exists()]
        if missing:
            raise GpudbError(f"{source} is not a gpudb export (no {missing[0]}.parquet)")
        try:
            migration = pq.read_table(source / "gpudb_migration.parquet")
            versions = migration_versions(
                migration.column("version").to_pylist()
                if "version" in migration.column_names else None,
                f"{source}/gpudb_migration.parquet")
            if not versions:
                raise GpudbError(f"{source}/gpudb_migration.parquet records no migration: "
                                 "not a gpudb export")
            newest = versions[-1]
            if newest > schema_version():
                raise GpudbError(f"{source} was exported by a newer gpudb (schema {newest}); "
                                 "upgrade gpudb to merge it")
            present = [t for t in TABLES if (source / f"{t}.parquet").exists()]
            _check_rows(source, {t: pq.read_metadata(source / f"{t}.parquet").num_rows
                                 for t in present})
            tables = {t: pq.read_table(source / f"{t}.parquet") for t in present}
            tables["run"] = _upgrade_runs(tables["run"], newest, tables.get("experiment"))
        except (OSError, pa.ArrowException) as exc:
            raise GpudbError(f"cannot read export {source}: {str(exc).splitlines()[0]}") from None
        others: dict[str, int | None] = {}
        for path in sorted(source.glob("*.parquet")):
            if path.stem not in TABLES and path.stem not in _BOOKKEEPING:
                try:
                    others[path.stem] = pq.read_metadata(path).num_rows
                except (OSError, pa.ArrowException):
                    others[path.stem] = None
        return tables, others
    if not source.exists():
        raise GpudbError(f"no database or export at {source}")
    other = connect(source, read_only=True)
    try:
        doing(f"counting the rows of {source}")
        _check_rows(source, {t: first_row(other.execute(f"SELECT count(*) FROM {t}"))[0]
                             for t in TABLES})
        doing(f"reading the tables of {source}")
        tables = {t: other.sql(f"SELECT * FROM {t}").to_arrow_table() for t in TABLES}
        names = [r[0] for r in other.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main' AND NOT temporary ORDER BY table_name").fetchall()]
        others = {n: first_row(other.execute(f"SELECT count(*) FROM {_quote(n)}"))[0]
                  for n in names if n not in TABLES and n not in _BOOKKEEPING}
        return tables, others
    except duckdb.Error as exc:
        raise GpudbError(f"cannot read {source}: {str(exc).splitlines()[0]}") from None
    finally:
        other.close()


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file: by identity (device and inode), so a hard link or a
    symbolic link to a file is that file; by resolved path when either does not exist."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()


def _database_path(con: duckdb.DuckDBPyConnection) -> str | None:
    row = first_row(con.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"))
    return row[0] if row and row[0] and row[0] != MEMORY else None


# Migrations that rewrite run rows (not only add columns), which an export taken before them
# needs replayed on its run table: 0006 moves closed-loop controllers out of the policy string,
# 0014 names the engine of gpudb's simulated runs (from the experiment table).
_RUN_REWRITES = (6, 14)


def _upgrade_runs(runs: pa.Table, exported_version: int,
                  experiments: pa.Table | None = None) -> pa.Table:
    """An older export's run table as the migrations it missed would have left it, by running
    those migrations' SQL on it and its experiment table (so the rewrite is written once, in
    schema/)."""
    pending = [m for m in migrations()
               if m.version in _RUN_REWRITES and m.version > exported_version]
    if not pending:
        return runs
    scratch = duckdb.connect(config={"enable_external_access": False})
    try:
        scratch.register("_source_run", runs)
        scratch.execute("CREATE TABLE run AS SELECT * FROM _source_run")
        if experiments is not None:
            scratch.register("_source_experiment", experiments)
            scratch.execute("CREATE TABLE experiment AS SELECT * FROM _source_experiment")
            if "simulator" not in experiments.column_names:     # before migration 0009
                scratch.execute("ALTER TABLE experiment ADD COLUMN simulator TEXT")
        else:
            scratch.execute("CREATE TABLE experiment (experiment_id TEXT, simulator TEXT)")
        for migration in pending:
            scratch.execute(migration.sql)
        return scratch.sql("SELECT * FROM run").to_arrow_table()
    finally:
        scratch.close()


def merge(con: duckdb.DuckDBPyConnection, source: str | Path) -> MergeReport:
    """Copy into `con` the runs of another gpudb file or export that it lacks (by run_id),
    with their intervals, the metrics it lacks and the GPU, kernel, experiment and provenance
    rows they refer to; all in one transaction.

    The source is checked whole before anything is written, and refused (GpudbError, one
    line naming the file and the row) when it holds what ingest would refuse (values that
    break a column's rules, NaN or infinities), interval or metric rows of a run it does not
    hold, a run twice, a run it lacks a kernel, GPU or experiment of, or a run the target
    holds with different contents (the run row, its intervals, or a metric value): a run_id
    names one run. Tables merge does not copy are listed in the report's ``not_merged``.
    """
    source = Path(source)
    target = _database_path(con)
    if target is not None and same_file(source, target):
        raise GpudbError(f"cannot merge a database into itself: {source} is {target}")
    tables, not_merged = _read_source(source)
    report = MergeReport(str(source), not_merged=not_merged)
    registered = []
    try:
        for name in ("run", "interval", "metric"):
            if name in tables:
                con.register(f"_gpudb_src_{name}", tables[name])
                registered.append(f"_gpudb_src_{name}")
        problem = _check_source(con, tables, source)
        if problem:
            raise GpudbError(f"{source}: {problem}; nothing merged")
        present = first_row(con.execute(
            "SELECT count(DISTINCT s.run_id) FROM _gpudb_src_run AS s "
            "JOIN run AS r ON r.run_id = s.run_id"))[0]
        with atomic(con):
            for table in ("gpu", "pstate", "kernel", "experiment", "ingest_file"):
                if table in tables:
                    report.rows_added[table] = insert_missing(con, table, tables[table])
            written = insert_runs(con, tables["run"], tables.get("interval"))
            report.rows_added["run"] = written.runs
            if "interval" in tables:
                report.rows_added["interval"] = written.intervals
            if "metric" in tables:
                report.rows_added["metric"] = insert_missing(con, "metric", tables["metric"])
    except duckdb.Error as exc:
        cause = _first_error(exc)
        raise GpudbError(f"merge of {source} failed: {str(cause).splitlines()[0]}") from None
    finally:
        for name in registered:
            with suppress(duckdb.Error):
                con.unregister(name)
    report.runs_added = report.rows_added.get("run", 0)
    report.runs_skipped = present
    return report


def _first_error(exc: BaseException) -> BaseException:
    """The DuckDB error that started a failure. A statement run after a failed one in the
    same transaction (a clean-up, a ROLLBACK) fails with "Current transaction is aborted",
    and Python raises that one, with the cause only as its __context__."""
    while ("transaction is aborted" in str(exc)
           and isinstance(exc.__context__, duckdb.Error)):
        exc = exc.__context__
    return exc


# Run columns that say where a run came from rather than what it is: the same run (run_id)
# may be stored by two teammates in experiments of their own, at different times, from
# different files of one measurement.
_PROVENANCE = ("run_id", "experiment_id", "created_at", "input_hash")
# Two floating-point values are the same when they differ by no more than this, relatively:
# measured run_ids hash numbers to 12 significant digits, so one measurement exported twice
# can differ in its last digits.
_REL_TOLERANCE = 1e-9


def _column_types(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    return dict(con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? AND "
        "schema_name = 'main' AND database_name = current_database() ORDER BY column_index",
        [table]).fetchall())


def _differs(column: str, kind: str) -> str:
    """SQL: source row s and stored row t differ in a column (NULLs equal)."""
    ours, theirs = f"t.{_quote(column)}", f"CAST(s.{_quote(column)} AS {kind})"
    if kind in ("DOUBLE", "FLOAT", "REAL"):
        return (f"NOT ({ours} IS NOT DISTINCT FROM {theirs} OR abs({ours} - {theirs}) <= "
                f"{_REL_TOLERANCE} * greatest(abs({ours}), abs({theirs})))")
    return f"{ours} IS DISTINCT FROM {theirs}"


def _compared(con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table,
              skip: tuple[str, ...]) -> dict[str, str]:
    """The columns of ``table`` the source's rows have too, less ``skip``, with their types."""
    return {c: k for c, k in _column_types(con, table).items()
            if c in rows.column_names and c not in skip}


def _first_difference(con: duckdb.DuckDBPyConnection, columns: dict[str, str], keys: str,
                      join: str, label: str) -> tuple[tuple, str] | None:
    """The first pair of rows of ``join`` (source rows s joined to stored rows t) that differ
    in one of ``columns``: (the values of ``keys``, "column x in the source, y in the
    target"), or None."""
    if not columns:
        return None
    flags = [_differs(c, k) for c, k in columns.items()]
    values = [f"CAST(s.{_quote(c)} AS VARCHAR), CAST(t.{_quote(c)} AS VARCHAR)"
              for c in columns]
    hit = first_row(con.execute(
        f"SELECT {keys}, {', '.join(flags)}, {', '.join(values)} FROM {join} "
        f"WHERE {' OR '.join(flags)} ORDER BY ALL LIMIT 1"))
    if hit is None:
        return None
    n = len(columns)
    keys, diff, vals = hit[:-3 * n], hit[-3 * n:-2 * n], hit[-2 * n:]
    i = diff.index(True)
    column = list(columns)[i]
    return keys, f"{column} {vals[2 * i]} in {label}, {vals[2 * i + 1]} in the target"


def _check_source(con: duckdb.DuckDBPyConnection, tables: dict[str, pa.Table],
                  source: Path) -> str | None:
    """What makes the source unfit to merge, as one line naming the row, or None. The run,
    interval and metric tables are registered as _gpudb_src_<table>."""
    label = "the source"
    repair = (f"gpudb --db {source} delete --orphans" if not source.is_dir() else
              "gpudb delete --orphans on the database it was exported from, then export it "
              "again")
    for table in TABLES:
        if table in tables:
            problem = invalid_row(con, table, tables[table])
            if problem:
                return problem
    if "engine" in tables["run"].column_names:
        engines = sorted({e for e in tables["run"].column("engine").to_pylist() if e}
                         | set(stored_engines(con)))
        if len(engines) > 1:
            return (f"its runs and the target's are of two simulator engines ({engines[0]} and "
                    f"{engines[1]}): a database holds one engine's runs, so that no query "
                    "pairs runs of two engines")
    keys = {"run": "run_id", "interval": "run_id, idx", "metric": "run_id, idx, name"}
    for table in ("run", "interval"):
        if table in tables:
            dup = first_row(con.execute(
                f"SELECT {keys[table]}, count(*) FROM _gpudb_src_{table} GROUP BY ALL "
                "HAVING count(*) > 1 ORDER BY ALL LIMIT 1"))
            if dup:
                name = row_name(table, dict(zip(("run_id", "idx"), dup[:-1], strict=False)))
                return f"{name} appears {dup[-1]} times"
    if "metric" in tables:
        dup = first_row(con.execute(
            "SELECT run_id, idx, name FROM _gpudb_src_metric GROUP BY ALL HAVING "
            "count(DISTINCT coalesce(CAST(value AS VARCHAR), '')) > 1 ORDER BY ALL LIMIT 1"))
        if dup:
            name = row_name("metric", dict(zip(("run_id", "idx", "name"), dup, strict=True)))
            return f"{name} appears with different values"
    for table in ("interval", "metric"):
        if table not in tables:
            continue
        # every orphan counted, the first run named: one line says how much there is to repair
        orphan = first_row(con.execute(
            f"SELECT min(s.run_id), count(*), count(DISTINCT s.run_id), "
            f"bool_or(t.run_id IS NOT NULL) "
            f"FROM _gpudb_src_{table} AS s LEFT JOIN run AS t ON t.run_id = s.run_id "
            f"WHERE NOT EXISTS (SELECT 1 FROM _gpudb_src_run AS r WHERE r.run_id = s.run_id)"))
        if orphan and orphan[1]:
            rid, count, runs, in_target = orphan
            where = ("; the target holds such a run: merge would graft them onto it" if in_target
                     else "")
            return (f"{count} {table} rows belong to {runs} run{'s' if runs != 1 else ''} "
                    f"{label} does not hold (orphans, e.g. of run {rid!r}){where}; repair "
                    f"{label}: {repair}")
    for column, parent in (("experiment_id", "experiment"), ("kernel_id", "kernel"),
                           ("gpu_id", "gpu")):
        theirs = ""
        if parent in tables:
            con.register("_gpudb_src_parent", tables[parent])
            theirs = (" AND NOT EXISTS (SELECT 1 FROM _gpudb_src_parent AS p "
                      f"WHERE p.{column} = s.{column})")
        try:
            hit = first_row(con.execute(
                f"SELECT s.run_id, s.{column} FROM _gpudb_src_run AS s WHERE NOT EXISTS "
                f"(SELECT 1 FROM {parent} AS t WHERE t.{column} = s.{column}){theirs} "
                "ORDER BY s.run_id LIMIT 1"))
        finally:
            if theirs:
                con.unregister("_gpudb_src_parent")
        if hit:
            return (f"run {hit[0]!r} refers to {parent} {hit[1]!r}, which neither {label} nor "
                    "the target holds")
    conflict = f"; {label} and the target hold different runs under one run_id"
    runs = _compared(con, "run", tables["run"], _PROVENANCE)
    hit = _first_difference(con, runs, "s.run_id", "_gpudb_src_run AS s JOIN run AS t "
                            "ON t.run_id = s.run_id", label)
    if hit:
        return f"run {hit[0][0]!r} differs: {hit[1]}{conflict}"
    if "interval" in tables:
        con.execute("CREATE OR REPLACE TEMP TABLE _gpudb_shared AS SELECT DISTINCT run_id "
                    "FROM _gpudb_src_interval WHERE run_id IN (SELECT run_id FROM run)")
        try:
            gap = first_row(con.execute(
                "SELECT coalesce(s.run_id, t.run_id), coalesce(CAST(s.idx AS INTEGER), t.idx), "
                "s.run_id IS NULL FROM (SELECT * FROM _gpudb_src_interval WHERE run_id IN "
                "(SELECT run_id FROM _gpudb_shared)) AS s FULL JOIN (SELECT * FROM interval "
                "WHERE run_id IN (SELECT run_id FROM _gpudb_shared)) AS t "
                "ON t.run_id = s.run_id AND t.idx = CAST(s.idx AS INTEGER) "
                "WHERE s.run_id IS NULL OR t.run_id IS NULL ORDER BY 1, 2 LIMIT 1"))
            if gap:
                holder, other = ("the target", label) if gap[2] else (label, "the target")
                return (f"interval {gap[1]} of run {gap[0]!r} is in {holder} but not in "
                        f"{other}{conflict}")
            columns = _compared(con, "interval", tables["interval"], ("run_id", "idx"))
            hit = _first_difference(
                con, columns, "s.run_id, t.idx", "_gpudb_src_interval AS s JOIN interval AS t "
                "ON t.run_id = s.run_id AND t.idx = CAST(s.idx AS INTEGER)", label)
            if hit:
                return f"interval {hit[0][1]} of run {hit[0][0]!r} differs: {hit[1]}{conflict}"
        finally:
            con.execute("DROP TABLE IF EXISTS _gpudb_shared")
    if "metric" in tables:
        hit = _first_difference(
            con, {"value": "DOUBLE"}, "s.run_id, t.idx, s.name", "_gpudb_src_metric AS s "
            "JOIN metric AS t ON t.run_id = s.run_id AND t.name = s.name AND "
            "t.idx IS NOT DISTINCT FROM CAST(s.idx AS INTEGER)", label)
        if hit:
            name = row_name("metric", dict(zip(("run_id", "idx", "name"), hit[0], strict=True)))
            return f"{name} differs: {hit[1]}{conflict}"
    return None
