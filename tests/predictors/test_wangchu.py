"""Wang & Chu's core x memory model (paper 003, gpudb.predictors.wangchu_model): hand-computed
cases per regime,
the paper's own numbers, and invariants. All hand arithmetic is in core cycles unless noted."""

import numpy as np
import pytest

from gpudb.predictors import wangchu_model as wc

# Small round parameters: dm_lat = 200 * core_f/mem_f + 300 core cycles (eq. 4 form),
# dm_del 10 memory cycles, L2 200 / 1 cycles, shared 30 cycles, 4 cycles per instruction.
CAL = wc.Calibration(dm_lat_slope=200.0, dm_lat_intercept=300.0, dm_del=10.0, l2_lat=200.0,
                     l2_del=1.0, sh_lat=30.0, inter_arr=5.0, inst_cycle=4.0)

FREQS = np.arange(400.0, 1001.0, 100.0)   # the paper's 7 settings per axis


def counters(**kw):
    base = dict(gld_trans_per_warp=8.0, l2_hit_rate=0.0, comp_inst_per_warp=8.0, blocks=64,
                warps_per_block=4, active_sms=4, warps_per_sm=8)
    base.update(kw)
    return wc.KernelCounters(**base)


# --- the paper's numbers ---------------------------------------------------------------------

def test_eq4_reproduces_table_ii_at_core_400():
    # Table II: minimum DRAM latency (core cycles) at memory 400..1000 MHz. Eq. 4 with the GTX 980
    # fit gives these at core 400 MHz, e.g. mem 700: 222.78 * 400/700 + 277.32 = 127.30 + 277.32
    # = 404.62 (table: 404.6); mem 800: 222.78 * 0.5 + 277.32 = 388.71 (388.7).
    cal = wc.Calibration(**wc.GTX980_PUBLISHED, sh_lat=0.0, inter_arr=0.0, inst_cycle=1.0)
    table_ii = [500.0, 455.5, 425.8, 404.6, 388.7, 376.3, 366.4]
    assert wc.dram_latency_cycles(cal, 400.0, FREQS) == pytest.approx(table_ii, abs=0.15)
    # At the baseline ratio 1: 222.78 + 277.32 = 500.1 cycles.
    assert cal.dm_lat() == pytest.approx(500.1)


def test_gtx980_published_l2_and_delay():
    # Section IV-B: L2 latency 222 cycles, delay 1 cycle; Table III at 700/700: dm_del 9.31.
    assert wc.GTX980_PUBLISHED["l2_lat"] == 222.0
    assert wc.GTX980_PUBLISHED["l2_del"] == 1.0
    assert wc.GTX980_PUBLISHED["dm_del"] == 9.31


# --- section IV ------------------------------------------------------------------------------

def test_eq2_eq3_and_dm_del_inference():
    # eq. 2: interArr * #W + dm_lat * gld_trans = 5 * 100 + 500 * 4 = 2500
    assert wc.t_lat_light(5.0, 100, 500.0, 4) == pytest.approx(2500.0)
    # eq. 3: dm_lat + dm_del * gld_trans * #W = 500 + 10 * 4 * 100 = 4500
    assert wc.t_lat_saturated(500.0, 10.0, 4, 100) == pytest.approx(4500.0)
    # inverted: (4500 - 500) / (4 * 100) = 10
    assert wc.dm_del_from_streaming(4500.0, 500.0, 4, 100) == pytest.approx(10.0)


def test_amat_eq5():
    # core 800, mem 400: r = 2; dm_lat = 200*2 + 300 = 700; l2_hr = 0.25
    # agl_lat = 200*0.25 + 700*0.75 = 50 + 525 = 575
    # agl_del = 1*0.25 + 10*2*0.75 = 0.25 + 15 = 15.25
    lat, dl = wc.amat(CAL, 0.25, 800.0, 400.0)
    assert lat == pytest.approx(575.0)
    assert dl == pytest.approx(15.25)
    # the literal reading of 5a multiplies eq. 4 by r again: 50 + 1400*0.75 = 1100
    lat_lit, _ = wc.amat(CAL, 0.25, 800.0, 400.0, wc.Readings(eq5a_scale_dm_lat=True))
    assert lat_lit == pytest.approx(1100.0)


# --- section V: one hand-computed case per regime --------------------------------------------

