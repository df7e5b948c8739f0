"""Stored queries checked against values computed by hand, on one small database built here:
the tiny measured dataset (conftest.TINY_CSV) and a hand-made simulated-looking GPU 'hq' with
two core P-states and two kernels of two intervals each (synthetic numbers, not simulator
output), with its control policies replayed into control_result."""

from __future__ import annotations

import pytest
from conftest import TINY_CSV, TINY_MAPPING, tiny_pair

import gpudb
from gpudb.control.guard import PAPER
from gpudb.control.results import evaluate
from gpudb.sources.tabular.ingest import ingest
from gpudb.sources.tabular.mapping import load_mapping
from gpudb.store.db import GpudbError
from gpudb.store.queries import run_query

# (time ns, energy J) of intervals 0 and 1 at each core MHz. All energy is board energy
# (other_j), so switching for 1 ns costs the interval's energy per ns at the new setting.
# Kernel a gains from 400 MHz in interval 0 only; kernel b (compute) never gains.
OUTCOMES = {
    "a": {800: [(10, 10), (10, 10)], 400: [(12, 6), (20, 12)]},
    "b": {800: [(10, 10), (10, 10)], 400: [(20, 11), (20, 11)]},
}
CATEGORY = {"a": "memory", "b": "compute"}


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """A read-only connection to the database described above."""
    tmp = tmp_path_factory.mktemp("query_values")
    (tmp / "tiny.csv").write_text(TINY_CSV)
    (tmp / "tiny.toml").write_text(TINY_MAPPING)
    path = tmp / "values.duckdb"
    con = gpudb.connect(path)
    ingest(con, [tmp / "tiny.csv"], load_mapping(tmp / "tiny.toml"))
    con.execute("""
        INSERT INTO gpu VALUES ('hq', 'hand-made GPU', 1, 48, 8, 800, 924,
            '{"core": {"switch_ns": 1}, "memory": {"l2_latency_ns": 200,
              "dram_latency_ns": 50, "dram_latency_mem_cycles": 92.4}}');
        INSERT INTO pstate VALUES ('hq', 'mem', 924, NULL), ('hq', 'core', 400, 0.8),
                                  ('hq', 'core', 800, 1.0);
        INSERT INTO experiment VALUES ('e', 'e', NULL, now(), NULL, NULL, NULL, NULL);
    """)
    for kernel, by_mhz in OUTCOMES.items():
        con.execute("INSERT INTO kernel VALUES (?, ?, 'hq', ?, 'hand-made (synthetic)', NULL)",
                    [f"hq/{kernel}", kernel, CATEGORY[kernel]])
        for mhz, rows in by_mhz.items():
            run_id = f"hq-{kernel}-{mhz}"
            con.execute(
                "INSERT INTO run (run_id, experiment_id, source, kernel_id, gpu_id, policy, "
                "core_mhz, mem_mhz, n_sm, ctas_per_sm, interval_instructions, seed, time_ns, "
                "energy_j, instructions, created_at) VALUES (?, 'e', 'sim', ?, 'hq', 'fixed', "
                "?, 924, 1, 8, 100, 0, ?, ?, 200, now())",
                [run_id, f"hq/{kernel}", mhz, sum(t for t, _ in rows), sum(e for _, e in rows)])
            for idx, (t, e) in enumerate(rows):
                con.execute(
                    "INSERT INTO interval (run_id, idx, core_mhz, mem_mhz, ctas_per_sm, "
                    "start_ns, time_ns, cycles, instructions, core_dynamic_j, core_static_j, "
                    "dram_dynamic_j, dram_static_j, other_j) "
                    "VALUES (?, ?, ?, 924, 8, 0, ?, ?, 100, 0, 0, 0, 0, ?)",
                    [run_id, idx, mhz, t, t * mhz / 1000, e])
    evaluate(con, ["oracle"], ["edp"], guards=(PAPER,))
    con.close()
    con = gpudb.connect(path, read_only=True)
    yield con
    con.close()


def query(con, name, **params) -> list[dict]:
    columns, rows = run_query(con, name, params)
    return [dict(zip(columns, r, strict=True)) for r in rows]


