"""`gpudb ingest-log`: the three GPGPU-Sim 3.2.1 logs of ../shared/data/gpgpusim by value, and
hand-edited copies of them (truncated, without a power report, with periodic statistics) giving
one error line and writing nothing, or intervals."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO, row_counts

import gpudb
from gpudb.cli import cli

# ../shared, or where GPUDB_SHARED says (a git worktree outside the checkout has no ../shared)
GPGPUSIM = Path(os.environ.get("GPUDB_SHARED", REPO.parent / "shared")) / "data" / "gpgpusim"
GESUMMV = "benchmarks/results.0800.900/gesummv"
SPMV = "benchmarks/results.1200.450/spmv"
PEBENCH = "microbenchmarks/results.1200.900/pebench"
SPMV_KERNEL = "_Z14spmv_jds_naivePfPKfPKiS3_S1_S3_i"

# Read off the files by hand: (folder, kernel_id, core MHz, memory MHz, gpu_sim_cycle,
# gpu_sim_insn, gpu_avg_power W).
LAUNCHES = [
    # gesummv__SIZE1_1.out line 99 "-gpgpu_clock_domains 400.0:800.0:400.0:900.0", lines
    # 160-161 "gpu_sim_cycle = 92692954", "gpu_sim_insn = 16806912"; power report line 5
    (GESUMMV, "gpgpusim/gesummv:_Z14gesummv_kernelPfS_S_S_S_:1", 400.0, 900.0,
     92692954, 16806912, 22.3189),
    # spmv__SIZE1_1.out line 99 "600.0:1200.0:600.0:450.0"; launch 1 lines 177-178, launch 2
    # lines 468-469 (line 471 "gpu_tot_sim_cycle = 90568" is the running total, not launch
    # 2's); power report lines 5 (uid 1) and 167 (uid 2)
    (SPMV, f"gpgpusim/spmv:{SPMV_KERNEL}:1", 600.0, 450.0, 46554, 4941796, 32.4277),
    (SPMV, f"gpgpusim/spmv:{SPMV_KERNEL}:2", 600.0, 450.0, 44014, 4941796, 34.0951),
    # pebench__SIZE1_1.out line 100 "600.0:1200.0:600.0:900.0", lines 264-265; report line 5
    (PEBENCH, "gpgpusim/pebench:_Z7pebenchPjS_:1", 600.0, 900.0, 39690, 8085504,
     59.6391),
]


@pytest.fixture(scope="module")
def logs() -> Path:
    if not GPGPUSIM.is_dir():
        pytest.skip(f"{GPGPUSIM} not found: the GPGPU-Sim logs live in ../shared/data/gpgpusim")
    return GPGPUSIM


def _run(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), "ingest-log", *map(str, args)])


def _copy(logs: Path, folder: str, tmp_path: Path, power: bool = True) -> Path:
    """The run folder's .out (and power report) in a folder of its own under tmp_path."""
    out = tmp_path / Path(folder).name
    out.mkdir()
    for f in (logs / folder).iterdir():
        if f.suffix == ".out" or power:
            shutil.copy(f, out / f.name)
    return next(out.glob("*.out"))


def _metric(con, kernel_id: str, name: str) -> float:
    return con.execute("SELECT m.value FROM metric AS m JOIN run AS r USING (run_id) "
                       "WHERE r.kernel_id = ? AND m.name = ?", [kernel_id, name]).fetchone()[0]


