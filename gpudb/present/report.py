"""``gpudb report --out DIR``: one self-contained HTML page (DIR/report.html) that a teammate
opens in a browser: the database's info, the stored analyses that have rows as tables, and
every plot that has data, embedded as PNG data URIs (no other file to carry along).

Tables use the demo's readable form (gpudb.present.demo.readable: percentages to one decimal, no
empty columns); plots are gpudb.present.plots' own, so the page shows what `gpudb plot` draws.
"""

from __future__ import annotations

import base64
import html
import os
import re
import shlex
import tempfile
from pathlib import Path

import duckdb

from gpudb.analysis.evaluate import Table
from gpudb.present import plots
from gpudb.present.demo import readable
from gpudb.present.output import cell_text, fetch, printable
from gpudb.store import db
from gpudb.store.db import GpudbError
from gpudb.store.queries import get_query, run_query

# The stored analyses a reader looks at after the summary, in this order (others: `gpudb
# query --list`): (query, its parameters, the rows kept, what the kept rows are). Each is cut
# to its aggregate rows to fit the page; the line under it names the query that prints the rest.
REPORT_TABLES = (
    ("mape_by_predictor", {}, lambda r: r["target_core_mhz"] is None,
     "each predictor over all targets"),
    ("error_by_target", {}, None, ""),
    ("savings_summary", {"scope": "chip"}, lambda r: r["category"] == "all",
     "the mean over all kernels"),
    ("fraction_of_potential", {"scope": "chip"}, lambda r: r["kernel_id"] is None,
     "the overall rows"),
    ("equalizer_vs_static", {}, lambda r: r["kernel_id"] is None, "the overall rows"),
    ("error_by_setting", {}, None, ""),
    ("wu_error_by_base", {}, None, ""),
)
# a table longer than this, after its aggregation, shows its first rows and names the rest
MAX_ROWS = 60

STYLE = """body{font-family:sans-serif;margin:2em;max-width:90em}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 6px}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#eee}
p.cap{margin:1em 0 .2em;max-width:60em}p.cut{margin-top:-1em;color:#555}
img{max-width:100%;border:1px solid #ddd}figure{margin:1em 0 2em}"""


def command(name: str, params: dict, verb: str = "query") -> str:
    """The `gpudb query` (or `gpudb plot`) line that prints what a table or figure shows."""
    return " ".join([f"gpudb {verb} {name}",
                     *(f"-p {k} {shlex.quote(str(v))}" for k, v in params.items())])


def no_nested(text: str) -> str:
    """``text`` with brackets inside brackets turned into commas, so a caption reads in one
    level: 'a (b (c) d)' -> 'a (b, c, d)'."""
    out, depth = [], 0
    for ch in text:
        depth += ch == "("
        out.append(", " if ch in "()" and depth > 1 else ch)
        depth -= ch == ")"
    flat = re.sub(r"\s*,(\s*,)*\s*", ", ", "".join(out))
    return re.sub(r", ([).:;])", r"\1", flat)


def _table_html(table: Table, caption: str, cut: str = "") -> str:
    """A table with its caption; ``cut``: the line saying what was left out and which command
    prints it (empty when nothing was)."""
    head = "".join(f"<th>{html.escape(cell_text(c))}</th>" for c in table.columns)
    body = []
    for row in table.rows:
        cells = "".join(
            f"<td class=\"n\">{html.escape(cell_text(v))}</td>" if isinstance(v, int | float)
            else f"<td>{html.escape(cell_text(v))}</td>" for v in row)
        body.append(f"<tr>{cells}</tr>")
    more = f"<p class=\"cut\">{cut}</p>" if cut else ""
    # the caption as a paragraph above: a <caption> is as narrow as its table
    return (f"<p class=\"cap\">{html.escape(no_nested(caption))}</p><table><thead><tr>"
            f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}")


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    for abbreviation in ("i.e.", "e.g."):   # not a sentence's end
        text = text.replace(abbreviation, abbreviation.replace(".", "\0"))
    return (text.split(". ")[0].rstrip(".") + ".").replace("\0", ".")


