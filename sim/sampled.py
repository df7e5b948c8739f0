"""The sampled engine: the cycle engine (sim._kernels) run in detail where the machine changes,
and copied in time where it repeats itself (issue 42; docs/DESIGN.md section 7, docs/simulator.md).

Mechanism, per run (``SampledSimulation``):

1. **Windows.** An interval (``interval_instructions`` warp instructions) is made of windows of
   ``interval_instructions / N_WINDOWS`` instructions, each simulated in detail by the cycle
   engine or *copied*; the interval's counters are the sums of its windows'.
2. **Template.** A detailed window is *steady* when, between its start and end, no CTA launched
   or completed, no V/F switch happened, every live warp is in the same loop phase at both ends
   (none retired, paused or waiting on its LSU), and every running CTA ran at least one whole
   loop iteration (the window stays open until it has, so it holds whole loop periods). The
   second steady window in a row becomes the template: the first after a change is a
   transient (a run's first interval of store_burst runs at 0.180 cycles per instruction, the
   steady state at 0.193). The template is kept across detailed windows that are not steady
   while the same CTA slots are occupied and (multi-phase programs) every live warp is in the
   phase it was in. A steady window that agrees with the template (item 3) is merged into it
   (an exponential mean over about four windows: one window's cycles per instruction varies
   several times more than an interval's).
3. **Adaptive refresh.** After a template, the next detailed window comes after ``gap``
   windows' worth of copies. The gap doubles, up to MAX_GAP, while successive templates agree
   on cycles per instruction within GAP_TOL, and restarts at 1 when they do not: a template
   taken in a transient (shared_conflict's first, 40% slow) is replaced within a window,
   one of a steady kernel serves four intervals.
4. **Copy.** While every CTA can advance, up to ``gap`` windows (and no further than the
   interval's end) are one copy of the template: the whole machine state moves forward in
   time by D = template cycles x (work copied / template work), rounded to the timing wheel's
   period (W_LONG cycles; the rounding carried to the next copy): every cycle stamp
   (scoreboard, warp waits, CTA completions, MSHR and store-queue releases, SM next events, the
   warp timing wheel), the DRAM channels' free times by D x ns per cycle. The CTAs of an SM
   advance together, in whole loop iterations (one count per CTA keeps its warps' barriers
   consistent; the fraction carries to the next copy), at the template's mean rate of the SMs
   holding as many CTAs plus a deviation drawn per SM and copy with those SMs' spread of rates
   in the template, scaled as a random walk's: the SMs drift apart as they do in the cycle
   engine. The copy's event counts are the template's scaled by the work ratio, its cycle
   counts by the time ratio. A copy that would end CTAs it cannot turn over (item 5: none left
   to take their slots, or a program without turnover) is shortened to end before the first
   of them; the window in which it ends is detailed. The last instructions before an
   interval's end (a quarter window or less) are simulated in detail outside any window;
   where the rates' whole iterations would leave more, the interval's last copy moves every
   running slot one iteration more and runs past the end. The part of a copy past an
   interval's end is the next interval's, pro rata of its instructions (counters and time):
   every interval holds its instructions, as the cycle engine's do.
5. **Turnover.** In a program whose first loop holds all but an eighth or less of a warp's
   instructions (one-phase programs, compute_fma's loop and one-store epilogue), a CTA that
   would finish during a copy, or has warps that already issued their last instruction,
   completes in it: the slot does its planned iterations' work, the old CTA's rest first
   (epilogue included) and the grid's next CTA the whole iterations left. Where every warp of
   the old CTA is still in the loop, each passes its place in the loop body, its scoreboard
   and its loads in flight to the new CTA's warp, so the SM's pipeline stays in its steady
   state; otherwise the new CTA's warps start at the program's start, all ready (as the
   cycle engine's launch leaves them), the SM's warp sets reset as after a clock switch, and
   an LSU instruction of the old CTA is dropped (the copied time holds the template's memory
   traffic). Other programs copy without turnover.
6. **Drift and the laggards' tail.** In a program without barriers whose template leaves its
   SMs' busiest bottleneck (issue slots, busiest DRAM channel, MSHRs, store queue) below full
   use, the copies move each warp on its own, its CTA's iterations plus a random walk with the
   warps' spread in the template (their positions' variance growth over the window, none
   below 1/4 iteration^2), and a CTA ends only when its slowest warp does: the issue slots its
   finished warps leave idle meanwhile count in the copy's time, not its work (_plan,
   _set_drift). Where the bottleneck is full, the other warps take those slots up: in a
   program with turnover the copies then move a CTA's warps together; in one without
   (several phases) each warp still moves on its own, without the tail, so the warps arrive
   at a phase's end as spread out as the cycle engine's do.

Stated approximations: a copy adds the template's growth of CRIT's and CRISP's critical paths
and leaves the running paths where they were (they run on across an interval's detailed
stretches and restart at its end, as the cycle engine's do per interval); the MSHR and
store-queue bounds (``mshr_min_ns``, ``store_queue_min_ns``: the busiest SM's entry-time over
the interval) sum each detailed stretch's and copy's busiest SM; an epilogue skipped in a
turnover adds its instructions but not its own events (compute_fma's one store per warp);
the part of a copy given to the next interval is the copy's average, and in a closed loop
ran at the setting before the switch (its time converted to the next interval's clock, its
energy counted at the next interval's voltage). Instruction totals are exact (every run
executes the reference's instructions).
Accuracy against the cycle engine is measured by ``gpudb bench engine``, not assumed: the
error concentrates in the last wave, whose length depends on how far apart the CTAs are when
the grid runs out (docs/DESIGN.md section 7).

Fixed runs and closed-loop runs both work: a setting or CTA-limit change drops the template,
so the windows after it are detailed until the machine is steady again. Epoch mode (intervals
cut by cycles) is the cycle engine's only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from sim import _kernels as K
from sim.config import ConfigError
from sim.model import _TOTALS, Setting, Simulation, SimulationError

# Windows per interval: 8 measured best at stop 51 (mem_stream 5.4-5.7x the reference,
# docs/DESIGN.md section 7); 16 was no faster on the long suite at stop 53.
N_WINDOWS = 8
# Steady detailed windows in a row before the last one is a template (the first is a transient).
WARM_WINDOWS = 2
# Adaptive refresh: after a template, the next detailed window comes after `gap` copied windows;
# the gap doubles (up to MAX_GAP, four intervals) while successive templates agree on cycles
# per instruction within GAP_TOL, and restarts at 1 when they do not. Successive windows of
# one steady state differ by 1-2% (median) and up to ~5% (90th percentile) in cycles per
# instruction (the long suite at gtx480 700 MHz), so a 2% bar kept most kernels at a gap of
# 1-2; a transient template is off by far more (shared_conflict's first: +40%).
MAX_GAP = 32
GAP_TOL = 0.05
# A template measured again within GAP_TOL is merged with the last: its sums weighted by this
# (an exponential mean over ~1 / (1 - MERGE_WEIGHT) windows; SampledSimulation._merge).
MERGE_WEIGHT = 0.75

_BIG = K.BIG
# Bisection steps that shorten a copy to end before the CTAs it would end (_plan): the copy
# found is within 1/2^steps of the longest.
_SHORTEN_STEPS = 6
# the MSHR and store-queue bounds (ns), summed over an interval's parts (_advance_to)
_BOUNDS = np.array([K.A_MSHR_MIN_NS, K.A_SQ_MIN_NS], np.int64)
# CRIT's and CRISP's critical paths: running over an interval's parts (_advance_to)
_PATHS = np.array([K.A_CRIT, K.A_LCP, K.A_LCP_SLOT], np.int64)
# the accumulators that count events (sim.model's GPU-wide totals), not cycles
_COUNTS = np.array(sorted(_TOTALS.values()), np.int64)
# the SMs' running paths behind _PATHS, as sim._kernels._end_interval reads them
_SI_PATHS = np.array([K.SI_CRIT, K.SI_LCP, K.SI_LCP_SLOT], np.int64)
_SI_STAMPS = np.array([K.SI_NEXT, K.SI_GAP, K.SI_LSU_MAXRET, K.SI_SFU_FREE, K.SI_MSHR_NEXT,
                       K.SI_SQ_NEXT, K.SI_LEAD_UNTIL, K.SI_CTA_EV, K.SI_WQ_T, K.SI_DP_FREE],
                      np.int64)


@njit(cache=True)
def _flat(wi, s, w, pi, pre_ph, total):
    """Warp w's position in its CTA's program, in warp instructions from the first (its
    program's length once it has issued its last instruction)."""
    ws = wi[s, w, K.WI_ST]
    ph = wi[s, w, K.WI_PH]
    if ws == K.W_RETIRED or ws == K.W_LSU or ph >= pre_ph.shape[0] - 1:
        return total
    return pre_ph[ph] + wi[s, w, K.WI_IT] * pi[K.PI_PH_LEN, ph] \
        + wi[s, w, K.WI_PC] - pi[K.PI_PH_START, ph]


@njit(cache=True)
def _kept(wi, s, c, nwpc):
    """Whether CTA slot [s, c]'s warps pass their places to the next CTA's in a turnover,
    and then the iteration they count from: -1 if not, else the slot's least iteration (each
    warp keeps its lead over it: one past a barrier at its loop body's end has counted the
    next iteration already). They pass them on where all of them are in the first loop,
    issuing or at a barrier; after a CTA with a warp that has issued its last instruction, or
    is past the loop, the next CTA's warps start afresh, so no barrier waits for warps that
    start elsewhere."""
    base = -1
    for w in range(c * nwpc, (c + 1) * nwpc):
        ws = wi[s, w, K.WI_ST]
        if (ws != K.W_ACTIVE and ws != K.W_BARRIER) or wi[s, w, K.WI_PH] != 0:
            return -1
        if base < 0 or wi[s, w, K.WI_IT] < base:
            base = wi[s, w, K.WI_IT]
    return base


@njit(cache=True)
def _lead(wi, s, w, pi, base):
    """Warp w's instructions into the next CTA's program beyond its ``base`` iterations,
    where it passes its place on (_kept)."""
    return (wi[s, w, K.WI_IT] - base) * pi[K.PI_PH_LEN, 0] + wi[s, w, K.WI_PC] \
        - pi[K.PI_PH_START, 0]


@njit(cache=True)
def _snap_arrays(wi, ci, pi):
    """A window end's snapshot (SampledSimulation._snap): each warp's state, phase, loop
    length (warp instructions of its phase's body) and position (iterations x length + its
    place in the body), each CTA slot's state and sequence number."""
    n_sm, n_w = wi.shape[0], wi.shape[1]
    last = pi.shape[1] - 1
    st = np.empty((n_sm, n_w), np.int64)
    ph = np.empty((n_sm, n_w), np.int64)
    length = np.empty((n_sm, n_w), np.int64)
    pos = np.empty((n_sm, n_w), np.int64)
    for s in range(n_sm):
        for w in range(n_w):
            st[s, w] = wi[s, w, K.WI_ST]
            ph[s, w] = wi[s, w, K.WI_PH]
            length[s, w] = pi[K.PI_PH_LEN, min(ph[s, w], last)]
            pos[s, w] = wi[s, w, K.WI_IT] * length[s, w] + wi[s, w, K.WI_PC]
    cst = np.empty(ci.shape[:2], np.int64)
    seq = np.empty(ci.shape[:2], np.int64)
    for s in range(ci.shape[0]):
        for c in range(ci.shape[1]):
            cst[s, c] = ci[s, c, K.CI_ST]
            seq[s, c] = ci[s, c, K.CI_SEQ]
    return st, ph, length, pos, cst, seq


@njit(cache=True)
def _one_stretch(st0, ph0, cst0, seq0, st1, ph1, cst1, seq1):
    """Whether the machine ran one steady stretch between two snapshots (_snap_arrays): the
    same CTAs in the same slots, at least one running, the same warps live, none of them
    retired, paused or waiting on its LSU, each in the phase it was in."""
    any_run = False
    for s in range(cst1.shape[0]):
        for c in range(cst1.shape[1]):
            if cst0[s, c] != cst1[s, c] or seq0[s, c] != seq1[s, c]:
                return False
            any_run = any_run or cst1[s, c] == 1
    for s in range(st1.shape[0]):
        for w in range(st1.shape[1]):
            live = st1[s, w] != K.W_EMPTY
            if live != (st0[s, w] != K.W_EMPTY):
                return False
            if live and (st1[s, w] == K.W_RETIRED or st1[s, w] == K.W_LSU
                         or st1[s, w] == K.W_PAUSED or ph0[s, w] != ph1[s, w]):
                return False
    return any_run


@njit(cache=True)
def _iterations(d, part, z, sigma, carry):
    """Whole loop iterations per CTA slot for ``part`` of a copy at rates ``d`` (iterations
    per copy), each SM's rate moved by its draw ``z`` (standard normal) times its spread
    ``sigma`` scaled as a random walk's (x sqrt(part)); with the fractions ``carry`` owed
    from the last copy. Returns (iterations, the fractions left to carry)."""
    root = np.sqrt(part)
    adv = np.empty(d.shape, np.int64)
    frac = np.empty(d.shape)
    for s in range(d.shape[0]):
        dz = z[s] * (sigma[s] * root)
        for c in range(d.shape[1]):
            v = 0.0
            if d[s, c] > 0:
                x = d[s, c] * part + dz
                v = x if x >= 0.0 else 0.0
            # (a slot the interval's last copy moved on ahead of its rate carries a debt: < 0)
            f = np.floor(carry[s, c] + v)
            adv[s, c] = np.int64(f if f >= 0.0 else 0.0)
            frac[s, c] = carry[s, c] + v - adv[s, c]
    return adv, frac


def _mean_std(x: np.ndarray) -> tuple[float, float]:
    """x.mean() and x.std(ddof=1), bit for bit as numpy computes them (the same reductions,
    in the same order), at a fraction of their dispatch cost: _steady calls them per group
    of SMs on every detailed window (tests check the equality)."""
    n = x.shape[0]
    mean = np.add.reduce(x) / n
    dev = x - mean
    return float(mean), float(np.sqrt(np.add.reduce(dev * dev) / (n - 1)))


@njit(cache=True)
def _plan(adv, off, tail, mv, ci, wi, pi, nwpc, turn, n_left, mode, val, base, pre_ph, total):
    """Whether a copy advancing CTA slot [s, c] by adv[s, c] loop iterations can be made:
    (-1, 0, 0) if not, else (the number of CTAs that turn over in it, the warp instructions
    it executes, the warp-instruction issue slots it leaves idle). Per slot, mode[s, c] says
    what the copy does: 0 nothing, 1 each warp w mv[s, w] iterations on in its loop, 2 the
    CTA completes and the grid's next takes the slot at iteration val[s, c] of the first
    loop, its warps at their places where base[s, c] >= 0 (_kept).

    Each warp moves its CTA's adv[s, c] iterations plus its own off[s, w] (zero but where
    warps drift apart within their CTA: ``tail``). CTAs turn over only where ``turn`` (a
    program whose first loop holds nearly all the work). A warp that has issued its last
    instruction (retired, or its last memory instruction in the LSU) or is past the first
    loop is at its end; a CTA with such a warp, or one that would pass its loop's end, turns
    over. The slot then does the work of its warps' iterations: the old CTA's rest first, the
    new CTA's whole iterations with what is left (none where the old CTA's laggards take it
    all).

    With ``tail`` the slot is the old CTA's until its slowest warp ends, as in the cycle
    engine, where a CTA's finished warps wait for its last one: the CTA turns over only when
    each warp's iterations reach its end, and the old CTA then holds the slot for the
    copy's fraction tau its slowest warp takes; until then the warps that would pass their
    loop's end wait in its last iteration. The issue slots that finished and waiting warps
    leave idle count in the copy's time, not its work (SampledSimulation._copy)."""
    n_sm, slots = adv.shape
    ph_iters = pi[K.PI_PH_ITERS]
    len0 = pi[K.PI_PH_LEN, 0]
    any_adv = False
    n_turn = 0
    work = 0
    idle = 0.0
    for s in range(n_sm):
        for c in range(slots):
            mode[s, c] = 0
            if ci[s, c, K.CI_ST] == 0 or adv[s, c] == 0:
                continue
            if ci[s, c, K.CI_PAUSED] != 0:     # Equalizer's pause: detail
                return -1, 0, 0.0
            any_adv = True
            past = False
            ends = True         # every warp reaches its end in this copy
            tau = 0.0           # the part of the copy the slowest warp takes to reach it
            cap = 0             # the slot's issue slots in this copy (warp instructions)
            for w in range(c * nwpc, (c + 1) * nwpc):
                ws = wi[s, w, K.WI_ST]
                ph = wi[s, w, K.WI_PH]
                cap_w = (adv[s, c] + off[s, w]) * len0
                cap += cap_w
                # (a paused warp's CTA is paused: refused above)
                done = ws == K.W_RETIRED or ws == K.W_LSU or (turn and ph > 0)
                if not done and ws != K.W_ACTIVE and ws != K.W_BARRIER:
                    return -1, 0, 0.0
                # each warp against its own phase's loop: the warps of a CTA may be in
                # different phases, and a warp moved past its loop's end would never leave it
                if done or wi[s, w, K.WI_IT] + adv[s, c] + off[s, w] >= ph_iters[ph]:
                    past = True
                    rest_w = total - _flat(wi, s, w, pi, pre_ph, total)
                    if rest_w > cap_w:
                        ends = False
                    elif cap_w > 0:
                        tau = max(tau, rest_w / cap_w)
                else:
                    ends = False
            if not past:
                mode[s, c] = 1
                for w in range(c * nwpc, (c + 1) * nwpc):
                    mv[s, w] = adv[s, c] + off[s, w]
                    work += mv[s, w] * pi[K.PI_PH_LEN, wi[s, w, K.WI_PH]]
                continue
            if not turn:
                return -1, 0, 0.0
            if tail and not ends:
                # the laggards do not reach the CTA's end in this copy: the others wait
                mode[s, c] = 1
                for w in range(c * nwpc, (c + 1) * nwpc):
                    ws = wi[s, w, K.WI_ST]
                    if ws == K.W_RETIRED or ws == K.W_LSU or wi[s, w, K.WI_PH] > 0:
                        mv[s, w] = 0
                    else:
                        mv[s, w] = min(adv[s, c] + off[s, w], ph_iters[0] - 1 - wi[s, w, K.WI_IT])
                    work += mv[s, w] * len0
                    idle += (adv[s, c] + off[s, w] - mv[s, w]) * len0
                continue
            iters = ph_iters[0]
            # the old CTA's rest (its loop's and its epilogue's), and where the warps' places
            # pass on, their offsets into the new CTA's program
            rest = 0
            ahead = 0
            places = 0
            b = _kept(wi, s, c, nwpc)
            for w in range(c * nwpc, (c + 1) * nwpc):
                rest += total - _flat(wi, s, w, pi, pre_ph, total)
                if b >= 0 and tail:
                    # (the new CTA's warps start together, each at its old warp's place in
                    # the loop body: the instructions before it are the new CTA's)
                    places += wi[s, w, K.WI_PC] - pi[K.PI_PH_START, 0]
                elif b >= 0:
                    rest += _lead(wi, s, w, pi, b)
                    ahead = max(ahead, wi[s, w, K.WI_IT] - b)
            per_it = nwpc * len0
            if tail:
                # the old CTA holds the slot for tau of the copy; what its finished warps
                # leave idle meanwhile is not work
                left = max(0, int(((1.0 - tau) * cap - places) // per_it))
                idle += max(tau * cap - rest, 0.0)
            else:
                left = max(0, (adv[s, c] * per_it - rest) // per_it)
            rest += places
            if left + ahead >= iters - 1:
                return -1, 0, 0.0
            mode[s, c] = 2
            val[s, c] = left
            base[s, c] = b
            work += rest + left * per_it
            n_turn += 1
    if not any_adv or n_turn > n_left:
        return -1, 0, 0.0
    return n_turn, work, idle


@njit(cache=True)
def _apply_copy(D, mv, tail, mode, val, base, si, wi, done, ci, mi, qrel, wt, wq, wm, chn, cyc_ns,
                gi, stamps, nwpc, start):
    """Move the machine D cycles forward and every CTA as planned (_plan's modes): its warps'
    iterations, or a turnover (a launch as sim._kernels leaves it, then the SM's warp sets
    reset as after a clock switch)."""
    n_sm, slots = mode.shape
    for s in range(n_sm):
        for k in range(stamps.shape[0]):
            if si[s, stamps[k]] < _BIG:
                si[s, stamps[k]] += D
        if 0 < si[s, K.SI_W_MIN] < _BIG:
            si[s, K.SI_W_MIN] += D
        for w in range(wi.shape[1]):
            if wi[s, w, K.WI_ST] == K.W_EMPTY:
                continue
            wi[s, w, K.WI_LD] += D
            if wi[s, w, K.WI_WAIT] > 0:
                wi[s, w, K.WI_WAIT] += D
            for i in range(done.shape[2]):
                done[s, w, i] += D
            if wt[s, w] < _BIG:
                wt[s, w] += D
        for c in range(slots):
            if ci[s, c, K.CI_ST] != 0:
                ci[s, c, K.CI_DONE] += D
        for k in range(mi.shape[1]):
            if mi[s, k, K.MI_REL] >= 0:
                mi[s, k, K.MI_REL] += D
                mi[s, k, K.MI_MISS] += D
        for k in range(qrel.shape[1]):
            if qrel[s, k] >= 0:
                qrel[s, k] += D
    for ch in range(chn.shape[1]):
        chn[K.CH_FREE, ch] += D * cyc_ns
    gi[K.GS_T] += D
    t = gi[K.GS_T]
    for s in range(n_sm):
        turned = False
        for c in range(slots):
            m = mode[s, c]
            if m == 0:
                continue
            if m == 1:
                for w in range(c * nwpc, (c + 1) * nwpc):
                    wi[s, w, K.WI_IT] += mv[s, w]
                continue
            ci[s, c, K.CI_ST] = 1
            ci[s, c, K.CI_LEFT] = nwpc
            ci[s, c, K.CI_DONE] = t
            ci[s, c, K.CI_PAUSED] = 0
            ci[s, c, K.CI_SEQ] = gi[K.GS_CTA_NEXT]
            b = base[s, c]
            for w in range(c * nwpc, (c + 1) * nwpc):
                # A warp in the loop passes its place, scoreboard and loads in flight to the
                # next CTA's warp, which goes on at val iterations: the SM's pipeline stays as
                # the template's steady state has it. Started afresh instead, every slot's
                # warps of a lockstep kernel began together with nothing in flight, as at the
                # kernel's launch: twoslope_lm's next detailed window ran 25% slow (0.132
                # cycles per instruction against 0.105) and its interval 3-5% long.
                if b >= 0 and tail:
                    wi[s, w, K.WI_IT] = val[s, c]
                    continue
                if b >= 0:
                    wi[s, w, K.WI_IT] += val[s, c] - b
                    continue
                wi[s, w, K.WI_IT] = val[s, c]
                turned = True
                if si[s, K.SI_LSU_W] == w:
                    # the old warp's last instruction: the copied time already holds the
                    # template's memory traffic, so the LSU is left free
                    si[s, K.SI_LSU_W] = -1
                if wi[s, w, K.WI_ST] == K.W_RETIRED:
                    si[s, K.SI_LIVE] += 1       # _retire counted it out
                wi[s, w, K.WI_ST] = K.W_ACTIVE
                wi[s, w, K.WI_PC] = start
                wi[s, w, K.WI_PH] = 0
                wi[s, w, K.WI_LD] = t
                wi[s, w, K.WI_WAIT] = 0
                for i in range(done.shape[2]):
                    done[s, w, i] = 0
            if b < 0:
                ci[s, c, K.CI_BAR] = 0
            gi[K.GS_CTA_NEXT] += 1
            gi[K.GS_CTAS_DONE] += 1
        if turned:
            for j in range(wm.shape[2]):
                wm[s, K.WM_WAIT, j] = 0
                wm[s, K.WM_BLK, j] = 0
                wm[s, K.WM_ACT, j] = 0
                for k in range(wq.shape[1]):
                    wq[s, k, j] = 0
            for w in range(wi.shape[1]):
                wt[s, w] = _BIG
                wi[s, w, K.WI_WAIT] = 0
                if wi[s, w, K.WI_ST] == K.W_ACTIVE:
                    wm[s, K.WM_ACT, w >> 5] |= 1 << (w & 31)
            si[s, K.SI_WQ_OCC] = 0
            si[s, K.SI_NW] = 0
            si[s, K.SI_NW_MEM] = 0
            si[s, K.SI_W_MIN] = _BIG
            si[s, K.SI_N_BLK] = 0
            if si[s, K.SI_NEXT] > t:
                si[s, K.SI_NEXT] = t


class SampledSimulation(Simulation):
    """A Simulation whose steady stretches are copied (see the module docstring); same
    arguments and results as :class:`sim.model.Simulation`, but not ``epoch_cycles``.
    n_copies: copies made so far (each up to ``gap`` windows); copied_instructions: the warp
    instructions they executed; n_turnovers: CTAs turned over inside copies."""

    engine = "sampled"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.epoch_cycles is not None:
            raise ConfigError("the sampled engine cuts intervals by work only: epoch mode "
                              "(epoch_cycles) needs the reference engine")
        self.template: dict | None = None
        self.n_steady = 0
        self.open_win: tuple | None = None
        self.cycle_carry = 0.0
        self.n_copies = 0
        self.tail: dict | None = None       # the last copy's work, counters and cycles
        self.carry_in: tuple | None = None   # counters and ns owed to the next interval
        self.copied_instructions = 0
        self.n_turnovers = 0
        self.since = 0
        self.gap = 1
        self._mode = np.zeros(self.ci.shape[:2], np.int64)
        self._val = np.zeros(self.ci.shape[:2], np.int64)
        self._base = np.zeros(self.ci.shape[:2], np.int64)
        self.sm_sigma = np.zeros(self.ci.shape[0])
        # every run executes exactly this many warp instructions; more is a copy gone wrong,
        # refused rather than simulated for ever
        prog = self.kernel.program
        per_phase = [int(n) * int(length) for n, length in zip(prog["ph_iters"], prog["ph_len"],
                                                                strict=True)]
        self.program_length = sum(per_phase)        # warp instructions per warp
        self.total_instructions = int(self.kernel.ctas) * int(self.kernel.warps_per_cta) \
            * self.program_length
        self.pre_ph = np.cumsum([0] + per_phase).astype(np.int64)
        # CTAs turn over inside copies where the first loop holds all but an eighth or less of
        # a warp's instructions, the rest an epilogue (one-phase programs; compute_fma's 24
        # iterations and one store): the epilogue is skipped in time (its instructions
        # counted) and the copies' rates are the loop's. A prologue is not skipped:
        # compute_tiled's (two DRAM loads and a barrier before 60 shared-memory steps) went
        # from within 0.5% to +3.1..+7.5% (gtx480 700 MHz, gtx980 1000 MHz, seeds 0-2) when
        # copies started new CTAs in its loop. Other programs copy only inside each phase's
        # loop, and detail where a CTA ends.
        first = per_phase[0]
        self.turn = bool(8 * (self.program_length - first) <= first
                         and int(prog["ph_iters"][0]) >= 4)
        # the copies' own random stream, seeded by the run's seed (a run is reproducible), apart
        # from the per-SM streams of the cycle engine
        self.copy_rng = np.random.default_rng([self.seed, 42])
        self.carry = np.zeros(self.ci.shape[:2])
        # Warps drift apart within a CTA where no barrier holds them together: where the
        # template's SMs are not saturated, its copies move each warp on its own and time a
        # CTA's end by its slowest warp (_set_drift, _plan; docs/simulator.md "Engines").
        self.drifts = not bool(np.any(np.asarray(prog["op"]) == K.OP_BAR))
        self.drift_on = False
        self.warp_sigma = 0.0
        self.wcarry = np.zeros(self.wi.shape[:2])
        self._no_off = np.zeros(self.wi.shape[:2], np.int64)
        self._off, self._e = self._no_off, None
        self._mv = np.zeros(self.wi.shape[:2], np.int64)
        self._idle = 0.0
        # the critical paths run on across an interval's calls of the cycle engine
        self.gi[K.GS_KEEP_PATHS] = 1
        self.paths_read = np.zeros(3)

    # a changed setting or CTA limit ends the steady state the template describes
    def apply(self, setting: Setting) -> None:
        old = (self.setting, self.sm_limits)
        super().apply(setting)
        if (self.setting, self.sm_limits) != old:
            self._forget()

    def apply_sm_limits(self, limits) -> None:
        old = self.sm_limits
        super().apply_sm_limits(limits)
        if self.sm_limits != old:
            self._forget()

    def _forget(self) -> None:
        self.template = None
        self.n_steady = 0
        self.open_win = None

    def _row(self, cycles: int) -> dict:
        row = super()._row(cycles)
        # copies scale warp-cycles with the copied time, so a full machine stays full up to
        # float rounding, which must not read as more than full
        row["occupancy"] = min(row["occupancy"], 1.0)
        row["active_warps_avg"] = min(row["active_warps_avg"], self.gpu.max_warps_per_sm)
        return row

    def _snap(self):
        st, ph, length, pos, cst, seq = _snap_arrays(self.wi, self.ci, self.pi)
        return (st, ph, length, pos, cst, seq, int(self.gi[K.GS_CTA_NEXT]),
                int(self.gi[K.GS_CTAS_DONE]))

    def _steady(self, before, after):
        """Loop iterations per CTA slot over a steady window (the mean of the SMs holding as
        many CTAs; sets each SM's deviation spread, sm_sigma), None if the window is not
        steady, "short" if a CTA has not run a whole iteration."""
        st0, ph0, _, pos0, cst0, seq0, nx0, dn0 = before
        st1, ph1, length, pos1, cst1, seq1, nx1, dn1 = after
        if nx0 != nx1 or dn0 != dn1 or self.pending_switch_ns != 0.0:
            return None
        if not _one_stretch(st0, ph0, cst0, seq0, st1, ph1, cst1, seq1):
            return None
        nwpc = int(self.gi[K.K_WPC])
        n_sm, slots = self.ci.shape[0], self.ci.shape[1]
        with np.errstate(invalid="ignore", divide="ignore"):
            per_warp = ((pos1 - pos0) / length).reshape(n_sm, slots, nwpc)
        run = cst1 == 1
        per_cta = np.add.reduce(per_warp, axis=2) / nwpc     # (per_warp.mean(axis=2))
        if np.any(per_cta[run] < 1):
            return "short"
        # a new template's copies start with no fraction of an iteration owed: the detailed
        # windows between them advanced the CTAs as they run
        self.carry = np.zeros((n_sm, slots))
        # The copies' rate model (docs/simulator.md "Engines"): the CTAs of one SM advance
        # together (they share its issue slots); SMs holding as many CTAs share one mean rate,
        # and each copy adds to each SM's rate a deviation drawn with the spread of those SMs'
        # rates in the template, so the SMs' positions drift apart as a random walk. Traced
        # on unsat_small_grid (gtx480, 700 MHz): the cycle engine's per-SM spread grows from
        # 1.8 to 11.8 iterations over 20 intervals; each SM's own template rate extrapolated
        # made it grow linearly, to 146, and the last wave twice as long (+7.4%).
        count = run.sum(axis=1)
        sm_rate = np.where(run, per_cta, 0.0).sum(axis=1) / np.maximum(count, 1)
        d = np.zeros((n_sm, slots))
        self.sm_sigma = np.zeros(n_sm)
        for n in set(count.tolist()) - {0}:
            group = count == n
            rates = sm_rate[group]
            mean, sigma = _mean_std(rates) if len(rates) > 1 else (float(rates[0]), 0.0)
            self.sm_sigma[group] = sigma
            d[group] = np.where(run[group], mean, 0.0)
        return d

    def _plan(self, d, part, reach: int | None = None, least: int = 0):
        """The copy's plan: (CTAs turned over or -1 if it cannot be made, warp instructions it
        executes, iterations per slot, fractions carried, the part of a copy it is). Where
        the whole ``part`` cannot be copied (it would end more CTAs than the grid has left to
        take their slots, or end a CTA of a program that copies without turnover), the copy is
        shortened to end before them, if it then still executes ``least`` instructions: the
        window in which a CTA ends is the one simulated in detail. Refused instead, every
        window until the CTAs' ends was: mem_stream's drain (gtx480, 700 MHz) spent 12 of its
        40 detailed windows waiting for its CTAs to end. With ``reach`` (the interval's last
        copy), every running slot moves one iteration more where the rates' whole iterations
        would leave more than ``reach`` instructions before the interval's end, which would
        then be simulated in detail: in a kernel whose CTAs run in lockstep one iteration of
        every slot is 29,520 instructions (compute_fma), more than two windows. The copy then
        runs past the end, and that part is the next interval's (_split_tail)."""
        z = self.copy_rng.standard_normal(d.shape[0])
        zw = (self.copy_rng.standard_normal(self.wi.shape[:2]) if self.warp_sigma > 0
              else None)
        adv, carry = _iterations(d, part, z, self.sm_sigma, self.carry)
        self._offsets(adv, part, zw)
        n_turn, work = self._plan_adv(adv)
        if reach is not None and (n_turn < 0 or work < reach):
            up = adv + (d > 0)
            n_up, work_up = self._plan_adv(up)
            n_left = int(self.gi[K.K_N_CTAS] - self.gi[K.GS_CTA_NEXT])
            # not where the extra iteration turns CTAs over in the grid's last waves: it
            # bunched their ends (store_scatter's drain, -5.6% at gtx480 700 MHz)
            if n_up >= 0 and (n_up <= max(n_turn, 0)
                              or n_left - n_up >= int(np.count_nonzero(d))):
                return n_up, work_up, up, carry - (d > 0), part
            n_turn, work = self._plan_adv(adv)  # (the modes are the plan's last)
        if n_turn >= 0:
            return n_turn, work, adv, carry, part
        # the longest shorter copy that can be made, by bisection on its part (the same draws
        # z: a shorter copy is the start of the refused one)
        lo, hi, best = 0.0, part, None
        for _ in range(_SHORTEN_STEPS):
            mid = 0.5 * (lo + hi)
            adv, carry = _iterations(d, mid, z, self.sm_sigma, self.carry)
            self._offsets(adv, mid, zw)
            n_turn, work = self._plan_adv(adv)
            if n_turn >= 0 and work > 0:
                lo, best = mid, (n_turn, work, adv, carry, mid)
            else:
                hi = mid
        if best is None or best[1] < least:
            return -1, 0, adv, carry, 0.0
        self._offsets(best[2], best[4], zw)     # (the offsets and modes are the plan's last)
        self._plan_adv(best[2])
        return best

    def _plan_adv(self, adv) -> tuple[int, int]:
        n_left = int(self.gi[K.K_N_CTAS] - self.gi[K.GS_CTA_NEXT])
        n_turn, work, self._idle = _plan(adv, self._off, self.drift_on, self._mv, self.ci, self.wi,
                                         self.pi, int(self.gi[K.K_WPC]), self.turn, n_left,
                                         self._mode, self._val, self._base, self.pre_ph,
                                         self.program_length)
        return int(n_turn), int(work)

    def _offsets(self, adv, part, zw) -> None:
        """Each warp's own drift within its CTA over ``part`` of one copy (``drift_on``): whole
        iterations more or fewer than its CTA's ``adv`` (self._off), as a random walk with
        the template's spread (warp_sigma x sqrt(part), ``zw`` standard normal draws centred on
        each CTA, so its warps' work is its own), and the drift before rounding (self._e).
        None without ``zw``."""
        if zw is None:
            self._off, self._e = self._no_off, None
            return
        n_sm, slots = adv.shape
        nwpc = int(self.gi[K.K_WPC])
        n = slots * nwpc
        zc = zw[:, :n].reshape(n_sm, slots, nwpc)
        zc = (zc - zc.mean(axis=2, keepdims=True)).reshape(n_sm, n)
        e = self.wcarry.copy()
        e[:, :n] += zc * (self.warp_sigma * np.sqrt(part))
        off = np.zeros(zw.shape, np.int64)
        # (a warp moves back by no more than its CTA moves on)
        off[:, :n] = np.maximum(np.floor(e[:, :n]), -np.repeat(adv, nwpc, axis=1))
        self._off, self._e = off, e

    def _set_drift(self, tp: dict, before, after) -> None:
        """Whether the template's copies move each warp on its own and time a CTA's end by
        its slowest warp (``drift_on``, _plan), and the warps' spread per copy (warp_sigma, in
        iterations). In the cycle engine the warps of a CTA drift apart as a random walk
        (compute_l1 on gtx980: 1.4 iterations per window, lag-1 correlation +0.05; its CTAs'
        spread grows from 11 to 32 iterations over the first wave), and a CTA's finished warps
        wait for its last: the slot's issue slots idle meanwhile. Copies that moved a CTA's
        warps together ended it early (compute_l1 -6.4%, unsat_dep_chain -3.5%). The idle
        slots are lost only where the SM is not saturated: where its busiest bottleneck
        (_busiest) is fully used, the other warps take them up (mem_latency's MSHRs, store_
        scatter's store queue), and timing the tail there made those kernels slow (+5%). A
        program with a barrier keeps its warps together.

        In a program that copies without turnover (several phases) the warps drift apart
        even where the template is saturated, without the tail (``warp_sigma`` set,
        ``drift_on`` not): in the cycle engine phase_comp_mem_comp's warps spread within
        their CTA from 1.1 to 5.5 iterations (standard deviation) over its memory-bound
        phase (gtx480, 700 MHz, seed 0), and that spread decides how long the next phase's
        start is smeared (three intervals with loads outstanding; with the warps moved
        together, part of one: the run's load-outstanding share 0.073 low). Turnover
        programs under saturation keep a CTA's warps together: their drift put mem_latency
        +3.5% and cache_stencil -4.7% out (the turnover's timing of a CTA's end assumes it)."""
        self.drift_on, self.warp_sigma = False, 0.0
        saturated = self._busiest(tp) >= 1.0
        if not self.drifts or (saturated and self.turn):
            return
        # (the CTAs' ends are timed by their slowest warps even where the copies do not
        # move warps apart: the detailed windows leave them apart; store_burst on gtx980 at
        # 500 MHz: -6.5% when the first warp to reach its end ended its CTA, -0.3% by the last)
        self.drift_on = not saturated
        self.wcarry[:] = 0.0
        nwpc = int(self.gi[K.K_WPC])
        n_sm, slots = self.ci.shape[0], self.ci.shape[1]
        st1, length, pos0, pos1 = after[0], after[2], before[3], after[3]
        live = ((st1 == K.W_ACTIVE) | (st1 == K.W_BARRIER)).reshape(n_sm, slots, nwpc)
        whole = live.all(axis=2) & (after[4] == 1)
        if not whole.any():
            return
        length = length.reshape(n_sm, slots, nwpc)[whole]
        p0 = pos0.reshape(n_sm, slots, nwpc)[whole] / length
        p1 = pos1.reshape(n_sm, slots, nwpc)[whole] / length
        # the growth of the warps' spread over the window (their positions' variance within
        # each CTA), not each warp's own noise: below 1/4 iteration^2, the most that
        # positions within one iteration vary, it is not told from where the window's ends
        # fall in the loop body (compute_ilp's warps stay in lockstep)
        grow = p1.var(axis=1).mean() - p0.var(axis=1).mean()
        if grow < 0.25:
            return
        # a CTA's variance grows by sigma^2 (n-1)/n per window for n warps each drifting with
        # sigma around their mean; a merged template holds insts / win windows
        self.warp_sigma = float(np.sqrt(grow * nwpc / max(nwpc - 1, 1)
                                        * tp["insts"] / tp["win"]))

    def _busiest(self, tp: dict) -> float:
        """The template's most used bottleneck, as a fraction of its time: the SMs' issue
        slots, the busiest DRAM channel, the busiest SM's MSHRs and store queue (their
        occupancy by Little's law, which reads 1.00-1.06 when full)."""
        ns = tp["cycles"] * float(self.fp[K.R_CYC_NS])
        issue = tp["insts"] / (tp["cycles"] * self.ci.shape[0] * float(self.fp[K.G_ISSUE_WIDTH]))
        return max(issue, float(np.max(tp["busy"])) / ns,
                   float(tp["acc"][K.A_MSHR_MIN_NS]) / ns, float(tp["acc"][K.A_SQ_MIN_NS]) / ns)

    def step(self) -> dict | None:
        if self.finished:
            return None
        if self.open_win is not None:
            # the open window's counters so far are the last interval's: keep them as an offset
            ow = self.open_win
            self.open_win = (ow[0], ow[1] - self.acc, ow[2] - self.se,
                             ow[3] - self.chn[K.CH_BUSY], ow[4], ow[5])
        t0 = self._start_interval()
        boundary = (self.idx + 1) * self.interval_instructions
        win = self.interval_instructions // N_WINDOWS
        if self.gi[K.GS_INSTS] > self.total_instructions:
            raise SimulationError(f"{self.kernel.kernel_id} on {self.gpu.name}: the sampled "
                                  f"engine executed {int(self.gi[K.GS_INSTS]):,} warp "
                                  f"instructions of the kernel's {self.total_instructions:,}")
        while self.gi[K.GS_INSTS] < boundary and not self.finished:
            tp = self.template
            if tp is not None and self.open_win is None and self.since < self.gap:
                left = boundary - int(self.gi[K.GS_INSTS])
                # up to `gap` windows copied at once, no further than the interval's end; its
                # last few instructions in detail, outside any window, so the next interval
                # starts with the template in hand
                if left > win // 4:
                    # (in windows as the last one measured: a merged template holds more)
                    windows = min(left / tp["win"], self.gap - self.since)
                    last = left / tp["win"] <= self.gap - self.since
                    part = windows * tp["win"] / tp["insts"]
                    done = self._copy(tp, part, left - win // 4 if last else None)
                    if done > 0:
                        self.since += windows * done / part
                        continue
                if left <= win // 4:
                    self._advance_to(boundary, K.BIG)
                    if self.finished or not self._same_state(tp):
                        self._forget()
                    continue
            self._detail(boundary, win)
        return self._finish_interval(t0)

    def _start_interval(self) -> float:
        t0 = super()._start_interval()
        if self.carry_in is None:
            return t0
        # the last interval's copy ran past its end: that part is this interval's (its time in
        # this interval's clock cycles, should the setting have changed)
        acc, se, busy, ns = self.carry_in
        self.carry_in = None
        self.acc += acc
        self.se += se
        self.chn[K.CH_BUSY] += busy
        return t0 - ns * self.setting.core_mhz / 1000.0

    def _split_tail(self, boundary: int) -> float:
        """Where the interval's last copy ran past its end (by up to one loop iteration of
        every CTA slot: the copies move whole iterations), give that part of the copy to the
        next interval, pro rata of its instructions, so every interval holds exactly its
        instructions' counters and time as the cycle engine's do (a copy is uniform in time by
        construction). Without it an interval's instruction count, hence its time, jittered
        (coefficient of variation 9.6% on compute_fma at 300 MHz against 0.01%), which the
        guarded controllers read as wrong predictions. Returns the cycles given."""
        excess = int(self.gi[K.GS_INSTS]) - boundary
        tl = self.tail
        if tl is None or excess <= 0 or self.finished:
            return 0.0
        f = min(excess / tl["insts"], 1.0)
        acc = tl["acc"] * f
        acc[K.A_INSTS] = min(excess, tl["insts"])
        se, busy, cycles = tl["se"] * f, tl["busy"] * f, tl["cycles"] * f
        self.acc -= acc
        self.se -= se
        self.chn[K.CH_BUSY] -= busy
        self.carry_in = (acc, se, busy, cycles * 1000.0 / self.setting.core_mhz)
        return cycles

    def _finish_interval(self, t0: float) -> dict | None:
        row = super()._finish_interval(t0 + self._split_tail(
            (self.idx + 1) * self.interval_instructions))
        self._restart_paths()
        return row

    def _paths(self) -> np.ndarray:
        """The SMs' running critical paths as sim._kernels._end_interval adds them: CRIT's
        and CRISP's (cycles), CRISP's by issue slots (in cycles)."""
        out = self.si[:, _SI_PATHS].sum(axis=0).astype(float)   # (integer sums: exact)
        out[2] /= self.fp[K.G_ISSUE_WIDTH]
        return out

    def _restart_paths(self) -> None:
        """At an interval's end, what sim._kernels._end_interval does in the cycle engine:
        the paths restart at zero, a miss still outstanding counts as issued now with a zero
        timestamp."""
        K.restart_paths(int(self.gi[K.GS_T]), self.si.shape[0], self.si, self.mi)
        self.paths_read = np.zeros(3)

    def _advance_to(self, boundary: int, cycle_end: int) -> None:
        self.tail = None        # the machine ran on in detail: no copy's tail to split
        # The MSHR and store-queue bounds are, per interval, the busiest SM's entry-time
        # summed over the interval (Little's law; sim._kernels._end_interval), and each call
        # of the cycle engine closes its own: an interval's bound here is the sum over its
        # detailed stretches and copies of each one's busiest SM (a little above the busiest
        # SM's sum where the SMs take turns). Kept as the last call's alone, the bound held
        # only the detailed share of the interval (phase_cache_compute's gather phase at
        # 300 MHz: 0.8 us against the cycle engine's 21.8 us), and CRISP_gpudb, which bounds
        # its predicted time with it, read a memory-bound phase as compute-bound.
        before = self.acc[_BOUNDS].copy()
        self.acc[_BOUNDS] = 0.0
        super()._advance_to(boundary, cycle_end)
        self.acc[_BOUNDS] += before
        # The critical paths run on across the interval's calls (GS_KEEP_PATHS): each call
        # adds every SM's path so far, so only its growth since the last call is kept. A copy
        # adds the template's growth to the counters and leaves the paths where they were
        # (the misses in flight keep their timestamps, as their latencies are kept). Restarted
        # at every call, the paths lost what crosses a call's end: CRIT's share of
        # compute_fma's cycles on gtx980 at 1000 MHz was 0.515 against 0.671, as the cycle
        # engine itself gives with intervals as short as a window (0.529).
        self.acc[_PATHS] -= self.paths_read
        self.paths_read = self._paths()

    def _detail(self, boundary: int, win: int) -> None:
        """Simulate one window in detail; keep it as the template when it is steady."""
        self.since = 0
        end = min(int(self.gi[K.GS_INSTS]) + win, boundary)
        if boundary - end < win // 2:
            end = boundary
        if self.open_win is None:
            self.open_win = (self._snap(), self.acc.copy(), self.se.copy(),
                             self.chn[K.CH_BUSY].copy(), int(self.gi[K.GS_INSTS]),
                             int(self.gi[K.GS_T]))
        before, acc0, se0, busy0, insts0, t0 = self.open_win
        self._advance_to(end, K.BIG)
        if self.finished:
            self._forget()
            return
        after = self._snap()
        if int(self.gi[K.GS_INSTS]) - insts0 < win // 2 and end == boundary:
            # a short remainder: the window goes on into the next interval
            if before[6:] != after[6:]:
                self._forget()
            return
        d = self._steady(before, after)
        if isinstance(d, str):
            return                  # not every CTA has run a whole iteration: go on
        self.open_win = None
        if d is None:
            self.n_steady = 0
            if self.template is not None and not self._same_state(self.template):
                self.template = None
            return
        self.n_steady += 1
        if self.n_steady >= WARM_WINDOWS:
            new = {"acc": self.acc - acc0, "se": self.se - se0,
                   "busy": self.chn[K.CH_BUSY] - busy0,
                   "insts": int(self.gi[K.GS_INSTS]) - insts0,
                   "cycles": int(self.gi[K.GS_T]) - t0, "d": d,
                   "win": int(self.gi[K.GS_INSTS]) - insts0,
                   "run": self.ci[:, :, K.CI_ST] != 0,    # as _same_state reads it
                   "ph": self.wi[:, :, K.WI_PH].copy()}
            old = self.template
            if old is not None and np.array_equal(old["run"], new["run"]):
                # adaptive refresh: the gap between detailed windows doubles while successive
                # templates agree on cycles per instruction, and restarts when they do not
                a = old["cycles"] / old["insts"]
                b = new["cycles"] / new["insts"]
                if abs(b / a - 1) <= GAP_TOL:
                    self.gap = min(self.gap * 2, MAX_GAP)
                    new = self._merge(old, new)
                else:
                    self.gap = 1
            else:
                self.gap = 1
            self.template = new
            self._set_drift(new, before, after)

    def _merge(self, old: dict, new: dict) -> dict:
        """The template of a steady state measured again: the new window added to the old
        template's sums, these weighted by MERGE_WEIGHT. One window is an eighth of an
        interval, and its cycles per instruction vary from window to window several times
        more than an interval's (phase_cache_compute's gather phase at 300 MHz: interval times
        within 1% in the cycle engine, wandering by 2-3% while each template was one window
        copied for up to four intervals), so the copied intervals' times now follow a mean of
        the last windows (~4). The rates per slot and the SMs' spread are the new window's,
        rescaled to the merged work (a random walk's spread grows with its square root)."""
        w = MERGE_WEIGHT
        out = dict(new)
        for key in ("acc", "se", "busy"):
            out[key] = old[key] * w + new[key]
        out["insts"] = old["insts"] * w + new["insts"]
        out["cycles"] = old["cycles"] * w + new["cycles"]
        grow = out["insts"] / new["insts"]
        out["d"] = new["d"] * grow
        self.sm_sigma = self.sm_sigma * np.sqrt(grow)
        return out

    def _same_state(self, tp: dict) -> bool:
        """Whether the machine still holds the steady state the template describes: the same
        CTA slots occupied, every live warp in the phase it was in."""
        if not np.array_equal(self.ci[:, :, K.CI_ST] != 0, tp["run"]):
            return False
        if self.turn:
            return True         # copies carry CTAs through the epilogue themselves
        st = self.wi[:, :, K.WI_ST]
        live = (st != K.W_EMPTY) & (st != K.W_RETIRED)
        return bool(np.array_equal(self.wi[:, :, K.WI_PH][live], tp["ph"][live]))

    def _copy(self, tp: dict, part: float = 1.0, reach: int | None = None) -> float:
        """Copy ``part`` of the template once (module docstring, items 3-4), at least
        ``reach`` instructions where it can, shortened where it must be (_plan, no shorter
        than a quarter window); the part copied, 0 if none could be."""
        least = int(self.interval_instructions // N_WINDOWS) // 4
        n_turn, insts, adv, carry, done = self._plan(tp["d"], part, reach, least)
        if n_turn < 0 or insts == 0:
            return 0.0
        nwpc = int(self.gi[K.K_WPC])
        self.carry = carry
        if self._e is not None:
            # each warp's drift left after its whole iterations goes on to the next copy; a
            # new CTA's warps start together
            n = self.ci.shape[1] * nwpc
            moved = np.repeat(self._mode == 1, nwpc, axis=1)
            new = np.repeat(self._mode == 2, nwpc, axis=1)
            self.wcarry[:, :n] = np.where(moved, self._e[:, :n] - self._off[:, :n],
                                          np.where(new, 0.0, self._e[:, :n]))
        f = insts / tp["insts"]
        # The shift is a whole number of timing-wheel periods; what rounding leaves out is
        # carried to the next copy (one template's copies would otherwise all round one way:
        # up to 16 cycles of a ~1,000-cycle window each, a bias of up to 1.5% at 300 MHz).
        # Issue slots that a CTA's finished warps leave idle (_plan) take time, not work.
        exact = tp["cycles"] * ((insts + self._idle) / tp["insts"]) + self.cycle_carry
        shift = int(round(exact / K.W_LONG)) * K.W_LONG
        self.cycle_carry = exact - shift
        _apply_copy(shift, self._mv, self.drift_on, self._mode, self._val, self._base, self.si,
                    self.wi, self.done, self.ci, self.mi, self.qrel, self.wt, self.wq, self.wm,
                    self.chn, float(self.fp[K.R_CYC_NS]), self.gi, _SI_STAMPS, nwpc,
                    int(self.pi[K.PI_PH_START, 0]))
        self.gi[K.GS_INSTS] += insts
        self.copied_instructions += insts
        # cycle counters (stalls, warp-cycles, busy and empty cycles) scale with the copied
        # time, event counts with the copied work
        a = tp["acc"] * (shift / tp["cycles"])
        a[_COUNTS] = tp["acc"][_COUNTS] * f
        a[K.A_INSTS] = insts
        self.acc += a
        self.se += tp["se"] * f
        self.chn[K.CH_BUSY] += tp["busy"] * f
        self.tail = {"insts": insts, "acc": a, "se": tp["se"] * f, "busy": tp["busy"] * f,
                     "cycles": shift}
        self.n_copies += 1
        self.n_turnovers += n_turn
        return done
