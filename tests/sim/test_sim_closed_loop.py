"""The closed-loop hook: a controller sets core/memory MHz and the CTA limit per interval."""


import pytest
from conftest import reduced

from sim.config import kernel_from_table
from sim.model import FixedController, Setting, Simulation, simulate


@pytest.mark.parametrize("name", ["twoslope_lm", "store_ge", "cache_histo"])
def test_fixed_controller_reproduces_the_fixed_run_exactly(gtx480, name):
    k = reduced(name, 45, 0.2)
    fixed = simulate(gtx480, k, core_mhz=400, interval_instructions=10_000)
    loop = simulate(gtx480, k, core_mhz=400, interval_instructions=10_000,
                    controller=FixedController())
    assert loop.intervals.equals(fixed.intervals)
    assert loop.run == fixed.run


class Schedule:
    """Switches through a list of settings, one per interval (test controller)."""

    name = "schedule"

    def __init__(self, settings):
        self.settings = settings
        self.seen = []

    def decide(self, idx, row, setting):
        self.seen.append((idx, setting))
        return self.settings[min(idx + 1, len(self.settings) - 1)]


def test_controller_settings_are_recorded_and_switches_charged(gtx480):
    k = reduced("twoslope_hw", 60, 0.2)
    # 8-warp CTAs: at most 6 fit beside each other on a 48-warp SM
    plan = [Setting(700, 924, 6), Setting(300, 924, 6), Setting(300, 1062.6, 4),
            Setting(100, 785.4, 2), Setting(700, 924, 6)]
    ctl = Schedule(plan)
    r = simulate(gtx480, k, interval_instructions=10_000, controller=ctl)
    t = r.intervals.to_pydict()
    assert r.run["policy"] == "schedule"
    assert len(t["idx"]) > len(plan)
    for i, s in enumerate(plan):
        assert (t["core_mhz"][i], t["mem_mhz"][i], t["ctas_per_sm"][i]) == tuple(s)
    # a V/F change costs 100 ns (paper 000 section 4), a CTA-limit change alone costs nothing
    assert t["switch_ns"][:6] == [0.0, 100.0, 100.0, 100.0, 100.0, 0.0]
    for i in range(len(t["idx"])):
        assert t["time_ns"][i] == pytest.approx(
            t["cycles"][i] * 1000 / t["core_mhz"][i] + t["switch_ns"][i])
    assert r.run["instructions"] == k.warp_instructions
    assert r.run["time_ns"] == pytest.approx(sum(t["time_ns"]))


def test_cta_limit_applies_to_new_launches(gtx480):
    k = reduced("cache_reuse", 480, 0.02)
    sim = Simulation(gtx480, k, interval_instructions=2_000)
    first = sim.step()
    sim.apply(Setting(700, 924, 2))
    rows = []
    while (row := sim.step()) is not None:
        rows.append(row)
    # running CTAs finish, new ones launch only up to 2 per SM (2 CTAs x 4 warps)
    assert first["active_warps_avg"] > 20
    assert max(r["active_warps_avg"] for r in rows[len(rows) // 2:]) <= 8 + 1e-9
    assert all(r["ctas_per_sm"] == 2 for r in rows)


def test_switching_core_clock_retimes_memory_in_flight(gtx480):
    """A pointer chase switched to 100 MHz keeps its latency in ns, not in cycles."""
    k = kernel_from_table({"name": "chase", "category": "t", "description": "synthetic",
                           "ctas": 1, "warps_per_cta": 1,
                           "phase": [{"iterations": 60, "body": [
                               {"op": "ld", "id": "p", "dep": "p"}]}]})
    sim = Simulation(gtx480, k, interval_instructions=20)
    sim.step()
    sim.apply(Setting(100, 924, 8))
    rows = [sim.step(), sim.step()]
    per_load_ns = rows[1]["time_ns"] / rows[1]["instructions"]
    assert per_load_ns == pytest.approx(457.5, rel=0.03)       # the same ~457 ns at 100 MHz
