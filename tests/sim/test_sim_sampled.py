"""The sampled engine (sim/sampled.py): exact instruction totals, copies that really happen,
run times within the issue's 3% of the cycle engine on the kernels the bench times, and the
run identity that keeps the two engines apart."""

import numpy as np
import pytest

from sim import _kernels as K
from sim.config import ConfigError, load_gpu, load_suite
from sim.model import Setting, Simulation, SimulationError
from sim.sampled import SampledSimulation


@pytest.fixture(scope="module")
def default_suite():
    return load_suite("default")


@pytest.mark.parametrize("name", ["mem_stream", "compute_ilp", "store_scatter",
                                  "unsat_small_grid", "compute_fma", "shared_conflict"])
def test_sampled_runs_copy_and_stay_within_three_percent(gtx480, default_suite, name):
    """Measured at stop 56 (SAMPLED_VERSION 6; gtx480 700 MHz, seed 0): time mem_stream -0.58%,
    compute_ilp -0.04%, store_scatter -0.05%, unsat_small_grid +0.64% (-1.30% while a CTA
    ended with its first warp; +7.4% while each SM's own template rate was extrapolated: its
    SMs drifted apart linearly), compute_fma -0.32%
    (a loop and a one-store epilogue: its CTAs turn over inside copies), shared_conflict
    +2.14% (its first template, taken as all its CTAs start together, is 40% slow: +18% while
    no detailed window replaced it); 72-93% of each run's instructions copied. The issue's
    tolerances are 3% (time) and 2% (energy)."""
    kernel = default_suite.kernel(name)
    ref = Simulation(gtx480, kernel).run()
    sim = SampledSimulation(gtx480, kernel)
    smp = sim.run()
    # every instruction of the kernel is executed, and most of the run is copied
    assert smp.run["instructions"] == ref.run["instructions"]
    assert sim.copied_instructions > 0.5 * smp.run["instructions"]
    if name != "unsat_small_grid":   # one wave: no CTA left to launch
        assert sim.n_turnovers > 0   # single-phase kernels turn CTAs over inside copies
    assert smp.run["time_ns"] == pytest.approx(ref.run["time_ns"], rel=0.03)
    assert smp.run["energy_j"] == pytest.approx(ref.run["energy_j"], rel=0.02)
    # every interval but the last holds its 100,000 instructions as the cycle engine's do
    # (they overshoot by one cycle's issue: up to 20 here): a copy that runs past an
    # interval's end gives that part to the next interval (measured: up to 29; before, up to
    # one iteration of every CTA slot, compute_fma's 29,520, and its intervals' times jittered
    # with a coefficient of variation of 9.6%)
    insts = np.asarray(smp.intervals.column("instructions").to_pylist())
    assert np.all(np.abs(insts[:-1] - 100_000) <= 64)
    occupancy = np.asarray(smp.intervals.column("occupancy").to_pylist())
    assert np.all((occupancy >= 0) & (occupancy <= 1))
    assert smp.run["engine"] == "sampled" and ref.run["engine"] == "reference"


def test_the_engine_is_part_of_the_run_id(gtx480, default_suite):
    kernel = default_suite.kernel("compute_ilp")
    ref = Simulation(gtx480, kernel).run()
    smp = SampledSimulation(gtx480, kernel).run()
    assert ref.run["run_id"] != smp.run["run_id"]
    from sim.model import run_id
    assert run_id(gtx480, kernel, 700.0, 924.0, 15, None, 100_000, 0) == ref.run["run_id"]
    assert run_id(gtx480, kernel, 700.0, 924.0, 15, None, 100_000, 0,
                  engine="sampled") == smp.run["run_id"]
    with pytest.raises(ConfigError, match="no engine 'fast'"):
        run_id(gtx480, kernel, 700.0, 924.0, 15, None, 100_000, 0, engine="fast")


