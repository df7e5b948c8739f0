"""The gpudb command line through click's CliRunner, on real database files."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from conftest import row_counts

from gpudb.cli import cli


def invoke(*args, input=None):
    return CliRunner().invoke(cli, [str(a) for a in args], input=input)


def all_commands():
    """(path, command) for every command and subcommand."""
    found = []
    for name, command in cli.commands.items():
        found.append(((name,), command))
        for sub, subcommand in getattr(command, "commands", {}).items():
            found.append(((name, sub), subcommand))
    return found


def test_help_lists_every_command_and_each_has_an_example():
    result = invoke("--help")
    assert result.exit_code == 0
    for path, _command in all_commands():
        if len(path) == 1:
            assert path[0] in result.output
        sub = invoke(*path, "--help")
        assert sub.exit_code == 0, path
        assert "Example:" in sub.output, f"`gpudb {' '.join(path)} --help` has no example"


def test_init_info_ingest_query_round_trip(tmp_path, tiny_files):
    db = tmp_path / "cli.duckdb"
    assert invoke("--db", db, "init").exit_code == 0
    result = invoke("--db", db, "ingest", tiny_files[0], "--mapping", tiny_files[1])
    assert result.exit_code == 0, result.output
    assert "8 runs added" in result.output
    again = invoke("--db", db, "ingest", tiny_files[0], "--mapping", tiny_files[1])
    assert "already ingested" in again.output and again.exit_code == 0
    info = invoke("--db", db, "info", "--format", "json")
    values = {r["key"]: r["value"] for r in json.loads(info.output)}
    assert values["rows.run"] == 8 and values["experiment.tiny.runs"] == 8
    table = invoke("--db", db, "info")
    assert "schema:" in table.output and "tiny" in table.output
    listing = invoke("--db", db, "query", "--list")
    assert "best_setting" in listing.output
    result = invoke("--db", db, "query", "best_setting", "-p", "gpu_id", "tiny",
                    "--format", "csv")
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("gpu_id,kernel_id,") and len(lines) == 3


def test_sql_from_argument_and_stdin(tiny_db):
    result = invoke("--db", tiny_db, "sql", "SELECT count(*) AS n FROM run", "--format", "json")
    assert json.loads(result.output) == [{"n": 8}]
    result = invoke("--db", tiny_db, "sql", "--format", "csv",
                    input="SELECT predict_linear(31, 20, 2, 1) AS t_ns")
    assert result.output == "t_ns\n42.0\n"


@pytest.mark.parametrize("args, message", [
    (("sql", "SELECT nonsense"), 'SQL error: Referenced column "nonsense"'),
    (("sql", "SELECT * FROM rn"), 'SQL error: Table with name rn does not exist! Did you mean'),
    (("query", "mape_by_kernel", "-p", "model_id", "abc"),
     "query mape_by_kernel failed: no wu model 'abc' (see table wu_model)"),
    (("query", "savings", "-p", "objective", "x"),
     "query savings: objective must be one of edp, ed2p, energy, energy_perf (got 'x')"),
    (("query", "best_setting", "-p", "gpu", "x"), "has no parameter 'gpu'"),
    (("query", "nope"), "no stored query 'nope'"),
    (("merge", "/etc/hostname"), "is not a DuckDB database"),
    (("ingest", "missing.csv", "--mapping", "missing.toml"), "cannot read mapping"),
])
def test_errors_are_one_line_and_nonzero(tiny_db, args, message):
    before = row_counts(tiny_db)
    result = invoke("--db", tiny_db, *args)
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], lines
    # gpudb's words, not DuckDB's ("Binder Error: ...", "Invalid Input Error: ...")
    assert not re.search(r"[A-Z][a-z]+ Error: ", lines[0][len("Error: "):]), lines
    assert row_counts(tiny_db) == before


@pytest.mark.parametrize("args, start, help_of", [
    (("sweep", "--x"), "Error: no such option", "gpudb sweep"),
    (("sweep", "--job", "2"), "Error: no such option", "gpudb sweep"),
    (("sweep", "--jobs", "0"), "Error: invalid value for '--jobs'", "gpudb sweep"),
    (("nosuch",), "Error: no such command", "gpudb"),
    (("--bogus", "info"), "Error: no such option", "gpudb"),
    (("query", "savings", "-p", "objective"), "Error: option '-p' requires 2 arguments",
     "gpudb query"),
    (("evaluate", "accuracy", "--granularity", "x"), "Error: invalid value for '--granularity'",
     "gpudb evaluate accuracy"),
    (("train", "wu"), "Error: missing option '--gpu'", "gpudb train wu"),
])
def test_usage_errors_are_one_line_naming_the_help_to_read(tmp_path, args, start, help_of):
    db = tmp_path / "x.duckdb"
    result = CliRunner().invoke(cli, ["--db", str(db), *args], prog_name="gpudb")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1, result.output
    line = result.output.strip()
    assert line.startswith(start) and line.endswith(f" (see {help_of} --help)"), line
    assert not db.exists()


def test_a_group_without_a_command_still_shows_its_help():
    result = CliRunner().invoke(cli, ["evaluate"], prog_name="gpudb")
    assert "Usage: gpudb evaluate" in result.output and "accuracy" in result.output


def test_sql_prints_timestamps_with_time_zone_without_pytz(tiny_db, monkeypatch):
    import datetime as dt
    import sys

    monkeypatch.setitem(sys.modules, "pytz", None)  # as where pytz is not installed
    table = invoke("--db", tiny_db, "sql", "SELECT * FROM run")
    assert table.exit_code == 0, table.output
    assert "created_at" in table.output and "(8 rows)" in table.output
    result = invoke("--db", tiny_db, "sql", "--format", "json",
                    "SELECT TIMESTAMPTZ '2024-01-02 03:04:05+00' AS t, 1 AS n, "
                    "[now()] AS l, created_at FROM experiment")
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)[0]
    assert dt.datetime.fromisoformat(row["t"]) == dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert row["n"] == 1 and dt.datetime.fromisoformat(row["created_at"]).tzinfo is not None
    csv_out = invoke("--db", tiny_db, "sql", "--format", "csv", "SELECT created_at FROM run")
    assert csv_out.exit_code == 0 and len(csv_out.output.splitlines()) == 9


@pytest.mark.parametrize("args", [
    ("init",), ("ingest", "{csv}", "--mapping", "{mapping}"), ("sweep",), ("merge", "{db}"),
    ("materialize",), ("control", "--predictor", "crisp"), ("demo", "--gpu", "tiny"),
    ("train", "wu", "--gpu", "tiny"),
    ("measure", "--core-mhz", "1", "--mem-mhz", "1", "--", "true"),
])
def test_every_writing_command_stops_under_read_only_and_leaves_the_file(tiny_db, tiny_files,
                                                                         args):
    import hashlib

    def digest():
        return hashlib.sha256(tiny_db.read_bytes()).hexdigest()

    before = digest()
    args = [a.format(csv=tiny_files[0], mapping=tiny_files[1], db=tiny_db) for a in args]
    result = invoke("--db", tiny_db, "--read-only", *args)
    assert result.exit_code == 1
    command = " ".join(args[:2]) if args[0] == "train" else args[0]
    assert result.output == f"Error: gpudb {command} writes the database; drop --read-only\n"
    assert digest() == before


def test_read_commands_on_missing_database_say_so(tmp_path):
    result = invoke("--db", tmp_path / "none.duckdb", "info")
    assert result.exit_code == 1
    assert "no database at" in result.output
    assert not (tmp_path / "none.duckdb").exists()


def test_export_and_merge_commands(tiny_db, tmp_path):
    out = tmp_path / "exported"
    result = invoke("--db", tiny_db, "export", out)
    assert result.exit_code == 0 and (out / "run.parquet").exists()
    target = tmp_path / "target.duckdb"
    first = invoke("--db", target, "merge", out)
    assert "8 runs added, 0 already present" in first.output, first.output
    second = invoke("--db", target, "merge", tiny_db)
    assert "0 runs added, 8 already present" in second.output, second.output


def test_bench_ingest_reports_ratio():
    result = invoke("bench", "ingest", "--rows", 2000, "--metrics", 2, "--repeat", 1)
    assert result.exit_code == 0, result.output
    assert "2,000 runs + 4,000 metric values" in result.output
    assert "ratio gpudb / DuckDB:" in result.output


def test_materialize_and_bench_predict(tiny_db):
    result = invoke("--db", tiny_db, "materialize")
    # 16 samples (interval and run) x 10 analytic predictors
    assert result.exit_code == 0 and "160 predictions written" in result.output
    info = invoke("--db", tiny_db, "info")
    assert "prediction_materialized current" in info.output
    bench = invoke("--db", tiny_db, "bench", "predict", "--repeat", 1)
    assert bench.exit_code == 0, bench.output
    assert bench.output.count("ratio") == 4  # view and formulas, at 2 and 1 threads


def test_a_name_the_database_lacks_is_one_line_not_an_empty_answer(tiny_db):
    """query best_setting -p gpu_id RTX2070S printed '(0 rows)' and exit 0 (issue 30 item 4)."""
    for param, value, listed in (("gpu_id", "RTX2070S", "'tiny'"),
                                 ("kernel_id", "gamma", "'tiny/alpha', 'tiny/beta'"),
                                 ("suite", "nosuch", "'tiny'")):
        result = invoke("--db", tiny_db, "query", "mape_by_kernel" if param != "gpu_id"
                        else "best_setting", "-p", param, value)
        assert result.exit_code != 0
        assert result.output.count("\n") == 1 and f"{value!r}" in result.output, result.output
        assert listed in result.output


def test_a_bare_kernel_name_resolves_when_one_suite_has_it(tiny_db):
    full = invoke("--db", tiny_db, "query", "run_by_setting", "-p", "kernel_id", "tiny/alpha",
                  "--format", "csv")
    bare = invoke("--db", tiny_db, "query", "run_by_setting", "-p", "kernel_id", "alpha",
                  "--format", "csv")
    assert full.exit_code == bare.exit_code == 0, bare.output
    # alpha alone: 4 settings (its 1000/1600 MHz run 1.5 ms, the ratios' reference)
    assert bare.output == full.output and len(bare.output.splitlines()) == 5
    assert "tiny,1000.0,1600.0,1,1500000.0" in bare.output


@pytest.mark.parametrize("args,value,want", [
    (["train", "wangchu", "--gpu", "x", "--base"], "700", "CORE_MHZ,MEM_MHZ (e.g. 700,700)"),
    (["train", "wangchu", "--gpu", "x", "--base"], "700,-5", "CORE_MHZ,MEM_MHZ (e.g. 700,700)"),
    (["calibrate", "--gpu", "gtx980", "--baseline"], "700,nan", "CORE_MHZ,MEM_MHZ"),
    (["train", "wu", "--gpu", "x", "--base"], "32,1000",
     "SMS,CORE_MHZ,MEM_MHZ (e.g. 32,1000,1375) or 'all'"),
    (["train", "wu", "--gpu", "x", "--base"], "32.5,1000,1375", "SMS,CORE_MHZ,MEM_MHZ"),
])
def test_every_base_setting_option_parses_one_way(tmp_path, args, value, want):
    # train wu --base, train wangchu --base and calibrate --baseline share one parser
    # (cli.common.Setting): a malformed setting is one usage line, before the file is opened
    path = tmp_path / "none.duckdb"
    result = invoke("--db", path, *args, value)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"{value!r} is not {want}" in lines[0], result.output
    assert not path.exists()


def test_a_setting_converts_to_its_numbers():
    from gpudb.cli.common import Setting

    assert Setting().convert("700,924", None, None) == (700.0, 924.0)
    assert Setting(sms=True, words=("all",)).convert("32,1000,1375", None, None) == (
        32, 1000.0, 1375.0)
    assert Setting(sms=True, words=("all",)).convert("all", None, None) == "all"
