"""Ingest of measured data: the real datasets load whole; bad input writes nothing."""

from __future__ import annotations

import csv
import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpudb
from gpudb.ingest import IngestError, ingest
from gpudb.mapping import MappingError, load_mapping
from conftest import MAPPINGS, TINY_CSV, TINY_MAPPING, real_file, row_counts


def _ingest(path, files, mapping, experiment=None):
    con = gpudb.connect(path)
    try:
        return ingest(con, [str(f) for f in files], load_mapping(mapping), experiment)
    finally:
        con.close()


def test_rtx2070s_loads_every_row_and_converts_units(fresh_db):
    data = real_file("gtx2070s-dvfs-real-Performance-Power.csv")
    [report] = _ingest(fresh_db, [data], MAPPINGS / "gtx2070s.toml")
    assert (report.rows, report.runs_added) == (400, 400)
    counts = row_counts(fresh_db)
    assert counts["run"] == 400 and counts["kernel"] == 20 and counts["metric"] == 0
    con = gpudb.connect(fresh_db, read_only=True)
    # first data line: BlackScholes,1680,5800,...,1.820231 ms,...,183.27302000000003 W
    time_ns, energy_j, n_sm = con.execute(
        "SELECT time_ns, energy_j, n_sm FROM run WHERE kernel_id = "
        "'cuda-sdk-rodinia/BlackScholes:BlackScholesGPU' AND core_mhz = 1680 "
        "AND mem_mhz = 5800").fetchall()[0]
    assert time_ns == pytest.approx(1.820231e6)
    assert energy_j == pytest.approx(183.27302 * 1.820231e-3)
    assert n_sm == 40
    grid = con.execute("SELECT count(DISTINCT core_mhz), count(DISTINCT mem_mhz) FROM run"
                       ).fetchall()[0]
    assert grid == (5, 4)
    provenance = con.execute("SELECT file_name, rows_read, runs_added, ingested_by, host, "
                             "gpudb_version, length(file_sha256) FROM ingest_file").fetchall()
    assert provenance[0][:3] == ("gtx2070s-dvfs-real-Performance-Power.csv", 400, 400)
    assert provenance[0][3] and provenance[0][4] and provenance[0][5] == gpudb.__version__
    assert provenance[0][6] == 64
    con.close()
    [again] = _ingest(fresh_db, [data], MAPPINGS / "gtx2070s.toml")
    assert again.skipped_reason.startswith("already ingested")
    assert row_counts(fresh_db) == counts


def test_v100_profile_and_ptx_are_the_same_runs_with_both_metric_sets(fresh_db):
    profile = real_file("v100-dvfs-real-profile.csv")
    ptx = real_file("v100-dvfs-real-ptx.csv")
    [first] = _ingest(fresh_db, [profile], MAPPINGS / "v100-profile.toml")
    assert (first.rows, first.runs_added, first.metrics_added) == (200, 200, 200 * 7)
    [second] = _ingest(fresh_db, [ptx], MAPPINGS / "v100-ptx.toml")
    # The PTX export repeats the time and power of the profile export (some power readings
    # differ in the last float digit): the same 200 measurements, now with opcode counts.
    assert (second.rows, second.runs_added, second.runs_present) == (200, 0, 200)
    with open(ptx, newline="") as handle:
        header = next(csv.reader(handle))
    non_metric = {"benchmark", "kernel", "argNo", "core_frequency", "memory_frequency", "time",
                  "average_power", "DRAMA", "FP16A", "FP32A", "FP64A", "SMACT", "SMOCC", "TENSO"}
    opcode_columns = [c for c in header if c and c not in non_metric]
    assert second.metrics_added == 200 * len(opcode_columns)
    con = gpudb.connect(fresh_db, read_only=True)
    names = {r[0] for r in con.execute("SELECT DISTINCT name FROM metric").fetchall()}
    assert "dcgm_dram_active" in names and "ptx_add" in names and "DRAMA" not in names
    assert con.execute("SELECT count(*), count(DISTINCT core_mhz) FROM run").fetchall() == [
        (200, 10)]
    con.close()


