"""The sampled engine: the cycle engine (sim._kernels) run in detail where the machine changes,
and copied in time where it repeats itself (issue 42; docs/DESIGN.md section 7, docs/simulator.md).

Mechanism, per run (``SampledSimulation``):

1. **Windows.** An interval (``interval_instructions`` warp instructions) is made of windows of
   ``interval_instructions / N_WINDOWS`` instructions; the interval's counters are the sums of
   its windows'. A window is either simulated in detail by the cycle engine or *copied*.
2. **Template.** A detailed window is *steady* when, between its start and end, no CTA launched
   or completed, no V/F switch happened, every live warp is in the same loop phase at both ends
   (none retired, paused or waiting on its LSU), and every running CTA ran at least one whole
   loop iteration (the window stays open until it has, so it holds whole loop periods). The
   second steady window in a row becomes the template: the first after a change is a
   transient (a run's first interval of store_burst runs at 0.180 cycles per instruction, the
   steady state at 0.193).
3. **Copy.** While every CTA can advance inside its loop, the next window is a copy of the
   template: the whole machine state moves forward in time by D = template cycles x (work
   copied / template work), rounded to the timing wheel's period (W_LONG cycles): every cycle
   stamp (scoreboard, warp waits, CTA completions, MSHR and store-queue releases, SM next
   events, the warp timing wheel), the DRAM channels' free times by D x ns per cycle (the
   rounding carried to the next copy). The CTAs of an SM advance together, in whole loop
   iterations (one count per CTA keeps its warps' barriers consistent; the fraction carries
   to the next copy), at the template's mean rate of the SMs holding as many CTAs plus a
   deviation drawn per SM and copy with those SMs' spread of rates in the template: the SMs
   drift apart as a random walk, as they do in the cycle engine. The window's event counts
   are the template's scaled by the work ratio, its cycle counts by the time ratio.
4. **Turnover.** In a one-phase program a CTA that would finish during a copy completes in it,
   and its slot takes the grid's next CTA at the iteration its launch time implies, all warps
   ready (as the cycle engine's launch leaves them) and the SM's warp sets reset as after a
   clock switch. Multi-phase programs copy without turnover.

Stated approximations: CRIT's and CRISP's critical paths and the load-outstanding time restart
at each detailed window, and a copied window adds nothing to the MSHR and store-queue bounds
(``mshr_min_ns``, ``store_queue_min_ns`` are maxima, not sums). Instruction totals are exact
(every run executes the reference's instructions), and so are the per-interval instruction
counts within a window. Accuracy against the cycle engine is measured by
``gpudb bench engine``, not assumed: copied stretches run within ~0.5% of the reference's
cycles per instruction, and the error concentrates in the last wave, whose length depends on
how far apart the CTAs are when the grid runs out (docs/DESIGN.md section 7).

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

# Part of a sampled run's run_id beside SIM_VERSION: bump it when the sampling changes results.
SAMPLED_VERSION = "1"
# Windows per interval: 8 measured best (mem_stream 5.4-5.7x the reference, docs/DESIGN.md
# section 7); 4 windows leave templates of part of a turnover.
N_WINDOWS = 8
# Steady detailed windows in a row before the last one is a template (the first is a transient).
WARM_WINDOWS = 2

_BIG = K.BIG
# the accumulators that count events (sim.model's GPU-wide totals), not cycles
_COUNTS = np.array(sorted(_TOTALS.values()), np.int64)
_SI_STAMPS = np.array([K.SI_NEXT, K.SI_GAP, K.SI_LSU_MAXRET, K.SI_SFU_FREE, K.SI_MSHR_NEXT,
                       K.SI_SQ_NEXT, K.SI_LEAD_UNTIL, K.SI_CTA_EV, K.SI_WQ_T, K.SI_DP_FREE],
                      np.int64)


@njit(cache=True)
def _plan(adv, ci, wi, nwpc, ph_iters, one_phase, n_left, left_out):
    """Whether a copy advancing CTA slot [s, c] by adv[s, c] loop iterations can be made:
    -1 if not, else the number of CTAs that turn over in it (left_out[s, c] = the iterations
    the slot's next CTA runs in the copy, -1 where none turns over)."""
    n_sm, slots = adv.shape
    any_adv = False
    n_turn = 0
    for s in range(n_sm):
        for c in range(slots):
            left_out[s, c] = -1
            st = ci[s, c, K.CI_ST]
            if st == 2:                      # a paused CTA (Equalizer's limit): detail
                return -1
            if st != 1 or adv[s, c] == 0:
                continue
            any_adv = True
            mx = 0
            past = False
            for w in range(c * nwpc, (c + 1) * nwpc):
                ws = wi[s, w, K.WI_ST]
                if ws != K.W_ACTIVE and ws != K.W_BARRIER:
                    return -1
                mx = max(mx, wi[s, w, K.WI_IT])
                # each warp against its own phase's loop: the warps of a CTA may be in
                # different phases, and a warp moved past its loop's end would never leave it
                if wi[s, w, K.WI_IT] + adv[s, c] >= ph_iters[wi[s, w, K.WI_PH]]:
                    past = True
            if not past:
                continue
            if not one_phase:
                return -1
            iters = ph_iters[0]
            left = adv[s, c] - (iters - mx)
            if left >= iters - 1:
                return -1
            left_out[s, c] = left
            n_turn += 1
    if not any_adv or n_turn > n_left:
        return -1
    return n_turn


@njit(cache=True)
def _work(adv, left_out, wi, nwpc, ph_len, start, iters):
    """Warp instructions a planned copy executes."""
    n = 0
    for s in range(adv.shape[0]):
        for c in range(adv.shape[1]):
            if left_out[s, c] < 0:
                for w in range(c * nwpc, (c + 1) * nwpc):
                    n += adv[s, c] * ph_len[wi[s, w, K.WI_PH]]
            else:
                # the old CTA's remaining instructions and the new one's iterations
                for w in range(c * nwpc, (c + 1) * nwpc):
                    n += (iters - wi[s, w, K.WI_IT]) * ph_len[0] - (wi[s, w, K.WI_PC] - start)
                n += nwpc * left_out[s, c] * ph_len[0]
    return n


@njit(cache=True)
def _apply_copy(D, adv, left_out, si, wi, done, ci, mi, qrel, wt, wq, wm, chn, cyc_ns, gi,
                stamps, nwpc, start):
    """Move the machine D cycles forward and every CTA its planned iterations; turn over the
    CTAs left_out names (a launch as sim._kernels leaves it, then the SM's warp sets reset as
    after a clock switch)."""
    n_sm, slots = adv.shape
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
            if ci[s, c, K.CI_ST] != 1:
                continue
            if left_out[s, c] < 0:
                for w in range(c * nwpc, (c + 1) * nwpc):
                    wi[s, w, K.WI_IT] += adv[s, c]
                continue
            turned = True
            ci[s, c, K.CI_LEFT] = nwpc
            ci[s, c, K.CI_BAR] = 0
            ci[s, c, K.CI_DONE] = t
            ci[s, c, K.CI_PAUSED] = 0
            ci[s, c, K.CI_SEQ] = gi[K.GS_CTA_NEXT]
            for w in range(c * nwpc, (c + 1) * nwpc):
                wi[s, w, K.WI_ST] = K.W_ACTIVE
                wi[s, w, K.WI_PC] = start
                wi[s, w, K.WI_PH] = 0
                wi[s, w, K.WI_IT] = left_out[s, c]
                wi[s, w, K.WI_LD] = t
                wi[s, w, K.WI_WAIT] = 0
                for i in range(done.shape[2]):
                    done[s, w, i] = 0
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
    n_copies: windows copied so far; n_turnovers: CTAs turned over inside copies."""

    engine = "sampled"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.epoch_cycles is not None:
            raise ConfigError("the sampled engine cuts intervals by work only: epoch mode "
                              "(epoch_cycles) needs the reference engine")
        self.template: dict | None = None
        self.carry = np.zeros(self.ci.shape[:2])
        self.n_steady = 0
        self.open_win: tuple | None = None
        self.cycle_carry = 0.0
        self.n_copies = 0
        self.n_turnovers = 0
        self._left = np.empty(self.ci.shape[:2], np.int64)
        self.sm_sigma = np.zeros(self.ci.shape[0])
        # every run executes exactly this many warp instructions; more is a copy gone wrong,
        # refused rather than simulated for ever
        prog = self.kernel.program
        self.total_instructions = int(self.kernel.ctas) * int(self.kernel.warps_per_cta) * int(
            sum(int(n) * int(length) for n, length in zip(prog["ph_iters"], prog["ph_len"],
                                                          strict=True)))
        # the copies' own random stream, seeded by the run's seed (a run is reproducible), apart
        # from the per-SM streams of the cycle engine
        self.copy_rng = np.random.default_rng([self.seed, 42])

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
        wi, ci = self.wi, self.ci
        length = self.pi[K.PI_PH_LEN][np.minimum(wi[:, :, K.WI_PH], self.pi.shape[1] - 1)]
        pos = wi[:, :, K.WI_IT] * length + wi[:, :, K.WI_PC]
        return (wi[:, :, K.WI_ST].copy(), wi[:, :, K.WI_PH].copy(), pos,
                ci[:, :, K.CI_ST].copy(), ci[:, :, K.CI_SEQ].copy(),
                int(self.gi[K.GS_CTA_NEXT]), int(self.gi[K.GS_CTAS_DONE]))

    def _steady(self, before, after):
        """Loop iterations per CTA slot over a steady window (the mean of the SMs holding as
        many CTAs; sets each SM's deviation spread, sm_sigma), None if the window is not
        steady, "short" if a CTA has not run a whole iteration."""
        st0, ph0, pos0, cst0, seq0, nx0, dn0 = before
        st1, ph1, pos1, cst1, seq1, nx1, dn1 = after
        if nx0 != nx1 or dn0 != dn1 or self.pending_switch_ns != 0.0:
            return None
        if not (np.array_equal(cst0, cst1) and np.array_equal(seq0, seq1)):
            return None
        live = st1 != K.W_EMPTY
        if not np.array_equal(live, st0 != K.W_EMPTY):
            return None
        if np.any(np.isin(st1[live], (K.W_RETIRED, K.W_LSU, K.W_PAUSED))):
            return None
        if not np.array_equal(ph0[live], ph1[live]):
            return None
        nwpc = int(self.gi[K.K_WPC])
        n_sm, slots = self.ci.shape[0], self.ci.shape[1]
        length = self.pi[K.PI_PH_LEN][np.minimum(ph1, self.pi.shape[1] - 1)]
        with np.errstate(invalid="ignore", divide="ignore"):
            per_warp = ((pos1 - pos0) / length).reshape(n_sm, slots, nwpc)
        run = cst1 == 1
        if not np.any(run):
            return None
        per_cta = per_warp.mean(axis=2)
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
        sm_rate = np.array([per_cta[s][run[s]].mean() if run[s].any() else 0.0
                            for s in range(n_sm)])
        count = run.sum(axis=1)
        d = np.zeros((n_sm, slots))
        self.sm_sigma = np.zeros(n_sm)
        for n in set(count.tolist()) - {0}:
            group = np.nonzero(count == n)[0]
            rates = sm_rate[group]
            sigma = float(rates.std(ddof=1)) if len(group) > 1 else 0.0
            for s in group:
                d[s][run[s]] = rates.mean()
                self.sm_sigma[s] = sigma
        return d

    def _advance(self, d):
        """Whole loop iterations per CTA slot for one copy at rates ``d`` (each SM's drawn
        deviation added), and the fractions left to carry."""
        z = self.copy_rng.standard_normal(d.shape[0]) * self.sm_sigma
        c = self.carry + np.where(d > 0, np.maximum(d + z[:, None], 0.0), 0.0)
        adv = np.floor(c).astype(np.int64)
        return adv, c - adv

    def _plan(self, d):
        adv, carry = self._advance(d)
        one_phase = int(self.gi[K.K_N_PH]) == 1
        n_left = int(self.gi[K.K_N_CTAS] - self.gi[K.GS_CTA_NEXT])
        n_turn = _plan(adv, self.ci, self.wi, int(self.gi[K.K_WPC]), self.pi[K.PI_PH_ITERS],
                       one_phase, n_left, self._left)
        return n_turn, adv, carry

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
            if tp is not None and self.open_win is None \
                    and self.gi[K.GS_INSTS] + tp["insts"] <= boundary + win // 2 \
                    and self._copy(tp):
                continue
            self._detail(boundary, win)
        return self._finish_interval(t0)

    def _detail(self, boundary: int, win: int) -> None:
        """Simulate one window in detail; keep it as the template when it is steady."""
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
            if (before[5], before[6]) != (after[5], after[6]):
                self._forget()
            return
        d = self._steady(before, after)
        if isinstance(d, str):
            return                  # not every CTA has run a whole iteration: go on
        self.open_win = None
        if d is None:
            self.n_steady, self.template = 0, None
            return
        self.n_steady += 1
        if self.n_steady >= WARM_WINDOWS:
            self.template = {"acc": self.acc - acc0, "se": self.se - se0,
                             "busy": self.chn[K.CH_BUSY] - busy0,
                             "insts": int(self.gi[K.GS_INSTS]) - insts0,
                             "cycles": int(self.gi[K.GS_T]) - t0, "d": d}

    def _copy(self, tp: dict) -> bool:
        """Copy the template once (module docstring, items 3-4); False if it cannot be."""
        n_turn, adv, carry = self._plan(tp["d"])
        if n_turn < 0:
            return False
        nwpc = int(self.gi[K.K_WPC])
        start = int(self.pi[K.PI_PH_START, 0])
        iters = int(self.pi[K.PI_PH_ITERS, 0])
        insts = int(_work(adv, self._left, self.wi, nwpc, self.pi[K.PI_PH_LEN], start, iters))
        if insts == 0:
            return False
        self.carry = carry
        f = insts / tp["insts"]
        # The shift is a whole number of timing-wheel periods; what rounding leaves out is
        # carried to the next copy (one template's copies would otherwise all round one way:
        # up to 16 cycles of a ~1,000-cycle window each, a bias of up to 1.5% at 300 MHz).
        exact = tp["cycles"] * f + self.cycle_carry
        shift = int(round(exact / K.W_LONG)) * K.W_LONG
        self.cycle_carry = exact - shift
        _apply_copy(shift, adv, self._left, self.si, self.wi, self.done, self.ci, self.mi,
                    self.qrel, self.wt, self.wq, self.wm, self.chn, float(self.fp[K.R_CYC_NS]),
                    self.gi, _SI_STAMPS, nwpc, start)
        self.gi[K.GS_INSTS] += insts
        # cycle counters (stalls, warp-cycles, busy and empty cycles) scale with the copied
        # time, event counts with the copied work
        a = tp["acc"] * (shift / tp["cycles"])
        a[_COUNTS] = tp["acc"][_COUNTS] * f
        a[K.A_MSHR_MIN_NS] = 0.0        # maxima over the interval, not sums: left out
        a[K.A_SQ_MIN_NS] = 0.0
        self.acc += a
        self.acc[K.A_INSTS] += insts - a[K.A_INSTS]
        self.se += tp["se"] * f
        self.chn[K.CH_BUSY] += tp["busy"] * f
        self.n_copies += 1
        self.n_turnovers += n_turn
        return True