def test_three_logs_by_value(logs, fresh_db):
    result = _run(fresh_db, logs, "--experiment", "rooflinedvfs")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    # a line per log, then the summary's (gpudb.sources.summary) for the one GPU
    assert len(lines) == 4 and lines[3].startswith("summary gpgpusim-"), result.output
    con = gpudb.connect(fresh_db, read_only=True)
    try:
        # the input-size suffix (__SIZE1_1) is left out of the kernel ids (LAUNCHES) and kept
        # in the kernel's spec and description
        assert con.execute("SELECT json_extract_string(spec, '$.input_size'), description "
                           "FROM kernel WHERE kernel_id = ?", [LAUNCHES[0][1]]).fetchall() == [
            ("SIZE1_1", "launch 1 of _Z14gesummv_kernelPfS_S_S_S_ in gesummv__SIZE1_1 (input "
                        "size SIZE1_1, GPGPU-Sim 3.2.1 [build 15629] log)")]
        rows = {r[0]: r[1:] for r in con.execute(
            "SELECT kernel_id, core_mhz, mem_mhz, n_sm, time_ns, instructions, energy_j, "
            "source, policy FROM run").fetchall()}
        assert len(rows) == len(LAUNCHES)
        for _, kernel_id, core, mem, cycles, insn, power in LAUNCHES:
            got_core, got_mem, n_sm, time_ns, instructions, energy, source, policy = \
                rows[kernel_id]
            assert (got_core, got_mem, n_sm, source, policy) == (core, mem, 14, "sim", "fixed")
            assert instructions == insn
            assert time_ns == pytest.approx(cycles * 1000 / core, rel=1e-12)
            assert energy == pytest.approx(power * cycles / (core * 1e6), rel=1e-12)
            assert _metric(con, kernel_id, "gpu_sim_cycle") == cycles
            assert _metric(con, kernel_id, "gpu_avg_power_w") == power
            assert _metric(con, kernel_id, "clock_icnt_mhz") == 2 * core  # the study's label
        # by value, for the report: gesummv 231.7 ms at 22.3189 W
        assert rows[LAUNCHES[0][1]][3] == 231732385.0
        # spmv launch 2: the counters are cumulative in the log (line 242 922550, line 533
        # 1845100), so launch 2's own is the difference
        spmv2 = LAUNCHES[2][1]
        assert _metric(con, spmv2, "gpgpu_n_load_insn") == 1845100 - 922550
        assert _metric(con, spmv2, "gpu_tot_sim_cycle") == 90568
        # launch 1's L2 miss rate, recomputed from the banks, is the printed 0.195 (line 422)
        assert _metric(con, LAUNCHES[1][1], "l2_cache_total_miss_rate") == pytest.approx(
            0.195, abs=5e-4)
        assert con.execute("SELECT DISTINCT e.name, e.simulator FROM run JOIN experiment AS e "
                           "USING (experiment_id)").fetchall() == [
            ("rooflinedvfs", "GPGPU-Sim 3.2.1 [build 15629]")]
        assert con.execute("SELECT gpu_id, n_sm, max_warps_per_sm FROM gpu").fetchall() == [
            ("gpgpusim-14sm", 14, 48)]
    finally:
        con.close()
    # re-ingesting the same files adds nothing
    before = row_counts(fresh_db)
    again = _run(fresh_db, logs, "--experiment", "rooflinedvfs")
    assert again.exit_code == 0 and again.output.count("already ingested") == 3
    assert row_counts(fresh_db) == before


def _refused(db, args, message: str) -> None:
    before = row_counts(db)
    result = _run(db, *args)
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert message in lines[0], lines[0]
    assert row_counts(db) == before


@pytest.fixture(scope="module")
def some_db(logs, tmp_path_factory) -> Path:
    """A database holding the gesummv log, so that "nothing written" is checked against rows
    (shared: the tests using it only see refusals, which leave it as it is)."""
    db = tmp_path_factory.mktemp("some_db") / "some.duckdb"
    assert _run(db, logs / GESUMMV).exit_code == 0
    return db


def test_truncated_log_is_one_error_line(logs, some_db, tmp_path):
    out = _copy(logs, SPMV, tmp_path)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:500]))  # inside launch 2's statistics block (466-752)
    _refused(some_db, [out], "line 466: launch 2 of _Z14spmv_jds_naive")
    _refused(some_db, [out], "cut off before the end of its statistics block")
    # cut between the two blocks: the power report still has launch 2
    out.write_text("".join(lines[:463]))
    _refused(some_db, [out], "has launch 2 (_Z14spmv_jds_naivePfPKfPKiS3_S1_S3_i), which")
    # cut after launch 2 was sent to the GPU (line 465), before its block
    out.write_text("".join(lines[:465]))
    _refused(some_db, [out], "line 465: kernel _Z14spmv_jds_naivePfPKfPKiS3_S1_S3_i was "
                             "launched but the log ends")


