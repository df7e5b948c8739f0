"""Printing result rows as an aligned table, a Markdown table, CSV or JSON: the one output path
of the CLI; fetching the rows to print, and DuckDB's errors as one line.

Tables are laid out by tabulate (pure Python, its 'simple' and 'github' formats); gpudb formats
each cell itself first, so tabulate only aligns: numbers to 4 significant digits, text cut to
the terminal's width."""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import decimal
import io
import json
import math
import os
import re
import shutil
import sys
import unicodedata
from dataclasses import dataclass
from functools import cache

from tabulate import MIN_PADDING, tabulate

# the store's (gpudb.store.queries runs SQL through them), the output path's names too
from gpudb.store.base import error_line  # noqa: F401
from gpudb.store.queries import fetch  # noqa: F401

FORMATS = ("table", "markdown", "csv", "json")
# the formats read by people, which commands may surround with titles and notes
HUMAN_FORMATS = ("table", "markdown")

@cache
def _candidates(keep: str) -> re.Pattern:
    """A character outside printable ASCII and Latin-1 (soft hyphen excepted) and ``keep``:
    the candidates that :func:`printable` checks one by one, so plain text passes at the
    regex engine's speed (a 20 MB cell with one ESC in 0.2 s)."""
    return re.compile(f"[^\x20-\x7e\xa0-\xac\xae-\xff{re.escape(keep)}]")


