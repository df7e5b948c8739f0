"""Per-SM CTA limits with pausing, as Equalizer needs (issue 14 item 2, paper 001 IV-B)."""

import hashlib
import json

import numpy as np
import pytest
from conftest import col, reduced

from sim import _kernels as K
from sim.config import ConfigError, kernel_from_table
from sim.model import _TOTALS, Setting, Simulation, simulate

EPOCH = 128                      # one Equalizer sample per epoch (G_EQ_PERIOD), at its start
# Totals fixed by the program alone: pausing may move cache hits, never the work done.
WORK = ["instructions", "alu_insts", "sfu_insts", "gld_insts", "gst_insts", "shared_insts",
        "barrier_insts", "gld_transactions", "gst_transactions", "shared_transactions"]


class PerSm:
    """Keeps the setting; after interval i sets the per-SM limits plan[i] (test controller).
    ``used[j]`` is the per-SM limits interval j ran under (None: none set)."""

    name = "per_sm_test"

    def __init__(self, plan):
        self.plan = plan
        self.used = {0: None}

    def decide(self, idx, row, setting):
        return setting

    def decide_sm_limits(self, idx, row, limits):
        new = self.plan.get(idx, limits)
        self.used[idx + 1] = new
        return new


def run_checked(sim, ctl):
    """sim.run(ctl), checking the CTA slots after every interval: resident CTAs within the
    hardware's slots, running unpaused CTAs within the SM's limit, counts consistent."""
    paused_seen = 0
    while (row := sim.step()) is not None:
        ci = sim.ci
        running = (ci[:, :, K.CI_ST] == 1) & (ci[:, :, K.CI_PAUSED] == 0)
        resident = ci[:, :, K.CI_ST] != 0
        assert np.array_equal(resident.sum(1), sim.si[:, K.SI_N_CTAS])
        assert np.array_equal((resident & (ci[:, :, K.CI_PAUSED] == 1)).sum(1),
                              sim.si[:, K.SI_PAUSED])
        assert np.all(sim.si[:, K.SI_N_CTAS] <= sim.slots)
        limits = ctl.used.get(row["idx"])
        if limits is not None:
            assert np.all(running.sum(1) <= np.asarray(limits))
        paused_seen += int(sim.si[:, K.SI_PAUSED].sum())
        if not sim.finished:
            sim.apply(ctl.decide(row["idx"], row, sim.setting))
            sim.apply_sm_limits(ctl.decide_sm_limits(row["idx"], row, sim.sm_limits))
    return sim._result("x", sim.setting, ctl.name), paused_seen


def test_paused_ctas_resume_and_no_work_is_lost_or_duplicated(gtx480):
    k = reduced("cache_reuse", 40, 0.05)
    fixed = simulate(gtx480, k, n_sm=2, epoch_cycles=EPOCH)
    ctl = PerSm({1: (1, 1), 3: (8, 8)})
    sim = Simulation(gtx480, k, n_sm=2, epoch_cycles=EPOCH)
    r, paused_seen = run_checked(sim, ctl)
    assert paused_seen > 0                                  # CTAs were really paused
    assert sim.gi[K.GS_CTAS_DONE] == k.ctas and sim.gi[K.GS_CTA_NEXT] == k.ctas
    assert np.all(sim.si[:, K.SI_PAUSED] == 0) and np.all(sim.si[:, K.SI_N_CTAS] == 0)
    assert r.run["instructions"] == fixed.run["instructions"] == k.warp_instructions
    for c in WORK:
        assert col(r, c).sum() == col(fixed, c).sum(), c
    # the timing does change: cache_reuse even runs faster, its active CTAs thrashing L1 less
    assert col(r, "cycles").sum() != col(fixed, "cycles").sum()