def test_compute_dominated_eq8_9():
    k = counters(l2_hit_rate=0.5, comp_inst_per_warp=400.0, gld_trans_per_warp=4.0)
    # core 500, mem 1000: r = 0.5; dm_lat = 200*0.5 + 300 = 400
    # agl_lat = 200*0.5 + 400*0.5 = 300; agl_del = 1*0.5 + 10*0.5*0.5 = 3
    # avr_inst = 400/4 = 100; avr_comp = 4*100 = 400 (eq. 7)
    # 8a: 400 >= 3; 8b: 400*(8-1) = 2800 >= 300  -> compute-dominated
    # o_itrs = gld_trans = 4; eq. 9: 400*8*4 + 300 = 13100
    # eq. 6: rounds = 4*64 / (8*4) = 8 -> 104800 cycles; / 500 MHz -> 209600 ns
    ns, which = wc.predict_time_ns(k, CAL, 500.0, 1000.0, return_regime=True)
    assert which == wc.COMPUTE
    assert ns == pytest.approx(209600.0)


def test_memory_dominated_eq10_11():
    k = counters()   # l2_hr 0, comp 8, gld 8, #Aw 8, #Wpb 4, 64 blocks, 4 SMs
    # core 1000, mem 500: r = 2; agl_lat = dm_lat = 200*2 + 300 = 700; agl_del = 10*2 = 20
    # avr_comp = 4 * 8/8 = 4
    # 10a: 4 <= 20; 10b: 4 + 700 = 704 >= 20*(8-1) = 140  -> memory-dominated
    # eq. 11 (#Wpb as printed), o_itrs = 8: 700 + 4 + 20*4*8 = 1344
    # eq. 6: rounds 8 -> 10752 cycles; / 1000 MHz -> 10752 ns
    ns, which = wc.predict_time_ns(k, CAL, 1000.0, 500.0, return_regime=True)
    assert which == wc.MEMORY
    assert ns == pytest.approx(10752.0)
    # with #Aw in eq. 11: 704 + 20*8*8 = 704 + 1280 = 1984; * 8 rounds = 15872
    ns_aw = wc.predict_time_ns(k, CAL, 1000.0, 500.0, readings=wc.Readings(eq11_warps="aw"))
    assert ns_aw == pytest.approx(15872.0)


def test_few_warps_short_compute_eq12_13():
    k = counters(warps_per_sm=64)
    # core = mem = 1000: agl_lat = 500, agl_del = 10, avr_comp = 4
    # 12a: 4 <= 10; 12b: 4 + 500 = 504 <= 10*(64-1) = 630  -> eq. 13
    # eq. 13, o_itrs 8: 10*64 + 500 + 4 + 504*7 = 640 + 504 + 3528 = 4672
    # eq. 6: rounds = 4*64 / (64*4) = 1 -> 4672 cycles = 4672 ns
    ns, which = wc.predict_time_ns(k, CAL, 1000.0, 1000.0, return_regime=True)
    assert which == wc.FEW_WARPS_SHORT
    assert ns == pytest.approx(4672.0)


def test_few_warps_long_compute_eq14_15():
    k = counters(comp_inst_per_warp=80.0, warps_per_sm=4, blocks=16)
    # core = mem = 1000: agl_lat = 500, agl_del = 10; avr_comp = 4 * 80/8 = 40
    # 14a: 40 >= 10; 14b: 40*(4-1) = 120 <= 500  -> eq. 15
    # eq. 15, o_itrs 8: 40*3 + (40 + 500)*8 = 120 + 4320 = 4440
    # eq. 6: rounds = 4*16 / (4*4) = 4 -> 17760 cycles = 17760 ns
    ns, which = wc.predict_time_ns(k, CAL, 1000.0, 1000.0, return_regime=True)
    assert which == wc.FEW_WARPS_LONG
    assert ns == pytest.approx(17760.0)