def _escaped(match: re.Match, keep: str = "") -> str:
    """A character as in a Python string literal, unless printable, a space or kept."""
    char = match.group()
    if char.isprintable() or char in keep or unicodedata.category(char) == "Zs":
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else (
        f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")


def printable(text, keep: str = "") -> str:
    """``text`` (any value, as str) safe to show on a terminal, in a figure or a page: every
    control or otherwise invisible character is written as Python writes it in a string
    literal (ESC as \\x1b, U+202E as \\u202e), so a name or value from a file can neither
    move the cursor, clear a line, set the terminal's title nor reorder what is shown. The one
    path for every string from a file (docs/DESIGN.md section 8); ``keep``: characters left as they
    are (the CLI's own line breaks). Backslashes are left alone: this is for showing, not
    for parsing back."""
    text = text if isinstance(text, str) else str(text)
    if not keep and text.isprintable():
        return text
    candidates = _candidates(keep)
    if candidates.search(text) is None:
        return text
    return candidates.sub(lambda m: _escaped(m, keep), text)


# floats in [1e-3, 1e7) print as plain decimals; outside it, with an exponent
_PLAIN_RANGE = (1e-3, 1e7)
_DIGITS = 4
# a text column narrowed to fit the terminal keeps at least this many characters
_MIN_TEXT_WIDTH = 8
_ELLIPSIS = "\u2026"
_COLUMN_GAP = 2  # tabulate's 'simple' format puts two spaces between columns
# Columns that say which row is which: never cut to fit a terminal (a cut kernel id reads like
# its neighbours: every cuda-sdk-r... kernel looked the same); descriptive text is cut instead.
KEY_COLUMNS = frozenset({
    "kernel", "kernel_id", "name", "gpu", "gpu_id", "predictor", "policy", "guard", "verdict",
    "objective", "category", "suite", "query", "plot", "table", "key", "experiment", "metric",
    "parameter", "energy_scope", "target", "base", "setting"})
# below this magnitude a float is rounding residue of a zero (a training error of 9.4e-15 s)
_ZERO = 1e-12


def _number(value: float) -> str:
    """A float to 4 significant digits, without an exponent in the plain range."""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if abs(value) < _ZERO:
        return "0"
    rounded = float(f"{value:.{_DIGITS}g}")
    if rounded == 0:
        return "0"
    if not _PLAIN_RANGE[0] <= abs(rounded) < _PLAIN_RANGE[1]:
        mantissa, exponent = f"{value:.{_DIGITS - 1}e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{exponent}"
    decimals = max(0, _DIGITS - 1 - math.floor(math.log10(abs(rounded))))
    text = f"{rounded:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _is_number(value) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


class Fixed(float):
    """A float that tables print with a fixed number of decimals (the demo's percentages to
    one: 7.0, not 7); CSV and JSON see the plain float."""

    decimals: int

    def __new__(cls, value: float, decimals: int) -> Fixed:
        number = super().__new__(cls, value)
        number.decimals = decimals
        return number


def cell_text(value) -> str:
    """A value as one table cell: floats to 4 significant digits (a :class:`Fixed` to its
    decimals), NULL empty, text on one line through :func:`printable`."""
    if value is None:
        return ""
    if isinstance(value, Fixed):
        return f"{value:.{value.decimals}f}"
    if isinstance(value, (float, decimal.Decimal)):
        return _number(float(value))
    # one line per row, for grep and head; escaped, as every string from a file
    return printable(" ".join(str(value).splitlines()))


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + _ELLIPSIS


def is_key(column: str) -> bool:
    """A column that identifies rows (:data:`KEY_COLUMNS`, or any ``*_id``)."""
    return column in KEY_COLUMNS or column.endswith("_id")


def _fit(columns: list[str], cells: list[list[str]], numeric: list[bool],
         width: int) -> list[list[str]]:
    """Cells with the descriptive text columns cut (with an ellipsis) to one common width, the
    widest that lets the table fit in ``width`` characters; numbers, headers and the columns
    that identify a row (:func:`is_key`) are never cut, so a table of long ids may stay wider
    than the terminal rather than make two rows look alike."""
    # tabulate makes a column at least MIN_PADDING wider than its header
    widths = [max([len(c) + MIN_PADDING] + [len(row[i]) for row in cells])
              for i, c in enumerate(columns)]
    text = [i for i, num in enumerate(numeric) if not num and not is_key(columns[i])]
    if sum(widths) + _COLUMN_GAP * (len(widths) - 1) <= width or not text:
        return cells
    fixed = (sum(w for i, w in enumerate(widths) if i not in text)
             + _COLUMN_GAP * (len(widths) - 1))
    # no text column is wider than the terminal: start there, not at a 20 MB cell's width
    cap = min(max(widths[i] for i in text), width)
    while cap > _MIN_TEXT_WIDTH and fixed + sum(
            max(min(widths[i], cap), len(columns[i]) + MIN_PADDING) for i in text) > width:
        cap -= 1
    limits = [max(cap, len(columns[i]) + MIN_PADDING) for i in range(len(columns))]
    return [[_shorten(cell, limits[i]) if i in text else cell for i, cell in enumerate(row)]
            for row in cells]


def _json_value(value):
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    plain = (int, float, str, bool, type(None), list, dict)
    return value if isinstance(value, plain) else str(value)


def json_records(columns: list[str], rows: list[tuple]) -> list[dict]:
    """Rows as JSON-ready objects, one per row (NULL, NaN and inf as null)."""
    return [{c: _json_value(v) for c, v in zip(columns, row, strict=True)} for row in rows]


_FULL_WIDTH = False   # gpudb --wide: tables are never cut to the terminal


@contextlib.contextmanager
def full_width(on: bool = True):
    """Within it, terminal tables keep every cell whole (``gpudb --wide``)."""
    global _FULL_WIDTH
    before, _FULL_WIDTH = _FULL_WIDTH, on
    try:
        yield
    finally:
        _FULL_WIDTH = before


def format_rows(columns: list[str], rows: list[tuple], fmt: str = "table",
                total: int | None = None) -> str:
    """Rows rendered in `fmt`: 'table' (aligned, numbers right-aligned, floats to 4
    significant digits, text cut to a terminal's width, a row count below: 'N of ``total``
    rows' when the rows are the first of more) or 'markdown' (a GitHub table, nothing cut)
    for notes and reports; 'csv' and 'json' at full precision. NULL is an empty cell (null
    in JSON)."""
    if fmt == "json":  # json.dumps writes every non-ASCII character as \uXXXX
        return json.dumps(json_records(columns, rows), indent=1) + "\n"
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        # CSV keeps a cell's line breaks and tabs (quoted), never a terminal's control codes
        writer.writerow([printable(c, keep="\n\t") for c in columns])
        writer.writerows(["" if v is None else printable(v, keep="\n\t")
                          if isinstance(v, str) else v for v in row] for row in rows)
        return buffer.getvalue()
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r} (formats: {', '.join(FORMATS)})")
    numeric = [any(_is_number(row[i]) for row in rows)
               and all(_is_number(row[i]) or row[i] is None for row in rows)
               for i in range(len(columns))]
    cells = [[cell_text(v) for v in row] for row in rows]
    columns = [cell_text(c) for c in columns]  # a query's own names come from the file too
    align = ["right" if num else "left" for num in numeric]
    if fmt == "markdown":
        def escape(text: str) -> str:
            return text.replace("|", "\\|")  # a bare | would end the cell

        # blank lines around it: a table right after a line of text would continue its paragraph
        return "\n" + tabulate([[escape(c) for c in row] for row in cells],
                               [escape(c) for c in columns], tablefmt="github",
                               disable_numparse=True, colalign=align) + "\n\n"
    # a terminal's width (or $COLUMNS); printed to a pipe or file (width 0), nothing is cut,
    # so ids and descriptions reach grep and scripts whole
    width = terminal_width()
    if width:
        cells = _fit(columns, cells, numeric, width)
    table = tabulate(cells, columns, tablefmt="simple", disable_numparse=True, colalign=align)
    lines = [line.rstrip() for line in table.splitlines()]
    if total is not None and total > len(rows):
        lines.append(f"({len(rows)} of {total} rows: --limit N or --all for more)")
    else:
        lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines) + "\n"


