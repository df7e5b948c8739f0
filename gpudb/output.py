"""Printing result rows as an aligned table, CSV or JSON: the one output path of the CLI;
fetching the rows to print, and DuckDB's errors as one line."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

FORMATS = ("table", "csv", "json")

# DuckDB's error kind at the start of its messages ("Binder Error: ", "Invalid Input Error: ")
_ERROR_KIND = re.compile(r"^(?:[A-Z][A-Za-z]* )+Error: ")
# the lines after the first that say what to do instead
_HINTS = ("Did you mean", "Candidate bindings")


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


def fetch(con: duckdb.DuckDBPyConnection, sql: str,
          params: dict | None = None) -> tuple[list[str], list[tuple]]:
    """Run ``sql`` (several statements run in order; the last one's rows count) and fetch
    its column names and rows for printing. A TIMESTAMPTZ value comes as DuckDB's text of it
    (DuckDB's Python conversion of one needs pytz, which gpudb does without)."""
    rel = con.sql(sql, params=params) if params else con.sql(sql)
    if rel is None:  # a statement without a result
        return [], []
    columns = list(rel.columns)
    if any("TIMESTAMP WITH TIME ZONE" in str(t) for t in rel.types):
        exprs = []
        for i, (name, kind) in enumerate(zip(columns, rel.types, strict=True), 1):
            alias = '"' + name.replace('"', '""') + '"'
            zoned = "TIMESTAMP WITH TIME ZONE" in str(kind)
            exprs.append(f"CAST(#{i} AS VARCHAR) AS {alias}" if zoned else f"#{i} AS {alias}")
        rel = rel.project(", ".join(exprs))
    return columns, rel.fetchall()


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.6g}" if abs(value) < 1e15 else f"{value:.6e}"
    return str(value)


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


def format_rows(columns: list[str], rows: list[tuple], fmt: str = "table") -> str:
    """Rows rendered in `fmt` ('table', 'csv' or 'json'); floats in tables to 6 digits,
    in CSV and JSON at full precision."""
    if fmt == "json":
        records = [{c: _json_value(v) for c, v in zip(columns, row, strict=True)} for row in rows]
        return json.dumps(records, indent=1) + "\n"
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(["" if v is None else v for v in row] for row in rows)
        return buffer.getvalue()
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows)
               for i in range(len(columns))]

    def line(values):
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric, strict=True)).rstrip()

    out = [line(columns), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out) + "\n"
