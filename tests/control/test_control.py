"""DVFS control: trace replay, offline policies and savings on a hand-made fixture whose
answers are computed by hand; the closed loop against the replay on simulated runs."""

from __future__ import annotations

import itertools
import shutil

import numpy as np
import pytest
from conftest import TWOPHASE_KERNEL

import gpudb
from gpudb.analysis.evaluate import length_line
from gpudb.control.energy import predict_energy
from gpudb.control.guard import GUARDED, PAPER, Guard
from gpudb.control.offline import POLICIES, PolicyResult, in_scope, load_outcomes
from gpudb.control.results import evaluate, replay
from gpudb.store.queries import run_query

# (time ns, energy J) of intervals 0-2 at each core MHz: hand-made numbers, not simulator output.
# All energy is board energy (other_j), so a predictor's energy estimate is other_j x T/Tc.
OUTCOMES = {
    700: [(10, 10), (10, 10), (10, 10)],
    500: [(11, 8), (14, 11), (11, 8)],
    300: [(20, 12), (12, 7), (20, 12)],
}
VOLTS = {700: 1.0, 500: 0.9, 300: 0.8}


@pytest.fixture
def hand_db(fresh_db):
    con = gpudb.connect(fresh_db)
    con.execute("""
        INSERT INTO gpu VALUES ('hand', 'hand-made GPU', 1, 48, 8, 700, 924,
            '{"core": {"switch_ns": 0}, "memory": {"l2_latency_ns": 200,
              "dram_latency_ns": 50, "dram_latency_mem_cycles": 92.4}}');
        INSERT INTO pstate VALUES ('hand', 'mem', 924, NULL);
        INSERT INTO kernel VALUES ('hand/k', 'k', 'hand', 'memory', 'hand-made (synthetic)', NULL);
        INSERT INTO experiment VALUES ('e', 'e', NULL, now(), NULL, NULL, NULL, NULL);
    """)
    for mhz, rows in OUTCOMES.items():
        con.execute("INSERT INTO pstate VALUES ('hand', 'core', ?, ?)", [mhz, VOLTS[mhz]])
        con.execute(
            "INSERT INTO run (run_id, experiment_id, source, kernel_id, gpu_id, policy, core_mhz, "
            "mem_mhz, n_sm, ctas_per_sm, interval_instructions, seed, time_ns, energy_j, "
            "instructions, created_at) VALUES (?, 'e', 'sim', 'hand/k', 'hand', 'fixed', ?, 924, "
            "1, 8, 100, 0, ?, ?, 300, now())",
            [f"r{mhz}", mhz, sum(t for t, _ in rows), sum(e for _, e in rows)])
        for idx, (t, e) in enumerate(rows):
            con.execute(
                "INSERT INTO interval (run_id, idx, core_mhz, mem_mhz, ctas_per_sm, start_ns, "
                "time_ns, cycles, instructions, core_dynamic_j, core_static_j, dram_dynamic_j, "
                "dram_static_j, other_j) VALUES (?, ?, ?, 924, 8, 0, ?, ?, 100, 0, 0, 0, 0, ?)",
                [f"r{mhz}", idx, mhz, t, t * mhz / 1000, e])
    con.close()
    return fresh_db


def _stored_replay(con, predictor, objective, guard=PAPER, scope="run") -> list[PolicyResult]:
    """Replay into control_result, and the totals stored there, per kernel."""
    written = replay(con, predictor, objective, guard=guard, scope=scope)
    rows = con.execute(
        "SELECT gpu_id, kernel_id, policy, settings, time_ns, energy_j, switches, chip_energy_j "
        "FROM control_result WHERE policy = 'replay' AND predictor = ? AND objective = ? "
        "AND guard = ? AND energy_scope = ? ORDER BY kernel_id",
        [predictor, objective, guard.name, scope]).fetchall()
    assert written == len(rows)
    return [PolicyResult(*row) for row in rows]


def _replay(db, predictor, objective, guard=PAPER):
    con = gpudb.connect(db)
    try:
        [result] = _stored_replay(con, predictor, objective, guard)
    finally:
        con.close()
    return result


