"""Calibration of Wang & Chu's parameters (paper 003 section IV, gpudb/train/calibrate.py): the
micro
suite on the simulated GTX 980, whose configuration is built from the paper's own numbers (eq. 4:
dram_latency_mem_cycles = 222.78 plus 55.32 core cycles beyond the 222-cycle L2 path), so the
microbenchmarks must give the paper's values back; the table, its view, the file path and the
CLI. One calibration of a real DuckDB file is shared by the module (about 5 s)."""

from __future__ import annotations

import json
import math
import os

import pytest
from click.testing import CliRunner

import gpudb
from gpudb.cli import cli
from gpudb.predictors.wangchu_model import GTX980_PUBLISHED
from gpudb.store.db import GpudbError
from gpudb.train.calibrate import (
    PARAMETERS,
    UNITS,
    calibrate,
    load_calibration,
    store_calibration,
)
from sim.config import load_gpu

GTX980 = load_gpu("gtx980")
SM, MEM = GTX980.raw["sm"], GTX980.raw["memory"]
# The DRAM channel's service time of one 128 B transaction, memory cycles (128 / 56 = 2.29).
SERVICE_MEM_CYCLES = SM["transaction_bytes"] / MEM["channel_bytes_per_mem_cycle"]


@pytest.fixture(scope="module")
def gtx980(tmp_path_factory):
    """A database with the GTX 980's microbenchmark calibration: (path, report)."""
    path = tmp_path_factory.mktemp("calibrate") / "cal.duckdb"
    seen = []
    report = calibrate(path, "gtx980", progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, report.runs_added) and seen[-1] == (report.runs_added,) * 2
    return path, report


