"""The shipped example mappings (constants, derived columns, sectioned headerless files,
repeated header names) ingest files of the shape each one's comment header shows, storing the
values worked out here by hand; bad input is one line and writes nothing."""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import MAPPINGS, REPO, TABLES, row_counts

import gpudb
from gpudb.cli import cli
from gpudb.sources.tabular.ingest import FileReport, ingest
from gpudb.sources.tabular.mapping import MappingError, load_mapping
from gpudb.sources.tabular.read import IngestError


def _ingest(db, data, mapping, **options):
    con = gpudb.connect(db)
    try:
        return ingest(con, [str(data)], load_mapping(mapping), **options)
    finally:
        con.close()


def _runs(db) -> dict:
    """kernel_id -> [(core_mhz, mem_mhz, n_sm, time_ns, energy_j)] in core_mhz order."""
    con = gpudb.connect(db, read_only=True)
    try:
        rows = con.execute("SELECT kernel_id, core_mhz, mem_mhz, n_sm, time_ns, energy_j "
                           "FROM run ORDER BY kernel_id, core_mhz").fetchall()
    finally:
        con.close()
    runs: dict = {}
    for kernel, *values in rows:
        runs.setdefault(kernel, []).append(tuple(values))
    return runs


def _metrics(db) -> dict:
    """(kernel_id, core_mhz, metric name) -> value."""
    con = gpudb.connect(db, read_only=True)
    try:
        return {(k, c, n): v for k, c, n, v in con.execute(
            "SELECT kernel_id, core_mhz, name, value FROM metric JOIN run USING (run_id)"
        ).fetchall()}
    finally:
        con.close()


def _nothing_written(db) -> bool:
    return all(n == 0 for t, n in row_counts(db).items() if t in TABLES)


def _refused(db, data, mapping, message, error=IngestError):
    with pytest.raises(error, match=message) as err:
        _ingest(db, data, mapping)
    assert "\n" not in str(err.value)
    assert _nothing_written(db)


def test_constant_memory_clock_is_stored_on_every_run(fresh_db, tmp_path):
    data = tmp_path / "sweep.csv"
    data.write_text("kernel,sm_clock_mhz,time_us,energy_mj\n"
                    "stream,1380,812.5,152.3\n"
                    "stream,1005,1021.0,131.9\n"
                    "gemm,1380,450.25,98.0\n")
    [report] = _ingest(fresh_db, data, MAPPINGS / "example-constant-clock.toml")
    assert (report.rows, report.runs_added, report.metrics_added) == (3, 3, 0)
    assert _runs(fresh_db) == {
        "example/gemm": [(1380.0, 877.0, 80, pytest.approx(450.25e3), pytest.approx(98.0e-3))],
        "example/stream": [(1005.0, 877.0, 80, pytest.approx(1021.0e3),
                            pytest.approx(131.9e-3)),
                           (1380.0, 877.0, 80, pytest.approx(812.5e3),
                            pytest.approx(152.3e-3))]}
    con = gpudb.connect(fresh_db, read_only=True)
    assert con.execute("SELECT freq_mhz FROM pstate WHERE domain = 'mem'").fetchall() == [(877,)]
    con.close()


def test_time_derived_from_cycles_over_the_core_clock(fresh_db, tmp_path):
    data = tmp_path / "cycles.csv"
    data.write_text("kernel,core_mhz,mem_mhz,cycles,avg_power_w\n"
                    "hotspot,700,924,1400000,61.5\n"
                    "hotspot,350,924,1050000,40.0\n"
                    "bfs,700,924,2100,12.0\n")
    [report] = _ingest(fresh_db, data, MAPPINGS / "example-derived-time.toml")
    assert (report.rows, report.runs_added) == (3, 3)
    # cycles / MHz = us: 1400000 / 700 = 2000 us, 1050000 / 350 = 3000 us, 2100 / 700 = 3 us
    runs = _runs(fresh_db)
    assert runs["example/hotspot"] == [
        (350.0, 924.0, 15, pytest.approx(3000e3), pytest.approx(40.0 * 3000e-6)),
        (700.0, 924.0, 15, pytest.approx(2000e3), pytest.approx(61.5 * 2000e-6))]
    assert runs["example/bfs"] == [(700.0, 924.0, 15, pytest.approx(3e3),
                                    pytest.approx(12.0 * 3e-6))]
    # the column the expression reads stays a metric
    assert _metrics(fresh_db) == {("example/hotspot", 700.0, "cycles"): 1400000.0,
                                  ("example/hotspot", 350.0, "cycles"): 1050000.0,
                                  ("example/bfs", 700.0, "cycles"): 2100.0}
    assert (report.metrics, report.text, report.ignored) == (["cycles"], [], [])