def query_table(con: duckdb.DuckDBPyConnection, name: str, params: dict, keep, kept: str
                ) -> tuple[str, Table | None, str]:
    """One stored analysis for the page: (caption, the readable table or None when it has no
    value to show, the line under it: what was cut and the command printing it all, or why
    the table is left out)."""
    columns, rows = run_query(con, name, params)
    caption = f"{name}: {_first_sentence(get_query(name).description)}"
    line = html.escape(command(name, params))
    if not rows:
        return caption, None, f"{name}: no rows in this database: <code>{line}</code>"
    measures = [i for i, c in enumerate(columns) if c.endswith("_pct")]
    if measures and all(r[i] is None for r in rows for i in measures):
        return caption, None, (
            f"{name}: left out, its {len(rows)} rows have no value in any % column such as "
            f"{', '.join(columns[i] for i in measures[:3])}: <code>{line}</code>")
    shown = rows
    cut = ""
    if keep is not None:
        records = [dict(zip(columns, r, strict=True)) for r in rows]
        shown = [r for r, rec in zip(rows, records, strict=True) if keep(rec)]
        if len(shown) < len(rows):
            cut = (f"{kept}, {len(shown)} of {len(rows)} rows; the other {len(rows) - len(shown)}:"
                   f" <code>{line}</code>")
    if len(shown) > MAX_ROWS:
        cut = (f"the first {MAX_ROWS} of {len(shown)} rows; {len(shown) - MAX_ROWS} more "
               f"rows: <code>{line}</code>")
        shown = shown[:MAX_ROWS]
    return caption, readable(Table(columns, shown)), cut


def _info_tables(con: duckdb.DuckDBPyConnection) -> list[tuple[str, Table]]:
    from gpudb.store.transfer import TABLES

    counts = Table(["table", "rows"], [(t, db.first_row(con.execute(
        f"SELECT count(*) FROM {t}"))[0]) for t in TABLES])
    columns, rows = fetch(con, (
        "SELECT e.name AS experiment, count(r.run_id) AS runs, "
        "count(DISTINCT r.kernel_id) AS kernels, string_agg(DISTINCT r.gpu_id, ', ') AS gpus, "
        "min(r.source) AS source FROM experiment AS e LEFT JOIN run AS r USING (experiment_id) "
        "GROUP BY e.name, e.created_at ORDER BY e.created_at, e.name"))
    return [("rows per table", counts), ("experiments", Table(columns, rows))]


def summaries(con: duckdb.DuckDBPyConnection) -> list:
    """The demo's summary (gpudb.present.demo.summary) of each simulated GPU and suite with control
    results in the chip's energy for every objective the demo evaluates, on its lowest seed
    (a measured GPU's demo prints other tables: `gpudb evaluate accuracy` and `control`)."""
    from gpudb.present import demo
    from sim.config import available

    found = con.execute("""
        SELECT gpu_id, split_part(kernel_id, '/', 1) AS suite, min(seed)
        FROM control_result WHERE energy_scope = 'chip' AND kernel_id LIKE '%/%'
        GROUP BY ALL HAVING count(DISTINCT objective) = ? ORDER BY ALL""",
                        [len(demo.OBJECTIVES)]).fetchall()
    simulated = set(available("gpus"))
    return [demo.summary(con, gpu, suite, seed) for gpu, suite, seed in found
            if gpu in simulated]


def _summary_html(summary) -> list[str]:
    from gpudb.present import demo

    seed = "" if summary.seed is None else f", seed {summary.seed}"
    return [
        f"<h3>{html.escape(summary.gpu)}, suite {html.escape(summary.suite)}{seed}</h3>",
        f"<p>{html.escape(summary.length)}</p>" if summary.length else "",
        f"<p>{html.escape(summary.paragraph)}</p>",
        _table_html(summary.accuracy, "Prediction error, paper 000 figure 8, whole runs: MAPE % "
                    "from the highest core P-state to each lower one; columns: target core "
                    "MHz, all: over every target, paper: paper 000's."),
        _table_html(summary.savings, "EDP saving % against always running at the highest "
                    "P-state, paper 000 figures 11-12, chip energy as the paper's, mean over "
                    "the kernels. EDP, time: the papers' controller as they give it; g: with "
                    "gpudb's guard; paper: paper 000's. The first rows are offline bounds.",
                    html.escape(demo.verdict_rule())),
        _table_html(summary.objectives, "Every objective, the bounds and gpudb's guarded "
                    "controllers, chip energy, savings % against the highest P-state: E: the "
                    "energy objective, E/dyn and E/mless its fraction of the dynamic optimal's "
                    "and of perfect memoryless's saving, paper 004 section 4.3; 1% E: energy "
                    "within 1% slowdown, slow and worst its mean and worst slowdown %.")]


