"""Ingest of measured data: CSV/Parquet files + a mapping -> whole-run `run` and `metric` rows.

Every file is read and validated before anything is written (a regular file; required columns
present; every name the mapping lists is a column of the file; numbers parse and are finite,
and times, frequencies and energies stay positive and finite after unit conversion; no two
metrics with one name; no kernel measured twice at one setting); the first problem raises
:class:`IngestError` naming file, row and column. All files of one call are then written in one
transaction: all or nothing. The report of each file (FileReport) says which of its other
columns became metrics, were dropped as text or as empty, or were ignored.

A CSV is read as the mapping's [file] section describes it (see read_file): a header row or
the mapping's column names, section-label lines filling a column, repeated header names
refused or numbered. The [columns] numbers given as a constant or a DuckDB expression (see
gpudb.sources.mapping) become columns of the file's table before validation (see _computed), so they
pass the checks of any column; an expression is evaluated like an [inputs] one (below), but a
NULL or non-finite value stops the ingest naming key, file and row.

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
The rows are written through gpudb.store.runs, the one writer of runs.

Model inputs ([inputs] of the mapping, see gpudb.sources.mapping): each is a column or a DuckDB SQL
expression over the file's columns, evaluated while the file is staged (so a bad one writes
nothing) on a separate in-memory DuckDB connection opened with external access disabled and its
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
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
import stat
import threading
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from gpudb.sources.mapping import (
    FRACTION_INPUTS,
    GPU_COLUMNS,
    Derived,
    Mapping,
    file_kind,
    gpu_column_key,
    names_gpu,
)
from gpudb.store.db import GpudbError, atomic, first_row, whoami
from gpudb.store.runs import (
    ensure_experiment,
    experiment_id,
    insert_metrics,
    insert_missing,
    insert_runs,
)

ROW = "_gpudb_row"
_INT64_MAX = 2**63 - 1
_INT32_MAX = 2**31 - 1


_COLUMNS_PER_QUERY = 64  # columns checked per validation query
# Values (rows x columns) ingest reads from one file: it holds the file's table and its
# metric rows in memory, about 55 bytes a value (1 M rows x 25 columns of Parquet: 1.34 GB
# peak), so a file stays under 2 GB.
MAX_CELLS = 25_000_000


class IngestError(GpudbError):
    """Bad input file; the message names file, row and column. Nothing was written."""


def sql_str(text: str) -> str:
    """Quote an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise IngestError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return digest.hexdigest()