def policy_key(r: dict) -> str:
    """'dynamic_optimal', ... or 'replay <predictor> <guard>'."""
    return r["policy"] if r["policy"] != "replay" else f"replay {r['predictor']} {r['guard']}"


def by_policy(rows, **where) -> dict[str, dict]:
    """Rows matching `where`, keyed by policy_key."""
    return {policy_key(r): r for r in rows if all(r[k] == v for k, v in where.items())}


# Kernel a by hand, EDP objective (baseline: 800 MHz throughout, 20 ns and 20 J, EDP 400):
# - dynamic optimal over the 4 schedules (no switching cost): 800,800: 20 x 20 = 400;
#   400,800: 16 J x 22 ns = 352; 800,400: 22 x 30 = 660; 400,400: 18 x 32 = 576 -> 400,800
# - oracle replay (papers' controller): interval 0 at 800; its EDP is 100 at 800 and
#   6 x 12 = 72 at 400, so interval 1 runs at 400: 20 ns + 1 ns switch, 12 J + 12/20 J x 1 ns
#   -> 31 ns, 22.6 J; perfect memoryless decides the same way
# - static optimal: 800 (400 against 576)
# Kernel b: 800 is best for every policy (EDP 220 at 400 in either interval): no change.
A_DYNAMIC = (22.0, 16.0)
A_REPLAY = (31.0, 22.6)


def test_savings_per_kernel_and_policy_by_hand(db):
    rows = query(db, "savings", objective="edp", gpu_id="hq")
    a = by_policy(rows, kernel_id="hq/a")
    assert set(a) == {"dynamic_optimal", "static_optimal", "perfect_memoryless",
                      "replay oracle paper"}
    dyn = a["dynamic_optimal"]
    assert (dyn["time_ns"], dyn["energy_j"], dyn["switches"]) == (*A_DYNAMIC, 1)
    assert dyn["category"] == "memory"
    assert dyn["edp_j_s"] == pytest.approx(16 * 22e-9)
    assert dyn["ed2p_j_s2"] == pytest.approx(16 * 22e-9 ** 2)
    assert dyn["time_change_pct"] == pytest.approx(10.0)
    assert dyn["energy_saving_pct"] == pytest.approx(20.0)
    assert dyn["edp_saving_pct"] == pytest.approx(12.0)
    assert dyn["ed2p_saving_pct"] == pytest.approx(100 * (1 - 16 * 22 ** 2 / (20 * 20 ** 2)))
    for name in ("replay oracle paper", "perfect_memoryless"):
        r = a[name]
        assert (r["time_ns"], r["energy_j"], r["switches"]) == (
            pytest.approx(A_REPLAY[0]), pytest.approx(A_REPLAY[1]), 1), name
        assert r["time_change_pct"] == pytest.approx(55.0)
        assert r["energy_saving_pct"] == pytest.approx(-13.0)
        assert r["edp_saving_pct"] == pytest.approx(100 * (1 - 31 * 22.6 / 400))
    static = a["static_optimal"]
    assert (static["time_ns"], static["energy_j"], static["switches"]) == (20, 20, 0)
    assert static["edp_saving_pct"] == 0
    b = by_policy(rows, kernel_id="hq/b")
    assert len(b) == 4
    assert all((r["time_ns"], r["energy_j"], r["edp_saving_pct"]) == (20, 20, 0)
               for r in b.values())
    # the filters: another objective has no rows; the guard keeps the offline policies
    assert query(db, "savings", objective="energy", gpu_id="hq") == []
    assert {r["policy"] for r in query(db, "savings", guard="guarded", gpu_id="hq")} == {
        "dynamic_optimal", "static_optimal", "perfect_memoryless"}
    assert query(db, "savings", suite="hq", gpu_id="hq") == rows