def test_a_setting_change_drops_the_template_and_the_run_stays_whole(gtx480, default_suite):
    """A closed loop on the sampled engine: each switch ends the steady state the template
    describes, so the next windows are detailed; the run still executes every instruction
    and pays each switch's time."""
    kernel = default_suite.kernel("mem_stream")

    class Alternate:
        name = "alternate"

        def decide(self, idx, row, setting):
            return Setting(400.0 if idx % 6 == 5 else 700.0, 924.0, setting.ctas_per_sm)

    sim = SampledSimulation(gtx480, kernel)
    seen = []
    while (row := sim.step()) is not None:
        if not sim.finished:
            had = sim.template is not None
            new = Alternate().decide(row["idx"], row, sim.setting)
            sim.apply(new)
            if (new.core_mhz, new.mem_mhz) != (row["core_mhz"], row["mem_mhz"]):
                seen.append(had)
                assert sim.template is None and sim.n_steady == 0
    ref = Simulation(gtx480, kernel).run()
    assert sum(r["instructions"] for r in sim.rows) == ref.run["instructions"]
    assert any(seen)          # a template existed when the setting changed, and was dropped
    switches = sum(r["switch_ns"] > 0 for r in sim.rows)
    assert switches == len(seen) > 0
    assert sum(r["switch_ns"] for r in sim.rows) == pytest.approx(switches * gtx480.switch_ns)


def test_epoch_mode_is_the_reference_engines_only(gtx480, default_suite):
    with pytest.raises(ConfigError, match="epoch mode"):
        SampledSimulation(gtx480, default_suite.kernel("compute_ilp"), epoch_cycles=5000)


def test_a_multi_phase_kernel_copies_without_turnover(gtx480, default_suite):
    """phase_alternating has several loop phases: copies stay inside a phase (no CTA turns
    over inside one), and the run is within 3% (measured +0.66%)."""
    kernel = default_suite.kernel("phase_alternating")
    assert len(kernel.program["ph_start"]) > 1
    sim = SampledSimulation(gtx480, kernel)
    smp = sim.run()
    ref = Simulation(gtx480, kernel).run()
    assert sim.n_copies > 0 and sim.n_turnovers == 0
    assert smp.run["instructions"] == ref.run["instructions"]
    assert smp.run["time_ns"] == pytest.approx(ref.run["time_ns"], rel=0.03)


def test_a_copy_never_moves_a_warp_past_its_phases_loop(gtx480, default_suite):
    """The warps of one CTA may be in different loop phases. A copy planned on the CTA's
    furthest warp against another warp's phase moved a warp past its loop's end, and it never
    left the loop (the long suite's phase_alternating at 500 MHz ran for ever); each warp is
    now checked against its own phase, and a run that executes more than its kernel's
    instructions stops with an error."""
    from sim.sampled import _plan

    sim = SampledSimulation(gtx480, default_suite.kernel("phase_alternating"))
    nwpc = int(sim.gi[K.K_WPC])
    iters = sim.pi[K.PI_PH_ITERS]
    assert iters[0] < iters[1]
    sim.ci[:, :, K.CI_ST] = 0
    sim.ci[0, 0, K.CI_ST] = 1
    sim.wi[0, :nwpc, K.WI_ST] = K.W_ACTIVE
    sim.wi[0, :nwpc, K.WI_PH] = 1          # most warps in the long second loop, early on
    sim.wi[0, :nwpc, K.WI_IT] = 5
    sim.wi[0, 0, K.WI_PH] = 0              # one warp still 3 iterations from its loop's end
    sim.wi[0, 0, K.WI_IT] = iters[0] - 3
    mode = np.empty(sim.ci.shape[:2], np.int64)
    val = np.empty(sim.ci.shape[:2], np.int64)
    adv = np.zeros(sim.ci.shape[:2], np.int64)
    adv[0, 0] = 2
    assert not sim.turn
    base = np.empty(sim.ci.shape[:2], np.int64)
    off = np.zeros(sim.wi.shape[:2], np.int64)
    mv = np.zeros(sim.wi.shape[:2], np.int64)
    args = (sim.pi, nwpc, False, 0, mode, val, base, sim.pre_ph, sim.program_length)
    assert _plan(adv, off, False, mv, sim.ci, sim.wi, *args)[0] == 0   # fits
    assert mode[0, 0] == 1
    adv[0, 0] = 3
    assert _plan(adv, off, False, mv, sim.ci, sim.wi, *args)[0] == -1  # passes its loop's end
    sim.gi[K.GS_INSTS] = sim.total_instructions + 1
    with pytest.raises(SimulationError, match="executed .* of the kernel's"):
        sim.step()