def test_shared_intensive_eq18_21():
    k = counters(l2_hit_rate=0.5, comp_inst_per_warp=80.0, gld_trans_per_warp=8.0,
                 shm_inst_per_warp=64.0, o_itrs=4, warps_per_sm=16, warps_per_block=8,
                 blocks=32)
    # core = mem = 1000: agl_lat = 200*0.5 + 500*0.5 = 350; agl_del = 0.5 + 10*0.5 = 5.5
    # avr_comp = 4 * 80/8 = 40; gld_trans per iteration = 8/4 = 2; i_itrs = 64/4 = 16
    # 16a: 40 <= 5.5 fails -> intensive
    # eq. 18: 40*2 + 5.5*2*16 + 350 + 30 = 80 + 176 + 380 = 636
    # eq. 19: 40*(8-1) + (40 + 30)*16 = 280 + 1120 = 1400
    # eq. 20: 40*2 + 5.5*2*8 + 350 + 30 = 80 + 88 + 380 = 548
    # eq. 21: 636 + (1400 + 548)*4 = 636 + 7792 = 8428
    # eq. 6: rounds = 8*32 / (16*4) = 4 -> 33712 cycles = 33712 ns
    t, t1, t2, t3 = wc.t_active_shared_intensive(40.0, 350.0, 5.5, 30.0, 16, 8, 2.0, 16.0, 4.0)
    assert (t1, t2, t3, t) == pytest.approx((636.0, 1400.0, 548.0, 8428.0))
    ns, which = wc.predict_time_ns(k, CAL, 1000.0, 1000.0, return_regime=True)
    assert which == wc.SHARED_INTENSIVE
    assert ns == pytest.approx(33712.0)


def test_shared_infrequent_eq16_17():
    k = counters(shm_inst_per_warp=1.0, warps_per_sm=32, warps_per_block=8)
    # core 1000, mem 800: r = 1.25; agl_lat = 200*1.25 + 300 = 550; agl_del = 10*1.25 = 12.5
    # avr_comp = 4 * 8/8 = 4
    # 16a: 4 <= 12.5; 16b: 4 + 30 = 34 <= 12.5*(32-8) = 300  -> infrequent
    # eq. 17 (gld_trans = 8 per warp): 4 + 550 + 12.5*32*8 = 554 + 3200 = 3754
    # eq. 6: rounds = 8*64 / (32*4) = 4 -> 15016 cycles = 15016 ns
    ns, which = wc.predict_time_ns(k, CAL, 1000.0, 800.0, return_regime=True)
    assert which == wc.SHARED_INFREQUENT
    assert ns == pytest.approx(15016.0)


# --- invariants ------------------------------------------------------------------------------

def test_compute_dominated_scales_as_inverse_core_clock():
    core, mem = np.meshgrid(FREQS, FREQS, indexing="ij")
    # all L2 hits: every term is in core cycles, so time * core_f is constant
    k = counters(l2_hit_rate=1.0, comp_inst_per_warp=400.0, gld_trans_per_warp=4.0)
    ns, which = wc.predict_time_ns(k, CAL, core, mem, return_regime=True)
    assert (which == wc.COMPUTE).all()
    assert ns * core == pytest.approx(np.full(core.shape, ns[0, 0] * core[0, 0]))
    # half DRAM traffic but heavy compute: memory terms negligible, ~1/core_f within 0.1%
    k = counters(l2_hit_rate=0.5, comp_inst_per_warp=400000.0, gld_trans_per_warp=4.0)
    ns, which = wc.predict_time_ns(k, CAL, core, mem, return_regime=True)
    assert (which == wc.COMPUTE).all()
    assert ns * core == pytest.approx(np.full(core.shape, ns[0, 0] * core[0, 0]), rel=1e-3)


def test_memory_dominated_depends_on_memory_clock_through_dram_terms():
    core, mem = np.meshgrid(FREQS, FREQS, indexing="ij")
    k = counters(comp_inst_per_warp=4.0)   # avr_comp = 4 * 4/8 = 2 < agl_del = 10r >= 4
    ns, which = wc.predict_time_ns(k, CAL, core, mem, return_regime=True)
    assert (which == wc.MEMORY).all()
    # T_active = (200r + 300) + 2 + 10r*4*8 = 520r + 302 core cycles, r = core/mem; rounds 8
    # ns = 8 * (520/mem + 302/core) * 1000: DRAM slope and delay scale with the memory clock,
    # the core-clock intercept and compute with the core clock.
    assert ns == pytest.approx(8 * (520.0 / mem + 302.0 / core) * 1e3)
    assert (np.diff(ns, axis=1) < 0).all()     # faster memory, shorter time