def _check_regular(path: Path) -> None:
    """Refuse a path that is missing or not a regular file (a FIFO would hang the read, a
    device such as /dev/zero never ends) before anything opens it."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise IngestError(f"{path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise IngestError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}"
                          ) from None
    if not stat.S_ISREG(info.st_mode):
        raise IngestError(f"{path}: is {file_kind(info.st_mode)}, not a CSV or Parquet file")


@dataclass
class FileReport:
    file: str
    rows: int = 0
    runs_added: int = 0
    runs_present: int = 0
    metrics_added: int = 0
    skipped_reason: str | None = None
    # [inputs] name -> runs of the file that got a value (the others: NULL or not finite)
    inputs: dict[str, int] = field(default_factory=dict)
    # what became of the file's columns that are not the run's own (kernel, clocks, ...)
    metrics: list[str] = field(default_factory=list)   # became metrics
    text: list[str] = field(default_factory=list)      # dropped as text (not all numbers)
    empty: list[str] = field(default_factory=list)     # dropped, no value at all
    ignored: list[str] = field(default_factory=list)   # [metrics] ignore

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


@dataclass
class _Staged:
    path: Path
    sha256: str
    table: pa.Table
    metric_columns: list[str]
    # the mapping as this file's table holds it: [columns] constants and expressions are
    # columns of the table (see _computed)
    mapping: Mapping
    lines: np.ndarray | None  # the file line of each row (1-based); None for Parquet
    runs: str = ""  # temporary table of the file's run rows (see _stage_runs)
    # `run` column -> SQL literal, for the columns equal in every run of the file
    constants: dict[str, str] = field(default_factory=dict)
    # file column name -> its name in the registered view (positional: _c0, _c1, ...)
    sql: dict[str, str] = field(default_factory=dict)
    # [inputs] name -> float64 values in file order (NULL: not stored)
    inputs: dict[str, pa.Array] = field(default_factory=dict)
    # inputs that are a metric column already (same name, same values): written once
    inputs_as_metric: frozenset[str] = frozenset()
    # columns that are not metrics: not all numbers, wholly empty, [metrics] ignore
    text: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def read_file(path: Path, mapping: Mapping) -> tuple[pa.Table, np.ndarray | None]:
    """A CSV (every column as text, empty cells NULL) or Parquet file as an Arrow table, and
    the line of each row in a CSV file (1-based; None for Parquet).

    The mapping's [file] section says how a CSV is laid out: ``header`` gives the column names
    of a file without a header row; with ``labels``, a line holding one non-numeric field is a
    section label, not data, and fills the column ``labels`` names for the lines that follow
    it. A header naming a column twice is refused unless ``duplicates = "number"``, which
    reads the repeats as ``name.1``, ``name.2``, ... (as pandas names them).
    """
    suffix = path.suffix.lower()
    try:
        _check_size(path, mapping, suffix == ".parquet")
        if suffix == ".parquet":
            if mapping.header is not None or mapping.labels is not None:
                raise IngestError(f"{path}: [file] header and labels of {mapping.path} "
                                  "describe a CSV file, and this is Parquet")
            table = pq.read_table(path)
            return table.rename_columns(_numbered(path, mapping, table.column_names)), None
        if mapping.labels is not None:
            return _read_labelled(path, mapping)
        if mapping.header is not None:
            names = list(mapping.header)
        else:
            with open(path, "rb") as handle:
                header = handle.readline().decode("utf-8-sig").rstrip("\r\n")
            names = next(csv.reader([header]), []) if header else []
        table = pa_csv.read_csv(path, read_options=pa_csv.ReadOptions(
            column_names=mapping.header), convert_options=_text_columns(names))
        first = 1 if mapping.header is not None else 2
        return _as_text(path, mapping, table), np.arange(first, table.num_rows + first)
    except IngestError:
        raise
    except FileNotFoundError:
        raise IngestError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, csv.Error, pa.ArrowException) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise IngestError(f"{path}: cannot read as {'Parquet' if suffix == '.parquet' else 'CSV'}:"
                          f" {detail}") from None


def _check_size(path: Path, mapping: Mapping, parquet: bool) -> None:
    """Refuse a file of more than MAX_CELLS values (rows x columns) before reading it: ingest
    holds a file's table, and its metric rows, in memory, and a Parquet file compresses
    without bound (6.6 MB held 600 M metric values, 8.3 GB read). The rows of a CSV are its
    lines (a quoted line break counts twice: an overestimate), counted in blocks."""
    if parquet:
        meta = pq.ParquetFile(path).metadata
        rows, columns = meta.num_rows, meta.num_columns
    else:
        lines, last = 0, b""
        with open(path, "rb") as handle:
            header = handle.readline(1 << 26)  # the column count (a 64 MB header at most)
            handle.seek(0)
            while block := handle.read(1 << 20):
                lines += block.count(b"\n")
                last = block
        lines += bool(last) and not last.endswith(b"\n")
        if mapping.header is not None:
            rows, columns = lines, len(mapping.header)
        else:
            names = next(csv.reader([header.decode("utf-8-sig", "replace").rstrip("\r\n")]),
                         [])
            rows, columns = max(lines - 1, 0), max(len(names), 1)
    if rows * columns > MAX_CELLS:
        raise IngestError(f"{path}: {rows:,} rows x {columns:,} columns is more than the "
                          f"{MAX_CELLS:,} values ingest reads from one file (it holds them "
                          "in memory): split the file")


def _text_columns(names: list[str]) -> pa_csv.ConvertOptions:
    return pa_csv.ConvertOptions(column_types={name: pa.string() for name in names},
                                 strings_can_be_null=True)


def _as_text(path: Path, mapping: Mapping, table: pa.Table) -> pa.Table:
    """Every column as text (a header Python's csv module splits differently from Arrow's
    leaves typed columns), repeated names refused or numbered."""
    return pa.table([c if pa.types.is_string(c.type) else c.cast(pa.string())
                     for c in table.columns],
                    names=_numbered(path, mapping, table.column_names))


def _numbered(path: Path, mapping: Mapping, names: list[str]) -> list[str]:
    """The column names with repeats refused, or numbered name.1, name.2, ... where the
    mapping says ``[file] duplicates = "number"``. Refused rather than dropped: the repeat
    may hold another measurement (a second replay pass of one counter) the mapping must
    place."""
    counts = Counter(names)
    twice = [n for n in counts if counts[n] > 1]
    if not twice:
        return names
    if mapping.duplicates != "number":
        raise IngestError(f"{path}: the header names {', '.join(map(repr, twice))} more than "
                          f"once; set [file] duplicates = \"number\" in {mapping.path} to read "
                          "the repeats as name.1, name.2, ...")
    seen: Counter = Counter()
    numbered = []
    for name in names:
        numbered.append(name if not seen[name] else f"{name}.{seen[name]}")
        seen[name] += 1
    clash = next(((n, m) for n, m in zip(names, numbered, strict=True)
                  if n != m and m in counts), None)
    if clash:
        raise IngestError(f"{path}: numbering the repeated {clash[0]!r} gives {clash[1]!r}, "
                          "which is already a column")
    return numbered


def _read_labelled(path: Path, mapping: Mapping) -> tuple[pa.Table, np.ndarray]:
    """A CSV file with section-label lines (see read_file): the data lines parsed as Arrow
    parses any CSV, plus the label column. Data before the first label has no kernel and is
    refused."""
    data, labels, lines = io.StringIO(), [], []
    writer = csv.writer(data, lineterminator="\n")
    names = list(mapping.header) if mapping.header is not None else None
    label = None
    with open(path, encoding="utf-8-sig", newline="") as handle:
        rows = csv.reader(handle)
        for row in rows:
            if not row:
                continue  # a blank line
            if names is None:
                names = row
            elif len(row) == 1 and row[0].strip() and not re.fullmatch(_NUMBER, row[0]):
                label = row[0].strip()
            elif label is None:
                raise IngestError(f"{path}: line {rows.line_num} is data before the first "
                                  f"section label ([file] labels of {mapping.path})")
            else:
                writer.writerow(row)
                labels.append(label)
                lines.append(rows.line_num)
    if names is None:
        names = []
    if lines:
        table = pa_csv.read_csv(io.BytesIO(data.getvalue().encode()),
                                read_options=pa_csv.ReadOptions(column_names=names),
                                convert_options=_text_columns(names))
    else:
        table = pa.table([pa.array([], pa.string()) for _ in names], names=names)
    table = _as_text(path, mapping, table)
    if mapping.labels in table.column_names:
        raise IngestError(f"{path}: has a column {mapping.labels!r}, the column [file] labels "
                          f"of {mapping.path} fills with the section labels")
    return (table.append_column(mapping.labels, pa.array(labels, pa.string())),
            np.array(lines, dtype=np.int64))


def _line(lines: np.ndarray | None, row: int) -> str:
    """' (line N)' of a 1-based row of a CSV file; '' for Parquet."""
    return f" (line {lines[row - 1]})" if lines is not None else ""


def _where(path: Path, lines: np.ndarray | None, row: int, column: str) -> str:
    return f"{path}: row {row}{_line(lines, row)}, column {column!r}"


_SPACE = ' \t\r\n\v\f'


def _trim(column: str) -> str:
    """SQL: the (view) column as text without white space at either end (tabs included).
    trim with a set of characters costs several times a regular expression that finds
    nothing to trim, the usual case."""
    text = f"{column}::VARCHAR"
    return (f"CASE WHEN regexp_matches({text}, '^[{_SPACE}]|[{_SPACE}]$') "
            f"THEN trim({text}, '{_SPACE}') ELSE {text} END")


def _blank(column: str) -> str:
    """SQL: the (view) column holds only white space, i.e. its _trim is '' (the test does not
    build the trimmed text, so costs a fraction of it)."""
    return f"(NOT regexp_matches({column}::VARCHAR, '[^{_SPACE}]'))"


# A number written as text: DuckDB's cast alone also takes '+-2' (as -2) and '1_000'.
_NUMBER = r"\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\s*"


def _bad_number(column: str, typed: bool) -> str:
    """SQL: the (view) column holds a value that is not a finite number."""
    value = f"TRY_CAST({column} AS DOUBLE)"
    text = "" if typed else f"NOT regexp_full_match({column}, '{_NUMBER}') OR "
    return f"({column} IS NOT NULL AND ({text}{value} IS NULL OR NOT isfinite({value})))"


def _count_numbers(con: duckdb.DuckDBPyConnection, table: pa.Table, columns: list[str],
                   typed: set[str], view: str) -> list[int]:
    """For each of ``columns`` of ``table`` (positional names), how many values are not a
    finite number (:func:`_bad_number`) and how many are not NULL, flat: [bad, present, ...].

    In batches of columns, each over a view of its own: one query over a thousand columns
    takes DuckDB time and memory that grow faster than the columns, and a query over the
    whole file pays for all of its columns (issue 31: 1,000 columns of 4 rows took 2.3 GB
    and 11 s). A batch's text columns are checked stacked into one column, so the number
    pattern is compiled once per batch, not once per column."""
    counts: dict[str, tuple[int, int]] = {}
    for start in range(0, len(columns), _COLUMNS_PER_QUERY):
        batch = columns[start:start + _COLUMNS_PER_QUERY]
        numbers = [c for c in batch if c in typed]
        if numbers:
            con.register(view, table.select(numbers))
            row = first_row(con.execute("SELECT " + ", ".join(
                f"count(*) FILTER (WHERE {_bad_number(c, True)}), count({c})"
                for c in numbers) + f" FROM {view}"))
            counts.update({c: (row[2 * i], row[2 * i + 1]) for i, c in enumerate(numbers)})
        text = [c for c in batch if c not in typed]
        if text:
            values = pa.chunked_array([chunk.cast(pa.large_string()) for c in text
                                       for chunk in table.column(c).chunks],
                                      type=pa.large_string())
            which = np.repeat(np.arange(len(text), dtype=np.int32), table.num_rows)
            con.register(view, pa.table({"k": which, "v": values}))
            for k, bad, present in con.execute(
                    f"SELECT k, count(*) FILTER (WHERE {_bad_number('v', False)}), count(v) "
                    f"FROM {view} GROUP BY k").fetchall():
                counts[text[k]] = (bad, present)
        con.unregister(view)
    return [n for c in columns for n in counts[c]]


def _check_names(path: Path, mapping: Mapping, names: list[str]) -> None:
    """The file's column names (each once: read_file refuses or numbers repeats) against the
    mapping: every name the mapping lists present, and no empty name that would become a
    metric."""
    missing = [c for c in sorted(mapping.mapped_columns()) if c not in names]
    if missing:
        raise IngestError(f"{path}: column {missing[0]!r} named in {mapping.path} is missing "
                          f"(file has {', '.join(repr(c) for c in names)})")
    for key, listed in (("ignore", mapping.ignore), ("text", mapping.text),
                        ("rename", mapping.rename)):
        for column in sorted(listed):
            if column not in names:
                raise IngestError(f"{mapping.path}: [metrics] {key} names column {column!r}, "
                                  f"which {path} does not have")
    if "" in names and "" not in mapping.ignore:
        raise IngestError(f"{path}: column {names.index('') + 1} has no name; list \"\" in "
                          f"[metrics] ignore of {mapping.path} to leave it out")


_INDEX = re.compile(r"\s*\d+\s*")  # a device index (nvidia-smi's 'index'), not a name


def _check_file_gpu(path: Path, lines: np.ndarray | None, mapping: Mapping,
                    raw: pa.Table) -> None:
    """Where the file says which GPU it measured (the [gpu] column of the mapping, or a
    column named like gpudb.sources.mapping.GPU_COLUMNS), every value must name the mapping's GPU
    (gpudb.sources.mapping.names_gpu): a mapping of another GPU would store the file's runs under
    the wrong gpu_id. A column found by its name whose values are all whole numbers is a device
    index, not a name, and is left alone."""
    gpu = mapping.gpu
    named = gpu.get("column")
    if named is not None and named not in raw.column_names:
        raise IngestError(f"{path}: column {named!r} ([gpu] column of {mapping.path}) is "
                          "missing")
    for column in raw.column_names:
        if column != named and (column in mapping.kernel
                                or gpu_column_key(column) not in GPU_COLUMNS):
            continue
        try:
            text = pc.utf8_trim_whitespace(pc.cast(raw.column(column), pa.string()))
        except pa.ArrowException:
            continue  # not text: names nothing
        values = [v for v in pc.unique(text).to_pylist() if v]
        if column != named and all(_INDEX.fullmatch(v) for v in values):
            continue
        for value in values:
            if not names_gpu(value, gpu):
                row = pc.index(text, value).as_py() + 1
                shown = value if len(value) <= 80 else value[:77] + "..."
                raise IngestError(
                    f"{_where(path, lines, row, column)}: the file measured {shown!r}, which "
                    f"is not the GPU of {mapping.path} ([gpu] {gpu['gpu_id']!r}, "
                    f"{gpu['name']!r}): use that GPU's mapping, or a [gpu] naming it")


def _normalise(path: Path, lines: np.ndarray | None, table: pa.Table, required: set[str]
               ) -> pa.Table:
    """Columns as types the SQL checks handle: numbers (int, float) and text. Dictionaries
    are decoded, decimals and half floats widened, other types (booleans, dates, binary)
    taken as text; a column that cannot be text is an error where the mapping needs it and
    not a metric otherwise. Unsigned 64-bit values above the int64 range (often a wrapped -1
    meaning 'not available') are refused."""
    names, columns = [], []
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type
        try:
            if pa.types.is_dictionary(kind):
                column = column.cast(kind.value_type)
                kind = column.type
            if pa.types.is_decimal(kind) or pa.types.is_float16(kind):
                column = pc.cast(column, pa.float64(), safe=False)
            elif pa.types.is_uint64(kind):
                over = pc.index(pc.greater(column, pa.scalar(_INT64_MAX, pa.uint64())), True)
                if over.as_py() >= 0:
                    row = over.as_py() + 1
                    raise IngestError(f"{_where(path, lines, row, name)}: "
                                      f"{column[row - 1].as_py()} is beyond the int64 range")
            elif not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                      or pa.types.is_string(kind) or pa.types.is_large_string(kind)
                      or pa.types.is_null(kind)):
                column = column.cast(pa.string())
        except pa.ArrowException:
            if name in required:
                raise IngestError(f"{path}: column {name!r} holds {kind} values, which are "
                                  "neither numbers nor text") from None
            continue  # not a metric
        names.append(name)
        columns.append(column)
    return pa.table(columns, names=names)


def _stage(con: duckdb.DuckDBPyConnection, path: Path, mapping: Mapping, view: str) -> _Staged:
    """Read and validate one file; register it as `view` (the columns gpudb reads, under
    positional names, see _Staged.sql) with a 1-based row column."""
    raw, lines = read_file(path, mapping)
    if raw.num_rows == 0:
        raise IngestError(f"{path}: no data rows")
    _check_names(path, mapping, raw.column_names)
    _check_file_gpu(path, lines, mapping, raw)
    mapping, full = _computed(path, lines, mapping, raw)
    mapped = mapping.mapped_columns()
    candidates = {c for c in raw.column_names if c not in mapped
                  and c not in mapping.ignore and c not in mapping.text}
    table = _normalise(path, lines, full.select([c for c in full.column_names
                                                  if c in mapped or c in candidates]), mapped)
    sql = {c: f"_c{i}" for i, c in enumerate(table.column_names)}
    positional = table.rename_columns(list(sql.values()))
    # The view holds the mapped columns only: every query pays for each column of the table
    # it reads from, so one over all 10,000 columns of a wide file took seconds; the metric
    # columns are checked and cast in batches of their own (_count_numbers, _metric_rows).
    con.register(view, positional.select([sql[c] for c in table.column_names if c in mapped])
                 .append_column(ROW, pa.array(np.arange(1, table.num_rows + 1,
                                                        dtype=np.int64))))

    numeric = [m.column for m in mapping.measures().values()]
    typed = {f.name for f in table.schema if _is_number_type(f)}
    required = mapping.kernel + tuple(numeric)
    # One scan finds the first empty cell of every required column.
    empty = first_row(con.execute("SELECT " + ", ".join(
        f"min({ROW}) FILTER (WHERE {sql[c]} IS NULL"
        + ("" if c in typed else f" OR {_blank(sql[c])}") + ")" for c in required)
        + f" FROM {view}"))
    for column, row in zip(required, empty, strict=True):
        if row is not None:
            raise IngestError(f"{_where(path, lines, row, column)} is empty")

    # Every candidate metric column: numeric in Parquet, or text that parses everywhere.
    to_check = numeric + [c for c in table.column_names if c in candidates]
    counts = _count_numbers(con, positional, [sql[c] for c in to_check],
                            {sql[c] for c in typed}, f"{view}_columns")
    metric_columns, empty_columns = [], []
    for i, column in enumerate(to_check):
        bad, present = counts[2 * i], counts[2 * i + 1]
        is_required = i < len(numeric)
        if not is_required and present == 0:
            empty_columns.append(column)
            continue
        if not is_required and bad == present and column not in typed:
            continue  # wholly non-numeric: text, not a metric
        if bad:
            one = f"{view}_bad"
            con.register(one, pa.table({"v": table.column(column), ROW: pa.array(
                np.arange(1, table.num_rows + 1, dtype=np.int64))}))
            try:
                row, value = first_row(con.execute(
                    f"SELECT {ROW}, v::VARCHAR FROM {one} WHERE "
                    f"{_bad_number('v', column in typed)} ORDER BY {ROW} LIMIT 1"))
            finally:
                con.unregister(one)
            raise IngestError(f"{_where(path, lines, row, column)}: {value!r} is not a finite "
                              "number")
        if not is_required:
            metric_columns.append(column)
    by_name: dict[str, str] = {}
    for column in metric_columns:
        name = mapping.metric_name(column)
        if name in by_name:
            raise IngestError(f"{path}: columns {by_name[name]!r} and {column!r} would both be "
                              f"metric {name!r} ([metrics] rename/prefix of {mapping.path})")
        by_name[name] = column
    inputs, as_metric = _stage_inputs(path, lines, mapping, raw, by_name)

    positive = [mapping.core_mhz, mapping.mem_mhz, mapping.time]
    if mapping.n_sm is not None:
        positive.append(mapping.n_sm)
    checks = [(m.column, "> 0", "must be positive") for m in positive]
    checks += [(m.column, ">= 0", "must not be negative")
               for m in (mapping.power, mapping.energy) if m is not None]
    first_bad = first_row(con.execute("SELECT " + ", ".join(
        f"min({ROW}) FILTER (WHERE NOT (TRY_CAST({sql[c]} AS DOUBLE) {test}))"
        for c, test, _ in checks) + f" FROM {view}"))
    for (column, _, message), row in zip(checks, first_bad, strict=True):
        if row is not None:
            value = first_row(con.execute(
                f"SELECT {sql[column]}::VARCHAR FROM {view} WHERE {ROW} = ?", [row]))[0]
            raise IngestError(f"{_where(path, lines, row, column)}: {value!r} {message}")
    if mapping.n_sm is not None:
        n_sm = f"TRY_CAST({sql[mapping.n_sm.column]} AS DOUBLE)"
        hit = first_row(con.execute(
            f"SELECT {ROW}, {sql[mapping.n_sm.column]}::VARCHAR FROM {view} WHERE "
            f"{n_sm} % 1 <> 0 OR {n_sm} > {_INT32_MAX} ORDER BY {ROW} LIMIT 1"))
        if hit:
            raise IngestError(f"{_where(path, lines, hit[0], mapping.n_sm.column)}: {hit[1]!r} "
                              "is not a whole number of SMs")

    kept = set(metric_columns) | set(empty_columns)  # sets: 10,000 columns ask each
    return _Staged(path, "", table, metric_columns, mapping, lines, sql=sql, inputs=inputs,
                   inputs_as_metric=as_metric,
                   text=[c for c in raw.column_names if c in mapping.text or (
                       c in candidates and c not in kept)],
                   empty=empty_columns,
                   ignored=[c for c in raw.column_names if c in mapping.ignore])


def _computed(path: Path, lines: np.ndarray | None, mapping: Mapping, raw: pa.Table
              ) -> tuple[Mapping, pa.Table]:
    """The [columns] numbers the mapping gives as a constant or an expression, added to the
    file's table as columns named by their key ("[columns] time"), in the mapping's unit; and
    the mapping reading them from there, so that they are checked, converted and hashed like
    any column. An expression sees only the file's own columns (not another [columns] number)
    and must give a finite number on every row: a run without its time or clock cannot be
    stored, so unlike [inputs] a NULL stops the ingest."""
    computed = {key: m for key, m in mapping.measures().items() if m.column is None}
    if not computed:
        return mapping, raw
    table = raw
    evaluates = any(m.expr is not None for m in computed.values())
    with Expressions(path, mapping, raw) if evaluates else nullcontext() as exprs:
        for m in computed.values():
            if m.key in raw.column_names:
                raise IngestError(f"{path}: has a column named {m.key!r}, the name ingest "
                                  f"gives the value of {m.key} of {mapping.path}")
            if m.value is not None:
                values = pa.array(np.full(raw.num_rows, m.value))
            else:
                values = exprs.evaluate(replace(m, factor=1.0))
                row = pc.index(pc.is_null(values), True).as_py() + 1
                if row:
                    raise IngestError(f"{mapping.path}: {m.key} expr gives no finite number "
                                      f"for row {row}{_line(lines, row)} of {path}")
            table = table.append_column(m.key, values)
    return replace(mapping, **{key: replace(m, column=m.key, expr=None, value=None)
                               for key, m in computed.items()}), table


def _stage_inputs(path: Path, lines: np.ndarray | None, mapping: Mapping, raw: pa.Table,
                  metrics: dict[str, str]
                  ) -> tuple[dict[str, pa.Array], frozenset[str]]:
    """Evaluate the mapping's [inputs] over the file (see the module docstring): their values
    in file order, and the inputs that are the file's metric column of the same name.
    `metrics` maps the file's metric names to their columns."""
    if not mapping.inputs:
        return {}, frozenset()
    as_metric = set()
    for name, derived in mapping.inputs.items():
        column = metrics.get(name)
        if column is None:
            continue
        if derived.column == column and derived.factor == 1.0:
            as_metric.add(name)
            continue
        raise IngestError(f"{mapping.path}: [inputs] {name} would be stored under the name of "
                          f"metric {name!r}, which column {column!r} of {path} already is; "
                          "rename the column ([metrics] rename) or ignore it")
    values = {}
    with Expressions(path, mapping, raw) as exprs:
        for name, derived in mapping.inputs.items():
            values[name] = exprs.evaluate(derived)
    for name, array in values.items():
        bad = pc.less(array, 0.0)
        reason = "must not be negative"
        if name in FRACTION_INPUTS:
            bad = pc.or_(bad, pc.greater(array, 1.0))
            reason = "must be a fraction in [0, 1]"
        index = pc.index(bad, True).as_py()
        if index >= 0:
            derived, value = mapping.inputs[name], array[index].as_py()
            unit = ("" if derived.factor == 1.0
                    else f" ({value / derived.factor!r} {derived.unit})")
            raise IngestError(f"{mapping.path}: [inputs] {name} is {value!r}{unit} for row "
                              f"{index + 1}{_line(lines, index + 1)} of {path}: {reason}")
    return values, frozenset(as_metric)