def test_a_cta_with_finished_warps_turns_over_with_its_work_counted(gtx480, default_suite):
    """compute_fma: 24 iterations of 41 instructions, then a one-store epilogue (985 per
    warp). A CTA whose warps are at iteration 22 or past the loop (one retired, one in the
    epilogue) completes inside a copy of 3 iterations: the slot does 6 x 3 x 41 = 738
    instructions' work, the old CTA's rest first (4 warps x (985 - 22 x 41 = 83) + the
    epilogue warp's 1 + the retired warp's 0 = 333), and the grid's next CTA the whole
    iterations left, (738 - 333) // 246 = 1: 333 + 246 = 579."""
    from sim.sampled import _plan

    sim = SampledSimulation(gtx480, default_suite.kernel("compute_fma"))
    assert sim.turn and sim.program_length == 985
    nwpc = int(sim.gi[K.K_WPC])
    assert nwpc == 6
    sim.ci[:, :, K.CI_ST] = 0
    sim.ci[0, 0, K.CI_ST] = 1
    sim.wi[0, :nwpc, K.WI_ST] = K.W_ACTIVE
    sim.wi[0, :nwpc, K.WI_PH] = 0
    sim.wi[0, :nwpc, K.WI_IT] = 22
    sim.wi[0, :nwpc, K.WI_PC] = sim.pi[K.PI_PH_START, 0]
    sim.wi[0, 4, K.WI_PH] = 1                       # in the epilogue, its store not issued
    sim.wi[0, 4, K.WI_IT] = 0
    sim.wi[0, 4, K.WI_PC] = sim.pi[K.PI_PH_START, 1]
    sim.wi[0, 5, K.WI_ST] = K.W_RETIRED
    sim.wi[0, 5, K.WI_PH] = 2
    mode = np.empty(sim.ci.shape[:2], np.int64)
    val = np.empty(sim.ci.shape[:2], np.int64)
    base = np.empty(sim.ci.shape[:2], np.int64)
    adv = np.zeros(sim.ci.shape[:2], np.int64)
    adv[0, 0] = 3
    off = np.zeros(sim.wi.shape[:2], np.int64)
    mv = np.zeros(sim.wi.shape[:2], np.int64)
    # (turned over, its work, no idle issue slots)
    assert _plan(adv, off, False, mv, sim.ci, sim.wi, sim.pi, nwpc, True, 1, mode, val, base,
                 sim.pre_ph, sim.program_length) == (1, 4 * 83 + 1 + 0 + 246, 0.0)
    # a warp past the loop: the next CTA's warps start afresh, not at the old ones' places
    assert mode[0, 0] == 2 and val[0, 0] == 1 and base[0, 0] == -1
    # no CTA left in the grid: the copy cannot complete it
    assert _plan(adv, off, False, mv, sim.ci, sim.wi, sim.pi, nwpc, True, 0, mode, val, base,
                 sim.pre_ph, sim.program_length)[0] == -1
    # a program with a prologue (compute_tiled) or balanced phases does not turn CTAs over
    assert not SampledSimulation(gtx480, default_suite.kernel("compute_tiled")).turn
    assert not SampledSimulation(gtx480, default_suite.kernel("phase_alternating")).turn
    assert SampledSimulation(gtx480, default_suite.kernel("mem_stream")).turn