def test_headerless_sections_take_the_kernel_from_label_lines(fresh_db, tmp_path):
    data = tmp_path / "sections.csv"
    data.write_text("backprop\n"
                    "1500,5000,2.31,142.0\n"
                    "1300,5000,2.52,118.7\n"
                    "\n"
                    "bfs\n"
                    "1500,5000,7.90,101.2\n")
    [report] = _ingest(fresh_db, data, MAPPINGS / "example-sectioned.toml")
    assert (report.rows, report.runs_added, report.metrics_added) == (3, 3, 0)
    assert _runs(fresh_db) == {
        "example/backprop": [(1300.0, 5000.0, 28, pytest.approx(2.52e6),
                              pytest.approx(118.7 * 2.52e-3)),
                             (1500.0, 5000.0, 28, pytest.approx(2.31e6),
                              pytest.approx(142.0 * 2.31e-3))],
        "example/bfs": [(1500.0, 5000.0, 28, pytest.approx(7.90e6),
                         pytest.approx(101.2 * 7.90e-3))]}


def test_sectioned_errors_name_the_real_line(fresh_db, tmp_path):
    data = tmp_path / "sections.csv"
    data.write_text("1500,5000,2.31,142.0\nbackprop\n1300,5000,2.52,118.7\n")
    _refused(fresh_db, data, MAPPINGS / "example-sectioned.toml",
             r"sections\.csv: line 1 is data before the first section label \(\[file\] labels")
    # row 2 of the data is line 5 of the file (two labels and a blank line before it)
    data.write_text("backprop\n1500,5000,2.31,142.0\n\nbfs\n1300,5000,-2.52,118.7\n")
    _refused(fresh_db, data, MAPPINGS / "example-sectioned.toml",
             r"sections\.csv: line 5, column 'time': '-2\.52' must be positive")
    # a file that has a header after all: its first line is data, and not numbers
    data.write_text("backprop\ncore,mem,time,power\n1500,5000,2.31,142.0\n")
    _refused(fresh_db, data, MAPPINGS / "example-sectioned.toml",
             r"line 2, column 'core': 'core' is not a finite number")


def test_repeated_header_is_refused_unless_numbered(fresh_db, tmp_path):
    data = tmp_path / "passes.csv"
    data.write_text("kernel,core,mem,time,time,power\n"
                    "sgemm,1500,5000,3.10,2.95,160.0\n"
                    "sgemm,1200,5000,3.60,3.45,131.0\n")
    shipped = (MAPPINGS / "example-duplicate-headers.toml").read_text()
    refusing = tmp_path / "refusing.toml"
    refusing.write_text(shipped.replace('duplicates = "number"', ""))
    _refused(fresh_db, data, refusing,
             r"passes\.csv: the header names 'time' more than once; set \[file\] duplicates = "
             r"\"number\" in .*refusing\.toml to read the repeats as name\.1, name\.2, \.\.\.$")
    [report] = _ingest(fresh_db, data, MAPPINGS / "example-duplicate-headers.toml")
    assert (report.rows, report.runs_added, report.metrics_added) == (2, 2, 2)
    assert _runs(fresh_db) == {"example/sgemm": [
        (1200.0, 5000.0, 40, pytest.approx(3.45e6), pytest.approx(131.0 * 3.45e-3)),
        (1500.0, 5000.0, 40, pytest.approx(2.95e6), pytest.approx(160.0 * 2.95e-3))]}
    assert _metrics(fresh_db) == {("example/sgemm", 1500.0, "warmup_time_ms"): 3.10,
                                  ("example/sgemm", 1200.0, "warmup_time_ms"): 3.60}


def test_parquet_takes_no_header_or_labels(fresh_db, tmp_path):
    data = tmp_path / "sections.parquet"
    pq.write_table(pa.table({"core": [1500], "mem": [5000], "time": [2.3], "power": [142.0]}),
                   data)
    _refused(fresh_db, data, MAPPINGS / "example-sectioned.toml",
             r"sections\.parquet: \[file\] header and labels of .*example-sectioned\.toml "
             "describe a CSV file, and this is Parquet$")


def test_numbering_onto_an_existing_name_is_refused(fresh_db, tmp_path):
    data = tmp_path / "passes.csv"
    data.write_text("kernel,core,mem,time,time,time.1,power\nsgemm,1500,5000,3.1,2.9,2.8,160\n")
    _refused(fresh_db, data, MAPPINGS / "example-duplicate-headers.toml",
             r"numbering the repeated 'time' gives 'time\.1', which is already a column")