def test_savings_summary_per_category_and_overall_by_hand(db):
    rows = query(db, "savings_summary", objective="edp", gpu_id="hq")
    overall = by_policy(rows, category="all")
    dyn = overall["dynamic_optimal"]
    assert dyn["kernels"] == 2
    assert dyn["edp_saving_pct"] == pytest.approx((12 + 0) / 2)
    assert dyn["time_change_pct"] == pytest.approx((10 + 0) / 2)
    assert dyn["energy_saving_pct"] == pytest.approx((20 + 0) / 2)
    assert dyn["worst_edp_saving_pct"] == pytest.approx(0.0)      # kernel b's
    assert dyn["worst_time_change_pct"] == pytest.approx(10.0)    # kernel a's
    assert dyn["switches"] == pytest.approx(0.5)
    replay = overall["replay oracle paper"]
    a_edp = 100 * (1 - 31 * 22.6 / 400)
    assert replay["edp_saving_pct"] == pytest.approx(a_edp / 2)
    assert replay["worst_edp_saving_pct"] == pytest.approx(a_edp)
    assert replay["worst_time_change_pct"] == pytest.approx(55.0)
    assert overall["static_optimal"]["edp_saving_pct"] == 0
    memory = by_policy(rows, category="memory")["dynamic_optimal"]
    assert memory["kernels"] == 1 and memory["edp_saving_pct"] == pytest.approx(12.0)
    compute = by_policy(rows, category="compute")["dynamic_optimal"]
    assert compute["kernels"] == 1 and compute["edp_saving_pct"] == 0
    assert {r["category"] for r in rows} == {"memory", "compute", "all"}


def test_fraction_of_potential_by_hand_and_null_without_potential(db):
    rows = query(db, "fraction_of_potential", objective="edp", gpu_id="hq")
    a = by_policy(rows, kernel_id="hq/a")
    assert a["dynamic_optimal"]["fraction_realised"] == pytest.approx(1.0)
    assert a["static_optimal"]["fraction_realised"] == 0
    replay_saving = 1 - 31 * 22.6 / 400
    assert a["replay oracle paper"]["fraction_realised"] == pytest.approx(replay_saving / 0.12)
    assert a["replay oracle paper"]["potential_pct"] == pytest.approx(12.0)
    # kernel b has nothing to gain: no fraction rather than a division by zero
    b = by_policy(rows, kernel_id="hq/b")
    assert len(b) == 4 and all(r["fraction_realised"] is None for r in b.values())
    # overall: total realised over total potential, and the mean potential over both kernels
    overall = by_policy(rows, kernel_id=None)
    assert overall["replay oracle paper"]["fraction_realised"] == pytest.approx(
        (replay_saving + 0) / (0.12 + 0))
    assert overall["replay oracle paper"]["potential_pct"] == pytest.approx(6.0)
    assert overall["dynamic_optimal"]["fraction_realised"] == pytest.approx(1.0)


def test_clock_trace_by_hand(db):
    rows = query(db, "clock_trace", kernel_id="hq/a")
    trace = {}
    for r in rows:
        trace.setdefault(policy_key(r), []).append(
            (r["idx"], r["core_mhz"], r["switched"], r["time_ns"], r["energy_j"]))
    # each interval's own outcome at the clock in force, without the switch's 1 ns
    assert trace == {
        "dynamic_optimal": [(0, 400, False, 12, 6), (1, 800, True, 10, 10)],
        "static_optimal": [(0, 800, False, 10, 10), (1, 800, False, 10, 10)],
        "perfect_memoryless": [(0, 800, False, 10, 10), (1, 400, True, 20, 12)],
        "replay oracle paper": [(0, 800, False, 10, 10), (1, 400, True, 20, 12)],
    }
    # -p predictor keeps that predictor's replays and the offline policies
    assert {r["policy"] for r in query(db, "clock_trace", kernel_id="hq/a",
                                       predictor="crisp")} == {
        "dynamic_optimal", "static_optimal", "perfect_memoryless"}
    assert query(db, "clock_trace", kernel_id="hq/a", objective="energy") == []
    assert len(query(db, "clock_trace", gpu_id="hq")) == 2 * 4 * 2  # kernels x policies x idx


