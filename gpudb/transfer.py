"""Moving runs between databases: Parquet export, and merge from another .duckdb file or export.

A merge source is opened read-only with ``trusted=False`` (external access off, configuration
locked) because a teammate's file may hold views or macros that read or write files. Its rows
are written through gpudb.runs like every other run: runs are matched by ``run_id`` (a content
hash), so merging the same source twice adds nothing and a run already here is never changed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from gpudb.db import GpudbError, atomic, connect, first_row, migrations, schema_version
from gpudb.runs import insert_missing, insert_runs

# Tables in dependency order: referenced rows first.
TABLES = ("gpu", "pstate", "kernel", "experiment", "ingest_file", "run", "interval", "metric")


def export(con: duckdb.DuckDBPyConnection, directory: str | Path) -> dict[str, int]:
    """Write every table (core, control results, materialised predictions, schema
    bookkeeping) to DIRECTORY/<table>.parquet; returns rows per table.

    The directory must not exist yet; files are written to a temporary sibling first and
    renamed at the end, so a failed export leaves nothing behind.
    """
    target = Path(directory)
    if target.exists():
        raise GpudbError(f"{target} already exists; export into a new directory")
    parent = target.resolve().parent
    if not parent.is_dir():
        raise GpudbError(f"{parent} is not a directory")
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=parent))
    counts = {}
    tables = [r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND NOT temporary ORDER BY table_name").fetchall()]
    try:
        for table in tables:
            path = staging / f"{table}.parquet"
            con.execute(f"COPY (SELECT * FROM {table}) TO '{path}' (FORMAT parquet)")
            counts[table] = first_row(con.execute(f"SELECT count(*) FROM {table}"))[0]
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return counts


@dataclass
class MergeReport:
    source: str
    runs_added: int = 0
    runs_skipped: int = 0
    rows_added: dict[str, int] = field(default_factory=dict)


def _read_source(source: Path) -> dict[str, pa.Table]:
    """The source's tables as Arrow tables (a locked-down database, or a Parquet export)."""
    if source.is_dir():
        missing = [t for t in ("run", "gpudb_migration") if not (source / f"{t}.parquet").exists()]
        if missing:
            raise GpudbError(f"{source} is not a gpudb export (no {missing[0]}.parquet)")
        try:
            versions = pq.read_table(source / "gpudb_migration.parquet").column("version")
            newest = max(versions.to_pylist(), default=0)
            if newest > schema_version():
                raise GpudbError(f"{source} was exported by a newer gpudb (schema {newest}); "
                                 "upgrade gpudb to merge it")
            tables = {t: pq.read_table(source / f"{t}.parquet") for t in TABLES
                      if (source / f"{t}.parquet").exists()}
            tables["run"] = _upgrade_runs(tables["run"], newest)
            return tables
        except (OSError, pa.ArrowException) as exc:
            raise GpudbError(f"cannot read export {source}: {str(exc).splitlines()[0]}") from None
    if not source.exists():
        raise GpudbError(f"no database or export at {source}")
    other = connect(source, read_only=True, trusted=False)
    try:
        return {t: other.sql(f"SELECT * FROM {t}").to_arrow_table() for t in TABLES}
    except duckdb.Error as exc:
        raise GpudbError(f"cannot read {source}: {str(exc).splitlines()[0]}") from None
    finally:
        other.close()


# Migrations that rewrite run rows (not only add columns), which an export taken before them
# needs replayed on its run table: 0006 moves closed-loop controllers out of the policy string.
_RUN_REWRITES = (6,)


def _upgrade_runs(runs: pa.Table, exported_version: int) -> pa.Table:
    """An older export's run table as the migrations it missed would have left it, by running
    those migrations' SQL on it (so the rewrite is written once, in schema/)."""
    pending = [m for m in migrations()
               if m.version in _RUN_REWRITES and m.version > exported_version]
    if not pending:
        return runs
    scratch = duckdb.connect(config={"enable_external_access": False})
    try:
        scratch.register("_source_run", runs)
        scratch.execute("CREATE TABLE run AS SELECT * FROM _source_run")
        for migration in pending:
            scratch.execute(migration.sql)
        return scratch.sql("SELECT * FROM run").to_arrow_table()
    finally:
        scratch.close()


def merge(con: duckdb.DuckDBPyConnection, source: str | Path) -> MergeReport:
    """Copy into `con` the runs of another gpudb file or export that it lacks (by run_id),
    with their intervals, the metrics it lacks and the GPU, kernel, experiment and provenance
    rows they refer to; all in one transaction."""
    source = Path(source)
    tables = _read_source(source)
    report = MergeReport(str(source))
    run_ids = tables["run"].column("run_id") if "run" in tables else pa.array([], pa.string())
    con.register("_gpudb_src_run_ids", pa.table({"run_id": run_ids}))
    present = first_row(con.execute(
        "SELECT count(DISTINCT s.run_id) FROM _gpudb_src_run_ids AS s "
        "JOIN run AS r ON r.run_id = s.run_id"))[0]
    try:
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
        raise GpudbError(f"merge of {source} failed: {str(exc).splitlines()[0]}") from None
    finally:
        con.unregister("_gpudb_src_run_ids")
    report.runs_added = report.rows_added.get("run", 0)
    report.runs_skipped = present
    return report
