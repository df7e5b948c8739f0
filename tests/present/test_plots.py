"""gpudb plot: each plot's data is its stored query's rows (checked against the query run on
its own, on real DuckDB files), every plot renders a PNG, and the command's errors are one
line with no file written."""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

import gpudb
from gpudb.cli import cli
from gpudb.predictors import registry as predictor_registry
from gpudb.present import plots
from gpudb.store.queries import get_query, run_query

pytest.importorskip("matplotlib", reason="plots need the gpudb-dvfs[plot] extra (matplotlib)")

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def wu_db(tmp_path_factory):
    """The synthetic 2x2x2 grid of test_wu_model with a wu model at every base setting."""
    pytest.importorskip("sklearn", reason="training needs the gpudb-dvfs[ml] extra (scikit-learn)")
    from test_wu_model import build_synthetic

    from gpudb.train.wu_model import train_many

    path = tmp_path_factory.mktemp("plots") / "wu.duckdb"
    build_synthetic(path)
    con = gpudb.connect(path)
    try:
        train_many(con, "toy", cluster_counts=(2,))
    finally:
        con.close()
    return path


def data_and_rows(path, name, params=None, query=None):
    """(the plot's data, the rows of its query run on its own with the same parameters);
    query_db holds two GPUs, so a figure of it draws gtx480's unless ``params`` say."""
    plot = plots.get(name)
    con = gpudb.connect(path, read_only=True)
    params = {"gpu_id": "gtx480", **(params or {})} if path.name == "query.duckdb" else params
    try:
        results, values = plots.fetch_results(con, plot, params or {})
        query = query or plot.queries[0]
        taken = {k: v for k, v in values.items() if k in get_query(query).params}
        columns, rows = run_query(con, query, taken)
    finally:
        con.close()
    return plot.data(results, values), [dict(zip(columns, r, strict=True)) for r in rows]


def same(a, b) -> bool:
    """Equal numbers, NULL and NaN alike."""
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return a == pytest.approx(float(b), rel=1e-12, abs=1e-12)  # DECIMAL columns too


def test_error_by_target_data_is_the_query(query_db):
    data, rows = data_and_rows(query_db, "error_by_target")
    # query_db has two GPUs (tiny, gtx480): the figure and the query gtx480's alone
    assert {r["gpu_id"] for r in rows} == {"gtx480"}
    assert data.targets_mhz == sorted({r["target_core_mhz"] for r in rows})
    cells = 0
    for r in rows:
        j = data.targets_mhz.index(r["target_core_mhz"])
        assert same(data.mean_pct[r["predictor"]][j], r["mean_error_pct"])
        assert same(data.low_pct[r["predictor"]][j], r["min_error_pct"])
        assert same(data.high_pct[r["predictor"]][j], r["max_error_pct"])
        cells += 1
    # every other cell is a gap
    assert sum(not math.isnan(v) for s in data.mean_pct.values() for v in s) == cells


def test_mape_by_kernel_data_is_the_query_with_the_papers_mean(query_db):
    data, rows = data_and_rows(query_db, "mape_by_kernel", {"gpu_id": "gtx480"})
    assert data.kernels == [r["kernel_id"] for r in rows]
    assert "crisp" in data.mape_pct
    for p, values in data.mape_pct.items():
        assert all(same(v, r[f"{p}_pct"]) for v, r in zip(values, rows, strict=True))
        scored = [r[f"{p}_pct"] for r in rows if r[f"{p}_pct"] is not None]
        assert data.mean_pct[p] == pytest.approx(sum(scored) / len(scored))
    paper = {p.name: p.paper_000_mape_pct for p in predictor_registry()}
    assert data.paper_pct["crisp"] == paper["crisp"] == 4.0
    # a predictor with no prediction on these runs has no bars
    assert all(any(r[f"{p}_pct"] is not None for r in rows) for p in data.mape_pct)


