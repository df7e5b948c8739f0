"""The sanity summary after an ingest (gpudb.sources.summary): its figures on the tiny
hand-made CSV, and each flag on a file made to raise it; real files."""

from __future__ import annotations

import pytest

import gpudb
from gpudb.sources.tabular.ingest import ingest
from gpudb.sources.summary import summarize
from gpudb.sources.tabular.mapping import load_mapping

MAPPING = """\
[gpu]
gpu_id = "lab"
name = "lab GPU (test)"
n_sm = 2
[run]
suite = "lab"
[columns]
kernel = "kernel"
core_mhz = "core_mhz"
mem_mhz = "mem_mhz"
time = {{ column = "time", unit = "{unit}" }}
energy = {{ column = "energy_j", unit = "J" }}
"""
# times in seconds; power_w (a metric) agrees with energy / time
CSV = """kernel,core_mhz,mem_mhz,time,energy_j,power_w
a,500,800,0.004,0.4,100
a,1000,800,0.002,0.5,250
b,500,800,0.010,0.5,50
b,1000,800,0.0055,0.495,90
"""


def summary_of(tmp_path, fresh_db, csv: str, unit: str):
    (tmp_path / "lab.csv").write_text(csv)
    (tmp_path / "lab.toml").write_text(MAPPING.format(unit=unit))
    con = gpudb.connect(fresh_db)
    try:
        reports = ingest(con, [tmp_path / "lab.csv"], load_mapping(tmp_path / "lab.toml"))
        return summarize(con, [r.sha256 for r in reports])
    finally:
        con.close()


def test_the_summary_of_the_tiny_dataset(tiny_db):
    con = gpudb.connect(tiny_db, read_only=True)
    try:
        sha = con.execute("SELECT file_sha256 FROM ingest_file").fetchall()[0][0]
        (s,) = summarize(con, [sha])
    finally:
        con.close()
    assert (s.gpu_id, s.runs, s.kernels, s.core_mhz, s.mem_mhz) == \
        ("tiny", 8, 2, [500, 1000], [800, 1600])
    assert s.time_ns == (1.5e6, 1e7) and s.power_w == (50, 300)
    # energy = power x time: alpha 3 ms x 120 W the least, beta's 10 ms x 55 W the most
    assert s.energy_j == pytest.approx((0.36, 0.55), rel=1e-12)
    assert s.flags == []
    assert s.line() == ("tiny: 8 runs, 2 kernels; core 500, 1000 MHz, memory 800, 1600 MHz, "
                        "time 1.5 ms - 10 ms, power 50 W - 300 W, energy 360 mJ - 550 mJ")


def test_seconds_declared_as_ms_raise_three_flags(tmp_path, fresh_db):
    (s,) = summary_of(tmp_path, fresh_db, CSV, "ms")
    assert s.time_ns == (2e3, 1e4) and s.power_w == pytest.approx((5e4, 2.5e5), rel=1e-12)
    assert s.flags == [
        "4 of 4 runs draw a power outside 5-1,000 W (energy / time: 5e+04 W - 2.5e+05 W): is "
        "the time or energy unit of the mapping right?",
        "median run time 4.75 µs, shorter than a kernel launch and far too short to measure "
        "power over: a time unit 1000x too small (ms declared for a seconds column)?",
        "the run's power is 1e+03x metric 'power_w' (median over 4 runs): is the time, power "
        "or energy unit of the mapping right?"]


def test_right_units_raise_none_and_time_against_the_clock_does(tmp_path, fresh_db):
    (s,) = summary_of(tmp_path, fresh_db, CSV, "s")
    assert s.flags == [] and s.power_w == pytest.approx((50, 250), rel=1e-12)
    # a rate mapped as the time: it grows with the core clock for both kernels
    rates = CSV.replace("0.004,", "0.002,X").replace("0.002,0.5", "0.004,0.5") \
               .replace("0.010,", "0.0055,Y").replace("0.0055,0.495", "0.010,0.495") \
               .replace("X", "").replace("Y", "")
    (s,) = summary_of(tmp_path, fresh_db, rates, "s")
    assert s.flags[-1] == ("time grows with the core clock for 2 of 2 kernels (by more than 5% "
                           "from the lowest to the highest core clock): is the column mapped "
                           "as time a time?")
