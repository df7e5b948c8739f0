"""The shared controller step (gpudb.control.guard.decide) on hand-made intervals: each guard
mechanism alone, with the choices worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from gpudb.control.guard import GUARDED, PAPER, Guard, GuardState, decide

# Three P-states (indices 0, 1, 2 = lowest .. highest); switching costs nothing unless a test
# says so.
NOSWITCH = np.zeros(3)


def step(state, guard, objective, idx, measured, predicted_ns, predicted_j, max_loss=0.01,
         switch_ns=0.0, switch_j=NOSWITCH):
    t, e = measured
    return decide(state, guard, objective, max_loss, idx, t, e, np.array(predicted_ns, float),
                  np.array(predicted_j, float), switch_ns, switch_j)


def test_paper_controller_jumps_to_the_predicted_best():
    state = GuardState(top=2)
    # from the top, the lowest setting is predicted equally fast and cheaper
    assert step(state, PAPER, "edp", 0, (10, 10), [10, 10, 10], [6, 8, 10]) == 0


def test_guard_lowers_one_step_and_raises_freely():
    state = GuardState(top=2)
    assert step(state, GUARDED, "edp", 0, (10, 10), [10, 10, 10], [6, 8, 10]) == 1
    # at the middle setting the measurement bears the move out (EDP 10 x 8 < 10 x 10) ...
    assert step(state, GUARDED, "edp", 1, (10, 8), [10, 10, 10], [6, 8, 10]) == 0
    # ... and the predictor now wants the highest setting: raising is not limited
    assert step(state, GUARDED, "edp", 2, (10, 6), [10, 10, 5], [6, 8, 5]) == 2


def test_refuted_move_is_undone_with_exponential_back_off():
    guard = Guard(switch_cost=False, hysteresis_pct=0)
    state = GuardState(top=2)
    always_down = ([10, 10, 10], [6, 8, 10])       # the predictor always favours going down
    assert step(state, guard, "edp", 0, (10, 10), *always_down) == 1
    # interval 1 at the middle setting measures EDP 12 x 9 > 10 x 10: back up, and setting 1
    # is barred for decisions about intervals before 1 + 1 + 2^1 = 4
    assert step(state, guard, "edp", 1, (12, 9), *always_down) == 2
    assert (state.floor, state.floor_until, state.fails_down) == (2, 4, 1)
    assert step(state, guard, "edp", 2, (10, 10), *always_down) == 2
    assert step(state, guard, "edp", 3, (10, 10), *always_down) == 1   # decides interval 4
    # refuted again: barred until 4 + 1 + 2^2 = 9
    assert step(state, guard, "edp", 4, (12, 9), *always_down) == 2
    assert (state.floor_until, state.fails_down) == (9, 2)
    for idx in range(5, 8):
        assert step(state, guard, "edp", idx, (10, 10), *always_down) == 2
    assert step(state, guard, "edp", 8, (10, 10), *always_down) == 1
    # a move the measurement bears out resets the count
    step(state, guard, "edp", 9, (10, 9), *always_down)
    assert state.fails_down == 0


def test_returning_after_a_refuted_move_is_not_itself_verified():
    guard = Guard(switch_cost=False, hysteresis_pct=0)
    state = GuardState(top=2)
    step(state, guard, "energy", 0, (10, 10), [10, 10, 10], [6, 8, 10])
    assert step(state, guard, "energy", 1, (10, 11), [10, 10, 10], [6, 8, 10]) == 2
    # the return to 2 measures worse than interval 1 did at 1 (a new phase), but it was not
    # the predictor's move, so the guard does not undo it; the barred setting 1 stays barred
    assert step(state, guard, "energy", 2, (20, 20), [10, 10, 10], [6, 8, 10]) == 2


def test_switching_cost_keeps_a_gain_smaller_than_the_switch():
    state = GuardState(top=2)
    guard = Guard(max_down_steps=0, verify=False, hysteresis_pct=0)
    # setting 1 is predicted 0.1 J cheaper at equal time; the switch costs 0.2 J
    assert step(state, guard, "energy", 0, (10, 10), [10, 10, 10], [9.95, 9.9, 10],
                switch_ns=1.0, switch_j=np.array([0.2, 0.2, 0.2])) == 2
    assert step(GuardState(top=2), PAPER, "energy", 0, (10, 10), [10, 10, 10],
                [9.95, 9.9, 10]) == 1


def test_hysteresis_and_dwell():
    guard = Guard(switch_cost=False, max_down_steps=0, verify=False, hysteresis_pct=5.0)
    # 4% predicted gain: below the 5% margin, stay; 6%: move
    assert step(GuardState(top=2), guard, "energy", 0, (10, 10), [10, 10, 10],
                [9.7, 9.6, 10]) == 2
    assert step(GuardState(top=2), guard, "energy", 0, (10, 10), [10, 10, 10],
                [9.7, 9.4, 10]) == 1
    dwell = Guard(switch_cost=False, max_down_steps=0, verify=False, hysteresis_pct=0,
                  min_dwell=3)
    state = GuardState(top=2)
    # two intervals at the top setting before it may move: idx 0 stays, idx 1 moves
    assert step(state, dwell, "energy", 0, (10, 10), [10, 10, 10], [5, 8, 10]) == 2
    assert step(state, dwell, "energy", 1, (10, 10), [10, 10, 10], [5, 8, 10]) == 2
    assert step(state, dwell, "energy", 2, (10, 10), [10, 10, 10], [5, 8, 10]) == 0


def test_energy_perf_debt_tightens_the_bound_until_repaid():
    guard = Guard(switch_cost=False, hysteresis_pct=0)
    state = GuardState(top=2)
    # predicted within 1% at setting 1: go there (one step)
    assert step(state, guard, "energy_perf", 0, (100, 10), [150, 100.5, 100], [5, 8, 10]) == 1
    assert state.debt_ns == 0
    # it measured 110 ns where the highest setting is predicted (and was measured) at 100:
    # 1.01 x 100 - 110 = -9 ns of debt, so 100.5 > 1.01 x 100 - 9 is too slow: back to 2
    assert step(state, guard, "energy_perf", 1, (110, 8), [150, 100.5, 100], [5, 8, 10]) == 2
    assert state.debt_ns == pytest.approx(-9.0)
    # at the top each interval repays 1% of its time: 9 intervals of 100 ns
    for idx in range(2, 10):
        assert step(state, guard, "energy_perf", idx, (100, 10), [150, 100.5, 100],
                    [5, 8, 10]) == 2
    assert state.debt_ns == pytest.approx(-1.0)
    assert step(state, guard, "energy_perf", 10, (100, 10), [150, 100.5, 100],
                [5, 8, 10]) == 1
    assert state.debt_ns == 0


def test_a_move_is_kept_only_if_its_measured_gain_clears_the_hysteresis():
    guard = Guard(switch_cost=False, hysteresis_pct=2.0)
    predicted = ([10, 10, 10], [6, 8, 10])         # 20% predicted gain one step down
    state = GuardState(top=2)
    assert step(state, guard, "energy", 0, (10, 10.0), *predicted) == 1
    # measured 9.9 J against 10 J: a 1% gain, inside the 2% margin: not believed, go back
    assert step(state, guard, "energy", 1, (10, 9.9), *predicted) == 2
    state = GuardState(top=2)
    step(state, guard, "energy", 0, (10, 10.0), *predicted)
    # 3% measured gain: kept, and the predictor may move on
    assert step(state, guard, "energy", 1, (10, 9.7), *predicted) == 0


def test_guard_parameters_are_checked_and_named():
    assert PAPER.name == "paper" and GUARDED.name == "guarded"
    assert Guard(hysteresis_pct=2.5).name == "cost1-down1-verify1-h2.5-dwell1"
    assert GUARDED.hysteresis_pct == 2.0 and PAPER.hysteresis_pct == 0
    for bad in ({"max_down_steps": -1}, {"hysteresis_pct": 100}, {"min_dwell": 0}):
        with pytest.raises(ValueError):
            Guard(**bad)