def test_oracle_replay_by_hand_and_equal_to_perfect_memoryless(hand_db):
    # Energy: interval 0 runs at 700; its best setting in hindsight is 500 (8 J), which
    # interval 1 gets; interval 1's best is 300 (7 J), which interval 2 gets.
    result = _replay(hand_db, "oracle", "energy")
    assert result.settings == [700, 500, 300]
    assert (result.time_ns, result.energy_j, result.switches) == (10 + 14 + 20, 10 + 11 + 12, 2)
    # EDP per interval: interval 0: 100, 88, 240 -> 500; interval 1: 100, 154, 84 -> 300.
    assert _replay(hand_db, "oracle", "edp").settings == [700, 500, 300]
    con = gpudb.connect(hand_db, read_only=True)
    [kernel] = load_outcomes(con)
    con.close()
    for objective in ("energy", "edp", "ed2p", "energy_perf"):
        memoryless = POLICIES["perfect_memoryless"](kernel, objective, 0.01)
        oracle = _replay(hand_db, "oracle", objective)
        assert memoryless.settings == oracle.settings, objective
        assert memoryless.energy_j == pytest.approx(oracle.energy_j)
        assert memoryless.time_ns == pytest.approx(oracle.time_ns)


def test_guarded_oracle_undoes_a_move_the_next_interval_refutes(hand_db):
    # Interval 0's best is 500 (8 J against 10 J at 700), one P-state down, so the guard
    # lets the controller go there; but interval 1 at 500 measures 11 J, worse than the
    # 10 J interval 0 measured at 700, so it goes back to 700 and keeps out of 500 for 2^1
    # intervals (switching costs nothing on this GPU).
    result = _replay(hand_db, "oracle", "energy", GUARDED)
    assert result.settings == [700, 500, 700]
    assert (result.time_ns, result.energy_j, result.switches) == (10 + 14 + 10, 10 + 11 + 10, 2)


def test_proportional_replay_by_hand(hand_db):
    # From interval 0 at 700 (10 ns, 10 J of board energy), proportional predicts 14 ns at
    # 500 and 23.3 ns at 300, so board energy 14 J and 23.3 J: 700 stays best for energy.
    assert _replay(hand_db, "proportional", "energy").settings == [700, 700, 700]


def test_offline_policies_by_hand(hand_db):
    con = gpudb.connect(hand_db, read_only=True)
    [kernel] = load_outcomes(con)
    con.close()
    dynamic = POLICIES["dynamic_optimal"](kernel, "energy", 0.01)
    assert dynamic.settings == [500, 300, 500] and dynamic.energy_j == 8 + 7 + 8
    static = POLICIES["static_optimal"](kernel, "energy", 0.01)
    # totals: 700 (30 ns, 30 J), 500 (36 ns, 27 J), 300 (52 ns, 31 J)
    assert static.settings == [500] * 3 and static.energy_j == 27
    assert POLICIES["static_optimal"](kernel, "edp", 0.01).settings == [700] * 3
    # energy within 1% of the fastest time: only 700 qualifies for the whole run
    assert POLICIES["static_optimal"](kernel, "energy_perf", 0.01).settings == [700] * 3


@pytest.mark.parametrize("objective, weight", [("energy", 0), ("edp", 1), ("ed2p", 2)])
def test_dynamic_optimal_is_the_exact_optimum(hand_db, objective, weight):
    con = gpudb.connect(hand_db, read_only=True)
    [kernel] = load_outcomes(con)
    con.close()
    best = min(
        sum(OUTCOMES[s][i][1] for i, s in enumerate(path))
        * sum(OUTCOMES[s][i][0] for i, s in enumerate(path)) ** weight
        for path in itertools.product(OUTCOMES, repeat=3))
    dynamic = POLICIES["dynamic_optimal"](kernel, objective, 0.01)
    assert dynamic.energy_j * dynamic.time_ns ** weight == pytest.approx(best)


def test_dynamic_optimal_is_memoised_on_the_outcomes_contents(hand_db):
    """A second call with the same outcomes returns the same schedule (from the cache) as a
    copy its caller may change; other energies are another key and another schedule."""
    from dataclasses import replace

    con = gpudb.connect(hand_db, read_only=True)
    [kernel] = load_outcomes(con)
    con.close()
    first = POLICIES["dynamic_optimal"](kernel, "energy", 0.01)
    first.settings.append(0.0)
    again = POLICIES["dynamic_optimal"](kernel, "energy", 0.01)
    assert again.settings == [500, 300, 500] and again.energy_j == 8 + 7 + 8
    # the same kernel with 300 MHz made dear: the schedule leaves it
    dear = kernel.energy_j.copy()
    dear[0, :] += 100.0
    other = POLICIES["dynamic_optimal"](replace(kernel, energy_j=dear), "energy", 0.01)
    assert 300 not in other.settings