def test_expr_naming_a_missing_column_is_one_line(fresh_db, tmp_path):
    data = tmp_path / "cycles.csv"
    data.write_text("kernel,core_mhz,mem_mhz,cycle_count,avg_power_w\nbfs,700,924,2100,12.0\n")
    _refused(fresh_db, data, MAPPINGS / "example-derived-time.toml",
             r"example-derived-time\.toml: \[columns\] time: expr names column 'cycles', which "
             r".*cycles\.csv does not have$")


def test_expr_without_a_finite_value_is_one_line(fresh_db, tmp_path):
    data = tmp_path / "cycles.csv"
    data.write_text("kernel,core_mhz,mem_mhz,cycles,avg_power_w\n"
                    "bfs,700,924,2100,12.0\nbfs,500,924,,12.0\n")
    _refused(fresh_db, data, MAPPINGS / "example-derived-time.toml",
             r"\[columns\] time expr gives no finite number at line 3 of "
             r".*cycles\.csv$")


@pytest.mark.parametrize("value, message", [
    ('{ value = 877, unit = "Hz" }',
     r"\[columns\] mem_mhz: unknown unit 'Hz'; use one of 'MHz', 'GHz', 'kHz'$"),
    ("{ value = 877 }", r"\[columns\] mem_mhz needs a 'unit'"),
    ('{ value = 0, unit = "MHz" }',
     r"\[columns\] mem_mhz: value must be a positive finite number of MHz, not the number 0$"),
    ('{ value = nan, unit = "MHz" }', r"value must be a positive finite number of MHz"),
    ('{ value = "877", unit = "MHz" }', r"not the string '877'"),
    ('{ value = 877, unit = "MHz", column = "mem" }',
     r"\[columns\] mem_mhz needs exactly one of 'column', 'value' and 'expr'"),
    ('{ value = 877, unit = "MHz", note = "x" }', r"unknown key 'note' in \[columns\] mem_mhz"),
    ('{ expr = "mem / ", unit = "MHz" }',
     r"\[columns\] mem_mhz: expr is not one SQL expression: Parser Error"),
])
def test_bad_constant_or_expr_is_one_line(tmp_path, value, message):
    shipped = (MAPPINGS / "example-constant-clock.toml").read_text()
    path = tmp_path / "bad.toml"
    path.write_text(shipped.replace('{ value = 877, unit = "MHz" }', value))
    with pytest.raises(MappingError, match=message) as err:
        load_mapping(path)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


@pytest.mark.parametrize("change, message", [
    (('header = ["core", "mem", "time", "power"]', 'header = "core"'),
     r"\[file\] header must be the list of the file's column names, not the string 'core'$"),
    (('"power"]', '"core"]'), r"\[file\] header lists 'core' twice$"),
    (('labels = "kernel"', 'labels = "app"'),
     r"\[file\] labels puts the labels in column 'app', which \[columns\] kernel must name"),
    (('labels = "kernel"', 'labels = "kernel"\nduplicates = "drop"'),
     r"\[file\] duplicates must be 'refuse' or 'number', not the string 'drop'$"),
    (('labels = "kernel"', 'labels = "kernel"\nskip = 1'), r"unknown key 'skip' in \[file\]"),
])
def test_bad_file_section_is_one_line(tmp_path, change, message):
    shipped = (MAPPINGS / "example-sectioned.toml").read_text()
    path = tmp_path / "bad.toml"
    path.write_text(shipped.replace(*change))
    with pytest.raises(MappingError, match=message):
        load_mapping(path)


def test_cli_suite_override_and_column_report(tmp_path):
    data = tmp_path / "cycles.csv"
    data.write_text("kernel,core_mhz,mem_mhz,cycles,avg_power_w,note,blank\n"
                    "bfs,700,924,2100,12.0,first,\n")
    mapping = tmp_path / "m.toml"
    mapping.write_text((MAPPINGS / "example-derived-time.toml").read_text()
                       + '\n[metrics]\nignore = ["blank"]\n')
    db = tmp_path / "cli.duckdb"
    result = CliRunner().invoke(cli, ["--db", str(db), "ingest", str(data), "--mapping",
                                      str(mapping), "--suite", "rodinia"])
    assert result.exit_code == 0, result.output
    assert "  columns: metrics: cycles; dropped as text: note; ignored: blank" in (
        result.output.splitlines())
    assert list(_runs(db)) == ["rodinia/bfs"]
    # an unnamed column (the row numbers pandas writes) is shown as ""
    assert FileReport("f", text=["note"], ignored=["", "blank"]).columns_summary() == (
        'dropped as text: note; ignored: "", blank')
    empty = CliRunner().invoke(cli, ["--db", str(db), "ingest", str(data), "--mapping",
                                     str(mapping), "--suite", " "])
    assert empty.exit_code != 0 and "suite ' ' must be a name" in empty.output