# Bounds of a mapping expression (issue 31): DuckDB's memory limit and interrupt do not reach
# inside one scalar function (repeat('x', 2000000000) took 29 s and 3.9 GB to interrupt,
# list_sum(range(1e8)) 59 s and 7 GB), so what an expression may call is bounded up front:
# functions whose result grows with the data they are given, not with a number in the
# expression; no query (a scalar subquery can scan range(1e12)); at most this many
# characters. The evaluation itself is interrupted after EXPR_TIME_BOUND_S.
EXPR_MAX_CHARS = 2_000
EXPR_TIME_BOUND_S = 60.0
EXPR_FUNCTIONS = frozenset({
    "abs", "sqrt", "cbrt", "ln", "log", "log2", "log10", "exp", "pow", "power", "round",
    "floor", "ceil", "ceiling", "trunc", "sign", "mod", "least", "greatest", "coalesce",
    "nullif", "ifnull", "if", "isnan", "isinf", "isfinite", "sin", "cos", "tan", "length",
    "strlen", "lower", "upper", "trim", "ltrim", "rtrim", "substr", "substring",
    "regexp_extract", "regexp_matches", "contains", "starts_with", "ends_with", "strpos",
    "instr", "split_part", "cast", "try_cast",
    # the shipped gtx1080ti mapping parses "(gx gy gz) (bx by bz)": a list no longer than
    # its text, its product, a match, and error() to stop on a malformed text
    "regexp_full_match", "regexp_extract_all", "list_product", "error",
    # aggregates and unnest: refused when evaluated, with the reason (one value per row)
    "sum", "avg", "mean", "count", "min", "max", "unnest"})