def test_dynamic_optimal_is_never_worse_and_static_is_the_best_fixed_run(hand_db):
    con = gpudb.connect(hand_db)
    evaluate(con, ["proportional", "oracle"], ["energy", "edp", "ed2p", "energy_perf"])
    rows = con.execute("SELECT policy, predictor, objective, time_ns, energy_j "
                       "FROM control_result WHERE energy_scope = 'run'").fetchall()
    fixed = con.execute("SELECT time_ns, energy_j FROM run").fetchall()
    con.close()
    weight = {"energy": 0, "energy_perf": 0, "edp": 1, "ed2p": 2}
    for objective, w in weight.items():
        got = {(p, pr): e * t ** w for p, pr, o, t, e in rows if o == objective}
        dynamic = got[("dynamic_optimal", "")]
        if objective != "energy_perf":  # energy_perf also bounds time; compared below
            assert all(dynamic <= v + 1e-9 for v in got.values()), objective
            assert got[("static_optimal", "")] == pytest.approx(
                min(e * t ** w for t, e in fixed))
    # energy_perf: the least energy of the policies that keep within 1% of the top's time
    within = [e for p, pr, o, t, e in rows if o == "energy_perf" and t <= 1.01 * 30]
    dyn = [e for p, pr, o, t, e in rows if o == "energy_perf" and p == "dynamic_optimal"]
    assert dyn[0] <= min(within) + 1e-9


def test_savings_queries_on_the_fixture(hand_db):
    con = gpudb.connect(hand_db)
    evaluate(con, ["oracle"], ["energy"])
    columns, rows = run_query(con, "savings", {"objective": "energy"})
    summary_cols, summary = run_query(con, "savings_summary", {"objective": "energy"})
    frac_cols, fractions = run_query(con, "fraction_of_potential", {"objective": "energy"})
    con.close()
    by = {(r[columns.index("policy")], r[columns.index("predictor")],
           r[columns.index("guard")]): dict(zip(columns, r, strict=True)) for r in rows}
    # baseline: 700 throughout, 30 ns and 30 J; dynamic optimal 23 J in 34 ns
    dyn = by[("dynamic_optimal", "", "")]
    assert dyn["energy_saving_pct"] == pytest.approx(100 * (1 - 23 / 30))
    assert dyn["time_change_pct"] == pytest.approx(100 * (34 / 30 - 1))
    paper = by[("replay", "oracle", "paper")]
    assert paper["energy_saving_pct"] == pytest.approx(100 * (1 - 33 / 30))
    assert by[("replay", "oracle", "guarded")]["energy_saving_pct"] == pytest.approx(
        100 * (1 - 31 / 30))
    at = {c: i for i, c in enumerate(frac_cols)}
    overall = {(r[at["policy"]], r[at["predictor"]], r[at["guard"]]): r[at["fraction_realised"]]
               for r in fractions if r[at["kernel_id"]] is None}
    assert overall[("dynamic_optimal", "", "")] == pytest.approx(1.0)
    assert overall[("replay", "oracle", "paper")] == pytest.approx((1 - 33 / 30) / (1 - 23 / 30))
    summary_at = {c: i for i, c in enumerate(summary_cols)}
    worst = {(r[summary_at["policy"]], r[summary_at["predictor"]], r[summary_at["guard"]]):
             r[summary_at["worst_edp_saving_pct"]] for r in summary
             if r[summary_at["category"]] == "all"}
    # EDP of the guarded oracle: 31 J x 34 ns against 30 J x 30 ns
    assert worst[("replay", "oracle", "guarded")] == pytest.approx(100 * (1 - 31 * 34 / 900))
    assert {r[summary_at["category"]] for r in summary} == {"memory", "all"}


def test_energy_model_by_hand():
    # 2 J dynamic, 1 J static, 0.5 J DRAM dynamic, 0.5 J background+board, 10 ns at 1.0 V;
    # at 0.8 V taking 20 ns: 2 x 0.64 + 1 x 0.8 x 2 + 0.5 + 0.5 x 2 = 4.38 J
    assert predict_energy(2, 1, 0.5, 0.25, 0.25, 10, 1.0, 20, 0.8) == pytest.approx(4.38)
    assert np.allclose(predict_energy(2, 1, 0.5, 0.25, 0.25, 10, 1.0, np.array([10, 20]),
                                      np.array([1.0, 0.8])), [4.0, 4.38])