def test_paused_warps_are_not_sampled_as_active(gtx480):
    k = reduced("cache_reuse", 40, 0.05)
    wpc = k.warps_per_cta
    ctl = PerSm({1: (1, 1), 3: (2, 2), 5: (8, 8)})
    sim = Simulation(gtx480, k, n_sm=2, epoch_cycles=EPOCH)
    run_checked(sim, ctl)
    rows = sim.rows
    assert len(rows) > 8
    # before the limit every SM had all 8 CTAs' warps active at the first sample
    assert np.all(rows[0]["sm_eq"][:, K.E_ACTIVE] > 2 * wpc)
    for row in rows:
        limits = ctl.used.get(row["idx"])
        eq = row["sm_eq"]
        assert np.all(eq[:, K.E_SAMPLES] == 1)              # one sample per 128-cycle epoch
        if limits is not None and limits != (8, 8):
            assert np.all(eq[:, K.E_ACTIVE] <= np.asarray(limits) * wpc), row["idx"]
    # GPU-wide: eq_active_warps is the per-SM mean of the same samples
    assert rows[2]["eq_active_warps"] <= 1 * wpc


def test_different_limits_on_different_sms(gtx480):
    k = reduced("cache_reuse", 40, 0.05)
    ctl = PerSm({0: (1, 8)})
    sim = Simulation(gtx480, k, n_sm=2, epoch_cycles=EPOCH)
    run_checked(sim, ctl)
    limited = [r["sm_eq"] for r in sim.rows[1:6]]
    act = np.sum([eq[:, K.E_ACTIVE] for eq in limited], axis=0)
    assert np.all([eq[0, K.E_ACTIVE] <= k.warps_per_cta for eq in limited])
    assert act[0] < act[1]
    # SM 1 runs more CTAs than SM 0 over the whole kernel
    assert sim.gi[K.GS_CTAS_DONE] == k.ctas


def test_limits_can_be_removed_and_are_validated(gtx480):
    k = reduced("cache_reuse", 40, 0.05)
    sim = Simulation(gtx480, k, n_sm=2, epoch_cycles=EPOCH)
    for bad in [(1,), (1, 2, 3), (0, 1), (1, 1.5), (True, 1)]:
        with pytest.raises(ConfigError):
            sim.apply_sm_limits(bad)
    sim.apply_sm_limits((99, 3))
    assert sim.sm_limits == (8, 3)                          # capped at the hardware's slots
    sim.step()
    assert sim.si[1, K.SI_PAUSED] == 5
    sim.apply_sm_limits(None)
    assert sim.sm_limits is None
    sim.step()
    assert np.all(sim.si[:, K.SI_PAUSED] == 0)


def tiny(ctas):
    return kernel_from_table({
        "name": "t", "category": "test", "description": "synthetic test", "ctas": ctas,
        "warps_per_cta": 4, "shared_bytes": 1024, "footprint_bytes": 512,
        "phase": [{"iterations": 5, "body": [
            {"op": "ld", "id": "a", "trans": 2, "l1_hit": 0.3, "l2_hit": 0.3},
            {"op": "alu", "n": 3, "dep": "a"}, {"op": "sfu", "dep": "prev"},
            {"op": "shared", "trans": 2}, {"op": "bar"},
            {"op": "st", "trans": 3, "dram_write": 0.5}]}]})


def test_pausing_matches_the_pure_python_reference_and_no_skip(gtx480):
    k = tiny(14)
    plan = {0: (1, 2), 2: (3, 1), 4: None}
    runs = []
    for kw in ({}, {"reference": True}, {"skip": False}):
        ctl = PerSm(plan)
        sim = Simulation(gtx480, k, n_sm=2, epoch_cycles=150, **kw)
        r, paused_seen = run_checked(sim, ctl)
        assert paused_seen > 0
        assert r.run["instructions"] == k.warp_instructions
        runs.append((r, sim.rows))
    (a, ra), (b, rb), (c, rc) = runs
    assert a.intervals.num_rows >= 6
    assert a.intervals.equals(b.intervals) and a.run == b.run
    assert a.intervals.equals(c.intervals) and a.run == c.run
    for x, y, z in zip(ra, rb, rc, strict=True):
        assert np.array_equal(x["sm_eq"], y["sm_eq"]) and np.array_equal(x["sm_eq"], z["sm_eq"])


# --- Runs without per-SM limits are unchanged --------------------------------------------

ENERGY = ("core_dynamic_j", "core_static_j", "dram_dynamic_j", "dram_static_j", "other_j")