def test_a_copy_past_an_intervals_end_gives_that_part_to_the_next(gtx480, default_suite):
    """Hand-computed: a copy of 30,000 warp instructions, 6,000 cycles and 900 DRAM reads
    that ends 12,000 instructions past the interval's end leaves 40% of itself (2,400 cycles,
    360 reads, 12,000 instructions) to the next interval, whose clock here runs at half the
    rate: the 2,400 cycles at 700 MHz are 1,200 of its own."""
    sim = SampledSimulation(gtx480, default_suite.kernel("compute_fma"))
    t0 = sim._start_interval()
    a = np.zeros_like(sim.acc)
    a[K.A_INSTS], a[K.A_DRAM_RD] = 30_000, 900
    sim.acc += a
    sim.gi[K.GS_INSTS] += 112_000
    sim.gi[K.GS_T] += 6_000
    sim.tail = {"insts": 30_000, "acc": a, "se": np.zeros_like(sim.se),
                "busy": np.zeros_like(sim.chn[K.CH_BUSY]), "cycles": 6_000}
    assert sim._split_tail(100_000) == pytest.approx(2_400)
    assert sim.acc[K.A_INSTS] == 18_000 and sim.acc[K.A_DRAM_RD] == pytest.approx(540)
    sim.setting = Setting(350.0, 924.0, None)
    t1 = sim._start_interval()
    assert t1 == pytest.approx(t0 + 6_000 - 1_200)
    assert sim.acc[K.A_INSTS] == 12_000 and sim.acc[K.A_DRAM_RD] == pytest.approx(360)
    # a detailed stretch leaves no copy's tail to split
    sim.tail = None
    assert sim._split_tail(100_000) == 0.0 and sim.carry_in is None


def test_copied_intervals_keep_the_reference_time_and_memory_bound(gtx480, default_suite):
    """twoslope_lm (gtx480 700 MHz, memory-bound, 240 CTAs in lockstep waves), interval by
    interval, the first and the last three (the launch and the drain) excepted. Time: within 1%
    (measured: 0.5% at most). Before a turnover passed the warps' places and loads in flight
    to the next CTA, every slot's new warps began together with nothing in flight, as at the
    launch, and the next detailed window ran 25% slow: single intervals 2-5% long. The MSHR
    bound (mshr_min_ns, the busiest SM's entry-time over the interval): within 5% (measured
    +1.5 to +2.5%: each detailed stretch's and copy's busiest SM, summed); before, the detailed
    stretches' alone, 4% of the reference's on phase_cache_compute's gather phase."""
    kernel = default_suite.kernel("twoslope_lm")
    ref = Simulation(gtx480, kernel).run().intervals
    smp = SampledSimulation(gtx480, kernel).run().intervals
    assert smp.num_rows == ref.num_rows
    inner = slice(1, ref.num_rows - 3)
    for col, tol in (("time_ns", 0.01), ("mshr_min_ns", 0.05)):
        a = np.asarray(ref.column(col).to_pylist())[inner]
        b = np.asarray(smp.column(col).to_pylist())[inner]
        assert np.all(np.abs(b / a - 1) <= tol), col