SUITE = """
name = "ctltiny"
description = "two synthetic kernels for control tests"
[[kernel]]
name = "mixed"
category = "memory"
description = "synthetic loads feeding ALU chains"
ctas = 30
warps_per_cta = 4
[[kernel.phase]]
iterations = 40
body = [{op = "ld", id = "a", trans = 2, l1_hit = 0.2, l2_hit = 0.3},
        {op = "alu", n = 3, dep = "a"}, {op = "st", trans = 1}]

""" + TWOPHASE_KERNEL


@pytest.fixture(scope="module")
def sim_db(tmp_path_factory):
    """Two tiny synthetic kernels swept over every gtx480 core P-state, closed-loop runs of
    the papers' CRISP controller and of gpudb's guarded one, and every replay."""
    from gpudb.control.kinds.predictor import run_closed_loop
    from gpudb.simulate.sweep import sweep

    tmp = tmp_path_factory.mktemp("control")
    suite = tmp / "ctltiny.toml"
    suite.write_text(SUITE)
    db = tmp / "sim.duckdb"
    sweep(db, "gtx480", suite, mem_mhz=[924], interval_instructions=2000, jobs=1)
    run_closed_loop(db, "gtx480", suite, None, "crisp", "edp", interval_instructions=2000,
                    guard=PAPER)
    run_closed_loop(db, "gtx480", suite, None, "crisp_gpudb", "edp",
                    interval_instructions=2000, guard=GUARDED)
    con = gpudb.connect(db)
    evaluate(con, ["crisp", "crisp_gpudb"], ["edp"], suite="ctltiny")
    con.close()
    return db


def test_closed_loop_controller_predicts_as_the_prediction_view(sim_db):
    from gpudb.control.kinds.predictor import predict_times
    from gpudb.control.sample import run_columns
    from gpudb.predictors import names as predictor_names
    from sim.config import load_gpu

    gpu = load_gpu("gtx480")
    con = gpudb.connect(sim_db, read_only=True)
    row_cur = con.execute("SELECT i.* FROM interval AS i JOIN run AS r USING (run_id) "
                          "WHERE r.policy = 'fixed' AND r.core_mhz = 500 AND i.idx = 2 "
                          "AND r.kernel_id = 'ctltiny/mixed'")
    names = [d[0] for d in row_cur.description]
    row = dict(zip(names, row_cur.fetchall()[0], strict=True))
    targets = np.array(gpu.core_mhz)
    for predictor in predictor_names(replayable=True):
        expected = [r[0] for r in con.execute(
            "SELECT predicted_ns FROM prediction WHERE run_id = ? AND granularity = 'interval' "
            "AND sample_idx = 2 AND predictor = ? ORDER BY target_core_mhz",
            [row["run_id"], predictor]).fetchall()]
        got = predict_times(predictor, row, targets, run_columns(gpu.raw, gpu.nominal_mem_mhz))
        assert np.allclose(got, expected, rtol=1e-9), predictor
    con.close()


def test_sample_columns_in_python_are_the_view_s_to_the_bit(sim_db):
    # gpudb.control.sample evaluates the sample view's own SQL expressions: every column of
    # every interval equals the view's exactly (the closed loop's predictor inputs).
    import json

    from gpudb.control.sample import run_columns, sample_columns

    con = gpudb.connect(sim_db, read_only=True)
    cur = con.execute("SELECT i.* FROM interval AS i ORDER BY i.run_id, i.idx")
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    view_cur = con.execute("SELECT * FROM sample WHERE granularity = 'interval' "
                           "ORDER BY run_id, sample_idx")
    view_names = [d[0] for d in view_cur.description]
    view = [dict(zip(view_names, r, strict=True)) for r in view_cur.fetchall()]
    config, nominal = con.execute("SELECT config, nominal_mem_mhz FROM gpu "
                                  "WHERE gpu_id = 'gtx480'").fetchone()
    con.close()
    run = run_columns(json.loads(config), nominal)
    # gtx480's unloaded L1-miss-to-DRAM latency (fixtures/gpus/gtx480.toml): L2 path 220 ns,
    # DRAM 60 ns and 160 memory cycles at the nominal 924 MHz
    assert run == {"miss_latency_ns": 220.0 + 60.0 + 160.0 * 1000.0 / 924.0}
    assert len(rows) == len(view) > 100
    for row, expected in zip(rows, view, strict=True):
        got = sample_columns(row, run)
        # the run's own columns (kernel_id, seed, ...) are not the interval's
        assert {k for k, v in got.items() if v is None} <= {
            "run_id", "experiment_id", "source", "policy", "kernel_id", "gpu_id",
            "interval_instructions", "n_sm", "seed"}
        computed = {k: v for k, v in got.items() if v is not None}
        assert len(computed) >= 20 and "memory_min_ns" in computed and "miss_ns" in computed
        assert computed == {k: expected[k] for k in computed}, row["run_id"]


