"""The simulator against hand-computed cases, its counter identities and its determinism."""

import copy
import math

import numpy as np
import pyarrow as pa
import pytest
from conftest import col, reduced

import gpudb
from sim.config import kernel_from_table, load_suite
from sim.model import INTERVAL_COLUMNS, simulate


def kernel(body, iterations=1, ctas=1, warps=1, **extra):
    return kernel_from_table({"name": "t", "category": "test", "description": "synthetic test",
                              "ctas": ctas, "warps_per_cta": warps,
                              "phase": [{"iterations": iterations, "body": body}], **extra})


def test_dependent_alu_chain_takes_n_times_latency(gtx480):
    # 100 dependent ALU ops in one warp: each waits 18 cycles for its producer (gtx480.toml).
    r = simulate(gtx480, kernel([{"op": "alu", "n": 10, "dep": "prev"}], iterations=10),
                 interval_instructions=1000)
    assert col(r, "cycles").sum() == 100 * 18
    assert r.run["time_ns"] == pytest.approx(1800 / 0.7)
    assert r.run["instructions"] == 100


def test_pointer_chase_measures_the_configured_latency(gtx480):
    # Each load waits for the previous one and misses L1 and L2. By hand for gtx480.toml:
    # L2 round trip 220 ns + DRAM 60 ns + 160 memory cycles at 924 MHz (173.16 ns) + one
    # 128 B transaction on a 32 B/cycle channel (4 cycles, 4.33 ns) = 457.49 ns
    # = 320.2 core cycles at 700 MHz -> 321 cycles per load.
    n = 40
    r = simulate(gtx480, kernel([{"op": "ld", "id": "p", "dep": "p"}], iterations=n),
                 interval_instructions=10_000)
    ns = 220.0 + 60.0 + (160.0 + 128 / 32.0) * 1000.0 / 924.0
    per_load = math.ceil(ns * 0.7)
    assert per_load == 321
    assert col(r, "cycles").sum() == n * per_load
    # a lone dependent chain: every miss leads, CRIT and STALL see the whole latency
    assert col(r, "miss_contributors").sum() * 15 == n
    assert col(r, "crit_path_cycles").sum() * 15 == n * per_load
    assert col(r, "leading_load_cycles").sum() * 15 == n * per_load


def _stream(gpu):
    stream = copy.deepcopy(load_suite("micro").kernel("stream_read").raw)
    stream["ctas"], stream["phase"][0]["iterations"] = 240, 40
    r = simulate(gpu, kernel_from_table(stream), interval_instructions=50_000)
    achieved = r.intervals.column("dram_reads").to_numpy().sum() * 128 / (r.run["time_ns"] * 1e-9)
    return r, achieved


def test_stream_saturates_at_the_configured_bandwidth(gtx480_64_mshrs):
    # With enough misses in flight (64 MSHRs per SM) the DRAM channels deliver their peak.
    r, achieved = _stream(gtx480_64_mshrs)
    peak = 6 * 32 * 924e6                       # channels x B/cycle x memory clock = 177.4 GB/s
    assert 0.9 * peak <= achieved <= peak
    # the busiest channel was busy nearly the whole run (CRIT+BW's T_memory_min)
    assert col(r, "dram_min_ns").sum() >= 0.9 * r.run["time_ns"]


def test_stream_is_bounded_by_the_misses_in_flight(gtx480):
    # Fermi's 32 MSHRs per SM (GPGPU-Sim's dl1 "A:32:8") cannot cover DRAM's latency at its
    # peak: by Little's law at most 15 SMs x 32 lines x 128 B per unloaded DRAM read latency
    # (L2 220 ns + 60 ns + 160 memory cycles at 924 MHz = 453.2 ns): 135.6 GB/s, 76% of the
    # 177.4 GB/s peak. The stream runs within 10% of that bound, never above it.
    r, achieved = _stream(gtx480)
    latency_ns = 220.0 + 60.0 + 160.0 / 0.924
    bound = 15 * 32 * 128 / (latency_ns * 1e-9)
    assert bound == pytest.approx(135.6e9, rel=1e-3)
    assert 0.9 * bound <= achieved <= bound


def test_kernel_without_memory_scales_exactly_as_one_over_f(gtx480):
    k = kernel([{"op": "alu", "n": 4}, {"op": "alu", "n": 4, "dep": "prev"}], iterations=50,
               ctas=30, warps=8)
    fast, slow = (simulate(gtx480, k, core_mhz=f, interval_instructions=5_000) for f in (700, 100))
    assert col(fast, "cycles").sum() == col(slow, "cycles").sum()
    assert slow.run["time_ns"] == pytest.approx(7 * fast.run["time_ns"], rel=1e-12)


