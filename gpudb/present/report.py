"""``gpudb report DIR``: one self-contained HTML page (DIR/report.html) that a teammate
opens in a browser: a section per GPU (measured GPUs first), each with the GPU's own figures and
stored analyses (GPUs are never pooled: their clock grids differ), the figures embedded as PNG
data URIs (no other file to carry along), then the database's info. A measured GPU's section
opens with its summary: runs, kernels and clock grid, the least-energy and least-EDP setting
of each kernel with its saving against the nominal (highest) setting, and each predictor's
accuracy on the GPU.

Tables use the demo's readable form (gpudb.present.demo.readable: percentages to one decimal, no
empty columns); plots are gpudb.present.plots' own, so the page shows what `gpudb plot` draws.
"""

from __future__ import annotations

import base64
import contextlib
import html
import os
import re
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb

from gpudb.store.result import Table
from gpudb.present import plots
from gpudb.present.demo import readable
from gpudb.predictors import names
from gpudb.present.output import cell_text, fetch, printable
from gpudb.store import db
from gpudb.store.db import GpudbError
from gpudb.store.queries import get_query, run_query

# The stored analyses a reader looks at after the summary, in this order (others: `gpudb
# query --list`): (query, its parameters, the rows kept, what the kept rows are). Each is run
# once and split by its first column, gpu_id, into the GPUs' sections, and cut to its aggregate
# rows to fit the page; the line under it names the query that prints the rest.
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
# A plot's query that has rows only where a table's query has (both from view
# core_scaling_error at the same default base and filters)
SAME_ROWS = {"mape_by_kernel": "mape_by_predictor"}
# a table longer than this, after its aggregation, shows its first rows and names the rest
MAX_ROWS = 60

STYLE = """body{font-family:sans-serif;margin:2em;max-width:90em}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 6px}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#eee}
p.cap{margin:1em 0 .2em;max-width:60em}p.cut{margin-top:-1em;color:#555}
img{max-width:100%;border:1px solid #ddd}figure{margin:1em 0 2em}
h2{border-top:2px solid #888;padding-top:.5em}"""


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


def query_tables(name: str, params: dict, keep, kept: str, result: tuple[list, list],
                 gpus: list[str]) -> dict[str, tuple[str, Table | None, str]]:
    """One stored analysis for each GPU's section from its ``result`` (columns, rows), the
    rows split by their first column, gpu_id: per GPU (caption, the readable table without
    the gpu_id column, or None when it has no value to show; the line under it: what was cut
    and the command printing it all, or why the table is left out)."""
    columns, rows = result
    description = _first_sentence(get_query(name).description)
    out = {}
    for gpu in gpus:
        out[gpu] = one_table(name, {**params, "gpu_id": gpu}, description, columns[1:],
                             [r[1:] for r in rows if r[0] == gpu], keep, kept)
    return out


def one_table(name: str, params: dict, description: str, columns: list[str], rows: list,
              keep, kept: str) -> tuple[str, Table | None, str]:
    """query_tables' answer for one GPU's rows of query ``name`` (``params``: those that
    print them)."""
    caption = f"{name}: {description}"
    line = html.escape(command(name, params))
    if not rows:
        return caption, None, f"{name}: no rows: <code>{line}</code>"
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


@dataclass(frozen=True)
class Gpu:
    """A GPU with runs in the file: its id, its name (the gpu table's, if any), whether any
    of its runs is measured (run.source), and its runs."""
    gpu_id: str
    name: str | None
    measured: bool
    runs: int


def gpus_with_runs(con: duckdb.DuckDBPyConnection) -> list[Gpu]:
    """Every GPU with runs, measured GPUs first (what their users read first), then by id."""
    return [Gpu(*row) for row in con.execute("""
        SELECT r.gpu_id, any_value(g.name), bool_or(r.source = 'measured'), count(*)
        FROM run AS r LEFT JOIN gpu AS g USING (gpu_id)
        GROUP BY r.gpu_id
        ORDER BY bool_or(r.source = 'measured') DESC, r.gpu_id""").fetchall()]