def _closed_loop_settings(con, predictor, objective, guard, scope) -> dict[str, list[float]]:
    """Per kernel, the core MHz the closed loop's controller (PredictorController: the sample
    columns, the predictor's formula, the energy model and the guard's step) sets when every
    interval it sees is the fixed run's at the setting in force, which is replay's premise;
    the oracle's predictions are the fixed runs' outcomes."""
    from gpudb.control.guard import GuardState, decide
    from gpudb.control.kinds.predictor import PredictorController
    from sim.config import load_gpu
    from sim.model import Setting

    gpu = load_gpu("gtx480")
    cur = con.execute(
        "SELECT c.kernel_id, i.* FROM interval AS i JOIN control_interval AS c "
        "USING (run_id, idx) ORDER BY c.kernel_id, i.core_mhz, i.idx")
    names = [d[0] for d in cur.description]
    rows: dict[str, dict[tuple[float, int], dict]] = {}
    for values in cur.fetchall():
        row = dict(zip(names, values, strict=True))
        rows.setdefault(row["kernel_id"], {})[(row["core_mhz"], row["idx"])] = row
    out = {}
    for kernel, by_setting in rows.items():
        mhz = np.array(gpu.core_mhz, dtype=float)
        n = len(by_setting) // len(mhz)
        settings = [float(mhz[-1])]
        if predictor == "oracle":
            outcomes = next(k for k in load_outcomes(con) if k.kernel_id == kernel)
            if scope == "chip":
                outcomes = in_scope(outcomes, "chip")
            state = GuardState(top=len(mhz) - 1)
            for i in range(n - 1):
                c = state.cur
                row = by_setting[(settings[-1], i)]
                parts = [row[p] for p in ("core_static_j", "dram_static_j", "other_j")]
                if scope == "chip":
                    parts[2] = 0.0
                switch_j = ((parts[0] * np.array(gpu.core_v) / gpu.core_v[c] + parts[1]
                             + parts[2]) / outcomes.time_ns[c, i] * gpu.switch_ns)
                nxt = decide(state, guard, objective, 0.01, i, outcomes.time_ns[c, i],
                             outcomes.energy_j[c, i], outcomes.time_ns[:, i],
                             outcomes.energy_j[:, i], gpu.switch_ns, switch_j)
                settings.append(float(mhz[nxt]))
        else:
            controller = PredictorController(gpu, predictor, objective, 1.0, guard, scope)
            for i in range(n - 1):
                nxt = controller.decide(i, by_setting[(settings[-1], i)],
                                        Setting(settings[-1], 924.0, None))
                settings.append(nxt.core_mhz)
        out[kernel] = settings
    return out


def test_a_replay_reads_its_predictors_view_with_the_prediction_views_rows(sim_db):
    # controller_replay.sql reads the predictor's own view pred_<name> (query_table, by the
    # parameter): every row of every replayable predictor and the oracle is the one the
    # query reading view prediction has (the energy scope does not touch the join: the
    # chip's, the demo's)
    import re

    from gpudb.control.guard import guard_params
    from gpudb.control.results import REPLAY_PREDICTORS
    from gpudb.store.queries import get_query

    own = re.compile(r"JOIN query_table\('pred_' \|\| [^\n]*\n\s*AS p")
    con = gpudb.connect(sim_db, read_only=True)
    try:
        for predictor in REPLAY_PREDICTORS:
            sql, params = get_query("controller_replay").bind({
                "predictor": predictor, "objective": "edp", "scope": "chip",
                **guard_params(GUARDED)})
            assert len(own.findall(sql)) == 1
            rows = [con.execute(f"SELECT * FROM ({q.rstrip().rstrip(';')}) ORDER BY ALL",
                                params).fetchall()
                    for q in (sql, own.sub("JOIN prediction AS p", sql))]
            assert len(rows[0]) > 0 and rows[0] == rows[1], predictor
    finally:
        con.close()


