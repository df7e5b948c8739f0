"""gpudb query's output for people (issue 38): --columns, the terminal's default of rows and
columns, columns empty in every row, an empty database, close matches for mistyped names,
the stored queries as table macros in ad hoc SQL, and progress with an ETA."""

from __future__ import annotations

import csv
import hashlib
import io

import duckdb
import pytest
from click.testing import CliRunner

import gpudb
from gpudb.cli import cli
from gpudb.cli.common import eta_text, run_progress
from gpudb.present.output import (
    drop_empty,
    fit_columns,
    lift_constants,
    select_columns,
    strip_shared_prefixes,
)
from gpudb.store.names import close_matches, unknown
from gpudb.store.queries import register_macros, run_query, stored_queries


def invoke(db, *args, env=None):
    # no $COLUMNS unless a test gives one: pytest-xdist's workers inherit COLUMNS=80, which
    # would make every call a terminal of that width
    return CliRunner().invoke(cli, ["--db", str(db), *map(str, args)],
                              env={"COLUMNS": None, **(env or {})}, prog_name="gpudb")


def widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


# -- the tiny dataset's best settings, by hand (tests/conftest.py TINY_CSV): energy = time x
# power; the base is the highest setting, 1000/1600 MHz.
# alpha: base 1.5 ms x 300 W = 0.45 J; least energy 500/1600, 3 ms x 120 W = 0.36 J (-20%)
# beta: base 5 ms x 110 W = 0.55 J; least energy 1000/800, 5.5 ms x 90 W = 0.495 J (-10%)
BEST = [("tiny/alpha", 500.0, 1600.0, 20.0), ("tiny/beta", 1000.0, 800.0, 10.0)]


def test_columns_picks_and_orders_columns_in_every_format(tiny_db):
    result = invoke(tiny_db, "query", "best_setting", "--format", "csv", "--columns",
                    "kernel_id,energy_core_mhz,energy_mem_mhz,energy_saving_pct")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.output)))
    assert rows[0] == ["kernel_id", "energy_core_mhz", "energy_mem_mhz", "energy_saving_pct"]
    got = [(k, float(c), float(m), round(float(s), 9)) for k, c, m, s in rows[1:]]
    assert got == BEST


def test_an_unknown_column_is_one_usage_line_with_the_close_match(tiny_db):
    result = invoke(tiny_db, "query", "best_setting", "--columns", "kernel_id,energy_cor")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "no column 'energy_cor'; did you mean 'energy_core_mhz'" in result.output
    assert "columns: gpu_id, kernel_id, settings," in result.output


