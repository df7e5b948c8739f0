"""Epoch mode of the closed-loop hook: intervals cut every E core cycles (issue 14 item 1)."""


import numpy as np
import pytest
from conftest import col, reduced

from sim import _kernels as K
from sim.config import ConfigError, kernel_from_table, load_suite
from sim.model import _PER_SM, _TOTALS, Setting, Simulation, run_id, simulate

# Columns that restart their critical path or take a maximum per interval: not additive over
# intervals, so an epoch run's totals need not equal an instruction-cut run's.
NOT_ADDITIVE = {"crit_path_cycles", "crisp_lcp_cycles", "crisp_slot_lcp_cycles"}
EQ_COLUMNS = ("eq_samples", "eq_active_warps", "eq_waiting_warps", "eq_xalu_warps",
              "eq_xmem_warps")


def epoch_rows(sim):
    rows = []
    while (row := sim.step()) is not None:
        rows.append(row)
    return rows


KERNELS = ["mem_gather", "store_ge", "shared_matmul"]


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("epoch", [500, 2048])
def test_epochs_are_exactly_e_cycles_and_totals_match_the_instruction_cut_run(gtx480, name,
                                                                             epoch):
    k = reduced(name, ctas=30, scale=0.25)
    ep = simulate(gtx480, k, epoch_cycles=epoch)
    ins = simulate(gtx480, k, interval_instructions=5_000)
    cyc = col(ep, "cycles")
    assert len(cyc) >= 3
    assert np.all(cyc[:-1] == epoch) and 1 <= cyc[-1] <= epoch
    assert np.array_equal(ep.extra["end_cycle"], np.cumsum(cyc).astype(np.int64))
    # the same deterministic simulation, cut elsewhere: identical whole-run totals
    assert cyc.sum() == col(ins, "cycles").sum()
    assert ep.run["instructions"] == ins.run["instructions"] == k.warp_instructions
    for c in _TOTALS:
        assert col(ep, c).sum() == col(ins, c).sum(), c
    for c in set(_PER_SM) - NOT_ADDITIVE:
        assert col(ep, c).sum() == pytest.approx(col(ins, c).sum(), rel=1e-12, abs=1e-9), c
    awc = (col(ep, "active_warps_avg") * cyc).sum()
    assert awc == pytest.approx((col(ins, "active_warps_avg") * col(ins, "cycles")).sum(),
                                rel=1e-12)
    assert ep.run["time_ns"] == pytest.approx(ins.run["time_ns"], rel=1e-12)
    assert ep.run["energy_j"] == pytest.approx(ins.run["energy_j"], rel=1e-12)
    assert ep.run["run_id"] != ins.run["run_id"]


@pytest.mark.parametrize("name", KERNELS)
def test_skipped_idle_cycles_are_split_exactly_at_the_epoch_boundary(gtx480, name):
    # Without skipping every SM steps every cycle, so no sleeping SM straddles a boundary:
    # each row (critical paths included) must be identical with skipping on.
    k = reduced(name, ctas=30, scale=0.25)
    sim = Simulation(gtx480, k, epoch_cycles=777, skip=True)
    straddled = 0
    while sim.step() is not None:
        # an SM asleep past the boundary: its gap was split between the two epochs
        straddled += int(np.any(sim.si[:, K.SI_NEXT] > sim.gi[K.GS_T]))
    assert straddled > 0
    a = sim._result("x", Setting(700.0, 924.0, sim.slots), "fixed")
    slow = Simulation(gtx480, k, epoch_cycles=777, skip=False)
    b = slow.run()
    assert a.intervals.drop(["run_id"]).equals(b.intervals.drop(["run_id"]))
    assert len(sim.rows) == len(slow.rows)
    for x, y in zip(sim.rows, slow.rows, strict=True):
        assert np.array_equal(x["sm_eq"], y["sm_eq"])


def test_epoch_mode_matches_the_pure_python_reference(gtx480):
    k = kernel_from_table({
        "name": "t", "category": "test", "description": "synthetic test", "ctas": 6,
        "warps_per_cta": 4, "shared_bytes": 1024,
        "phase": [{"iterations": 5, "body": [
            {"op": "ld", "id": "a", "trans": 2, "l1_hit": 0.3, "l2_hit": 0.3},
            {"op": "alu", "n": 3, "dep": "a"}, {"op": "sfu", "dep": "prev"},
            {"op": "shared", "trans": 2}, {"op": "bar"},
            {"op": "st", "trans": 3, "dram_write": 0.5}]}]})
    jit = Simulation(gtx480, k, n_sm=2, epoch_cycles=300)
    ref = Simulation(gtx480, k, n_sm=2, epoch_cycles=300, reference=True)
    a, b = jit.run(), ref.run()
    assert a.intervals.equals(b.intervals) and a.run == b.run
    assert a.intervals.num_rows >= 3
    for x, y in zip(jit.rows, ref.rows, strict=True):
        assert np.array_equal(x["sm_eq"], y["sm_eq"])


