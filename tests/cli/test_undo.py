"""Issue 38, mistakes undone: nothing simulated into a measured file unasked, a seconds column
declared as milliseconds flagged at ingest and replaced, orphans named by check and info,
refused by merge and deleted; real files, the CLI in-process."""

from __future__ import annotations

import hashlib

import duckdb
import pytest
from click.testing import CliRunner
from conftest import copy_db, row_counts

from gpudb.cli import cli


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# every command that may simulate into the database, and whether it evaluates a measured GPU
SIMULATING = [(["sweep", "--suite", "micro"], False), (["control", "--predictor", "crisp"], False),
              (["evaluate", "accuracy"], True), (["evaluate", "classes"], True),
              (["evaluate", "control"], True), (["evaluate", "equalizer"], False),
              (["demo"], True)]


def test_a_forgotten_gpu_is_refused_and_the_measured_file_stays_byte_identical(tiny_db):
    before = sha256(tiny_db)
    for command, evaluates in SIMULATING:
        result = invoke("--db", tiny_db, *command)
        assert result.exit_code == 2, (command, result.output)
        which = "--gpu tiny to evaluate its runs, or " if evaluates else ""
        named = " ".join(c for c in command[:2] if not c.startswith("-"))
        head, _, tail = result.output.partition(" (see ")   # the program: gpudb, or the runner's
        assert head == (f"Error: --gpu not given and {tiny_db} holds measured runs (tiny): give "
                        f"{which}--gpu gtx480 to simulate into this file")
        assert tail.endswith(f" {named} --help)\n") and "\n" not in tail[:-1]
        assert sha256(tiny_db) == before, command
    assert not tiny_db.with_name(tiny_db.name + ".wal").exists()


def test_a_named_gpu_still_works_on_a_measured_file(tiny_db, tiny_suite_path):
    result = invoke("--db", tiny_db, "sweep", "--gpu", "gtx480", "--suite", tiny_suite_path,
                    "--kernel", "alu", "--core-mhz", "700", "--mem-mhz", "924", "--jobs", "1",
                    "--interval-instructions", "1000")
    assert result.exit_code == 0, result.output
    assert "1 runs simulated" in result.output
    con = duckdb.connect(str(tiny_db), read_only=True)
    try:
        assert con.execute("SELECT gpu_id, source, count(*) FROM run GROUP BY ALL "
                           "ORDER BY 1").fetchall() == [("gtx480", "sim", 1),
                                                        ("tiny", "measured", 8)]
    finally:
        con.close()


SECONDS_CSV = """kernel,core_mhz,mem_mhz,time_s,power_w
alpha,500,800,0.004,100
alpha,1000,800,0.002,250
beta,500,800,0.010,50
beta,1000,800,0.0055,90
"""
SECONDS_MAPPING = """\
[gpu]
gpu_id = "lab"
name = "lab GPU (test)"
n_sm = 2
[run]
suite = "lab"
experiment = "lab"
[columns]
kernel = "kernel"
core_mhz = "core_mhz"
mem_mhz = "mem_mhz"
time = {{ column = "time_s", unit = "{unit}" }}
power = {{ column = "{power}", unit = "W" }}
"""


@pytest.fixture
def seconds_files(tmp_path):
    """(CSV of times in seconds, mapping declaring them ms, the corrected mapping)."""
    csv = tmp_path / "lab.csv"
    csv.write_text(SECONDS_CSV)
    wrong, right = tmp_path / "wrong.toml", tmp_path / "right.toml"
    wrong.write_text(SECONDS_MAPPING.format(unit="ms", power="power_w"))
    right.write_text(SECONDS_MAPPING.format(unit="s", power="power_w"))
    return csv, wrong, right


def run_times(path) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT kernel_id, core_mhz, time_ns FROM run ORDER BY ALL").fetchall()
    finally:
        con.close()


def test_seconds_declared_as_ms_is_flagged_then_replaced_and_merges(fresh_db, tmp_path,
                                                                    seconds_files,
                                                                    empty_db_template):
    csv, wrong, right = seconds_files
    first = invoke("--db", fresh_db, "ingest", csv, "--mapping", wrong)
    assert first.exit_code == 0, first.output
    lines = first.output.splitlines()
    assert lines[1] == ("summary lab: 4 runs, 2 kernels; core 500, 1000 MHz, memory 800 MHz, "
                        "time 2 µs - 10 µs, power 50 W - 250 W, energy 400 µJ - 500 µJ")
    assert lines[2].startswith("  ! median run time 4.75 µs, shorter than a kernel launch")
    assert "(ms declared for a seconds column)?" in lines[2]
    again = invoke("--db", fresh_db, "ingest", csv, "--mapping", right)
    assert "already ingested on" in again.output and "(--replace replaces its runs)" in again.output
    fixed = invoke("--db", fresh_db, "ingest", csv, "--mapping", right, "--replace")
    assert fixed.exit_code == 0, fixed.output
    lines = fixed.output.splitlines()
    assert lines[0].endswith("4 rows, 4 runs added (replacing 4 of its earlier ingest), 0 "
                             "already present, 0 metric values")
    assert lines[1] == ("summary lab: 4 runs, 2 kernels; core 500, 1000 MHz, memory 800 MHz, "
                        "time 2 ms - 10 ms, power 50 W - 250 W, energy 400 mJ - 500 mJ")
    assert len(lines) == 2   # no flag
    assert run_times(fresh_db) == [("lab/alpha", 500, 4e6), ("lab/alpha", 1000, 2e6),
                                   ("lab/beta", 500, 1e7), ("lab/beta", 1000, 5.5e6)]
    assert row_counts(fresh_db)["ingest_file"] == 1
    check = invoke("--db", fresh_db, "check")
    assert check.exit_code == 0 and "no orphans" in check.output
    other = copy_db(empty_db_template, tmp_path / "other.duckdb")
    merged = invoke("--db", other, "merge", fresh_db)
    assert merged.exit_code == 0, merged.output
    assert "4 runs added" in merged.output
    assert run_times(other) == run_times(fresh_db)