def _clocks(values: list[float]) -> str:
    """'705, 810, 1215 MHz (3)'; beyond eight clocks the range: '705-1710 MHz (12 clocks)'."""
    if len(values) > 8:
        return f"{values[0]:g}-{values[-1]:g} MHz ({len(values)} clocks)"
    return f"{', '.join(f'{v:g}' for v in values)} MHz"


def _setting(core_mhz, mem_mhz, n_sm, base_n_sm) -> str:
    """A setting as 'core/memory' MHz, with its SM count where it is not the nominal's."""
    text = f"{core_mhz:g}/{mem_mhz:g}"
    return text if n_sm == base_n_sm or n_sm is None else f"{text}, {n_sm} SMs"


def measured_summary(con: duckdb.DuckDBPyConnection, gpu: str, accuracy: tuple[list, list]
                     ) -> list[str]:
    """A measured GPU's summary (HTML parts): its fixed runs, kernels and clock grid; per
    kernel the least-energy and least-EDP setting (queries/best_setting.sql) with its saving
    (%) and slowdown (%) against the nominal setting (the highest); each predictor's MAPE (%)
    over every target from the highest core clock, from ``accuracy``, mape_by_predictor's
    (columns, rows) over every GPU, and the predictors without a prediction there."""
    runs, kernels, settings, cores, mems = db.first_row(con.execute("""
        SELECT count(*), count(DISTINCT kernel_id),
               count(DISTINCT (n_sm, core_mhz, mem_mhz)),
               list(DISTINCT core_mhz ORDER BY core_mhz), list(DISTINCT mem_mhz ORDER BY mem_mhz)
        FROM run WHERE gpu_id = ? AND policy = 'fixed'""", [gpu]))
    parts = [f"<p>{runs} fixed runs of {kernels} kernels at {settings} settings; core "
             f"{_clocks(cores)}, memory {_clocks(mems)}.</p>"]
    columns, rows = run_query(con, "best_setting", {"gpu_id": gpu})
    records = [dict(zip(columns, r, strict=True)) for r in rows]
    if records:
        best = Table(
            ["kernel_id", "settings", "nominal_mhz", "least_energy_mhz", "energy_saving_pct",
             "energy_slowdown_pct", "least_edp_mhz", "edp_saving_pct", "edp_slowdown_pct"],
            [(r["kernel_id"], r["settings"],
              _setting(r["base_core_mhz"], r["base_mem_mhz"], None, None),
              _setting(r["energy_core_mhz"], r["energy_mem_mhz"], r["energy_n_sm"],
                       r["base_n_sm"]),
              r["energy_saving_pct"], r["energy_slowdown_pct"],
              _setting(r["edp_core_mhz"], r["edp_mem_mhz"], r["edp_n_sm"], r["base_n_sm"]),
              r["edp_saving_pct"], r["edp_slowdown_pct"]) for r in records])
        mean = (sum(r["energy_saving_pct"] for r in records) / len(records),
                sum(r["edp_saving_pct"] for r in records) / len(records))
        line = html.escape(command("best_setting", {"gpu_id": gpu}))
        cut = ""
        if len(best.rows) > MAX_ROWS:
            cut = (f"the first {MAX_ROWS} of {len(best.rows)} kernels; all of them, with the "
                   f"least-ED2P setting: <code>{line}</code>")
            best = Table(best.columns, best.rows[:MAX_ROWS])
        parts.append(_table_html(
            readable(best), f"Best setting per kernel (core/memory MHz): the least energy and "
            f"the least EDP, each with its saving and slowdown % against the nominal setting "
            f"(the highest); over the {len(records)} kernels the least-energy settings save "
            f"{mean[0]:.1f}% energy and the least-EDP ones {mean[1]:.1f}% EDP on average "
            f"(query best_setting)", cut))
    columns, rows = accuracy
    overall = [r for r in (dict(zip(columns, x, strict=True)) for x in rows)
               if r["gpu_id"] == gpu and r["target_core_mhz"] is None]
    missing = [p for p in names() if p not in {r["predictor"] for r in overall}]
    if overall:
        parts.append(_table_html(
            readable(Table(["predictor", "mape_pct", "max_ape_pct", "n"],
                           [(r["predictor"], r["mape_pct"], r["max_ape_pct"], r["n"])
                            for r in overall])),
            "Predictor accuracy: each predictor's time MAPE % and largest error % from the "
            "highest core clock to every other one, at each memory clock (query "
            "mape_by_predictor; per target and kernel: gpudb evaluate accuracy)"))
    parts.append(f"<p>No predictions from the highest core clock on this GPU: "
                 f"{html.escape(', '.join(missing))} (their inputs are interval counters "
                 "measured runs lack, or a model trained for the GPU).</p>" if missing else "")
    return parts


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
    from gpudb.control.energy import OBJECTIVES
    from gpudb.present import demo
    from sim.config import available

    found = con.execute("""
        SELECT gpu_id, split_part(kernel_id, '/', 1) AS suite, min(seed)
        FROM control_result WHERE energy_scope = 'chip' AND kernel_id LIKE '%/%'
        GROUP BY ALL HAVING count(DISTINCT objective) = ? ORDER BY ALL""",
                        [len(OBJECTIVES)]).fetchall()
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