@pytest.mark.parametrize("guard", [PAPER, GUARDED, Guard(verify_stay=True)],
                         ids=lambda g: g.name)
def test_sql_replay_chooses_as_the_shared_python_step(sim_db, guard, tmp_path):
    # Trace replay (controller_replay.sql, its inputs gathered in SQL from the sample and
    # prediction views) chooses at every interval what the closed loop's controller chooses
    # from the same interval's counters (gpudb.control.kinds.predictor, its inputs computed in
    # Python), for every predictor and objective: replay and closed loop share one step.
    from gpudb.control.offline import replayed, with_scopes
    from gpudb.control.results import REPLAY_PREDICTORS

    db = tmp_path / "sim.duckdb"
    shutil.copy(sim_db, db)
    con = gpudb.connect(db)
    stay_differs = 0
    try:
        outcomes = {k.kernel_id: k for k in load_outcomes(con)}
        for objective, scope in itertools.product(("edp", "ed2p", "energy", "energy_perf"),
                                                  ("run", "chip")):
            # the chip scope changes only the energy the step sees: three predictors suffice;
            # verify_stay adds one branch to the step (a departed stay): the predictors whose
            # stays depart here (miss on ctltiny/mixed) and two that stay put suffice for it,
            # which keeps the suite's time (all twelve took 23 s)
            few = ("oracle", "crisp", "crisp_gpudb") + (("miss",) if guard.verify_stay else ())
            for predictor in (REPLAY_PREDICTORS if scope == "run" and not guard.verify_stay
                              else few):
                sql = {r.kernel_id: r for r in _stored_replay(con, predictor, objective, guard,
                                                              scope)}
                py = _closed_loop_settings(con, predictor, objective, guard, scope)
                assert sql.keys() == py.keys() == {"ctltiny/mixed", "ctltiny/twophase"}
                for kernel, result in sql.items():
                    assert result.settings == py[kernel], (objective, predictor, scope)
                    k = outcomes[kernel]
                    index = {float(m): s for s, m in enumerate(k.mhz)}
                    totals = with_scopes(k, replayed(in_scope(k, scope), "replay",
                                                     [index[m] for m in py[kernel]]),
                                         pay_switch=True)
                    assert result.time_ns == pytest.approx(totals.time_ns)
                    assert result.energy_j == pytest.approx(totals.energy_j)
                    assert result.chip_energy_j == pytest.approx(totals.chip_energy_j)
                if guard.verify_stay:
                    without = _closed_loop_settings(con, predictor, objective, GUARDED, scope)
                    stay_differs += sum(without[k] != py[k] for k in py)
    finally:
        con.close()
    # the check of stays did act somewhere here (miss, energy, ctltiny/mixed)
    assert stay_differs >= 1 or not guard.verify_stay


def test_replay_and_closed_loop_are_compared(sim_db):
    con = gpudb.connect(sim_db, read_only=True)
    columns, rows = run_query(con, "replay_vs_closed_loop", {})
    controllers = set(con.execute(
        "SELECT policy, predictor, objective, max_loss_pct, guard FROM run "
        "WHERE policy <> 'fixed'").fetchall())
    con.close()
    assert controllers == {("closed_loop", "crisp", "edp", None, "paper"),
                           ("closed_loop", "crisp_gpudb", "edp", None, "guarded")}
    got = {(r[columns.index("kernel_id")], r[columns.index("predictor")],
            r[columns.index("guard")]): dict(zip(columns, r, strict=True)) for r in rows}
    assert set(got) == {(k, p, g) for k in ("ctltiny/mixed", "ctltiny/twophase")
                        for p, g in (("crisp", "paper"), ("crisp_gpudb", "guarded"))}
    for row in got.values():
        # both ran the same kernel from the same start under the same controller
        assert abs(row["time_diff_pct"]) < 25 and abs(row["energy_diff_pct"]) < 25
        assert row["edp_diff_pct"] == pytest.approx(
            100 * ((1 + row["time_diff_pct"] / 100) * (1 + row["energy_diff_pct"] / 100) - 1))