def _figure_list(con: duckdb.DuckDBPyConnection, summaries: list) -> list[tuple[str, dict]]:
    """The demo's figures of each summary, then every plot with its defaults that the demo
    did not draw."""
    from gpudb.present import demo

    figures = []
    for summary in summaries:
        figures += demo.demo_figures(summary.gpu, summary.suite,
                                     demo.demo_kernel(con, summary.suite))
    # a plot's default drawing unless the demo drew it with the same guard (the papers'
    # unguarded savings stay beside the demo's guarded ones)
    drawn = {(name, params.get("guard")) for name, params in figures}
    return figures + [(name, {}) for name, plot in plots.registry().items()
                      if (name, plot.defaults.get("guard")) not in drawn]


def _figures(con: duckdb.DuckDBPyConnection, folder: Path, figures: list[tuple[str, dict]]
             ) -> tuple[list, list]:
    """(drawn: (plot, its parameters, PNG bytes), skipped: (plot name, reason))."""
    drawn, skipped = [], []
    for k, (name, params) in enumerate(figures):
        try:
            path = plots.render(con, name, {p: str(v) for p, v in params.items()},
                                folder / f"{k}.png")
        except GpudbError as why:
            skipped.append((name, str(why)))
            continue
        drawn.append((plots.get(name), params, path.read_bytes()))
    return drawn, skipped


def build(con: duckdb.DuckDBPyConnection, db_path: str | Path, out_dir: str | Path) -> Path:
    """Write ``out_dir``/report.html from the database; returns its path. The page opens
    with the demo's summary and verdicts (each GPU and suite with control results), then the
    figures, then the stored analyses cut to their aggregate rows, each cut naming the
    command that prints the rest. The page replaces an older one only when complete. Raises
    GpudbError without matplotlib (the install hint) or when ``out_dir`` is a file."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise GpudbError(f"--out {out_dir} is a file, not a folder")
    plots.matplotlib_canvas()
    meta = db.file_info(con)
    parts = [f"<h1>gpudb report: {html.escape(Path(db_path).name)}</h1>",
             f"<p>schema version {meta['schema_version']}, written by gpudb "
             f"{html.escape(str(meta['written_by']))}; report by gpudb "
             f"{html.escape(str(meta['gpudb_version']))}</p>"]
    found = summaries(con)
    if found:
        parts.append("<h2>Summary</h2>")
        for summary in found:
            parts += _summary_html(summary)
    with tempfile.TemporaryDirectory(prefix="gpudb-report-") as tmp:
        drawn, skipped = _figures(con, Path(tmp), _figure_list(con, found))
    parts.append("<h2>Figures</h2>")
    for plot, params, png in drawn:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<figure><img alt=\"{html.escape(plot.name)}\" "
                     f"src=\"data:image/png;base64,{data}\"><figcaption><b>"
                     f"{html.escape(plot.name)}</b>, {html.escape(plot.figure)}: "
                     f"{html.escape(no_nested(plot.description))}. "
                     f"<code>{html.escape(command(plot.name, params, 'plot'))}</code>"
                     "</figcaption></figure>")
    if skipped:
        parts.append("<p>Not drawn, no data in this database:</p><ul>" + "".join(
            f"<li>{html.escape(name)}: {html.escape(printable(why))}</li>"
            for name, why in skipped)
            + "</ul>")
    parts.append("<h2>Tables</h2>")
    left_out = []
    for name, params, keep, kept in REPORT_TABLES:
        caption, table, line = query_table(con, name, params, keep, kept)
        if table is None:
            left_out.append(line)
        else:
            parts.append(_table_html(table, caption, line))
    if left_out:
        parts.append("<p>Left out:</p><ul>" + "".join(f"<li>{x}</li>" for x in left_out)
                     + "</ul>")
    parts.append("<h2>Database</h2>")
    parts += [_table_html(table, caption) for caption, table in _info_tables(con)]
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