def _figure_list(con: duckdb.DuckDBPyConnection, gpu: str, summaries: list
                 ) -> list[tuple[str, dict]]:
    """One GPU's figures: the demo's of each of its summaries, then every plot with its
    defaults on this GPU that the demo did not draw."""
    from gpudb.present import demo

    figures = []
    for summary in summaries:
        figures += demo.demo_figures(summary.gpu, summary.suite,
                                     demo.demo_kernel(con, summary.suite))
    # a plot's default drawing unless the demo drew it with the same guard (the papers'
    # unguarded savings stay beside the demo's guarded ones)
    drawn = {(name, params.get("guard")) for name, params in figures}
    return figures + [(name, {"gpu_id": gpu}) for name, plot in plots.registry().items()
                      if (name, plot.defaults.get("guard")) not in drawn]


def _figures(con: duckdb.DuckDBPyConnection, folder: Path, figures: list[tuple[str, dict]],
             results: dict, gpu: str) -> tuple[list, list]:
    """(drawn: (plot, its parameters, PNG bytes), skipped: (plot name, reason)). A plot is
    skipped unrun where a table of the page (``results``, REPORT_TABLES' (columns, rows)) that
    reads the same rows with fewer parameters has none for ``gpu``: the accuracy queries take
    a second each, even on a small file."""
    tables = {name: params for name, params, *_ in REPORT_TABLES}
    drawn, skipped = [], []
    for k, (name, params) in enumerate(figures):
        plot = plots.get(name)
        query = SAME_ROWS.get(plot.queries[0], plot.queries[0])
        if (query in tables and not any(r[0] == gpu for r in results[query][1])
                and tables[query].items() <= {**plot.defaults, **params}.items()):
            skipped.append((name, f"query {query} has no rows for this GPU"))
            continue
        try:
            path = plots.render(con, name, {p: str(v) for p, v in params.items()},
                                folder / f"{k}.png")
        except GpudbError as why:
            skipped.append((name, str(why)))
            continue
        drawn.append((plots.get(name), params, path.read_bytes()))
    return drawn, skipped