def test_static_optimal_run_by_hand(db):
    # hq, least energy: kernel a at 400 MHz, 18 J in 32 ns against 20 J in 20 ns: 10% less
    # energy, 60% slower, EDP 576 against 400 (-44%); kernel b stays at 800
    rows = query(db, "static_optimal_run", objective="energy", gpu_id="hq")
    mean, a, b = rows
    assert (mean["kernel_id"], a["kernel_id"], b["kernel_id"]) == (None, "hq/a", "hq/b")
    assert (a["core_mhz"], a["mem_mhz"], a["n_sm"]) == (400, 924, 1)
    assert a["energy_saving_pct"] == pytest.approx(10.0)
    assert a["time_change_pct"] == pytest.approx(60.0)
    assert a["edp_saving_pct"] == pytest.approx(-44.0)
    assert a["ed2p_saving_pct"] == pytest.approx(100 * (1 - 18 * 32 ** 2 / (20 * 20 ** 2)))
    assert b["core_mhz"] == 800 and b["energy_saving_pct"] == 0
    assert mean["kernels"] == 2 and mean["core_mhz"] is None
    assert mean["energy_saving_pct"] == pytest.approx(5.0)
    assert mean["worst_edp_saving_pct"] == pytest.approx(-44.0)
    assert mean["worst_time_change_pct"] == pytest.approx(60.0)
    # tiny (measured), least energy: alpha at (500, 1600) 0.36 J against 0.45 J at the top
    # (1000, 1600), 20% less, twice the time; beta at (1000, 800) 0.495 J against 0.55 J,
    # 10% less, 10% slower
    rows = query(db, "static_optimal_run", objective="energy", suite="tiny")
    mean, alpha, beta = rows
    assert (alpha["core_mhz"], alpha["mem_mhz"]) == (500, 1600)
    assert alpha["energy_saving_pct"] == pytest.approx(20.0)
    assert alpha["time_change_pct"] == pytest.approx(100.0)
    assert alpha["edp_saving_pct"] == pytest.approx(100 * (1 - 0.36 * 3.0 / (0.45 * 1.5)))
    assert (beta["core_mhz"], beta["mem_mhz"]) == (1000, 800)
    assert beta["energy_saving_pct"] == pytest.approx(10.0)
    assert beta["time_change_pct"] == pytest.approx(10.0)
    assert mean["energy_saving_pct"] == pytest.approx(15.0)
    assert mean["time_change_pct"] == pytest.approx(55.0)
    # ED2P (J ms^2): alpha 6.4, 2.0, 3.24, 1.0125 at the top; beta 50, 14.97, 55, 13.75 at
    # the top: both stay at the highest setting
    rows = query(db, "static_optimal_run", objective="ed2p", gpu_id="tiny")
    assert [(r["core_mhz"], r["mem_mhz"]) for r in rows[1:]] == [(1000, 1600)] * 2
    assert all(r["ed2p_saving_pct"] == pytest.approx(0.0) for r in rows)
    assert query(db, "static_optimal_run", suite="nope") == []
    with pytest.raises(GpudbError,
                       match="objective must be one of edp, ed2p, energy, energy_perf"):
        query(db, "static_optimal_run", objective="speed")


def test_accuracy_queries_from_the_lower_base_by_hand(db):
    # tiny from 500 MHz to 1000: proportional halves the time. alpha 4.0 -> 2.0 (actual 2.0)
    # and 3.0 -> 1.5 (1.5): exact; beta 10.0 -> 5.0 at 800 MHz memory (actual 5.5: -9.09%),
    # 10.0 -> 5.0 at 1600 (5.0: exact)
    miss = 100 * (5.0 - 5.5) / 5.5
    rows = query(db, "mape_by_predictor", gpu_id="tiny", base_mhz="500")
    assert [(r["predictor"], r["target_core_mhz"], r["target_mem_mhz"], r["n"]) for r in rows] == [
        ("proportional", 1000, 800, 2), ("proportional", 1000, 1600, 2),
        ("proportional", None, None, 4)]
    assert rows[0]["mape_pct"] == pytest.approx(-miss / 2)
    assert rows[0]["max_ape_pct"] == pytest.approx(-miss)
    assert rows[1]["mape_pct"] == pytest.approx(0.0)
    assert rows[2]["mape_pct"] == pytest.approx(-miss / 4)
    [row] = query(db, "error_by_target", gpu_id="tiny", base_mhz="500")
    assert (row["predictor"], row["target_core_mhz"], row["n"]) == ("proportional", 1000, 4)
    assert row["mean_error_pct"] == pytest.approx(miss / 4)
    assert row["min_error_pct"] == pytest.approx(miss)
    assert row["max_error_pct"] == pytest.approx(0.0)
    assert row["over_predicted_pct"] == 0
    # from the top (1000 MHz) down: beta at 800 MHz memory 5.5 -> 11.0 (actual 10.0: +10%)
    [row] = query(db, "error_by_target", gpu_id="tiny")
    assert (row["target_core_mhz"], row["mean_error_pct"], row["max_error_pct"],
            row["over_predicted_pct"]) == (500, pytest.approx(2.5), pytest.approx(10.0), 25)
    kernels = {r["kernel_id"]: r for r in query(db, "mape_by_kernel", gpu_id="tiny")}
    assert kernels["tiny/alpha"]["proportional_pct"] == pytest.approx(0.0)
    assert kernels["tiny/beta"]["proportional_pct"] == pytest.approx(5.0)
    assert kernels["tiny/beta"]["crisp_pct"] is None      # measured runs have no counters


