"""The commands a user runs that drive the simulator and the controllers, through click's
CliRunner on real database files: `gpudb control`, `evaluate control`, `materialize`,
`train wu --base all` and `demo`, on the two synthetic kernels of conftest.TINY_SUITE
(a pure ALU chain and a streaming-load kernel) on the shipped gtx480."""

from __future__ import annotations

import csv
import io
import json
import re
from types import SimpleNamespace

import duckdb
import pytest
from click.testing import CliRunner
from conftest import TINY_SUITE, csv_table, row_counts

import gpudb
from gpudb.cli import cli

TOP_MHZ = 700.0          # gtx480's highest core P-state
P_STATES = 7             # 100 to 700 MHz
SWITCH_NS = 100.0        # gtx480's P-state switch (fixtures/gpus/gtx480.toml)
INTERVAL = 1000          # warp instructions: 15 intervals of the ALU kernel, 5 of the other
KERNELS = ("tiny/alu", "tiny/mem")
ENERGY = "core_dynamic_j + core_static_j + dram_dynamic_j + dram_static_j + other_j"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def ok(*args):
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result


def table_rows(text: str) -> list[list[str]]:
    """Rows of the first table (format 'table') in `text`, cells split by the dashed rule."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if re.fullmatch(r"[- ]*-[- ]*", line))
    spans = [m.span() for m in re.finditer(r"-+", lines[rule])]
    rows = []
    for line in [lines[rule - 1]] + lines[rule + 1:]:
        if not line.strip() or line.startswith("("):
            break
        rows.append([line[a:b if i < len(spans) - 1 else None].strip()
                     for i, (a, b) in enumerate(spans)])
    return rows


def sections(text: str, title: str) -> list[dict]:
    """The table printed after the caption starting with `title` (wrapped over lines), as
    dicts."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    start = next(i for i in range(start, len(lines) - 1) if lines[i + 1].startswith("---"))
    header, *rows = table_rows("\n".join(lines[start:]))
    return [dict(zip(header, r, strict=True)) for r in rows]