# Keywords followed by "(" that are no function call: casts and types with parameters.
_EXPR_TYPE_WORDS = frozenset({"cast", "try_cast", "decimal", "numeric", "varchar", "char"})
_EXPR_QUERY_WORDS = frozenset({"select", "from", "with", "values", "table", "pivot",
                               "unpivot", "summarize", "describe", "show"})


def expression_problem(sql: str) -> str | None:
    """Why the mapping expression ``sql`` may not be evaluated (see EXPR_FUNCTIONS), or None.
    Read from DuckDB's own tokens, so a comment or a string cannot hide a call."""
    if len(sql) > EXPR_MAX_CHARS:
        return f"expr is {len(sql):,} characters long; at most {EXPR_MAX_CHARS:,}"
    try:
        tokens = [(p, t) for p, t in duckdb.tokenize(sql)]
    except duckdb.Error as exc:
        return f"expr is not one SQL expression: {_first_line(exc)}"
    spans = [(p, tokens[i + 1][0] if i + 1 < len(tokens) else len(sql), t)
             for i, (p, t) in enumerate(tokens)]
    words = [(sql[a:b].strip(), t) for a, b, t in spans
             if t != duckdb.token_type.comment]
    for i, (text, kind) in enumerate(words):
        if kind not in (duckdb.token_type.keyword, duckdb.token_type.identifier):
            continue
        name = (text[1:-1].replace('""', '"') if text.startswith('"') else text).lower()
        if kind == duckdb.token_type.keyword and name in _EXPR_QUERY_WORDS:
            return f"expr holds a query ({text} ...): it must be an expression over the row"
        calls = i + 1 < len(words) and words[i + 1][0].startswith("(")
        if not calls or (kind == duckdb.token_type.keyword and name in _EXPR_TYPE_WORDS):
            continue
        if name not in EXPR_FUNCTIONS:
            return (f"expr calls {text}(), which a mapping expression may not (it may call "
                    f"{', '.join(sorted(EXPR_FUNCTIONS - {'unnest', 'count'}))})")
    return None