def test_missing_or_truncated_power_report_is_one_error_line(logs, some_db, tmp_path):
    out = _copy(logs, PEBENCH, tmp_path, power=False)
    _refused(some_db, [out], "GPUWattch was on (-power_simulation_enabled 1) but no power "
                             "report")
    _refused(some_db, [out.parent], "no power report")
    report = next((logs / PEBENCH).glob("gpgpusim_power_report__*"))
    cut = tmp_path / "cut_report.log"
    cut.write_text("".join(report.read_text().splitlines(keepends=True)[:30]))
    _refused(some_db, [out, "--power-report", cut], "is cut off before its average and "
                                                    "minimum power")


def test_not_a_log(some_db, tmp_path):
    text = tmp_path / "notes.out"
    text.write_text("hello\n")
    _refused(some_db, [text], "not GPGPU-Sim or Accel-Sim output")
    _refused(some_db, [tmp_path], "no GPGPU-Sim or Accel-Sim log in this directory")


def test_periodic_statistics_become_intervals(logs, fresh_db, tmp_path):
    """The shared logs have none (-gpgpu_runtime_stat 500 prints only when the simulation
    runs long enough between 500-cycle samples, and none did); GPGPU-Sim's "cycles simulated"
    lines are inserted by hand. They print program totals: in spmv's launch 2 the counts
    start at launch 1's totals (46554 cycles, 4941796 instructions)."""
    out = _copy(logs, SPMV, tmp_path)
    lines = out.read_text().splitlines(keepends=True)

    def sample(cycles, insts):
        return (f"GPGPU-Sim uArch: cycles simulated: {cycles}  inst.: {insts} (ipc=1.0) "
                "sim_rate=1 (inst/sec) elapsed = 0:0:00:01 / Thu Oct 10 17:35:13 2013\n")
    # launch 1 (block at line 175): samples at 10000 and 30000 cycles; launch 2 (line 466): one
    # at 20000 cycles into the launch, and one at its very end (no interval after it)
    edited = (lines[:174] + [sample(10000, 1000000), sample(30000, 3000000)] + lines[174:465]
              + [sample(46554 + 20000, 4941796 + 2500000), sample(90568, 9883592)]
              + lines[465:])
    out.write_text("".join(edited))
    assert _run(fresh_db, out).exit_code == 0
    con = gpudb.connect(fresh_db, read_only=True)
    try:
        got = con.execute(
            "SELECT split_part(r.kernel_id, ':', 3), i.idx, i.cycles, i.instructions, "
            "i.start_ns, i.time_ns, r.interval_instructions FROM interval AS i "
            "JOIN run AS r USING (run_id) ORDER BY 1, 2").fetchall()
    finally:
        con.close()
    ns = 1000 / 600  # ns per 600 MHz core cycle
    expected = [("1", 0, 10000, 1000000, 0, 10000 * ns), ("1", 1, 20000, 2000000, 10000 * ns,
                                                            20000 * ns),
                ("1", 2, 16554, 1941796, 30000 * ns, 16554 * ns),
                ("2", 0, 20000, 2500000, 0, 20000 * ns),
                ("2", 1, 24014, 2441796, 20000 * ns, 24014 * ns)]
    assert len(got) == len(expected)
    for row, want in zip(got, expected, strict=True):
        assert row[:4] == want[:4] and row[4:6] == pytest.approx(want[4:]) and row[6] is None