@pytest.mark.parametrize("objective", ["edp", "energy"])
def test_savings_summary_data_is_the_query_with_the_bounds(query_db, objective):
    data, rows = data_and_rows(query_db, "savings_summary", {"objective": objective})
    assert {r["guard"] for r in rows} <= {"paper", ""}  # the papers' controller by default
    column = f"{objective}_saving_pct"
    assert data.metric == objective and data.categories[-1] == "all"
    for r in rows:
        name = r["predictor"] if r["policy"] == "replay" else r["policy"]
        series = data.controllers if r["policy"] == "replay" else data.bounds
        assert same(series[name][data.categories.index(r["category"])], r[column])
    assert set(data.bounds) == {"dynamic_optimal", "static_optimal", "perfect_memoryless"}
    if objective == "edp":  # paper 000 figure 11's average, for the papers' predictors only
        assert data.paper_pct == {"crisp": 10.7}
    else:
        assert data.paper_pct == {}


def test_fraction_of_potential_data_is_the_query(query_db):
    data, rows = data_and_rows(query_db, "fraction_of_potential")
    overall = {(r["predictor"] or r["policy"]): r["fraction_realised"]
               for r in rows if r["kernel_id"] is None}
    assert set(data.policies) == set(overall)
    assert all(same(f, overall[p]) for p, f in zip(data.policies, data.fraction, strict=True))
    for r in (r for r in rows if r["kernel_id"] is not None):
        k = data.kernels.index(r["kernel_id"])
        assert same(data.potential_pct[k], r["potential_pct"])
        if r["policy"] == "replay":
            assert same(data.saving_pct[r["predictor"]][k], r["saving_pct"])
    assert data.paper == {}  # paper 004's fractions are of energy savings
    energy, _ = data_and_rows(query_db, "fraction_of_potential", {"objective": "energy"})
    assert energy.paper == {}  # none of paper 004's predictors (critbw, stall, lead) was run


def test_clock_trace_data_is_the_two_queries(query_db):
    params = {"kernel_id": "tiny/mem", "predictor": "crisp"}
    data, rows = data_and_rows(query_db, "clock_trace", params)
    assert (data.gpu_id, data.kernel_id) == ("gtx480", "tiny/mem")
    assert set(data.core_mhz) == {"crisp", "dynamic_optimal", "static_optimal",
                                  "perfect_memoryless"}
    for name, mhz in data.core_mhz.items():
        mine = [r for r in rows if (r["predictor"] or r["policy"]) == name]
        assert mhz == [r["core_mhz"] for r in mine]
        times = [r["time_ns"] for r in mine]
        assert data.start_ms[name] == pytest.approx(
            [sum(times[:i]) / 1e6 for i in range(len(times))])
        assert data.end_ms[name] == pytest.approx(sum(times) / 1e6)
    _, shares = data_and_rows(query_db, "clock_trace", params, query="interval_shares")
    assert len(shares) == len(data.top_start_ms) > 1
    for name, values in data.shares.items():
        assert all(same(v, r[name]) for v, r in zip(values, shares, strict=True))
        assert all(0 <= v <= 1 for v in values)


def test_equalizer_data_is_the_query_with_the_papers_figures(query_db):
    data, rows = data_and_rows(query_db, "equalizer_vs_static")
    rows = [r for r in rows if r["kernel_id"] is None]
    for r in rows:
        c = data.categories.index(r["category"])
        assert same(data.speedup_pct[r["policy"]][c], r["speedup_pct"])
        assert same(data.energy_change_pct[r["policy"]][c], r["energy_change_pct"])
        assert same(data.paper_speedup_pct[r["policy"]][c], r["paper_001_speedup_pct"])
    assert data.paper_speedup_pct["equalizer performance"][data.categories.index("all")] == 22.0


def test_error_by_setting_data_is_the_query(query_db):
    # the tiny measured GPU: its 2x2 grid of core and memory clocks
    data, rows = data_and_rows(query_db, "error_by_setting",
                               {"metric": "mean_error", "gpu_id": "tiny"})
    heat = data[0]
    # titled 'GPU: PREDICTOR's LABEL by target setting'
    assert heat.title.startswith("tiny: ") and heat.title.endswith(
        "'s mean signed error (%) by target setting")
    predictor = heat.title.removeprefix("tiny: ").split("'s ")[0]
    mine = [r for r in rows if r["predictor"] == predictor and r["target_core_mhz"] is not None]
    assert heat.xs == sorted({r["target_core_mhz"] for r in mine})
    assert heat.ys == sorted({r["target_mem_mhz"] for r in mine})
    for r in mine:
        i, j = heat.ys.index(r["target_mem_mhz"]), heat.xs.index(r["target_core_mhz"])
        assert same(heat.values[i][j], r["mean_error_pct"])