IDENTITY_KERNELS = ["compute_fma", "mem_gather", "cache_histo", "store_ge", "twoslope_lm",
                    "shared_matmul", "phase_mem_store", "unsat_small_grid"]


@pytest.mark.parametrize("name", IDENTITY_KERNELS)
def test_counter_identities(gtx480, name):
    r = simulate(gtx480, reduced(name, ctas=30, scale=0.25), interval_instructions=20_000)
    cyc = col(r, "cycles")
    load, store = col(r, "crisp_load_stall_cycles"), col(r, "crisp_store_stall_cycles")
    compute = r.extra["crisp_compute_cycles"]
    # CRISP's classes (paper 000 section 3.5) partition every cycle of every SM
    assert np.allclose(load + store + compute, cyc)
    assert np.all(col(r, "stall_cycles") <= cyc)
    lcp = col(r, "crisp_lcp_cycles")
    assert np.all(lcp >= load) and np.all(lcp <= cyc)
    assert np.all(col(r, "crit_path_cycles") <= cyc)
    assert np.all(col(r, "leading_load_cycles") <= col(r, "load_outstanding_cycles"))
    assert np.all(col(r, "load_overlap_compute_cycles") <= col(r, "load_outstanding_cycles"))
    assert np.all(col(r, "load_outstanding_cycles") <= cyc)
    assert np.all(col(r, "l1_hits") <= col(r, "l1_accesses"))
    assert np.all(col(r, "l2_hits") <= col(r, "l2_accesses"))
    assert np.all(col(r, "dram_reads") <= col(r, "l2_accesses") - col(r, "l2_hits") + 1e-9)
    assert np.all(col(r, "mem_unit_busy_cycles") <= cyc)
    # Equalizer: one sample per 128 cycles per SM; states never exceed the active warps
    samples = col(r, "eq_samples")
    assert abs(samples.sum() - cyc.sum() / 128) <= len(cyc) + 1
    states = sum(col(r, c) for c in ("eq_waiting_warps", "eq_xalu_warps", "eq_xmem_warps",
                                      "eq_issued_warps"))
    assert np.all(states <= col(r, "eq_active_warps") + 1e-9)
    assert np.all((col(r, "occupancy") >= 0) & (col(r, "occupancy") <= 1))
    mix = sum(col(r, c) for c in ("alu_insts", "sfu_insts", "gld_insts", "gst_insts",
                                  "shared_insts", "barrier_insts"))
    assert np.array_equal(mix, col(r, "instructions"))
    assert r.run["instructions"] == reduced(name, ctas=30, scale=0.25).warp_instructions
    assert col(r, "time_ns").sum() == pytest.approx(r.run["time_ns"])
    starts = col(r, "start_ns")
    assert np.allclose(starts[1:], np.cumsum(col(r, "time_ns"))[:-1])


def test_intervals_are_cut_by_work(gtx480):
    n_inst = 20_000
    r = simulate(gtx480, reduced("mem_gather", ctas=60, scale=0.3), interval_instructions=n_inst)
    cum = np.cumsum(col(r, "instructions"))[:-1]
    bounds = n_inst * np.arange(1, len(cum) + 1)
    # an interval ends in the first cycle reaching its boundary: overshoot < 2 x 15 per cycle
    assert np.all(cum >= bounds) and np.all(cum - bounds <= 2 * 15 - 1)


def test_skipping_idle_cycles_changes_no_counter(gtx480):
    for name in ("mem_gather", "store_ge", "shared_matmul"):
        k = reduced(name, ctas=20, scale=0.1)
        a = simulate(gtx480, k, interval_instructions=5_000, skip=True)
        b = simulate(gtx480, k, interval_instructions=5_000, skip=False)
        assert a.intervals.equals(b.intervals), name


def test_same_seed_same_bits_other_seed_other_run(gtx480):
    k = reduced("cache_histo", ctas=30, scale=0.1)
    a, b = (simulate(gtx480, k, interval_instructions=5_000, seed=7) for _ in range(2))
    assert a.intervals.equals(b.intervals) and a.run == b.run
    c = simulate(gtx480, k, interval_instructions=5_000, seed=8)
    assert c.run["run_id"] != a.run["run_id"]
    assert not np.array_equal(col(a, "l1_hits"), col(c, "l1_hits"))