_NUMERIC_SQL = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE"}
_MISSING_COLUMN = re.compile(r'Referenced column "((?:[^"]|"")*)" not found')


class Expressions:
    """Evaluates :class:`gpudb.sources.mapping.Derived` values (a column or a DuckDB SQL expression)
    over one data file, on its own in-memory DuckDB connection with external access disabled
    and the configuration locked (module docstring). Use as a context manager.

    The file's columns form the table ``data`` under their own names (a column is DOUBLE when
    every non-empty cell is a finite number or it is numeric in Parquet, else as read);
    `evaluate` returns one float64 per row in file order, converted by the unit factor, NULL
    where the value is NULL or not finite. Errors name the mapping key and the file.
    """

    def __init__(self, path: Path, mapping: Mapping, table: pa.Table):
        self.path, self.mapping, self.rows = path, mapping, table.num_rows
        names = table.column_names
        lower = Counter(n.lower() for n in names)
        usable = [i for i, n in enumerate(names) if n and lower[n.lower()] == 1]
        self.columns = {names[i] for i in usable}
        self.left_out = [n for n in names if n not in self.columns]
        self.row = ROW
        while self.row.lower() in lower:
            self.row += "_"
        config = {"enable_external_access": False, "autoinstall_known_extensions": False,
                  "autoload_known_extensions": False, "lock_configuration": True}
        if os.environ.get("GPUDB_MEMORY_LIMIT"):
            config["memory_limit"] = os.environ["GPUDB_MEMORY_LIMIT"]
        self.con = duckdb.connect(":memory:", config=config)
        try:
            self._register(table, usable)
        except BaseException:
            self.con.close()
            raise

    def _register(self, table: pa.Table, usable: list[int]) -> None:
        names = table.column_names
        self.con.register("_gpudb_file", pa.table(
            [table.column(i) for i in usable]
            + [pa.array(np.arange(1, table.num_rows + 1, dtype=np.int64))],
            names=[f"_c{i}" for i in usable] + [ROW]))
        text = [i for i in usable if names[i] not in self.mapping.text and (
            pa.types.is_string(table.field(i).type)
            or pa.types.is_large_string(table.field(i).type))]
        bad = first_row(self.con.execute("SELECT " + ", ".join(
            f"count(*) FILTER (WHERE {_bad_number(f'_c{i}', False)})" for i in text)
            + " FROM _gpudb_file")) if text else []
        numbers = {i for i, n in zip(text, bad, strict=True) if n == 0}
        select = [(f"TRY_CAST(_c{i} AS DOUBLE)" if i in numbers else f"_c{i}")
                  + f" AS {_ident(names[i])}" for i in usable]
        select.append(f"{ROW} AS {_ident(self.row)}")
        self.con.execute(f"CREATE TEMP VIEW data AS SELECT {', '.join(select)} FROM _gpudb_file")

    def __enter__(self) -> Expressions:
        return self

    def __exit__(self, *exc) -> None:
        self.con.close()

    def _why(self, column: str) -> str:
        clash = [n for n in self.left_out if n.lower() == column.lower()]
        if len(clash) > 1:
            return (f" (columns {', '.join(map(repr, clash))} differ only in case, which SQL "
                    "does not tell apart, so expressions cannot use them)")
        return ""

    def evaluate(self, derived: Derived) -> pa.Array:
        where = f"{self.mapping.path}: {derived.key}"
        what = f"column {derived.column!r}" if derived.column is not None else "expr"
        if derived.column is not None and derived.column not in self.columns:
            raise IngestError(f"{where}: {what} is not a column of {self.path}"
                              f"{self._why(derived.column)}")
        problem = expression_problem(derived.expr) if derived.expr is not None else None
        if problem:
            raise IngestError(f"{where}: {problem}")
        try:
            rel = self.con.table("data").select(
                duckdb.SQLExpression(derived.sql).alias("v"),
                duckdb.ColumnExpression(self.row)).order(self.row)
        except duckdb.Error as exc:
            raise IngestError(self._explain(where, exc)) from None
        if len(rel.columns) != 2:
            raise IngestError(f"{where}: expr gives {len(rel.columns) - 1} values per row; "
                              "it must give one number")
        kind = str(rel.types[0])
        if kind not in _NUMERIC_SQL and not kind.startswith("DECIMAL"):
            raise IngestError(f"{where}: {what} gives {kind} values over {self.path}, "
                              "not numbers")
        timer = threading.Timer(EXPR_TIME_BOUND_S, self.con.interrupt)
        timer.daemon = True
        timer.start()
        try:
            result = rel.to_arrow_table()
        except duckdb.InterruptException:
            if timer.is_alive():
                raise KeyboardInterrupt from None  # Ctrl-C, not the bound
            raise IngestError(f"{where}: {what} ran over {EXPR_TIME_BOUND_S:g} s over "
                              f"{self.path}, the time bound of a mapping expression") from None
        except duckdb.Error as exc:
            raise IngestError(f"{where}: {what} fails on {self.path}: "
                              f"{_first_line(exc)}") from None
        finally:
            timer.cancel()
        if result.num_rows != self.rows:
            raise IngestError(f"{where}: expr gives {result.num_rows} rows for the "
                              f"{self.rows} of {self.path}; it must give one value per row")
        values = pc.cast(result.column(0), pa.float64(), safe=False)
        if derived.factor != 1.0:
            values = pc.multiply(values, derived.factor)
        values = pc.if_else(pc.is_finite(values), values, pa.scalar(None, pa.float64()))
        return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values

    def _explain(self, where: str, exc: duckdb.Error) -> str:
        line = _first_line(exc)
        missing = _MISSING_COLUMN.search(line)
        if missing:
            column = missing.group(1).replace('""', '"')
            return (f"{where}: expr names column {column!r}, which {self.path} does not have"
                    f"{self._why(column)}")
        if isinstance(exc, duckdb.BinderException) and self.row in line and "GROUP BY" in line:
            return (f"{where}: expr must give one value per row, not aggregate the file "
                    "(sum, avg, count, ...)")
        return f"{where}: cannot evaluate expr over {self.path}: {line}"