def test_regime_boundaries_as_printed():
    k = counters(warps_per_sm=8)
    eps = 1e-6
    # 8a (avr_comp vs agl_del), with agl_lat = 30 and #Aw = 8 (8b: avr*7 >= 30 holds at 5):
    assert wc.regime(5.0, 30.0, 5.0, k) == wc.COMPUTE            # tie -> 8a holds
    assert wc.regime(5.0 + eps, 30.0, 5.0, k) == wc.COMPUTE
    assert wc.regime(5.0 - eps, 30.0, 5.0, k) == wc.FEW_WARPS_SHORT   # 10b: 35 - eps >= 35 fails
    # 8b vs 14b: avr 10, del 5, avr*(8-1) = 70 against agl_lat
    assert wc.regime(10.0, 70.0 - eps, 5.0, k) == wc.COMPUTE
    assert wc.regime(10.0, 70.0 + eps, 5.0, k) == wc.FEW_WARPS_LONG
    # 10b vs 12b: avr 2, del 10, del*(8-1) = 70 against avr + agl_lat
    assert wc.regime(2.0, 68.0 + eps, 10.0, k) == wc.MEMORY
    assert wc.regime(2.0, 68.0 - eps, 10.0, k) == wc.FEW_WARPS_SHORT
    swapped = wc.Readings(memory_conditions="swapped")
    assert wc.regime(2.0, 68.0 + eps, 10.0, k, readings=swapped) == wc.FEW_WARPS_SHORT
    assert wc.regime(2.0, 68.0 - eps, 10.0, k, readings=swapped) == wc.MEMORY
    # 16b with shared memory: #Aw 16, #Wpb 8, avr 2, sh_lat 30: 32 <= agl_del * 8
    ks = counters(shm_inst_per_warp=1.0, warps_per_sm=16, warps_per_block=8)
    assert wc.regime(2.0, 500.0, 4.0, ks, sh_lat=30.0) == wc.SHARED_INFREQUENT
    assert wc.regime(2.0, 500.0, 4.0 - eps, ks, sh_lat=30.0) == wc.SHARED_INTENSIVE
    assert wc.regime(2.0, 500.0, 1.9, ks, sh_lat=30.0) == wc.SHARED_INTENSIVE   # 16a fails


def test_time_continuous_across_compute_boundary_8b():
    # eq. 9 - eq. 15 = (o_itrs - 1) * (avr_comp*(#Aw-1) - agl_lat): equal where 8b turns.
    avr, lat, a, o = 10.0, 70.0, 8, 5.0
    assert wc.t_active_compute(avr, lat, a, o) == pytest.approx(
        wc.t_active_few_warps_long(avr, lat, a, o))


def test_swapped_memory_conditions_pick_the_larger_time():
    # the case of test_few_warps_short_compute_eq12_13 (#Aw 64): printed conditions give eq. 13
    # (4672); swapped they give eq. 11, which with #Aw is 504 + 10*64*8 = 5624 > 4672.
    k = counters(warps_per_sm=64)
    r = wc.Readings(memory_conditions="swapped", eq11_warps="aw")
    ns, which = wc.predict_time_ns(k, CAL, 1000.0, 1000.0, return_regime=True, readings=r)
    assert which == wc.MEMORY
    assert ns == pytest.approx(5624.0)


def test_whole_rounds_reading():
    # 4*10 warps / (8*4) = 1.25 rounds; rounded up: 2
    k = counters(l2_hit_rate=1.0, comp_inst_per_warp=400.0, gld_trans_per_warp=4.0, blocks=10)
    frac = wc.predict_time_ns(k, CAL, 1000.0, 1000.0)
    whole = wc.predict_time_ns(k, CAL, 1000.0, 1000.0, readings=wc.Readings(whole_rounds=True))
    assert whole == pytest.approx(frac / 1.25 * 2)


def test_broadcasts_over_7x7_grid():
    core, mem = np.meshgrid(FREQS, FREQS, indexing="ij")
    for k in (counters(), counters(warps_per_sm=64), counters(comp_inst_per_warp=400.0),
              counters(shm_inst_per_warp=64.0, o_itrs=4, l2_hit_rate=0.5)):
        ns, which = wc.predict_time_ns(k, CAL, core, mem, return_regime=True)
        assert ns.shape == (7, 7) and which.shape == (7, 7)
        assert np.isfinite(ns).all() and (ns > 0).all()
        assert set(np.unique(which)) <= set(wc.REGIMES)
        # each grid cell equals the scalar prediction
        assert ns[2, 5] == pytest.approx(wc.predict_time_ns(k, CAL, core[2, 5], mem[2, 5]))
    # 1-D core axis against a column of memory clocks broadcasts too
    assert wc.predict_time_ns(counters(), CAL, FREQS, FREQS[:, None]).shape == (7, 7)


def test_counters_validation():
    with pytest.raises(ValueError):
        counters(gld_trans_per_warp=0.0)
    with pytest.raises(ValueError):
        counters(l2_hit_rate=1.5)
