"""gpudb.present.demo: the verdict rule, the readable tables and the closing paragraph, on hand-made
tables (the demo itself runs in test_cli_commands)."""

import re

import pytest

from gpudb.analysis.evaluate import Table
from gpudb.present.demo import (
    accuracy_summary,
    closing_paragraph,
    kernel_length_line,
    objectives_summary,
    readable,
    savings_summary,
    verdict,
)
from gpudb.present.output import format_rows


@pytest.mark.parametrize(("ours", "paper", "word"), [
    (4.0, 4.0, "matches"), (4.99, 4.0, "matches"),       # within 1 point
    (5.01, 4.0, "above paper"), (2.9, 4.0, "below paper"),
    (32.4, 35.0, "matches"), (44.0, 35.0, "above paper"),  # 25% of 35 is 8.75 points
    (26.3, 35.0, "matches"), (26.2, 35.0, "below paper"),
    (-5.1, 10.7, "below paper"), (0.1, 0.0, "matches"),
    (None, 4.0, ""), (4.0, None, ""), (float("nan"), 4.0, ""),
])
def test_verdict(ours, paper, word):
    assert verdict(ours, paper) == word


def test_readable_drops_empty_columns_and_rounds_percentages():
    table = Table(["predictor", "600_mhz_pct", "wu_pct", "n", "ratio"],
                  [("crisp", 2.19834, None, 174, 0.123456), ("lead", 3.65, None, 12, None)])
    out = readable(table)
    assert out.columns == ["predictor", "600 MHz %", "n", "ratio"]
    assert out.rows == [("crisp", 2.2, 174, 0.123456), ("lead", 3.6, 12, None)]


def test_percentages_print_with_one_decimal_and_stay_full_floats_in_csv():
    out = readable(Table(["policy", "edp_saving_pct"], [("a", 7.0), ("b", -0.04), ("c", -41.04)]))
    printed = format_rows(out.columns, out.rows, "table").splitlines()
    assert [line.split()[-1] for line in printed[2:5]] == ["7.0", "0.0", "-41.0"]
    assert format_rows(out.columns, out.rows, "csv").splitlines()[1:] == [
        "a,7.0", "b,0.0", "c,-41.0"]


def test_accuracy_and_savings_summaries_and_the_paragraph():
    per_predictor = Table(
        ["predictor", "600_mhz_pct", "100_mhz_pct", "mape_pct", "max_ape_pct", "n",
         "paper_000_pct"],
        [("stall", 5.3, 74.7, 32.45, 546.7, 174, 35.0), ("crisp", 2.2, 24.4, 10.46, 140, 174, 4.0),
         ("crisp_gpudb", 2.4, 11.0, 5.96, 57.8, 174, None)])
    acc = accuracy_summary(per_predictor)
    assert acc.columns == ["predictor", "600", "100", "all", "paper", "verdict"]
    assert acc.rows == [("stall", 5.3, 74.7, 32.5, 35.0, "matches"),
                        ("crisp", 2.2, 24.4, 10.5, 4.0, "above paper"),
                        ("crisp_gpudb", 2.4, 11.0, 6.0, None, "")]
    control = Table(
        ["policy", "guard", "time_change_pct", "energy_saving_pct", "edp_saving_pct",
         "paper_000_edp_saving_pct"],
        [("dynamic_optimal", "", -0.57, 9.7, 10.1, None),
         ("replay crisp", "guarded", 1.32, 6.3, 5.04, None),
         ("replay crisp", "paper", 10.16, 4.8, -5.10, 10.7),
         ("replay oracle", "guarded", 0.4, 7.0, 6.5, None),
         ("replay oracle", "paper", 0.7, 8.0, 7.8, None)])
    sav = savings_summary(control)
    assert sav.columns == ["policy", "EDP %", "time %", "g EDP %", "g time %", "paper",
                           "verdict", "g verdict"]
    # the guarded controller gets its verdict against the same paper figure
    assert sav.rows == [("dynamic_optimal", 10.1, -0.6, None, None, None, "", None),
                        ("crisp", -5.1, 10.2, 5.0, 1.3, 10.7, "below paper", "below paper"),
                        ("oracle", 7.8, 0.7, 6.5, 0.4, None, "", "")]
    text = closing_paragraph(acc, sav)
    assert text == (
        "Prediction error agrees with paper 000 for stall (32.5% against 35%). It is higher "
        "than the paper reports for crisp (10.5% against 4%). The papers' own controllers, "
        "run as the papers give them, save less EDP than paper 000 reports: crisp (-5.1% "
        "against 10.7%). With gpudb's guard they are below the paper for crisp (5.0% against "
        "10.7%). With gpudb's guard the best controller is crisp (5.0% EDP saving). "
        "The kernels are synthetic, not the papers' benchmarks; README.md, \"Where gpudb "
        "differs from the papers\", measures the cause of each difference.")


