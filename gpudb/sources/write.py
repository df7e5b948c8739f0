"""The one writer of the sources: what a source gives, stored through gpudb.store.runs in one
transaction (all or nothing).

Each source (:mod:`gpudb.sources.tabular`, :mod:`gpudb.sources.gpgpusim`,
:mod:`gpudb.sources.nvml`) reads and checks its input first, then hands this module a
:class:`Batch`: the experiment its runs join and, per input (a file, a log, a grid of
measurements), one :class:`Part` holding the rows it gives: its GPU and the P-states,
kernels, runs, intervals and metrics, and the ``ingest_file`` row that records a file. Rows
are Arrow tables or SQL over the connection (gpudb.store.runs.Rows). :func:`write` returns
per part what it added (:class:`Added`), which each source's report states.

In the transaction, in this order: the runs of the files a call replaces (``ingest
--replace``) and every row derived from them are deleted (gpudb.store.delete); the
experiment is added if missing; then part by part the GPU (its own P-states only with a new
GPU), the P-states seen, the kernels, the runs with their intervals, their metrics and the
``ingest_file`` row. A run stored before keeps its row and gains only the metrics it lacks
(the same measurement in two files is one run); the metrics of new runs go in as they are,
DuckDB's bulk path. The GPU, kernel and experiment rows only the replaced runs used go
afterwards, in a transaction of their own (gpudb.store.delete says why).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from gpudb.store.db import GpudbError, atomic, first_row, whoami
from gpudb.store.delete import Selection, delete_parents, delete_rows
from gpudb.store.runs import (
    Rows,
    ensure_experiment,
    insert_metrics,
    insert_missing,
    insert_runs,
)

# run_ids of a part's runs that the database held before the part was written
PRESENT = "_gpudb_present"


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's content: its ingest_file key, its runs' input_hash."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise GpudbError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return digest.hexdigest()


@dataclass(frozen=True)
class FileRecord:
    """The ``ingest_file`` row of an input file (its runs' ``input_hash`` is ``sha256``);
    the writer adds the counts, who, where, when and which gpudb."""

    sha256: str
    path: Path
    # the mapping's SHA-256 (ingest), the power report's or "none" (ingest-log)
    mapping_sha256: str
    rows: int  # rows (launches) the file gave


@dataclass
class Part:
    """What one input gives the writer."""

    runs: Rows
    kernels: Rows
    gpu: Rows | None = None
    gpu_pstates: Rows | None = None  # the GPU's own clocks: written only with a new GPU row
    pstates: Rows | None = None      # the clocks the runs were at
    intervals: Rows | None = None
    # metric rows (run_id, name, value[, idx]), or a function that builds them when the
    # part is written (a file's metric rows are built one file at a time, not all at once)
    metrics: Rows | Callable[[], Rows] | None = None
    file: FileRecord | None = None


@dataclass
class Batch:
    """What a call of a source gives: its experiment and parts, written together."""

    experiment: str
    description: str       # of the experiment, if it is new
    parts: list[Part]
    simulator: str | None = None  # experiment.simulator (ingest-log), for a new experiment
    # the call's timestamp as text, of a new experiment and the ingest_file rows (None: now())
    now: str | None = None
    # SHA-256s of files ingested before whose runs (and all derived from them) this replaces
    replacing: list[str] = field(default_factory=list)


@dataclass
class Added:
    """What :func:`write` added for one part."""

    runs: int = 0
    intervals: int = 0
    metrics: int = 0
    replaced: int = 0  # runs of the file's earlier ingest deleted (Batch.replacing)


@dataclass
class Report:
    """What a call did with one input file, the part of each source's report (ingest's
    FileReport, ingest-log's LogReport) that every source states: the runs and metric values
    the writer added and the runs the database held already; or why the file was skipped."""

    file: str
    runs_added: int = 0
    runs_present: int = 0
    metrics_added: int = 0
    skipped_reason: str | None = None
    sha256: str | None = None     # of the file's content: ingest_file's key, its runs' input_hash

    def record(self, added: Added, runs: int) -> None:
        """What the writer added of the file's ``runs`` runs."""
        self.runs_added, self.metrics_added = added.runs, added.metrics
        self.runs_present = runs - added.runs


def write(con: duckdb.DuckDBPyConnection, batch: Batch) -> list[Added]:
    """Write the batch in one transaction (see the module docstring); what each part added,
    in order."""
    # Row order in run and metric carries no meaning (readers sort), and letting DuckDB
    # insert out of order lets both threads write (DuckDB's advice for bulk loads).
    preserve = first_row(con.execute("SELECT current_setting('preserve_insertion_order')"))[0]
    con.execute("SET preserve_insertion_order = false")
    try:
        added, touched = _write_all(con, batch)
    finally:
        con.execute(f"SET preserve_insertion_order = {str(bool(preserve)).lower()}")
    if touched is not None:
        delete_parents(con, Selection(ingests=batch.replacing), touched)
    return added


def _write_all(con: duckdb.DuckDBPyConnection, batch: Batch
               ) -> tuple[list[Added], dict[str, list[str]] | None]:
    """The transaction of :func:`write`; also what the replaced runs touched (None: nothing
    was replaced)."""
    from gpudb.version import __version__

    user, host = whoami()
    added = [Added() for _ in batch.parts]
    touched = None
    with atomic(con):
        if batch.replacing:
            earlier = dict(con.execute(
                "SELECT input_hash, count(*) FROM run WHERE list_contains(?, input_hash) "
                "GROUP BY ALL", [batch.replacing]).fetchall())
            for part, done in zip(batch.parts, added, strict=True):
                done.replaced = earlier.get(part.file.sha256, 0) if part.file else 0
            _, touched = delete_rows(con, Selection(ingests=batch.replacing))
        exp_id = ensure_experiment(con, batch.experiment, batch.description,
                                   created_at=batch.now, simulator=batch.simulator)
        for part, done in zip(batch.parts, added, strict=True):
            if part.gpu is not None and insert_missing(con, "gpu", part.gpu) \
                    and part.gpu_pstates is not None:
                insert_missing(con, "pstate", part.gpu_pstates)
            if part.pstates is not None:
                insert_missing(con, "pstate", part.pstates)
            insert_missing(con, "kernel", part.kernels)
            some_present = _mark_present(con, part.runs)
            written = insert_runs(con, part.runs, part.intervals)
            done.runs, done.intervals = written.runs, written.intervals
            metrics = part.metrics() if callable(part.metrics) else part.metrics
            if metrics is not None:
                done.metrics = _write_metrics(con, metrics, some_present)
            if part.file is not None:
                con.execute(
                    "INSERT INTO ingest_file VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
                    "coalesce(CAST(? AS TIMESTAMPTZ), now()), ?)",
                    [part.file.sha256, part.file.path.name, part.file.mapping_sha256, exp_id,
                     part.file.rows, done.runs, done.metrics, user, host, batch.now,
                     __version__])
        con.execute(f"DROP TABLE IF EXISTS {PRESENT}")
    return added, touched


def _mark_present(con: duckdb.DuckDBPyConnection, runs: Rows) -> bool:
    """Keep the run_ids of ``runs`` the database holds already (usually none) as the temporary
    table PRESENT; whether there are any."""
    name = "_gpudb_part_runs"
    source = f"({runs})" if isinstance(runs, str) else name
    if not isinstance(runs, str):
        con.register(name, runs)
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {PRESENT} AS SELECT run_id FROM {source} "
                    "WHERE run_id IN (SELECT run_id FROM run)")
    finally:
        if not isinstance(runs, str):
            _unregister(con, name)
    return bool(first_row(con.execute(f"SELECT count(*) FROM {PRESENT}"))[0])


def _write_metrics(con: duckdb.DuckDBPyConnection, rows: Rows, some_present: bool) -> int:
    """Insert the metric rows; returns the rows added. Those of new runs go in as they are;
    of runs stored before (``some_present``), only those whose (run_id, idx, name) is not
    stored yet."""
    if not some_present:
        return insert_metrics(con, rows, skip_stored=False)
    name = "_gpudb_part_metrics"
    source = f"({rows})" if isinstance(rows, str) else name
    if not isinstance(rows, str):
        con.register(name, rows)
    try:
        new = f"SELECT * FROM {source} WHERE run_id NOT IN (SELECT run_id FROM {PRESENT})"
        stored = f"SELECT * FROM {source} WHERE run_id IN (SELECT run_id FROM {PRESENT})"
        return (insert_metrics(con, new, skip_stored=False)
                + insert_metrics(con, stored, skip_stored=True))
    finally:
        if not isinstance(rows, str):
            _unregister(con, name)


def _unregister(con: duckdb.DuckDBPyConnection, name: str) -> None:
    # After a failed statement the transaction refuses even this until the caller's
    # ROLLBACK (which removes the registration too); the failure is what counts.
    with suppress(duckdb.Error):
        con.unregister(name)

