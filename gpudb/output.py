"""Printing result rows as an aligned table, CSV or JSON: the one output path of the CLI."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math

FORMATS = ("table", "csv", "json")


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
    return value if isinstance(value, (int, float, str, bool, type(None), list, dict)) else str(value)


def format_rows(columns: list[str], rows: list[tuple], fmt: str = "table") -> str:
    """Rows rendered in `fmt` ('table', 'csv' or 'json'); floats in tables to 6 digits,
    in CSV and JSON at full precision."""
    if fmt == "json":
        return json.dumps([{c: _json_value(v) for c, v in zip(columns, row)} for row in rows],
                          indent=1) + "\n"
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
                         for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [line(columns), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out) + "\n"
