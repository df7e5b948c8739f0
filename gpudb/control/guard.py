"""The decision step every predictor-driven DVFS controller shares, with or without its guard.

Paper 000 (section 4) and paper 004 (section 4.2.3) describe a memoryless controller: after
each interval, predict time and energy at every core P-state and move to the one minimising the
objective. With a poor predictor that controller does harm (README, "Where gpudb differs from
the papers"): CRIT and LEAD see most of a GPU interval as memory, predict flat time and drive
two-slope kernels to 100 MHz; CRISP's upward form cannot climb back. The guard adds what the
papers describe around such a controller, the same for every predictor:

- ``switch_cost``: a candidate other than the current setting is charged the P-state switch
  (paper 000 section 4: 100 ns with the SMs halted; paper 004 section 4.2.3 names the missing
  "prediction of whether the benefits of switching outweigh the cost"): its time, and the
  static, DRAM background and board energy burnt meanwhile.
- ``max_down_steps``: lower the clock by at most this many P-states per decision (0: no
  limit); raising is not limited. Equalizer (paper 001 section IV-C) moves V/F one step at a
  time; paper 000 section 5.2 notes a mistaken rise is corrected by the next interval, while a
  mistaken drop costs performance.
- ``verify`` (a confidence on predicted gains, measured): the controller checks what it
  predicted against what it then measures. For EDP, ED2P and energy, after a move it chose the
  interval just run is compared with the one before it at the previous setting (both the same
  amount of work); if the objective got worse, the controller goes back and keeps out of that
  direction for 2^k intervals, k the consecutive failures that way (exponential back-off, so a
  wrong predictor costs O(log n) probes). For ``energy_perf`` the bound is on the whole run, so
  every interval's measured time is set against (1 + max_loss) times an estimate of its time
  at the highest P-state (measured there, else the smaller of the predictor's estimate and the
  last interval measured there); a shortfall is a debt that tightens the bound of later
  intervals until it is repaid.
- ``hysteresis_pct``: move only when the best candidate's predicted score beats staying by
  this share, and keep a move (``verify``) only when the measured score improved by it (paper
  000 section 5.2: "ping-ponging which we could solve with some hysteresis"). The default, 2%,
  is above the median change of the objective between consecutive intervals of a fixed run
  (0.5% on gtx480, 0.9% on gtx980) and about the 1% switching overhead paper 000 section 4
  budgets twice over, so the guard does not chase noise; README "Where gpudb differs from the
  papers" gives the results for 0, 0.5, 1 and 2%.
- ``min_dwell``: intervals to stay at a setting before the next predictor-driven move.
- ``verify_stay`` (with ``verify``; EDP, ED2P and energy): a decision to stay, or to return
  after a refuted move, rests on a measurement at that setting (the interval just run, or the
  one before the refuted move), which a memoryless controller takes as the next interval's
  objective. When the interval then run departs from it by more than ``hysteresis_pct``
  either way (the tolerance the guard already uses to believe a measured change), the kernel
  changed phase and the stay's basis is gone: the controller moves to the highest P-state,
  where each kernel starts and where the predictors' downward forms apply (paper 000 eq. 3-5;
  the upward form is what fails to climb back), and that move is verified as any move (the
  next interval against the departed one; refuted: back, and no such probe for 2^k
  intervals, as the bar on moving up). Without it, a stay is never checked: on a 4x-long
  phase_cache_compute CRISP stays at 400 MHz through compute phases where it predicts 700 MHz
  17% worse in EDP and it is 53% better.

``PAPER`` is the papers' controller (no guard); ``GUARDED`` is gpudb's default. This module is
the step's one implementation: the closed loop (gpudb.control.kinds.predictor) calls
:func:`decide` between intervals, and trace replay (queries/controller_replay.sql) calls it
through the SQL function ``guard_replay`` (:func:`replay_steps` over one kernel's fixed runs);
tests/control/test_control.py checks that the replay chooses as the closed loop's controller would.

Like the energy model it decides with (gpudb.control.energy) it is a pure function of
predictions, opening no connection; it contributes ``guard_replay`` to the SQL functions every
connection gets through the store's one hook (gpudb.store.udfs.provide, called below).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gpudb.control.energy import objective_scores, score
from gpudb.predictors import Udf
from gpudb.store import udfs as sql_functions


@dataclass(frozen=True, repr=False)
class Guard:
    """Parameters of the shared controller step (see the module docstring)."""

    switch_cost: bool = True
    max_down_steps: int = 1             # 0: no limit
    verify: bool = True
    hysteresis_pct: float = 2.0
    min_dwell: int = 1
    # False by default so that every guard spelled out before it existed keeps its meaning,
    # its name and its repr (closed-loop run ids hash the repr)
    verify_stay: bool = False

    def __post_init__(self):
        if self.max_down_steps < 0:
            raise ValueError("max_down_steps must be 0 (no limit) or more")
        if not 0.0 <= self.hysteresis_pct < 100.0:
            raise ValueError("hysteresis_pct must be in [0, 100)")
        if self.min_dwell < 1:
            raise ValueError("min_dwell must be at least 1")
        if self.verify_stay and not self.verify:
            raise ValueError("verify_stay needs verify")

    def __repr__(self) -> str:
        # the repr of a guard without verify_stay is the one it had before the field existed
        stay = ", verify_stay=True" if self.verify_stay else ""
        return (f"Guard(switch_cost={self.switch_cost!r}, max_down_steps={self.max_down_steps!r},"
                f" verify={self.verify!r}, hysteresis_pct={self.hysteresis_pct!r},"
                f" min_dwell={self.min_dwell!r}{stay})")

    @property
    def name(self) -> str:
        """'paper', 'guarded', or the parameters spelled out."""
        if self == PAPER:
            return "paper"
        if self == GUARDED:
            return "guarded"
        return (f"cost{int(self.switch_cost)}-down{self.max_down_steps}"
                f"-verify{int(self.verify)}-h{self.hysteresis_pct:g}-dwell{self.min_dwell}"
                + ("-stay1" if self.verify_stay else ""))


PAPER = Guard(switch_cost=False, max_down_steps=0, verify=False, hysteresis_pct=0.0,
              min_dwell=1)
GUARDED = Guard()
GUARDS = {"paper": PAPER, "guarded": GUARDED}


def guard_from(preset: str | None, switch_cost: bool | None = None,
               max_down_steps: int | None = None, verify: bool | None = None,
               hysteresis_pct: float | None = None, min_dwell: int | None = None,
               verify_stay: bool | None = None) -> Guard:
    """A preset of :data:`GUARDS` ('guarded' when None) with the parameters given (None: the
    preset's): what controller_replay.sql's :guard and the five parameters after it mean."""
    preset = "guarded" if preset is None else preset
    if preset not in GUARDS:
        raise ValueError(f"guard must be guarded or paper, got {preset}")
    given = {"switch_cost": switch_cost, "max_down_steps": max_down_steps, "verify": verify,
             "hysteresis_pct": hysteresis_pct, "min_dwell": min_dwell,
             "verify_stay": verify_stay}
    return replace(GUARDS[preset], **{k: v for k, v in given.items() if v is not None})


def guard_params(guard: Guard) -> dict[str, str]:
    """The controller_replay parameters that spell out a guard (their text, as the CLI's
    -p gives them)."""
    return {"guard": "paper" if guard == PAPER else "guarded",
            "switch_cost": str(guard.switch_cost).lower(),
            "max_down_steps": str(guard.max_down_steps), "verify": str(guard.verify).lower(),
            "hysteresis_pct": repr(float(guard.hysteresis_pct)),
            "min_dwell": str(guard.min_dwell), "verify_stay": str(guard.verify_stay).lower()}


@dataclass
class GuardState:
    """What the guarded controller remembers between intervals (all settings as indices into
    the ascending P-state list)."""

    top: int
    cur: int = -1
    prev: int = -1                  # setting of the interval before the one just run
    prev_time_ns: float = 0.0
    prev_energy_j: float = 0.0
    top_time_ns: float = 0.0        # last interval measured at the highest P-state
    debt_ns: float = 0.0            # energy_perf: time over the bound not yet repaid (<= 0)
    chosen: bool = False            # the current setting came from a predictor-driven move
    since_switch: int = 0
    floor: int = 0                  # lowest setting allowed ...
    floor_until: int = -1           # ... for decisions about intervals before this index
    ceiling: int = 0
    ceiling_until: int = -1
    fails_down: int = 0
    fails_up: int = 0
    # verify_stay: the measurement the decision to stay (or to return) rests on, if it was one
    expecting: bool = False
    expect_time_ns: float = 0.0
    expect_energy_j: float = 0.0
    reverted: bool = False          # the last decision undid a move its measurement refuted

    def __post_init__(self):
        if self.cur < 0:
            self.cur = self.top
        self.ceiling = self.top


def decide(state: GuardState, guard: Guard, objective: str, max_loss: float, idx: int,
           time_ns: float, energy_j: float, predicted_ns: np.ndarray,
           predicted_j: np.ndarray, switch_ns: float, switch_j: np.ndarray) -> int:
    """The setting (index) for interval idx + 1, after interval idx ran at ``state.cur``.

    time_ns, energy_j: the interval as measured, without switching overhead.
    predicted_ns, predicted_j: the predictor's time and energy of the interval at every
    setting (at ``state.cur`` they are the measurement). switch_j: energy of a switch to each
    setting (static, DRAM background and board power over switch_ns).
    """
    cur, top = state.cur, state.top
    state.reverted = False
    if cur == top:
        state.top_time_ns = time_ns
    if guard.verify and objective == "energy_perf":
        at_top = time_ns if cur == top else min(predicted_ns[top], state.top_time_ns)
        state.debt_ns = min(0.0, state.debt_ns + (1.0 + max_loss) * at_top - time_ns)
    probe = False
    if (guard.verify_stay and objective != "energy_perf" and state.expecting and cur != top
            and not idx + 1 < state.ceiling_until):
        expected = score(objective, state.expect_time_ns, state.expect_energy_j)
        probe = (abs(score(objective, time_ns, energy_j) - expected)
                 > expected * guard.hysteresis_pct / 100.0)
    expect = (time_ns, energy_j)            # a stay rests on the interval just run
    nxt = None
    if guard.verify and objective != "energy_perf" and state.chosen and state.prev != cur:
        failed = (score(objective, time_ns, energy_j)
                  > score(objective, state.prev_time_ns, state.prev_energy_j)
                  * (1.0 - guard.hysteresis_pct / 100.0))
        down = cur < state.prev
        if failed:
            nxt = state.prev
            state.reverted = True
            expect = (state.prev_time_ns, state.prev_energy_j)   # measured there
            if down:
                state.fails_down += 1
                state.floor, state.floor_until = state.prev, idx + 1 + 2 ** state.fails_down
            else:
                state.fails_up += 1
                state.ceiling, state.ceiling_until = state.prev, idx + 1 + 2 ** state.fails_up
        elif down:
            state.fails_down = 0
        else:
            state.fails_up = 0
    chosen = False
    if nxt is None:
        nxt = cur
        if state.since_switch + 1 >= guard.min_dwell:
            # a departed stay: a phase change, re-entered from the top by a verified move
            nxt = top if probe else _best(state, guard, objective, max_loss, idx,
                                          predicted_ns, predicted_j, switch_ns, switch_j)
            chosen = nxt != cur
    state.prev, state.prev_time_ns, state.prev_energy_j = cur, time_ns, energy_j
    state.since_switch = 0 if nxt != cur else state.since_switch + 1
    state.chosen = chosen
    state.expecting = not chosen
    state.expect_time_ns, state.expect_energy_j = expect
    state.cur = nxt
    return nxt


def _best(state: GuardState, guard: Guard, objective: str, max_loss: float, idx: int,
          predicted_ns: np.ndarray, predicted_j: np.ndarray, switch_ns: float,
          switch_j: np.ndarray) -> int:
    cur, top = state.cur, state.top
    n = len(predicted_ns)
    times = np.asarray(predicted_ns, dtype=float)
    energies = np.asarray(predicted_j, dtype=float)
    if guard.switch_cost:
        moved = np.arange(n) != cur
        energies = energies + np.where(moved, switch_j, 0.0)
        cost_times = times + np.where(moved, switch_ns, 0.0)
    else:
        cost_times = times
    # the energy_perf bound compares predicted work times, as the papers' controller does,
    # less any debt the guard carries; the highest setting is the baseline, never too slow
    too_slow = ((objective == "energy_perf") & (np.arange(n) != top)
                & (times > (1.0 + max_loss) * times[top] + state.debt_ns))
    scores = objective_scores("energy" if objective == "energy_perf" else objective,
                              cost_times, energies, 0.0, 0.0)
    lo = max(0, cur - guard.max_down_steps) if guard.max_down_steps else 0
    hi = n - 1
    if idx + 1 < state.floor_until:
        lo = max(lo, state.floor)
    if idx + 1 < state.ceiling_until:
        hi = min(hi, state.ceiling)
    # a setting without a prediction (a NULL in replay's inputs) is no candidate
    allowed = [s for s in range(n) if (lo <= s <= hi or s == cur) and not np.isnan(times[s])]
    if not allowed:
        return cur
    best = min(allowed, key=lambda s: (too_slow[s], scores[s], -s))
    if best != cur and not too_slow[cur] and guard.hysteresis_pct > 0:
        if not scores[best] < scores[cur] * (1.0 - guard.hysteresis_pct / 100.0):
            best = cur
    return best


def replay_steps(guard: Guard, objective: str, max_loss: float, measured_ns: np.ndarray,
                 measured_j: np.ndarray, predicted_ns: np.ndarray, predicted_j: np.ndarray,
                 switch_ns: float, switch_j: np.ndarray) -> tuple[list[int], list[bool]]:
    """Trace replay of one kernel: the setting (index into the ascending P-states) of each
    interval and whether it undid a refuted move, starting at the highest setting.

    measured_ns, measured_j: [setting, interval] the fixed runs' outcomes (energy in the
    decisions' scope); predicted_ns, predicted_j, switch_j: [interval, base, target] what a
    controller at ``base`` after ``interval`` predicts for ``target`` (NaN: no prediction),
    and the energy of a switch there; switch_ns: the switching time.
    """
    top = measured_ns.shape[0] - 1
    state = GuardState(top=top)
    choice, reverted = [top], [False]
    for i in range(measured_ns.shape[1] - 1):
        cur = state.cur
        choice.append(decide(state, guard, objective, max_loss, i, float(measured_ns[cur, i]),
                             float(measured_j[cur, i]), predicted_ns[i, cur], predicted_j[i, cur],
                             switch_ns, switch_j[i, cur]))
        reverted.append(state.reverted)
    return choice, reverted


REPLAY_RESULT = "STRUCT(guard VARCHAR, setting_idx INTEGER[], reverted BOOLEAN[])"


def guard_replay_udf(preset, switch_cost, max_down_steps, verify, hysteresis_pct, min_dwell,
                     verify_stay, objective, max_loss_pct, n_settings, measured_ns, measured_j,
                     predicted_ns, predicted_j, switch_ns, switch_j):
    """SQL function ``guard_replay``, one row per kernel (Arrow arrays in, a struct array
    out): :func:`replay_steps` under the guard :func:`guard_from` makes of the parameters
    (NULL: the preset's), with the guard's name. The lists are flat, row-major: measured_*
    [setting, interval], predicted_* and switch_j [interval, base, target]."""
    import pyarrow as pa  # here: importing gpudb (which imports this module) stays light

    def rows(array):
        """Row i's list as float64 (NULL: NaN): each list column converted once, not per row
        (per row it took 2 of a warm `gpudb demo`'s 31 s of replays)."""
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        values = array.values.to_numpy(zero_copy_only=False).astype(float)
        offsets = array.offsets.to_numpy()
        return lambda i: values[offsets[i]:offsets[i + 1]]

    m_ns_of, m_j_of, p_ns_of, p_j_of, s_j_of = (
        rows(a) for a in (measured_ns, measured_j, predicted_ns, predicted_j, switch_j))
    names, settings, reverts = [], [], []
    guards = zip(*(a.to_pylist() for a in (preset, switch_cost, max_down_steps, verify,
                                            hysteresis_pct, min_dwell, verify_stay)), strict=True)
    for row, params in enumerate(guards):
        guard = guard_from(*params)
        s = n_settings[row].as_py()
        m_ns = m_ns_of(row).reshape(s, -1)
        n = m_ns.shape[1]
        choice, reverted = replay_steps(
            guard, objective[row].as_py(), max_loss_pct[row].as_py() / 100.0, m_ns,
            m_j_of(row).reshape(s, n), p_ns_of(row).reshape(n, s, s),
            p_j_of(row).reshape(n, s, s), switch_ns[row].as_py(), s_j_of(row).reshape(n, s, s))
        names.append(guard.name)
        settings.append(choice)
        reverts.append(reverted)
    return pa.StructArray.from_arrays(
        [pa.array(names, pa.string()), pa.array(settings, pa.list_(pa.int32())),
         pa.array(reverts, pa.list_(pa.bool_()))], names=["guard", "setting_idx", "reverted"])


UDFS = (Udf("guard_replay", guard_replay_udf,
             ("VARCHAR", "BOOLEAN", "INTEGER", "BOOLEAN", "DOUBLE", "INTEGER", "BOOLEAN",
              "VARCHAR", "DOUBLE", "INTEGER", "DOUBLE[]", "DOUBLE[]", "DOUBLE[]", "DOUBLE[]",
              "DOUBLE", "DOUBLE[]"), REPLAY_RESULT,
             "guard_replay(guard, switch_cost, max_down_steps, verify, hysteresis_pct, "
             "min_dwell, verify_stay, objective, max_loss_pct, n_settings, measured_ns, "
             "measured_j, predicted_ns, predicted_j, switch_ns, switch_j): one kernel's trace "
             "replay through the guard's step (gpudb.control.guard.replay_steps)",
             null_handling="special"),)


def sql_function_list() -> tuple[Udf, ...]:
    """The SQL functions the control layer contributes to every connection."""
    return UDFS


sql_functions.provide(sql_function_list)
