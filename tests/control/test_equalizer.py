"""Equalizer's decision logic (gpudb.control.equalizer) on hand-made counter samples: each
branch of Algorithm 1, Table I in both modes, section IV-B's block hysteresis and section
IV-C's vote and V/F steps (paper 001)."""

from __future__ import annotations

import pytest

from gpudb.control.equalizer import (
    SAMPLES_PER_EPOCH,
    BlockLimiter,
    Decision,
    EpochCounters,
    VfLevel,
    decide,
    frequency_manager,
    inclined,
    level_mhz,
    majority,
    step_level,
    vf_request,
)

W_CTA = 8       # warps per block in every sample below (a 256-thread block)


def counters(active, waiting=0.0, xalu=0.0, xmem=0.0, w_cta=W_CTA):
    return EpochCounters(active, waiting, xalu, xmem, w_cta)


def flags(d: Decision):
    return d.block_delta, d.comp_action, d.mem_action, d.tendency


# --- Algorithm 1, one test per branch ------------------------------------------------------

def test_line7_many_xmem_warps_drop_a_block_and_request_memaction():
    # 9 X_mem warps > W_cta = 8, even with more X_alu warps (line 7 is tested first)
    assert flags(decide(counters(40, 5, 20, 9))) == (-1, False, True, "memory")


def test_line10_many_xalu_warps_request_compaction():
    assert flags(decide(counters(40, 5, 9, 2))) == (0, True, False, "compute")


def test_line12_more_than_two_xmem_warps_request_memaction_keeping_blocks():
    assert flags(decide(counters(40, 5, 8, 2.5))) == (0, False, True, "likely_memory")


def test_line14_waiting_majority_with_compute_inclination_adds_a_block():
    # 21 of 40 waiting > 40/2; X_alu 3 > X_mem 1
    assert flags(decide(counters(40, 21, 3, 1))) == (+1, True, False, "unsaturated")


def test_line14_waiting_majority_with_memory_inclination_adds_a_block():
    assert flags(decide(counters(40, 21, 1, 2))) == (+1, False, True, "unsaturated")


def test_line14_tie_in_inclination_takes_the_else_branch():
    # lines 16-19: nALU > nMem is false on equality, so MemAction (both zero included)
    assert flags(decide(counters(40, 30, 2, 2))) == (+1, False, True, "unsaturated")
    assert flags(decide(counters(40, 30, 0, 0))) == (+1, False, True, "unsaturated")


def test_inclined_variant_keeps_the_block_change_and_drops_an_action_without_excess_warps():
    # gpudb's energy-mode variant: lines 16-19 act only on at least one X_alu or X_mem warp
    # per sample (section III-A); the tie at zero (a latency-bound kernel) changes no V/F
    c = counters(40, 30, 0, 0)
    d = inclined(decide(c), c)
    assert flags(d) == (+1, False, False, "uninclined")
    assert vf_request(d, "energy") == (0, 0)
    c = counters(40, 30, 0.9, 0.99)
    assert flags(inclined(decide(c), c)) == (+1, False, False, "uninclined")
    # one excess warp is an inclination: the printed branch stands
    for c, expected in ((counters(40, 21, 1.0, 0.5), (+1, True, False, "unsaturated")),
                        (counters(40, 21, 0.5, 1.0), (+1, False, True, "unsaturated"))):
        assert flags(inclined(decide(c), c)) == expected
    # the other branches are the paper's, whatever the excess warps
    for c in (counters(40, 5, 20, 9), counters(40, 5, 9, 2), counters(40, 5, 8, 2.5),
              counters(0), counters(40, 10, 0.5, 0.5)):
        assert inclined(decide(c), c) == decide(c)


def test_line21_no_active_warps_request_compaction():
    assert flags(decide(counters(0))) == (0, True, False, "idle")


def test_fall_through_is_the_degenerate_kernel_nothing_changes():
    # warps active, at most half waiting, no excess: no branch of Algorithm 1 is taken
    assert flags(decide(counters(40, 10, 5, 1))) == (0, False, False, "degenerate")