def test_help_has_an_example():
    result = CliRunner().invoke(cli, ["ingest-log", "--help"])
    assert result.exit_code == 0 and "Example:" in result.output


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_values_that_overflow_are_refused_in_one_line(logs, some_db, tmp_path):
    """Issue 31: finite inputs whose derived quantities are not (energy = power x time = inf,
    time = cycles / a 1e-300 MHz clock = inf), counters past a BIGINT, and files that are no
    regular file: each one line, nothing written."""
    out = _copy(logs, PEBENCH, tmp_path)
    report = next(out.parent.glob("gpgpusim_power_report__*"))
    _edit(report, "gpu_avg_power = 59.6391", "gpu_avg_power = 1e308")
    _refused(some_db, [out], "launch 1 (_Z7pebenchPjS_) of ")
    _refused(some_db, [out], "energy_j = inf (from the clocks, cycles and power) is not a "
                             "finite number")
    _edit(report, "gpu_avg_power = 1e308", "gpu_avg_power = 59.6391")
    _edit(out, "-gpgpu_clock_domains 600.0:1200.0", "-gpgpu_clock_domains 1e-300:1200.0")
    _refused(some_db, [out], "energy_j = inf (from the clocks")  # time 4e307 ns, x 59.6 W
    _edit(out, "-gpgpu_clock_domains 1e-300:1200.0", "-gpgpu_clock_domains 1e-310:1200.0")
    _refused(some_db, [out], "time_ns = inf (from the clocks, cycles and power)")
    _edit(out, "-gpgpu_clock_domains 1e-310:1200.0", "-gpgpu_clock_domains 600.0:1200.0")
    _edit(out, "gpu_sim_cycle = 39690", "gpu_sim_cycle = 9223372036854775808")
    _refused(some_db, [out], "gpu_sim_cycle is 9.22337e+18, more than a 64-bit count holds")
    _edit(out, "gpu_sim_cycle = 9223372036854775808", "gpu_sim_cycle = 39690")
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)  # no writer: a plain open would wait forever
    _refused(some_db, [out, "--power-report", fifo], f"{fifo} is a FIFO, not a "
                                                     "GPUWattch/AccelWattch power report")
    _refused(some_db, [out, "--power-report", "/dev/zero"], "/dev/zero is a character "
                                                            "device, not a GPUWattch")
    _refused(some_db, [fifo], f"{fifo}: not a regular file")
    (tmp_path / "beside").mkdir()
    beside = _copy(logs, PEBENCH, tmp_path / "beside", power=False)
    os.mkfifo(beside.parent / "gpgpusim_power_report__fifo.log")  # found beside the log
    _refused(some_db, [beside], "gpgpusim_power_report__fifo.log is a FIFO, not a "
                                "GPUWattch/AccelWattch power report")
    assert _run(some_db, out).exit_code == 0  # the file as it was: accepted


@pytest.mark.parametrize("launch1, launch2, stored2, said", [
    # a signed 32-bit counter past 2^31 - 1 prints negative: launch 2's true running total is
    # 2147483000 + 922550 = 2148405550, printed as 2148405550 - 2^32
    (2147483000, 2148405550 - 2 ** 32, 922550, "1 counter values read past a 32-bit wrap"),
    # down without a wrap: reset by the simulator, unknown for launch 2, said so
    (922550, 5, None, "1 counter values left out (the counter went down: reset by the "
                      "simulator)"),
])
def test_a_wrapped_or_reset_counter_is_unwrapped_or_left_out_and_said(
        logs, fresh_db, tmp_path, launch1, launch2, stored2, said):
    """spmv's gpgpu_n_load_insn (lines 242 and 533: 922550, 1845100) edited: a wrapped value
    was stored as 2^32 too many for the next launch, a reset one silently dropped (issue 30)."""
    out = _copy(logs, SPMV, tmp_path)
    lines = out.read_text().splitlines(keepends=True)
    assert lines[241] == "gpgpu_n_load_insn  = 922550\n"
    assert lines[532] == "gpgpu_n_load_insn  = 1845100\n"
    lines[241] = f"gpgpu_n_load_insn  = {launch1}\n"
    lines[532] = f"gpgpu_n_load_insn  = {launch2}\n"
    out.write_text("".join(lines))
    result = _run(fresh_db, out)
    assert result.exit_code == 0, result.output
    assert said in result.output and "2 launches" in result.output
    con = gpudb.connect(fresh_db, read_only=True)
    try:
        stored = dict(con.execute(
            "SELECT split_part(r.kernel_id, ':', 3), m.value FROM metric AS m "
            "JOIN run AS r USING (run_id) WHERE m.name = 'gpgpu_n_load_insn'").fetchall())
    finally:
        con.close()
    assert stored.get("1") == launch1 and stored.get("2") == stored2


def test_a_directory_of_logs_is_one_experiment_named_after_it(logs, fresh_db, tmp_path):
    """Three programs' logs in one directory were named after the first log
    (gesummv__SIZE1_1) (issue 30)."""
    study = tmp_path / "mystudy"
    study.mkdir()
    for folder in (SPMV, "benchmarks/results.0800.900/gesummv"):
        _copy(logs, folder, study)
    result = _run(fresh_db, study)
    assert result.exit_code == 0, result.output
    con = gpudb.connect(fresh_db, read_only=True)
    try:
        assert con.execute("SELECT e.name, count(*) FROM run JOIN experiment AS e "
                           "USING (experiment_id) GROUP BY ALL").fetchall() == [("mystudy", 3)]
    finally:
        con.close()