def test_bench_engine_checks_time_energy_and_interval_shares(gtx480, default_suite):
    """`gpudb bench engine` on a small subset (compute_ilp and mem_stream at gtx480 700 MHz):
    every figure of a row recomputed from the two engines' runs, and the measured values
    (stop 54: time -0.05% and -0.54%, every interval share within 0.01)."""
    from sim.bench import SHARES, engine_comparison, interval_shares

    rows = engine_comparison("default", ["compute_ilp", "mem_stream"],
                             settings=(("gtx480", 700.0, 924.0),))
    assert [r["kernel"] for r in rows] == ["compute_ilp", "mem_stream"]
    for r in rows:
        kernel = default_suite.kernel(r["kernel"])
        ref = Simulation(gtx480, kernel).run()
        smp = SampledSimulation(gtx480, kernel).run()
        assert r["time_diff"] == pytest.approx(smp.run["time_ns"] / ref.run["time_ns"] - 1)
        assert r["seed_time_diff"] == pytest.approx(r["time_diff"])     # (one seed)
        assert r["energy_diff"] == pytest.approx(smp.run["energy_j"] / ref.run["energy_j"] - 1)
        # one seed: the reference has no spread, so the energy bar is 2% either way
        assert r["reference_spread"] == 0.0 and r["reference_energy_spread"] == 0.0
        assert r["energy_seed_ok"] == r["energy_ok"]
        a, b = interval_shares(ref.intervals), interval_shares(smp.intervals)
        diffs = {k: b[k] - a[k] for k in SHARES}
        assert r["share_diff"] == pytest.approx(diffs[r["share_worst"]])
        assert abs(r["share_diff"]) == pytest.approx(max(abs(d) for d in diffs.values()))
        # computation is what the two stalls leave
        assert a["computation"] == pytest.approx(1.0 - a["load_stall"] - a["store_stall"])
        assert r["instructions_equal"] and r["time_ok"] and r["energy_ok"] and r["shares_ok"]
        assert abs(r["time_diff"]) < 0.01 and abs(r["share_diff"]) < 0.01
    # the memory-bound kernel's loads are outstanding most of the time, the compute one's never
    shares = {r["kernel"]: r for r in rows}
    mem = interval_shares(Simulation(gtx480, default_suite.kernel("mem_stream")).run().intervals)
    assert mem["load_outstanding"] > 0.9 and shares["compute_ilp"]["share_diff"] == 0.0


def test_bench_engine_names_the_seed_whose_run_differs_most(default_suite):
    """Seed by seed (compute_fma, gtx980 at 1000 MHz, seeds 0-2): each sampled run against the
    reference's run of the same seed; the row keeps the largest difference, signed, beside
    the difference of the means (stop 61: -4.6, +6.3 and -4.1%, mean -0.8%)."""
    from sim.bench import engine_comparison

    gtx980 = load_gpu("gtx980")
    kernel = default_suite.kernel("compute_fma")
    (row,) = engine_comparison("default", ["compute_fma"], settings=(("gtx980", 1000.0,
                                                                        1000.0),),
                               seeds=(0, 1, 2))
    ref = [Simulation(gtx980, kernel, core_mhz=1000.0, seed=s).run().run["time_ns"]
           for s in (0, 1, 2)]
    smp = [SampledSimulation(gtx980, kernel, core_mhz=1000.0, seed=s).run().run["time_ns"]
           for s in (0, 1, 2)]
    diffs = [b / a - 1 for a, b in zip(ref, smp, strict=True)]
    assert row["seed_time_diff"] == pytest.approx(max(diffs, key=abs))
    assert row["time_diff"] == pytest.approx(sum(smp) / sum(ref) - 1)


def test_critical_paths_run_on_across_an_intervals_detailed_stretches(default_suite):
    """CRIT's critical path through memory (paper 004 section 3.1.1) on compute_fma, gtx980 at
    1000 MHz, seed 0: its share of the cycles is 0.671 in the cycle engine, 0.529 in the cycle
    engine cut into 12,500-instruction intervals (each restarts the path), and was 0.515 on
    the sampled engine while every call of the cycle engine restarted it; running on across
    an interval's calls (sim._kernels.GS_KEEP_PATHS), 0.618."""
    from sim.bench import interval_shares

    gtx980 = load_gpu("gtx980")
    kernel = default_suite.kernel("compute_fma")
    ref = interval_shares(Simulation(gtx980, kernel, core_mhz=1000.0).run().intervals)
    sim = SampledSimulation(gtx980, kernel, core_mhz=1000.0)
    smp = interval_shares(sim.run().intervals)
    assert ref["crit_path"] == pytest.approx(0.671, abs=0.001)
    assert smp["crit_path"] == pytest.approx(ref["crit_path"], abs=0.06)
    # the paths restart at each interval's end, as the cycle engine's: nothing runs over
    assert sim.paths_read.sum() == 0.0 and int(sim.si[:, K.SI_CRIT].sum()) == 0