def test_parquet_input_with_energy_column(fresh_db, tmp_path):
    table = pa.table({"k": ["a", "a"], "f": [700.0, 350.0], "m": [900, 900],
                      "t_us": [10.0, 18.0], "e_mj": [2.0, 1.5], "ipc": [1.2, 0.7]})
    pq.write_table(table, tmp_path / "m.parquet")
    (tmp_path / "m.toml").write_text(
        '[gpu]\ngpu_id = "p"\nname = "p"\nn_sm = 1\n[run]\nsuite = "s"\n'
        '[columns]\nkernel = "k"\ncore_mhz = "f"\nmem_mhz = "m"\n'
        'time = { column = "t_us", unit = "us" }\nenergy = { column = "e_mj", unit = "mJ" }\n')
    [report] = _ingest(fresh_db, [tmp_path / "m.parquet"], tmp_path / "m.toml")
    assert (report.runs_added, report.metrics_added) == (2, 2)
    con = gpudb.connect(fresh_db, read_only=True)
    assert con.execute("SELECT core_mhz, time_ns, energy_j FROM run ORDER BY core_mhz"
                       ).fetchall() == [(350.0, 18000.0, 0.0015), (700.0, 10000.0, 0.002)]
    assert con.execute("SELECT name, value FROM metric ORDER BY value").fetchall() == [
        ("ipc", 0.7), ("ipc", 1.2)]
    con.close()


def _tiny_with(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name, text, message", [
    ("nocol.csv", TINY_CSV.replace("time_ms", "duration"),
     r"nocol\.csv: column 'time_ms' named in .* is missing"),
    ("nan.csv", TINY_CSV.replace("alpha,1000,800,2.0", "alpha,1000,800,two"),
     r"nan\.csv: row 2 \(line 3\), column 'time_ms': 'two' is not a finite number"),
    ("neg.csv", TINY_CSV.replace("beta,500,800,10.0", "beta,500,800,-10.0"),
     r"neg\.csv: row 5 \(line 6\), column 'time_ms': '-10.0' must be positive"),
    ("zero.csv", TINY_CSV.replace("beta,500,1600", "beta,0,1600"),
     r"zero\.csv: row 7 \(line 8\), column 'core_mhz': '0' must be positive"),
    ("dup.csv", TINY_CSV + "alpha,500,800,4.1,101,0.5\n",
     r"dup\.csv: rows 1 and 9 both measure kernel 'alpha' at the same setting"),
    ("empty.csv", TINY_CSV.replace("beta,500,800,10.0,50", "beta,500,800,,50"),
     r"empty\.csv: row 5 \(line 6\), column 'time_ms' is empty"),
    ("badmetric.csv", TINY_CSV.replace("0.7\n", "lots\n"),
     r"badmetric\.csv: row 3 \(line 4\), column 'dram_util': 'lots' is not a finite number"),
    ("header.csv", TINY_CSV.splitlines()[0] + "\n", r"header\.csv: no data rows"),
    ("ragged.csv", TINY_CSV + "gamma,1,2\n", r"ragged\.csv: cannot read as CSV"),
    ("binary.parquet", "not parquet at all", r"binary\.parquet: cannot read as Parquet"),
])
def test_bad_file_names_the_problem_and_writes_nothing(tiny_db, tmp_path, name, text, message):
    before = row_counts(tiny_db)
    bad = _tiny_with(tmp_path, name, text)
    good = _tiny_with(tmp_path, "other.csv", TINY_CSV.replace("alpha", "gamma"))
    with pytest.raises(IngestError, match=message) as err:
        # a good file first: all or nothing means it is not written either
        _ingest(tiny_db, [good, bad], tmp_path / "tiny.toml")
    assert "\n" not in str(err.value)
    assert row_counts(tiny_db) == before


