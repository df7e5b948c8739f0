"""Published layouts (issue 38): a label measured twice at one setting numbered in file order,
a row filter in the mapping, and errors that name the file's lines and count every offending
row."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import row_counts

import gpudb
from gpudb.cli import cli
from gpudb.sources.tabular.ingest import ingest
from gpudb.sources.tabular.mapping import MappingError, load_mapping
from gpudb.sources.tabular.read import IngestError

# Two sections of one benchmark (stencil) at every setting, a kernel measured once per
# setting (gemm), and a second argument set (argNo b) that the filter leaves out.
PUBLISHED = """\
bench,core,mem,time_s,power_w,argNo,DRAMA
stencil,1000,5000,2.0,100,a,0.5
stencil,1000,5000,3.0,110,a,0.6
gemm,1000,5000,1.0,150,a,0.1
stencil,1500,5000,1.5,130,a,0.5
stencil,1500,5000,2.4,140,a,0.6
gemm,1500,5000,0.7,180,a,0.1
gemm,1500,5000,0.8,170,b,0.2
"""

MAPPING = """\
[gpu]
gpu_id = "rtx8000"
name = "Quadro RTX 8000"
n_sm = 72

[run]
suite = "pub"

[rows]
{rows}

[columns]
kernel = "bench"
core_mhz = "core"
mem_mhz = "mem"
time = {{ column = "time_s", unit = "s" }}
power = {{ column = "power_w", unit = "W" }}