def test_interval_granularity_by_hand(db):
    # hq from 800 to 400 MHz, proportional doubles the time. Whole runs: a 20 -> 40 ns
    # (actual 32: +25%), b 20 -> 40 (40: exact). Intervals: a 10 -> 20 (12: +66.7%) and
    # 10 -> 20 (20: exact); b exact twice.
    rows = query(db, "mape_by_predictor", gpu_id="hq")
    assert [(r["target_core_mhz"], r["n"]) for r in rows] == [(400, 2), (None, 2)]
    assert rows[1]["mape_pct"] == pytest.approx(12.5) and rows[1]["max_ape_pct"] == 25
    rows = query(db, "mape_by_predictor", gpu_id="hq", granularity="interval")
    assert rows[1]["n"] == 4
    assert rows[1]["mape_pct"] == pytest.approx(100 * (20 - 12) / 12 / 4)
    assert rows[1]["max_ape_pct"] == pytest.approx(100 * (20 - 12) / 12)
    kernels = {r["kernel_id"]: r for r in query(db, "mape_by_kernel", gpu_id="hq",
                                                 granularity="interval")}
    assert kernels["hq/a"]["category"] == "memory"
    assert kernels["hq/a"]["proportional_pct"] == pytest.approx(100 * (20 - 12) / 12 / 2)
    assert kernels["hq/b"]["proportional_pct"] == pytest.approx(0.0)
    [row] = query(db, "error_by_target", gpu_id="hq", granularity="interval")
    assert row["over_predicted_pct"] == 25 and row["n"] == 4


def test_prediction_curve_by_hand(db):
    rows = query(db, "prediction_curve", kernel_id="tiny/beta")
    # per memory clock, from 1000 MHz: the base itself, then 500 MHz at twice the time
    assert [(r["base_mem_mhz"], r["target_core_mhz"], r["actual_ns"], r["proportional_ns"])
            for r in rows] == [(800, 1000, 5.5e6, 5.5e6), (800, 500, 10.0e6, 11.0e6),
                               (1600, 1000, 5.0e6, 5.0e6), (1600, 500, 10.0e6, 10.0e6)]
    assert all(r["crisp_ns"] is None and r["stall_ns"] is None for r in rows)
    rows = query(db, "prediction_curve", gpu_id="hq", base_mhz="400")
    assert [(r["kernel_id"], r["target_core_mhz"], r["actual_ns"], r["proportional_ns"])
            for r in rows] == [("hq/a", 800, 20, 16), ("hq/a", 400, 32, 32),
                               ("hq/b", 800, 20, 20), ("hq/b", 400, 40, 40)]


# A second pair of GPUs whose rows must never pool with the first: 'tiny2' is measured with
# the same kernel ids as 'tiny' (suite tiny) on another grid (600 and 1200 MHz core, 800 MHz
# memory); 'hq2' has hq's kernel ids on another grid (600 and 1200 MHz) where kernel a, like
# b, never gains from the lower clock.
HQ2_OUTCOMES = {
    "a": {1200: [(10, 10), (10, 10)], 600: [(20, 11), (20, 11)]},
    "b": {1200: [(10, 10), (10, 10)], 600: [(20, 11), (20, 11)]},
}


