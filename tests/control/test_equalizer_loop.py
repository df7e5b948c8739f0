"""Equalizer in the simulator's closed loop (paper 001; gpudb.control.kinds.equalizer) on two
synthetic kernels on gtx480: compute_ilp (default suite: independent ALU streams) and
stream_read (micro suite: independent coalesced loads missing both caches)."""

from __future__ import annotations

import pytest

from gpudb.control.equalizer import VfLevel
from gpudb.control.kinds.equalizer import EqualizerController, simulate_equalizer
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
    assert len(ids) == 4 and full.run["policy"] == "closed_loop"
    with pytest.raises(ValueError, match="variant"):
        EqualizerController(700, 924, 8, 6, 15, "energy", "both")
    with pytest.raises(ValueError, match="mode"):
        EqualizerController(700, 924, 8, 6, 15, "speed")


def test_evaluate_equalizer_stores_runs_and_compares_them(tmp_path, fixed):
    """`gpudb evaluate equalizer` on compute_ilp: 5 static runs and 6 Equalizer runs (full
    and V/F-only in each mode, CTA-only once, 'inclined' in energy mode), stored once (a second call simulates nothing);
    the query's figures are the runs' ratios to the nominal static run, which is the fixed
    nominal run itself (same simulation)."""
    from click.testing import CliRunner

    import gpudb
    from gpudb.cli import cli

    db = tmp_path / "eq.duckdb"
    args = ["--db", str(db), "evaluate", "equalizer", "--kernel", "compute_ilp", "--format",
            "csv"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    con = gpudb.connect(db, read_only=True)
    try:
        runs = con.execute(
            "SELECT policy, coalesce(objective, ''), variant, epoch_cycles, time_ns, energy_j "
            "FROM run ORDER BY ALL").fetchall()
        ctas = con.execute("SELECT count(*) FROM metric WHERE name = 'equalizer_ctas_mean'"
                           ).fetchone()[0]
        board = dict(con.execute(
            "SELECT coalesce(r.variant, r.objective), sum(i.other_j) FROM run AS r "
            "JOIN interval AS i USING (run_id) WHERE r.policy = 'static' GROUP BY ALL"
        ).fetchall())
    finally:
        con.close()
    assert len(runs) == 11 and ctas > 0
    by = {(p, o, v): (e, t, j) for p, o, v, e, t, j in runs}
    nominal = by[("static", "", "nominal")]
    assert nominal[0] is None and by[("closed_loop", "performance", "full")][0] == 4096
    assert nominal[1] == fixed["compute_ilp"]["time_ns"]
    assert nominal[2] == pytest.approx(fixed["compute_ilp"]["energy_j"], rel=1e-12)
    # the SM-high static point: 805 MHz on a kernel bound by issue, so exactly 15% faster
    sm_high = by[("static", "", "sm_high")]
    lines = result.stdout.strip().splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","), strict=True)) for line in lines[1:]]
    overall = {r["policy"]: r for r in rows if r["category"] == "all"}
    assert float(overall["static sm_high"]["speedup_pct"]) == pytest.approx(
        (nominal[1] / sm_high[1] - 1) * 100)
    assert float(overall["static sm_high"]["energy_change_pct"]) == pytest.approx(
        (sm_high[2] / nominal[2] - 1) * 100)
    assert float(overall["static sm_high"]["speedup_pct"]) == pytest.approx(15.0, abs=0.05)
    # chip energy: the same ratio without the constant board power (other_j, 30 W x time)
    assert float(overall["static sm_high"]["chip_energy_change_pct"]) == pytest.approx(
        ((sm_high[2] - board["sm_high"]) / (nominal[2] - board["nominal"]) - 1) * 100)
    assert board["nominal"] == pytest.approx(30.0 * nominal[1] * 1e-9, rel=1e-9)
    # one compute kernel: the row over the paper's four classes is the 'all' row
    classes = {r["policy"]: r for r in rows if r["category"] == "paper classes"}
    assert classes.keys() == overall.keys()
    assert all(classes[p]["speedup_pct"] == overall[p]["speedup_pct"] for p in overall)
    assert classes["equalizer energy"]["paper_001_energy_change_pct"] == "-15.0"
    assert overall["equalizer performance"]["paper_001_speedup_pct"] == "22.0"
    # compute_ilp is issue-bound: the fastest static point is SM high, and among those at most
    # 5% slower than nominal the least energy is memory low
    assert overall["best static performance"]["speedup_pct"] == \
        overall["static sm_high"]["speedup_pct"]
    assert overall["best static energy"]["energy_change_pct"] == \
        overall["static mem_low"]["energy_change_pct"]
    # compute_ilp always has excess ALU warps, never the unsaturated branch: the 'inclined'
    # variant decides as the paper's energy mode does, to the same run
    assert by[("closed_loop", "energy", "inclined")][1:] == by[("closed_loop", "energy", "full")][1:]
    assert overall["equalizer energy (inclined)"]["speedup_pct"] == \
        overall["equalizer energy"]["speedup_pct"]
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0 and again.stdout == result.stdout