def test_run_by_setting_data_is_the_query(query_db, wu_db):
    # the tiny measured GPU: a 2x2 core x memory grid of two kernels, by hand in conftest
    data, rows = data_and_rows(query_db, "run_by_setting",
                               {"gpu_id": "tiny", "kernel_id": "tiny/alpha", "metric": "time"})
    heat = data[0]
    assert (heat.xs, heat.ys) == ([500.0, 1000.0], [800.0, 1600.0])
    assert heat.values == [[4e6, 2e6], [3e6, 1.5e6]]  # ms in the CSV, ns here
    assert [r["time_ns"] for r in rows] == [4e6, 3e6, 2e6, 1.5e6]
    # averaged: the kernels' geometric mean relative to the highest setting
    data, rows = data_and_rows(wu_db, "run_by_setting", {"metric": "edp"})
    heat = data[0]
    for r in rows:
        i, j = heat.ys.index(r["mem_mhz"]), heat.xs.index(r["core_mhz"])
        assert same(heat.values[i][j], r["edp_ratio"])
    assert heat.values[-1][-1] == pytest.approx(1.0)


def test_wu_error_by_base_data_is_the_query(wu_db):
    data, rows = data_and_rows(wu_db, "wu_error_by_base")
    top = max(r["base_core_mhz"] for r in rows)
    mine = [r for r in rows if r["base_core_mhz"] == top]
    for heat, what in zip(data, ("time", "power"), strict=True):
        assert (heat.xs, heat.ys) == ([2, 4], [800.0, 1600.0])
        for r in mine:
            i, j = heat.ys.index(r["base_mem_mhz"]), heat.xs.index(r["base_n_sm"])
            assert same(heat.values[i][j], r[f"{what}_mape_pct"])


# sim_scaling needs a measured GPU and its clones: tests/train/test_clone.py renders it
ELSEWHERE = ("sim_scaling",)


def test_every_plot_renders_a_png(query_db, wu_db, tmp_path):
    for name in plots.registry():
        if name in ELSEWHERE:
            continue
        db = wu_db if name == "wu_error_by_base" else query_db
        out = tmp_path / f"{name}.png"
        con = gpudb.connect(db, read_only=True)
        try:
            # error_by_setting needs a memory grid: the tiny measured GPU's
            gpu = {"error_by_setting": "tiny"}.get(name, "gtx480")
            plots.render(con, name, {} if db == wu_db else {"gpu_id": gpu}, out)
        finally:
            con.close()
        assert out.read_bytes()[:8] == PNG and out.stat().st_size > 1000, name
    # nothing but the figures: the temporary files are gone
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{n}.png" for n in plots.registry() if n not in ELSEWHERE)


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_plot_command_lists_the_plots_and_writes_svg(query_db, tmp_path):
    listed = invoke("--db", query_db, "plot", "--list", "--format", "csv")
    assert listed.exit_code == 0, listed.output
    for name, plot in plots.registry().items():
        assert f"{name},{plot.figure}," in listed.output
    assert "paper 000 figure 8" in listed.output
    out = tmp_path / "trace.svg"
    result = invoke("--db", query_db, "plot", "clock_trace", "-p", "kernel_id", "tiny/alu",
                    "--gpu", "gtx480", "--out", out)
    assert result.exit_code == 0, result.output
    assert out.read_text().lstrip().startswith("<?xml") and "<svg" in out.read_text()
    assert "Example:" in invoke("plot", "--help").output