def test_pure_python_reference_matches_the_jitted_model(gtx480):
    k = kernel([{"op": "ld", "id": "a", "trans": 2, "l1_hit": 0.3, "l2_hit": 0.3},
                {"op": "alu", "n": 3, "dep": "a"}, {"op": "sfu", "dep": "prev"},
                {"op": "shared", "trans": 2}, {"op": "bar"},
                {"op": "st", "trans": 3, "dram_write": 0.5}],
               iterations=5, ctas=6, warps=4, shared_bytes=1024)
    for skip in (True, False):
        jit = simulate(gtx480, k, n_sm=2, interval_instructions=100, skip=skip)
        ref = simulate(gtx480, k, n_sm=2, interval_instructions=100, skip=skip, reference=True)
        assert jit.intervals.equals(ref.intervals)
        assert jit.run == ref.run


def test_result_columns_are_the_interval_table(gtx480, tmp_path):
    con = gpudb.connect(tmp_path / "x.duckdb")
    names = [r[0] for r in con.execute("DESCRIBE interval").fetchall()]
    con.close()
    # every interval column of schema 0001, in order (later migrations may append columns)
    assert names[:len(INTERVAL_COLUMNS)] == [c for c, _ in INTERVAL_COLUMNS]
    r = simulate(gtx480, kernel([{"op": "alu"}], iterations=3))
    assert r.intervals.schema == pa.schema(INTERVAL_COLUMNS)


def test_energy_split_and_voltage_scaling(gtx480):
    k = kernel([{"op": "alu", "n": 8}], iterations=40, ctas=60, warps=8)
    hi, lo = (simulate(gtx480, k, core_mhz=f, interval_instructions=10_000) for f in (700, 100))
    dyn_hi, dyn_lo = col(hi, "core_dynamic_j").sum(), col(lo, "core_dynamic_j").sum()
    assert dyn_lo == pytest.approx(dyn_hi * 0.55 ** 2)           # same events, (V/V0)^2
    def p_static(r):
        return col(r, "core_static_j").sum() / (r.run["time_ns"] * 1e-9)

    assert p_static(lo) == pytest.approx(41.9 * 0.55)             # static ~ V
    total = sum(col(hi, c).sum() for c in ("core_dynamic_j", "core_static_j", "dram_dynamic_j",
                                           "dram_static_j", "other_j"))
    assert hi.run["energy_j"] == pytest.approx(total)


def test_memory_domain_energy_follows_the_memory_voltage(gtx480):
    # Paper 001 section V-A: L2, interconnect, memory controller and DRAM form the memory V/F
    # domain. By hand from gtx480.toml at each memory state (785.4 / 924 / 1062.6 MHz at
    # 1.275 / 1.5 / 1.725 V): dram_dynamic_j = L2 accesses x 2.5 nJ x (Vm/1.5)^2
    # + DRAM transactions x (14 nJ + 2 nJ x (Vm/1.5)^2); background 10 / 12 / 14.3 W.
    k = kernel([{"op": "ld", "n": 4, "l1_hit": 0.0, "l2_hit": 0.5}, {"op": "alu", "n": 2}],
               iterations=20, ctas=30, warps=4)
    for mem_mhz, vm, background_w in ((785.4, 1.275, 10.0), (924.0, 1.5, 12.0),
                                      (1062.6, 1.725, 14.3)):
        r = simulate(gtx480, k, mem_mhz=mem_mhz, interval_instructions=2_000)
        scale = (vm / 1.5) ** 2
        l2, dram = col(r, "l2_accesses"), col(r, "dram_reads") + col(r, "dram_writes")
        assert dram.sum() > 0 and l2.sum() > dram.sum()
        np.testing.assert_allclose(col(r, "dram_dynamic_j"),
                                   (l2 * 2.5 * scale + dram * (14.0 + 2.0 * scale)) * 1e-9,
                                   rtol=1e-12)
        np.testing.assert_allclose(col(r, "dram_static_j"),
                                   background_w * col(r, "time_ns") * 1e-9, rtol=1e-12)
        # the core's dynamic energy holds no L2 energy on this GPU: SM events only
        sm_nj = (col(r, "instructions") * 2.0 + col(r, "alu_insts") * 1.6
                 + col(r, "sfu_insts") * 4.0 + col(r, "l1_accesses") * 1.0
                 + col(r, "shared_transactions") * 0.8)
        np.testing.assert_allclose(col(r, "core_dynamic_j"), sm_nj * 1e-9, rtol=1e-12)


