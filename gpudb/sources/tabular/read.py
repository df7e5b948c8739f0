"""Reading a measured data file for ingest (:mod:`gpudb.sources.tabular.ingest`): a regular file
only, CSV as the mapping's [file] section describes it (header row or the mapping's names,
section-label lines, repeated names refused or numbered) or Parquet, as an Arrow table; the
one-line errors naming file, row and column; and the SQL that reads a cell (trimmed, blank,
a number).
"""

from __future__ import annotations

import csv
import io
import re
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from gpudb.sources.tabular.mapping import Mapping, file_kind
from gpudb.store.db import GpudbError

ROW = "_gpudb_row"


# Values (rows x columns) ingest reads from one file: it holds the file's table and its
# metric rows in memory, about 55 bytes a value (1 M rows x 25 columns of Parquet: 1.34 GB
# peak), so a file stays under 2 GB.
MAX_CELLS = 25_000_000


class IngestError(GpudbError):
    """Bad input file; the message names file, row and column. Nothing was written."""


@dataclass(frozen=True)
class Lines:
    """Where each row of a file's table is in the file: its 1-based CSV line (labels, blank
    lines and the header counted) or, for Parquet, its 1-based row. A row filter keeps the
    numbers of the rows it keeps, so messages name the file's own lines."""
    numbers: np.ndarray
    word: str = "line"  # "line" (CSV) or "row" (Parquet)

    def at(self, row: int) -> str:
        """'line N' of a 1-based row of the table."""
        return f"{self.word} {self.numbers[row - 1]}"

    def kept(self, mask: np.ndarray) -> Lines:
        return Lines(self.numbers[mask], self.word)


# offending rows a message lists by line before it says "..."
SHOWN_ROWS = 5


def rows_note(lines: Lines, rows: list[int], total: int) -> str:
    """' (4 rows in all: lines 3, 7, 9, 12)' for the `total` offending rows, the first few of
    which (1-based rows of the table, in file order) are `rows`; '' for one row."""
    if total <= 1:
        return ""
    shown = ", ".join(str(lines.numbers[r - 1]) for r in rows[:SHOWN_ROWS])
    more = ", ..." if total > min(len(rows), SHOWN_ROWS) else ""
    return f" ({total:,} rows in all: {lines.word}s {shown}{more})"


def offending(con, relation: str, condition: str, row: str = ROW) -> tuple[list[int], int]:
    """(the first SHOWN_ROWS rows of `relation` where the SQL `condition` holds, by their
    1-based row column `row`; how many rows it holds for in all)."""
    found = con.execute(f"SELECT {row}, count(*) OVER () FROM {relation} WHERE {condition} "
                        f"ORDER BY {row} LIMIT {SHOWN_ROWS}").fetchall()
    return [r[0] for r in found], (found[0][1] if found else 0)


def sql_str(text: str) -> str:
    """Quote an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def check_regular(path: Path) -> None:
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


def read_file(path: Path, mapping: Mapping) -> tuple[pa.Table, Lines]:
    """A CSV (every column as text, empty cells NULL) or Parquet file as an Arrow table, and
    where each row is in the file (:class:`Lines`: its CSV line, or its Parquet row).

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
            return (table.rename_columns(_numbered(path, mapping, table.column_names)),
                    Lines(np.arange(1, table.num_rows + 1), "row"))
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
        return _as_text(path, mapping, table), Lines(np.arange(first, table.num_rows + first))
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


def _read_labelled(path: Path, mapping: Mapping) -> tuple[pa.Table, Lines]:
    """A CSV file with section-label lines (see read_file): the data lines parsed as Arrow
    parses any CSV, plus the label column. Data before the first label has no kernel and is
    refused."""
    data, labels, lines = io.StringIO(), [], []
    writer = csv.writer(data, lineterminator="\n")
    names = list(mapping.header) if mapping.header is not None else None
    label = None
    early = []  # data lines before the first label
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
                early.append(rows.line_num)
            else:
                writer.writerow(row)
                labels.append(label)
                lines.append(rows.line_num)
    if early:
        raise IngestError(f"{path}: line {early[0]} is data before the first section label "
                          f"([file] labels of {mapping.path})"
                          + rows_note(Lines(np.array(early)), list(range(1, len(early) + 1)),
                                      len(early)))
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
            Lines(np.array(lines, dtype=np.int64)))


def cell_location(path: Path, lines: Lines, row: int, column: str) -> str:
    return f"{path}: {lines.at(row)}, column {column!r}"


_SPACE = ' \t\r\n\v\f'


def trim_sql(column: str) -> str:
    """SQL: the (view) column as text without white space at either end (tabs included).
    trim with a set of characters costs several times a regular expression that finds
    nothing to trim, the usual case."""
    text = f"{column}::VARCHAR"
    return (f"CASE WHEN regexp_matches({text}, '^[{_SPACE}]|[{_SPACE}]$') "
            f"THEN trim({text}, '{_SPACE}') ELSE {text} END")


def blank_sql(column: str) -> str:
    """SQL: the (view) column holds only white space, i.e. its trim_sql is '' (the test does not
    build the trimmed text, so costs a fraction of it)."""
    return f"(NOT regexp_matches({column}::VARCHAR, '[^{_SPACE}]'))"


# A number written as text: DuckDB's cast alone also takes '+-2' (as -2) and '1_000'.
_NUMBER = r"\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\s*"


def bad_number(column: str, typed: bool) -> str:
    """SQL: the (view) column holds a value that is not a finite number."""
    value = f"TRY_CAST({column} AS DOUBLE)"
    text = "" if typed else f"NOT regexp_full_match({column}, '{_NUMBER}') OR "
    return f"({column} IS NOT NULL AND ({text}{value} IS NULL OR NOT isfinite({value})))"