def _ident(name: str) -> str:
    """Quote an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _num(measure: Derived, sql: dict[str, str]) -> str:
    return f"(TRY_CAST({sql[measure.column]} AS DOUBLE) * {measure.factor!r})"


def _kernel_expr(mapping: Mapping, sql: dict[str, str]) -> str:
    parts = ", ".join(_trim(sql[c]) for c in mapping.kernel)
    return f"concat_ws(':', {parts})"


def _g(column: str) -> str:
    """A number as 12 significant digits: the same measurement exported twice with different
    float formatting (1 ulp apart) must hash to the same run_id. A whole number below 10^12
    (clocks in MHz, often times) has those digits and no more, exactly its integer's: that
    costs less than format."""
    return (f"CASE WHEN {column} >= 1 AND {column} < 1e12 AND {column} = trunc({column}) "
            f"THEN CAST(CAST({column} AS BIGINT) AS VARCHAR) "
            f"ELSE format('{{:.12g}}', {column}) END")


def _run_constants(mapping: Mapping, exp_id: str, sha: str, created: str) -> dict[str, str]:
    """SQL literals of the `run` columns that are the same for every run of a file: the
    insert adds them, so the staged table does not hold a million copies of each."""
    return {"experiment_id": sql_str(exp_id),
            "source": sql_str(mapping.source),
            "gpu_id": sql_str(str(mapping.gpu["gpu_id"])),
            "policy": sql_str(mapping.policy),
            "ctas_per_sm": "CAST(NULL AS INTEGER)",
            "interval_instructions": "CAST(NULL AS BIGINT)",
            "seed": "CAST(NULL AS BIGINT)",
            "instructions": "CAST(NULL AS BIGINT)",
            "created_at": f"CAST({sql_str(created)} AS TIMESTAMPTZ)",
            "input_hash": sql_str(sha)}


def _run_rows(mapping: Mapping, sql: dict[str, str], view: str) -> str:
    """SQL turning a staged file into the `run` columns that vary from run to run (without
    run_id; the others are _run_constants), plus its row number and the power or energy as
    measured (_measured, for the hash)."""
    kernel_id = f"{sql_str(mapping.suite + '/')} || {_kernel_expr(mapping, sql)}"
    n_sm = (f"CAST({_num(mapping.n_sm, sql)} AS INTEGER)" if mapping.n_sm is not None
            else str(int(mapping.gpu["n_sm"])))
    time_ns = _num(mapping.time, sql)
    energy = (_num(mapping.energy, sql) if mapping.energy is not None
              else f"({_num(mapping.power, sql)} * {time_ns} * 1e-9)")
    # The hash takes the power or energy as measured, not the derived energy: a product of
    # two rounded numbers can fall either side of a rounding boundary.
    measured = _num(mapping.energy if mapping.energy is not None else mapping.power, sql)
    return f"""
        SELECT {ROW} AS _row,
               {kernel_id} AS kernel_id,
               {_num(mapping.core_mhz, sql)} AS core_mhz,
               {_num(mapping.mem_mhz, sql)} AS mem_mhz,
               {n_sm} AS n_sm,
               {time_ns} AS time_ns,
               {energy} AS energy_j,
               {measured} AS _measured
        FROM {view}"""


def _stage_runs(con, stage: _Staged, view: str, exp_id: str, now: str) -> None:
    """Materialise a validated file's run rows, with their run_id and row number, as the
    temporary table stage.runs (readers that need file order sort by _row; the columns
    equal for every run are in stage.constants), and refuse values that unit conversion
    made zero or infinite (1e308 ms is +inf ns) and a kernel measured twice at one setting
    (which need the converted values the table holds)."""
    mapping = stage.mapping
    const = stage.constants = _run_constants(mapping, exp_id, stage.sha256, now)
    rows = _run_rows(mapping, stage.sql, view)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE {stage.runs} AS
        SELECT md5(concat_ws('|', {const['source']}, {const['gpu_id']}, kernel_id,
                             {const['policy']}, {_g('core_mhz')}, {_g('mem_mhz')}, n_sm,
                             {_g('time_ns')}, {_g('_measured')}))
                   AS run_id, * EXCLUDE (_measured)
        FROM ({rows})""")
    _check_converted(con, stage, view)
    # Equal settings hash equal (the values are positive and finite by now, so equal means
    # bitwise equal): the grouping by the columns themselves, which names the rows, runs
    # only when two hashes meet.
    key = "kernel_id, core_mhz, mem_mhz, n_sm"
    if first_row(con.execute(f"SELECT count(DISTINCT hash({key})) < count(*) "
                             f"FROM {stage.runs}"))[0]:
        dup = first_row(con.execute(
            f"SELECT min(_row), max(_row), any_value(kernel_id) FROM {stage.runs} "
            f"GROUP BY {key} HAVING count(*) > 1 ORDER BY 1 LIMIT 1"))
        if dup:
            kernel = dup[2].split("/", 1)[1]
            raise IngestError(f"{stage.path}: rows {dup[0]} and {dup[1]} both measure kernel "
                              f"{kernel!r} at the same setting (columns "
                              f"{', '.join(mapping.kernel)}, {mapping.core_mhz.column}, "
                              f"{mapping.mem_mhz.column})")


