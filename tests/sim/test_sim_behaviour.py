"""The behaviours issue 3 must show, on reduced kernels of the default suite.

The full-size checks (whole suite, every P-state) are marked slow.
"""


import pytest
from conftest import reduced

from sim.config import load_gpu, load_suite
from sim.model import simulate


def slowdown(gpu, k, lo, hi=700.0, **kw):
    t = {f: simulate(gpu, k, core_mhz=f, interval_instructions=20_000, **kw).run["time_ns"]
         for f in (lo, hi)}
    return t[lo] / t[hi]


def test_compute_bound_slows_at_least_6x(gtx480):
    assert slowdown(gtx480, reduced("compute_fma", 60, 0.5), 100) >= 6


@pytest.mark.parametrize("name", ["mem_stream", "mem_latency"])
def test_memory_bound_slows_at_most_1_5x(gtx480, name):
    assert slowdown(gtx480, reduced(name, 120, 0.15), 100) <= 1.5


def test_two_slope_is_flat_high_and_steep_low(gtx480):
    # The knee sits near 200 MHz with Fermi's 32 MSHRs per SM (near 300 MHz with the 64 that
    # gtx480 had before issue 40: the misses in flight bound the memory side's rate, so the
    # memory-bound stretch reaches lower clocks); below it, halving the clock nearly doubles
    # the time, as for a compute-bound kernel.
    k = reduced("twoslope_lm", 120, 0.3)
    t = {f: simulate(gtx480, k, core_mhz=f, interval_instructions=20_000).run["time_ns"]
         for f in (700, 300, 200, 100)}
    assert t[300] / t[700] <= 1.15          # memory-like above the knee
    assert t[100] / t[200] >= 1.8           # compute-like below it


def test_store_stalls_shrink_as_core_slows(gtx480):
    k = reduced("store_scatter", 120, 0.3)
    stalls = [simulate(gtx480, k, core_mhz=f, interval_instructions=20_000)
              .intervals.column("crisp_store_stall_cycles").to_numpy().sum()
              for f in (700, 400, 100)]
    assert stalls[0] > stalls[1] > stalls[2] >= 0 and stalls[0] > 0


def test_cache_sensitive_kernel_prefers_fewer_ctas(gtx480):
    k = reduced("cache_reuse", 240, 0.25)
    t = {c: simulate(gtx480, k, ctas_per_sm=c, interval_instructions=20_000).run["time_ns"]
         for c in (8, 4)}
    assert t[4] < t[8]


def test_gtx980_memory_clock_helps_memory_bound_only():
    g = load_gpu("gtx980")

    def mem_speedup(name):
        k = reduced(name, 128, 0.15)
        t = {m: simulate(g, k, mem_mhz=m, interval_instructions=20_000).run["time_ns"]
             for m in (400, 1000)}
        return t[400] / t[1000]

    assert mem_speedup("mem_stream") >= 1.8
    assert mem_speedup("compute_ilp") <= 1.02


def test_static_energy_share_at_nominal(gtx480):
    for name in ("compute_ilp", "mem_stream", "unsat_small_grid", "store_ge", "shared_matmul"):
        r = simulate(gtx480, reduced(name, 60, 0.2), interval_instructions=20_000)
        t = r.intervals
        static = (t.column("core_static_j").to_numpy().sum()
                  + t.column("dram_static_j").to_numpy().sum())
        share = static / r.run["energy_j"]
        assert 0.20 <= share <= 0.65, (name, share)


def test_full_suite_behaviour_on_gtx480(gtx480):
    """Every default kernel at full size, 700 and 100 MHz: the category claims and energy."""
    for k in load_suite("default").kernels:
        r7 = simulate(gtx480, k, core_mhz=700)
        # the slowdown is claimed for the compute and memory categories only: the other 19
        # kernels are not simulated at 100 MHz (a third of the test's time)
        if k.category in ("compute", "memory"):
            ratio = simulate(gtx480, k, core_mhz=100).run["time_ns"] / r7.run["time_ns"]
        if k.category == "compute":
            # paper 000 section 4: compute-bound means >= 75% computation cycles; such
            # kernels slow nearly with the clock (compute_rowload's exposed loads: 5.3x)
            t7 = r7.intervals
            stalls = (t7.column("crisp_load_stall_cycles").to_numpy().sum()
                      + t7.column("crisp_store_stall_cycles").to_numpy().sum())
            assert 1 - stalls / t7.column("cycles").to_numpy().sum() >= 0.75, k.name
            assert ratio >= 5, k.name
        if k.category == "memory":
            assert ratio <= 1.5, k.name
        assert r7.intervals.num_rows >= 20, k.name
        t = r7.intervals
        static = (t.column("core_static_j").to_numpy().sum()
                  + t.column("dram_static_j").to_numpy().sum())
        assert 0.20 <= static / r7.run["energy_j"] <= 0.65, k.name