@pytest.mark.parametrize(("args", "message"), [
    (["error_by_target", "--out", "{tmp}/f.jpg"], "--out must end in .png, .svg, .pdf"),
    (["error_by_target", "--out", "{tmp}/nowhere/f.png"], "no folder"),
    (["error_by_target"], "--out FILE is required"),
    (["nope", "--out", "{tmp}/f.png"], "no plot 'nope' (plots: 'error_by_target', "),
    (["mape_by_kernl", "--out", "{tmp}/f.png"],
     "no plot 'mape_by_kernl'; did you mean 'mape_by_kernel'? (`gpudb plot --list`)"),
    (["mape_by_kernel", "--out", "{tmp}/f.png"],
     "plot mape_by_kernel: this file has rows of 2 GPUs for it (gtx480, tiny); draw one with "
     "--gpu GPU (e.g. --gpu gtx480)"),
    (["error_by_target", "-p", "colour", "red", "--out", "{tmp}/f.png"],
     "plot error_by_target has no parameter 'colour'"),
    (["run_by_setting", "-p", "metric", "speed", "--out", "{tmp}/f.png"],
     "plot run_by_setting: metric must be one of edp, time, power (got 'speed')"),
    (["savings_summary", "-p", "objective", "fast", "--out", "{tmp}/f.png"],
     "query savings_summary: objective must be one of"),
    (["clock_trace", "-p", "kernel_id", "tiny/none", "--out", "{tmp}/f.png"],
     "no kernel 'tiny/none' in this database (kernel_ids: "),
])
def test_plot_errors_are_one_line_and_write_nothing(query_db, tmp_path, args, message):
    (tmp_path / "f.png").write_bytes(b"an older figure")  # left as it was
    result = invoke("--db", query_db, "plot", *[a.format(tmp=tmp_path) for a in args])
    assert result.exit_code == 1, result.output
    assert result.output.count("\n") == 1 and message in result.output, result.output
    assert "Traceback" not in result.output
    assert (tmp_path / "f.png").read_bytes() == b"an older figure"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png"]


def test_plot_without_matplotlib_says_how_to_install_it(query_db, tmp_path, monkeypatch):
    import sys

    for module in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as where it is not installed
    result = invoke("--db", query_db, "plot", "error_by_target", "--out", tmp_path / "f.png")
    assert result.exit_code == 1
    assert result.output == "Error: plotting needs matplotlib: pip install 'gpudb-dvfs[plot]'\n"
    assert not (tmp_path / "f.png").exists()


def test_kernel_names_from_a_file_are_drawn_as_text(fresh_db, tiny_files, tmp_path):
    """Issue 31: a kernel named ``$\\frac{$`` (matplotlib mathtext) stopped plot and report
    with a traceback; one with control characters is drawn escaped. Both are drawn as the
    characters they hold, and an output path that cannot be written is one line."""
    csv_path, mapping = tiny_files
    csv_path.write_text(csv_path.read_text().replace("alpha", "$\\frac{$")
                        .replace("beta", "b\x1b[2Kz"))
    assert invoke("--db", fresh_db, "ingest", csv_path, "--mapping", mapping).exit_code == 0
    con = gpudb.connect(fresh_db, read_only=True)
    try:
        data = plots.get("mape_by_kernel").data(*plots.fetch_results(
            con, plots.get("mape_by_kernel"), {}))
    finally:
        con.close()
    assert "tiny/$\\frac{$" in data.kernels and "tiny/b\\x1b[2Kz" in data.kernels
    drawn = invoke("--db", fresh_db, "plot", "mape_by_kernel", "--out", tmp_path / "k.svg")
    assert drawn.exit_code == 0, drawn.output
    svg = (tmp_path / "k.svg").read_text()
    assert "\x1b" not in svg
    report = invoke("--db", fresh_db, "report", "--out", tmp_path / "report")
    assert report.exit_code == 0, report.output
    page = (tmp_path / "report" / "report.html").read_text()
    assert "\x1b" not in page and "mape_by_kernel</b>" in page  # the figure drawn
    for args in (("plot", "mape_by_kernel", "--out", "/proc/k.png"),
                 ("report", "--out", "/dev/null/report")):
        refused = invoke("--db", fresh_db, *args)
        assert refused.exit_code == 1 and refused.output.count("\n") == 1, refused.output
        assert refused.output.startswith(f"Error: cannot write {args[-1]}"), refused.output


# --- robust axes, titles that name what they show, one time axis (issue 30 item 6) ---