# Interval columns added after these digests were taken, with the value every run of a GPU
# without the mechanism has (issue 37: FP64 instructions, 0 where the kernel has none).
LATER = {"dp_insts": 0}


def digest(result):
    """sha256 of the interval table as sorted JSON, less run_id and the energy columns (the
    memory V/F domain's energy split of SIM_VERSION 4 moved energy between them), and less the
    columns added later (LATER), each checked to hold its value for runs without it."""
    columns = result.intervals.to_pydict()
    for c, value in LATER.items():
        assert set(columns.pop(c)) <= {value}, c
    table = {c: v for c, v in columns.items() if c not in ENERGY and c != "run_id"}
    return hashlib.sha256(json.dumps(table, sort_keys=True).encode()).hexdigest()


class GpuWideLimits:
    """Changes only the GPU-wide ctas_per_sm (the closed loop as it was before per-SM
    limits)."""

    name = "limits"

    def decide(self, idx, row, s):
        return Setting(s.core_mhz, s.mem_mhz, [6, 2, 1, 3, 6][min(idx + 1, 4)])


# (time_ns, energy_j, rows, digest) of reduced("cache_reuse", 150, 0.03) on gtx480, computed
# with the committed simulator before per-SM limits existed (sim/_kernels.py and sim/model.py
# at 1b1a19f; the digests recomputed from that commit's runs without the energy columns).
# Run ids cover SIM_VERSION, so they are the ones at version 5 (issue 37 added mechanisms these
# runs do not use: the same values under new ids), and the configuration: gtx480 with its 64
# MSHRs of before issue 40.
BEFORE = {
    "fixed": (8252.857142857141, 0.0008725437142857144, 11,
              "570289a0d896a87a661b33dd97faa9de194f216fc8fb7158aaa914ea8a095622"),
    "gpu_wide": (8827.142857142855, 0.0009195847857142859, 11,
                 "c1bc80744459c56d89bc20b1763bf5e81876d0d3a955391d7b94dc0f5b936194"),
    "gpu_wide_epoch": (7355.714285714286, 0.0007909204285714284, 6,
                       "00fdc3f68c76ed2c6db3dffb2236d1fe485288bbab62cdcfadd3cfb733c75718"),
}
RUN_IDS_V5 = {
    "fixed": "8a3c23f8ce1de9ee2e9d0ce2b31ad3577171a1292cf79e3a857e22d1a2deff6e",
    "gpu_wide": "b686472a29421786494aff401a545ff2d31accb2f0c4f2a8c7ce1ed0d5214d19",
    "gpu_wide_epoch": "514d6f2822564a722538cb86da8bdd336bf14cabb95fbeff0bd8a590c1a85df7",
}


def test_runs_without_per_sm_limits_are_bit_identical_to_before(gtx480_64_mshrs):
    gtx480 = gtx480_64_mshrs  # the configuration these runs were made with
    k = reduced("cache_reuse", 150, 0.03)
    runs = {
        "fixed": simulate(gtx480, k, interval_instructions=2_000),
        "gpu_wide": simulate(gtx480, k, interval_instructions=2_000,
                             controller=GpuWideLimits()),
        "gpu_wide_epoch": simulate(gtx480, k, epoch_cycles=1024, controller=GpuWideLimits()),
    }
    for key, r in runs.items():
        time_ns, energy_j, rows, table = BEFORE[key]
        assert (r.run["run_id"], r.run["time_ns"], r.intervals.num_rows, digest(r)) == \
            (RUN_IDS_V5[key], time_ns, rows, table), key
        # at the nominal memory clock the energy split moved, not the total (to rounding)
        assert r.run["energy_j"] == pytest.approx(energy_j, rel=1e-12), key
    # limits set and removed again before anything ran change nothing either
    sim = Simulation(gtx480, k, interval_instructions=2_000)
    sim.apply_sm_limits((2,) * sim.n_sm)
    sim.apply_sm_limits(None)
    assert digest(sim.run()) == BEFORE["fixed"][3]
    for c in _TOTALS:
        assert c in runs["fixed"].intervals.column_names