def fetch(db, sql, params=()):
    con = gpudb.connect(db, read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """The tiny suite swept at every core P-state, the papers' CRISP controller run in the
    closed loop twice (the second must write nothing), and `evaluate control` for EDP."""
    tmp = tmp_path_factory.mktemp("cli_commands")
    suite = tmp / "tiny.toml"
    suite.write_text(TINY_SUITE)
    db = tmp / "cli.duckdb"
    ok("--db", db, "sweep", "--suite", suite, "--mem-mhz", 924, "--interval-instructions",
       INTERVAL, "--jobs", 1)
    control = ("--db", db, "control", "--predictor", "crisp", "--guard", "paper", "--objective",
               "edp", "--suite", suite, "--interval-instructions", INTERVAL)
    first = ok(*control)
    counts = row_counts(db)
    second = ok(*control)
    counts_again = row_counts(db)
    evaluated = ok("--db", db, "evaluate", "control", "--suite", suite, "--no-sweep",
                   "--objective", "edp", "--scope", "run", "--format", "csv")
    chip = ok("--db", db, "evaluate", "control", "--suite", suite, "--no-sweep",
              "--objective", "edp", "--scope", "chip", "--format", "csv")
    return SimpleNamespace(db=db, suite=suite, control=first, control_again=second,
                           counts_after_control=counts, counts_again=counts_again,
                           evaluated=evaluated, chip=chip)


def closed_loop_runs(db) -> dict[str, dict]:
    rows = fetch(db, "SELECT kernel_id, run_id, gpu_id, core_mhz, mem_mhz, "
                     "interval_instructions, time_ns, energy_j FROM run "
                     "WHERE policy <> 'fixed' AND predictor <> 'dynamic_optimal' "
                     "ORDER BY kernel_id")
    keys = ("kernel_id", "run_id", "gpu_id", "core_mhz", "mem_mhz", "interval_instructions",
            "time_ns", "energy_j")
    return {r[0]: dict(zip(keys, r, strict=True)) for r in rows}


def intervals(db, run_id) -> list[tuple]:
    return fetch(db, f"SELECT idx, core_mhz, switch_ns, time_ns, {ENERGY} FROM interval "
                     "WHERE run_id = ? ORDER BY idx", [run_id])


def test_control_stores_one_closed_loop_run_per_kernel(sim):
    printed = {r[0]: r for r in table_rows(sim.control.stdout)[1:]}
    runs = closed_loop_runs(sim.db)
    assert set(printed) == set(runs) == set(KERNELS)
    for kernel, run in runs.items():
        _, time_ns, energy_j, run_id = printed[kernel]
        assert run_id == run["run_id"]
        assert float(time_ns) == pytest.approx(run["time_ns"], rel=5e-4)
        assert float(energy_j) == pytest.approx(run["energy_j"], rel=5e-4)
        assert (run["gpu_id"], run["core_mhz"], run["mem_mhz"], run["interval_instructions"]) == (
            "gtx480", TOP_MHZ, 924.0, INTERVAL)
        steps = intervals(sim.db, run["run_id"])
        assert [s[0] for s in steps] == list(range(len(steps)))
        # the run's totals are its intervals' (switching time included in the interval it
        # opens), and it starts at the highest P-state
        assert run["time_ns"] == pytest.approx(sum(s[3] for s in steps), rel=1e-12)
        assert run["energy_j"] == pytest.approx(sum(s[4] for s in steps), rel=1e-12)
        assert steps[0][1] == TOP_MHZ and steps[0][2] == 0
        # a switch costs gtx480's switching time exactly where the P-state changes
        for before, step in zip(steps, steps[1:], strict=False):
            assert step[2] == (SWITCH_NS if step[1] != before[1] else 0.0), (kernel, step)
        # interval 0 runs before any decision: it is the fixed run's interval 0 at the top
        [fixed] = fetch(sim.db, f"SELECT i.time_ns, {ENERGY} FROM run AS r JOIN interval AS i "
                                "USING (run_id) WHERE r.policy = 'fixed' AND r.kernel_id = ? "
                                "AND r.core_mhz = ? AND i.idx = 0", [kernel, TOP_MHZ])
        assert steps[0][3:] == pytest.approx(fixed)
    assert len(intervals(sim.db, runs["tiny/alu"]["run_id"])) == 15
    assert len(intervals(sim.db, runs["tiny/mem"]["run_id"])) == 5


def test_control_again_writes_nothing_and_prints_the_same_runs(sim):
    assert sim.counts_again == sim.counts_after_control
    assert sim.control_again.output == sim.control.output
    assert len(closed_loop_runs(sim.db)) == 2


def test_control_refuses_bad_input_without_writing(sim):
    before = row_counts(sim.db)
    unknown = invoke("--db", sim.db, "control", "--predictor", "crisp", "--suite", sim.suite,
                     "--kernel", "nope", "--interval-instructions", INTERVAL)
    assert unknown.exit_code == 1
    last = unknown.output.strip().splitlines()[-1]
    assert last.startswith("Error: ") and "no kernel named 'nope'" in last
    read_only = invoke("--db", sim.db, "--read-only", "control", "--predictor", "crisp",
                       "--suite", sim.suite)
    assert read_only.exit_code == 1 and "drop --read-only" in read_only.output
    # the oracle is a replay-only bound: it sees the future, so it cannot run in the loop
    oracle = invoke("--db", sim.db, "control", "--predictor", "oracle", "--suite", sim.suite)
    assert oracle.exit_code == 2
    assert row_counts(sim.db) == before


def test_replay_vs_closed_loop_pairs_each_run_with_its_replay(sim):
    rows = json.loads(ok("--db", sim.db, "query", "replay_vs_closed_loop", "-p", "predictor",
                         "crisp", "--format", "json").output)
    got = {r["kernel_id"]: r for r in rows}
    assert len(rows) == 2 and set(got) == set(KERNELS)
    runs = closed_loop_runs(sim.db)
    replays = {k: (t, e, s) for k, t, e, s in fetch(
        sim.db, "SELECT kernel_id, time_ns, energy_j, settings FROM control_result "
                "WHERE policy = 'replay' AND predictor = 'crisp' AND guard = 'paper' "
                "AND objective = 'edp'")}
    for kernel, row in got.items():
        assert (row["predictor"], row["objective"], row["guard"]) == ("crisp", "edp", "paper")
        assert row["closed_loop_time_ns"] == pytest.approx(runs[kernel]["time_ns"])
        assert row["closed_loop_energy_j"] == pytest.approx(runs[kernel]["energy_j"])
        time_ns, energy_j, settings = replays[kernel]
        assert row["replay_time_ns"] == pytest.approx(time_ns)
        assert row["replay_energy_j"] == pytest.approx(energy_j)
        assert row["time_diff_pct"] == pytest.approx(
            100 * (time_ns / runs[kernel]["time_ns"] - 1))
        # same controller, same first interval: the first decision is the same
        steps = intervals(sim.db, runs[kernel]["run_id"])
        assert len(steps) == len(settings)
        assert steps[1][1] == settings[1], kernel
    # the ALU chain scales as 1/f, so EDP is least at the top: the controller never leaves
    # it and the closed-loop run is the fixed run at 700 MHz, as is its replay
    alu = got["tiny/alu"]
    assert {s[1] for s in intervals(sim.db, runs["tiny/alu"]["run_id"])} == {TOP_MHZ}
    [(fixed_ns, fixed_j)] = fetch(sim.db, "SELECT time_ns, energy_j FROM run WHERE policy = "
                                          "'fixed' AND kernel_id = 'tiny/alu' AND core_mhz = ?",
                                  [TOP_MHZ])
    assert alu["closed_loop_time_ns"] == pytest.approx(fixed_ns, rel=1e-12)
    assert alu["closed_loop_energy_j"] == pytest.approx(fixed_j, rel=1e-12)
    assert alu["time_diff_pct"] == pytest.approx(0.0, abs=1e-9)
    assert alu["edp_diff_pct"] == pytest.approx(0.0, abs=1e-9)
    assert alu["closed_loop_switches"] == alu["replay_switches"] == 0


def test_replay_vs_closed_loop_sets_the_run_bound_beside_the_stitched_one(sim):
    rows = json.loads(ok("--db", sim.db, "query", "replay_vs_closed_loop", "-p", "predictor",
                         "dynamic_optimal", "--format", "json").output)
    # `evaluate control` ran the EDP schedule of both scopes for both kernels
    assert {(r["kernel_id"], r["energy_scope"]) for r in rows} == {
        (k, s) for k in KERNELS for s in ("run", "chip")}
    stored = {(k, p, s): (t, e, c) for k, p, s, t, e, c in fetch(
        sim.db, "SELECT kernel_id, policy, energy_scope, time_ns, energy_j, chip_energy_j "
                "FROM control_result WHERE objective = 'edp'")}
    for r in rows:
        stitched = stored[(r["kernel_id"], "dynamic_optimal", r["energy_scope"])]
        run = stored[(r["kernel_id"], "dynamic_optimal_run", r["energy_scope"])]
        assert (r["replay_time_ns"], r["replay_energy_j"]) == pytest.approx(stitched[:2])
        assert (r["closed_loop_time_ns"], r["closed_loop_energy_j"],
                r["closed_loop_chip_energy_j"]) == pytest.approx(run)


def control_results(db, scope="run") -> list[dict]:
    keys = ("kernel_id", "policy", "predictor", "guard", "intervals", "switches", "time_ns",
            "energy_j", "settings")
    return [dict(zip(keys, r, strict=True)) for r in fetch(
        db, f"SELECT {', '.join(keys)} FROM control_result WHERE objective = 'edp' "
            f"AND energy_scope = '{scope}'")]


def test_evaluate_control_writes_totals_that_recompute_from_their_settings(sim):
    outcome = {(k, m, i): (t, e, bg) for k, m, i, t, e, bg in fetch(
        sim.db, "SELECT kernel_id, core_mhz, idx, time_ns, energy_j, "
                "(core_static_j + dram_static_j + other_j) / time_ns FROM control_interval")}
    results = control_results(sim.db)
    # per kernel: 4 offline policies (the dynamic optimal as stitched and as run) and 10
    # predictors and the oracle under 2 guards
    assert len(results) == 2 * (4 + 11 * 2)
    for r in results:
        if r["policy"] == "dynamic_optimal_run":
            continue   # the simulator's totals (tests/control/test_control_bounds.py)
        settings = r["settings"]
        n = {"tiny/alu": 15, "tiny/mem": 5}[r["kernel_id"]]
        assert r["intervals"] == len(settings) == n
        if r["policy"] in ("replay", "perfect_memoryless"):
            assert settings[0] == TOP_MHZ      # controllers start at the top
        # dynamic optimal is a bound and pays no switching; the others pay gtx480's 100 ns
        # at static, DRAM background and board power of the new setting
        pays = r["policy"] != "dynamic_optimal"
        time_ns = energy_j = 0.0
        switches = 0
        for i, mhz in enumerate(settings):
            t, e, bg = outcome[(r["kernel_id"], mhz, i)]
            if i and mhz != settings[i - 1]:
                switches += 1
                if pays:
                    t, e = t + SWITCH_NS, e + bg * SWITCH_NS
            time_ns += t
            energy_j += e
        assert r["switches"] == switches, r
        assert r["time_ns"] == pytest.approx(time_ns, rel=1e-9), r
        assert r["energy_j"] == pytest.approx(energy_j, rel=1e-9), r


def test_evaluate_control_prints_mean_savings_bounded_by_the_dynamic_optimal(sim):
    printed = list(csv.DictReader(io.StringIO(csv_table(sim.evaluated.stdout, "edp_run"))))
    results = control_results(sim.db)
    baseline = {k: (t, e) for k, t, e in fetch(
        sim.db, "SELECT kernel_id, time_ns, energy_j FROM run WHERE policy = 'fixed' "
                "AND core_mhz = ?", [TOP_MHZ])}

    def name(r):
        return r["policy"] if r["policy"] != "replay" else f"replay {r['predictor']}"

    edp = {k: {} for k in KERNELS}
    for r in results:
        edp[r["kernel_id"]][(name(r), r["guard"])] = r["energy_j"] * r["time_ns"]
    # dynamic optimal is the optimum: no policy has less EDP on any kernel
    for kernel, by_policy in edp.items():
        best = by_policy[("dynamic_optimal", "")]
        assert all(best <= v * (1 + 1e-12) for (p, _), v in by_policy.items()
                   if p != "dynamic_optimal_run"), kernel
    # each printed row is the mean over the two kernels against the fixed run at 700 MHz
    assert len(printed) == 4 + 11 * 2
    for row in printed:
        key = (row["policy"], row["guard"])
        mine = [r for r in results if (name(r), r["guard"]) == key]
        assert len(mine) == 2, key

        def mean(f, mine=mine):
            return sum(f(r, *baseline[r["kernel_id"]]) for r in mine) / 2

        assert float(row["edp_saving_pct"]) == pytest.approx(
            mean(lambda r, t, e: 100 * (1 - r["energy_j"] * r["time_ns"] / (e * t))),
            rel=1e-9, abs=1e-9), key
        assert float(row["time_change_pct"]) == pytest.approx(
            mean(lambda r, t, e: 100 * (r["time_ns"] / t - 1)), rel=1e-9, abs=1e-9), key
        assert float(row["switches"]) == pytest.approx(mean(lambda r, t, e: r["switches"]))
        assert float(row["edp_saving_pct"]) <= float(
            printed[0]["edp_saving_pct"]) + 1e-9, key
    assert (printed[0]["policy"], printed[0]["fraction_of_potential"]) == ("dynamic_optimal",
                                                                          "1.0")
    # the run bound is its own potential; the stitched bound's fraction of it is the two
    # savings' ratio
    run_bound = next(r for r in printed if r["policy"] == "dynamic_optimal_run")
    assert run_bound["fraction_of_run_bound"] == "1.0"
    # the paper's figure stands beside the papers' controller only, in the paper's energy
    # scope (the chip's)
    from gpudb.analysis.evaluate import PAPER_000_EDP_SAVING_PCT

    assert {row["paper_000_edp_saving_pct"] for row in printed} == {""}
    chip = list(csv.DictReader(io.StringIO(csv_table(sim.chip.stdout, "edp_chip"))))
    assert len(chip) == len(printed)
    for row in chip:
        predictor = row["policy"].removeprefix("replay ")
        expected = (PAPER_000_EDP_SAVING_PCT.get(predictor)
                    if row["guard"] == "paper" else None)
        assert row["paper_000_edp_saving_pct"] == ("" if expected is None else str(expected))


def test_evaluate_control_read_only_refuses_to_write(sim):
    result = invoke("--db", sim.db, "--read-only", "evaluate", "control", "--suite", sim.suite,
                    "--no-sweep", "--objective", "edp")
    assert result.exit_code == 1 and "drop --read-only" in result.output


def test_materialize_writes_the_prediction_view_as_a_table(sim):
    result = ok("--db", sim.db, "materialize")
    [(n,)] = fetch(sim.db, "SELECT count(*) FROM prediction")
    assert n > 0 and result.output == f"prediction_materialized: {n} predictions written\n"
    assert fetch(sim.db, "SELECT count(*) FROM (SELECT * FROM prediction EXCEPT ALL "
                         "SELECT * FROM prediction_materialized)") == [(0,)]
    assert fetch(sim.db, "SELECT count(*) FROM (SELECT * FROM prediction_materialized "
                         "EXCEPT ALL SELECT * FROM prediction)") == [(0,)]
    # a plain DuckDB client (no gpudb functions) reads the same rows and columns
    plain = duckdb.connect(str(sim.db), read_only=True)
    try:
        columns = [d[0] for d in plain.execute(
            "SELECT * FROM prediction_materialized LIMIT 0").description]
        crisp = plain.execute("SELECT count(*) FROM prediction_materialized "
                              "WHERE predictor = 'crisp' AND predicted_ns IS NOT NULL").fetchall()
    finally:
        plain.close()
    con = gpudb.connect(sim.db, read_only=True)
    try:
        assert columns == [d[0] for d in con.execute(
            "SELECT * FROM prediction LIMIT 0").description]
        assert crisp == con.execute("SELECT count(*) FROM prediction WHERE predictor = 'crisp' "
                                    "AND predicted_ns IS NOT NULL").fetchall()
    finally:
        con.close()
    assert crisp[0][0] > 0
    info = json.loads(ok("--db", sim.db, "info", "--format", "json").output)
    assert {r["key"]: r["value"] for r in info}["prediction_materialized"] == "current"


def test_train_wu_base_all_stores_a_model_per_setting_and_the_last_is_current(db_path):
    pytest.importorskip("sklearn", reason="training needs the gpudb-dvfs[ml] extra (scikit-learn)")
    from test_wu_model import build_synthetic  # the synthetic 2x2x2 grid of six kernels

    build_synthetic(db_path)
    result = ok("--db", db_path, "train", "wu", "--gpu", "toy", "--base", "all", "--clusters", 2,
                "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    # one model per setting of the 2 SMs x 2 core x 2 memory grid, from one kernel split
    assert sorted((r["base_n_sm"], r["base_core_mhz"], r["base_mem_mhz"]) for r in rows) == sorted(
        (str(n), f"{c:.1f}", f"{m:.1f}") for n in (2, 4) for c in (500, 1000) for m in (800, 1600))
    stored = dict(fetch(db_path, "SELECT model_id, val_time_mape_pct FROM wu_model"))
    assert set(stored) == {r["model_id"] for r in rows}
    for r in rows:
        assert float(r["val_time_mape_pct"]) == pytest.approx(stored[r["model_id"]])
    # the id line goes to stderr with --format csv; the last model trained is the current one
    latest = rows[-1]["model_id"]
    assert result.stderr.splitlines()[0].startswith(f"latest model_id {latest} ")
    assert fetch(db_path, "SELECT gpu_id, model_id FROM wu_model_current") == [("toy", latest)]
    # one more at one setting (table format: the id line first on stdout) replaces it as current
    one = ok("--db", db_path, "train", "wu", "--gpu", "toy", "--base", "2,500,800", "--seed", 9,
             "--clusters", 2)
    model_id = one.stdout.splitlines()[0].removeprefix("model_id ")
    assert re.fullmatch(r"[0-9a-f]{16}", model_id) and model_id not in stored
    assert fetch(db_path, "SELECT base_n_sm, base_core_mhz, base_mem_mhz, seed FROM wu_model "
                          "WHERE model_id = ?", [model_id]) == [(2, 500.0, 800.0, 9)]
    assert fetch(db_path, "SELECT model_id FROM wu_model_current") == [(model_id,)]


def test_demo_engine_sampled_simulates_every_run_by_it_and_says_so(tmp_path, tiny_suite_path,
                                                                   query_db):
    """`demo --engine sampled` sweeps, and runs the dynamic optimal's schedules, by the sampled
    engine, and its first lines say so (its figures are that engine's approximation of the
    reference's); the other engine on that file is refused in one line, the file unchanged
    (a database holds one engine's runs), as is an engine for a measured GPU."""
    db = tmp_path / "sampled.duckdb"
    first = ok("--db", db, "demo", "--suite", tiny_suite_path, "--engine", "sampled")
    assert fetch(db, "SELECT engine, policy, count(*) FROM run GROUP BY ALL ORDER BY ALL") == [
        ("sampled", "closed_loop", 2), ("sampled", "fixed", P_STATES * 2)]
    out = first.stdout[first.stdout.index("gpudb demo:"):]
    head = " ".join(out.split("\n\n")[0].split())
    assert head.endswith("; simulated by the sampled engine (faster, approximate: `gpudb bench "
                         "engine` measures it against the reference engine)"), head
    before = db.read_bytes()
    refused = invoke("--db", db, "demo", "--suite", tiny_suite_path, "--engine", "reference")
    assert refused.exit_code == 1 and refused.output.count("\n") == 1, refused.output
    assert refused.output.startswith(
        "Error: this database holds the sampled engine's simulated runs; the reference "
        "engine's go in a database of their own"), refused.output
    assert db.read_bytes() == before
    measured = invoke("--db", query_db, "demo", "--gpu", "tiny", "--engine", "sampled")
    assert measured.exit_code == 1 and measured.output == (
        "Error: tiny is a measured GPU: its runs are not simulated, so no simulator engine "
        "(sampled) applies to them\n"), measured.output


def test_demo_on_a_two_kernel_suite_sweeps_once_and_prints_both_tables(tmp_path,
                                                                       tiny_suite_path):
    db = tmp_path / "demo.duckdb"
    first = ok("--db", db, "demo", "--suite", tiny_suite_path)
    # every gtx480 core P-state of both kernels at the nominal memory clock
    assert f"{P_STATES * 2} runs simulated, 0 already in" in first.output
    assert fetch(db, "SELECT count(*), count(DISTINCT core_mhz), min(mem_mhz), max(mem_mhz) "
                     "FROM run WHERE policy = 'fixed'") == [(14, P_STATES, 924.0, 924.0)]
    counts = row_counts(db)
    second = ok("--db", db, "demo", "--suite", tiny_suite_path)
    assert "runs simulated" not in second.output
    assert "sampled engine" not in second.output     # the reference engine's runs
    assert row_counts(db) == counts
    # the same tables both times, from the same runs
    assert first.stdout[first.stdout.index("gpudb demo:"):] == second.stdout[
        second.stdout.index("gpudb demo:"):]

    from gpudb.analysis.evaluate import PAPER_000_EDP_SAVING_PCT, PAPER_000_MAPE_PCT
    from gpudb.predictors import names
    from gpudb.present.demo import verdict

    accuracy = {r["predictor"]: r for r in sections(second.output, "Prediction error")}
    assert list(accuracy) == list(names(replayable=True))
    for name, r in accuracy.items():
        paper = PAPER_000_MAPE_PCT.get(name)
        assert r["paper"] == ("" if paper is None else f"{paper:.1f}")
        assert r["verdict"] == verdict(float(r["all"]), paper)
        # percentages to one decimal
        assert re.fullmatch(r"-?\d+\.\d", r["all"])
    savings = {r["policy"]: r for r in sections(second.output, "EDP saving % against")}
    assert len(savings) == 4 + 11
    # at the default 100,000 warp instructions per interval each run is one interval, so a
    # controller never gets to move: every replay (and perfect memoryless) stays at 700 MHz
    for policy, r in savings.items():
        if policy not in ("dynamic_optimal", "dynamic_optimal_run", "static_optimal"):
            assert float(r["EDP %"]) == 0, policy
        if policy in names(replayable=True):
            assert float(r["g EDP %"]) == 0, policy
            paper = PAPER_000_EDP_SAVING_PCT.get(policy)
            assert r["verdict"] == verdict(0.0, paper), policy
    # with one interval the best schedule is the best fixed setting
    assert savings["dynamic_optimal"] == {**savings["static_optimal"],
                                          "policy": "dynamic_optimal"}
    # and running it in the closed loop is running the fixed run at that setting
    assert savings["dynamic_optimal_run"] == {**savings["static_optimal"],
                                              "policy": "dynamic_optimal_run"}
    assert float(savings["dynamic_optimal"]["EDP %"]) > 0
    # no column is empty for this database
    for table in (accuracy, savings):
        for column in next(iter(table.values())):
            assert any(r[column] for r in table.values()), column
    # the figures, next to the database, their paths printed
    figures = sorted((tmp_path / "gpudb-figures").iterdir())
    assert [f.name for f in figures] == sorted(
        ["error_by_target.png", "mape_by_kernel.png", "savings_summary_guarded.png",
         f"clock_trace_{KERNELS[0].replace('/', '_')}.png"])
    lines = second.output.splitlines()
    for figure in figures:
        assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"  {figure}" in lines
        # under it the command that draws it again (test_demo_report.py runs them)
        at = lines.index(f"  {figure}")
        assert lines[at + 1].startswith("    gpudb plot ")
        assert f"--out {figure.name}" in " ".join(lines[at + 1:at + 3])
    assert "    gpudb plot error_by_target -p gpu_id gtx480 -p suite " in second.output
    assert 'README.md, "Where gpudb differs from the papers"' in " ".join(
        second.output.split())
    # the commands it suggests next are for this suite and its kernels
    hints = second.output[second.output.index("\nnext (first: export GPUDB_DB="):]
    assert f"clock_trace -p kernel_id {KERNELS[0].split('/')[1]}" in hints
    assert f"evaluate control --suite {tiny_suite_path} --objective energy_perf" in hints
    assert f"control --suite {tiny_suite_path} --predictor crisp_gpudb --kernel " \
           f"{KERNELS[0].split('/')[1]}" in hints