def test_every_shipped_mapping_loads_says_what_it_ingests_and_is_in_the_docs():
    readme = (REPO / "docs" / "ingest.md").read_text()
    table = readme.split("### What each shipped mapping ingests", 1)[1].split("\n#", 1)[0]
    rows = {m.group(1) for m in re.finditer(r"^\| `fixtures/mappings/([^`]+)` \|", table,
                                             re.MULTILINE)}
    shipped = {p.name for p in MAPPINGS.glob("*.toml")}
    assert rows == shipped
    for name in shipped:
        load_mapping(MAPPINGS / name)
        assert (MAPPINGS / name).read_text().startswith("# "), f"{name} has no comment header"


@pytest.mark.parametrize("expr, message", [
    ("length(repeat('x', 300000000))", r"expr calls repeat\(\), which a mapping expression may "
                                       r"not \(it may call abs, avg, "),
    ("list_sum(range(10000000))", r"expr calls list_sum\(\), which"),
    ("cycles.repeat(3)::DOUBLE", r"expr calls repeat\(\), which"),
    ("(SELECT count(*) FROM range(1000000000000))",
     r"expr holds a query \(SELECT \.\.\.\): it must be an expression over the row"),
    ("cycles / core_mhz" + " + 0" * 500, r"expr is 2,017 characters long; at most 2,000"),
])
def test_an_expression_that_could_run_unbounded_is_refused_before_it_runs(fresh_db, tmp_path,
                                                                          expr, message):
    """Issue 31: mapping expressions had no time or memory bound, and DuckDB's memory limit
    and interrupt do not reach inside one function call (repeat('x', 2e9): 29 s and 3.9 GB,
    list_sum(range(1e8)): 59 s and 7 GB; a scalar subquery over range(1e12) never ends). An
    expression calls only functions whose result grows with the row, holds no query and is
    at most 2,000 characters: anything else is one line, before it runs."""

    data = tmp_path / "cycles.csv"
    data.write_text("kernel,core_mhz,mem_mhz,cycles,avg_power_w\nbfs,700,924,2100,12.0\n")
    mapping = tmp_path / "m.toml"
    mapping.write_text((MAPPINGS / "example-derived-time.toml").read_text().replace(
        'expr = "cycles / core_mhz"', f'expr = "{expr}"'))
    _refused(fresh_db, data, mapping, r"m\.toml: \[columns\] time: " + message)


def test_the_functions_an_expression_may_call_still_work(fresh_db, tmp_path):
    data = tmp_path / "cycles.csv"
    data.write_text("kernel,core_mhz,mem_mhz,cycles,avg_power_w\nbfs,700,924,2100,12.0\n")
    mapping = tmp_path / "m.toml"
    mapping.write_text((MAPPINGS / "example-derived-time.toml").read_text().replace(
        'expr = "cycles / core_mhz"', 'expr = "CASE WHEN length(kernel) > 0 THEN '
        "greatest(cycles, 1) / core_mhz::DOUBLE /* no repeat( here */ END\""))
    _ingest(fresh_db, data, mapping)
    assert _runs(fresh_db)["example/bfs"][0][3] == pytest.approx(3e3)  # 2100 / 700 us


def test_an_expression_running_past_its_time_bound_is_one_line(monkeypatch):
    """The backstop of the expression bounds: evaluation is interrupted after
    EXPR_TIME_BOUND_S (60 s; here 0.2 s over 4 M rows of five regular expressions each)."""

    import numpy as np
    import pyarrow as pa

    import gpudb.sources.tabular.expressions as ingest_module  # where the bound is read
    from gpudb.sources.tabular.mapping import Derived

    rows = 4_000_000
    import pyarrow.compute as pc

    # kernel names as text ("k0", "k1", ...): an all-number column would be read as DOUBLE
    table = pa.table({"kernel": pc.binary_join_element_wise(
                          "k", pa.array(np.arange(rows)).cast(pa.string()), ""),
                      "cycles": np.arange(rows, dtype=np.float64)})
    expr = "cycles + " + " + ".join(
        f"length(regexp_extract(kernel, '([0-9])([0-9]{{{n}}})', 2))" for n in range(1, 6))
    monkeypatch.setattr(ingest_module, "EXPR_TIME_BOUND_S", 0.2)
    mapping = load_mapping(MAPPINGS / "example-derived-time.toml")
    with ingest_module.Expressions(REPO / "data.csv", mapping, table) as exprs:
        with pytest.raises(IngestError, match=r"example-derived-time\.toml: \[columns\] time: "
                           r"expr ran over 0\.2 s over .*data\.csv, the time bound of a "
                           r"mapping expression$"):
            exprs.evaluate(Derived("[columns] time", "us", 1.0, expr=expr))