def test_a_copy_that_would_end_a_cta_is_shortened_to_end_before_it(gtx480, default_suite):
    """A copy that would move a CTA past its loop's end where it cannot turn over (here a
    multi-phase program) is cut to the longest part that ends no CTA, found by bisection with
    the same draws (one slot at 5 iterations per copy, 3 from its loop's end: 2 whole
    iterations, a part in [0.4, 0.6)), unless that is shorter than ``least`` instructions.
    Refused whole instead, every window up to the CTAs' ends was simulated in detail:
    mem_stream's drain spent 12 of its 40 detailed windows so (gtx480, 700 MHz)."""
    sim = SampledSimulation(gtx480, default_suite.kernel("phase_alternating"))
    nwpc = int(sim.gi[K.K_WPC])
    iters = sim.pi[K.PI_PH_ITERS]
    sim.ci[:, :, K.CI_ST] = 0
    sim.ci[0, 0, K.CI_ST] = 1
    sim.wi[0, :nwpc, K.WI_ST] = K.W_ACTIVE
    sim.wi[0, :nwpc, K.WI_PH] = 0
    sim.wi[0, :nwpc, K.WI_IT] = iters[0] - 3
    d = np.zeros(sim.ci.shape[:2])
    d[0, 0] = 5.0
    sim.sm_sigma[:] = 0.0
    n_turn, work, adv, carry, part = sim._plan(d, 1.0)
    assert n_turn == 0 and adv[0, 0] == 2 and 0.4 <= part < 0.6
    assert work == 2 * nwpc * int(sim.pi[K.PI_PH_LEN, 0])
    assert sim._mode[0, 0] == 1
    assert carry[0, 0] == pytest.approx(5.0 * part - 2)
    assert sim._plan(d, 1.0, least=work + 1)[0] == -1


def test_the_grids_drain_is_copied_up_to_its_ctas_ends(gtx480, default_suite):
    """mem_stream (gtx480, 700 MHz): once the grid has no CTA left to launch, copies still
    run up to each next CTA's end (measured: 0.29 M instructions copied in the drain, 0.41 M
    detailed in all; before, no drain copy, 0.50 M detailed, 0.16 M of it waiting for the
    CTAs' ends)."""
    sim = SampledSimulation(gtx480, default_suite.kernel("mem_stream"))
    drain = []
    copy = sim._copy

    def counted(*args, **kwargs):
        insts = sim.copied_instructions
        done = copy(*args, **kwargs)
        if sim.gi[K.GS_CTA_NEXT] == sim.gi[K.K_N_CTAS]:
            drain.append(sim.copied_instructions - insts)
        return done

    sim._copy = counted
    sim.run()
    assert sum(drain) > 50_000
    assert sim.total_instructions - sim.copied_instructions < 450_000


def test_the_jitted_snapshot_and_statistics_equal_numpys_bit_for_bit(gtx480, default_suite):
    """_steady's helpers replace numpy calls to save their dispatch cost (it runs on every
    detailed window): the snapshot's positions are each warp's iterations x its phase's body
    length + its place in it, and _mean_std is x.mean() and x.std(ddof=1) to the last bit."""
    from sim.sampled import _iterations, _mean_std, _snap_arrays

    rng = np.random.default_rng(7)
    for n in (2, 3, 7, 8, 9, 15, 16, 40):
        x = rng.gamma(2.0, 3.0, n)
        assert _mean_std(x) == (x.mean(), x.std(ddof=1))
    sim = SampledSimulation(gtx480, default_suite.kernel("phase_alternating"))
    sim.step()
    st, ph, length, pos, cst, seq = _snap_arrays(sim.wi, sim.ci, sim.pi)
    body = sim.pi[K.PI_PH_LEN][np.minimum(sim.wi[:, :, K.WI_PH], sim.pi.shape[1] - 1)]
    assert np.array_equal(length, body)
    assert np.array_equal(pos, sim.wi[:, :, K.WI_IT] * body + sim.wi[:, :, K.WI_PC])
    assert np.array_equal(cst, sim.ci[:, :, K.CI_ST]) and np.array_equal(st, sim.wi[:, :, K.WI_ST])
    # the copies' iterations per slot: the numpy expression they replace, bit for bit
    d = np.where(rng.random((15, 6)) < 0.8, rng.gamma(3.0, 1.0, (15, 6)), 0.0)
    z, sigma, carry = rng.standard_normal(15), rng.random(15), rng.random((15, 6)) - 0.3
    for part in (1.0, 0.37):
        c = carry + np.where(d > 0, np.maximum(d * part + (z * (sigma * np.sqrt(part)))[:, None],
                                               0.0), 0.0)
        adv = np.maximum(np.floor(c), 0).astype(np.int64)
        got_adv, got_frac = _iterations(d, part, z, sigma, carry)
        assert np.array_equal(got_adv, adv) and np.array_equal(got_frac, c - adv)


