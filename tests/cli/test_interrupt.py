"""Ctrl-C ends every command in one line and exit 130 (issue 31): click's "Aborted!" and exit
1 were left outside the commands that keep their finished work. In-process, with SIGINT sent
to this process once the command's work is found running on the main thread's stack."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from click.testing import CliRunner
from conftest import TINY_CSV, row_counts

from gpudb.cli import cli


def _interrupted(inside: str, *args: str):
    """`gpudb ARGS` with Ctrl-C sent once the main thread runs function `inside` (found on its
    stack), so that the signal lands in the command's work whatever the machine's load. A
    shell's background job (CI's may be one) starts with SIGINT ignored, and Python then
    installs no KeyboardInterrupt handler: installed for the call, as a terminal has it (see
    15bc7c4)."""
    main = threading.main_thread().ident
    done = threading.Event()

    def ctrl_c():
        while not done.wait(0.05):
            frame = sys._current_frames().get(main)
            while frame is not None and frame.f_code.co_name != inside:
                frame = frame.f_back
            if frame is not None:
                time.sleep(0.2)  # well inside
                os.kill(os.getpid(), signal.SIGINT)
                return

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sender = threading.Thread(target=ctrl_c)
    try:
        sender.start()
        return CliRunner().invoke(cli, list(args))
    finally:
        done.set()
        sender.join()
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_in_a_command_that_writes_all_or_nothing(fresh_db, tiny_files):
    """`gpudb ingest` of 200,000 rows into an existing database, stopped while it validates the
    file: one line, 130, the database as it was. (Into a new file, by a real signal to a
    process: test_trust.py's test_an_interrupted_ingest_into_a_new_file_leaves_no_file.)"""
    csv_path, mapping = tiny_files
    csv_path.write_text(TINY_CSV.splitlines()[0] + "\n" + "".join(
        f"k{k},{c},800,{1 + k % 7},{100 + k % 13},0.5\n"
        for k in range(100_000) for c in (500, 1000)))
    before = row_counts(fresh_db)
    result = _interrupted("validate_file", "--db", str(fresh_db), "ingest", str(csv_path),
                          "--mapping", str(mapping))
    assert result.exit_code == 130, result.output
    assert result.output.strip().splitlines() == ["interrupted (SIGINT): nothing written"]
    assert row_counts(fresh_db) == before


def test_ctrl_c_stops_a_long_query(fresh_db):
    """A query of ~1e11 rows (minutes) on a database this process opened before (the
    fixture): Ctrl-C did nothing until the query ended, the main thread blocked in DuckDB
    where Python's handler cannot run. Now a thread interrupts the statement: one line, 130,
    within seconds. (--timeout-s 60: a regression fails on the time bound, not hangs.)"""
    result = _interrupted("submit", "--db", str(fresh_db), "--timeout-s", "60", "sql",
                          "SELECT count(*) FROM range(100000000000) WHERE range % 7 = 3")
    assert result.exit_code == 130, result.output
    assert result.output.strip().splitlines() == ["interrupted (SIGINT): nothing written"]


def test_ctrl_c_in_a_command_that_keeps_finished_work_outside_its_own_handler(tmp_path):
    """`gpudb bench ingest` keeps what it finished like sweep and measure (it is one of
    them), but has no handler of its own saying what: one line and 130 too, not "Aborted!".
    (Ctrl-C inside a sweep or a measurement says what was kept: test_sweep_signals.py,
    test_measure.py.)"""
    result = _interrupted("bench_ingest", "--db", str(tmp_path / "unused.duckdb"), "bench",
                          "ingest",
                          "--rows", "2000000", "--repeat", "50")
    assert result.exit_code == 130, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1] == "interrupted (SIGINT): what finished before it is kept", lines
    assert "Aborted!" not in result.output
