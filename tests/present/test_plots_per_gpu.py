"""Issue 38: a figure draws one GPU (two GPUs' clock grids never share an axis), its title is
neutral (the command and the paper figure in the file's metadata, notes in a caption), and
`gpudb plot` takes --gpu, --title, --size, --dpi and --format png|pdf|svg. On a hand-made file
of two measured GPUs with the same kernels on different grids."""

from __future__ import annotations

import hashlib
import re

import pytest
from click.testing import CliRunner
from conftest import copy_db

import gpudb
from gpudb.cli import cli
from gpudb.present import plots

pytest.importorskip("matplotlib", reason="plots need the gpudb-dvfs[plot] extra (matplotlib)")

# GPU 'other': core 700/1400/2100 MHz x memory 5000/6000 MHz. alpha's time is exactly
# proportional to 1/core clock (the proportional predictor is exact), beta's constant (from the
# base, 2100 MHz, proportional predicts 3x the time at 700 MHz, 1.5x at 1400: +200%, +50%).
OTHER_CSV = """kernel,core_mhz,mem_mhz,time_ms,power_w
alpha,700,6000,3.0,100
alpha,1400,6000,1.5,150
alpha,2100,6000,1.0,200
beta,700,6000,2.0,100
beta,1400,6000,2.0,120
beta,2100,6000,2.0,140
alpha,700,5000,3.3,90
alpha,1400,5000,1.65,140
alpha,2100,5000,1.1,190
beta,700,5000,2.4,90
beta,1400,5000,2.4,110
beta,2100,5000,2.4,130
"""
TINY_CSV = """kernel,core_mhz,mem_mhz,time_ms,power_w
alpha,500,800,4.0,100
alpha,1000,800,2.0,250
alpha,500,1600,3.0,120
alpha,1000,1600,1.5,300
beta,500,800,10.0,50
beta,1000,800,5.5,90
beta,500,1600,10.0,55
beta,1000,1600,5.0,110
"""
MAPPING = """\
description = "hand-made dataset of GPU {gpu} (synthetic)"
[gpu]
gpu_id = "{gpu}"
name = "{gpu} test GPU"
n_sm = 2
[run]
suite = "tiny"
experiment = "{gpu}"
[columns]
kernel = "kernel"
core_mhz = "core_mhz"
mem_mhz = "mem_mhz"
time = {{ column = "time_ms", unit = "ms" }}
power = {{ column = "power_w", unit = "W" }}
"""


@pytest.fixture(scope="module")
def two_gpus(tmp_path_factory, empty_db_template):
    """A file of two measured GPUs, 'tiny' and 'other', both with kernels tiny/alpha and
    tiny/beta, on different core and memory grids."""
    from gpudb.sources.tabular.ingest import ingest
    from gpudb.sources.tabular.mapping import load_mapping

    tmp = tmp_path_factory.mktemp("two_gpus")
    path = copy_db(empty_db_template, tmp / "two.duckdb")
    con = gpudb.connect(path)
    try:
        for gpu, rows in (("tiny", TINY_CSV), ("other", OTHER_CSV)):
            (tmp / f"{gpu}.csv").write_text(rows)
            (tmp / f"{gpu}.toml").write_text(MAPPING.format(gpu=gpu))
            ingest(con, [tmp / f"{gpu}.csv"], load_mapping(tmp / f"{gpu}.toml"))
    finally:
        con.close()
    return path


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def drawn(path, name, params, **kwargs) -> plots.Drawn:
    """Plot ``name`` drawn from the file at ``path``, not saved."""
    con = gpudb.connect(path, read_only=True)
    try:
        return plots.draw(con, name, params, **kwargs)
    finally:
        con.close()


def texts(figure) -> list[str]:
    from matplotlib.text import Text

    return [t.get_text() for t in figure.findobj(Text) if t.get_text()]


@pytest.mark.parametrize("name", ["mape_by_kernel", "run_by_setting"])
def test_a_plot_of_two_gpus_needs_one_named(two_gpus, tmp_path, name):
    before = digest(two_gpus)
    result = invoke("--db", two_gpus, "plot", name, "--out", tmp_path / "f.png")
    assert result.exit_code == 1
    assert result.output == (f"Error: plot {name}: this file has rows of 2 GPUs for it (other, "
                             "tiny); draw one with --gpu GPU (e.g. --gpu other)\n")
    assert list(tmp_path.iterdir()) == [] and digest(two_gpus) == before
    # a GPU the file does not hold is refused before anything is drawn
    wrong = invoke("--db", two_gpus, "plot", name, "--gpu", "nope", "--out", tmp_path / "f.png")
    assert wrong.exit_code == 1 and wrong.output.count("\n") == 1 and "'nope'" in wrong.output
    assert list(tmp_path.iterdir()) == []


