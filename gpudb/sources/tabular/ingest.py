"""Ingest of measured data: CSV/Parquet files + a mapping -> whole-run `run` and `metric` rows.

Every file is read and validated before anything is written (a regular file; required columns
present; every name the mapping lists is a column of the file; numbers parse and are finite,
and times, frequencies and energies stay positive and finite after unit conversion; no two
metrics with one name; no kernel measured twice at one setting, unless the mapping's [rows]
repeats numbers them); the first problem raises :class:`IngestError` naming file, line (a
Parquet file's row) and column, with the count of every row that has it. The mapping's [rows]
where leaves rows out first (see gpudb.sources.tabular.mapping). All files of one call are then
written in one transaction: all or nothing. The report of each file (FileReport) says which of
its other columns became metrics, were dropped as text or as empty, or were ignored.

A CSV is read as the mapping's [file] section describes it (see read_file): a header row or
the mapping's column names, section-label lines filling a column, repeated header names
refused or numbered. The [columns] numbers given as a constant or a DuckDB expression (see
gpudb.sources.tabular.mapping) become columns of the file's table before validation (see
gpudb.sources.tabular.validate), so they pass the checks of any column; an expression is
evaluated like an [inputs] one (below), but a NULL or non-finite value stops the ingest naming
key, file and row.

Identity and idempotence:
- a file already ingested (same SHA-256) is skipped and reported;
- ``run_id`` is the MD5 of the measurement itself (source, GPU, kernel, policy, core/mem MHz,
  SM count, time, and power or energy as measured; numbers to 12 significant digits), so the
  same measurement arriving in two files (e.g. the profile and PTX exports of one V100
  campaign, whose power readings differ in the last float digit) is one run, which gains the
  metrics of both.

Validation and conversion run as SQL over the file's Arrow table registered in DuckDB, so
they are column-at-a-time and keep pace with DuckDB's own bulk insert (`gpudb bench ingest`).
The view names the columns by position (_c0, _c1, ...), so no column name (quotes, "", two
names that differ only in case, which DuckDB would take for one) can confuse the SQL.
The rows are written by gpudb.sources.write through gpudb.store.runs, the one writer of runs.

Model inputs ([inputs] of the mapping, see gpudb.sources.tabular.mapping): each is a column or a
DuckDB SQL expression over the file's columns, evaluated while the file is staged (so a bad one
writes nothing) on a separate in-memory DuckDB connection opened with external access disabled
and its
configuration locked: an expression cannot read or write files, load extensions or change
settings; it sees only the file's columns (as a table ``data``). There a column is a DOUBLE
when every non-empty cell is a finite number (or it is numeric in Parquet), otherwise text
(always text for [metrics] text columns); columns without a name or whose names differ only
in case cannot be used in expressions. An expression must bind (every column it names exists),
give one numeric value per row (no aggregate), and run without error; otherwise ingest stops
with one line naming the mapping key. Values are converted by the input's unit factor and
checked: none negative, fractions (l2_hit_rate, achieved_occupancy) at most 1; a value out of
range stops the ingest naming key, file and row. A value that is NULL or not finite (a
division by zero gives inf or NaN) is *not stored*: that run has no such metric, as for an
empty metric cell, and the report counts the runs that got each input
(FileReport.inputs). A row refused outright would lose its other measurements; the mapping
can still guard a division with CASE or NULLIF and decide itself. Inputs are stored as
whole-run metrics (idx NULL) under their canonical names; a canonical name that is also the
metric name of a file column is an error, unless the input is exactly that column with unit
factor 1 (e.g. ``achieved_occupancy = { column = "achieved_occupancy", unit = "fraction" }``),
in which case the one metric serves as both.

Here: :func:`ingest`, which takes each file one way, read (:mod:`gpudb.sources.tabular.read`)
-> validate (:mod:`gpudb.sources.tabular.validate`, with the expression sandbox of
:mod:`gpudb.sources.tabular.expressions`) -> convert to rows (:mod:`gpudb.sources.tabular.convert`),
and then hands the rows of every file to the one writer (:mod:`gpudb.sources.write`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from gpudb.sources.tabular.convert import convert
from gpudb.sources.tabular.expressions import expression_problem
from gpudb.sources.tabular.mapping import Mapping
from gpudb.sources.tabular.read import IngestError, check_regular, read_file
from gpudb.sources.tabular.validate import check_stored_gpu, validate_file
from gpudb.sources.write import Batch, Part, Report, file_sha256, write
from gpudb.store.db import first_row
from gpudb.store.runs import experiment_id


@dataclass
class FileReport(Report):
    """What ingest did with one file (gpudb ingest prints it)."""

    rows: int = 0
    runs_replaced: int = 0        # runs of its earlier ingest deleted (ingest --replace)
    # [inputs] name -> runs of the file that got a value (the others: NULL or not finite)
    inputs: dict[str, int] = field(default_factory=dict)
    # what became of the file's columns that are not the run's own (kernel, clocks, ...)
    metrics: list[str] = field(default_factory=list)   # became metrics
    text: list[str] = field(default_factory=list)      # dropped as text (not all numbers)
    empty: list[str] = field(default_factory=list)     # dropped, no value at all
    ignored: list[str] = field(default_factory=list)   # [metrics] ignore
    filtered: int = 0  # rows [rows] where left out
    # [rows] repeats = "number": kernel label -> most rows it has at one setting (numbered
    # label#1 ... label#n)
    repeats: dict[str, int] = field(default_factory=dict)

    def rows_summary(self) -> str:
        """'rows left out by [rows] where: 3; labels measured more than once at a setting,
        numbered in file order: a x2 (a#1..#2)' ('' when neither applies)."""
        parts = []
        if self.filtered:
            parts.append(f"rows left out by [rows] where: {self.filtered:,}")
        if self.repeats:
            parts.append("labels measured more than once at a setting, numbered in file order: "
                         + ", ".join(f"{label} x{n} ({label}#1..#{n})"
                                     for label, n in sorted(self.repeats.items())))
        return "; ".join(parts)

    def columns_summary(self) -> str:
        """'metrics: a, b; dropped as text: c; ignored: d' (groups without columns left out;
        a column without a name shown as "")."""
        groups = (("metrics", self.metrics), ("dropped as text", self.text),
                  ("dropped as empty", self.empty), ("ignored", self.ignored))
        return "; ".join(what + ": " + ", ".join(n or '""' for n in names)
                         for what, names in groups if names)

    def inputs_summary(self) -> str:
        """'blocks 300, l2_hit_rate 298 (2 not stored)' for the inputs of the mapping."""
        return ", ".join(f"{name} {n}" + (f" ({self.rows - n} not stored)" if n < self.rows
                                          else "") for name, n in self.inputs.items())


def ingest(con: duckdb.DuckDBPyConnection, files: list[str | Path], mapping: Mapping,
           experiment: str | None = None,
           progress: Callable[[str], None] | None = None,
           suite: str | None = None, replace: bool = False) -> list[FileReport]:
    """Validate every file, then write them all in one transaction (or nothing).

    experiment: name of the experiment the runs join (default: the mapping's [run] experiment,
    else the first file's stem). suite: the kernels' suite, kernel_id = '<suite>/<kernel>'
    (default: the mapping's [run] suite). progress: called with each file name as it is
    staged. Returns one report per file; files already ingested come back with
    `skipped_reason`, unless ``replace``: then the runs of the file's earlier ingest (and
    every row derived from them, gpudb.store.delete) are deleted in the transaction that
    writes the new ones, so a failed ingest leaves them.
    """
    if suite is not None:
        if not suite.strip() or "\x00" in suite:
            raise IngestError(f"suite {suite!r} must be a name (not empty, no NUL character)")
        mapping = dataclasses.replace(mapping, suite=suite)
    paths = [Path(f) for f in files]
    exprs = [(d.key, d.expr) for d in [*mapping.measures().values(), *mapping.inputs.values()]]
    for key, expr in [*exprs, ("[rows] where", mapping.where)]:
        problem = expression_problem(expr) if expr is not None else None
        if problem:  # before any file is read
            raise IngestError(f"{mapping.path}: {key}: {problem}")
    exp_name = experiment or mapping.experiment or paths[0].stem
    exp_id = experiment_id(exp_name)
    check_stored_gpu(con, mapping)
    now = first_row(con.execute("SELECT CAST(now() AS VARCHAR)"))[0]
    reports: list[FileReport] = []
    written: list[tuple[FileReport, Part]] = []
    seen: set[str] = set()
    replacing: list[str] = []
    try:
        for i, path in enumerate(paths):
            if progress:
                progress(str(path))
            report = FileReport(str(path))
            reports.append(report)
            check_regular(path)
            sha = file_sha256(path)
            report.sha256 = sha
            before = first_row(con.execute("SELECT CAST(ingested_at AS DATE) FROM ingest_file "
                                 "WHERE file_sha256 = ?", [sha]))
            if before and replace and sha not in seen:
                replacing.append(sha)
            elif before or sha in seen:
                report.skipped_reason = (f"already ingested on {before[0]} (--replace "
                                         "replaces its runs)" if before
                                         else "same content as an earlier file of this call")
                continue
            seen.add(sha)
            view = f"_gpudb_ingest_{i}"
            raw, lines = read_file(path, mapping)
            stage = validate_file(con, path, raw, lines, mapping, view)
            stage.sha256, stage.runs = sha, f"_gpudb_runs_{i}"
            written.append((report, convert(con, stage, view, exp_id, now)))
            report.rows = stage.table.num_rows
            report.inputs = {name: len(values) - values.null_count
                             for name, values in stage.inputs.items()}
            report.metrics, report.text = list(stage.metric_columns), stage.text
            report.empty, report.ignored = stage.empty, stage.ignored
            report.filtered, report.repeats = stage.filtered, stage.repeats
        if not written:
            return reports
        added = write(con, Batch(
            exp_name, mapping.description or f"measured data ingested with {mapping.path.name}",
            [part for _, part in written], now=now, replacing=replacing))
        for (report, _), done in zip(written, added, strict=True):
            report.record(done, report.rows)
            report.runs_replaced = done.replaced
    finally:
        for i in range(len(paths)):
            con.unregister(f"_gpudb_ingest_{i}")
            con.execute(f"DROP TABLE IF EXISTS _gpudb_runs_{i}")
    return reports