def test_a_failed_replace_keeps_the_earlier_runs(fresh_db, tmp_path, seconds_files):
    csv, wrong, _ = seconds_files
    assert invoke("--db", fresh_db, "ingest", csv, "--mapping", wrong).exit_code == 0
    before = run_times(fresh_db)
    broken = tmp_path / "broken.toml"
    broken.write_text(SECONDS_MAPPING.format(unit="s", power="watts"))
    result = invoke("--db", fresh_db, "ingest", csv, "--mapping", broken, "--replace")
    assert result.exit_code == 1 and "watts" in result.output
    assert run_times(fresh_db) == before and row_counts(fresh_db)["ingest_file"] == 1


def test_runs_deleted_with_sql_leave_orphans_that_check_info_and_merge_name(tiny_db, tmp_path,
                                                                           empty_db_template):
    gone = invoke("--db", tiny_db, "sql", "DELETE FROM run WHERE kernel_id = 'tiny/alpha'")
    assert gone.exit_code == 0, gone.output
    repair = f"repair: gpudb --db {tiny_db} delete --orphans"
    check = invoke("--db", tiny_db, "check")
    assert check.exit_code == 1
    assert check.output == (f"{tiny_db}: rows referring to runs the database no longer holds: "
                            f"metric 4; {repair}\n")
    info = invoke("--db", tiny_db, "info")
    assert f"orphans:       rows referring to runs the database no longer holds: metric 4; " \
           f"{repair}" in info.output
    target = copy_db(empty_db_template, tmp_path / "target.duckdb")
    empty = row_counts(target)
    refused = invoke("--db", target, "merge", tiny_db)
    assert refused.exit_code == 1
    assert refused.output.strip() == (
        f"Error: {tiny_db}: 4 metric rows belong to 4 runs the source does not hold (orphans, "
        f"e.g. of run '{min(orphan_runs(tiny_db))}'); repair the source: gpudb --db {tiny_db} "
        "delete --orphans; nothing merged")
    assert row_counts(target) == empty
    done = invoke("--db", tiny_db, "delete", "--orphans")
    assert done.output.startswith("deleted:")
    assert table_of(done.output) == {"metric": 4, "kernel": 1}
    merged = invoke("--db", target, "merge", tiny_db)
    assert merged.exit_code == 0 and "4 runs added" in merged.output


def orphan_runs(path) -> list[str]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return [r[0] for r in con.execute(
            "SELECT DISTINCT run_id FROM metric WHERE run_id NOT IN (SELECT run_id FROM run)")
            .fetchall()]
    finally:
        con.close()


def table_of(output: str) -> dict[str, int]:
    """The 'table rows' lines of delete's output."""
    rows = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            rows[parts[0]] = int(parts[1])
    return rows


def test_delete_by_ingested_file_lets_it_be_ingested_again(tiny_db, tiny_files):
    result = invoke("--db", tiny_db, "delete", "--ingest", "tiny.csv")
    assert result.exit_code == 0, result.output
    assert table_of(result.output) == {"run": 8, "metric": 8, "ingest_file": 1, "pstate": 4,
                                       "gpu": 1, "kernel": 2, "experiment": 1}
    assert set(row_counts(tiny_db).values()) == {0}
    again = invoke("--db", tiny_db, "ingest", tiny_files[0], "--mapping", tiny_files[1])
    assert "8 runs added" in again.output


def test_delete_usage_and_unknown_names(tiny_db):
    before = row_counts(tiny_db)
    bare = invoke("--db", tiny_db, "delete")
    assert bare.exit_code == 2 and "say which runs" in bare.output
    mixed = invoke("--db", tiny_db, "delete", "--orphans", "--gpu", "tiny")
    assert mixed.exit_code == 2 and "--orphans selects no runs" in mixed.output
    typo = invoke("--db", tiny_db, "delete", "--gpu", "tinny")
    assert typo.exit_code == 1
    assert typo.output.strip() == "Error: no GPU 'tinny' in the database; did you mean 'tiny'?"
    kernel = invoke("--db", tiny_db, "delete", "--kernel", "tiny/alpa", "--dry-run")
    assert "no kernel 'tiny/alpa' in the database; did you mean 'tiny/alpha'?" in kernel.output
    # the options intersect; a dry run counts what would go and deletes nothing
    dry = invoke("--db", tiny_db, "delete", "--gpu", "tiny", "--kernel", "tiny/alpha",
                 "--experiment", "tiny", "--dry-run")
    assert dry.output.startswith("would delete (dry run, nothing deleted):")
    assert table_of(dry.output) == {"run": 4, "metric": 4, "kernel": 1}
    assert row_counts(tiny_db) == before