def _check_converted(con, stage: _Staged, view: str) -> None:
    """Refuse a value that is positive and finite as written but not after conversion to
    gpudb's unit (an overflow to inf, an underflow to 0), naming file, row and column."""
    mapping = stage.mapping
    checks = [("core_mhz", mapping.core_mhz, "MHz", "> 0"),
              ("mem_mhz", mapping.mem_mhz, "MHz", "> 0"),
              ("time_ns", mapping.time, "ns", "> 0"),
              ("energy_j", mapping.energy or mapping.power, "J", ">= 0")]
    first_bad = first_row(con.execute("SELECT " + ", ".join(
        f"min(_row) FILTER (WHERE NOT (isfinite({c}) AND {c} {test}))"
        for c, _, _, test in checks) + f" FROM {stage.runs}"))
    for (stored, measure, unit, _), row in zip(checks, first_bad, strict=True):
        if row is None:
            continue
        converted, value, time = first_row(con.execute(
            f"SELECT r.{stored}, v.{stage.sql[measure.column]}::VARCHAR, "
            f"v.{stage.sql[mapping.time.column]}::VARCHAR FROM {stage.runs} AS r "
            f"JOIN {view} AS v ON v.{ROW} = r._row WHERE r._row = ?", [row]))
        where = _where(stage.path, stage.lines, row, measure.column)
        if stored == "energy_j" and mapping.energy is None:
            raise IngestError(f"{where}: {value!r} {measure.unit} for {time!r} "
                              f"{mapping.time.unit} is {converted!r} J of energy, not a finite "
                              "number")
        raise IngestError(f"{where}: {value!r} {measure.unit} is {converted!r} {unit} after "
                          "unit conversion, not a positive finite number")


RUN_COLUMNS = ("run_id", "experiment_id", "source", "kernel_id", "gpu_id", "policy", "core_mhz",
               "mem_mhz", "n_sm", "ctas_per_sm", "interval_instructions", "seed", "time_ns",
               "energy_j", "instructions", "created_at", "input_hash")


def _ensure_reference_rows(con, mapping: Mapping, exp_name: str, now: str) -> None:
    """The GPU and experiment rows the new runs refer to (insert if missing)."""
    gpu = mapping.gpu
    insert_missing(con, "gpu", pa.Table.from_pylist([{
        "gpu_id": gpu["gpu_id"], "name": gpu["name"], "n_sm": gpu["n_sm"],
        "max_warps_per_sm": gpu.get("max_warps_per_sm"),
        "max_ctas_per_sm": gpu.get("max_ctas_per_sm"),
        "nominal_core_mhz": gpu.get("nominal_core_mhz"),
        "nominal_mem_mhz": gpu.get("nominal_mem_mhz")}]))
    ensure_experiment(con, exp_name, mapping.description
                      or f"measured data ingested with {mapping.path.name}", created_at=now)


# the [gpu] keys that describe the GPU itself: a mapping that names a stored gpu_id must agree
_GPU_FACTS = ("name", "n_sm", "max_warps_per_sm", "max_ctas_per_sm", "nominal_core_mhz",
              "nominal_mem_mhz")


def _check_stored_gpu(con: duckdb.DuckDBPyConnection, mapping: Mapping) -> None:
    """A mapping's [gpu] naming a GPU the database holds must say what the database says of
    it (ingest-log refuses a log whose SM count differs the same way): otherwise one gpu_id
    would hold runs of two GPUs, e.g. of 40 SMs and of 2."""
    gpu = mapping.gpu
    stored = con.execute(f"SELECT {', '.join(_GPU_FACTS)} FROM gpu WHERE gpu_id = ?",
                         [gpu["gpu_id"]]).fetchall()
    if not stored:
        return
    for key, have in zip(_GPU_FACTS, stored[0], strict=True):
        given = gpu.get(key)
        if given is not None and have is not None and given != have:
            raise IngestError(f"{mapping.path}: [gpu] {key} = {given!r}, but GPU "
                              f"{gpu['gpu_id']!r} in the database has {key} = {have!r}: "
                              "name another gpu_id, or the GPU as stored")


def ingest(con: duckdb.DuckDBPyConnection, files: list[str | Path], mapping: Mapping,
           experiment: str | None = None,
           progress: Callable[[str], None] | None = None,
           suite: str | None = None) -> list[FileReport]:
    """Validate every file, then write them all in one transaction (or nothing).

    experiment: name of the experiment the runs join (default: the mapping's [run] experiment,
    else the first file's stem). suite: the kernels' suite, kernel_id = '<suite>/<kernel>'
    (default: the mapping's [run] suite). progress: called with each file name as it is
    staged. Returns one report per file; files already ingested come back with
    `skipped_reason`.
    """
    from gpudb import __version__

    if suite is not None:
        if not suite.strip() or "\x00" in suite:
            raise IngestError(f"suite {suite!r} must be a name (not empty, no NUL character)")
        mapping = replace(mapping, suite=suite)
    paths = [Path(f) for f in files]
    for derived in [*mapping.measures().values(), *mapping.inputs.values()]:
        problem = expression_problem(derived.expr) if derived.expr is not None else None
        if problem:  # before any file is read
            raise IngestError(f"{mapping.path}: {derived.key}: {problem}")
    exp_name = experiment or mapping.experiment or paths[0].stem
    exp_id = experiment_id(exp_name)
    _check_stored_gpu(con, mapping)
    now = first_row(con.execute("SELECT CAST(now() AS VARCHAR)"))[0]
    reports: list[FileReport] = []
    staged: list[tuple[FileReport, _Staged, str]] = []
    seen: set[str] = set()
    try:
        for i, path in enumerate(paths):
            if progress:
                progress(str(path))
            report = FileReport(str(path))
            reports.append(report)
            _check_regular(path)
            sha = file_sha256(path)
            before = first_row(con.execute("SELECT CAST(ingested_at AS DATE) FROM ingest_file "
                                 "WHERE file_sha256 = ?", [sha]))
            if before or sha in seen:
                report.skipped_reason = (f"already ingested on {before[0]}" if before
                                         else "same content as an earlier file of this call")
                continue
            seen.add(sha)
            view = f"_gpudb_ingest_{i}"
            stage = _stage(con, path, mapping, view)
            stage.sha256 = sha
            stage.runs = f"_gpudb_runs_{i}"
            _stage_runs(con, stage, view, exp_id, now)
            report.rows = stage.table.num_rows
            report.inputs = {name: len(values) - values.null_count
                             for name, values in stage.inputs.items()}
            report.metrics, report.text = list(stage.metric_columns), stage.text
            report.empty, report.ignored = stage.empty, stage.ignored
            staged.append((report, stage, view))
        if not staged:
            return reports
        _write(con, mapping, staged, exp_id, exp_name, now, __version__)
    finally:
        for i in range(len(paths)):
            con.unregister(f"_gpudb_ingest_{i}")
            con.execute(f"DROP TABLE IF EXISTS _gpudb_runs_{i}")
    return reports


