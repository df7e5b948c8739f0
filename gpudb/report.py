"""``gpudb report --out DIR``: one self-contained HTML page (DIR/report.html) that a teammate
opens in a browser: the database's info, the stored analyses that have rows as tables, and
every plot that has data, embedded as PNG data URIs (no other file to carry along).

Tables use the demo's readable form (gpudb.demo.readable: percentages to one decimal, no
empty columns); plots are gpudb.plots' own, so the page shows what `gpudb plot` draws.
"""

from __future__ import annotations

import base64
import html
import os
import tempfile
from pathlib import Path

import duckdb

from gpudb import db, plots
from gpudb.db import GpudbError
from gpudb.demo import readable
from gpudb.evaluate import Table
from gpudb.output import cell_text, fetch, printable
from gpudb.queries import get_query, run_query

# the stored analyses a reader looks at first, in this order (others: `gpudb query --list`)
REPORT_QUERIES = ("mape_by_predictor", "error_by_target", "savings_summary",
                  "fraction_of_potential", "equalizer_vs_static", "error_by_setting",
                  "wu_error_by_base")
# a table longer than this shows its first rows and says how many it left out
MAX_ROWS = 60

STYLE = """body{font-family:sans-serif;margin:2em;max-width:90em}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 6px}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#eee}
img{max-width:100%;border:1px solid #ddd}figure{margin:1em 0 2em}"""


def _table_html(table: Table, caption: str) -> str:
    head = "".join(f"<th>{html.escape(cell_text(c))}</th>" for c in table.columns)
    body = []
    for row in table.rows[:MAX_ROWS]:
        cells = "".join(
            f"<td class=\"n\">{html.escape(cell_text(v))}</td>" if isinstance(v, int | float)
            else f"<td>{html.escape(cell_text(v))}</td>" for v in row)
        body.append(f"<tr>{cells}</tr>")
    more = (f"<p>{len(table.rows) - MAX_ROWS} more rows: <code>gpudb query</code></p>"
            if len(table.rows) > MAX_ROWS else "")
    return (f"<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>{more}")


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    return text.split(". ")[0].rstrip(".") + "."


def _info_tables(con: duckdb.DuckDBPyConnection) -> list[tuple[str, Table]]:
    from gpudb.transfer import TABLES

    counts = Table(["table", "rows"], [(t, db.first_row(con.execute(
        f"SELECT count(*) FROM {t}"))[0]) for t in TABLES])
    columns, rows = fetch(con, (
        "SELECT e.name AS experiment, count(r.run_id) AS runs, "
        "count(DISTINCT r.kernel_id) AS kernels, string_agg(DISTINCT r.gpu_id, ', ') AS gpus, "
        "min(r.source) AS source FROM experiment AS e LEFT JOIN run AS r USING (experiment_id) "
        "GROUP BY e.name, e.created_at ORDER BY e.created_at, e.name"))
    return [("rows per table", counts), ("experiments", Table(columns, rows))]


def _figures(con: duckdb.DuckDBPyConnection, folder: Path) -> tuple[list, list]:
    """(drawn: (plot, PNG bytes), skipped: (plot name, reason)) for every registered plot,
    with its default parameters."""
    drawn, skipped = [], []
    for name, plot in plots.registry().items():
        try:
            path = plots.render(con, name, {}, folder / f"{name}.png")
        except GpudbError as why:
            skipped.append((name, str(why)))
            continue
        drawn.append((plot, path.read_bytes()))
    return drawn, skipped


def build(con: duckdb.DuckDBPyConnection, db_path: str | Path, out_dir: str | Path) -> Path:
    """Write ``out_dir``/report.html from the database; returns its path. The page replaces
    an older one only when complete. Raises GpudbError without matplotlib (the install
    hint) or when ``out_dir`` is a file."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise GpudbError(f"--out {out_dir} is a file, not a folder")
    plots.matplotlib_canvas()
    meta = db.file_info(con)
    parts = [f"<h1>gpudb report: {html.escape(Path(db_path).name)}</h1>",
             f"<p>schema version {meta['schema_version']}, written by gpudb "
             f"{html.escape(str(meta['written_by']))}; report by gpudb "
             f"{html.escape(str(meta['gpudb_version']))}</p>", "<h2>Database</h2>"]
    parts += [_table_html(table, caption) for caption, table in _info_tables(con)]
    parts.append("<h2>Analyses</h2>")
    for name in REPORT_QUERIES:
        columns, rows = run_query(con, name)
        if rows:
            parts.append(_table_html(readable(Table(columns, rows)),
                                     f"{name}: {_first_sentence(get_query(name).description)}"))
    with tempfile.TemporaryDirectory(prefix="gpudb-report-") as tmp:
        drawn, skipped = _figures(con, Path(tmp))
    parts.append("<h2>Figures</h2>")
    for plot, png in drawn:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<figure><img alt=\"{html.escape(plot.name)}\" "
                     f"src=\"data:image/png;base64,{data}\"><figcaption><b>"
                     f"{html.escape(plot.name)}</b> ({html.escape(plot.figure)}): "
                     f"{html.escape(plot.description)}</figcaption></figure>")
    if skipped:
        parts.append("<p>Not drawn (no data in this database):</p><ul>" + "".join(
            f"<li>{html.escape(name)}: {html.escape(printable(why))}</li>"
            for name, why in skipped)
            + "</ul>")
    page = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>gpudb report: {html.escape(Path(db_path).name)}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>\n")
    target = out / "report.html"
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, tmp_page = tempfile.mkstemp(dir=out, prefix=".report.", suffix=".html")
    except OSError as exc:  # a folder not writable, a full disk
        raise GpudbError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
        os.chmod(tmp_page, 0o644)
        os.replace(tmp_page, target)
    except OSError as exc:
        raise GpudbError(f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp_page):
            os.remove(tmp_page)
    return target
