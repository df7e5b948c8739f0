"""The evaluations as functions (gpudb.workflows.evaluate), what the CLI and the Python API
call: named Tables with the figures of the tiny hand-made dataset (conftest.TINY_CSV), the
lines printed beside them, and the CLI printing exactly them (print_tables)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpudb.store.result import Table, Tables
from gpudb.workflows.evaluate import accuracy, control


def test_accuracy_returns_the_tables_and_what_no_predictor_had(tiny_db):
    tables = accuracy(str(tiny_db), read_only=True, gpu="tiny")
    # paper 000's tables, then paper 003's: tiny runs at two memory clocks
    assert list(tables) == ["by_predictor", "by_kernel", "grid_summary", "grid_by_kernel"]
    by_predictor = tables["by_predictor"]
    row = dict(zip(by_predictor.columns, by_predictor.rows[0], strict=True))
    # from 1000 MHz to 500: proportional exact at 1600 MHz memory, 10% off for beta at 800
    assert row["predictor"] == "proportional"
    assert row["500_800_mhz_pct"] == pytest.approx(5.0)
    assert row["mape_pct"] == pytest.approx(2.5) and row["n"] == 4
    # what each absent predictor needs, read from its declaration (Predictor.needs)
    assert tables.notes[0].startswith("predictors with predictions on these runs: proportional")
    assert "wu needs a model: gpudb train wu)" in tables.notes[0]
    assert tables.captions["by_predictor"] == ("MAPE (%) by predictor and target setting, run "
                                               "granularity, tiny, all kernels:")
    assert "verdict" not in by_predictor.columns and not tables.footnotes


def test_control_on_whole_runs_is_the_static_optimal_per_objective(tiny_db):
    tables = control(str(tiny_db), read_only=True, gpu="tiny", objectives=["edp", "energy"])
    assert list(tables) == ["edp", "energy"]
    rows = {r[0]: dict(zip(tables["edp"].columns, r, strict=True)) for r in tables["edp"].rows}
    # beta at (1000, 800): 0.495 J x 5.5 ms against 0.55 J x 5.0 ms, 1% less EDP
    assert rows["tiny/beta"]["edp_saving_pct"] == pytest.approx(1.0)
    assert tables.notes == ["tiny has whole runs only (no per-interval runs to replay a "
                            "controller on): static optimal over its (SM, core, memory) "
                            "settings, the first row the mean over its kernels"]
    assert tables.captions["energy"].startswith("\nstatic optimal savings (%) against the "
                                                "highest setting, objective energy, tiny")


def test_default_objectives_are_the_energy_models_in_table_order(tiny_db):
    from gpudb.control.energy import OBJECTIVES

    assert OBJECTIVES == ("edp", "ed2p", "energy", "energy_perf")
    assert list(control(str(tiny_db), read_only=True, gpu="tiny")) == list(OBJECTIVES)


def test_the_cli_prints_the_tables_notes_captions_and_footnotes_in_order():
    import click

    from gpudb.cli.common import print_tables

    tables = Tables({"a": Table(["x"], [(1,)]), "b": Table(["y"], [(2,)])}, ["first"],
                    captions={"b": "\nb below:"}, footnotes={"a": "rule"})

    @click.command()
    @click.argument("fmt")
    def show(fmt):
        print_tables(tables, fmt)

    assert CliRunner().invoke(show, ["table"]).output == (
        "first\n  x\n---\n  1\n(1 row)\nrule\n\nb below:\n  y\n---\n  2\n(1 row)\n")
    # the machine formats: the tables alone, by name
    assert CliRunner().invoke(show, ["csv"]).output == "# table: a\nx\n1\n# table: b\ny\n2\n"


def test_tables_html_shows_notes_captions_and_footnotes_escaped():
    tables = Tables({"t": Table(["k"], [("<b>",)])}, ["<note>"], captions={"t": "<cap>"},
                    footnotes={"t": "<foot>"})
    page = tables._repr_html_()
    assert "<script" not in page and "&lt;note&gt;" in page and "&lt;b&gt;" in page
    assert page.index("&lt;note&gt;") < page.index("&lt;cap&gt;") < page.index("&lt;b&gt;") \
        < page.index("&lt;foot&gt;")


def test_what_a_predictor_needs_is_declared_on_it():
    from gpudb.predictors import registry

    assert {p.name: p.needs for p in registry() if p.needs} == {
        "wangchu": "a calibration: gpudb calibrate (--from-file for a measured GPU)",
        "wangchu_scaled": "a calibration like wangchu",
        "wangchu_fit": "a fit: gpudb train wangchu",
        "wu": "a model: gpudb train wu"}


def test_the_grid_tables_per_kernel_are_each_kernels_mean_error(tiny_db):
    """paper 003's per-kernel table, by hand: proportional scales time by the core clock at
    the base's memory clock, the base itself included. From 1000/800 MHz: alpha 2.0 ms,
    4.0 at 500 MHz (exact); beta 5.5 ms, 11.0 against 10.0 at 500 MHz (10%). The table is
    built from the errors grouped once by predictor and kernel (it scanned all of them per
    kernel, a cost that grew with the square of the kernels)."""
    table = accuracy(str(tiny_db), read_only=True, gpu="tiny", base_mhz=1000,
                     base_mem_mhz=800)["grid_by_kernel"]
    assert table.columns == ["kernel_id", "wangchu_regime", "proportional_pct"]
    assert table.rows == [("tiny/alpha", None, pytest.approx(0.0)),
                          ("tiny/beta", None, pytest.approx(5.0))]