def test_clock_trace_is_each_policy_s_settings_with_their_outcomes(sim_db):
    con = gpudb.connect(sim_db, read_only=True)
    columns, rows = run_query(con, "clock_trace", {"kernel_id": "ctltiny/twophase"})
    stored = con.execute("SELECT policy, predictor, guard, settings FROM control_result "
                         "WHERE kernel_id = 'ctltiny/twophase' AND objective = 'edp' "
                         "AND energy_scope = 'run'").fetchall()
    outcome = {(r[0], r[1]): r[2] for r in con.execute(
        "SELECT core_mhz, idx, time_ns FROM control_interval "
        "WHERE kernel_id = 'ctltiny/twophase'").fetchall()}
    con.close()
    at = {c: i for i, c in enumerate(columns)}
    traces: dict[tuple, list] = {}
    for r in rows:
        key = (r[at["policy"]], r[at["predictor"]], r[at["guard"]])
        traces.setdefault(key, []).append(r)
        assert r[at["time_ns"]] == outcome[(r[at["core_mhz"]], r[at["idx"]])]
    assert len(stored) == 3 + 2 * 2   # offline policies, two predictors x two guards
    for policy, predictor, guard, settings in stored:
        trace = traces[(policy, predictor, guard)]
        assert [r[at["core_mhz"]] for r in trace] == settings
        assert [r[at["idx"]] for r in trace] == list(range(len(settings)))
        assert [r[at["switched"]] for r in trace] == [False] + [
            a != b for a, b in itertools.pairwise(settings)]


def test_workload_class_shares_by_hand(sim_db):
    con = gpudb.connect(sim_db, read_only=True)
    columns, rows = run_query(con, "workload_class", {"suite": "ctltiny"})
    intervals = con.execute("""
        SELECT r.kernel_id, r.core_mhz, r.time_ns, i.cycles, i.crisp_load_stall_cycles,
               i.crisp_store_stall_cycles, i.load_outstanding_cycles, i.crit_path_cycles
        FROM run AS r JOIN interval AS i USING (run_id) WHERE r.policy = 'fixed'""").fetchall()
    con.close()
    at = {c: i for i, c in enumerate(columns)}
    kernels = {r[at["kernel_id"]]: r for r in rows if r[at["kernel_id"]]}
    assert set(kernels) == {"ctltiny/mixed", "ctltiny/twophase"}
    for kernel, row in kernels.items():
        top = [i for i in intervals if i[0] == kernel and i[1] == 700]
        cycles = sum(i[3] for i in top)
        computation = 1 - sum(i[4] + i[5] for i in top) / cycles
        assert row[at["computation_share"]] == pytest.approx(computation)
        assert row[at["load_outstanding_share"]] == pytest.approx(sum(i[6] for i in top) / cycles)
        assert row[at["crit_share"]] == pytest.approx(sum(i[7] for i in top) / cycles)
        assert row[at["paper_000_class"]] == (
            "compute-bound" if computation >= 0.75 else "memory-bound")
        assert row[at["intervals"]] == len(top)
        slow = [i[2] for i in intervals if i[0] == kernel and i[1] == 100][0]
        fast = [i[2] for i in intervals if i[0] == kernel and i[1] == 700][0]
        assert row[at["slowdown_top_to_low"]] == pytest.approx(slow / fast)
    [overall] = [r for r in rows if r[at["kernel_id"]] is None
                 and r[at["category"]] == "all" and r[at["paper_000_class"]] == "all"]
    assert overall[at["kernels"]] == 2
    assert overall[at["computation_share"]] == pytest.approx(
        sum(r[at["computation_share"]] for r in kernels.values()) / 2)
    counts = sorted(len([i for i in intervals if i[0] == k and i[1] == 700]) for k in kernels)
    con = gpudb.connect(sim_db, read_only=True)
    [(size,)] = con.execute("SELECT DISTINCT interval_instructions FROM run WHERE kernel_id "
                            "LIKE 'ctltiny/%' AND core_mhz = 700").fetchall()
    line = length_line(con, "gtx480", "ctltiny")
    con.close()
    assert line == (f"kernel length at the highest core P-state: {counts[0]}-{counts[1]} "
                    f"intervals (median {sum(counts) / 2:g}) of {size:,} warp instructions, "
                    "2 kernels")


