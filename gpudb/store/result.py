"""A result table: what a stored query, an evaluation or gpudb's Python API returns.

Rows as fetched (``columns``, ``rows``), with the conversions a notebook wants: Arrow
(pyarrow, a dependency), pandas and polars (the ``pandas`` and ``polars`` extras), and an
HTML rendering for Jupyter that escapes every cell (cells can come from a teammate's file).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import pyarrow as pa

_HTML_ROWS = 40  # a notebook cell shows the first rows; .df() has them all


@dataclass
class Table:
    """Column names and the rows under them (tuples, in column order)."""
    columns: list[str]
    rows: list[tuple]

    def arrow(self) -> pa.Table:
        """The rows as a pyarrow Table (column types inferred from the values)."""
        return pa.table({name: [row[i] for row in self.rows]
                         for i, name in enumerate(self.columns)})

    def df(self):
        """The rows as a pandas DataFrame (pip install 'gpudb-dvfs[pandas]')."""
        _need("pandas")
        return self.arrow().to_pandas()

    def pl(self):
        """The rows as a polars DataFrame (pip install 'gpudb-dvfs[polars]')."""
        _need("polars")
        import polars

        return polars.from_arrow(self.arrow())

    def __len__(self) -> int:
        return len(self.rows)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
            for row in self.rows[:_HTML_ROWS])
        more = (f"<p>{len(self.rows) - _HTML_ROWS} more rows: .df() has them all</p>"
                if len(self.rows) > _HTML_ROWS else "")
        return (f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                f"<p>{len(self.rows)} rows x {len(self.columns)} columns</p>{more}")


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _need(module: str) -> None:
    import importlib.util

    from gpudb.store.db import GpudbError

    if importlib.util.find_spec(module) is None:
        raise GpudbError(f"{module} is not installed: pip install 'gpudb-dvfs[{module}]'")


class Tables(dict):
    """Named result tables in the order they are read (an evaluation's several tables),
    with ``notes``: the lines a reader needs beside them (what was left out and why, the
    papers' figures' provenance), as the CLI prints them before the tables; ``captions``: what
    a table shows, printed above it; ``footnotes``: how to read it (a verdict's rule),
    printed below it (both by table name, text that may span lines)."""

    def __init__(self, tables=(), notes: list[str] | None = None,
                 captions: dict[str, str] | None = None,
                 footnotes: dict[str, str] | None = None):
        super().__init__(tables)
        self.notes: list[str] = list(notes or [])
        self.captions: dict[str, str] = dict(captions or {})
        self.footnotes: dict[str, str] = dict(footnotes or {})

    def _repr_html_(self) -> str:
        def text(lines: str | None) -> str:
            return "".join(f"<p>{html.escape(line)}</p>"
                           for line in (lines or "").splitlines() if line.strip())

        parts = [f"<p>{html.escape(note)}</p>" for note in self.notes]
        parts += [f"<h4>{html.escape(name)}</h4>{text(self.captions.get(name))}"
                  f"{table._repr_html_()}{text(self.footnotes.get(name))}"
                  for name, table in self.items()]
        return "".join(parts)
