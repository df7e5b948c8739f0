"""Equalizer in the simulator's closed loop (paper 001; gpudb.control.equalizer_loop) on two
synthetic kernels on gtx480: compute_ilp (default suite: independent ALU streams) and
stream_read (micro suite: independent coalesced loads missing both caches)."""

from __future__ import annotations

import pytest

from gpudb.control.equalizer import VfLevel
from gpudb.control.equalizer_loop import EqualizerController, simulate_equalizer
from sim.config import load_gpu, load_suite
from sim.model import simulate

GPU = load_gpu("gtx480")
COMPUTE = load_suite("default").kernel("compute_ilp")
MEMORY = load_suite("micro").kernel("stream_read")


@pytest.fixture(scope="module")
def fixed():
    return {k.name: simulate(GPU, k).run for k in (COMPUTE, MEMORY)}


def _levels(controller):
    return [(VfLevel(sm), VfLevel(mem)) for _, sm, mem, _ in controller.trace]


def test_compute_kernel(fixed):
    # X_alu warps exceed W_cta on every SM (Algorithm 1 line 10): CompAction. Table I:
    # performance mode raises the SM V/F (to nominal + 15% = 805 MHz, above gtx480's top
    # P-state), energy mode lowers the memory V/F (785.4 MHz); numBlocks is left alone.
    perf, c = simulate_equalizer(GPU, COMPUTE, "performance")
    assert set(_levels(c)) == {(VfLevel.HIGH, VfLevel.NORMAL)}
    assert all(limits == (c.slots,) * GPU.n_sm for *_, limits in c.trace)
    clocks = perf.intervals.column("core_mhz").to_pylist()
    assert clocks[0] == 700.0 and clocks[1:] == pytest.approx([805.0] * (len(clocks) - 1))
    assert perf.run["instructions"] == fixed["compute_ilp"]["instructions"]
    assert perf.run["time_ns"] < fixed["compute_ilp"]["time_ns"]
    assert perf.run["energy_j"] > fixed["compute_ilp"]["energy_j"]     # V rises with f
    energy, c = simulate_equalizer(GPU, COMPUTE, "energy")
    assert set(_levels(c)) == {(VfLevel.NORMAL, VfLevel.LOW)}
    assert set(energy.intervals.column("mem_mhz").to_pylist()[1:]) == {785.4}
    assert energy.run["energy_j"] < fixed["compute_ilp"]["energy_j"]


def test_memory_kernel_pauses_ctas_and_lowers_the_sm_clock(fixed):
    # X_mem warps exceed W_cta (line 7): one block fewer and MemAction, which in energy mode
    # lowers the SM V/F (Table I). numBlocks moves only after three epochs agree (section
    # IV-B) and by one block at a time; the SM level moves one step per epoch (IV-C).
    run, c = simulate_equalizer(GPU, MEMORY, "energy")
    assert _levels(c)[0] == (VfLevel.LOW, VfLevel.NORMAL)
    limits = [limits[0] for *_, limits in c.trace]
    assert limits[:2] == [c.slots, c.slots] and limits[2] == c.slots - 1
    changes = [i for i in range(1, len(limits)) if limits[i] != limits[i - 1]]
    assert all(abs(limits[i] - limits[i - 1]) == 1 for i in changes)
    assert all(b - a >= 3 for a, b in zip(changes, changes[1:], strict=False))
    assert min(limits) == 1
    # paused CTAs resume: every instruction of the kernel runs, once
    assert run.run["instructions"] == fixed["stream_read"]["instructions"]
    assert run.run["energy_j"] < fixed["stream_read"]["energy_j"]


def test_variants_and_run_ids(fixed):
    cta, c = simulate_equalizer(GPU, COMPUTE, "performance", variant="cta")
    assert set(_levels(c)) == {(VfLevel.NORMAL, VfLevel.NORMAL)}
    assert set(cta.intervals.column("core_mhz").to_pylist()) == {700.0}
    full, _ = simulate_equalizer(GPU, COMPUTE, "performance")
    energy, _ = simulate_equalizer(GPU, COMPUTE, "energy")
    ids = {cta.run["run_id"], full.run["run_id"], energy.run["run_id"],
           fixed["compute_ilp"]["run_id"]}
    assert len(ids) == 4 and full.run["policy"] == "equalizer"
    with pytest.raises(ValueError, match="variant"):
        EqualizerController(700, 924, 8, 6, 15, "energy", "both")
    with pytest.raises(ValueError, match="mode"):
        EqualizerController(700, 924, 8, 6, 15, "speed")