def test_a_controller_that_never_moved_is_not_said_to_agree():
    """'EDP savings agree for stall' although stall never moves the clock (issue 30)."""
    control = Table(
        ["policy", "guard", "time_change_pct", "energy_saving_pct", "edp_saving_pct",
         "paper_000_edp_saving_pct"],
        [("replay stall", "guarded", 0.0, 0.0, 0.0, None),
         ("replay stall", "paper", 0.2, 0.8, 0.6, 0.0),
         ("replay lead", "guarded", 3.0, 8.0, 4.9, None),
         ("replay lead", "paper", 50.6, -2.0, -63.4, 6.2)])
    text = closing_paragraph(Table(["predictor"], []), savings_summary(control))
    assert "With gpudb's guard stall never moves the clock (0.0% EDP saving)." in text
    assert "With gpudb's guard, EDP savings agree for lead (4.9% against 6.2%)." in text
    assert "for stall (0.0%" not in text


def test_without_matplotlib_the_figures_are_one_hint_and_no_folder(tmp_path, monkeypatch):
    import sys

    from gpudb.present.demo import demo_figures, write_figures
    from gpudb.store.db import GpudbError

    for module in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as where it is not installed
    folder = tmp_path / "gpudb-figures"
    with pytest.raises(GpudbError, match=r"pip install 'gpudb-dvfs\[plot\]'"):
        write_figures(None, folder, demo_figures("gtx480", "default", "default/twoslope_lm"))
    assert not folder.exists()


def _control(rows):
    return Table(["policy", "guard", "time_change_pct", "energy_saving_pct", "edp_saving_pct",
                  "ed2p_saving_pct", "worst_time_change_pct", "fraction_of_potential",
                  "fraction_of_memoryless"], rows)


def test_objectives_summary_keeps_bounds_and_guarded_controllers():
    """One row per bound and guarded controller: EDP and ED2P savings, the energy objective's
    saving with its fractions of the two bounds (paper 004 section 4.3), and energy within
    the slowdown bound with the mean and worst slowdown; the papers' unguarded rows are
    left to the EDP table."""
    tables = {
        "edp": _control([("dynamic_optimal", "", 1.0, 9.0, 13.18, 15.0, 3.0, 1.0, 1.2),
                         ("replay crisp", "guarded", 1.3, 6.3, 7.52, 8.0, 4.0, 0.57, 0.7),
                         ("replay crisp", "paper", 10.2, 4.8, -5.1, -9.0, 30.0, -0.4, -0.5)]),
        "ed2p": _control([("dynamic_optimal", "", 0.5, 7.0, 11.0, 12.04, 2.0, 1.0, 1.1),
                          ("replay crisp", "guarded", 1.0, 5.0, 6.0, 5.55, 3.0, 0.5, 0.6)]),
        "energy": _control([("dynamic_optimal", "", 9.0, 20.0, 5.0, 1.0, 30.0, 1.0, 1.19),
                            ("replay crisp", "guarded", 5.0, 15.2, 4.0, 1.0, 20.0, 0.764,
                             0.8449)]),
        "energy_perf": _control([("dynamic_optimal", "", 0.98, 4.0, 5.0, 6.0, 1.0, 1.0, 1.0),
                                 ("replay crisp", "guarded", 0.61, 3.04, 3.5, 3.7, 2.46, 0.7,
                                  0.75)])}
    out = objectives_summary(tables)
    assert out.columns == ["policy", "EDP %", "ED2P %", "E %", "E/dyn", "E/mless", "1% E %",
                           "slow %", "worst %"]
    assert out.rows == [("dynamic_optimal", 13.2, 12.0, 20.0, 1.0, 1.19, 4.0, 1.0, 1.0),
                        ("crisp", 7.5, 5.5, 15.2, 0.76, 0.84, 3.0, 0.6, 2.5)]