[metrics]
text = ["argNo"]
"""


def _files(tmp_path, rows: str, data: str = PUBLISHED, name: str = "pub.csv"):
    (tmp_path / name).write_text(data)
    (tmp_path / "pub.toml").write_text(MAPPING.format(rows=rows))
    return tmp_path / name, tmp_path / "pub.toml"


def _ingest(db, data, mapping):
    con = gpudb.connect(db)
    try:
        return ingest(con, [data], load_mapping(mapping))
    finally:
        con.close()


def _runs(db):
    con = gpudb.connect(db, read_only=True)
    try:
        return con.execute("SELECT kernel_id, core_mhz, time_ns FROM run ORDER BY ALL").fetchall()
    finally:
        con.close()


def test_repeated_labels_are_numbered_in_file_order_and_listed(fresh_db, tmp_path):
    data, mapping = _files(tmp_path, 'where = "argNo = \'a\'"\nrepeats = "number"')
    result = CliRunner().invoke(cli, ["--db", str(fresh_db), "ingest", str(data), "--mapping",
                                      str(mapping)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[:2] == [
        f"{data}: 6 rows, 6 runs added, 0 already present, 6 metric values",
        "  rows left out by [rows] where: 1; labels measured more than once at a setting, "
        "numbered in file order: stencil x2 (stencil#1..#2)"]
    # the first stencil section is #1 at both settings, the second #2; gemm keeps its name
    assert _runs(fresh_db) == [
        ("pub/gemm", 1000.0, 1e9), ("pub/gemm", 1500.0, 7e8),
        ("pub/stencil#1", 1000.0, 2e9), ("pub/stencil#1", 1500.0, 1.5e9),
        ("pub/stencil#2", 1000.0, 3e9), ("pub/stencil#2", 1500.0, 2.4e9)]
    assert row_counts(fresh_db)["kernel"] == 3


def test_labelled_sections_repeating_one_benchmark_are_numbered(fresh_db, tmp_path):
    """Two sections labelled 'hotspot' (one benchmark's two kernels exported under its name):
    the rows of the first section are #1, of the second #2, at each setting."""
    text = "hotspot\n1000,2.0\n1500,1.5\n\nhotspot\n1000,4.0\n1500,3.0\nlud\n1000,1.0\n"
    (tmp_path / "s.csv").write_text(text)
    (tmp_path / "s.toml").write_text(
        '[gpu]\ngpu_id = "g"\nname = "G"\nn_sm = 2\n[run]\nsuite = "s"\n'
        '[rows]\nrepeats = "number"\n[file]\nheader = ["core", "time"]\nlabels = "kernel"\n'
        '[columns]\nkernel = "kernel"\ncore_mhz = "core"\nmem_mhz = { value = 877, unit = '
        '"MHz" }\ntime = { column = "time", unit = "ms" }\nenergy = { value = 1, unit = "J" }\n')
    [report] = _ingest(fresh_db, tmp_path / "s.csv", tmp_path / "s.toml")
    assert report.repeats == {"hotspot": 2}
    assert _runs(fresh_db) == [("s/hotspot#1", 1000.0, 2e6), ("s/hotspot#1", 1500.0, 1.5e6),
                               ("s/hotspot#2", 1000.0, 4e6), ("s/hotspot#2", 1500.0, 3e6),
                               ("s/lud", 1000.0, 1e6)]


def test_without_the_option_every_repeat_is_counted_by_line(fresh_db, tmp_path):
    data, mapping = _files(tmp_path, "")
    with pytest.raises(IngestError) as err:
        _ingest(fresh_db, data, mapping)
    # stencil twice at each setting, gemm twice at 1500 MHz (argNo a and b): lines 2, 3, 5,
    # 6, 7 and 8, every data line but gemm's at 1000 MHz (line 4)
    assert str(err.value) == (
        f"{data}: kernel 'stencil' is measured 2 times at one setting (columns bench, core, "
        "mem): lines 2, 3; 6 rows of 2 kernels repeat a setting (6 rows in all: lines 2, 3, 5, "
        f"6, 7, ...); to keep them as stencil#1, stencil#2, ... (file order), set [rows] "
        f'repeats = "number" in {mapping}')
    assert row_counts(fresh_db)["run"] == 0


def test_the_filter_keeps_the_file_s_line_numbers_in_errors(fresh_db, tmp_path):
    bad = PUBLISHED.replace("gemm,1500,5000,0.7", "gemm,1500,5000,x").replace(
        "stencil,1000,5000,3.0", "stencil,1000,5000,y")
    data, mapping = _files(tmp_path, 'where = "bench <> \'stencil\' OR core = 1000"', bad)
    # rows 4-5 (lines 5-6) are left out: the bad cells are on lines 3 and 7 of the file
    with pytest.raises(IngestError, match=r"pub\.csv: line 3, column 'time_s': 'y' is not a "
                                          r"finite number \(2 rows in all: lines 3, 7\)$"):
        _ingest(fresh_db, data, mapping)


def test_every_offending_row_is_counted(fresh_db, tmp_path):
    bad = PUBLISHED.replace(",100,", ",-1,").replace(",110,", ",-2,").replace(",130,", ",-3,")
    data, mapping = _files(tmp_path, 'repeats = "number"', bad)
    with pytest.raises(IngestError, match=r"pub\.csv: line 2, column 'power_w': '-1' must not be "
                                          r"negative \(3 rows in all: lines 2, 3, 5\)$"):
        _ingest(fresh_db, data, mapping)


def test_a_parquet_filter_names_the_file_s_rows(fresh_db, tmp_path):
    table = pa.table({"bench": ["a", "b", "c", "d"], "core": [1000, 1000, 1000, 1000],
                      "mem": [5000] * 4, "time_s": [1.0, 2.0, -1.0, -2.0],
                      "power_w": [1.0] * 4, "argNo": ["a"] * 4})
    pq.write_table(table, tmp_path / "p.parquet")
    _, mapping = _files(tmp_path, "where = \"bench <> 'a'\"")
    with pytest.raises(IngestError, match=r"p\.parquet: row 3, column 'time_s': '-1\.0' must "
                                          r"be positive \(2 rows in all: rows 3, 4\)$"):
        _ingest(fresh_db, tmp_path / "p.parquet", mapping)


@pytest.mark.parametrize("where, message", [
    ("core > 5000", r"\[rows\] where keeps none of the 7 rows of .*pub\.csv$"),
    ("core * 2", r"\[rows\] where: expr gives DOUBLE values over .*, not true or false"),
    ("length(repeat('x', 1000000000)) > 0", r"\[rows\] where: expr calls repeat\(\)"),
    ("nosuch = 1", r"\[rows\] where: expr names column 'nosuch', which .*pub\.csv does not "
                   r"have$"),
])
def test_a_bad_filter_is_one_line_and_writes_nothing(fresh_db, tmp_path, where, message):
    data, mapping = _files(tmp_path, f'where = "{where}"')
    with pytest.raises(IngestError, match=message):
        _ingest(fresh_db, data, mapping)
    assert row_counts(fresh_db)["run"] == 0


@pytest.mark.parametrize("rows, message", [
    ('repeats = "yes"', r"\[rows\] repeats must be 'refuse' or 'number', not the string 'yes'"),
    ('where = "a = ("', r"\[rows\] where is not one SQL expression"),
    ('order = "x"', r"unknown key 'order' in \[rows\]; expected one of repeats, where"),
])
def test_a_bad_rows_section_is_a_mapping_error(tmp_path, rows, message):
    _, mapping = _files(tmp_path, rows)
    with pytest.raises(MappingError, match=message):
        load_mapping(mapping)