def add_hand_gpu(con, gpu_id: str, outcomes: dict) -> None:
    """A hand-made simulated-looking GPU like 'hq' (one SM, board energy only, 1 ns
    switches) with the kernels hq/a and hq/b at the core MHz of ``outcomes``; the kernel rows
    are added once, by the first GPU."""
    top = max(outcomes["a"])
    con.execute(f"""
        INSERT INTO gpu VALUES ('{gpu_id}', 'hand-made GPU', 1, 48, 8, {top}, 924,
            '{{"core": {{"switch_ns": 1}}, "memory": {{"l2_latency_ns": 200,
              "dram_latency_ns": 50, "dram_latency_mem_cycles": 92.4}}}}');
        INSERT INTO pstate VALUES ('{gpu_id}', 'mem', 924, NULL)""")
    for mhz in outcomes["a"]:
        con.execute("INSERT INTO pstate VALUES (?, 'core', ?, ?)", [gpu_id, mhz, mhz / top])
    for kernel, by_mhz in outcomes.items():
        con.execute("INSERT INTO kernel VALUES (?, ?, 'hq', ?, 'hand-made (synthetic)', NULL) "
                    "ON CONFLICT DO NOTHING", [f"hq/{kernel}", kernel, CATEGORY[kernel]])
        for mhz, rows in by_mhz.items():
            run_id = f"{gpu_id}-{kernel}-{mhz}"
            con.execute(
                "INSERT INTO run (run_id, experiment_id, source, kernel_id, gpu_id, policy, "
                "core_mhz, mem_mhz, n_sm, ctas_per_sm, interval_instructions, seed, time_ns, "
                "energy_j, instructions, created_at) VALUES (?, 'e', 'sim', ?, ?, 'fixed', "
                "?, 924, 1, 8, 100, 0, ?, ?, 200, now())",
                [run_id, f"hq/{kernel}", gpu_id, mhz, sum(t for t, _ in rows),
                 sum(e for _, e in rows)])
            for idx, (t, e) in enumerate(rows):
                con.execute(
                    "INSERT INTO interval (run_id, idx, core_mhz, mem_mhz, ctas_per_sm, "
                    "start_ns, time_ns, cycles, instructions, core_dynamic_j, core_static_j, "
                    "dram_dynamic_j, dram_static_j, other_j) "
                    "VALUES (?, ?, ?, 924, 8, 0, ?, ?, 100, 0, 0, 0, 0, ?)",
                    [run_id, idx, mhz, t, t * mhz / 1000, e])


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    """A read-only connection to a file with four GPUs in two look-alike pairs: tiny and
    tiny2 (measured), hq and hq2 (hand-made), each pair sharing its kernel ids."""
    tmp = tmp_path_factory.mktemp("two_gpus")
    path = tmp / "two.duckdb"
    con = tiny_pair(tmp)
    con.execute("INSERT INTO experiment VALUES ('e', 'e', NULL, now(), NULL, NULL, NULL, NULL)")
    add_hand_gpu(con, "hq", OUTCOMES)
    add_hand_gpu(con, "hq2", HQ2_OUTCOMES)
    evaluate(con, ["oracle"], ["edp"], guards=(PAPER,))
    con.close()
    con = gpudb.connect(path, read_only=True)
    yield con
    con.close()


# the queries over runs and control results that aggregate per GPU (quick ones: the accuracy
# queries, a second each, are checked by hand below)
PER_GPU = [("savings", {"objective": "edp"}), ("savings_summary", {"objective": "edp"}),
           ("fraction_of_potential", {"objective": "edp"}), ("static_optimal_run", {}),
           ("best_setting", {}), ("run_by_setting", {}), ("clock_trace", {}),
           ("interval_shares", {})]


@pytest.mark.parametrize("name, params", PER_GPU)
def test_every_aggregate_leads_with_gpu_id_and_never_pools_gpus(two, name, params):
    columns, rows = run_query(two, name, params)
    assert columns[0] == "gpu_id"
    # each GPU's rows are exactly those of the query on that GPU alone: none mixes GPUs
    gpus = sorted({r[0] for r in rows})
    assert None not in gpus and len(gpus) >= 2, gpus
    for gpu in gpus:
        _, alone = run_query(two, name, {**params, "gpu_id": gpu})
        assert [r for r in rows if r[0] == gpu] == alone, gpu