# -- shaping a stored query's table for a person at a terminal (gpudb query) ------------------

# rows a terminal table shows by default (gpudb query; --all or --limit for others): a
# screen or two, where 728 rows of `query savings` scrolled the header away
TERMINAL_ROWS = 40


def select_columns(columns: list[str], rows: list[tuple],
                   wanted: list[str]) -> tuple[list[str], list[tuple]]:
    """The ``wanted`` columns, in that order (``--columns``); a name the table lacks is a
    ValueError of one line with the close matches, else the columns there are."""
    from gpudb.store.names import unknown

    for name in wanted:
        if name not in columns:
            raise ValueError(unknown("column", name, columns,
                                     see=f"columns: {', '.join(columns)}"))
    index = [columns.index(name) for name in wanted]
    return list(wanted), [tuple(row[i] for i in index) for row in rows]


def drop_empty(columns: list[str], rows: list[tuple]
               ) -> tuple[list[str], list[tuple], list[str]]:
    """The table without the columns that are NULL in every row (a predictor with no
    predictions on these runs), and their names; a table without rows keeps every column."""
    if not rows:
        return columns, rows, []
    keep = [i for i in range(len(columns)) if any(row[i] is not None for row in rows)]
    dropped = [c for i, c in enumerate(columns) if i not in keep]
    return [columns[i] for i in keep], [tuple(row[i] for i in keep) for row in rows], dropped


def column_widths(columns: list[str], rows: list[tuple]) -> list[int]:
    """Each column's width in a 'table' (header or widest cell, as :func:`format_rows`
    writes them), in characters."""
    return [max([len(cell_text(c)) + MIN_PADDING] + [len(cell_text(row[i])) for row in rows])
            for i, c in enumerate(columns)]


def _shared_prefix(values: list) -> str:
    """The part up to and including a '/' that every value starts with ('' if none): the
    suite of kernel ids of one suite ('cuda-sdk-rodinia/')."""
    if not values or not all(isinstance(v, str) for v in values):
        return ""
    prefix = values[0][:values[0].rfind("/") + 1]
    for value in values[1:]:
        while prefix and not value.startswith(prefix):
            prefix = prefix[:prefix[:-1].rfind("/") + 1]
    # a value that is the prefix itself would be left empty
    return prefix if all(len(v) > len(prefix) for v in values) else ""


def table_width(columns: list[str], rows: list[tuple]) -> int:
    """The width of the 'table' of these rows, in characters."""
    widths = column_widths(columns, rows)
    return sum(widths) + _COLUMN_GAP * (len(widths) - 1)


def strip_shared_prefixes(columns: list[str], rows: list[tuple]
                          ) -> tuple[list[tuple], dict[str, str]]:
    """The rows with the '.../' prefix that every value of a column identifying a row
    (:func:`is_key`) shares taken off (the suite of kernel ids of one suite), and the prefix
    taken off each such column: a table too wide for a terminal loses no information so."""
    stripped: dict[str, str] = {}
    for i, column in enumerate(columns):
        prefix = _shared_prefix([row[i] for row in rows]) if is_key(column) else ""
        if prefix:
            stripped[column] = prefix
            rows = [(*row[:i], row[i][len(prefix):], *row[i + 1:]) for row in rows]
    return rows, stripped


def lift_constants(columns: list[str], rows: list[tuple]
                   ) -> tuple[list[str], list[tuple], list[tuple[str, str]]]:
    """A table of two rows or more without the columns holding one value in every row
    (``-p objective edp`` makes a column of 'edp'), and (column, value as a cell) of each,
    for one line above or below it; the first column stays if all are constant."""
    if len(rows) < 2:
        return columns, rows, []
    same = [i for i in range(len(columns)) if all(row[i] == rows[0][i] for row in rows)]
    if len(same) == len(columns):
        same = same[1:]
    lifted = [(columns[i], cell_text(rows[0][i])) for i in same]
    keep = [i for i in range(len(columns)) if i not in same]
    return [columns[i] for i in keep], [tuple(row[i] for i in keep) for row in rows], lifted