def test_unreadable_and_missing_files(tiny_db, tmp_path):
    before = row_counts(tiny_db)
    with pytest.raises(IngestError, match="nope.csv: no such file"):
        _ingest(tiny_db, [tmp_path / "nope.csv"], tmp_path / "tiny.toml")
    garbage = tmp_path / "garbage.csv"
    garbage.write_bytes(b"\xff\xfe\x00\x81binary" * 50)
    with pytest.raises(IngestError, match="garbage.csv: cannot read as CSV"):
        _ingest(tiny_db, [garbage], tmp_path / "tiny.toml")
    assert row_counts(tiny_db) == before


@pytest.mark.parametrize("change, message", [
    (("[columns]", "[colums]"), r"unknown section \[colums\]"),
    (('kernel = "kernel"', 'kernal = "kernel"'), r"unknown key 'kernal' in \[columns\]"),
    (('unit = "ms"', 'unit = "fortnights"'), r"unknown unit 'fortnights'"),
    (('n_sm = 2', 'n_sm = -2'), r"n_sm must be a positive integer"),
    (('suite = "tiny"', ''), r"\[run\] needs 'suite'"),
    (('[gpu]', '[gpu'), r"not valid TOML"),
])
def test_bad_mapping_is_one_clear_error(tmp_path, change, message):
    path = tmp_path / "bad.toml"
    path.write_text(TINY_MAPPING.replace(*change))
    with pytest.raises(MappingError, match=message) as err:
        load_mapping(path)
    assert str(path) in str(err.value)


# Property: whatever is wrong with a file, ingest raises IngestError and writes nothing.
_GOOD_ROWS = [row.split(",") for row in TINY_CSV.strip().splitlines()]


@st.composite
def malformed_csv(draw) -> str:
    header, rows = list(_GOOD_ROWS[0]), [list(r) for r in _GOOD_ROWS[1:]]
    defect = draw(st.sampled_from(["drop_column", "text_cell", "non_positive", "duplicate",
                                   "empty_cell", "no_rows", "ragged", "non_finite"]))
    required = [1, 2, 3]  # core_mhz, mem_mhz, time_ms
    row = draw(st.integers(0, len(rows) - 1))
    if defect == "drop_column":
        col = draw(st.sampled_from([0, 1, 2, 3, 4]))
        header.pop(col)
        for r in rows:
            r.pop(col)
    elif defect == "text_cell":
        col = draw(st.sampled_from(required + [4]))
        rows[row][col] = draw(st.text(alphabet="abcxyz!?#", min_size=1, max_size=6))
    elif defect == "non_positive":
        col = draw(st.sampled_from(required))
        rows[row][col] = draw(st.sampled_from(["0", "-1", "-0.5", "-1e9"]))
    elif defect == "duplicate":
        rows.insert(draw(st.integers(0, len(rows))), list(rows[row]))
    elif defect == "empty_cell":
        rows[row][draw(st.sampled_from([0] + required + [4]))] = ""
    elif defect == "no_rows":
        rows = []
    elif defect == "ragged":
        rows[row] = rows[row] + ["extra"] * draw(st.integers(1, 3))
    elif defect == "non_finite":
        rows[row][draw(st.sampled_from(required + [5]))] = draw(st.sampled_from(["inf", "-inf"]))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


@pytest.mark.slow  # ~20 s on 2 cores: 220 generated files, each validated and refused
@settings(max_examples=220, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=malformed_csv())
def test_malformed_files_never_write(tiny_db, tmp_path, text):
    path = tmp_path / "generated.csv"
    path.write_text(text)
    con = gpudb.connect(tiny_db)
    try:
        before = [con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
                  for t in ("run", "metric", "kernel", "ingest_file", "experiment")]
        with pytest.raises(IngestError):
            ingest(con, [path], load_mapping(tmp_path / "tiny.toml"), experiment="other")
        after = [con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
                 for t in ("run", "metric", "kernel", "ingest_file", "experiment")]
    finally:
        con.close()
    assert after == before
