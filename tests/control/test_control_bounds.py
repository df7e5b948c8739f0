"""Achievable bounds and the papers' energy scope: chip energy (no board term) computed by hand
on a hand-made database, the fraction of potential by hand for one kernel, and the dynamic
optimal's schedule run in the simulator's closed loop (policy dynamic_optimal_run)."""

from __future__ import annotations

import pytest
from conftest import TWOPHASE_KERNEL

import gpudb
from gpudb.control import schedule_run
from gpudb.control.results import evaluate
from gpudb.store.queries import run_query

# Hand-made interval energies (J), not simulator output: per core MHz, time (ns) and the five
# interval energy columns (core dynamic, core static, DRAM dynamic, DRAM static, board), the
# same for both intervals. Chip energy: 6 J at 700, 5 J at 500; with the board's 3 and
# 4.2 J: 9 J and 9.2 J. So the run's energy favours 700 MHz and the chip's 500 MHz.
PARTS = {700: (10.0, (4.0, 1.0, 0.5, 0.5, 3.0)), 500: (14.0, (3.0, 1.2, 0.5, 0.3, 4.2))}
VOLTS = {700: 1.0, 500: 0.9}
SWITCH_NS = 1.0


@pytest.fixture
def scope_db(fresh_db):
    con = gpudb.connect(fresh_db)
    con.execute(f"""
        INSERT INTO gpu VALUES ('hand2', 'hand-made GPU', 1, 48, 8, 700, 924,
            '{{"core": {{"switch_ns": {SWITCH_NS}}}, "memory": {{"l2_latency_ns": 200,
              "dram_latency_ns": 50, "dram_latency_mem_cycles": 92.4}}}}');
        INSERT INTO pstate VALUES ('hand2', 'mem', 924, NULL);
        INSERT INTO kernel VALUES ('hand2/k', 'k', 'hand2', 'memory', 'hand-made (synthetic)',
                                   NULL);
        INSERT INTO experiment VALUES ('e', 'e', NULL, now(), NULL, NULL, NULL, NULL);
    """)
    for mhz, (t, parts) in PARTS.items():
        con.execute("INSERT INTO pstate VALUES ('hand2', 'core', ?, ?)", [mhz, VOLTS[mhz]])
        con.execute(
            "INSERT INTO run (run_id, experiment_id, source, kernel_id, gpu_id, policy, core_mhz, "
            "mem_mhz, n_sm, ctas_per_sm, interval_instructions, seed, time_ns, energy_j, "
            "instructions, created_at) VALUES (?, 'e', 'sim', 'hand2/k', 'hand2', 'fixed', ?, "
            "924, 1, 8, 100, 0, ?, ?, 200, now())", [f"r{mhz}", mhz, 2 * t, 2 * sum(parts)])
        for idx in range(2):
            con.execute(
                "INSERT INTO interval (run_id, idx, core_mhz, mem_mhz, ctas_per_sm, start_ns, "
                "time_ns, cycles, instructions, core_dynamic_j, core_static_j, dram_dynamic_j, "
                "dram_static_j, other_j) VALUES (?, ?, ?, 924, 8, 0, ?, ?, 100, ?, ?, ?, ?, ?)",
                [f"r{mhz}", idx, mhz, t, t * mhz / 1000, *parts])
    evaluate(con, ["oracle"], ["energy"])
    con.close()
    return fresh_db


def _results(db):
    con = gpudb.connect(db, read_only=True)
    rows = con.execute("SELECT policy, predictor, guard, energy_scope, settings, time_ns, "
                       "energy_j, chip_energy_j FROM control_result").fetchall()
    con.close()
    return {(r[0], r[1], r[2], r[3]): r[4:] for r in rows}


def test_chip_energy_and_scoped_decisions_by_hand(scope_db):
    got = _results(scope_db)
    # Dynamic optimal, energy objective: the run's scope keeps 700 MHz (9 J < 9.2 J an
    # interval), the chip's goes to 500 (5 J < 6 J); each stores both totals, no switching.
    assert got[("dynamic_optimal", "", "", "run")] == ([700.0, 700.0], 20.0, 18.0, 12.0)
    settings, time_ns, energy_j, chip_j = got[("dynamic_optimal", "", "", "chip")]
    assert settings == [500.0, 500.0] and time_ns == 28.0
    assert energy_j == pytest.approx(18.4) and chip_j == pytest.approx(10.0)
    # The papers' controller with perfect knowledge (oracle replay, guard paper) starts at
    # 700 and moves to interval 0's best: in chip scope 500, paying the 1 ns switch, which
    # burns the static and background power at 500: (1.2 + 0.3) J / 14 ns on the chip, plus
    # the board's 4.2 J / 14 ns in the run's energy.
    settings, time_ns, energy_j, chip_j = got[("replay", "oracle", "paper", "chip")]
    assert settings == [700.0, 500.0] and time_ns == pytest.approx(10 + 14 + 1)
    assert chip_j == pytest.approx(6 + 5 + 1.5 / 14)
    assert energy_j == pytest.approx(9 + 9.2 + 5.7 / 14)
    assert got[("replay", "oracle", "paper", "run")][0] == [700.0, 700.0]
    # perfect memoryless is that replay (paper 004 section 4.3)
    memoryless = got[("perfect_memoryless", "", "", "chip")]
    assert memoryless[0] == settings and memoryless[3] == pytest.approx(chip_j)