def test_with_a_gpu_the_axes_hold_its_grid_only(two_gpus):
    con = gpudb.connect(two_gpus, read_only=True)  # one open for every figure: opens cost
    try:
        # error_by_target: 'other''s core clocks below its base, signed means by hand (alpha
        # 0%, beta +200% and +50%, at both memory clocks)
        figure = plots.draw(con, "error_by_target", {"gpu_id": "other"})
        # mape_by_kernel: each kernel once (not once per GPU), beta's MAPE (200 + 50) / 2
        mape = plots.draw(con, "mape_by_kernel", {"gpu_id": "other"}).data
        # run_by_setting and error_by_setting: the GPU's own core x memory grid, no gap
        heats = {}
        for key, name, gpu, params in (
                ("run", "run_by_setting", "other", {"metric": "time", "kernel_id": "tiny/beta"}),
                ("error", "error_by_setting", "other", {"predictor": "proportional"}),
                ("tiny", "run_by_setting", "tiny", {"metric": "time"})):
            heats[key] = plots.draw(con, name, {"gpu_id": gpu, **params}).data[0]
    finally:
        con.close()
    assert figure.data.targets_mhz == [700.0, 1400.0]
    assert figure.data.mean_pct["proportional"] == pytest.approx([100.0, 25.0])
    ax = figure.figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["700", "1400"]
    assert figure.title == "other: time prediction error by target core clock"
    assert mape.kernels == ["tiny/alpha", "tiny/beta"]
    assert mape.mape_pct["proportional"] == pytest.approx([0.0, 125.0])
    assert (heats["run"].xs, heats["run"].ys) == ([700.0, 1400.0, 2100.0], [5000.0, 6000.0])
    assert heats["run"].values == [[2.4e6] * 3, [2.0e6] * 3]  # beta's ms in the CSV, ns here
    # proportional scales the core clock only: targets at the base memory clock
    assert (heats["error"].xs, heats["error"].ys) == ([700.0, 1400.0, 2100.0], [6000.0])
    assert heats["error"].values == [pytest.approx([100.0, 25.0, 0.0])]
    assert (heats["tiny"].xs, heats["tiny"].ys) == ([500.0, 1000.0], [800.0, 1600.0])