# --- strict '>' boundaries ----------------------------------------------------------------

def test_xmem_equal_to_w_cta_is_not_line7():
    # nMem == W_cta falls to line 12 (8 > 2)
    assert decide(counters(40, 5, 0, 8)).tendency == "likely_memory"


def test_xalu_equal_to_w_cta_is_not_line10():
    # nALU == W_cta, nMem 1, 10 of 40 waiting: degenerate
    assert decide(counters(40, 10, 8, 1)).tendency == "degenerate"


def test_xmem_equal_to_two_is_not_line12():
    assert decide(counters(40, 10, 0, 2)).tendency == "degenerate"


def test_waiting_equal_to_half_the_active_warps_is_not_line14():
    assert decide(counters(40, 20, 0, 0)).tendency == "degenerate"
    assert decide(counters(40, 20.5, 0, 0)).tendency == "unsaturated"


def test_from_sums_averages_and_keeps_boundaries_exact():
    # 32 samples: X_mem sums to exactly 8 x 32, so the average equals W_cta
    c = EpochCounters.from_sums(SAMPLES_PER_EPOCH, 40 * 32, 5 * 32, 0, 8 * 32, W_CTA)
    assert (c.n_active, c.n_waiting, c.n_xalu, c.n_xmem) == (40.0, 5.0, 0.0, 8.0)
    assert decide(c).tendency == "likely_memory"
    # one more X_mem warp in one sample tips it over
    c = EpochCounters.from_sums(SAMPLES_PER_EPOCH, 40 * 32, 5 * 32, 0, 8 * 32 + 1, W_CTA)
    assert decide(c).tendency == "memory"
    # a sample count that does not divide evenly: 3 samples, X_mem sum 3 x 8
    c = EpochCounters.from_sums(3, 120, 15, 0, 24, W_CTA)
    assert decide(c).tendency == "likely_memory"
    # odd active sum: waiting 5 of 11 is not above 5.5, 6 of 11 is
    assert decide(EpochCounters.from_sums(3, 11, 5, 0, 0, W_CTA)).tendency == "degenerate"
    assert decide(EpochCounters.from_sums(3, 11, 6, 0, 0, W_CTA)).tendency == "unsaturated"


def test_counters_are_validated():
    with pytest.raises(ValueError):
        counters(-1)
    with pytest.raises(ValueError):
        counters(float("nan"))
    with pytest.raises(ValueError):
        counters(10, 5, 4, 2)           # 11 warps in states, only 10 active
    with pytest.raises(ValueError):
        counters(10, w_cta=0)
    with pytest.raises(ValueError):
        EpochCounters.from_sums(0, 0, 0, 0, 0, W_CTA)


# --- Table I ------------------------------------------------------------------------------

COMP = Decision(0, True, False, "compute")
MEM = Decision(-1, False, True, "memory")
NONE = Decision(0, False, False, "degenerate")


def test_table1_energy_mode_throttles_the_unused_domain():
    assert vf_request(COMP, "energy") == (0, -1)       # compute kernel: lower memory VF
    assert vf_request(MEM, "energy") == (-1, 0)        # memory kernel: lower SM VF
    assert vf_request(NONE, "energy") == (0, 0)


def test_table1_performance_mode_boosts_the_bottleneck():
    assert vf_request(COMP, "performance") == (+1, 0)  # compute kernel: raise SM VF
    assert vf_request(MEM, "performance") == (0, +1)   # memory kernel: raise memory VF
    assert vf_request(NONE, "performance") == (0, 0)


def test_idle_sm_finishes_early_or_saves_memory_energy():
    idle = decide(counters(0))
    assert vf_request(idle, "performance") == (+1, 0)
    assert vf_request(idle, "energy") == (0, -1)


def test_both_actions_and_bad_modes_are_refused():
    with pytest.raises(ValueError):
        Decision(0, True, True, "memory")
    with pytest.raises(ValueError):
        Decision(2, False, False, "degenerate")
    with pytest.raises(ValueError):
        vf_request(COMP, "balanced")


# --- section IV-B: three-epoch hysteresis on numBlocks ------------------------------------

