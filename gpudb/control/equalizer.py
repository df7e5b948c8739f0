"""Equalizer's decision logic (paper 001, Sethia & Mahlke), free of any simulator.

Equalizer tunes three parameters per epoch: the number of concurrent thread blocks (CTAs) on
each SM, the SM V/F level and the memory-system V/F level (section III). The pieces, in the
order a simulator hook calls them once per SM per epoch:

- ``EpochCounters``: one SM's four warp-state counters (active, waiting, X_alu, X_mem) over
  one epoch, as average warps per sample (section IV-A; one sample every 128 cycles over a
  4096-cycle epoch, section V-A 2), and W_cta, the warps in one of the kernel's blocks.
- ``decide``: Algorithm 1, line by line: the block change and CompAction / MemAction.
- ``vf_request``: Table I, the SM's {-1, 0, +1} request for each V/F domain in energy or
  performance mode.
- ``BlockLimiter``: section IV-B; numBlocks changes only after three consecutive epochs
  decide the same way.
- ``majority``: section IV-C's frequency manager, the vote of all SMs for one domain.
- ``VfLevel`` / ``step_level`` / ``level_mhz``: the three levels of each domain (-15%, nominal,
  +15%), moved one level per epoch (section IV-C). ``frequency_manager`` strings the vote and
  the step together for both domains.

Readings the paper leaves open are named in the docstring of the piece they concern.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

SAMPLE_PERIOD_CYCLES = 128          # section IV: "Every 128 cycles, Equalizer checks ..."
EPOCH_CYCLES = 4096                 # section V-A 2: "a 4096 cycle epoch window"
SAMPLES_PER_EPOCH = EPOCH_CYCLES // SAMPLE_PERIOD_CYCLES     # 32, as section V-A 2 counts
VF_STEP_FRACTION = 0.15             # section IV-C: low and high are -15% and +15% of nominal
BLOCK_HYSTERESIS_EPOCHS = 3         # section IV-B: three consecutive epoch windows
MODES = ("energy", "performance")

# Allowed slack when checking that the waiting, X_alu and X_mem warps are among the active
# ones: the counters arrive as float averages, and sums divided by the sample count can be
# off by a rounding error.
_COUNT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class EpochCounters:
    """One SM's warp-state counters over one epoch (section III-A and IV-A).

    n_active, n_waiting, n_xalu, n_xmem: average warps per sample in each state (the hardware
    keeps sums over the epoch's 32 samples; Algorithm 1 compares them with per-sample warp
    counts such as W_cta and 2, so they are taken here as averages: comparing the average
    with W_cta is comparing the sum with 32 W_cta). Paused warps and warps without a valid
    instruction-buffer entry are not active (section IV-A), and waiting, X_alu and X_mem are
    disjoint states of the head instruction of an active warp, so their sum cannot exceed
    n_active; a counter set that breaks this is rejected, since it means the caller counted
    differently from the paper.
    w_cta: warps per thread block of the running kernel (Algorithm 1 line 4).
    """

    n_active: float
    n_waiting: float
    n_xalu: float
    n_xmem: float
    w_cta: int

    def __post_init__(self):
        for name in ("n_active", "n_waiting", "n_xalu", "n_xmem"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"{name} must be a finite, non-negative warp count")
        if int(self.w_cta) != self.w_cta or self.w_cta < 1:
            raise ValueError("w_cta must be a whole number of warps, at least 1")
        accounted = self.n_waiting + self.n_xalu + self.n_xmem
        if accounted > self.n_active * (1.0 + _COUNT_TOLERANCE) + _COUNT_TOLERANCE:
            raise ValueError("waiting + X_alu + X_mem warps exceed the active warps")

    @classmethod
    def from_sums(cls, samples: int, active: float, waiting: float, xalu: float, xmem: float,
                  w_cta: int) -> EpochCounters:
        """Counters from sums over ``samples`` samples (the hardware's epoch counters,
        section V-A 2: 32 samples of at most 48 warps each)."""
        if int(samples) != samples or samples < 1:
            raise ValueError("samples must be a whole number, at least 1")
        return cls(active / samples, waiting / samples, xalu / samples, xmem / samples,
                   w_cta)


@dataclass(frozen=True)
class Decision:
    """What Algorithm 1 decided for one SM and one epoch.

    block_delta: the change to numBlocks (-1 line 8, +1 line 15, else 0); BlockLimiter
    applies it only after three agreeing epochs.
    comp_action, mem_action: Algorithm 1's CompAction and MemAction, turned into V/F requests
    by Table I (``vf_request``). At most one is set: every branch of Algorithm 1 sets one
    flag, so a Decision with both is refused here rather than resolved later.
    tendency: the branch taken, named after Algorithm 1's comments and section III-B's text:
    'memory' (line 7), 'compute' (line 10), 'likely_memory' (line 12), 'unsaturated'
    (line 14), 'idle' (line 21), 'degenerate' (no branch taken); 'uninclined' only from the
    ``inclined`` variant.
    """

    block_delta: int
    comp_action: bool
    mem_action: bool
    tendency: str

    def __post_init__(self):
        if self.block_delta not in (-1, 0, 1):
            raise ValueError("block_delta must be -1, 0 or +1 (section III: one step)")
        if self.comp_action and self.mem_action:
            raise ValueError("Algorithm 1 never sets both CompAction and MemAction")


def decide(c: EpochCounters) -> Decision:
    """Algorithm 1 (paper 001, section III-B), branch for branch in the printed order.

    The strict '>' comparisons are kept as printed, so a counter equal to its threshold does
    not trigger its branch. ``nActive/2`` is a real division: the counters are averages, and
    for integer sums real and floor division give the same result (2w > a with a odd is
    w >= (a + 1) / 2, i.e. w > floor(a / 2)).

    Line 14 against the text: section III-B says "If a majority of the warps are not waiting
    for data in such cases (line 14), these kernels considered to be degenerate and no
    parameters are changed." That sentence describes the *false* side of line 14, and the
    printed algorithm agrees with it: when nWaiting > nActive/2 (a majority of active warps
    waiting) the kernel is unsaturated and not degenerate, so it gets one more block (line
    15, section III-A: "An SM should run more than Waiting number of warps concurrently to
    effectively hide memory access latency") and CompAction or MemAction by its inclination
    (lines 16-19; the text: "For unsaturated and non-degenerate kernels, Equalizer requests
    CompAction or MemAction depending on their compute or memory inclination"). When at most
    half are waiting and some warps are active, no branch is taken: the degenerate case,
    nothing changes. With no active warps (nActive == 0, so nWaiting = 0 is not above 0)
    line 21 requests CompAction for the load imbalance at the end of a kernel.

    In lines 16-19 a tie nALU == nMem (both 0 included) takes the else branch, MemAction,
    as printed.
    """
    n_mem, n_alu = c.n_xmem, c.n_xalu
    if n_mem > c.w_cta:                         # line 7: definitely memory intensive
        return Decision(-1, False, True, "memory")              # lines 8-9
    if n_alu > c.w_cta:                         # line 10: definitely compute intensive
        return Decision(0, True, False, "compute")              # line 11
    if n_mem > 2:                               # line 12: likely memory intensive
        # lines 12-13: fewer blocks might under-subscribe the bandwidth (section III-B)
        return Decision(0, False, True, "likely_memory")        # line 13
    if c.n_waiting > c.n_active / 2:            # line 14: close to ideal kernel
        if n_alu > n_mem:                       # line 16: higher compute inclination
            return Decision(+1, True, False, "unsaturated")     # lines 15, 17
        return Decision(+1, False, True, "unsaturated")         # lines 15, 18-19
    if c.n_active == 0:                         # line 21
        return Decision(0, True, False, "idle")                 # line 22: load imbalance
    return Decision(0, False, False, "degenerate")              # line 23: no branch taken


INCLINATION_WARPS = 1.0   # section III-A: "one warp in X_alu or X_mem state denotes contention"


def inclined(decision: Decision, c: EpochCounters) -> Decision:
    """Variant ``inclined`` (gpudb's, beside the paper's algorithm): an unsaturated kernel's
    V/F action (lines 16-19) only when it shows an inclination, i.e. at least one X_alu or
    X_mem warp per sample; otherwise the block change alone (tendency 'uninclined').

    Why: the printed algorithm resolves lines 16-19 by comparing nALU with nMem however small
    both are, so a latency-bound kernel with no excess warps at all (a tie at 0 takes the
    MemAction branch) has its SM throttled in energy mode. Section III-A: "In principle, one
    warp in X_alu or X_mem state denotes contention for resources"; section III-B: unsaturated
    kernels "can have compute or memory inclinations depending on large X_alu or X_mem
    values"; and section V-B names the cost of throttling without one: stncl "has very few
    warps in X_mem or X_alu state ... and hence decreasing frequency of any of the resources
    makes that resource under perform". gpudb runs it in energy mode only, where a wrong
    action throttles (in performance mode it only boosts).
    """
    if decision.tendency == "unsaturated" and max(c.n_xalu, c.n_xmem) < INCLINATION_WARPS:
        return Decision(decision.block_delta, False, False, "uninclined")
    return decision


def vf_request(decision: Decision, mode: str) -> tuple[int, int]:
    """One SM's V/F request, (sm_step, mem_step) each in {-1, 0, +1}, by Table I.

    Section III-B: "As per Table I, for compute kernels, if the objective of Equalizer is to
    save energy, then it requests the frequency manager in Figure 3 to reduce memory VF. If
    the objective is to improve performance then Equalizer requests increase in the SM's VF.
    The opposite actions are taken for memory kernels as per Table I." So:

    ============  ==========  ===================  ======================
    mode          action      SM VF                memory VF
    ============  ==========  ===================  ======================
    energy        CompAction  maintain (0)         decrease (-1)
    energy        MemAction   decrease (-1)        maintain (0)
    performance   CompAction  increase (+1)        maintain (0)
    performance   MemAction   maintain (0)         increase (+1)
    ============  ==========  ===================  ======================

    Reading: Table I's "Memory Intensive / Energy" row prints "Decrease" for the DRAM
    frequency as well as the SM's. Every other statement of the rule says memory kernels
    lower the SM's V/F only: section II-A ("the SM and memory frequency should be reduced
    for memory and compute kernels respectively"), the sentence above, the unified handling
    of memory and cache kernels (section III-A, whose Table I row is "Decrease / Maintain"),
    and section V-B ("reduces memory frequency for compute kernels and SM frequency for
    memory kernels"); so MemAction in energy mode asks for (-1, 0).

    The load-imbalance CompAction of line 22 follows the same table: section III-B's last
    paragraph, "Equalizer tries to finish the work early (line 21) or reduce memory energy".
    Neither action: (0, 0). Both actions cannot reach here (``Decision`` refuses them).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if decision.comp_action:
        return (0, -1) if mode == "energy" else (+1, 0)
    if decision.mem_action:
        return (-1, 0) if mode == "energy" else (0, +1)
    return (0, 0)


class BlockLimiter:
    """One SM's numBlocks under section IV-B's hysteresis.

    "Equalizer does not change numBlocks on the basis of one window. If the decision of three
    consecutive epoch window results in different decision than the current numBlocks, then
    Equalizer changes numBlocks." Reading: each epoch's decision is numBlocks + block_delta;
    numBlocks moves by one block (section III: "the new value differs from the previous
    value by one step") once three consecutive epochs have all asked for the same new value,
    i.e. the same non-zero block_delta since the last change. An epoch asking to keep the
    current value breaks the run, and one asking the other way starts a new run of one
    (three epochs that disagree among themselves give no direction to move in). After a
    change the run starts again from zero: later decisions are relative to the new value
    (section V-B: Equalizer "must wait for 3 consecutive decisions to be different from the
    current one to enforce a decision").

    numBlocks stays in [1, max_blocks], max_blocks the CTAs the SM can hold for this kernel
    (the starting value: Table I runs compute and memory kernels at the maximum). A decision
    that would leave that range cannot differ from the current value, so it counts as
    keeping it. Reducing numBlocks pauses a CTA rather than killing it (section IV-B); this
    class only reports the limit, the caller pauses and unpauses.
    """

    def __init__(self, max_blocks: int, epochs: int = BLOCK_HYSTERESIS_EPOCHS):
        if int(max_blocks) != max_blocks or max_blocks < 1:
            raise ValueError("max_blocks must be a whole number, at least 1")
        if epochs < 1:
            raise ValueError("epochs must be at least 1")
        self.max_blocks = int(max_blocks)
        self.epochs = epochs
        self.num_blocks = self.max_blocks
        self.run_direction = 0          # block_delta of the current run of agreeing epochs
        self.run_length = 0

    def update(self, block_delta: int) -> int:
        """Take one epoch's block_delta (from ``decide``); the numBlocks limit to run next."""
        if block_delta not in (-1, 0, 1):
            raise ValueError("block_delta must be -1, 0 or +1")
        if not 1 <= self.num_blocks + block_delta <= self.max_blocks:
            block_delta = 0             # out of range: the same as keeping numBlocks
        if block_delta == 0:
            self.run_direction, self.run_length = 0, 0
        elif block_delta == self.run_direction:
            self.run_length += 1
        else:
            self.run_direction, self.run_length = block_delta, 1
        if self.run_length >= self.epochs:
            self.num_blocks += self.run_direction
            self.run_direction, self.run_length = 0, 0
        return self.num_blocks


def majority(votes: Iterable[int]) -> int:
    """The frequency manager's decision for one V/F domain from the SMs' {-1, 0, +1} requests
    (section IV-C: "a decision based on the majority vote amongst all the SM requests").

    Reading: a change is made only when more than half of all the SMs request it (a strict
    majority); otherwise the level is kept (0), including on a tie and when the most common
    change has only a plurality. The paper supports this over a plurality vote: Figure 3's
    caption says the manager "changes the SM or memory frequency as requested by majority of
    the SMs", section III calls it "a majority function", and section III-B's load-imbalance
    argument rests on "majority of the SMs" being idle for their line-22 requests to win.
    Every SM votes, those with no decision included (their vote is 0). No votes: 0.
    """
    counts = Counter()
    n_votes = 0
    for vote in votes:
        if vote not in (-1, 0, 1):
            raise ValueError("a vote must be -1, 0 or +1")
        counts[vote] += 1
        n_votes += 1
    for step in (-1, 1):
        if 2 * counts[step] > n_votes:
            return step
    return 0


class VfLevel(IntEnum):
    """The three V/F levels of each domain (section IV-C): nominal and 15% either side."""

    LOW = -1
    NORMAL = 0
    HIGH = 1

    @property
    def scale(self) -> float:
        """Frequency as a fraction of nominal; voltage scales the same (section V-A 1:
        "we reduce both voltage and frequency by 15%", a linear V/F relation)."""
        return 1.0 + VF_STEP_FRACTION * int(self)


def step_level(level: VfLevel, step: int) -> VfLevel:
    """The level after one epoch's step: one level at a time and no further than low or
    high (section IV-C: from low, a request to increase goes to normal first, and to high
    only if the next epoch makes the same request)."""
    if step not in (-1, 0, 1):
        raise ValueError("step must be -1, 0 or +1")
    return VfLevel(min(max(int(level) + step, VfLevel.LOW), VfLevel.HIGH))


def level_mhz(level: VfLevel, nominal_mhz: float) -> float:
    """The domain's frequency in MHz at ``level``, from its nominal frequency in MHz."""
    return nominal_mhz * VfLevel(level).scale


def frequency_manager(sm_level: VfLevel, mem_level: VfLevel,
                      requests: Iterable[tuple[int, int]]) -> tuple[VfLevel, VfLevel]:
    """One epoch of the frequency manager (Figure 3, section IV-C): the SM and memory levels
    after the majority vote of every SM's (sm_step, mem_step) request from ``vf_request``."""
    requests = list(requests)
    sm_step = majority(sm for sm, _ in requests)
    mem_step = majority(mem for _, mem in requests)
    return step_level(sm_level, sm_step), step_level(mem_level, mem_step)