def stored(path, sql, params=None):
    con = gpudb.connect(path, read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def test_eq4_comes_back_as_the_paper_fitted_it(gtx980):
    """Slope 222.78 and intercept 277.32 (eq. 4), plus exactly what the simulator adds to an
    unloaded DRAM access, which is known from its model (sim/_kernels.py _dram_return):

    - issue: nothing; the dependent load issues in the cycle its operand returns and the LSU
      sends its one transaction in that cycle;
    - L1 lookup: nothing; a miss costs no L1 latency (l1_latency_cycles is charged on hits);
    - queueing: none with one warp, but the transaction holds its DRAM channel for the service
      time 128 B / 56 B per memory cycle = 2.29 memory cycles before its data returns. That is
      paid at the memory clock, so it goes into the slope: 222.78 + 2.29 = 225.07;
    - rounding: each leg is rounded up to whole core cycles: the core leg ceil(222 + 55.32) =
      278 (+0.68) and the memory leg by 0-1 cycle, about +0.5 on average, so the intercept
      lies in [278, 279] and the residual is rounding only (< 0.5 cycle RMS).
    Tolerances: slope 225.07 +- 0.5 cycles (rounding shared between slope and intercept),
    intercept 278-279; both within 1.5% of the paper's.
    """
    _, report = gtx980
    fits = {f.parameter: f for f in report.fits}
    slope, intercept = fits["dm_lat_slope"], fits["dm_lat_intercept"]
    expected_slope = MEM["dram_latency_mem_cycles"] + SERVICE_MEM_CYCLES
    assert expected_slope == pytest.approx(225.066, abs=1e-3)
    assert slope.value == pytest.approx(expected_slope, abs=0.5)
    core_leg = math.ceil(MEM["l2_latency_cycles"] + MEM["dram_latency_cycles"])  # 278
    assert core_leg <= intercept.value <= core_leg + 1.0
    assert slope.value == pytest.approx(GTX980_PUBLISHED["dm_lat_slope"], rel=0.015)
    assert intercept.value == pytest.approx(GTX980_PUBLISHED["dm_lat_intercept"], rel=0.015)
    assert slope.fit_residual == intercept.fit_residual < 0.5
    assert slope.residual_unit == "core cycles"
    # every core P-state x memory 400, 700, 1000 MHz
    assert slope.n_points == len(GTX980.core_mhz) * 3 == len(slope.source_run_ids)
    assert report.baseline == (1000.0, 1000.0)


def test_eq4_points_recover_the_ratio_dependence(gtx980):
    """The pointer-chase runs behind eq. 4 (what `gpudb calibrate` prints): one latency per
    core/memory setting, rising with core_f/mem_f, within a cycle of the fitted line (the
    simulator rounds each leg up to whole cycles) and within 1.5% of the paper's line."""
    from gpudb.train.calibrate import eq4_points

    path, _ = gtx980
    con = gpudb.connect(path, read_only=True)
    try:
        columns, rows = eq4_points(con, "gtx980")
    finally:
        con.close()
    at = {c: i for i, c in enumerate(columns)}
    assert len(rows) == 21 and len({r[at["core_mem_ratio"]] for r in rows}) == 19
    for r in rows:
        assert abs(r[at["dm_lat_cycles"]] - r[at["fitted_cycles"]]) < 1.0
        assert r[at["dm_lat_cycles"]] == pytest.approx(r[at["paper_gtx980_cycles"]], rel=0.015)
    by_ratio = sorted((r[at["core_mem_ratio"]], r[at["dm_lat_cycles"]]) for r in rows)
    assert by_ratio[0] == (0.4, 369.0) and by_ratio[-1] == (2.5, 841.0)


def test_the_other_parameters(gtx980):
    """Each against the simulator's mechanism: L2 and shared memory are core-clocked fixed
    latencies; alu_only is bound by alu_width ALU warp instructions a cycle; a transaction of
    one SM streaming from DRAM takes at least 16 SMs x 128 B / (4 channels x 56 B) = 9.14
    memory cycles (the paper's 9.31 is at 82% bandwidth efficiency); an L2 hit has no
    bandwidth limit in the model, so streaming from L2 is bound by the SM's MSHRs (Little's
    law: l2_lat / mshrs); the LSU sends one transaction a cycle, so requests of consecutive
    warps arrive one cycle apart plus DRAM channel conflicts."""
    _, report = gtx980
    v = report.values()
    assert set(v) == set(PARAMETERS)
    assert v["l2_lat"] == MEM["l2_latency_cycles"] == GTX980_PUBLISHED["l2_lat"] == 222.0
    assert v["sh_lat"] == SM["shared_latency_cycles"]
    assert v["inst_cycle"] == pytest.approx(1 / SM["alu_width"], rel=1e-3)
    peak = GTX980.n_sm * SERVICE_MEM_CYCLES / MEM["channels"]
    assert peak == pytest.approx(9.143, abs=1e-3)
    assert peak < v["dm_del"] < peak / 0.9
    assert v["dm_del"] == pytest.approx(GTX980_PUBLISHED["dm_del"], rel=0.05)
    assert v["l2_del"] == pytest.approx(MEM["l2_latency_cycles"] / SM["mshrs"], rel=0.01)
    assert 1.0 <= v["inter_arr"] < 1.2
    fits = {f.parameter: f for f in report.fits}
    assert fits["inter_arr"].n_points == 6
    assert fits["l2_lat"].n_points == len(GTX980.core_mhz) and fits["l2_lat"].fit_residual == 0
    assert fits["dm_del"].n_points == 1 and fits["dm_del"].fit_residual == 0


def test_stored_rows_have_units_residuals_and_runs(gtx980):
    path, report = gtx980
    rows = stored(path, "SELECT parameter, value, unit, fit_residual, residual_unit, n_points, "
                        "source_run_ids, note, method, gpu_id, calibration_id FROM calibration "
                        "ORDER BY parameter")
    assert [r[0] for r in rows] == sorted(PARAMETERS)
    fits = {f.parameter: f for f in report.fits}
    run_ids = {r[0] for r in stored(path, "SELECT run_id FROM run")}
    for (param, value, unit, residual, residual_unit, n, runs, note, method, gpu_id,
         cid) in rows:
        assert (method, gpu_id, cid) == ("microbenchmark", "gtx980", report.calibration_id)
        assert value == fits[param].value and unit == UNITS[param]
        assert residual is not None and residual >= 0 and residual_unit, param
        assert n >= 1 and runs and set(runs) <= run_ids, param
        assert note.startswith("paper 003"), param
    kernels = dict(stored(path, "SELECT run_id, kernel_id FROM run"))
    slope_runs = next(r[6] for r in rows if r[0] == "dm_lat_slope")
    assert {kernels[r] for r in slope_runs} == {"micro/pointer_chase"}
    burst_runs = next(r[6] for r in rows if r[0] == "inter_arr")
    assert {kernels[r] for r in burst_runs} == {f"micro/dram_burst_{w}"
                                                for w in (1, 2, 4, 8, 16, 32)}


def test_view_and_load(gtx980):
    path, report = gtx980
    con = gpudb.connect(path, read_only=True)
    try:
        row = con.execute("SELECT gpu_id, method, calibration_id, "
                          f"{', '.join(PARAMETERS)} FROM wangchu_calibration").fetchall()
        assert row == [("gtx980", "microbenchmark", report.calibration_id,
                        *(report.values()[p] for p in PARAMETERS))]
        cal = load_calibration(con, "gtx980")
        assert {p: getattr(cal, p) for p in PARAMETERS} == report.values()
        assert load_calibration(con, "gtx980", "file") is None
        assert cal.dm_lat(1000, 1000) == pytest.approx(504, abs=1)  # pointer chase at ratio 1
    finally:
        con.close()


def test_calibrating_again_reuses_runs_and_replaces_rows(gtx980):
    """Same runs, same values, same id; the rows are replaced (created_at refreshed), not
    duplicated. Through the CLI, which prints the table with the paper's values beside."""
    path, report = gtx980
    runs_before = stored(path, "SELECT count(*) FROM run")
    stamp = stored(path, "SELECT CAST(max(created_at) AS VARCHAR) FROM calibration")
    result = CliRunner().invoke(cli, ["--db", str(path), "calibrate", "--gpu", "gtx980",
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    printed = {r["parameter"]: r for r in json.loads(result.stdout)}
    assert printed["dm_lat_slope"]["value"] == report.values()["dm_lat_slope"]
    assert printed["dm_lat_slope"]["paper_gtx980"] == 222.78
    assert printed["dm_lat_intercept"]["paper_gtx980"] == 277.32
    assert printed["dm_del"]["paper_gtx980"] == 9.31 and printed["l2_lat"]["paper_gtx980"] == 222
    assert printed["sh_lat"]["paper_gtx980"] is None
    assert f"calibration_id {report.calibration_id} " in result.stderr
    assert "0 runs simulated, 50 reused" in result.stderr
    assert stored(path, "SELECT count(*) FROM run") == runs_before
    assert stored(path, "SELECT count(*), count(DISTINCT calibration_id) FROM calibration") == [
        (8, 1)]
    assert stored(path, "SELECT CAST(max(created_at) AS VARCHAR) FROM calibration") >= stamp


CAL_FILE = """\
dm_lat_slope = { value = 222.78, unit = "core cycles per unit core/mem ratio" }
dm_lat_intercept = { value = 277.32, unit = "core cycles" }
dm_del = { value = 9.31, unit = "memory cycles", note = "Table III, 700/700 MHz" }
l2_lat = { value = 222, unit = "core cycles", fit_residual = 1.0, n_points = 7 }
l2_del = { value = 1, unit = "core cycles" }
"""


def test_from_file_for_a_measured_gpu(tiny_db, tmp_path):
    cal = tmp_path / "cal.toml"
    cal.write_text(CAL_FILE)
    args = ["--db", str(tiny_db), "calibrate", "--gpu", "tiny", "--from-file", str(cal)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("calibration_id ")
    rows = stored(tiny_db, "SELECT parameter, value, unit, fit_residual, residual_unit, "
                           "n_points, source_run_ids, note FROM calibration ORDER BY parameter")
    assert [r[:3] for r in rows] == [
        ("dm_del", 9.31, "memory cycles"), ("dm_lat_intercept", 277.32, "core cycles"),
        ("dm_lat_slope", 222.78, UNITS["dm_lat_slope"]), ("l2_del", 1.0, "core cycles"),
        ("l2_lat", 222.0, "core cycles")]
    assert rows[4][3:] == (1.0, "core cycles", 7, None, "from cal.toml")
    assert rows[0][7] == "Table III, 700/700 MHz"
    # the same file again: the same calibration, no new rows
    assert CliRunner().invoke(cli, args).exit_code == 0
    assert stored(tiny_db, "SELECT count(*), count(DISTINCT calibration_id) FROM calibration "
                           "WHERE method = 'file'") == [(5, 1)]
    con = gpudb.connect(tiny_db, read_only=True)
    try:
        loaded = load_calibration(con, "tiny", "file")
    finally:
        con.close()
    assert loaded.dm_lat(400, 400) == pytest.approx(500.1)  # Table II at 400 MHz
    assert math.isnan(loaded.sh_lat) and math.isnan(loaded.inst_cycle)


FILE_ERRORS = [
    ('foo = { value = 1, unit = "core cycles" }\n',
     "unknown parameter 'foo' (known: dm_lat_slope, dm_lat_intercept, dm_del, l2_lat, l2_del, "
     "sh_lat, inter_arr, inst_cycle)"),
    ('l2_lat = { value = 222, unit = "core cycles" }\ndm_del = { value = 9.3, unit = "cycles" }\n',
     "dm_del: unit 'cycles' is wrong, expected 'memory cycles'"),
    ('dm_del = { value = 9.3 }\n', "dm_del: missing 'unit' (expected 'memory cycles')"),
    ('dm_del = 9.3\n', 'dm_del must be a table like { value = 1.0, unit = "memory cycles" }'),
    ('dm_del = { value = nan, unit = "memory cycles" }\n',
     "dm_del: 'value' must be a finite number, got nan"),
    ('dm_del = { value = 9.3, unit = "memory cycles", sigma = 1 }\n',
     "dm_del: unknown key 'sigma' (allowed: fit_residual, n_points, note, residual_unit, unit, "
     "value)"),
    ("dm_del = [\n", "not valid TOML: "),
    # issue 31: values that make pred_wangchu predict nothing, or break the reader
    *[(f'l2_lat = {{ value = {v}, unit = "core cycles" }}\n',
       f"l2_lat: 'value' must be > 0 and at most 1e+09 core cycles, got {shown}")
      for v, shown in (("0", "0.0"), ("-0.0", "-0.0"), ("-222", "-222.0"),
                       ("1e10", "10000000000.0"))],
    ('inst_cycle = { value = inf, unit = "core cycles" }\n',
     "inst_cycle: 'value' must be a finite number, got inf"),
    (f'l2_del = {{ value = {"9" * 400}, unit = "core cycles" }}\n',
     "l2_del: 'value' must be a finite number, got 999999999999"),
    (f'l2_del = {{ value = {"9" * 400}.0, unit = "core cycles" }}\n',
     "l2_del: 'value' must be a finite number, got inf"),
    (f'l2_del = {{ value = {"9" * 5000}, unit = "core cycles" }}\n', "not valid TOML: "),
    ('l2_lat = { value = 222, unit = "core cycles", n_points = 2147483648 }\n',
     "l2_lat: 'n_points' must be a whole number from 1 to 2147483647, got 2147483648"),
    ('l2_lat = { value = 222, unit = "core cycles", fit_residual = -1 }\n',
     "l2_lat: 'fit_residual' must be >= 0 and at most 1e+09, got -1.0"),
    ("l2_lat = " + "[" * 3000 + "]" * 3000 + "\n", "not valid TOML: nested too deep"),
]


def test_from_file_errors_are_one_line_and_write_nothing(tiny_db, tmp_path):
    cal = tmp_path / "cal.toml"
    for text, error in FILE_ERRORS:
        cal.write_text(text)
        result = CliRunner().invoke(cli, ["--db", str(tiny_db), "calibrate", "--gpu", "tiny",
                                          "--from-file", str(cal)])
        assert result.exit_code == 1, text
        assert result.output.startswith(f"Error: {cal}: {error}"), result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
    assert stored(tiny_db, "SELECT count(*) FROM calibration") == [(0,)]


def test_from_file_reads_only_a_regular_file(tiny_db, tmp_path):
    fifo = tmp_path / "cal.fifo"
    os.mkfifo(fifo)  # no writer: a plain open would wait forever
    for path, what in ((fifo, "a FIFO"), ("/dev/zero", "a character device")):
        result = CliRunner().invoke(cli, ["--db", str(tiny_db), "calibrate", "--gpu", "tiny",
                                          "--from-file", str(path)])
        assert (result.exit_code, result.output) == (
            1, f"Error: {path} is {what}, not a calibration file (TOML)\n")
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * (1 << 20) + "\n")
    result = CliRunner().invoke(cli, ["--db", str(tiny_db), "calibrate", "--gpu", "tiny",
                                      "--from-file", str(big)])
    assert result.output == (f"Error: {big} is larger than 1,048,576 bytes, too large for a "
                             "calibration file (TOML)\n")
    assert stored(tiny_db, "SELECT count(*) FROM calibration") == [(0,)]


def test_cli_refusals(tiny_db, tmp_path):
    cal = tmp_path / "cal.toml"
    cal.write_text(CAL_FILE)

    def run(*args):
        return CliRunner().invoke(cli, ["--db", str(tiny_db), "calibrate", *args])

    unknown = run("--gpu", "v100", "--from-file", str(cal))
    assert (unknown.exit_code, unknown.output) == (
        1, "Error: no GPU 'v100' in the database: sweep or ingest its runs first\n")
    not_sim = run("--gpu", "tiny")
    assert not_sim.exit_code == 1 and "'tiny' is not a simulator GPU" in not_sim.output
    bad_base = run("--gpu", "gtx980", "--baseline", "650,700")
    assert bad_base.exit_code == 1
    assert bad_base.output.startswith("Error: baseline 650/700 MHz is not a pair of gtx980 ")
    assert run("--gpu", "gtx980", "--baseline", "700").exit_code == 2
    assert stored(tiny_db, "SELECT count(*) FROM calibration") == [(0,)]
    assert stored(tiny_db, "SELECT count(*) FROM run WHERE gpu_id = 'gtx980'") == [(0,)]


def test_store_calibration_api(tiny_db):
    """What a least-squares fit passes: a subset of the parameters, one run list for all,
    residuals in another unit; a wrong unit or an unknown GPU writes nothing."""
    con = gpudb.connect(tiny_db)
    try:
        run_ids = [r[0] for r in con.execute("SELECT run_id FROM run ORDER BY run_id LIMIT 2")
                   .fetchall()]
        values = {"dm_lat_slope": 200.0, "dm_lat_intercept": 250.0, "dm_del": 8.0,
                  "l2_lat": 200.0, "l2_del": 1.5, "sh_lat": 30.0, "inst_cycle": 0.5}
        kwargs = dict(units={p: UNITS[p] for p in values}, source_run_ids=run_ids,
                      fit_residuals={p: 4.2 for p in values},
                      residual_units={p: "% RMS time error" for p in values},
                      n_points={p: 16 for p in values}, notes={p: "ls" for p in values})
        first = store_calibration(con, "tiny", "least_squares", values, **kwargs)
        assert store_calibration(con, "tiny", "least_squares", values, **kwargs) == first
        rows = con.execute("SELECT parameter, source_run_ids, fit_residual, residual_unit, "
                           "n_points FROM calibration").fetchall()
        assert len(rows) == 7 and all(r[1:] == (run_ids, 4.2, "% RMS time error", 16)
                                      for r in rows)
        cal = load_calibration(con, "tiny", "least_squares")
        assert cal.dm_del == 8.0 and math.isnan(cal.inter_arr)
        other = store_calibration(con, "tiny", "least_squares", {**values, "dm_del": 9.0})
        assert other != first
        assert load_calibration(con, "tiny", "least_squares").dm_del == 9.0  # the latest
        with pytest.raises(GpudbError, match="dm_del: unit 'cycles' is wrong, expected "
                                             "'memory cycles'"):
            store_calibration(con, "tiny", "file", values, units={"dm_del": "cycles"})
        with pytest.raises(GpudbError, match="no GPU 'nope' in the database"):
            store_calibration(con, "nope", "file", values)
        with pytest.raises(GpudbError, match="method must be one of"):
            store_calibration(con, "tiny", "guess", values)
        assert con.execute("SELECT count(*) FROM calibration").fetchall() == [(14,)]
    finally:
        con.close()