def test_a_clock_of_zero_is_an_error_not_the_nominal_clock():
    from sim.config import ConfigError, load_gpu, load_suite
    from sim.model import Simulation

    gpu, suite = load_gpu("gtx480"), load_suite("default")
    for core, mem in ((0, None), (None, 0)):
        with pytest.raises(ConfigError, match="outside gtx480's"):
            Simulation(gpu, suite.kernel("compute_fma"), core, mem)


def _check_engine_structures(sim):
    """The bookkeeping the engine keeps for speed agrees with the state it summarises."""
    from sim import _kernels as K

    si, wi, wm, wt, wq = sim.si, sim.wi, sim.wm, sim.wt, sim.wq
    n_w = wi.shape[1]
    bits = np.array([[[(wm[s, f, w >> 5] >> (w & 31)) & 1 for w in range(n_w)]
                      for f in range(K.N_WM)] for s in range(sim.n_sm)], dtype=bool)
    act, wait, blk = bits[:, K.WM_ACT], bits[:, K.WM_WAIT], bits[:, K.WM_BLK]
    # the short-wait wheel: slot k of SM s holds warp w if bit w of wq[s, k] is set
    slots = np.array([[[(wq[s, k, w >> 5] >> (w & 31)) & 1 for w in range(n_w)]
                       for k in range(K.W_LONG)] for s in range(sim.n_sm)], dtype=bool)
    wheel = slots.any(1)
    assert np.array_equal(act, wi[:, :, K.WI_ST] == K.W_ACTIVE)
    assert not np.any(wait & ~act) and not np.any(blk & ~act) and not np.any(wait & blk)
    assert np.array_equal(si[:, K.SI_NW], wait.sum(1))
    assert np.array_equal(si[:, K.SI_NW_MEM], (wait & (wi[:, :, K.WI_WMEM] == 1)).sum(1))
    assert np.array_equal(si[:, K.SI_N_BLK], blk.sum(1))
    assert not np.any(wheel & ~wait) and np.all(slots.sum(1) <= 1)
    long_ = wait & ~wheel
    assert np.all(wt[~long_] == K.BIG)
    assert np.all(wt[long_] == wi[:, :, K.WI_WAIT][long_])
    for s in range(sim.n_sm):
        if long_[s].any():      # the earliest long wait, or 0 (to be recounted)
            assert si[s, K.SI_W_MIN] in (0, wt[s].min())
        for w in np.flatnonzero(wheel[s]):      # in the slot of its wait, ending within W_LONG
            assert slots[s, wi[s, w, K.WI_WAIT] % K.W_LONG, w]
            assert 0 < wi[s, w, K.WI_WAIT] - si[s, K.SI_WQ_T] < K.W_LONG
        occ = sum(1 << k for k in range(K.W_LONG) if slots[s, k].any())
        assert si[s, K.SI_WQ_OCC] == occ
        # MSHRs and store queue: heaps on their release cycle over their busy rows
        for rel, n in ((sim.mi[s, :, K.MI_REL], si[s, K.SI_MSHR_BUSY]),
                       (sim.qrel[s], si[s, K.SI_SQ_BUSY])):
            assert np.all(rel[:n] >= 0) and np.all(rel[n:] == -1)
            assert all(rel[(k - 1) // 2] <= rel[k] for k in range(1, n))
            if n:
                assert rel[:n].min() == rel[0]


@pytest.mark.parametrize("name", ["mem_stream", "store_scatter", "shared_matmul",
                                  "phase_alternating", "cache_reuse"])
def test_engine_bookkeeping_stays_consistent(gtx480, name):
    from sim.model import Setting, Simulation

    k = reduced(name, ctas=40, scale=0.05)
    sim = Simulation(gtx480, k, n_sm=3, epoch_cycles=700)
    plan = {1: (Setting(300, 924, 8), (1, 2, 8)), 3: (Setting(700, 785.4, 8), None),
            5: (Setting(500, 924, 2), (2, 1, 1))}
    while (row := sim.step()) is not None:
        _check_engine_structures(sim)
        if row["idx"] in plan and not sim.finished:
            setting, limits = plan[row["idx"]]
            sim.apply(Setting(setting.core_mhz, setting.mem_mhz,
                              min(setting.ctas_per_sm, sim.slots)))
            sim.apply_sm_limits(limits)
            _check_engine_structures(sim)
