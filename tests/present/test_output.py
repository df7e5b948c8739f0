"""Output formats: tables (4 significant digits, right-aligned numbers, text cut to the
terminal's width), Markdown, and CSV/JSON at full precision."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from gpudb.cli import cli
from gpudb.present.output import format_rows, full_width


@pytest.mark.parametrize(("value", "text"), [
    (1234.5678, "1235"), (700.0, "700"), (12.345678, "12.35"), (-3.14159, "-3.142"),
    (0.001234567, "0.001235"), (1234567.8, "1235000"), (0.0, "0"),
    # outside [1e-3, 1e7): an exponent
    (0.000123456, "1.235e-04"), (12345678.9, "1.235e+07"), (1e8, "1e+08"),
    (float("nan"), "nan"),
])
def test_table_floats_have_4_significant_digits(value, text):
    out = format_rows(["x"], [(value,)])
    assert out.splitlines()[2].strip() == text


def test_table_aligns_numbers_right_text_left_and_prints_null_empty(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out = format_rows(["kernel", "n", "t_ns"], [("a", 3, 1.5), ("longer", 12345, None)])
    lines = out.splitlines()
    assert lines[0].split() == ["kernel", "n", "t_ns"]
    assert lines[2] == "a             3     1.5"
    assert lines[3] == "longer    12345"  # NULL: an empty cell (and no trailing blanks)
    assert lines[-1] == "(2 rows)"


def test_table_cuts_long_text_to_the_terminal_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    description = "a long description " * 10
    out = format_rows(["query", "n", "description"], [("mape_by_kernel", 1, description)])
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 60
    assert lines[2].endswith("\u2026") and lines[2].startswith("mape_by_kernel")
    # wide enough: nothing cut
    monkeypatch.setenv("COLUMNS", "400")
    assert description.strip() in format_rows(["query", "n", "description"],
                                              [("mape_by_kernel", 1, description)])


def test_a_20_mb_cell_is_cut_to_the_terminal_quickly_and_escaped(monkeypatch):
    """Issue 31: fitting a 20 MB cell narrowed its column one character per step (211 s);
    a control character in it is escaped like any other."""

    monkeypatch.setenv("COLUMNS", "80")
    cell = "x" * 20_000_000 + "\x1b[2K"
    out = format_rows(["description", "n"], [(cell, 1), ("\x1b]0;t\x07", 2)])
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80 and lines[2].endswith("\u2026    1")
    assert lines[3].startswith("\\x1b]0;t\\x07")
    assert "\x1b" not in out


def test_markdown_is_a_github_table_with_pipes_escaped():
    out = format_rows(["kernel", "mape_pct"], [("a|b", 4.123456), ("c", None)], "markdown")
    lines = out.strip().splitlines()
    assert lines[0].replace(" ", "") == "|kernel|mape_pct|"
    assert lines[1].replace("-", "") .replace(" ", "") == "|||"
    assert lines[2].replace(" ", "") == "|a\\|b|4.123|"
    assert lines[3].replace(" ", "") == "|c||"


def test_csv_and_json_keep_full_precision():
    rows = [("a", 0.000123456789, 12345678.9, None)]
    columns = ["k", "small", "big", "none"]
    parsed = list(csv.reader(io.StringIO(format_rows(columns, rows, "csv"))))
    assert parsed == [columns, ["a", "0.000123456789", "12345678.9", ""]]
    assert json.loads(format_rows(columns, rows, "json")) == [
        {"k": "a", "small": 0.000123456789, "big": 12345678.9, "none": None}]


def test_sql_prints_markdown(tiny_db):
    result = CliRunner().invoke(cli, ["--db", str(tiny_db), "sql", "--format", "markdown",
                                      "SELECT kernel_id, time_ns / 3 AS t FROM run "
                                      "ORDER BY kernel_id, time_ns LIMIT 1"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].replace(" ", "") == "|kernel_id|t|"
    assert lines[2].replace(" ", "") == "|tiny/alpha|500000|"  # 1.5 ms / 3


def test_a_command_with_several_tables_prints_one_json_document(tiny_db):
    """evaluate accuracy prints two tables: --format json is one object of named tables that
    a parser reads whole (it printed two documents back to back before), --format csv starts
    each table with a '# table: NAME' line."""
    out = CliRunner().invoke(cli, ["--db", str(tiny_db), "evaluate", "accuracy", "--gpu", "tiny",
                                   "--format", "json"])
    assert out.exit_code == 0, out.output
    document = json.loads(out.stdout)
    # a measured GPU with several memory clocks adds the core x memory tables (paper 003)
    assert sorted(document) == ["by_kernel", "by_predictor", "grid_by_kernel", "grid_summary"]
    proportional = next(r for r in document["by_predictor"] if r["predictor"] == "proportional")
    # from 1000 to 500 MHz proportional predicts twice the time: alpha exact at both memory
    # clocks, beta 11.0 ms against 10.0 at 800 MHz (10%) and exact at 1600 MHz
    assert proportional["500_800_mhz_pct"] == pytest.approx(5.0)
    assert proportional["500_1600_mhz_pct"] == pytest.approx(0.0)
    out = CliRunner().invoke(cli, ["--db", str(tiny_db), "evaluate", "accuracy", "--gpu", "tiny",
                                   "--format", "csv"])
    assert [line for line in out.stdout.splitlines() if line.startswith("# table: ")] == [
        "# table: by_predictor", "# table: by_kernel", "# table: grid_summary",
        "# table: grid_by_kernel"]


def test_a_terminal_table_cuts_descriptions_never_the_columns_that_identify_rows(monkeypatch):
    """At 80 columns every best_setting kernel read 'cuda-sdk-r…' (issue 30 item 3)."""
    monkeypatch.setenv("COLUMNS", "80")
    kernels = [f"cuda-sdk-r{n}/long_kernel_name_{n}" for n in range(3)]
    out = format_rows(["kernel_id", "predictor", "mape_pct", "description"],
                      [(k, "crispl_gpudb", 1.5, "a long description " * 6) for k in kernels])
    lines = out.splitlines()
    for kernel, line in zip(kernels, lines[2:5], strict=True):
        assert line.startswith(kernel) and "crispl_gpudb" in line
        assert line.endswith("\u2026")              # the description was cut instead
    assert max(len(line) for line in lines) <= 80


def test_floats_within_1e_12_of_zero_print_as_zero():
    assert format_rows(["err_s"], [(9.408e-15,)]).splitlines()[2].strip() == "0"
    assert format_rows(["err_s"], [(-3e-13,)]).splitlines()[2].strip() == "0"
    assert format_rows(["err_s"], [(2e-12,)]).splitlines()[2].strip() == "2e-12"


def test_wide_keeps_every_cell_whole(monkeypatch, tiny_db):
    monkeypatch.setenv("COLUMNS", "40")
    description = "a long description " * 5
    with full_width():
        assert description.strip() in format_rows(["query", "description"],
                                                  [("q", description)])
    assert description.strip() not in format_rows(["query", "description"], [("q", description)])
    listing = CliRunner().invoke(cli, ["--db", str(tiny_db), "--wide", "query", "--list"])
    assert listing.exit_code == 0 and "\u2026" not in listing.output
    assert "\u2026" in CliRunner().invoke(cli, ["--db", str(tiny_db), "query", "--list"]).output