def test_runs_without_the_slot_counters_ask_for_a_new_sweep(hand_db, sim_db):
    # hand_db's runs look like ones simulated before schema/0004 (slot counters NULL): the
    # demo and evaluate commands sweep again rather than evaluate gpudb's CRISP on NULLs
    from gpudb.analysis.evaluate import missing_sweep

    for db, gpu, suite, missing in ((hand_db, "hand", "hand", True),
                                    (sim_db, "gtx480", "ctltiny", False),
                                    (sim_db, "gtx980", "ctltiny", True)):
        con = gpudb.connect(db, read_only=True)
        assert missing_sweep(con, gpu, suite) is missing, (gpu, suite)
        con.close()


def test_controller_kinds_share_one_runner_that_skips_stored_runs(sim_db, tmp_path):
    # The registry finds each kind's module; the runner plans the same runs again and,
    # finding them stored, simulates and writes nothing.
    from gpudb.control.kinds import get, names
    from gpudb.control.kinds.predictor import run_closed_loop

    assert names() == ("equalizer", "predictor")
    with pytest.raises(ValueError, match="known: equalizer, predictor"):
        get("pid")
    db = tmp_path / "sim.duckdb"
    shutil.copy(sim_db, db)
    con = gpudb.connect(db, read_only=True)
    before = con.execute("SELECT kernel_id, run_id, time_ns, energy_j FROM run "
                         "WHERE predictor = 'crisp' ORDER BY kernel_id").fetchall()
    count = con.execute("SELECT count(*) FROM run").fetchone()
    con.close()
    rows = run_closed_loop(db, "gtx480", sim_db.parent / "ctltiny.toml", None, "crisp",
                           "edp", interval_instructions=2000, guard=PAPER)
    assert [r["added"] for r in rows] == [False, False]
    assert sorted((r["kernel_id"], r["run_id"], r["time_ns"], r["energy_j"])
                  for r in rows) == before
    con = gpudb.connect(db, read_only=True)
    assert con.execute("SELECT count(*) FROM run").fetchone() == count
    con.close()


KIND_MODULE = '''
"""A controller kind for a test: hold the highest core P-state (policy 'hold_top')."""
from gpudb.control.kinds import ControllerKind, Job


class Hold:
    name = "hold_top"
    run_key = "hold_top"

    def decide(self, idx, row, setting):
        return setting


def plan(gpu, kernels):
    return [Job(k, max(gpu.core_mhz), gpu.nominal_mem_mhz, "hold_top", lambda _sim: Hold(),
                {"variant": "test"}, interval_instructions=2000) for k in kernels]


KIND = ControllerKind("hold_top", "hold the highest P-state", "none (a test)", plan,
                      lambda gpu, suite: (f"hold-{suite.name}", "a test kind"))
'''


def test_a_new_controller_kind_is_one_module(tmp_path, monkeypatch):
    # A module declaring KIND in the kinds package is all a controller kind needs: the
    # registry finds it and the runner simulates and stores its runs. Holding the top setting
    # reproduces the fixed run there, exactly.
    import gpudb.control.kinds as kinds
    from gpudb.control.runner import run
    from gpudb.simulate.sweep import sweep

    folder = tmp_path / "kinds"
    folder.mkdir()
    (folder / "hold_top.py").write_text(KIND_MODULE)
    monkeypatch.setattr(kinds, "__path__", [*kinds.__path__, str(folder)])
    kinds.registry.cache_clear()
    try:
        assert kinds.names() == ("equalizer", "hold_top", "predictor")
        suite = tmp_path / "ctltiny.toml"
        suite.write_text(SUITE)
        db = tmp_path / "k.duckdb"
        sweep(db, "gtx480", suite, core_mhz=[700], mem_mhz=[924], kernels=["twophase"],
              interval_instructions=2000, jobs=1)
        [row] = run(db, "hold_top", "gtx480", suite, ["twophase"])
        assert row["added"]
        assert run(db, "hold_top", "gtx480", suite, ["twophase"])[0]["added"] is False
        con = gpudb.connect(db, read_only=True)
        stored = con.execute("SELECT policy, variant, time_ns, energy_j FROM run "
                             "WHERE run_id = ?", [row["run_id"]]).fetchone()
        fixed = con.execute("SELECT time_ns, energy_j FROM run WHERE policy = 'fixed'").fetchone()
        experiment = con.execute("SELECT e.name FROM run JOIN experiment AS e "
                                 "USING (experiment_id) WHERE run_id = ?",
                                 [row["run_id"]]).fetchone()
        con.close()
        assert stored == ("hold_top", "test", *fixed)
        assert experiment == ("hold-ctltiny",)
    finally:
        kinds.registry.cache_clear()