def fit_columns(columns: list[str], rows: list[tuple], width: int, first: tuple[str, ...] = ()
                ) -> tuple[list[str], list[tuple], list[str]]:
    """The columns of a table that fit ``width`` characters, and the names of those left
    out: the columns that identify a row (:func:`is_key`) always, then ``first`` (the
    query's most telling columns), then the rest in order, up to the first that does not
    fit; the kept ones stay in the table's order. A table that fits is returned whole."""
    if table_width(columns, rows) <= width:
        return columns, rows, []
    widths = column_widths(columns, rows)
    order = ([i for i, c in enumerate(columns) if is_key(c)]
             + [columns.index(c) for c in first if c in columns and not is_key(c)])
    order += [i for i in range(len(columns)) if i not in order]
    kept: list[int] = []
    used = -_COLUMN_GAP
    for i in order:
        # up to the first that does not fit: a narrower one after it would pair an EDP
        # setting with no saving beside it
        if not is_key(columns[i]) and used + _COLUMN_GAP + widths[i] > width:
            break
        kept.append(i)
        used += _COLUMN_GAP + widths[i]
    kept.sort()
    left_out = [c for i, c in enumerate(columns) if i not in kept]
    return [columns[i] for i in kept], [tuple(row[i] for i in kept) for row in rows], left_out


def terminal_width() -> int:
    """The terminal's width in characters: $COLUMNS where set; else 0 when standard output
    is a pipe or a file (shutil would measure the process's original terminal instead, which a
    pipe's reader does not have), and under ``gpudb --wide``: nothing is cut or left out
    there."""
    if _FULL_WIDTH:
        return 0
    declared = os.environ.get("COLUMNS", "")
    if declared.isdigit() and int(declared) > 0:
        return int(declared)
    if not sys.stdout.isatty():
        return 0
    return shutil.get_terminal_size(fallback=(0, 0)).columns


@dataclass
class Shown:
    """A table as ``gpudb query`` prints it: the columns and rows kept, ``total`` the rows
    before any were left out, ``notes`` the lines under it saying what was left out, and
    ``width`` the terminal's (0: nothing cut)."""
    columns: list[str]
    rows: list[tuple]
    total: int
    notes: list[str]
    width: int


def shown_rows(columns: list[str], rows: list[tuple], fmt: str, wanted: list[str] | None = None,
               limit: int | None = None, all_rows: bool = False,
               first: tuple[str, ...] = ()) -> Shown:
    """What of a result a reader sees in ``fmt``: ``wanted`` columns only (a name the table
    lacks is a ValueError, :func:`select_columns`), at most ``limit`` rows; in a human format
    without ``wanted`` the columns empty in every row left out; in a table on a terminal (not
    ``all_rows``) the first TERMINAL_ROWS rows, then shared prefixes, constant columns and
    columns that do not fit cut, ``first`` (the query's "Shown first:") kept after the key
    columns. CSV and JSON, and tables to a pipe, keep every row and column."""
    if wanted:
        columns, rows = select_columns(columns, rows, wanted)
    total = len(rows)
    if limit is not None:
        rows = rows[:limit]
    notes = []
    if fmt in HUMAN_FORMATS and not wanted:
        columns, rows, empty = drop_empty(columns, rows)
        if empty:
            notes.append(f"left out, empty in every row: {', '.join(empty)}")
    width = 0 if all_rows or fmt != "table" else terminal_width()
    if width and limit is None:
        rows = rows[:TERMINAL_ROWS]
    if width and table_width(columns, rows) > width:
        rows, stripped = strip_shared_prefixes(columns, rows)
        notes += [f"{column}: {printable(prefix)} left off the front of every row"
                  for column, prefix in stripped.items()]
    if width and not wanted and table_width(columns, rows) > width:
        columns, rows, lifted = lift_constants(columns, rows)
        if lifted:
            notes.append("in every row: " + ", ".join(f"{c} {v}" for c, v in lifted))
    if width and not wanted:
        columns, rows, narrow = fit_columns(columns, rows, width, first)
        if narrow:
            notes.append(f"left out to fit {width} characters: {', '.join(narrow)} "
                         "(--columns A,B to choose, --all for every column)")
    return Shown(columns, rows, total, notes, width)