def test_the_logs_are_read_before_the_database_is_opened(logs, tmp_path):
    """Issue 31 item 5: a command killed while it reads leaves no new database file (and a
    refused log none either): ingest-log reads and checks every log and power report before
    it opens --db. Shown with a --db that cannot be opened: the log's error comes first."""
    out = _copy(logs, PEBENCH, tmp_path, power=False)
    target = tmp_path / "no-such-folder" / "new.duckdb"
    result = CliRunner().invoke(cli, ["--db", str(target), "ingest-log", str(out)])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {out}: GPUWattch was on"), result.output
    assert not target.parent.exists()


def _resized(logs: Path, tmp_path: Path, size: str) -> Path:
    """gesummv's log and power report as if run at input size `size`: the file name and the
    'self exe links to' line (line 141, where the program's name is read) say it."""
    (tmp_path / size).mkdir(parents=True)
    out = _copy(logs, GESUMMV, tmp_path / size)
    lines = out.read_text().splitlines(keepends=True)
    assert lines[140] == "self exe links to: /tmp/tmp.LxGJTaOjgm/gesummv__SIZE1_1\n"
    lines[140] = f"self exe links to: /tmp/tmp.LxGJTaOjgm/gesummv__{size}\n"
    resized = out.with_name(f"gesummv__{size}.out")
    out.unlink()
    resized.write_text("".join(lines))
    return resized


KEPT = ("kept the input-size suffix in the kernel names of gesummv: the program has logs (or "
        "stored kernels) of other input sizes, or is stored so")


def test_two_input_sizes_of_one_program_keep_the_suffix_and_say_so(logs, fresh_db, tmp_path):
    """The lead's decision on issue 30's `__SIZE1_1`: dropped where the logs stay apart
    without it; logs of one program at two input sizes in one call keep it (else both sizes
    would be one kernel), and one line of the summary says so."""
    one, two = _resized(logs, tmp_path, "SIZE1_1"), _resized(logs, tmp_path, "SIZE2_1")
    result = _run(fresh_db, one, two, "--experiment", "sizes")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 4 and lines[2].startswith("summary ") and lines[3] == KEPT, \
        result.output
    con = gpudb.connect(fresh_db, read_only=True)
    try:
        assert con.execute("SELECT kernel_id, json_extract_string(spec, '$.input_size') FROM "
                           "kernel ORDER BY 1").fetchall() == [
            ("gpgpusim/gesummv__SIZE1_1:_Z14gesummv_kernelPfS_S_S_S_:1", "SIZE1_1"),
            ("gpgpusim/gesummv__SIZE2_1:_Z14gesummv_kernelPfS_S_S_S_:1", "SIZE2_1")]
    finally:
        con.close()


def test_a_size_the_database_holds_under_another_name_keeps_the_suffix(logs, fresh_db,
                                                                         tmp_path):
    """One size ingested alone drops the suffix; a later call with another size of the same
    program keeps it (the bare name is the first size's), and a log of the first size again
    (another setting, here the same log edited) joins the bare-named kernel."""
    first = _run(fresh_db, _resized(logs, tmp_path, "SIZE1_1"))
    assert first.exit_code == 0 and "kept" not in first.output, first.output
    second = _run(fresh_db, _resized(logs, tmp_path, "SIZE2_1"))
    assert second.exit_code == 0, second.output
    assert second.output.strip().splitlines()[-1] == KEPT
    again = _resized(logs, tmp_path / "again", "SIZE1_1")
    again.write_text(again.read_text().replace("-gpgpu_clock_domains 400.0:800.0:400.0:900.0",
                                               "-gpgpu_clock_domains 400.0:800.0:400.0:700.0"))
    third = _run(fresh_db, again)
    assert third.exit_code == 0 and "kept" not in third.output, third.output
    con = gpudb.connect(fresh_db, read_only=True)
    try:
        assert con.execute("SELECT kernel_id, list(mem_mhz ORDER BY mem_mhz) FROM run "
                           "GROUP BY ALL ORDER BY 1").fetchall() == [
            ("gpgpusim/gesummv:_Z14gesummv_kernelPfS_S_S_S_:1", [700.0, 900.0]),
            ("gpgpusim/gesummv__SIZE2_1:_Z14gesummv_kernelPfS_S_S_S_:1", [900.0])]
    finally:
        con.close()