def test_savings_and_fraction_of_potential_by_hand_in_both_scopes(scope_db):
    con = gpudb.connect(scope_db, read_only=True)
    [baseline] = con.execute("SELECT time_ns, energy_j, chip_energy_j FROM control_baseline"
                             ).fetchall()
    assert baseline == (20.0, 18.0, 12.0)
    params = {"objective": "energy", "scope": "chip"}
    columns, rows = run_query(con, "savings", params)
    fcols, fractions = run_query(con, "fraction_of_potential", params)
    _, run_rows = run_query(con, "fraction_of_potential", {"objective": "energy"})
    with pytest.raises(Exception, match="scope must be run or chip"):
        run_query(con, "savings", {"scope": "board"})
    con.close()
    saving = {(r[columns.index("policy")], r[columns.index("guard")]):
              r[columns.index("energy_saving_pct")] for r in rows}
    assert saving[("dynamic_optimal", "")] == pytest.approx(100 * (1 - 10 / 12))
    replay_chip = 6 + 5 + 1.5 / 14
    assert saving[("replay", "paper")] == pytest.approx(100 * (1 - replay_chip / 12))
    at = {c: i for i, c in enumerate(fcols)}
    row = {(r[at["policy"]], r[at["guard"]]): r for r in fractions
           if r[at["kernel_id"]] == "hand2/k"}[("replay", "paper")]
    # paper 004 section 4.3: realised over potential; potential of dynamic optimal 1 - 10/12,
    # of perfect memoryless the replay's own (it is the same schedule)
    assert row[at["potential_pct"]] == pytest.approx(100 / 6)
    assert row[at["fraction_realised"]] == pytest.approx((1 - replay_chip / 12) / (1 / 6))
    assert row[at["fraction_of_memoryless"]] == pytest.approx(1.0)
    # no closed-loop run of the schedule on a hand-made GPU: no run bound
    assert row[at["fraction_of_run_bound"]] is None
    # in the run's scope nothing beats 700 MHz: no potential, no fraction
    run_overall = {(r[at["policy"]], r[at["guard"]]): r for r in run_rows
                   if r[at["kernel_id"]] is None}
    assert run_overall[("dynamic_optimal", "")][at["potential_pct"]] == pytest.approx(0.0)
    assert run_overall[("dynamic_optimal", "")][at["fraction_realised"]] is None


SUITE = """
name = "bndtiny"
description = "one synthetic kernel for the run-bound tests"
""" + TWOPHASE_KERNEL


@pytest.fixture(scope="module")
def bound_db(tmp_path_factory):
    """One tiny synthetic kernel swept over gtx480's core P-states, its dynamic-optimal EDP
    schedule (both scopes) run in the closed loop, and the offline policies."""
    from gpudb.simulate.sweep import sweep

    tmp = tmp_path_factory.mktemp("bounds")
    suite = tmp / "bndtiny.toml"
    suite.write_text(SUITE)
    db = tmp / "sim.duckdb"
    sweep(db, "gtx480", suite, mem_mhz=[924], interval_instructions=2000, jobs=1)
    con = gpudb.connect(db)
    simulated = schedule_run.simulate(con, ["edp"])
    evaluate(con, [], ["edp"])
    again = schedule_run.simulate(con, ["edp"])
    con.close()
    return {"db": db, "simulated": simulated, "again": again}