def test_a_narrow_terminal_keeps_the_keys_and_the_querys_first_columns(tiny_db):
    result = invoke(tiny_db, "query", "best_setting", env={"COLUMNS": "62"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert widest(result.output) <= 62
    # the keys (kernel_id; gpu_id, one value in every row, said once below), then
    # best_setting.sql's "Shown first:" columns up to the first that does not fit; the suite
    # every kernel_id shares is said once instead of on every row
    assert lines[0].split() == ["kernel_id", "energy_core_mhz", "energy_saving_pct"]
    assert lines[2].split() == ["alpha", "500", "20"]
    assert lines[3].split() == ["beta", "1000", "10"]
    assert lines[4] == "(2 rows)"
    assert lines[5] == "kernel_id: tiny/ left off the front of every row"
    text = " ".join(lines[6:])
    assert text.startswith("in every row: gpu_id tiny, settings 4, base_n_sm 2, "
                           "base_core_mhz 1000, base_mem_mhz 1600,")
    assert ("left out to fit 62 characters: base_time_ns, base_energy_j, energy_mem_mhz, "
            "energy_slowdown_pct, edp_mem_mhz, edp_saving_pct, edp_slowdown_pct") in text
    # a pipe (no $COLUMNS) and --all keep everything: 23 columns
    assert len(invoke(tiny_db, "query", "best_setting").output.splitlines()[0].split()) == 23
    wide = invoke(tiny_db, "query", "best_setting", "--all", env={"COLUMNS": "60"}).output
    assert len(wide.splitlines()[0].split()) == 23


def test_rows_past_the_terminal_default_and_limit(tiny_db, monkeypatch):
    monkeypatch.setattr("gpudb.present.output.TERMINAL_ROWS", 3)   # shown_rows reads it
    shown = invoke(tiny_db, "query", "run_by_setting", env={"COLUMNS": "200"}).output
    assert shown.splitlines()[5] == "(3 of 4 rows: --limit N or --all for more)"
    everything = invoke(tiny_db, "query", "run_by_setting", "--all", env={"COLUMNS": "200"})
    assert "(4 rows)" in everything.output
    two = invoke(tiny_db, "query", "run_by_setting", "--limit", "2", "--format", "csv").output
    assert len(two.splitlines()) == 3   # header and two rows


def test_columns_empty_in_every_row_are_left_out_and_named(tiny_db):
    result = invoke(tiny_db, "query", "mape_by_kernel", env={"COLUMNS": "300"})
    header = result.output.splitlines()[0].split()
    assert header == ["gpu_id", "kernel_id", "proportional_pct"]
    note = result.output.splitlines()[-1]
    assert note.startswith("left out, empty in every row: category, stall_pct, lead_pct,")


def test_an_empty_database_says_so_and_how_to_fill_it(fresh_db):
    result = invoke(fresh_db, "query", "best_setting")
    assert result.exit_code == 0
    assert result.stderr.strip() == (
        f"no runs in {fresh_db} yet: gpudb demo simulates some, gpudb ingest FILE --mapping "
        "MAPPING.toml loads measured ones")
    assert result.stdout == ""


def test_a_query_without_rows_on_a_file_with_runs_is_a_plain_zero_rows(tiny_db):
    result = invoke(tiny_db, "query", "savings")   # no control results: none replayed
    assert result.exit_code == 0
    assert result.output.splitlines()[-1] == "(0 rows)"


# -- close matches -------------------------------------------------------------------------

def test_close_matches_prefer_the_same_name_then_containing_then_similar():
    kernels = ["cuda/BlackScholes:BlackScholesGPU", "cuda/vectorAdd:vectorAdd",
               "cuda/aaa:a", "cuda/abb:b"]
    assert close_matches("vectorAdd", kernels) == ["cuda/vectorAdd:vectorAdd"]
    assert close_matches("blackscholes", kernels)[0] == "cuda/BlackScholes:BlackScholesGPU"
    assert close_matches("vectrAdd", kernels) == ["cuda/vectorAdd:vectorAdd"]
    assert close_matches("zzz", kernels) == []
    assert unknown("kernel", "zzz", ["a", "b"], " here") == "no kernel 'zzz' here (kernels: 'a', 'b')"


@pytest.mark.parametrize(("args", "line"), [
    (("query", "best_settings"),
     "Error: no stored query 'best_settings'; did you mean 'best_setting'"),
    (("query", "run_by_setting", "-p", "kernel_id", "alpah"),
     "Error: no kernel 'alpah' in this database; did you mean 'tiny/alpha'?"),
    (("query", "run_by_setting", "-p", "gpu_id", "tiyn"),
     "Error: no gpu_id 'tiyn' in this database; did you mean 'tiny'?"),
    (("query", "error_by_setting", "-p", "predictor", "crsp"),
     "Error: no predictor 'crsp'; did you mean 'crisp'"),
    (("query", "run_by_setting", "-p", "gpu", "tiny"),
     "Error: query run_by_setting has no parameter 'gpu'; did you mean 'gpu_id'?"),
])
def test_mistyped_names_get_their_close_match(tiny_db, args, line):
    result = invoke(tiny_db, *args)
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and result.output.startswith(line), result.output


# -- the stored queries in ad hoc SQL --------------------------------------------------------

def test_a_stored_query_in_ad_hoc_sql_returns_the_rows_of_gpudb_query(tiny_db):
    con = gpudb.connect(tiny_db, read_only=True)
    try:
        assert register_macros(con) == list(stored_queries())
        for name in ("best_setting", "run_by_setting"):
            columns, rows = run_query(con, name, {"gpu_id": "tiny"})
            macro = con.sql(f"FROM {name}(gpu_id := 'tiny')")
            assert macro.columns == columns and macro.fetchall() == rows
        got = con.sql("SELECT kernel_id, energy_core_mhz, energy_mem_mhz, "
                      "round(energy_saving_pct, 9) FROM best_setting() ORDER BY 1").fetchall()
        assert got == BEST
        # two parameters by name; a value with quotes is one literal, never SQL
        assert con.sql("SELECT count(*) FROM run_by_setting(kernel_id := 'tiny/beta', "
                       "gpu_id := 'tiny')").fetchall() == [(4,)]
        assert con.sql("SELECT count(*) FROM run_by_setting(gpu_id := 'x''; DROP TABLE "
                       "run; --{0}')").fetchall() == [(0,)]
        assert con.sql("SELECT count(*) FROM run").fetchall() == [(8,)]
        # every stored query's macro binds (its columns are known without running it)
        for name in stored_queries():
            assert con.sql(f"FROM {name}() LIMIT 0").columns, name
    finally:
        con.close()


def test_gpudb_sql_reads_stored_queries_and_writes_nothing_to_the_file(tiny_db):
    before = hashlib.sha256(tiny_db.read_bytes()).hexdigest()
    result = invoke(tiny_db, "--read-only", "sql",
                    "SELECT kernel_id, energy_core_mhz FROM best_setting(gpu_id := 'tiny') "
                    "ORDER BY 1", "--format", "csv")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1:] == ["tiny/alpha,500.0", "tiny/beta,1000.0"]
    assert hashlib.sha256(tiny_db.read_bytes()).hexdigest() == before
    # another client opening the file finds no macro of gpudb's in it
    plain = duckdb.connect(str(tiny_db), read_only=True)
    try:
        assert plain.sql("SELECT count(*) FROM duckdb_functions() WHERE function_name IN "
                         "('best_setting', 'run_by_setting')").fetchall() == [(0,)]
    finally:
        plain.close()


def test_no_stored_query_is_named_like_a_duckdb_function():
    scratch = duckdb.connect()
    try:
        system = {r[0] for r in scratch.sql("SELECT function_name FROM duckdb_functions()")
                  .fetchall()}
    finally:
        scratch.close()
    assert not set(stored_queries()) & system


# -- output helpers by hand ------------------------------------------------------------------

def test_select_drop_fit_and_strip_by_hand():
    columns = ["kernel_id", "a", "b", "long_column_name"]
    rows = [("s/k1", 1, None, 100), ("s/k22", 2, None, 200)]
    assert select_columns(columns, rows, ["a", "kernel_id"]) == (
        ["a", "kernel_id"], [(1, "s/k1"), (2, "s/k22")])
    with pytest.raises(ValueError, match="no column 'aa'; did you mean 'a'"):
        select_columns(columns, rows, ["aa"])
    assert drop_empty(columns, rows) == (
        ["kernel_id", "a", "long_column_name"], [("s/k1", 1, 100), ("s/k22", 2, 200)], ["b"])
    stripped, prefixes = strip_shared_prefixes(columns, rows)
    assert prefixes == {"kernel_id": "s/"} and [r[0] for r in stripped] == ["k1", "k22"]
    # widths: kernel_id 11 (9 + tabulate's padding 2), a 3, b 3, long_column_name 18; gaps 2
    assert fit_columns(columns, rows, 11 + 2 + 3 + 2 + 3 + 2 + 18)[2] == []
    assert fit_columns(columns, rows, 21) == (
        ["kernel_id", "a", "b"], [("s/k1", 1, None), ("s/k22", 2, None)],
        ["long_column_name"])
    # up to the first column that does not fit: 'a' would, after the long one did not
    assert fit_columns(columns, rows, 21, first=("long_column_name",))[2] == [
        "a", "b", "long_column_name"]
    assert lift_constants(columns, rows) == (
        ["kernel_id", "a", "long_column_name"], [("s/k1", 1, 100), ("s/k22", 2, 200)],
        [("b", "")])
    assert lift_constants(["x", "y"], [(1, 2)]) == (["x", "y"], [(1, 2)], [])


# -- progress --------------------------------------------------------------------------------

def test_eta_from_the_mean_pace_so_far():
    assert eta_text(1, 4, 10.0) == "about 30 s left"
    assert eta_text(2, 10, 60.0) == "about 4 min left"
    assert eta_text(0, 4, 5.0) == "" and eta_text(4, 4, 5.0) == ""


def test_progress_in_a_log_says_steps_done_and_the_eta(capsys):
    with run_progress("replaying", unit="steps", every_s=0) as progress:
        progress(0, 4)
        progress(1, 4)
        progress(4, 4)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "replaying: 0/4 steps", "replaying: 1/4 steps", "replaying: 4/4 steps"]
    assert lines[1].endswith(" s left") and "left" not in lines[2]
