"""The simulator mechanisms added for the comparison with real GPUs (issue 37; docs/simulator.md,
"Validation against real GPUs"): each one against a hand-computed case on a tiny kernel, each
off (the model as before) on a configuration that does not set it."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sim import _kernels as K
from sim.config import ConfigError, fixture_dir, kernel_from_table, load_gpu
from sim.model import simulate


def gpu_with(tmp_path, name="t", **values):
    """gtx1080ti-sim with ``values`` replacing its lines (key = value) or added to [sm]."""
    text = (fixture_dir("gpus") / "gtx1080ti-sim.toml").read_text()
    text = re.sub(r'^name = .*$', f'name = "{name}"', text, count=1, flags=re.M)
    for key, value in values.items():
        line = f"{key} = {value}"
        if re.search(rf"^{key} = ", text, flags=re.M):
            text = re.sub(rf"^{key} = .*$", line, text, count=1, flags=re.M)
        else:
            text = text.replace("[sm]\n", f"[sm]\n{line}\n", 1)
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return load_gpu(path)


def kernel(body, ctas=1, wpc=1, iterations=1, **extra):
    return kernel_from_table({"name": "k", "category": "t", "description": "test kernel",
                              "ctas": ctas, "warps_per_cta": wpc, **extra,
                              "phase": [{"iterations": iterations, "body": body}]})


def cycles(result) -> float:
    return float(np.sum(result.intervals.column("cycles").to_numpy()))


def test_fp64_unit_issues_one_warp_instruction_per_interval(tmp_path):
    """1,000 independent FP64 instructions of one warp on an 8-cycle unit: 8 cycles each, then
    the last one's 8-cycle latency; counted as dp_insts."""
    g = gpu_with(tmp_path)
    r = simulate(g, kernel([{"op": "dp"}], iterations=1000), 1800, 5000, n_sm=1)
    assert int(np.sum(r.intervals.column("dp_insts").to_numpy())) == 1000
    assert 8 * 999 + 8 <= cycles(r) <= 8 * 999 + 8 + 4


def test_fp64_needs_a_configured_unit(gtx480):
    with pytest.raises(ConfigError, match="no FP64 unit"):
        simulate(gtx480, kernel([{"op": "dp"}]), 700, 924)


def test_load_store_unit_sends_several_transactions_a_cycle(tmp_path):
    """Loads of 8 transactions that hit L1: the LSU is busy 8 cycles per load at one
    transaction a cycle, 2 at four."""
    body = [{"op": "ld", "trans": 8, "l1_hit": 1.0}]
    busy = {}
    for tpc in (1, 4):
        g = gpu_with(tmp_path, f"lsu{tpc}", lsu_transactions_per_cycle=tpc)
        r = simulate(g, kernel(body, iterations=200), 1800, 5000, n_sm=1)
        busy[tpc] = float(np.sum(r.intervals.column("mem_unit_busy_cycles").to_numpy()))
    assert busy == {1: 8 * 200, 4: 2 * 200}


def test_a_kernel_sets_its_own_ctas_per_sm(tmp_path):
    g = gpu_with(tmp_path)
    body = [{"op": "alu", "n": 8}]
    free = kernel(body, ctas=28 * 16, wpc=4, iterations=50)
    limited = kernel(body, ctas=28 * 16, wpc=4, iterations=50, ctas_per_sm=2)
    assert free.cta_slots(g) == 16 and limited.cta_slots(g) == 2
    r = simulate(g, limited, 1800, 5000)
    assert max(r.intervals.column("active_warps_avg").to_numpy()) <= 2 * 4


def test_a_half_given_fp64_unit_is_refused(tmp_path):
    text = (fixture_dir("gpus") / "gtx1080ti-sim.toml").read_text()
    path = tmp_path / "bad.toml"
    path.write_text(re.sub(r"^dp_interval_cycles = .*\n", "", text, flags=re.M))
    with pytest.raises(ConfigError, match="both dp_latency_cycles"):
        load_gpu(path)


@pytest.mark.parametrize("name", ["gtx480", "gtx980", "hd7970"])
def test_the_other_gpus_leave_every_addition_off(name):
    """No source gives these mechanisms' values for the papers' GPUs, so their configurations
    do not set them and their runs are those of the model without them (test_sim_cta_pause
    checks the digests)."""
    g = load_gpu(name)
    assert g.gp[K.G_DP_II] == 0 and g.gp[K.G_LSU_TPC] == 1


def test_the_jitted_model_equals_its_python_execution_with_every_addition(tmp_path):
    """The same bits from numba's code and from the plain-Python run of the same functions
    (sim/reference.py), on a tiny kernel that uses every addition."""
    g = gpu_with(tmp_path)
    body = [{"op": "ld", "id": "a", "trans": 4, "l2_hit": 0.5},
            {"op": "dp", "dep": "a"}, {"op": "alu", "n": 3, "dep": "prev"},
            {"op": "st", "trans": 2, "dram_write": 0.7}]
    k = kernel(body, ctas=6, wpc=2, iterations=3, ctas_per_sm=2)
    fast = simulate(g, k, 1800, 5000, n_sm=2, interval_instructions=40)
    slow = simulate(g, k, 1800, 5000, n_sm=2, interval_instructions=40, reference=True)
    assert fast.intervals.equals(slow.intervals) and fast.run == slow.run