def test_a_file_without_a_banner_in_its_first_lines_is_refused_early(some_db, tmp_path):
    """Issue 41 item 4: a 100 MB log of blank lines took 68 s and 1.16 GB (the whole file as
    a list of lines) to be refused; lines are now read one at a time and a file without the
    simulator's banner in its first 10,000 lines is refused there."""
    blank = tmp_path / "blank.out"
    blank.write_text("\n" * 50_000 + "        *** GPGPU-Sim Simulator Version 3.2.1 ***\n")
    _refused(some_db, [blank], "not GPGPU-Sim or Accel-Sim output (no simulator banner in its "
                               "first 10,000 lines)")


def test_a_power_report_may_start_with_a_byte_order_mark(logs, fresh_db, tmp_path):
    """Before: refused as having no entry for launch 1 (the BOM glued to `kernel_name`)."""
    out = _copy(logs, PEBENCH, tmp_path)
    report = next(out.parent.glob("gpgpusim_power_report__*"))
    report.write_bytes(b"\xef\xbb\xbf" + report.read_bytes())
    result = _run(fresh_db, out)
    assert result.exit_code == 0, result.output
    con = gpudb.connect(fresh_db, read_only=True)
    try:
        assert _metric(con, LAUNCHES[3][1], "gpu_avg_power_w") == LAUNCHES[3][6]
    finally:
        con.close()


def _edited(logs, tmp_path, edit_out=None, edit_report=None) -> Path:
    """The pebench run folder, its .out and power report passed through the edits."""
    out = _copy(logs, PEBENCH, tmp_path)
    report = next(out.parent.glob("gpgpusim_power_report__*"))
    if edit_out:
        out.write_text(edit_out(out.read_text()))
    if edit_report:
        report.write_text(edit_report(report.read_text()))
    return out


@pytest.mark.parametrize("edit_out, edit_report, message", [
    # issue 41 item 6: each was stored (a wrong accept) before
    (None, lambda r: r + r.replace("59.6391", "999"),
     "line 164: a second entry for launch 1 (the first at line 1): which one belongs to the "
     "launch is not known"),
    (lambda o: o.replace("-gpgpu_clock_domains 600.0:", "-gpgpu_clock_domains 1e308:"), None,
     "-gpgpu_clock_domains '1e308:1200.0:600.0:900.0' is not four clocks <core>:<icnt>:<l2>:"
     "<dram> in MHz, each above 0 and at most 10,000"),
    (lambda o: o.replace("gpu_ipc =     203.7164", "gpu_ipc = -1e308"), None,
     "gpu_ipc is -1e+308: a rate or a count is not negative"),
    (None, lambda r: r.replace("gpu_avg_ICP, = 0.226979", "gpu_avg_ICP, = -5"),
     "line 7: gpu_avg_ICP = -5 is negative: a power or an activity count is not"),
    (lambda o: o.replace("gpu_sim_insn = 8085504", "gpu_sim_insn = 808_5504"), None,
     "gpu_sim_insn is missing, not a whole number"),
    (lambda o: o.replace("-gpgpu_n_clusters                      14",
                         "-gpgpu_n_clusters                      14\n-gpgpu_n_clusters 15"),
     None, "option -gpgpu_n_clusters is given twice, '14' and '15'"),
    # tracebacks before
    (lambda o: o.replace("-gpgpu_n_clusters                      14",
                         "-gpgpu_n_clusters ²"), None,
     "option -gpgpu_n_clusters is '\\xb2', not a whole number in 1..65,536"),
    (lambda o: o.replace("-gpgpu_n_clusters                      14",
                         "-gpgpu_n_clusters " + "9" * 5000), None,
     "not a whole number in 1..65,536"),
    (lambda o: o.replace("gpu_sim_insn = 8085504", "gpu_sim_insn = " + "9" * 5000), None,
     "gpu_sim_insn is missing, not a whole number"),
])
def test_values_no_gpu_reports_are_refused(logs, some_db, tmp_path, edit_out, edit_report,
                                           message):
    _refused(some_db, [_edited(logs, tmp_path, edit_out, edit_report)], message)