@pytest.mark.parametrize("name", ["mem_gather", "compute_fma"])
def test_per_sm_equalizer_counters_add_up_to_the_row(gtx480, name):
    k = reduced(name, ctas=30, scale=0.25)
    sim = Simulation(gtx480, k, epoch_cycles=1024)
    rows = epoch_rows(sim)
    assert len(rows) >= 2
    total_samples = 0.0
    for row in rows:
        eq = row["sm_eq"]
        assert eq.shape == (sim.n_sm, K.N_SE) and eq.dtype == np.float64
        # the row's eq_* columns are per-SM values averaged over the SMs (sim.model._row)
        for j, c in enumerate(EQ_COLUMNS):
            assert eq[:, j].sum() / sim.n_sm == row[c], c
        # one sample per 128 cycles per SM: 8 in a full 1024-cycle epoch (t0 is a multiple)
        if row["cycles"] == 1024:
            assert np.all(eq[:, K.E_SAMPLES] == 1024 // 128)
        assert np.all(eq[:, K.E_ACTIVE] >= eq[:, K.E_WAIT] + eq[:, K.E_XALU] + eq[:, K.E_XMEM])
        total_samples += eq[:, K.E_SAMPLES].sum()
    assert total_samples > 0
    # sm_eq is for the controller only: not a column of the interval table
    assert "sm_eq" not in sim._result("x", sim.setting, "fixed").intervals.column_names


def test_instruction_cut_rows_have_no_sm_eq(gtx480):
    sim = Simulation(gtx480, reduced("mem_gather", 20, 0.1), interval_instructions=5_000)
    assert "sm_eq" not in sim.step()


# run_id of micro stream_read at 700/924 MHz on 15 SMs, seed 0, as computed before epoch mode
# existed (sim/model.py at the start of issue 14 item 1) with today's SIM_VERSION (5; the id
# covers it), on gtx480 as it was then (64 MSHRs; the id covers the configuration): an
# instruction-cut run's id must not depend on the epoch_cycles argument.
ID_1000_FIXED = "1dd2d530500c127a5b115d2780d030710e00c210eb8d85a1f6f1373c4a423058"
ID_100000_FIXED = "99d097e8a5c06b72a5c30fc03a9afb350b9befdfa4923a270c508141ca58aa74"


def test_run_ids_of_instruction_cut_runs_are_unchanged_and_epochs_differ(gtx480_64_mshrs):
    gtx480 = gtx480_64_mshrs
    k = load_suite("micro").kernel("stream_read")
    assert run_id(gtx480, k, 700.0, 924.0, 15, None, 1000, 0) == ID_1000_FIXED
    assert run_id(gtx480, k, 700.0, 924.0, 15, None, 1000, 0, "fixed", None) == ID_1000_FIXED
    assert run_id(gtx480, k, 700.0, 924.0, 15, None, 100_000, 0, "fixed") == ID_100000_FIXED
    e4096 = run_id(gtx480, k, 700.0, 924.0, 15, None, 100_000, 0, "fixed", 4096)
    e1000 = run_id(gtx480, k, 700.0, 924.0, 15, None, 100_000, 0, "fixed", 1000)
    assert len({e4096, e1000, ID_100000_FIXED}) == 3
    small = reduced("mem_gather", 20, 0.1)
    a = simulate(gtx480, small, interval_instructions=5_000)
    assert a.run["run_id"] == run_id(gtx480, small, 700.0, 924.0, 15, None, 5_000, 0)
    b = simulate(gtx480, small, interval_instructions=5_000, epoch_cycles=4096)
    assert b.run["run_id"] == run_id(gtx480, small, 700.0, 924.0, 15, None, 5_000, 0,
                                      "fixed", 4096) != a.run["run_id"]


@pytest.mark.parametrize("bad", [0, -5, 2.5, True])
def test_epoch_cycles_must_be_a_positive_integer(gtx480, bad):
    with pytest.raises(ConfigError):
        Simulation(gtx480, reduced("mem_gather", 20, 0.1), epoch_cycles=bad)


class Alternate:
    """Switches core clock every epoch (test controller)."""

    name = "alternate"

    def decide(self, idx, row, setting):
        assert row["sm_eq"].shape[1] == K.N_SE
        return Setting(400.0 if idx % 2 == 0 else 700.0, setting.mem_mhz, setting.ctas_per_sm)


def test_controller_decides_every_epoch(gtx480):
    k = reduced("mem_gather", 20, 0.1)
    r = simulate(gtx480, k, epoch_cycles=2048, controller=Alternate())
    cyc = col(r, "cycles")
    assert len(cyc) >= 3 and np.all(cyc[:-1] == 2048)
    assert np.array_equal(col(r, "core_mhz")[:4], [700.0, 400.0, 700.0, 400.0])
    assert np.all(col(r, "switch_ns")[1:] == gtx480.switch_ns)
    assert r.run["instructions"] == k.warp_instructions