def test_a_ctas_end_is_timed_by_its_slowest_warp_where_warps_drift(gtx480, default_suite):
    """compute_fma: 24 iterations of 41 instructions and a one-store epilogue (985 per warp),
    6 warps. Five warps at iteration 22, one at 21, each moving 6 iterations (246
    instructions; the slot's 1,476). All reach the end: the old CTA's rest is 5 x 83 + 124 =
    539, and its slowest warp takes 124 / 246 of the copy, holding the slot for 744 issue
    slots; the new CTA gets (1,476 - 744) // 246 = 2 iterations, and the 744 - 539 = 205
    slots the five waiting warps leave idle count in time, not work: (1, 539 + 492, 205).
    Without the tail the five warps' one-iteration lead passes to the new CTA as work:
    (1, 539 + 205 + 492, 0). Moving 4 iterations from 21, 21, 21, 21, 21 and 18, the leaders
    would pass their loop's end but the laggard (247 left, 164 in the copy) does not reach
    it: with the tail the CTA does not end, the leaders stop in their last iteration (2 on)
    and leave 5 x 2 x 41 = 410 slots idle; without it the CTA ended, its laggard's rest
    done in the copy's issue slots."""
    from sim.sampled import _plan

    sim = SampledSimulation(gtx480, default_suite.kernel("compute_fma"))
    nwpc = int(sim.gi[K.K_WPC])
    assert sim.turn and sim.drifts and sim.program_length == 985 and nwpc == 6
    sim.ci[:, :, K.CI_ST] = 0
    sim.ci[0, 0, K.CI_ST] = 1
    sim.wi[0, :nwpc, K.WI_ST] = K.W_ACTIVE
    sim.wi[0, :nwpc, K.WI_PH] = 0
    sim.wi[0, :nwpc, K.WI_PC] = sim.pi[K.PI_PH_START, 0]
    mode = np.empty(sim.ci.shape[:2], np.int64)
    val = np.empty(sim.ci.shape[:2], np.int64)
    base = np.empty(sim.ci.shape[:2], np.int64)
    off = np.zeros(sim.wi.shape[:2], np.int64)
    mv = np.zeros(sim.wi.shape[:2], np.int64)
    adv = np.zeros(sim.ci.shape[:2], np.int64)

    def plan(tail):
        return _plan(adv, off, tail, mv, sim.ci, sim.wi, sim.pi, nwpc, True, 1, mode, val,
                     base, sim.pre_ph, sim.program_length)

    sim.wi[0, :nwpc, K.WI_IT] = [22, 22, 22, 22, 22, 21]
    adv[0, 0] = 6
    n_turn, work, idle = plan(True)
    assert (n_turn, work) == (1, 539 + 2 * 246) and idle == pytest.approx(205)
    assert mode[0, 0] == 2 and val[0, 0] == 2
    assert plan(False) == (1, 539 + 205 + 2 * 246, 0.0)
    sim.wi[0, :nwpc, K.WI_IT] = [21, 21, 21, 21, 21, 18]
    adv[0, 0] = 4
    assert plan(True) == (0, (5 * 2 + 4) * 41, 5 * 2 * 41.0)
    assert mode[0, 0] == 1 and list(mv[0, :nwpc]) == [2, 2, 2, 2, 2, 4]
    assert plan(False)[0] == 1 and mode[0, 0] == 2