def test_robust_limits_cut_an_outlier_and_mark_it_with_its_value():
    from matplotlib.figure import Figure

    from gpudb.present.plots.common import mark_clipped, robust_limits

    values = [2.0, 3.0, 4.0, 5.0, 550.0]
    # quartiles 3 and 5: fences 3 - 3x2 = -3 and 5 + 3x2 = 11 keep 2..5, and zero is kept;
    # padded by 8% of the span 0..5
    assert robust_limits(values) == pytest.approx((-0.4, 5.4))
    # without an outlier nothing is cut: the axis spans every value
    assert robust_limits([1.0, 2.0, 3.0], include=()) == pytest.approx((0.84, 3.16))
    ax = Figure().subplots()
    ax.set_ylim(*robust_limits(values))
    assert mark_clipped(ax, [0, 1, 2, 3, 4], values) == [(4, 550.0)]
    assert [t.get_text() for t in _edge_texts(ax)] == ["550"]
    # two values beyond at one place: one mark, the count and the farthest
    ax = Figure().subplots()
    ax.set_ylim(0, 10)
    assert len(mark_clipped(ax, [0, 0, 1], [-40.0, -90.0, 5.0])) == 2
    assert [t.get_text() for t in _edge_texts(ax)] == ["2: -90"]


def _edge_texts(ax):
    """The cut-value labels of `ax` as drawn (they are laid out when the figure is drawn)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()
    return ax._gpudb_edge_labels._texts(canvas.get_renderer())


@pytest.mark.parametrize("spacing, count, texts", [
    (1.0, 3, ["-100", "-101", "-102"]),     # apart: each at its bar
    (0.05, 3, ["-100", "-101", "-102"]),    # neighbours: staggered, each value kept
    (0.01, 11, ["11: -110"]),               # a tight run: one label, count and farthest
])
def test_cut_value_labels_never_overlap(spacing, count, texts):
    """Issue 30: adjacent bars cut at the axis wrote their values over each other (four in
    savings_summary's cache group, up to eleven in mape_by_kernel). Drawn as the figure is,
    no two labels' boxes overlap, and each series' call adds to one layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from gpudb.present.plots.common import mark_clipped

    figure = Figure(figsize=(6, 3), layout="constrained")
    ax = figure.subplots()
    ax.set_xlim(-0.5, 1.5)
    ax.set_ylim(-10, 10)
    for i in range(count):  # one series per bar, as grouped bars call it
        assert mark_clipped(ax, [i * spacing], [-100.0 - i]) == [(i * spacing, -100.0 - i)]
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    drawn = ax._gpudb_edge_labels._texts(renderer)
    assert sorted(t.get_text() for t in drawn) == texts
    boxes = [t.get_window_extent(renderer) for t in drawn]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (a, b)


def _hand_made_savings(guard):
    """savings_summary rows of five controllers and the dynamic optimal, category 'all', one
    controller far below the others (lead, -550%: the papers' unguarded LEAD on a kernel
    that it slows down)."""
    from gpudb.present.plots import Result

    saving = {"crisp": 5.0, "crispl": 6.0, "crit": 4.0, "stall": 0.0, "lead": -550.0}
    columns = ["policy", "predictor", "guard", "category", "edp_saving_pct"]
    rows = [("replay", p, guard, "all", v) for p, v in saving.items()]
    rows.append(("dynamic_optimal", "", "", "all", 13.0))
    return {"savings_summary": Result(columns, rows)}


@pytest.mark.parametrize("guard, words", [
    ("guarded", "gpudb's guarded controllers"),
    ("paper", "the papers' controllers, unguarded")])
def test_savings_caption_names_the_guard_and_the_axis_keeps_the_papers_markers(guard, words):
    """Issue 38: the title is neutral (no paper figure, no -p flag); the guard, the energy
    scope and the axis cut are in the caption's notes."""
    from matplotlib.figure import Figure

    from gpudb.present.plots.savings import (
        PAPER_000_SAVING_PCT,
        draw_savings,
        savings_data,
    )

    data = savings_data(_hand_made_savings(guard),
                        {"guard": guard, "scope": "chip", "objective": "edp", "gpu_id": "g"})
    figure = Figure()
    draw_savings(figure, data)
    ax = figure.axes[0]
    assert ax.get_title() == "g: EDP saving per kernel category"
    caption = plots.notes(figure)
    assert caption[0] == (f"bars: {words}, in chip energy (the papers' scope); lines: the "
                          "offline bounds")
    # -550 is beyond the far-out fence (quartiles 0 and 5): the axis spans zero to the
    # highest of the kept savings, the bound (13) and paper 000's figures, padded by 8%
    paper = [PAPER_000_SAVING_PCT["edp"][p] for p in data.paper_pct]
    high = max(13.0, 6.0, *paper)
    assert ax.get_ylim() == pytest.approx((-0.08 * high, 1.08 * high))
    assert all(ax.get_ylim()[0] <= v <= ax.get_ylim()[1] for v in paper)
    assert [t.get_text() for t in _edge_texts(ax)] == ["-550"]
    low, high = ax.get_ylim()
    assert caption[1] == (f"axis cut at {low:.3g} to {high:.3g}: 1 savings beyond it, each a "
                          "triangle at the edge with the farthest value")


def test_clock_trace_names_its_guard_and_shares_one_time_axis(query_db):
    from matplotlib.figure import Figure

    from gpudb.present.plots.clock_trace import draw_clock_trace
    from gpudb.present.plots.common import BOUNDS

    data, _ = data_and_rows(query_db, "clock_trace",
                            {"kernel_id": "tiny/mem", "predictor": "crisp"})
    assert data.title == "tiny/mem on gtx480: core clock per interval"
    figure = Figure()
    draw_clock_trace(figure, data)
    assert plots.notes(figure) == [
        "coloured: crisp's controller as the papers give it, unguarded; black: the offline "
        "policies; minimising EDP in chip energy"]
    trace, shares = figure.axes
    assert trace.get_shared_x_axes().joined(trace, shares)
    assert trace.get_xlim() == shares.get_xlim()
    lines = {line.get_label().split(":")[0]: line for line in trace.get_lines()}
    # the controller on top of every offline policy, each line ending at the kernel's end
    assert all(lines["crisp"].get_zorder() > lines[b].get_zorder() for b in BOUNDS)
    assert {line.get_xdata()[-1] for line in lines.values()} == {data.top_end_ms}


def test_error_by_target_legend_quotes_no_mape_beside_signed_bars(query_db, tmp_path):
    from matplotlib.figure import Figure

    data, _ = data_and_rows(query_db, "error_by_target")
    figure = Figure()
    plots.get("error_by_target").draw(figure, data)
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(data.mean_pct)
    assert ax.get_ylabel() == "signed time prediction error (%)"
    assert ax.get_title() == "gtx480: time prediction error by target core clock"
    assert plots.notes(figure)[0].startswith("bars: signed mean error over the kernels")


def test_fraction_axis_cuts_losses_beyond_the_whole_potential_at_minus_one():
    from matplotlib.figure import Figure

    from gpudb.present.plots import Result
    from gpudb.present.plots.savings import draw_fraction, fraction_data

    columns = ["policy", "predictor", "guard", "kernel_id", "saving_pct", "potential_pct",
               "fraction_realised"]
    rows = [("replay", "crisp", "paper", None, 5.0, 10.0, 0.5),
            ("replay", "lead", "paper", None, -48.0, 10.0, -4.8),
            ("dynamic_optimal", "", "", None, 10.0, 10.0, 1.0),
            ("replay", "crisp", "paper", "k/a", 5.0, 10.0, 0.5),
            ("replay", "lead", "paper", "k/a", -48.0, 10.0, -4.8)]
    data = fraction_data({"fraction_of_potential": Result(columns, rows)},
                         {"guard": "paper", "scope": "chip", "objective": "energy"})
    assert data.policies == ["lead", "crisp", "dynamic_optimal"]
    figure = Figure()
    draw_fraction(figure, data)
    top = figure.axes[0]
    # lead's -4.8 is cut at -1: the axis spans -1..1 padded by 8% of 2
    assert top.get_ylim() == pytest.approx((-1.16, 1.16))
    assert [t.get_text() for t in _edge_texts(top)] == ["-4.80"]
    assert top.get_title() == "Fraction of the dynamic-optimal energy saving realised"
    assert plots.notes(figure)[0] == "the papers' controllers, unguarded, in chip energy (the " \
        "papers' scope)"
