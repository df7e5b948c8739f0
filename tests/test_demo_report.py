"""gpudb.demo: the verdict rule, the readable tables and the closing paragraph, on hand-made
tables (the demo itself runs in test_cli_commands)."""

import pytest

from gpudb.demo import accuracy_summary, closing_paragraph, readable, savings_summary, verdict
from gpudb.evaluate import Table
from gpudb.output import format_rows


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
    assert acc.columns == ["predictor", "600 MHz %", "100 MHz %", "all targets %",
                           "paper 000 %", "verdict"]
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
    assert sav.columns == ["policy", "EDP saving %", "time change %", "guarded: EDP saving %",
                           "guarded: time change %", "paper 000 EDP %", "verdict"]
    assert sav.rows == [("dynamic_optimal", 10.1, -0.6, None, None, None, ""),
                        ("crisp", -5.1, 10.2, 5.0, 1.3, 10.7, "below paper"),
                        ("oracle", 7.8, 0.7, 6.5, 0.4, None, "")]
    text = closing_paragraph(acc, sav)
    assert text == (
        "Prediction error agrees with paper 000 for stall (32.5% against 35%). It is higher "
        "than the paper reports for crisp (10.5% against 4%). The papers' own controllers, "
        "run as the papers give them, save less EDP than paper 000 reports: crisp (-5.1% "
        "against 10.7%). With gpudb's guard the best controller is crisp (5.0% EDP saving). "
        "The kernels are synthetic, not the papers' benchmarks; README.md, \"Where gpudb "
        "differs from the papers\", measures the cause of each difference.")


def test_without_matplotlib_the_figures_are_one_hint_and_no_folder(tmp_path, monkeypatch):
    import sys

    from gpudb.db import GpudbError
    from gpudb.demo import demo_figures, write_figures

    for module in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as where it is not installed
    folder = tmp_path / "gpudb-figures"
    with pytest.raises(GpudbError, match=r"pip install 'gpudb\[plot\]'"):
        write_figures(None, folder, demo_figures("gtx480", "default", "default/twoslope_lm"))
    assert not folder.exists()