def test_accuracy_queries_per_gpu_by_hand(two):
    # tiny2 from 1200 MHz to 600, proportional doubles the time: alpha 2.5 -> 5.0 (actual
    # 4.0: +25%), beta 4.0 -> 8.0 (9.0: -11.1%). tiny keeps its own figures (from 1000 to
    # 500: only beta at 800 MHz memory misses, +10%: MAPE 2.5%, n 4): pooled, n would be 6.
    beta = 100 * (8.0 - 9.0) / 9.0
    columns, found = run_query(two, "mape_by_predictor", {})
    assert columns[:2] == ["gpu_id", "predictor"]
    rows = [dict(zip(columns, r, strict=True)) for r in found]
    overall = {r["gpu_id"]: r for r in rows
               if r["predictor"] == "proportional" and r["target_core_mhz"] is None}
    assert overall["tiny2"]["n"] == 2 and overall["tiny"]["n"] == 4
    assert overall["tiny2"]["mape_pct"] == pytest.approx((25.0 - beta) / 2)
    assert overall["tiny"]["mape_pct"] == pytest.approx(2.5)
    # hq from 800 to 400 (a +25%, b exact); hq2 from 1200 to 600 exact for both
    assert overall["hq"]["mape_pct"] == pytest.approx(12.5)
    assert overall["hq2"]["mape_pct"] == pytest.approx(0.0)
    rows = query(two, "error_by_target")
    assert list(rows[0])[:2] == ["gpu_id", "predictor"]
    targets = {(r["gpu_id"], r["target_core_mhz"]): r for r in rows
               if r["predictor"] == "proportional"}
    assert set(targets) == {("tiny", 500), ("tiny2", 600), ("hq", 400), ("hq2", 600)}
    assert targets[("tiny2", 600)]["mean_error_pct"] == pytest.approx((25.0 + beta) / 2)
    assert targets[("tiny2", 600)]["n"] == 2
    assert targets[("hq2", 600)]["n"] == 2 and targets[("hq2", 600)]["max_error_pct"] == 0
    rows = query(two, "error_by_setting", predictor="proportional")
    assert list(rows[0])[:2] == ["gpu_id", "predictor"]
    cells = {(r["gpu_id"], r["target_core_mhz"], r["target_mem_mhz"]): r for r in rows}
    # the base itself is a target (exact); tiny2's 600 MHz cell is its two kernels' errors
    assert cells[("tiny2", 600, 800)]["mape_pct"] == pytest.approx((25.0 - beta) / 2)
    assert cells[("tiny2", 600, 800)]["kernels"] == 2
    assert cells[("tiny2", None, None)]["n"] == 4
    assert not any(g == "tiny2" and c in (500, 1000) for g, c, _ in cells)


def test_control_summaries_per_gpu_by_hand(two):
    # hq: the dynamic optimal saves kernel a 12% EDP, b nothing (mean 6%); on hq2 neither
    # kernel gains (EDP 440 at 600 MHz against 400), so its mean is 0 over 2 kernels, not
    # 3% over 4
    rows = query(two, "savings_summary", objective="edp")
    dyn = {r["gpu_id"]: r for r in rows
           if r["policy"] == "dynamic_optimal" and r["category"] == "all"}
    assert set(dyn) == {"hq", "hq2"}
    assert (dyn["hq"]["kernels"], dyn["hq2"]["kernels"]) == (2, 2)
    assert dyn["hq"]["edp_saving_pct"] == pytest.approx(6.0)
    assert dyn["hq2"]["edp_saving_pct"] == pytest.approx(0.0)
    # hq2 has no potential at all: no fraction rather than hq's pooled into it
    rows = query(two, "fraction_of_potential", objective="edp")
    overall = {r["gpu_id"]: r for r in rows
               if r["policy"] == "replay" and r["kernel_id"] is None}
    assert overall["hq"]["fraction_realised"] == pytest.approx((1 - 31 * 22.6 / 400) / 0.12)
    assert overall["hq"]["potential_pct"] == pytest.approx(6.0)
    assert overall["hq2"]["fraction_realised"] is None
    assert overall["hq2"]["potential_pct"] == pytest.approx(0.0)