def test_run_bound_is_the_closed_loop_run_of_the_stitched_schedule(bound_db):
    from sim.config import load_gpu, load_suite
    from sim.model import simulate

    con = gpudb.connect(bound_db["db"], read_only=True)
    rows = con.execute(
        "SELECT policy, energy_scope, settings, time_ns, energy_j, chip_energy_j, switches "
        "FROM control_result WHERE objective = 'edp'").fetchall()
    runs = con.execute("SELECT predictor, objective, variant, guard, core_mhz, seed FROM run "
                       "WHERE policy = 'closed_loop'").fetchall()
    con.close()
    got = {(r[0], r[1]): r[2:] for r in rows}
    # two schedules (run and chip scope), each simulated once, reused the second time
    assert bound_db["simulated"] == (2, 0) and bound_db["again"] == (0, 0)
    assert sorted(r[2] for r in runs) == ["chip", "run"]
    assert all(r[:2] == ("dynamic_optimal", "edp") and r[3] is None and r[5] == 0
               for r in runs)
    gpu = load_gpu("gtx480")
    kernel = load_suite(str(bound_db["db"].parent / "bndtiny.toml")).kernels[0]
    for scope in ("run", "chip"):
        stitched = got[("dynamic_optimal", scope)]
        settings, time_ns, energy_j, chip_j, switches = got[("dynamic_optimal_run", scope)]
        # the invariant: the run follows the stitched schedule interval by interval ...
        assert settings == stitched[0]
        assert switches == sum(a != b for a, b in zip(settings, settings[1:], strict=False))
        # ... and its totals are the simulator's, not the fixed runs' stitched together
        controller = schedule_run.ScheduleController(settings, "edp", 1.0, scope)
        result = simulate(gpu, kernel, settings[0], 924, interval_instructions=2000,
                          controller=controller)
        assert time_ns == result.run["time_ns"] and energy_j == result.run["energy_j"]
        board = sum(result.intervals.column("other_j").to_pylist())
        assert chip_j == pytest.approx(energy_j - board)
        assert [float(m) for m in result.intervals.column("core_mhz").to_pylist()] == settings


def test_a_constant_schedule_reproduces_the_fixed_run(bound_db):
    # Following a schedule that never moves is running at that setting: the closed loop
    # machinery adds nothing (the same time and energy as the fixed run, exactly).
    from sim.config import load_gpu, load_suite
    from sim.model import simulate

    con = gpudb.connect(bound_db["db"], read_only=True)
    [fixed] = con.execute("SELECT time_ns, energy_j, (SELECT count(*) FROM interval AS i "
                          "WHERE i.run_id = r.run_id) FROM run AS r "
                          "WHERE policy = 'fixed' AND core_mhz = 500").fetchall()
    con.close()
    kernel = load_suite(str(bound_db["db"].parent / "bndtiny.toml")).kernels[0]
    controller = schedule_run.ScheduleController([500.0] * fixed[2], "edp", 1.0, "run")
    result = simulate(load_gpu("gtx480"), kernel, 500, 924, interval_instructions=2000,
                      controller=controller)
    assert (result.run["time_ns"], result.run["energy_j"]) == fixed[:2]


def test_closed_loop_controller_in_chip_scope_decides_as_the_chip_replay(bound_db, tmp_path):
    # `gpudb control --scope chip`: the controller's energy leaves out the board's, as the
    # replay's does with scope 'chip'; both start at 700 MHz from the same first interval, so
    # their first decision is the same, and the run is paired with the chip-scope replay.
    # (STALL with the papers' step: on this kernel the guarded controllers stay at 700.)
    import shutil

    from gpudb.control.guard import PAPER
    from gpudb.control.kinds.predictor import run_closed_loop

    db = tmp_path / "sim.duckdb"
    shutil.copy(bound_db["db"], db)
    suite = bound_db["db"].parent / "bndtiny.toml"
    for scope in ("run", "chip"):
        run_closed_loop(db, "gtx480", suite, None, "stall", "energy",
                        interval_instructions=2000, scope=scope, guard=PAPER)
    con = gpudb.connect(db)
    evaluate(con, ["stall"], ["energy"], guards=[PAPER])
    columns, rows = run_query(con, "replay_vs_closed_loop", {"predictor": "stall"})
    runs = dict(con.execute(
        "SELECT coalesce(r.variant, 'run'), list(i.core_mhz ORDER BY i.idx) FROM run AS r "
        "JOIN interval AS i USING (run_id) WHERE r.predictor = 'stall' "
        "GROUP BY ALL").fetchall())
    replays = dict(con.execute(
        "SELECT energy_scope, settings FROM control_result WHERE predictor = 'stall' "
        "AND guard = 'paper' AND objective = 'energy'").fetchall())
    con.close()
    assert {r[columns.index("energy_scope")] for r in rows} == {"run", "chip"}
    for scope in ("run", "chip"):
        assert runs[scope][:2] == replays[scope][:2], scope
    # without the board's power a longer interval costs less: the chip-scope controller
    # runs lower clocks (here 300 MHz where the run-scope one takes 400)
    assert runs["chip"] != runs["run"] and sum(runs["chip"]) < sum(runs["run"])