def test_kernel_length_line_counts_intervals_at_the_top_p_state(query_db):
    """query_db's tiny suite at 1,000 warp instructions per interval, seed 0: the line gives
    the intervals of each kernel's run at the highest core P-state (counted here directly),
    the seed and the energy scope."""
    import gpudb

    con = gpudb.connect(query_db, read_only=True)
    try:
        counts = sorted(n for (n,) in con.execute(
            "SELECT count(*) FROM interval JOIN run USING (run_id) WHERE run.policy = 'fixed' "
            "AND run.gpu_id = 'gtx480' AND run.kernel_id LIKE 'tiny/%' AND run.core_mhz = 700 "
            "GROUP BY run.kernel_id").fetchall())
        line = kernel_length_line(con, "gtx480", "tiny", 0, "chip scope")
    finally:
        con.close()
    median = (counts[0] + counts[-1]) / 2 if len(counts) == 2 else counts[len(counts) // 2]
    assert line.startswith(f"{len(counts)} kernels of {counts[0]}-{counts[-1]} intervals "
                           f"(median {median:g}) of 1,000 warp instructions at the highest "
                           "P-state; seed 0")
    assert line.endswith("energy in chip scope")


# --- the demo's figures under gpudb plot's names; the report's order and cuts (issue 30) ---

def test_demo_figures_are_named_after_what_gpudb_plot_draws():
    from gpudb.present import plots
    from gpudb.present.demo import demo_figures, figure_stem

    figures = demo_figures("gtx480", "default", "default/twoslope_lm")
    stems = [figure_stem(name, params) for name, params in figures]
    assert stems == ["error_by_target", "mape_by_kernel", "savings_summary_guarded",
                     "clock_trace_default_twoslope_lm"]
    # a plain name is the plot's default guard: the papers' unguarded controllers, in the
    # chip's energy, which `gpudb plot savings_summary` draws
    assert plots.get("savings_summary").defaults == {"guard": "paper", "scope": "chip"}
    assert dict(figures)["clock_trace"]["guard"] == "paper"


@pytest.mark.parametrize(("text", "flat"), [
    ("a (b (c) d) e", "a (b, c, d) e"),
    ("x (y (z)) w.", "x (y, z) w."),
    ("plain (one) and (two)", "plain (one) and (two)"),
])
def test_captions_have_no_nested_brackets(text, flat):
    from gpudb.present.report import no_nested

    assert no_nested(text) == flat


@pytest.fixture(scope="module")
def summary_page(query_db, tmp_path_factory):
    """query_db with control results for every objective in the chip's energy (what the
    demo stores), and its report page."""
    import shutil

    import gpudb
    from gpudb.control.results import evaluate
    from gpudb.present.report import build

    tmp = tmp_path_factory.mktemp("summary")
    path = tmp / "summary.duckdb"
    shutil.copy(query_db, path)
    con = gpudb.connect(path)
    try:
        evaluate(con, ["crisp", "oracle"], ["ed2p", "energy_perf"], suite="tiny",
                 scopes=("chip",))
        page = build(con, path, tmp / "report").read_text()
    finally:
        con.close()
    con = gpudb.connect(path, read_only=True)
    try:
        from gpudb.present.report import summaries
        found = summaries(con)
    finally:
        con.close()
    return page, found


def test_report_opens_with_the_demos_summary_then_figures_tables_database(summary_page):
    import html

    page, found = summary_page
    assert [(s.gpu, s.suite, s.seed) for s in found] == [("gtx480", "tiny", 0)]
    sections = re.findall(r"<h2>([^<]*)</h2>", page)
    assert sections == ["tiny, tiny test GPU (measured)", "gtx480 (simulated)", "Database"]
    summary = found[0]
    # the demo's own paragraph and tables open gtx480's section, before its first figure
    start = page.index("<h2>gtx480 (simulated)</h2>")
    first_figure = page.index("<h3>Figures</h3>", start)
    assert re.findall(r"<h3>([^<]*)</h3>", page[start:first_figure]) == [
        "gtx480, suite tiny, seed 0"]
    assert start < page.index(html.escape(summary.paragraph)) < first_figure
    crisp = next(r for r in summary.savings.rows if r[0] == "crisp")
    at = page.index("<td>crisp</td>", page.index("EDP saving %"))
    assert at < first_figure
    assert page[at:].split("</tr>")[0].count(f">{crisp[1]:.1f}<") >= 1
    # the savings figure of the demo (guarded) and the papers' (unguarded), each with its line
    assert ("gpudb plot savings_summary -p gpu_id gtx480 -p suite tiny -p objective edp "
            "-p guard guarded -p scope chip") in page
    assert "<code>gpudb plot savings_summary -p gpu_id gtx480</code>" in page


def test_report_cuts_name_their_query_and_empty_tables_are_one_line(summary_page):
    page, _ = summary_page
    gtx480 = page[page.index("<h2>gtx480 (simulated)</h2>"):page.index("<h2>Database</h2>")]
    tables = gtx480[gtx480.index("<h3>Tables</h3>"):]
    assert re.search(r"the mean over all kernels, \d+ of \d+ rows; the other \d+: "
                     r"<code>gpudb query savings_summary -p scope chip -p gpu_id gtx480</code>",
                     tables)
    assert re.search(r"each predictor over all targets, \d+ of \d+ rows; the other \d+: "
                     r"<code>gpudb query mape_by_predictor -p gpu_id gtx480</code>", tables)
    # no table without a value: wu_error_by_base (no wu model in query_db) is one line
    assert "<p class=\"cap\">wu_error_by_base" not in tables
    assert "<p class=\"cap\">savings_summary: Average savings" in tables
    assert re.search(r"<li>wu_error_by_base: (no rows|left out, its \d+ rows "
                     r"have no value in any % column)", tables)
    assert "gpudb query</code>" not in page      # every cut names its query


def test_the_demo_s_redraw_commands_draw_its_figures_again(query_db, tmp_path):
    """Issue 30: the demo prints, under each figure, the `gpudb plot` command that draws it
    again; run as printed (continuations joined) it writes the same PNG, byte for byte, and
    no line is wider than the demo's 100 columns (4 of indent)."""
    import shlex

    from click.testing import CliRunner

    import gpudb
    from gpudb.cli import cli
    from gpudb.present.demo import (
        demo_figures,
        figure_stem,
        redraw_command,
        write_figures,
    )

    figures = demo_figures("gtx480", "tiny", "tiny/alu")
    # query_db's closed-loop run is crisp's (the demo's is crisp_gpudb's)
    figures[-1] = ("clock_trace", {**figures[-1][1], "predictor": "crisp"})
    con = gpudb.connect(query_db, read_only=True)
    try:
        written = write_figures(con, tmp_path / "demo", figures)
    finally:
        con.close()
    again = tmp_path / "again"
    again.mkdir()
    for path, (name, params) in zip(written, figures, strict=True):
        command = redraw_command(name, params, path.name, 96)
        assert all(len(line) <= 96 for line in command.splitlines()), command
        argv = shlex.split(command.replace(" \\\n", " "))
        assert argv[:3] == ["gpudb", "plot", name] and argv[-2:] == ["--out", path.name]
        assert path.name == f"{figure_stem(name, params)}.png"
        result = CliRunner().invoke(cli, ["--db", str(query_db), *argv[1:-1],
                                          str(again / path.name)])
        assert result.exit_code == 0, result.output
        assert (again / path.name).read_bytes() == path.read_bytes(), name