def _figures_html(drawn: list, skipped: list) -> list[str]:
    parts = []
    for plot, params, png in drawn:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<figure><img alt=\"{html.escape(plot.name)}\" "
                     f"src=\"data:image/png;base64,{data}\"><figcaption><b>"
                     f"{html.escape(plot.name)}</b>, {html.escape(plot.figure)}: "
                     f"{html.escape(no_nested(plot.description))}. "
                     f"<code>{html.escape(command(plot.name, params, 'plot'))}</code>"
                     "</figcaption></figure>")
    if skipped:
        parts.append("<p>Not drawn, no data for this GPU:</p><ul>" + "".join(
            f"<li>{html.escape(name)}: {html.escape(printable(why))}</li>"
            for name, why in skipped) + "</ul>")
    return parts


def build(con: duckdb.DuckDBPyConnection, db_path: str | Path, out_dir: str | Path) -> Path:
    """Write ``out_dir``/report.html from the database; returns its path. The page has a
    section per GPU with runs, measured GPUs first: a measured GPU's opens with its summary
    (measured_summary), a simulated GPU's with the demo's summary and verdicts (each suite
    with control results); then the GPU's figures, then its stored analyses cut to their
    aggregate rows, each cut naming the command that prints the rest; the database's info
    last. The page replaces an older one only when complete. Raises GpudbError without
    matplotlib (the install hint) or when ``out_dir`` is a file."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise GpudbError(f"{out_dir} is a file, not a folder")
    plots.matplotlib_canvas()
    meta = db.file_info(con)
    gpus = gpus_with_runs(con)
    parts = [f"<h1>gpudb report: {html.escape(Path(db_path).name)}</h1>",
             f"<p>schema version {meta['schema_version']}, written by gpudb "
             f"{html.escape(str(meta['written_by']))}; report by gpudb "
             f"{html.escape(str(meta['gpudb_version']))}</p>",
             "<p>GPUs: " + (", ".join(
                 f"{html.escape(g.gpu_id)} ({'measured' if g.measured else 'simulated'}, "
                 f"{g.runs} runs)" for g in gpus) or "none with runs") + "</p>"]
    found = summaries(con)
    results = {name: run_query(con, name, params) for name, params, *_ in REPORT_TABLES}
    tables = {name: query_tables(name, params, keep, kept, results[name],
                                 [g.gpu_id for g in gpus])
              for name, params, keep, kept in REPORT_TABLES}
    for gpu in gpus:
        title = f"{gpu.gpu_id}, {gpu.name}" if gpu.name and gpu.name != gpu.gpu_id \
            else gpu.gpu_id
        parts.append(f"<h2>{html.escape(title)} ({'measured' if gpu.measured else 'simulated'})"
                     "</h2>")
        mine = [s for s in found if s.gpu == gpu.gpu_id]
        if gpu.measured:
            parts.append("<h3>Summary</h3>")
            parts += measured_summary(con, gpu.gpu_id, results["mape_by_predictor"])
        for summary in mine:
            parts += _summary_html(summary)
        with tempfile.TemporaryDirectory(prefix="gpudb-report-") as tmp:
            drawn, skipped = _figures(con, Path(tmp), _figure_list(con, gpu.gpu_id, mine),
                                      results, gpu.gpu_id)
        parts.append("<h3>Figures</h3>")
        parts += _figures_html(drawn, skipped)
        parts.append("<h3>Tables</h3>")
        left_out = []
        for name, *_ in REPORT_TABLES:
            caption, table, line = tables[name][gpu.gpu_id]
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
    made = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, tmp_page = tempfile.mkstemp(dir=out, prefix=".report.", suffix=".html")
    except OSError as exc:  # a folder not writable, a full disk
        _remove_if_made(out, made)
        raise GpudbError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
        os.chmod(tmp_page, 0o644)
        os.replace(tmp_page, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.remove(tmp_page)
        _remove_if_made(out, made)
        raise GpudbError(f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp_page):
            os.remove(tmp_page)
    return target


def _remove_if_made(folder: Path, made: bool) -> None:
    """The report's folder again, when this call made it and nothing is in it (a full disk
    left an empty one; issue 41 item 7)."""
    if made:
        with contextlib.suppress(OSError):
            folder.rmdir()