def test_block_limiter_starts_at_the_maximum():
    assert BlockLimiter(6).num_blocks == 6


def test_two_agreeing_epochs_then_a_different_one_change_nothing():
    lim = BlockLimiter(6)
    assert [lim.update(d) for d in (-1, -1, 0)] == [6, 6, 6]
    # the run restarts: two more -1 are not enough, the third is
    assert [lim.update(d) for d in (-1, -1)] == [6, 6]
    assert lim.update(-1) == 5


def test_an_opposite_decision_starts_a_new_run():
    lim = BlockLimiter(6)
    for d in (-1, -1, -1):
        lim.update(d)
    assert lim.num_blocks == 5
    assert [lim.update(d) for d in (-1, -1, +1, +1)] == [5, 5, 5, 5]
    assert lim.update(+1) == 6


def test_three_agreeing_epochs_move_one_block_and_the_count_restarts():
    lim = BlockLimiter(6)
    assert [lim.update(-1) for _ in range(6)] == [6, 6, 5, 5, 5, 4]


def test_block_limit_stays_within_one_and_the_maximum():
    lim = BlockLimiter(2)
    assert [lim.update(+1) for _ in range(3)] == [2, 2, 2]          # already at the maximum
    assert [lim.update(-1) for _ in range(6)] == [2, 2, 1, 1, 1, 1]  # never below 1
    # a -1 at the floor counts as keeping the value: it breaks a run of +1
    assert [lim.update(d) for d in (+1, +1, -1, +1)] == [1, 1, 1, 1]
    assert [lim.update(+1) for _ in range(2)] == [1, 2]


def test_block_limiter_is_validated():
    with pytest.raises(ValueError):
        BlockLimiter(0)
    with pytest.raises(ValueError):
        BlockLimiter(4).update(2)


# --- section IV-C: majority vote and gradual V/F steps ------------------------------------

def test_majority_follows_more_than_half_of_the_sms():
    assert majority([+1] * 9 + [0] * 4 + [-1] * 2) == +1    # 9 of 15
    assert majority([-1] * 8 + [0] * 7) == -1               # 8 of 15
    assert majority([0] * 15) == 0


def test_majority_without_more_than_half_keeps_the_level():
    assert majority([+1, +1, -1, -1]) == 0                  # tie between the changes
    assert majority([+1, +1, 0, 0]) == 0                    # half is not a majority
    assert majority([+1] * 7 + [0] * 5 + [-1] * 3) == 0     # plurality, not majority
    assert majority([]) == 0
    with pytest.raises(ValueError):
        majority([2])


def test_vf_levels_step_one_level_per_epoch_without_overshoot():
    level = VfLevel.LOW
    seen = []
    for _ in range(4):
        level = step_level(level, +1)
        seen.append(level)
    assert seen == [VfLevel.NORMAL, VfLevel.HIGH, VfLevel.HIGH, VfLevel.HIGH]
    assert step_level(VfLevel.HIGH, -1) == VfLevel.NORMAL
    assert step_level(VfLevel.LOW, -1) == VfLevel.LOW
    assert step_level(VfLevel.NORMAL, 0) == VfLevel.NORMAL
    with pytest.raises(ValueError):
        step_level(VfLevel.LOW, +2)


def test_level_mhz_is_fifteen_percent_either_side_of_nominal():
    assert level_mhz(VfLevel.LOW, 700.0) == pytest.approx(595.0)
    assert level_mhz(VfLevel.NORMAL, 700.0) == 700.0
    assert level_mhz(VfLevel.HIGH, 924.0) == pytest.approx(1062.6)


def test_frequency_manager_votes_each_domain_then_steps():
    # energy mode, 3 SMs: two memory-bound (lower SM), one compute-bound (lower memory)
    requests = [vf_request(MEM, "energy"), vf_request(MEM, "energy"),
                vf_request(COMP, "energy")]
    assert frequency_manager(VfLevel.NORMAL, VfLevel.NORMAL, requests) == (
        VfLevel.LOW, VfLevel.NORMAL)
