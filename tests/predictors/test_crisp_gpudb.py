"""gpudb's CRISP variants (crisp_gpudb, crispl_gpudb) and the issue-slot counters they read:
hand-computed cases of the formula, and the simulator's counters on kernels worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpudb
from gpudb.predictors.crisp import predict_crisp
from gpudb.predictors.crisp_gpudb import predict_crisp_gpudb
from gpudb.store.runs import ensure_experiment, ensure_gpu, ensure_kernels, write_run
from sim.config import kernel_from_table
from sim.model import simulate


def test_downward_is_paper_000_eq_3_to_5():
    # Paper 000 figure 6 at f/2: LCP 20 of which 3 load stalls (17 overlapped computation),
    # CSP 11 of which 1 store stall: max(20, 34) + max(11, 20) = 54, as predict_crisp.
    got = predict_crisp_gpudb(np.array([31.0]), np.array([20.0]), np.array([3.0]),
                              np.array([1.0]), np.array([0.0]), np.array([2.0]),
                              np.array([1.0]))
    assert got[0] == pytest.approx(54.0)
    assert predict_crisp(31.0, 20.0, 17.0, 1.0, 2.0, 1.0) == pytest.approx(54.0)


def test_upward_scales_all_computation_keeps_stalls_and_is_floored():
    # 54 ns at f of which 3 load-stall and 1 store-stall ns: at 2f the 50 ns of computation
    # halve: 4 + 25 = 29 ns; with the memory system needing 40 ns it is 40 ns.
    args = [np.array([54.0] * 2), np.array([40.0] * 2), np.array([3.0] * 2),
            np.array([1.0] * 2), np.array([0.0, 40.0]), np.array([1.0] * 2),
            np.array([2.0] * 2)]
    np.testing.assert_allclose(predict_crisp_gpudb(*args), [29.0, 40.0])
    # paper 000 section 5.2 holds the 40 ns critical path: 40 + 1 + (54 - 40 - 1) / 2 = 47.5
    assert predict_crisp(54.0, 40.0, 37.0, 1.0, 1.0, 2.0) == pytest.approx(47.5)


def test_sql_function_null_in_null_out(fresh_db):
    con = gpudb.connect(fresh_db)
    rows = con.execute("""SELECT predict_crisp_gpudb(t, 20, 3, 1, 0, 2, 1)
        FROM (VALUES (31.0), (NULL)) AS v(t)""").fetchall()
    con.close()
    assert rows == [(54.0,), (None,)]


def _chase(n):
    """One warp, each load waiting for the previous one, missing L1 and L2 (synthetic)."""
    return kernel_from_table({
        "name": "chase", "category": "test", "description": "synthetic pointer chase",
        "ctas": 1, "warps_per_cta": 1,
        "phase": [{"iterations": n, "body": [{"op": "ld", "id": "p", "dep": "p"}]}]})


def test_pointer_chase_slot_counters_by_hand(gtx480):
    # 321 core cycles per load at 700 MHz (tests/sim/test_sim_model.py works it out): the issue
    # cycle is computation (nothing waits yet), the other 320 are load stalls with no issue
    # slot used, and each load's latency extends the critical path from its timestamp. The
    # last load has no instruction waiting for it, so rules A-D call its 320 cycles
    # computation; the slot counters count them as the load stall they are (the CTA cannot
    # complete before the data returns).
    n = 30
    r = simulate(gtx480, _chase(n), n_sm=1, interval_instructions=10_000)
    row = r.intervals.to_pylist()[0]
    assert row["cycles"] == n * 321
    assert row["crisp_load_stall_cycles"] == (n - 1) * 320
    assert row["crisp_slot_load_stall_cycles"] == n * 320
    assert row["crisp_slot_lcp_cycles"] == n * 321
    assert row["crisp_slot_store_stall_cycles"] == 0 and row["sm_empty_cycles"] == 0
    # one MSHR held for the whole latency of each miss, out of the SM's 32 (Fermi's)
    ns = 1000.0 / 700.0
    assert gtx480.raw["sm"]["mshrs"] == 32
    assert row["mshr_min_ns"] == pytest.approx(n * 321 * ns / 32)
    assert row["store_queue_min_ns"] == 0


def test_sample_takes_slot_counters_per_sm_that_had_work(gtx480, fresh_db):
    # On 15 SMs the one CTA leaves 14 SMs empty: averaged over SMs the stalls are 1/15 of
    # the busy SM's, and the sample view divides by the share of SM cycles with work.
    n = 30
    con = gpudb.connect(fresh_db)
    ensure_gpu(con, gtx480)
    kern = _chase(n)
    ensure_kernels(con, [kern])
    eid = ensure_experiment(con, "t", "test")
    r = simulate(gtx480, kern, interval_instructions=10_000)
    row = r.intervals.to_pylist()[0]
    assert row["crisp_slot_load_stall_cycles"] == pytest.approx(n * 320 / 15)
    assert row["sm_empty_cycles"] == pytest.approx(14 * n * 321 / 15)
    write_run(con, r, eid)
    ns = 1000.0 / 700.0
    got = con.execute("""SELECT crisp_slot_load_stall_ns, crisp_slot_lcp_ns, crispl_slot_lcp_ns
        FROM sample WHERE granularity = 'interval'""").fetchall()[0]
    con.close()
    assert got == pytest.approx((n * 320 * ns, n * 321 * ns, n * 321 * ns))


def test_slot_accounting_identities_on_a_memory_bound_kernel(gtx480):
    # Loads feeding ALU work from 48 warps: computation by issue slots covers at least the
    # issued slots, the stalls never exceed the cycles, and every load stall lies on the
    # adjusted critical path.
    kern = kernel_from_table({
        "name": "lm", "category": "test", "description": "synthetic two-slope-like kernel",
        "ctas": 90, "warps_per_cta": 8,
        "phase": [{"iterations": 6, "body": [
            {"op": "ld", "id": "a", "trans": 4, "l2_hit": 0.05},
            {"op": "alu", "n": 12, "dep": "a"}, {"op": "alu", "n": 12}]}]})
    for mhz in (700.0, 200.0):
        r = simulate(gtx480, kern, core_mhz=mhz, interval_instructions=20_000)
        for row in r.intervals.to_pylist():
            stalls = row["crisp_slot_load_stall_cycles"] + row["crisp_slot_store_stall_cycles"]
            computation = row["cycles"] - stalls - row["sm_empty_cycles"]
            assert computation >= row["instructions"] / (15 * 2) - 1e-6
            assert 0 <= stalls <= row["cycles"]
            assert row["crisp_slot_lcp_cycles"] >= row["crisp_slot_load_stall_cycles"] - 1e-6
            assert row["crisp_slot_lcp_cycles"] <= row["cycles"] + 1e-6


def test_store_queue_bound_holds_at_another_clock(gtx480):
    # The store queue's least time for a store-bound kernel, measured at 100 MHz where stores
    # never fill the queue, bounds the time the same stores take at 700 MHz where they do.
    kern = kernel_from_table({
        "name": "st", "category": "test", "description": "synthetic store-bound kernel",
        "ctas": 60, "warps_per_cta": 8,
        "phase": [{"iterations": 10, "body": [
            {"op": "alu", "n": 4, "dep": "prev"},
            {"op": "st", "trans": 2, "dram_write": 1.0}]}]})
    slow = simulate(gtx480, kern, core_mhz=100.0, interval_instructions=1_000_000)
    fast = simulate(gtx480, kern, core_mhz=700.0, interval_instructions=1_000_000)
    bound = slow.intervals.column("store_queue_min_ns").to_pylist()[0]
    assert 0 < bound <= fast.run["time_ns"]
    # ... and it is tight enough to matter: more than half the 700 MHz time
    assert bound > 0.5 * fast.run["time_ns"]
    assert math.isfinite(bound)