def test_a_pdf_at_a_size_with_a_title_and_the_command_in_its_metadata(two_gpus, tmp_path):
    out = tmp_path / "fig.pdf"
    result = invoke("--db", two_gpus, "plot", "run_by_setting", "--gpu", "other", "--size",
                    "4,3", "--title", "Time over the grid", "--out", out)
    assert result.exit_code == 0, result.output
    pdf = out.read_bytes()
    assert pdf.startswith(b"%PDF")
    box = re.search(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", pdf)
    assert (float(box[1]), float(box[2])) == (4 * 72, 3 * 72)
    assert b"/Title (Time over the grid)" in pdf
    assert b"/Subject (gpudb plot run_by_setting -p gpu_id other --out " in pdf
    assert b"paper 003's 7x7 grid" in pdf        # what it reproduces: metadata only
    shown = drawn(two_gpus, "run_by_setting", {"gpu_id": "other", "metric": "edp"},
                  size=(4, 3), title="Time over the grid")
    words = texts(shown.figure)
    assert "Time over the grid" in words
    assert not [w for w in words if "-p " in w or "(paper" in w or "--" in w]
    assert shown.figure.get_size_inches().tolist() == [4.0, 3.0]


def test_svg_by_format_and_csv_refused(two_gpus, tmp_path):
    result = invoke("--db", two_gpus, "plot", "run_by_setting", "--gpu", "tiny", "--format",
                    "svg", "--out", tmp_path / "k")
    assert result.exit_code == 0, result.output
    svg = (tmp_path / "k.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert ("<dc:title>tiny: edp relative to the highest setting, geometric mean over 2 "
            "kernels</dc:title>") in svg
    assert "gpudb plot run_by_setting -p gpu_id tiny" in svg
    for args, message in (
            (["--format", "csv"], "--format csv: a figure is png, pdf, svg (the rows it draws: "
                                  "gpudb query run_by_setting --format csv)"),
            (["--size", "4x3"], "takes W,H in inches, e.g. 6.5,3.5 (got '4x3')"),
            (["--format", "pdf"], "--format pdf but --out")):
        refused = invoke("--db", two_gpus, "plot", "run_by_setting", "--gpu", "tiny", *args,
                         "--out", tmp_path / "f.png")
        assert refused.output.count("\n") == 1 and message in refused.output, refused.output
        assert refused.exit_code == (1 if args[1] == "pdf" else 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.svg"]


def test_png_carries_the_command_and_the_dpi(two_gpus, tmp_path):
    out = tmp_path / "f.png"
    result = invoke("--db", two_gpus, "plot", "run_by_setting", "--gpu", "tiny", "--size",
                    "5,4", "--dpi", "200", "--out", out)
    assert result.exit_code == 0, result.output
    png = out.read_bytes()
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1000, 800)                 # 5 x 4 inches at 200 dpi
    assert b"gpudb plot run_by_setting -p gpu_id tiny --out " in png


def test_kernel_labels_are_shortened_with_their_full_names_in_a_key():
    from gpudb.present.plots.common import Labels, short_labels

    names = ["s/BlackScholes:BlackScholesGPU", "s/nn:euclid",
             "s/quasirandomGenerator:quasirandomGeneratorKernel"]
    labels = short_labels(names)
    assert labels.prefix == "s/"
    assert labels.labels == ["BlackScholes", "nn", "quasirandom\u2026erator"]
    assert labels.key == {"BlackScholes": "BlackScholes:BlackScholesGPU", "nn": "nn:euclid",
                          "quasirandom\u2026erator": "quasirandomGenerator:"
                                                     "quasirandomGeneratorKernel"}
    # an app with two kernels keeps app:kernel; kernels of two suites keep their suites
    assert short_labels(["a/x:k1", "a/x:k2"]).labels == ["x:k1", "x:k2"]
    assert short_labels(["a/k", "b/k"]) == Labels(["a/k", "b/k"], "", {})


def test_means_over_different_kernels_say_over_how_many():
    """A predictor scored on 1 kernel (a model's validation kernel) beside one on 3: each mean
    bar is labelled n=, and the caption says why."""
    from matplotlib.figure import Figure

    columns = ["gpu_id", "kernel_id", "category", "crisp_pct", "wu_pct"]
    rows = [("g", "s/a", "x", 10.0, None), ("g", "s/b", "x", 20.0, 4.0),
            ("g", "s/c", "x", 30.0, None)]
    plot = plots.get("mape_by_kernel")
    data = plot.data({"mape_by_kernel": plots.Result(columns, rows)}, {"gpu_id": "g"})
    assert data.mean_pct == {"crisp": 20.0, "wu": 4.0} and data.counted == {"crisp": 3, "wu": 1}
    figure = Figure()
    plot.draw(figure, data)
    assert sorted(t.get_text() for t in figure.axes[0].texts) == ["n=1", "n=3"]
    assert plots.notes(figure)[0] == ("mean: over the kernels each predictor has predictions "
                                      "for (n=)")


def test_past_a_pixel_a_bar_the_kernels_with_the_largest_errors_are_drawn():
    """mape_by_kernel draws at most MAX_BARS bars (one pixel each on its widest figure): with
    two predictors, room - 1 kernels beside the means. Of room + 2 kernels, those whose worst
    predictor's MAPE is largest are drawn, in the query's order; the means stay over every
    kernel, and the caption says how many of how many are shown. (8,000 kernels of one predictor
    drew 8,000 bars and labels in 78 s.)"""
    from matplotlib.figure import Figure

    from gpudb.present.plots.accuracy import MAX_BARS

    room = MAX_BARS // 2 - 1
    n = room + 2
    # kernel i: crisp i %, wu 0.5 % (none for kernel 0): kernels 0 and 1 have the smallest
    # worst errors (0 and 1 %), so they are the two left out
    columns = ["gpu_id", "kernel_id", "category", "crisp_pct", "wu_pct"]
    rows = [("g", f"s/k{i:05d}", "x", float(i), 0.5 if i else None) for i in range(n)]
    plot = plots.get("mape_by_kernel")
    data = plot.data({"mape_by_kernel": plots.Result(columns, rows)}, {"gpu_id": "g"})
    assert data.kernels == [f"s/k{i:05d}" for i in range(2, n)]
    assert data.mape_pct["crisp"] == [float(i) for i in range(2, n)]
    assert data.mean_pct == {"crisp": pytest.approx((n - 1) / 2), "wu": 0.5}
    assert data.counted == {"crisp": n, "wu": n - 1} and data.of_kernels == n
    figure = Figure()
    plot.draw(figure, data)
    assert f"the {room:,} of {n:,} kernels with the largest MAPE" in "; ".join(
        plots.notes(figure))


def test_overlapping_tick_labels_are_thinned():
    """Twenty clocks on a 3-inch axis: every k-th label kept, none overlapping the next."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(3, 2), layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    ax.set_xticks(range(20), [str(1110 + 95 * i) for i in range(20)])
    plots.unclutter(figure)
    shown = [t for t in ax.get_xticklabels() if t.get_visible()]
    renderer = figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in shown]
    assert 1 < len(shown) < 20
    assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:], strict=False))
    # the labels kept are every k-th from the first, and the caption says which
    k = [int(t.get_text()) for t in shown][1] - 1110
    assert [t.get_text() for t in shown] == [str(1110 + 95 * i) for i in range(0, 20, k // 95)]
    assert len(plots.notes(figure)) == 1 and re.fullmatch(
        r"every (second|third|\d+th) x label shown", plots.notes(figure)[0])