def test_copies_move_warps_apart_only_where_the_sm_is_not_saturated(default_suite):
    """gtx980 at 500 MHz. compute_l1's SMs use 0.92-0.96 of their busiest bottleneck and its
    warps drift apart (1.4 iterations per window): its copies move each warp on its own and
    end a CTA with its slowest warp; moving a CTA's warps together it ran 5.8% short (seeds
    0-2), now within 1% (seed 0: -0.34%). mem_latency's MSHRs are full (1.00-1.01): the
    other warps take up the issue slots a CTA's finished warps leave, and its copies move
    warps together."""
    gtx980 = load_gpu("gtx980")
    for name, drifts in (("compute_l1", True), ("mem_latency", False)):
        kernel = default_suite.kernel(name)
        sim = SampledSimulation(gtx980, kernel, core_mhz=500.0)
        seen = set()
        while sim.step() is not None:
            if sim.template is not None:
                seen.add((sim.drift_on, sim.warp_sigma > 0))
        if not drifts:
            assert seen == {(False, False)}
            continue
        assert (True, True) in seen
        smp = SampledSimulation(gtx980, kernel, core_mhz=500.0).run()
        ref = Simulation(gtx980, kernel, core_mhz=500.0).run()
        assert smp.run["time_ns"] == pytest.approx(ref.run["time_ns"], rel=0.03)


def _run_watching_phase(sim, ph: int):
    """Run ``sim`` to its end; per interval while every warp is in loop phase ``ph``, the
    standard deviation of the warps' positions within their CTA (iterations, the mean over
    CTAs), and the (drift_on, warp_sigma > 0) pairs of its templates (sampled engine)."""
    spreads, seen = [], set()
    while sim.step() is not None:
        if getattr(sim, "template", None) is not None:
            seen.add((sim.drift_on, sim.warp_sigma > 0))
        nwpc = int(sim.gi[K.K_WPC])
        n_sm, slots = sim.ci.shape[:2]
        w = sim.wi[:, :slots * nwpc]
        if np.all(w[:, :, K.WI_PH][w[:, :, K.WI_ST] != K.W_EMPTY] == ph):
            at = (w[:, :, K.WI_IT] + (w[:, :, K.WI_PC] - int(sim.pi[K.PI_PH_START, ph]))
                  / int(sim.pi[K.PI_PH_LEN, ph]))
            spreads.append(float(at.reshape(n_sm, slots, nwpc).std(axis=2).mean()))
    return sim.run(), spreads, seen   # (run() after the last step only builds the result)


def test_the_warps_of_a_phased_kernel_drift_apart_under_a_full_bottleneck(gtx480, default_suite):
    """phase_comp_mem_comp (gtx480 700 MHz, seed 0): its memory phase fills the MSHRs, and in
    the cycle engine its warps still spread apart within their CTAs (standard deviation 5.5
    iterations by the phase's last whole interval; the sampled engine's 6.4), so loads stay
    outstanding for three intervals after the first warps leave it. A program of several
    phases copies without turnover, so its copies move each warp on its own there too (a
    saturated template with a warp spread: drift_on off, warp_sigma set). Moving a CTA's
    warps together (SAMPLED_VERSION 6) kept the spread at 1.7 and the run's load-outstanding
    share 0.078 low; now +0.008."""
    from sim.bench import interval_shares

    kernel = default_suite.kernel("phase_comp_mem_comp")
    ref, ref_spread, _ = _run_watching_phase(Simulation(gtx480, kernel), 1)
    smp, spread, seen = _run_watching_phase(SampledSimulation(gtx480, kernel), 1)
    assert (False, True) in seen
    assert max(ref_spread) > 5.0 and max(spread) > 0.7 * max(ref_spread)
    a, b = interval_shares(ref.intervals), interval_shares(smp.intervals)
    assert all(abs(b[k] - a[k]) <= 0.03 for k in a), (a, b)
    assert smp.run["instructions"] == ref.run["instructions"]
    assert smp.run["time_ns"] == pytest.approx(ref.run["time_ns"], rel=0.03)