def _metric_rows(con, mapping: Mapping, stage: _Staged, view: str,
                 some_present: bool) -> pa.Table:
    """Long-format (run_id, _new, name, value) rows of a staged file's metric columns and
    [inputs] (those not already a metric column); _new: the run was not stored before this
    ingest (`some_present` False: none was).

    Built column-wise in Arrow rather than with SQL UNPIVOT: it costs about a fifth as much at
    a million rows, and the insert then reads Arrow like DuckDB's own bulk path. The names
    stay dictionary-encoded (DuckDB reads them as text).
    """
    new = ("run_id NOT IN (SELECT run_id FROM _gpudb_present)" if some_present else "true")
    ids = con.sql(f"SELECT run_id, {new} AS _new "
                  f"FROM {stage.runs} ORDER BY _row").to_arrow_table()
    text = [c for c in stage.metric_columns if not _is_number_type(stage.table.schema.field(c))]
    parsed = _parsed(con, stage.table, text, f"{view}_text")
    # integers beyond 2**53 lose their last digits as DOUBLE (metric.value), like in SQL
    values = [pc.cast(parsed[c] if c in parsed else stage.table.column(c),
                      pa.float64(), safe=False) for c in stage.metric_columns]
    inputs = [n for n in stage.inputs if n not in stage.inputs_as_metric]
    values += [pa.chunked_array([stage.inputs[n]]) for n in inputs]
    rows, count = stage.table.num_rows, len(values)
    names = pa.DictionaryArray.from_arrays(
        pa.array(np.repeat(np.arange(count, dtype=np.int32), rows)),
        pa.array([mapping.metric_name(c) for c in stage.metric_columns] + inputs, pa.string()))
    # run ids dictionary-encoded too, each column one chunk: a chunk per metric column made
    # DuckDB's insert pay per chunk (10,000 columns of 4 rows: 4 s for 40,000 values)
    run = pa.array(np.tile(np.arange(rows, dtype=np.int32), count))
    return pa.table({
        "run_id": pa.DictionaryArray.from_arrays(run, ids.column("run_id").combine_chunks()),
        "_new": ids.column("_new").combine_chunks().take(run),
        "name": names,
        "value": pa.concat_arrays([chunk for v in values for chunk in v.chunks]),
    })


def _parsed(con: duckdb.DuckDBPyConnection, table: pa.Table, text: list[str], view: str
            ) -> dict[str, pa.ChunkedArray]:
    """The text columns ``text`` of ``table`` (validated numbers) as DOUBLE by DuckDB's CAST,
    in file order: stacked into one column per batch, so a wide file costs one cast of few
    columns per batch, not a query over all its columns (10,000 columns: 6.4 of the 36 s
    of an ingest under load)."""
    parsed: dict[str, pa.ChunkedArray] = {}
    rows = table.num_rows
    batch_columns = max(1, 1_000_000 // max(rows, 1))  # about a million values a query
    for start in range(0, len(text), batch_columns):
        batch = text[start:start + batch_columns]
        values = pa.chunked_array([chunk.cast(pa.large_string()) for c in batch
                                   for chunk in table.column(c).chunks],
                                  type=pa.large_string())
        # ordered by position: ingest writes with preserve_insertion_order off
        con.register(view, pa.table({"v": values, "i": np.arange(len(values), dtype=np.int64)}))
        try:
            cast = con.sql(f"SELECT CAST(v AS DOUBLE) AS v FROM {view} ORDER BY i"
                           ).to_arrow_table()
        finally:
            con.unregister(view)
        column = cast.column("v").combine_chunks()
        parsed.update({c: pa.chunked_array([column.slice(i * rows, rows)])
                       for i, c in enumerate(batch)})
    return parsed


def _is_number_type(field: pa.Field) -> bool:
    return (pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
            or pa.types.is_decimal(field.type))


def _write_metrics(con, mapping: Mapping, stage: _Staged, view: str, some_present: bool) -> int:
    """Insert a staged file's metrics; returns the number of metric rows added.

    Arrow filters copy every string of the table, so they run only where needed: no NULL
    values and only new runs (a first ingest) insert the rows as they are.
    """
    rows = _metric_rows(con, mapping, stage, view, some_present)
    if rows.column("value").null_count:
        rows = rows.filter(pc.is_valid(rows.column("value")))
    is_new = rows.column("_new")
    new_count = pc.sum(is_new).as_py() or 0
    added = 0
    if new_count:
        added += insert_metrics(con, (rows if new_count == rows.num_rows
                                      else rows.filter(is_new)).drop_columns(["_new"]),
                                skip_stored=False)
    if some_present and new_count < rows.num_rows:
        added += insert_metrics(con, rows.filter(pc.invert(is_new)).drop_columns(["_new"]),
                                skip_stored=True)
    return added


def _write(con, mapping, staged, exp_id, exp_name, now, version) -> None:
    user, host = whoami()
    # Row order in run and metric carries no meaning (readers sort), and letting DuckDB
    # insert out of order lets both threads write (DuckDB's advice for bulk loads).
    preserve = first_row(con.execute("SELECT current_setting('preserve_insertion_order')"))[0]
    con.execute("SET preserve_insertion_order = false")
    try:
        _write_all(con, mapping, staged, exp_id, exp_name, now, version, user, host)
    finally:
        con.execute(f"SET preserve_insertion_order = {str(bool(preserve)).lower()}")


def _write_all(con, mapping, staged, exp_id, exp_name, now, version, user, host) -> None:
    with atomic(con):
        _ensure_reference_rows(con, mapping, exp_name, now)
        suite = sql_str(mapping.suite)
        for report, stage, view in staged:
            insert_missing(con, "kernel", (
                f"SELECT DISTINCT kernel_id, substr(kernel_id, length({suite}) + 2) AS name, "
                f"{suite} AS suite, 'measured kernel' AS description FROM {stage.runs}"))
            gpu_id = stage.constants["gpu_id"]
            insert_missing(con, "pstate", (
                f"SELECT DISTINCT {gpu_id} AS gpu_id, 'core' AS domain, core_mhz AS freq_mhz "
                f"FROM {stage.runs} UNION SELECT DISTINCT {gpu_id}, 'mem', mem_mhz "
                f"FROM {stage.runs}"))
            # Runs the database already has (usually none) keep their row; only their new
            # metrics are added.
            con.execute("CREATE OR REPLACE TEMP TABLE _gpudb_present AS SELECT run_id FROM "
                        f"{stage.runs} WHERE run_id IN (SELECT run_id FROM run)")
            columns = (f"{stage.constants.get(c, c)} AS {c}" for c in RUN_COLUMNS)
            report.runs_added = insert_runs(
                con, f"SELECT {', '.join(columns)} FROM {stage.runs}").runs
            report.runs_present = report.rows - report.runs_added
            if stage.metric_columns or stage.inputs:
                report.metrics_added = _write_metrics(con, mapping, stage, view,
                                                      report.runs_present > 0)
            con.execute(
                "INSERT INTO ingest_file VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "CAST(? AS TIMESTAMPTZ), ?)",
                [stage.sha256, stage.path.name, mapping.sha256, exp_id, report.rows,
                 report.runs_added, report.metrics_added, user, host, now, version])
        con.execute("DROP TABLE IF EXISTS _gpudb_present")
