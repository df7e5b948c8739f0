"""Jitted core of the simulator: ``@njit(cache=True)`` code only, structure-of-arrays inputs.

Every function here takes scalars and ndarrays, the state grouped in four namedtuples of
arrays (:data:`Gpu`, :data:`Program`, :data:`SmState`, :data:`Counters`); :mod:`sim.model`
validates, allocates and seeds them. The whole call graph of :func:`advance` lives in this
one module because numba's cache does not notice an edit to a jitted callee in another module
(docs/DESIGN.md section 7).
:mod:`sim.reference` runs these same functions as plain Python for small cases.

Time: the SMs run in core cycles (int64, ``t``); interconnect/L2 and DRAM latencies are in ns
(fixed and memory clock domains) and are converted to core cycles with ``ceil`` when a request
is issued, so they cost more cycles at a higher core clock (docs/DESIGN.md section 4). DRAM channel
queues keep their own clock in ns.

Event skipping: an SM whose next possible event (an operand becoming ready, a miss returning, a
store being acknowledged, a CTA completing, the SFU freeing) is in the future is not processed
until then. Nothing about it can change in between, so the classification of its last processed
cycle holds for every skipped cycle and is added lazily (``_flush``), with Equalizer samples
counted at each multiple of 128 in the gap. ``skip=False`` processes every SM every cycle;
tests check that both give identical counters.
"""

import math
from collections import namedtuple

import numpy as np
from numba import njit
from numba.core.cpu import CPUTargetOptions

from sim import _jit_cache  # noqa: F401  (before any @njit: where the compiled code is kept)

# Instruction opcodes of a warp program.
OP_ALU = 0
OP_SFU = 1
OP_LD = 2      # global load
OP_ST = 3      # global store
OP_SH = 4      # shared-memory access
OP_BAR = 5     # CTA-wide barrier
OP_DP = 6      # double-precision (FP64) arithmetic, on its own unit

BIG = 1 << 62  # "never" as a cycle stamp

# Float parameters and setting (float64 array ``fp``): GPU parameters (units in
# sim/config.py and the GPU TOMLs), then the run-time setting the closed loop may change.
G_ISSUE_WIDTH = 0      # warp instructions issued per cycle per SM
G_ALU_WIDTH = 1        # ALU warp instructions per cycle per SM
G_ALU_LAT = 2          # cycles from issue to result
G_SFU_LAT = 3
G_SFU_II = 4           # cycles the SFU is busy per warp instruction
G_L1_LAT = 5           # cycles
G_SHARED_LAT = 6       # cycles
G_N_MSHR = 7           # per SM
G_SQ_SIZE = 8          # store-queue entries per SM
G_L1_BYTES = 9
G_L2_NS = 10           # L1-miss -> L2 -> SM round trip, fixed clock domain (ns)
G_L2_CYC = 11          # part of that round trip clocked by the core (cycles)
G_DRAM_NS = 12         # DRAM access latency beyond L2, fixed part (ns)
G_DRAM_MEMCYC = 13     # DRAM access latency in memory-clock cycles
G_DRAM_CYC = 14        # extra core-clocked cycles on a DRAM access (paper 003 eq. 4)
G_SVC_MEMCYC = 15      # memory-clock cycles a channel is busy per transaction
G_N_CH = 16            # DRAM channels
G_EQ_PERIOD = 17       # Equalizer sampling period, cycles (paper 001 section IV)
# Added for issue 37 (a GPU's configuration may leave each out: then the mechanism is off and
# results are those of the model without it):
G_DP_LAT = 18          # cycles from issue to result of an FP64 instruction
G_DP_II = 19           # cycles the FP64 unit is busy per warp instruction
G_LSU_TPC = 20         # global transactions the LSU sends per cycle (>= 1)
N_GP = 21
R_CORE_MHZ = 21
R_MEM_MHZ = 22
R_CYC_NS = 23          # ns per core cycle
R_SEG_NS = 24          # ns at cycle R_SEG_CYC: time origin of the current setting
R_SEG_CYC = 25
# Derived from the setting by _derive (at every advance(), as the setting may have changed):
# computed once rather than per request, by the same expressions, so to the same bits.
R_SVC_NS = 26          # ns a DRAM channel is busy per transaction
R_DRAM_MEM_NS = 27     # the memory-clocked part of the DRAM latency, ns
R_DRAM_CYC = 28        # core-clocked cycles of a DRAM access (whole number)
R_L2_RET = 29          # cycles of an L2 round trip (whole number)
N_FP = 30

# Integer kernel scalars and global state (int64 array ``gi``).
K_N_CTAS = 0
K_WPC = 1              # warps per CTA
K_N_PH = 2             # program phases
K_SLOTS = 3            # CTA slots per SM the hardware allows for this kernel
K_FOOT = 4             # L1 footprint per warp, bytes (0: hit rates as specified)
GS_INSTS = 5           # warp instructions issued GPU-wide
GS_CTA_NEXT = 6        # next CTA of the grid to dispatch
GS_CTAS_DONE = 7
GS_CTA_LIMIT = 8       # CTA limit per SM for new launches (closed-loop setting)
GS_T = 9               # first cycle not yet simulated
GS_N_SM = 10           # active SMs
GS_EQ_SHIFT = 11       # log2 of G_EQ_PERIOD if a power of two, else -1 (set by _derive)
# The simulator's own work, for gpudb bench sim (no result depends on them; sim.model resets
# them every interval): SM-cycles processed (_sm_cycle calls; the rest were skipped as idle),
# and those of them that issued an instruction.
GS_SM_STEPS = 12
GS_ISSUE_STEPS = 13
# 1: a call of the engine that ends leaves CRIT's and CRISP's running critical paths as they
# are (the sampled engine, whose intervals are several calls, restarts them itself at each
# interval's end); 0 (the cycle engine): each call is an interval and restarts them.
GS_KEEP_PATHS = 14
N_GI = 15

# Program (int64 ``pi[N_PI, L]`` and float64 ``pf[N_PF, L]``): per instruction, then per phase.
PI_OP = 0
PI_DEP0 = 1            # producer instruction index or -1
PI_DEP1 = 2
PI_TRANS = 3           # transactions per warp request
PI_PH_START = 4        # per phase: first instruction
PI_PH_LEN = 5
PI_PH_ITERS = 6
N_PI = 7
PF_L1 = 0              # L1 hit probability (loads)
PF_L2 = 1              # L2 hit probability (loads)
PF_WR = 2              # fraction of store transactions written through to DRAM
N_PF = 3

# Per-SM state (int64 array ``si[n_sm, N_SI]``).
SI_NEXT = 0            # next cycle this SM must be processed
SI_GAP = 1             # first cycle not yet counted
SI_RR = 2              # loose round-robin pointer
SI_LSU_W = 3           # warp whose memory instruction the LSU is processing, -1 idle
SI_LSU_I = 4
SI_LSU_LEFT = 5        # transactions left
SI_LSU_MAXRET = 6      # latest return among its transactions
SI_LSU_PEND = 7        # L1 outcome drawn for the pending transaction: -1 none, 0 miss, 1 hit
SI_SFU_FREE = 8
SI_MSHR_BUSY = 9
SI_MSHR_NEXT = 10      # earliest MSHR release
SI_SQ_BUSY = 11
SI_SQ_NEXT = 12
SI_LEAD_UNTIL = 13     # return cycle of the current leading load
SI_CRIT = 14           # CRIT global critical path (paper 004 section 3.1.1)
SI_LCP = 15            # CRISP adjusted load critical path (paper 000 section 3.6)
SI_N_CTAS = 16         # resident CTAs
SI_LIVE = 17           # resident warps not yet retired
SI_CTA_EV = 18         # earliest completion of a CTA whose warps all retired
SI_LCP_SLOT = 19       # the adjusted LCP with stalls weighted by idle issue slots, in slots
SI_MSHR_OCC = 20       # cycles x MSHRs held by this interval's misses (miss to data return)
SI_SQ_OCC = 21         # cycles x store-queue entries held by this interval's stores (to ack)
SI_LAUNCHED = 22       # 1 if CTAs were launched on this SM at the start of the current cycle
SI_LIMIT = 23          # this SM's own CTA limit (sim.model's apply_sm_limits; default K_SLOTS):
                       # unlike GS_CTA_LIMIT it pauses resident CTAs beyond it (paper 001 IV-B)
SI_PAUSED = 24         # resident CTAs that are paused (counted in SI_N_CTAS too)
SI_NW = 25             # warps in the waiting set (WM_WAIT)
SI_NW_MEM = 26         # ... of which those whose wait is for a load (WI_WMEM)
SI_W_MIN = 27          # earliest wait in the waiting set (BIG: none; 0: to be recounted)
SI_N_BLK = 28          # warps in the blocked set (WM_BLK)
SI_WQ_OCC = 29         # the short-wait wheel's slots holding a warp, bit k for slot k
SI_WQ_T = 30           # cycle up to which the wheel's waits have been ended (_expire_wheel)
SI_KIND = 31           # the kind (_kind) of the last processed idle cycle, for _flush
SI_DUE = 32            # not per SM: advance()'s list of the SMs due this cycle, rows 0..n-1
SI_DP_FREE = 33        # first cycle the FP64 unit is free
N_SI = 34

# Warp states.
W_EMPTY = 0
W_ACTIVE = 1
W_BARRIER = 2
W_RETIRED = 3          # done issuing, results pending, CTA not yet complete
W_LSU = 4              # last instruction still in the LSU
W_PAUSED = 5           # W_ACTIVE in a paused CTA: not scheduled, not counted by Equalizer

# Per-warp fields (int64 ``wi[n_sm, n_warps, N_WI]``); results in ``done[n_sm, n_warps, L]``.
WI_ST = 0              # W_* state
WI_PC = 1              # instruction index
WI_PH = 2              # phase
WI_IT = 3              # iteration of the phase loop
WI_LD = 4              # latest result time of the warp's instructions
WI_WAIT = 5            # cycle until which its next instruction is known to wait (0: unknown)
WI_WMEM = 6            # 1 if that wait is for a global load
N_WI = 7
# The scheduler's warp sets (int64 ``wm[n_sm, N_WM, words]``), bitmasks of warp indices, 32 to
# a word (so bit arithmetic never touches the sign bit). They let _issue visit only the warps
# whose answer it does not know yet, instead of every resident warp every cycle: a warp whose
# operand wait is cached stays waiting until then, and a ready warp stays ready until it
# issues, so both are counted as a whole, as the scan would have counted each of them.
WM_ACT = 0             # W_ACTIVE warps
WM_WAIT = 1            # active warps with a valid cached wait (WI_WAIT > the cycle)
WM_BLK = 2             # active warps that are ready with a memory instruction next
N_WM = 3
# A wait of at least W_LONG cycles is kept in ``wt`` (below). A shorter one (ALU, L1, shared
# memory) ends too soon for a pass over ``wt`` to pay for itself, but a memory-bound SM is
# processed on most cycles of such a wait, and visiting the warp on each of them cost more:
# those warps wait in a timing wheel instead, int64 ``wq[n_sm, W_LONG, words]``, slot
# ``r % W_LONG`` holding (as a bitmask per word) the warps whose wait ends at cycle r. Every
# wait in it was added at the cycle of the wheel's last expiry or later, less than W_LONG
# cycles ahead, so its slots never hold two cycles at once (_expire_wheel). W_LONG is a power
# of two no larger than 32 (slot k is bit k of SI_WQ_OCC). While both sets are empty (as on a
# compute-bound SM) the scan walks every warp anyway (_issue's dense walk, cheaper than picking
# bits), so a short wait found then is left out of the set, as it pays only where the scan
# picks bits.
W_LONG = 32
# The waits of the waiting set's warps are also kept densely in int64 ``wt[n_sm, n_warps]``
# (BIG for a warp not in the set), so that finding the ones that ended, and the earliest one
# left, is one branch-predictable pass over contiguous memory (_expire_waits), made only when
# the earliest wait (SI_W_MIN) is reached. (A heap cost more: its sifting mispredicts.)
# Bit index of a power of two below 2**32 (de Bruijn sequence 0x077CB531).
_DEBRUIJN = np.zeros(32, np.int64)
for _b in range(32):
    _DEBRUIJN[(((1 << _b) * 0x077CB531) & 0xFFFFFFFF) >> 27] = _b
# Per-CTA-slot fields (int64 ``ci[n_sm, slots, N_CI]``).
CI_ST = 0              # 0 free, 1 running, 2 all warps retired, completing
CI_LEFT = 1            # warps not yet retired
CI_BAR = 2             # warps arrived at the current barrier
CI_DONE = 3            # completion time (latest result of its warps)
CI_PAUSED = 4          # 1 if paused (per-SM CTA limit below the SM's active CTAs)
CI_SEQ = 5             # its index in the grid (launch order)
N_CI = 6
# Per-MSHR fields (int64 ``mi[n_sm, n_mshr, N_MI]``); store queue: ``qrel[n_sm, entries]``.
# Both are binary min-heaps on their release cycle over the first SI_MSHR_BUSY / SI_SQ_BUSY
# rows (the rest free, -1), so a return is found without scanning every entry (_releases).
# Nothing depends on which row holds a request: a release only takes maxima and counts.
MI_REL = 0             # release (data return) cycle, -1 free
MI_MISS = 1            # cycle of the L1 miss (or interval start)
MI_TSC = 2             # CRIT timestamp P_i (paper 004 section 3.1.1)
MI_TSL = 3             # CRISP timestamp ts_i (paper 000 section 3.6)
MI_TSL_SLOT = 4        # the same for SI_LCP_SLOT, in issue slots
N_MI = 5
# DRAM channels (float64 ``chn[2, n_ch]``).
CH_FREE = 0            # ns at which the channel can start its next transaction
CH_BUSY = 1            # ns of service in the current interval

# Counters (float64 ``acc``), summed over SMs; sim.model averages the per-SM ones.
A_INSTS = 0
A_ALU = 1
A_SFU = 2
A_GLD = 3
A_GST = 4
A_SHARED = 5
A_BAR = 6
A_GLD_TRANS = 7
A_GST_TRANS = 8
A_L1_ACC = 9
A_L1_HIT = 10
A_L2_ACC = 11
A_L2_HIT = 12
A_DRAM_RD = 13
A_DRAM_WR = 14
A_SH_TRANS = 15
A_ALU_BUSY = 16
A_SFU_BUSY = 17
A_MEM_BUSY = 18
A_LEAD = 19
A_MISS = 20
A_CRIT = 21
A_LCP = 22
A_EQ_SAMPLES = 23
A_EQ_ISSUED = 24
A_LCP_SLOT = 25        # SI_LCP_SLOT read out in cycles
A_MSHR_MIN_NS = 26     # least time the busiest SM's MSHRs need for its misses (ns)
A_SQ_MIN_NS = 27       # least time the busiest SM's store queue needs for its stores (ns)
A_DP = 28              # FP64 warp instructions
# Per-cycle classification: these are also the layout of the gap vector ``sg``.
A_STALL = 29
A_LOAD_STALL = 30
A_STORE_STALL = 31
A_COMPUTE = 32
A_LOAD_OUT = 33
A_OVL_COMP = 34
A_MEM_STALL = 35
A_WRITE_STALL = 36
A_WARPS = 37
# Issue-slot accounting (gpudb's, not paper 000's): the unused issue slots of a cycle are
# classified by rules A-D, so a one-issue cycle on a dual-issue SM is half computation. In
# skipped cycles nothing issues, so the share is 1.
A_SLOT_LOAD_STALL = 38
A_SLOT_STORE_STALL = 39
A_EMPTY = 40           # cycles the SM had no resident CTA
A_EQ_ACTIVE = 41
A_EQ_WAIT = 42
A_EQ_XALU = 43
A_EQ_XMEM = 44
N_ACC = 45
A_CLASS0 = A_STALL
A_EQ0 = A_EQ_ACTIVE
# A cycle short of full issue (or an Equalizer sample) is counted by its kind (int64
# ``kinds[N_KIND * (width + 1)]``, per interval), from which _end_interval adds its 0/1
# counters (A_STALL, A_LOAD_STALL, A_STORE_STALL, A_COMPUTE, A_LOAD_OUT, A_OVL_COMP,
# A_MEM_STALL, A_WRITE_STALL, A_EMPTY) to acc: one increment a cycle instead of one per
# counter. Sums of whole numbers are exact in any order, so the counters are the same. The
# kind: class (A_LOAD_STALL, A_STORE_STALL or A_COMPUTE), loads outstanding, empty, _lsu's
# code 2 / 3 / other, instructions issued. (The slot rule's counters are not 0/1: sg.)
N_KIND = 3 * 2 * 2 * 3
# Per-SM Equalizer counters (float64 ``se[n_sm, N_SE]``), summed over the interval's sample
# cycles: the samples, then A_EQ_ACTIVE..A_EQ_XMEM in order (E_ACTIVE + k - A_EQ0).
E_SAMPLES = 0
E_ACTIVE = 1
E_WAIT = 2
E_XALU = 3
E_XMEM = 4
N_SE = 5

# Return codes of advance().
ST_BOUNDARY = 1
ST_DONE = 2
ST_DEADLOCK = 3

_U_INC = np.uint64(0x9E3779B97F4A7C15)
_U_M1 = np.uint64(0xBF58476D1CE4E5B9)
_U_M2 = np.uint64(0x94D049BB133111EB)
_U_30 = np.uint64(30)
_U_27 = np.uint64(27)
_U_31 = np.uint64(31)
_U_11 = np.uint64(11)


# The state advance() works on, in four groups of arrays. numba passes a namedtuple of arrays
# as a plain (heterogeneous) tuple: with reference counting off (see _INLINE) a group costs
# nothing over separate arguments, and unlike a jitclass it can be cached. sim.model builds
# them once per run around the arrays it allocated; the functions here mutate them in place.
Gpu = namedtuple("Gpu", ["fp", "gi", "chn"])
"""GPU-wide: parameters and setting ``fp`` (G_*, R_*), kernel scalars and global state ``gi``
(K_*, GS_*), DRAM channels ``chn`` (CH_*)."""
Program = namedtuple("Program", ["pi", "pf"])
"""The warp program every warp runs: ``pi`` (PI_*) and ``pf`` (PF_*)."""
SmState = namedtuple("SmState", ["si", "wi", "done", "ci", "mi", "qrel", "rng", "wm", "wt",
                                 "wq"])
"""Per-SM state, first index the SM: scalars ``si`` (SI_*), warps ``wi`` (WI_*) and their
scoreboard ``done`` (result cycle of each instruction), CTA slots ``ci`` (CI_*), MSHRs ``mi``
(MI_*), store-queue release cycles ``qrel`` (-1 free), random streams ``rng``, the
scheduler's warp sets ``wm`` (WM_*) and its waiting set's long waits ``wt`` and short waits
``wq`` (a timing wheel)."""
Counters = namedtuple("Counters", ["acc", "sg", "se", "kinds"])
"""The interval's counters ``acc`` (A_*), per SM ``sg``, the counters of its last processed
idle cycle that its kind (SI_KIND) does not give (A_LOAD_STALL, A_WARPS, A_SLOT_*_STALL and
A_EQ_*, at index A_* - A_CLASS0; repeated for its skipped cycles by _flush), per SM ``se``,
the interval's Equalizer counters (E_*; their sums over SMs are acc's A_EQ_*), and the
cycles of each kind not yet added to acc, ``kinds`` (see N_KIND)."""

# What one cycle's warp scheduler scan found (returned by _issue).
Scan = namedtuple("Scan", [
    "n_iss",        # warp instructions issued
    "mem_raw",      # a warp waits for a global load's result (RAW on the LSU)
    "alu_raw",      # a warp waits for an ALU/SFU/shared result (arithmetic RAW)
    "struct",       # a ready instruction found its ALU/SFU busy (structural hazard)
    "lsu_new",      # a memory instruction entered the LSU this cycle
    "lsu_blocked",  # a ready memory instruction found the LSU busy
    "n_act",        # Equalizer's warp counts (paper 001 section IV): active warps,
    "n_wait",       # ... those waiting for an operand,
    "n_xalu",       # ... those ready for an arithmetic unit but not issued,
    "n_xmem",       # ... those ready for the LSU but not issued
    "ev",           # earliest cycle a waiting warp's operand or the busy SFU frees up
])

# What _unit_issue answers.
U_ISSUED = 0
U_UNIT_BUSY = 1        # structural hazard: the ALU width is used up or the SFU is busy
U_LSU_BUSY = 2         # the LSU is still processing another memory instruction

# Helpers are inlined into their callers (inline='always'), and the three public kernels are
# compiled without numba's reference counting (_nrt=False): they only borrow arrays that
# sim.model owns, and allocate none (numba refuses to compile an allocation without it). With
# it, every array entering a helper, alone or in a namedtuple, cost an atomic increment and
# decrement (numba's pruning of those fails on branchy code): small helpers in the hot loop
# ran several times slower than the same code inline, and the simulator as a whole 1.3-6x.
# _nrt is a private numba option (numba 0.60-0.68 have it); should a release drop
# it, the kernels compile with reference counting (slower, same results) rather than fail.
_INLINE = "always"
_NO_REFCOUNT = {"_nrt": False} if hasattr(CPUTargetOptions, "_nrt") else {}
# Rare steps (CTA launch and completion, per-SM limits, the end of an interval) are compiled
# as functions of their own, also without reference counting: inlined, they only made the
# hot loop of advance() larger and slower.
_COLD = {"inline": "never", **_NO_REFCOUNT}


@njit(cache=True, inline=_INLINE)
def _uniform(rng, s):
    """Next uniform [0, 1) of SM s's splitmix64 stream (seeded by sim.model)."""
    x = rng[s] + _U_INC
    rng[s] = x
    z = (x ^ (x >> _U_30)) * _U_M1
    z = (z ^ (z >> _U_27)) * _U_M2
    z = z ^ (z >> _U_31)
    return float(z >> _U_11) * (1.0 / 9007199254740992.0)


@njit(cache=True, inline=_INLINE)
def _cyc(x):
    """A core-clocked latency parameter as whole cycles."""
    return int(math.ceil(x - 1e-9))


@njit(cache=True, inline=_INLINE)
def _ns_to_cycles(ns, fp):
    """Core cycles covering ``ns`` at the current core clock (rounded up)."""
    return int(math.ceil(ns / fp[R_CYC_NS] - 1e-9))


@njit(cache=True, inline=_INLINE)
def _now_ns(t, fp):
    return fp[R_SEG_NS] + (t - fp[R_SEG_CYC]) * fp[R_CYC_NS]


@njit(cache=True, inline=_INLINE)
def _dram_return(t, fp, chn, u):
    """Queue one transaction on a DRAM channel; returns the cycle its response reaches the SM.

    FCFS per channel (paper 003 section IV-A): a request waits for the channel, then holds it
    for one service time set by mem_mhz, so latency grows with load and bandwidth saturates.
    Requests reach a channel in time order because SMs are processed in cycle order.
    """
    ch = int(u * fp[G_N_CH])
    now = _now_ns(t, fp)
    start = max(now + 0.5 * fp[G_L2_NS], chn[CH_FREE, ch])
    svc = fp[R_SVC_NS]                         # G_SVC_MEMCYC * 1000 / R_MEM_MHZ
    chn[CH_FREE, ch] = start + svc
    chn[CH_BUSY, ch] += svc
    end = start + svc + fp[G_DRAM_NS] + fp[R_DRAM_MEM_NS]
    return t + int(fp[R_DRAM_CYC]) + _ns_to_cycles(end + 0.5 * fp[G_L2_NS] - now, fp)


@njit(cache=True, inline=_INLINE)
def _l2_return(t, fp):
    """Cycle an L2 hit (or a write absorbed by L2) issued at t is answered."""
    return t + int(fp[R_L2_RET])


@njit(cache=True, inline=_INLINE)
def _derive(fp, gi):
    """Fill the R_* values derived from the setting, and GS_EQ_SHIFT."""
    fp[R_SVC_NS] = fp[G_SVC_MEMCYC] * 1000.0 / fp[R_MEM_MHZ]
    fp[R_DRAM_MEM_NS] = fp[G_DRAM_MEMCYC] * 1000.0 / fp[R_MEM_MHZ]
    fp[R_DRAM_CYC] = _cyc(fp[G_L2_CYC] + fp[G_DRAM_CYC])
    fp[R_L2_RET] = _cyc(fp[G_L2_CYC]) + _ns_to_cycles(fp[G_L2_NS], fp)
    period = int(fp[G_EQ_PERIOD])
    shift = -1
    for k in range(63):
        if (1 << k) == period:
            shift = k
    gi[GS_EQ_SHIFT] = shift


@njit(cache=True, inline=_INLINE)
def _floor_period(x, period, shift):
    """x // period; a shift where the period is a power of two (an integer division per
    skipped gap cost more than the rest of _flush). Floor division both ways, x = -1 too."""
    if shift >= 0:
        return x >> shift
    return x // period


# --- The scheduler's warp sets -------------------------------------------------------------

@njit(cache=True, inline=_INLINE)
def _wm_add(wm, s, f, w):
    wm[s, f, w >> 5] |= 1 << (w & 31)


@njit(cache=True, inline=_INLINE)
def _wm_del(wm, s, f, w):
    wm[s, f, w >> 5] &= ~(1 << (w & 31))


@njit(cache=True, inline=_INLINE)
def _wm_has(wm, s, f, w):
    return ((wm[s, f, w >> 5] >> (w & 31)) & 1) != 0


@njit(cache=True, inline=_INLINE)
def _low_bit(m):
    """Index of the lowest set bit of a nonzero 32-bit word."""
    return _DEBRUIJN[(((m & -m) * 0x077CB531) & 0xFFFFFFFF) >> 27]


@njit(cache=True, inline=_INLINE)
def _wait_add(s, w, t, on_load, si, wi, wm, wt, wq):
    """Warp w (not in the set) was found at cycle t waiting until its WI_WAIT: add it to the
    set, in ``wt`` or (a wait of less than W_LONG cycles) in the wheel."""
    _wm_add(wm, s, WM_WAIT, w)
    si[s, SI_NW] += 1
    if on_load:
        si[s, SI_NW_MEM] += 1
    r = wi[s, w, WI_WAIT]
    if r - t >= W_LONG:
        wt[s, w] = r
        si[s, SI_W_MIN] = min(si[s, SI_W_MIN], r)
    else:
        k = r & (W_LONG - 1)
        wq[s, k, w >> 5] |= 1 << (w & 31)
        si[s, SI_WQ_OCC] |= 1 << k
        si[s, SI_WQ_T] = t                     # already so unless the wheel was empty


@njit(cache=True, inline=_INLINE)
def _wait_del(s, w, si, wi, wm, wt, wq):
    """Take warp w out of the waiting set, if there (before its cached wait changes)."""
    if not _wm_has(wm, s, WM_WAIT, w):
        return
    _wm_del(wm, s, WM_WAIT, w)
    si[s, SI_NW] -= 1
    if wi[s, w, WI_WMEM] == 1:
        si[s, SI_NW_MEM] -= 1
    k = wi[s, w, WI_WAIT] & (W_LONG - 1)      # its slot, were it in the wheel
    if ((wq[s, k, w >> 5] >> (w & 31)) & 1) == 0:
        if wt[s, w] <= si[s, SI_W_MIN]:
            si[s, SI_W_MIN] = 0                # it may have been the earliest: recount
        wt[s, w] = BIG
        return
    wq[s, k, w >> 5] &= ~(1 << (w & 31))
    empty = True
    for j in range(wq.shape[2]):
        if wq[s, k, j] != 0:
            empty = False
    if empty:
        si[s, SI_WQ_OCC] &= ~(1 << k)


@njit(cache=True, inline=_INLINE)
def _expire_waits(s, t, nw, si, wi, wm, wt):
    """Once the earliest wait is reached, drop the warps whose wait ended by cycle t from the
    waiting set (the scan visits them and looks at their operands again) and find the
    earliest wait left."""
    if t < si[s, SI_W_MIN]:
        return
    # one read-only pass without data-dependent branches (those mispredicted), marking the
    # warps whose wait ended in a bitmask per 32-warp word; then take those few out of the set
    nxt = BIG
    for j in range(wm.shape[2]):
        ended = 0
        for b in range(min(32, nw - (j << 5))):
            r = wt[s, (j << 5) + b]
            e = r <= t
            ended |= (1 if e else 0) << b
            nxt = min(nxt, BIG if e else r)
        while ended != 0:
            b = ended & -ended
            ended ^= b
            w = (j << 5) + _low_bit(b)
            wt[s, w] = BIG
            wm[s, WM_WAIT, j] &= ~b
            si[s, SI_NW] -= 1
            if wi[s, w, WI_WMEM] == 1:
                si[s, SI_NW_MEM] -= 1
    si[s, SI_W_MIN] = nxt


@njit(cache=True, inline=_INLINE)
def _expire_wheel(s, t, si, wi, wm, wq):
    """Drop the warps whose short wait ended in cycles SI_WQ_T + 1 .. t from the waiting set
    (the slots of those cycles; all of them once W_LONG - 1 cycles have passed, as every wait
    in the wheel ends by SI_WQ_T + W_LONG - 1)."""
    occ = si[s, SI_WQ_OCC]
    if occ == 0:
        return                                 # (_wait_add sets SI_WQ_T on an empty wheel)
    n = t - si[s, SI_WQ_T]
    si[s, SI_WQ_T] = t
    if n <= 0:
        return
    if n >= W_LONG - 1:
        due = occ
    else:
        win = ((1 << n) - 1) << ((t - n + 1) & (W_LONG - 1))   # slots of those cycles
        due = occ & (win | (win >> W_LONG))
    if due == 0:
        return
    si[s, SI_WQ_OCC] = occ & ~due
    while due != 0:
        b = due & -due
        due ^= b
        k = _low_bit(b)                        # a slot whose cycle has come
        for j in range(wq.shape[2]):
            m = wq[s, k, j]
            if m == 0:
                continue
            wq[s, k, j] = 0
            wm[s, WM_WAIT, j] &= ~m
            while m != 0:
                bit = m & -m
                m ^= bit
                si[s, SI_NW] -= 1
                if wi[s, (j << 5) + _low_bit(bit), WI_WMEM] == 1:
                    si[s, SI_NW_MEM] -= 1


@njit(cache=True, inline=_INLINE)
def _wheel_min(s, t, si):
    """The earliest wait in the wheel (BIG: none), once the waits ending by t are dropped:
    slot k >= (t + 1) % W_LONG holds cycle t + 1 + k - (t + 1) % W_LONG, a lower one a cycle
    W_LONG later."""
    occ = si[s, SI_WQ_OCC]
    if occ == 0:
        return BIG
    k = (t + 1) & (W_LONG - 1)
    hi = occ >> k
    if hi != 0:
        return t + 1 + _low_bit(hi)
    return t + 1 + (W_LONG - k) + _low_bit(occ)


@njit(cache=True, inline=_INLINE)
def _blk_add(s, w, si, wm):
    if not _wm_has(wm, s, WM_BLK, w):
        _wm_add(wm, s, WM_BLK, w)
        si[s, SI_N_BLK] += 1


@njit(cache=True, inline=_INLINE)
def _blk_del(s, w, si, wm):
    if _wm_has(wm, s, WM_BLK, w):
        _wm_del(wm, s, WM_BLK, w)
        si[s, SI_N_BLK] -= 1


@njit(cache=True, inline=_INLINE)
def _candidates(wm, s, j, lo, hi, skip_blk):
    """The warps of word j in positions [lo, hi) that _issue must visit: active, not known to
    wait, and (``skip_blk``) not known to be blocked on the LSU, as a 32-bit mask."""
    m = wm[s, WM_ACT, j] & ~wm[s, WM_WAIT, j]
    if skip_blk:
        m &= ~wm[s, WM_BLK, j]
    base = j << 5
    if lo > base:
        m &= -(1 << (lo - base))
    if hi < base + 32:
        m &= (1 << (hi - base)) - 1
    return m


@njit(cache=True, inline=_INLINE)
def _reset_warp_sets(s, sms):
    """Forget which warps wait or are blocked (they are visited again): after WI_WAIT is
    cleared for every warp, as at a clock switch."""
    si, wm, wt, wq = sms.si, sms.wm, sms.wt, sms.wq
    for j in range(wm.shape[2]):
        wm[s, WM_WAIT, j] = 0
        wm[s, WM_BLK, j] = 0
        for k in range(W_LONG):
            wq[s, k, j] = 0
    for w in range(wt.shape[1]):
        wt[s, w] = BIG
    si[s, SI_WQ_OCC] = 0
    si[s, SI_NW] = 0
    si[s, SI_NW_MEM] = 0
    si[s, SI_W_MIN] = BIG
    si[s, SI_N_BLK] = 0


# --- CTAs: launch, retire, complete ---------------------------------------------------------

@njit(cache=True, inline=_INLINE)
def _launch(s, t, gpu, prog, sms):
    """Place the grid's next CTA in a free slot of SM s."""
    gi, si, wi, done, ci = gpu.gi, sms.si, sms.wi, sms.done, sms.ci
    nwpc = gi[K_WPC]
    c = 0
    while ci[s, c, CI_ST] != 0:
        c += 1
    ci[s, c, CI_ST] = 1
    ci[s, c, CI_LEFT] = nwpc
    ci[s, c, CI_BAR] = 0
    ci[s, c, CI_DONE] = t
    ci[s, c, CI_PAUSED] = 0
    ci[s, c, CI_SEQ] = gi[GS_CTA_NEXT]
    for w in range(c * nwpc, (c + 1) * nwpc):
        wi[s, w, WI_ST] = W_ACTIVE
        _wm_add(sms.wm, s, WM_ACT, w)
        wi[s, w, WI_PC] = prog.pi[PI_PH_START, 0]
        wi[s, w, WI_PH] = 0
        wi[s, w, WI_IT] = 0
        wi[s, w, WI_LD] = t
        wi[s, w, WI_WAIT] = 0
        for i in range(done.shape[2]):
            done[s, w, i] = 0
    si[s, SI_N_CTAS] += 1
    si[s, SI_LIVE] += nwpc
    gi[GS_CTA_NEXT] += 1


@njit(cache=True, **_COLD)
def _dispatch(s, t, gpu, prog, sms):
    """Fill SM s up to the CTA limit (the GPU-wide limit only gates new launches; callers
    launch only while the SM has no paused CTA). True if any."""
    gi, si = gpu.gi, sms.si
    limit = min(gi[GS_CTA_LIMIT], gi[K_SLOTS], si[s, SI_LIMIT])
    launched = False
    while si[s, SI_N_CTAS] < limit and gi[GS_CTA_NEXT] < gi[K_N_CTAS]:
        _launch(s, t, gpu, prog, sms)
        launched = True
    return launched


@njit(cache=True, inline=_INLINE)
def _retire(s, w, gi, sms):
    """Warp w has issued everything: its CTA completes when all its warps' results are in."""
    si, wi, ci = sms.si, sms.wi, sms.ci
    wi[s, w, WI_ST] = W_RETIRED
    si[s, SI_LIVE] -= 1
    c = w // gi[K_WPC]
    if wi[s, w, WI_LD] > ci[s, c, CI_DONE]:
        ci[s, c, CI_DONE] = wi[s, w, WI_LD]
    ci[s, c, CI_LEFT] -= 1
    if ci[s, c, CI_LEFT] == 0:
        ci[s, c, CI_ST] = 2
        if ci[s, c, CI_DONE] < si[s, SI_CTA_EV]:
            si[s, SI_CTA_EV] = ci[s, c, CI_DONE]


@njit(cache=True, **_COLD)
def _complete_ctas(s, t, gi, sms):
    """Free the slots of CTAs whose last results arrived by cycle t."""
    si, wi, ci = sms.si, sms.wi, sms.ci
    if t < si[s, SI_CTA_EV]:
        return
    nxt = BIG
    nwpc = gi[K_WPC]
    for c in range(ci.shape[1]):
        if ci[s, c, CI_ST] != 2:
            continue
        if ci[s, c, CI_DONE] <= t:
            ci[s, c, CI_ST] = 0
            for w in range(c * nwpc, (c + 1) * nwpc):
                wi[s, w, WI_ST] = W_EMPTY
            if ci[s, c, CI_PAUSED] == 1:
                # its last warps left the LSU while it was paused
                ci[s, c, CI_PAUSED] = 0
                si[s, SI_PAUSED] -= 1
            si[s, SI_N_CTAS] -= 1
            gi[GS_CTAS_DONE] += 1
        elif ci[s, c, CI_DONE] < nxt:
            nxt = ci[s, c, CI_DONE]
    si[s, SI_CTA_EV] = nxt


@njit(cache=True, inline=_INLINE)
def _pause_excess(s, gi, sms):
    """Pause SM s's most recently launched running CTAs until its active (unpaused) CTAs are
    within SI_LIMIT (paper 001 section IV-B: the pause bit of their warps' instruction buffer
    entries). Their W_ACTIVE warps become W_PAUSED: not scheduled, not counted as Equalizer's
    active warps; barrier, LSU and retired warps keep their state (an instruction already in
    the LSU completes). A CTA whose warps have all retired (completing) is not paused."""
    si, wi, ci = sms.si, sms.wi, sms.ci
    nwpc = gi[K_WPC]
    while si[s, SI_N_CTAS] - si[s, SI_PAUSED] > si[s, SI_LIMIT]:
        best = -1
        for c in range(ci.shape[1]):
            if (ci[s, c, CI_ST] == 1 and ci[s, c, CI_PAUSED] == 0
                    and (best < 0 or ci[s, c, CI_SEQ] > ci[s, best, CI_SEQ])):
                best = c
        if best < 0:
            return
        ci[s, best, CI_PAUSED] = 1
        si[s, SI_PAUSED] += 1
        for w in range(best * nwpc, (best + 1) * nwpc):
            if wi[s, w, WI_ST] == W_ACTIVE:
                wi[s, w, WI_ST] = W_PAUSED
                _wm_del(sms.wm, s, WM_ACT, w)
                _wait_del(s, w, si, wi, sms.wm, sms.wt, sms.wq)
                _blk_del(s, w, si, sms.wm)


@njit(cache=True, inline=_INLINE)
def _unpause(s, limit, gi, sms):
    """Unpause SM s's paused CTAs, earliest launched first, while its active CTAs are fewer
    than ``limit``. True if any."""
    si, wi, ci = sms.si, sms.wi, sms.ci
    nwpc = gi[K_WPC]
    any_ = False
    while si[s, SI_PAUSED] > 0 and si[s, SI_N_CTAS] - si[s, SI_PAUSED] < limit:
        best = -1
        for c in range(ci.shape[1]):
            if (ci[s, c, CI_ST] != 0 and ci[s, c, CI_PAUSED] == 1
                    and (best < 0 or ci[s, c, CI_SEQ] < ci[s, best, CI_SEQ])):
                best = c
        ci[s, best, CI_PAUSED] = 0
        si[s, SI_PAUSED] -= 1
        for w in range(best * nwpc, (best + 1) * nwpc):
            if wi[s, w, WI_ST] == W_PAUSED:
                wi[s, w, WI_ST] = W_ACTIVE
                _wm_add(sms.wm, s, WM_ACT, w)
        any_ = True
    return any_


@njit(cache=True, **_COLD)
def _limit_sm(s, t, limit, gpu, prog, sms):
    """SM s under its own CTA limit (paper 001 section IV-B): pause active CTAs beyond it;
    while paused CTAs exist, a freed active slot unpauses one instead of asking the work
    distributor for a new CTA; launch only with none paused. ``limit``: the GPU-wide one.
    True if a CTA was unpaused or launched."""
    gi, si = gpu.gi, sms.si
    if si[s, SI_N_CTAS] - si[s, SI_PAUSED] > si[s, SI_LIMIT]:
        _pause_excess(s, gi, sms)
    lim = min(limit, si[s, SI_LIMIT])
    woke = False
    if si[s, SI_PAUSED] > 0 and si[s, SI_N_CTAS] - si[s, SI_PAUSED] < lim:
        woke = _unpause(s, lim, gi, sms)
    if (si[s, SI_PAUSED] == 0 and si[s, SI_N_CTAS] < lim
            and gi[GS_CTA_NEXT] < gi[K_N_CTAS] and _dispatch(s, t, gpu, prog, sms)):
        woke = True
    return woke


# --- Start of an SM's cycle: skipped cycles, returning requests -----------------------------

@njit(cache=True, inline=_INLINE)
def _mshr_put(mi, s, k, rel, miss, tsc, tsl, tsl_slot):
    """Write one MSHR entry into row k of SM s's heap."""
    mi[s, k, MI_REL] = rel
    mi[s, k, MI_MISS] = miss
    mi[s, k, MI_TSC] = tsc
    mi[s, k, MI_TSL] = tsl
    mi[s, k, MI_TSL_SLOT] = tsl_slot


@njit(cache=True, inline=_INLINE)
def _mshr_push(s, n, ret, miss, tsc, tsl, tsl_slot, mi):
    """Add a miss to SM s's MSHR heap of ``n`` entries (sift up from row n)."""
    k = n
    while k > 0:
        p = (k - 1) >> 1
        if mi[s, p, MI_REL] <= ret:
            break
        for f in range(N_MI):
            mi[s, k, f] = mi[s, p, f]
        k = p
    _mshr_put(mi, s, k, ret, miss, tsc, tsl, tsl_slot)


@njit(cache=True, inline=_INLINE)
def _mshr_pop(s, n, mi):
    """Remove the root of SM s's MSHR heap of ``n`` entries (its last row sifts down)."""
    m = n - 1
    rel = mi[s, m, MI_REL]
    miss = mi[s, m, MI_MISS]
    tsc = mi[s, m, MI_TSC]
    tsl = mi[s, m, MI_TSL]
    tsl_slot = mi[s, m, MI_TSL_SLOT]
    mi[s, m, MI_REL] = -1
    if m == 0:
        return
    k = 0
    while True:
        c = 2 * k + 1
        if c >= m:
            break
        if c + 1 < m and mi[s, c + 1, MI_REL] < mi[s, c, MI_REL]:
            c += 1
        if mi[s, c, MI_REL] >= rel:
            break
        for f in range(N_MI):
            mi[s, k, f] = mi[s, c, f]
        k = c
    _mshr_put(mi, s, k, rel, miss, tsc, tsl, tsl_slot)


@njit(cache=True, inline=_INLINE)
def _sq_push(s, n, ack, qrel):
    """Add a store to SM s's store-queue heap of ``n`` entries."""
    k = n
    while k > 0:
        p = (k - 1) >> 1
        if qrel[s, p] <= ack:
            break
        qrel[s, k] = qrel[s, p]
        k = p
    qrel[s, k] = ack


@njit(cache=True, inline=_INLINE)
def _sq_pop(s, n, qrel):
    """Remove the root of SM s's store-queue heap of ``n`` entries."""
    m = n - 1
    x = qrel[s, m]
    qrel[s, m] = -1
    if m == 0:
        return
    k = 0
    while True:
        c = 2 * k + 1
        if c >= m:
            break
        if c + 1 < m and qrel[s, c + 1] < qrel[s, c]:
            c += 1
        if qrel[s, c] >= x:
            break
        qrel[s, k] = qrel[s, c]
        k = c
    qrel[s, k] = x


@njit(cache=True, inline=_INLINE)
def _releases(s, t, width, sms):
    """Free MSHRs and store-queue entries whose request completed by cycle t.

    A returning load i updates CRIT's P_global = max(P_global, P_i + L_i) (paper 004 section
    3.1.1) and CRISP's adjusted load critical path the same way (paper 000 section 3.6), with
    L_i counted from the L1 miss (paper 000 section 2.2). The issue-slot LCP counts in slots
    (``width`` per cycle), so its latencies are scaled by ``width``. Returns come off the
    heaps' roots in time order; the maxima do not depend on the order.
    """
    si, mi, qrel = sms.si, sms.mi, sms.qrel
    if t >= si[s, SI_MSHR_NEXT]:
        n = si[s, SI_MSHR_BUSY]
        while n > 0 and mi[s, 0, MI_REL] <= t:
            lat = mi[s, 0, MI_REL] - mi[s, 0, MI_MISS]
            if mi[s, 0, MI_TSC] + lat > si[s, SI_CRIT]:
                si[s, SI_CRIT] = mi[s, 0, MI_TSC] + lat
            if mi[s, 0, MI_TSL] + lat > si[s, SI_LCP]:
                si[s, SI_LCP] = mi[s, 0, MI_TSL] + lat
            if mi[s, 0, MI_TSL_SLOT] + lat * width > si[s, SI_LCP_SLOT]:
                si[s, SI_LCP_SLOT] = mi[s, 0, MI_TSL_SLOT] + lat * width
            _mshr_pop(s, n, mi)
            n -= 1
        si[s, SI_MSHR_BUSY] = n
        si[s, SI_MSHR_NEXT] = mi[s, 0, MI_REL] if n > 0 else BIG
    if t >= si[s, SI_SQ_NEXT]:
        n = si[s, SI_SQ_BUSY]
        while n > 0 and qrel[s, 0] <= t:
            _sq_pop(s, n, qrel)
            n -= 1
        si[s, SI_SQ_BUSY] = n
        si[s, SI_SQ_NEXT] = qrel[s, 0] if n > 0 else BIG


@njit(cache=True, inline=_INLINE)
def _flush(s, b, gpu, sms, cnt):
    """Count SM s's skipped cycles up to b (inclusive) with its last idle classification.

    Equalizer samples every G_EQ_PERIOD cycles (paper 001 section IV): each multiple of the
    period inside the gap is one sample of the unchanged warp states.
    """
    fp, gi = gpu.fp, gpu.gi
    si, sg, acc, se = sms.si, cnt.sg, cnt.acc, cnt.se
    a = si[s, SI_GAP]
    if b < a:
        return
    n = b - a + 1
    cnt.kinds[si[s, SI_KIND]] += n
    acc[A_WARPS] += n * sg[s, A_WARPS - A_CLASS0]
    acc[A_SLOT_LOAD_STALL] += n * sg[s, A_SLOT_LOAD_STALL - A_CLASS0]
    acc[A_SLOT_STORE_STALL] += n * sg[s, A_SLOT_STORE_STALL - A_CLASS0]
    period = int(fp[G_EQ_PERIOD])
    shift = gi[GS_EQ_SHIFT]
    m = _floor_period(b, period, shift) - _floor_period(a - 1, period, shift)
    if m > 0:
        acc[A_EQ_SAMPLES] += m
        se[s, E_SAMPLES] += m
        for k in range(A_EQ0, N_ACC):
            acc[k] += m * sg[s, k - A_CLASS0]
            se[s, E_ACTIVE + k - A_EQ0] += m * sg[s, k - A_CLASS0]
    lead = si[s, SI_LEAD_UNTIL]
    if lead > a:
        acc[A_LEAD] += min(b + 1, lead) - a
    si[s, SI_LCP] += n * int(sg[s, A_LOAD_STALL - A_CLASS0])
    si[s, SI_LCP_SLOT] += n * int(sg[s, A_SLOT_LOAD_STALL - A_CLASS0] * fp[G_ISSUE_WIDTH] + 0.5)
    si[s, SI_GAP] = b + 1


# --- Issue: scoreboard, units, warp scheduler -----------------------------------------------

@njit(cache=True, inline=_INLINE)
def _operand_wait(s, w, t, pi, wi, done):
    """When warp w's next instruction has its operands, and whether it waits for a load.

    The scoreboard: an instruction is ready when its producers' results are in (done <= t), so
    a returned cycle <= t means ready. A wait found is cached in WI_WAIT and WI_WMEM: a warp's
    results only change when it issues or when the LSU completes one of its loads (which
    clears the cache).
    """
    r = wi[s, w, WI_WAIT]
    if r > t:
        return r, wi[s, w, WI_WMEM] == 1
    i = wi[s, w, WI_PC]
    r = 0
    on_load = False
    d = pi[PI_DEP0, i]
    if d >= 0 and done[s, w, d] > t:
        r = done[s, w, d]
        on_load = pi[PI_OP, d] == OP_LD
    d = pi[PI_DEP1, i]
    if d >= 0 and done[s, w, d] > t:
        if done[s, w, d] > r:
            r = done[s, w, d]
        on_load = on_load or pi[PI_OP, d] == OP_LD
    if r > t:
        wi[s, w, WI_WAIT] = r
        wi[s, w, WI_WMEM] = 1 if on_load else 0
    return r, on_load


@njit(cache=True, inline=_INLINE)
def _unit_issue(s, w, i, o, t, n_alu, gpu, prog, sms, cnt):
    """Hand warp w's ready instruction i (opcode o) to its unit at cycle t, if the unit is free.

    ALU: at most G_ALU_WIDTH a cycle (``n_alu`` already went). SFU: one every G_SFU_II cycles.
    Memory: the LSU takes a new instruction only once it has sent every transaction of the last
    one (_lsu sends one a cycle; the result is pending, done = BIG, until then). A barrier needs
    no unit. Sets the instruction's result cycle; returns U_ISSUED, U_UNIT_BUSY or U_LSU_BUSY.
    """
    fp, si, done, acc = gpu.fp, sms.si, sms.done, cnt.acc
    if o == OP_ALU:
        if n_alu >= int(fp[G_ALU_WIDTH]):
            return U_UNIT_BUSY
        done[s, w, i] = t + _cyc(fp[G_ALU_LAT])
        acc[A_ALU] += 1
    elif o == OP_SFU:
        if si[s, SI_SFU_FREE] > t:
            return U_UNIT_BUSY
        done[s, w, i] = t + _cyc(fp[G_SFU_LAT])
        si[s, SI_SFU_FREE] = t + _cyc(fp[G_SFU_II])
        acc[A_SFU] += 1
        acc[A_SFU_BUSY] += _cyc(fp[G_SFU_II])
    elif o == OP_DP:
        if si[s, SI_DP_FREE] > t:
            return U_UNIT_BUSY
        done[s, w, i] = t + _cyc(fp[G_DP_LAT])
        si[s, SI_DP_FREE] = t + _cyc(fp[G_DP_II])
        acc[A_DP] += 1
    elif o == OP_BAR:
        done[s, w, i] = t
        acc[A_BAR] += 1
    else:
        if si[s, SI_LSU_W] >= 0:
            return U_LSU_BUSY
        si[s, SI_LSU_W] = w
        si[s, SI_LSU_I] = i
        si[s, SI_LSU_LEFT] = prog.pi[PI_TRANS, i]
        si[s, SI_LSU_MAXRET] = t
        si[s, SI_LSU_PEND] = -1
        done[s, w, i] = BIG
        if o == OP_LD:
            acc[A_GLD] += 1
        elif o == OP_ST:
            acc[A_GST] += 1
        else:
            acc[A_SHARED] += 1
    return U_ISSUED


@njit(cache=True, inline=_INLINE)
def _next_instruction(s, w, o, is_mem, gi, pi, sms):
    """Move warp w past the instruction (opcode o) it just issued.

    The next instruction of the phase, else the next iteration of the phase's loop, else the
    next phase. A barrier parks the warp until every warp of its CTA has arrived; a warp past
    its last instruction retires, or waits in W_LSU while the LSU finishes its last memory
    instruction (_lsu retires it).
    """
    wi, ci, wm = sms.wi, sms.ci, sms.wm
    nwpc = gi[K_WPC]
    fin = False
    ph = wi[s, w, WI_PH]
    pc = wi[s, w, WI_PC] + 1
    if pc == pi[PI_PH_START, ph] + pi[PI_PH_LEN, ph]:
        wi[s, w, WI_IT] += 1
        pc = pi[PI_PH_START, ph]
        if wi[s, w, WI_IT] == pi[PI_PH_ITERS, ph]:
            wi[s, w, WI_IT] = 0
            wi[s, w, WI_PH] = ph + 1
            if ph + 1 == gi[K_N_PH]:
                fin = True
            else:
                pc = pi[PI_PH_START, ph + 1]
    wi[s, w, WI_PC] = pc
    if o == OP_BAR:
        wi[s, w, WI_ST] = W_BARRIER
        _wm_del(wm, s, WM_ACT, w)
        c = w // nwpc
        ci[s, c, CI_BAR] += 1
        if ci[s, c, CI_BAR] == nwpc:
            ci[s, c, CI_BAR] = 0
            for w2 in range(c * nwpc, (c + 1) * nwpc):
                if wi[s, w2, WI_ST] != W_BARRIER:
                    continue
                if wi[s, w2, WI_PH] == gi[K_N_PH]:
                    _retire(s, w2, gi, sms)
                else:
                    wi[s, w2, WI_ST] = W_ACTIVE
                    _wm_add(wm, s, WM_ACT, w2)
    elif fin:
        _wm_del(wm, s, WM_ACT, w)
        if is_mem:
            wi[s, w, WI_ST] = W_LSU
        else:
            _retire(s, w, gi, sms)


@njit(cache=True, inline=_INLINE)
def _issue(s, t, sample, gpu, prog, sms, cnt):
    """The warp scheduler of SM s at cycle t: issue up to G_ISSUE_WIDTH ready instructions.

    Resident warps are scanned in loose round-robin order from SI_RR; a warp issues when its
    operands are ready (_operand_wait) and its unit takes the instruction (_unit_issue). On an
    Equalizer sample cycle the scan goes on past full issue to count every warp's state (paper
    001 section IV); otherwise it stops there. Returns a Scan.

    Only the warps whose answer is not known are visited (_candidates, in the same order):
    a warp in the waiting set (WM_WAIT) would only return its cached wait, and while the LSU is
    busy a warp in the blocked set (WM_BLK) would only find the LSU busy, so both sets are
    counted as a whole. Where the order matters (a blocked warp visited before the issue slots
    are used up sets ``lsu_blocked``; after, on a sample cycle, it does not) the blocked set is
    visited instead: on sample cycles, and while the LSU is free (the first blocked warp
    visited then takes it, so none of the rest has been visited yet when it is taken). A
    non-sample cycle that fills its issue slots uses nothing but ``n_iss``.
    """
    gi, si, wi, done, pi = gpu.gi, sms.si, sms.wi, sms.done, prog.pi
    wm, wt, wq = sms.wm, sms.wt, sms.wq
    width = int(gpu.fp[G_ISSUE_WIDTH])
    nw = gi[K_SLOTS] * gi[K_WPC]
    _expire_waits(s, t, nw, si, wi, wm, wt)
    _expire_wheel(s, t, si, wi, wm, wq)
    n_iss = 0
    n_alu = 0
    lsu_new = False
    struct = False
    n_xalu = 0
    # the waiting set, as the scan would count each of its warps
    n_wait = si[s, SI_NW]
    n_act = n_wait
    mem_raw = si[s, SI_NW_MEM] > 0
    alu_raw = si[s, SI_NW_MEM] < n_wait
    ev = min(si[s, SI_W_MIN], _wheel_min(s, t, si))
    # the blocked set while the LSU is busy
    skip_blk = si[s, SI_LSU_W] >= 0 and not sample
    n_xmem = 0
    lsu_blocked = False
    if skip_blk:
        n_act += si[s, SI_N_BLK]
        n_xmem += si[s, SI_N_BLK]
        lsu_blocked = si[s, SI_N_BLK] > 0
    rr = si[s, SI_RR]
    last = -1
    # Positions rr..nw-1, then 0..rr-1, a word of candidates at a time. Only an issue can
    # change the sets at later positions (a barrier releasing warps further on, which a full
    # scan visits this cycle; the LSU being taken), so the word is read again after one.
    # With both sets empty (as on a compute-bound SM) every active warp is a candidate: the
    # positions are then walked one by one, which is cheaper than picking bits.
    dense = si[s, SI_NW] == 0 and si[s, SI_N_BLK] == 0
    stop = False
    for lap in range(2):
        lo = rr if lap == 0 else 0
        hi = nw if lap == 0 else rr
        if stop or lo >= hi:
            continue
        j = lo >> 5
        m = 0 if dense else _candidates(wm, s, j, lo, hi, skip_blk)
        p = lo
        while True:
            if dense:
                if p >= hi:
                    break
                w = p
                p += 1
                if wi[s, w, WI_ST] != W_ACTIVE:
                    continue
            else:
                while m == 0:
                    j += 1
                    if (j << 5) >= hi:
                        break
                    m = _candidates(wm, s, j, j << 5, hi, skip_blk)
                if m == 0:
                    break
                b = m & -m
                m ^= b
                w = (j << 5) + _low_bit(b)
            n_act += 1
            r, on_load = _operand_wait(s, w, t, pi, wi, done)
            if r > t:
                n_wait += 1
                if on_load:
                    mem_raw = True
                else:
                    alu_raw = True
                if r < ev:
                    ev = r
                if r - t >= W_LONG or not dense:
                    _wait_add(s, w, t, on_load, si, wi, wm, wt, wq)
                continue
            i = wi[s, w, WI_PC]
            o = pi[PI_OP, i]
            is_mem = o == OP_LD or o == OP_ST or o == OP_SH
            if n_iss >= width:
                # Issue slots are used up; scanning on only for Equalizer's sample.
                if is_mem:
                    n_xmem += 1
                    _blk_add(s, w, si, wm)
                elif o != OP_BAR:
                    n_xalu += 1
                continue
            u = _unit_issue(s, w, i, o, t, n_alu, gpu, prog, sms, cnt)
            if u == U_UNIT_BUSY:
                struct = True
                n_xalu += 1
                if o == OP_SFU and si[s, SI_SFU_FREE] < ev:
                    ev = si[s, SI_SFU_FREE]
                elif o == OP_DP and si[s, SI_DP_FREE] < ev:
                    ev = si[s, SI_DP_FREE]
                continue
            if u == U_LSU_BUSY:
                n_xmem += 1
                lsu_blocked = True
                _blk_add(s, w, si, wm)
                continue
            if o == OP_ALU:
                n_alu += 1
            elif is_mem:
                lsu_new = True
                _blk_del(s, w, si, wm)
                if not skip_blk and not sample:
                    # the LSU is taken: every blocked warp left finds it busy
                    skip_blk = True
                    n_act += si[s, SI_N_BLK]
                    n_xmem += si[s, SI_N_BLK]
                    if si[s, SI_N_BLK] > 0:
                        lsu_blocked = True
            n_iss += 1
            last = w
            if not is_mem and done[s, w, i] > wi[s, w, WI_LD]:
                wi[s, w, WI_LD] = done[s, w, i]
            _next_instruction(s, w, o, is_mem, gi, pi, sms)
            if n_iss >= width and not sample:
                stop = True
                break
            if not dense:
                m = _candidates(wm, s, j, w + 1, hi, skip_blk)
    cnt.acc[A_INSTS] += n_iss
    if n_alu > 0:
        cnt.acc[A_ALU_BUSY] += 1
    if last >= 0:
        si[s, SI_RR] = last + 1 if last + 1 < nw else 0
    return Scan(n_iss, mem_raw, alu_raw, struct, lsu_new, lsu_blocked, n_act, n_wait, n_xalu,
                n_xmem, ev)


# --- The load/store unit --------------------------------------------------------------------

@njit(cache=True, inline=_INLINE)
def _load_transaction(s, t, i, gpu, prog, sms, cnt):
    """One transaction of global load i: returns the cycle its data is back, -1 if its L1 miss
    finds every MSHR busy (it waits, and tries again next cycle with the same L1 outcome).

    It hits L1 (L1_LAT cycles) or misses: it then holds an MSHR until the data returns from L2
    or DRAM.
    """
    fp, gi, si, mi, rng, acc = gpu.fp, gpu.gi, sms.si, sms.mi, sms.rng, cnt.acc
    pf = prog.pf
    if si[s, SI_LSU_PEND] < 0:
        p = pf[PF_L1, i]
        if gi[K_FOOT] > 0:
            # Active warps' footprint beyond L1 capacity lowers the hit rate; a paused CTA
            # touches no lines, so its data is evicted by the active ones (paper 001 III-A).
            act = max(si[s, SI_N_CTAS] - si[s, SI_PAUSED], 1)
            cap = fp[G_L1_BYTES] / (act * gi[K_WPC] * gi[K_FOOT])
            if cap < 1.0:
                p *= cap
        si[s, SI_LSU_PEND] = 1 if _uniform(rng, s) < p else 0
    if si[s, SI_LSU_PEND] == 1:
        ret = t + _cyc(fp[G_L1_LAT])
        acc[A_L1_ACC] += 1
        acc[A_L1_HIT] += 1
    else:
        if si[s, SI_MSHR_BUSY] >= int(fp[G_N_MSHR]):
            return -1
        acc[A_L1_ACC] += 1
        acc[A_L2_ACC] += 1
        if _uniform(rng, s) < pf[PF_L2, i]:
            acc[A_L2_HIT] += 1
            ret = _l2_return(t, fp)
        else:
            acc[A_DRAM_RD] += 1
            ret = _dram_return(t, fp, gpu.chn, _uniform(rng, s))
        if si[s, SI_LEAD_UNTIL] <= t:
            # A miss while no leading load is outstanding starts a new cluster: it is a
            # leading load (LEAD) and a contributor miss (MISS), counted from the L1 miss
            # (paper 000 section 2). Misses overlapping the leading load are not, even if
            # they outlive it: in figure 6, D leads after B returns although C is still
            # outstanding (LEAD = A + B + D = 18, MISS = 3 misses).
            si[s, SI_LEAD_UNTIL] = ret
            acc[A_MISS] += 1
        si[s, SI_MSHR_OCC] += ret - t
        # CRIT and CRISP copy the running critical path into the miss's timestamp.
        _mshr_push(s, si[s, SI_MSHR_BUSY], ret, t, si[s, SI_CRIT], si[s, SI_LCP],
                   si[s, SI_LCP_SLOT], mi)
        si[s, SI_MSHR_BUSY] += 1
        if ret < si[s, SI_MSHR_NEXT]:
            si[s, SI_MSHR_NEXT] = ret
    si[s, SI_LSU_PEND] = -1
    acc[A_GLD_TRANS] += 1
    return ret


@njit(cache=True, inline=_INLINE)
def _store_transaction(s, t, i, gpu, prog, sms, cnt):
    """One transaction of global store i; False if the store queue is full (it waits).

    It holds a store-queue entry until the write is acknowledged by L2 or, for the fraction
    written through, by DRAM.
    """
    fp, si, qrel, rng, acc = gpu.fp, sms.si, sms.qrel, sms.rng, cnt.acc
    if si[s, SI_SQ_BUSY] >= int(fp[G_SQ_SIZE]):
        return False
    acc[A_L2_ACC] += 1
    if _uniform(rng, s) < prog.pf[PF_WR, i]:
        acc[A_DRAM_WR] += 1
        ack = _dram_return(t, fp, gpu.chn, _uniform(rng, s))
    else:
        acc[A_L2_HIT] += 1
        ack = _l2_return(t, fp)
    _sq_push(s, si[s, SI_SQ_BUSY], ack, qrel)
    si[s, SI_SQ_BUSY] += 1
    si[s, SI_SQ_OCC] += ack - t
    if ack < si[s, SI_SQ_NEXT]:
        si[s, SI_SQ_NEXT] = ack
    acc[A_GST_TRANS] += 1
    return True


@njit(cache=True, inline=_INLINE)
def _lsu(s, t, gpu, prog, sms, cnt):
    """One cycle of the load/store unit: one transaction of its current instruction.

    Returns 0 idle, 1 a transaction went out, 2 blocked on full MSHRs, 3 blocked on a full
    store queue. Once the instruction's last transaction is out, its result cycle is the
    latest of its transactions' returns (a store's result is its issue: stores do not block
    the warp), and a warp that was waiting only for it retires.
    """
    si, wi, done = sms.si, sms.wi, sms.done
    w = si[s, SI_LSU_W]
    if w < 0:
        return 0
    i = si[s, SI_LSU_I]
    o = prog.pi[PI_OP, i]
    if o == OP_LD or o == OP_ST:
        # up to G_LSU_TPC global transactions a cycle (one on GPUs that do not set it)
        sent = 0
        while True:
            if o == OP_LD:
                ret = _load_transaction(s, t, i, gpu, prog, sms, cnt)
                if ret < 0:
                    break
            else:
                if not _store_transaction(s, t, i, gpu, prog, sms, cnt):
                    break
                ret = t
            sent += 1
            if ret > si[s, SI_LSU_MAXRET]:
                si[s, SI_LSU_MAXRET] = ret
            si[s, SI_LSU_LEFT] -= 1
            if si[s, SI_LSU_LEFT] == 0 or sent >= int(gpu.fp[G_LSU_TPC]):
                break
        if sent == 0:
            return 2 if o == OP_LD else 3
    else:
        cnt.acc[A_SH_TRANS] += 1
        ret = t + _cyc(gpu.fp[G_SHARED_LAT])
        if ret > si[s, SI_LSU_MAXRET]:
            si[s, SI_LSU_MAXRET] = ret
        si[s, SI_LSU_LEFT] -= 1
    cnt.acc[A_MEM_BUSY] += 1
    if si[s, SI_LSU_LEFT] == 0:
        r = si[s, SI_LSU_MAXRET]
        done[s, w, i] = r
        if r > wi[s, w, WI_LD]:
            wi[s, w, WI_LD] = r
        si[s, SI_LSU_W] = -1
        _wait_del(s, w, si, wi, sms.wm, sms.wt, sms.wq)
        wi[s, w, WI_WAIT] = 0                  # its result is now known: re-check the warp
        if wi[s, w, WI_ST] == W_LSU:
            _retire(s, w, gpu.gi, sms)
    return 1


@njit(cache=True, inline=_INLINE)
def _memory_step(s, t, gpu, prog, sms, cnt):
    """The LSU's part of cycle t: (opcode of its instruction, -1 if idle; _lsu's code 0-3).

    A transaction that can only wait for a full MSHR file or store queue is answered here
    (_lsu would answer the same), the common case of a memory-bound SM.
    """
    si, fp = sms.si, gpu.fp
    if si[s, SI_LSU_W] < 0:
        return -1, 0
    op = prog.pi[PI_OP, si[s, SI_LSU_I]]
    if op == OP_LD and si[s, SI_LSU_PEND] == 0 and si[s, SI_MSHR_BUSY] >= int(fp[G_N_MSHR]):
        return op, 2                           # a drawn miss still waits for an MSHR
    if op == OP_ST and si[s, SI_SQ_BUSY] >= int(fp[G_SQ_SIZE]):
        return op, 3
    return op, _lsu(s, t, gpu, prog, sms, cnt)


# --- Classifying the cycle ------------------------------------------------------------------

@njit(cache=True, inline=_INLINE)
def _count_full_issue(s, lsu, load_out, si, acc):
    """Counters of a cycle that issued at full width (and is no Equalizer sample)."""
    acc[A_COMPUTE] += 1
    acc[A_WARPS] += si[s, SI_LIVE]
    if load_out:
        acc[A_LOAD_OUT] += 1
        acc[A_OVL_COMP] += 1
    if lsu == 2:
        acc[A_MEM_STALL] += 1
    elif lsu == 3:
        acc[A_WRITE_STALL] += 1


@njit(cache=True, inline=_INLINE)
def _crisp_class(s, sc, width, lsu, lsu_op, load_out, fp, si):
    """The class of a cycle short of full issue and the rule for its idle issue slots.

    CRISP cycle classification, paper 000 section 3.5. Full-width issue is computation; a
    partial issue is computation only with an arithmetic RAW or structural hazard; other
    cycles are idle and go through rules A-D in order. There are no branch mispredicts or
    fetch stalls in this model, so those terms of the rules never fire. Returns (class,
    slot rule), each A_COMPUTE, A_LOAD_STALL or A_STORE_STALL.
    """
    store_out = si[s, SI_SQ_BUSY] > 0
    full = (si[s, SI_MSHR_BUSY] >= int(fp[G_N_MSHR]) or si[s, SI_SQ_BUSY] >= int(fp[G_SQ_SIZE])
            or lsu >= 2)
    rule = A_COMPUTE
    if (lsu == 1 and lsu_op == OP_SH) or not (load_out or store_out):
        rule = A_COMPUTE                                   # rule A (bank conflict / no misses)
    elif load_out:
        if sc.mem_raw:
            rule = A_LOAD_STALL                            # rule B: RAW on the LSU
        elif sc.alu_raw or sc.struct:
            rule = A_COMPUTE                               # rule B: arithmetic hazard
        elif full:
            rule = A_LOAD_STALL                            # rule B: MSHR/LSQ full
    elif full:
        rule = A_STORE_STALL                               # rule C
    # else rule D: computation
    busy = sc.n_iss >= width or (sc.n_iss > 0 and (sc.alu_raw or sc.struct))
    cls = A_COMPUTE if busy else rule
    # gpudb's issue-slot accounting: the idle slots of every cycle short of full issue go
    # through rules A-D (a one-issue cycle is half computation, half what the rules say),
    # with two readings of the rules the paper leaves open. Rule A's bank conflicts, resolved
    # at pipeline speed, include the LSU replaying a divergent global access (its second and
    # later transactions) while a ready memory instruction waits for it and the miss and
    # store buffers have room. Rule B's load stall includes an SM whose warps have all issued
    # their last instruction and wait only for loads to return before their CTAs complete.
    replay = lsu == 1 and not sc.lsu_new and sc.lsu_blocked and not full
    if replay:
        slot_rule = A_COMPUTE
    elif (load_out and sc.n_act == 0 and rule == A_COMPUTE
          and not (lsu == 1 and lsu_op == OP_SH)):
        slot_rule = A_LOAD_STALL
    else:
        slot_rule = rule
    return cls, slot_rule


@njit(cache=True, inline=_INLINE)
def _kind(cls, load_out, empty, lsu, n_iss, width):
    """The kind of a cycle _record_cycle counts (see N_KIND), in [0, N_KIND * (width + 1))."""
    k = (cls - A_LOAD_STALL) * 2 + (1 if load_out else 0)
    k = k * 2 + (1 if empty else 0)
    k = k * 3 + (1 if lsu == 2 else (2 if lsu == 3 else 0))
    return k * (width + 1) + n_iss


@njit(cache=True, inline=_INLINE)
def _add_kinds(width, acc, kinds):
    """Add the 0/1 counters of the cycles counted by kind to acc, and clear ``kinds``."""
    for k in range(kinds.shape[0]):
        c = kinds[k]
        if c == 0:
            continue
        kinds[k] = 0
        n_iss = k % (width + 1)
        r = k // (width + 1)
        lsu_c = r % 3
        r //= 3
        empty = r % 2
        r //= 2
        load_out = r % 2
        r //= 2
        cls = A_LOAD_STALL + r
        if n_iss == 0 and load_out == 1:
            acc[A_STALL] += c
        acc[cls] += c
        if load_out == 1:
            acc[A_LOAD_OUT] += c
            if cls == A_COMPUTE:
                acc[A_OVL_COMP] += c
        if lsu_c == 1:
            acc[A_MEM_STALL] += c
        elif lsu_c == 2:
            acc[A_WRITE_STALL] += c
        if empty == 1:
            acc[A_EMPTY] += c


@njit(cache=True, inline=_INLINE)
def _record_cycle(s, sc, width, sample, cls, slot_rule, lsu, load_out, keep, sms, cnt):
    """Count a cycle short of full issue, and keep what _flush needs to repeat it.

    A cycle of an SM with no resident CTA is empty, in no class: it lasts as long as the SMs
    that still have work take, so it is neither computation nor memory. Its 0/1 counters are
    counted by its kind (N_KIND). ``keep``: the SM skips the cycles after this one, so _flush
    will count them like this one (SI_KIND and sg are read for nothing else, so they are
    written only then).
    """
    si, sg, acc, se = sms.si, cnt.sg, cnt.acc, cnt.se
    n_iss = sc.n_iss
    empty = si[s, SI_N_CTAS] == 0
    idle = 0.0 if empty else (width - n_iss) / width
    kind = _kind(cls, load_out, empty, lsu, n_iss, width)
    cnt.kinds[kind] += 1
    warps = float(si[s, SI_LIVE])
    acc[A_WARPS] += warps
    if slot_rule == A_LOAD_STALL:
        acc[A_SLOT_LOAD_STALL] += idle
    elif slot_rule == A_STORE_STALL:
        acc[A_SLOT_STORE_STALL] += idle
    if sample:
        acc[A_EQ_SAMPLES] += 1
        acc[A_EQ_ISSUED] += n_iss
        se[s, E_SAMPLES] += 1
        acc[A_EQ_ACTIVE] += sc.n_act
        acc[A_EQ_WAIT] += sc.n_wait
        acc[A_EQ_XALU] += sc.n_xalu
        acc[A_EQ_XMEM] += sc.n_xmem
        se[s, E_ACTIVE] += sc.n_act
        se[s, E_WAIT] += sc.n_wait
        se[s, E_XALU] += sc.n_xalu
        se[s, E_XMEM] += sc.n_xmem
    if keep:
        o0 = A_CLASS0
        si[s, SI_KIND] = kind
        sg[s, A_LOAD_STALL - o0] = 1.0 if cls == A_LOAD_STALL else 0.0
        sg[s, A_WARPS - o0] = warps
        sg[s, A_SLOT_LOAD_STALL - o0] = idle if slot_rule == A_LOAD_STALL else 0.0
        sg[s, A_SLOT_STORE_STALL - o0] = idle if slot_rule == A_STORE_STALL else 0.0
        sg[s, A_EQ_ACTIVE - o0] = sc.n_act
        sg[s, A_EQ_WAIT - o0] = sc.n_wait
        sg[s, A_EQ_XALU - o0] = sc.n_xalu
        sg[s, A_EQ_XMEM - o0] = sc.n_xmem
    if cls == A_LOAD_STALL:
        si[s, SI_LCP] += 1                     # adjusted LCP: load stalls add 1 cycle each
    if slot_rule == A_LOAD_STALL and not empty:
        si[s, SI_LCP_SLOT] += width - n_iss    # ... or, by issue slots, their idle slots


@njit(cache=True, inline=_INLINE)
def _next_event(s, ev, si):
    """The first cycle at which idle SM s can change: the next operand or free SFU (``ev``,
    from the scan), MSHR return, store ack or CTA end. The classification just stored in sg
    describes every cycle until then."""
    nxt = ev
    if si[s, SI_MSHR_NEXT] < nxt:
        nxt = si[s, SI_MSHR_NEXT]
    if si[s, SI_SQ_NEXT] < nxt:
        nxt = si[s, SI_SQ_NEXT]
    if si[s, SI_CTA_EV] < nxt:
        nxt = si[s, SI_CTA_EV]
    return nxt


@njit(cache=True, inline=_INLINE)
def _sm_cycle(s, t, sample, skip, launched, gpu, prog, sms, cnt):
    """Simulate cycle t of SM s: issue, one LSU step, classify the cycle, pick its next cycle.

    The scheduler (_issue) scans resident warps in loose round-robin order and issues up to
    G_ISSUE_WIDTH ready instructions (at most G_ALU_WIDTH ALU ops, one new memory instruction
    when the LSU is free, the SFU when it is free); an instruction is ready when the
    scoreboard has its producers' results (done <= t). ``sample``: t is an Equalizer sample
    cycle. Returns the instructions issued.
    """
    si, acc = sms.si, cnt.acc
    width = int(gpu.fp[G_ISSUE_WIDTH])
    sc = _issue(s, t, sample, gpu, prog, sms, cnt)
    lsu_op, lsu = _memory_step(s, t, gpu, prog, sms, cnt)
    load_out = si[s, SI_MSHR_BUSY] > 0
    if si[s, SI_LEAD_UNTIL] > t:
        acc[A_LEAD] += 1
    si[s, SI_GAP] = t + 1
    if sc.n_iss >= width and not sample:
        # Full issue: computation (paper 000 section 3.5); the scan stopped early, so only
        # the counters a busy cycle can touch are updated, and the SM runs again next cycle.
        _count_full_issue(s, lsu, load_out, si, acc)
        si[s, SI_NEXT] = t + 1
        return sc.n_iss
    cls, slot_rule = _crisp_class(s, sc, width, lsu, lsu_op, load_out, gpu.fp, si)
    busy = not skip or sc.n_iss > 0 or lsu == 1 or launched
    _record_cycle(s, sc, width, sample, cls, slot_rule, lsu, load_out, not busy, sms, cnt)
    if busy:
        si[s, SI_NEXT] = t + 1
    else:
        # Idle: nothing changes before the next event, so skip to it.
        si[s, SI_NEXT] = _next_event(s, sc.ev, si)
    return sc.n_iss


# --- Intervals and the public kernels -------------------------------------------------------

@njit(cache=True, **_COLD)
def _end_interval(t_end, gpu, sms, cnt):
    """Close an interval at cycle t_end: read CRIT and CRISP's critical paths, then restart them.

    Both counters restart at zero each interval (as the papers' counters do per kernel); a miss
    still outstanding is treated as issued at t_end with a zero timestamp, so an interval's
    critical path never exceeds its cycles. With GS_KEEP_PATHS they are read but not restarted
    (the sampled engine restarts them at its intervals' ends, sim.sampled).
    """
    fp, si, mi, acc = gpu.fp, sms.si, sms.mi, cnt.acc
    width = int(fp[G_ISSUE_WIDTH])
    _add_kinds(width, acc, cnt.kinds)
    for s in range(gpu.gi[GS_N_SM]):
        acc[A_CRIT] += si[s, SI_CRIT]
        acc[A_LCP] += si[s, SI_LCP]
        acc[A_LCP_SLOT] += si[s, SI_LCP_SLOT] / width
        # Little's law on the SM's miss and store buffers: the interval cannot be shorter than
        # the entry-time its requests hold divided by the entries (latencies are set by the
        # memory side, so this bound holds at any core clock).
        mshr_ns = si[s, SI_MSHR_OCC] * fp[R_CYC_NS] / fp[G_N_MSHR]
        sq_ns = si[s, SI_SQ_OCC] * fp[R_CYC_NS] / fp[G_SQ_SIZE]
        if mshr_ns > acc[A_MSHR_MIN_NS]:
            acc[A_MSHR_MIN_NS] = mshr_ns
        if sq_ns > acc[A_SQ_MIN_NS]:
            acc[A_SQ_MIN_NS] = sq_ns
        si[s, SI_MSHR_OCC] = 0
        si[s, SI_SQ_OCC] = 0
        if gpu.gi[GS_KEEP_PATHS] == 0:
            _restart_paths(s, t_end, si, mi)


@njit(cache=True, inline=_INLINE)
def _restart_paths(s, t, si, mi):
    """SM s's critical paths restart at zero at cycle t; a miss still outstanding counts as
    issued at t with a zero timestamp."""
    si[s, SI_CRIT] = 0
    si[s, SI_LCP] = 0
    si[s, SI_LCP_SLOT] = 0
    for k in range(mi.shape[1]):
        if mi[s, k, MI_REL] >= 0:
            mi[s, k, MI_MISS] = t
            mi[s, k, MI_TSC] = 0
            mi[s, k, MI_TSL] = 0
            mi[s, k, MI_TSL_SLOT] = 0


@njit(cache=True)
def restart_paths(t, n_sm, si, mi):
    """Every SM's critical paths restart at cycle t, as _end_interval restarts them (the
    sampled engine's intervals end outside it: GS_KEEP_PATHS)."""
    for s in range(n_sm):
        _restart_paths(s, t, si, mi)


@njit(cache=True, inline=_INLINE)
def _drained(n_sm, si):
    """No SM has a load or store outstanding."""
    for s in range(n_sm):
        if si[s, SI_MSHR_BUSY] > 0 or si[s, SI_SQ_BUSY] > 0:
            return False
    return True


@njit(cache=True, **_NO_REFCOUNT)
def initial_fill(gpu, prog, sms):
    """Hand out the first CTAs round-robin over the SMs, as the GPU's work distributor does."""
    gi, si = gpu.gi, sms.si
    limit = min(gi[GS_CTA_LIMIT], gi[K_SLOTS])
    more = True
    while more:
        more = False
        for s in range(gi[GS_N_SM]):
            if si[s, SI_N_CTAS] < min(limit, si[s, SI_LIMIT]) and gi[GS_CTA_NEXT] < gi[K_N_CTAS]:
                _launch(s, 0, gpu, prog, sms)
                more = True


@njit(cache=True, **_NO_REFCOUNT)
def advance(boundary, cycle_end, skip, gpu, prog, sms, cnt):
    """Simulate until ``boundary`` warp instructions have issued GPU-wide, cycle ``cycle_end``
    is reached, or the kernel ends, whichever comes first.

    Work boundary: the interval ends at the end of the first cycle in which the count reaches
    the boundary; it may overshoot by at most G_ISSUE_WIDTH * n_sm - 1 instructions. Cycle
    boundary (BIG: none): the interval covers the cycles before ``cycle_end`` and nothing of
    cycle_end itself; SMs asleep past it have their skipped cycles up to cycle_end - 1 counted
    here, the rest in the next interval. Counters accumulate into ``cnt``; gi[GS_T] is left at
    the first cycle of the next interval (or the end). Returns ST_BOUNDARY, ST_DONE or
    ST_DEADLOCK.
    """
    fp, gi, si = gpu.fp, gpu.gi, sms.si
    n_sm = gi[GS_N_SM]
    _derive(fp, gi)
    period = int(fp[G_EQ_PERIOD])
    while True:
        t = BIG
        for s in range(n_sm):
            if si[s, SI_NEXT] < t:
                t = si[s, SI_NEXT]
        # The SMs due at t, in index order, listed without a branch (whether an SM is due is
        # as good as random, and a mispredicted test per SM per step cost more than this).
        n_due = 0
        for s in range(n_sm):
            si[n_due, SI_DUE] = s
            n_due += 1 if si[s, SI_NEXT] == t else 0
        if t >= cycle_end and t < BIG:
            # Nothing happens before cycle_end: close the interval before any event of t.
            for s in range(n_sm):
                _flush(s, cycle_end - 1, gpu, sms, cnt)
            _end_interval(cycle_end, gpu, sms, cnt)
            gi[GS_T] = cycle_end
            return ST_BOUNDARY
        limit = min(gi[GS_CTA_LIMIT], gi[K_SLOTS])
        for k in range(n_due):
            s = si[k, SI_DUE]
            # Each helper is entered only when it has work.
            if si[s, SI_GAP] < t:
                _flush(s, t - 1, gpu, sms, cnt)
            if t >= si[s, SI_MSHR_NEXT] or t >= si[s, SI_SQ_NEXT]:
                _releases(s, t, int(fp[G_ISSUE_WIDTH]), sms)
            if t >= si[s, SI_CTA_EV]:
                _complete_ctas(s, t, gi, sms)
            si[s, SI_LAUNCHED] = 0
            if si[s, SI_PAUSED] == 0 and si[s, SI_N_CTAS] <= si[s, SI_LIMIT]:
                # nothing paused, nothing to pause (always so without per-SM limits)
                if si[s, SI_N_CTAS] < limit and gi[GS_CTA_NEXT] < gi[K_N_CTAS]:
                    si[s, SI_LAUNCHED] = 1 if _dispatch(s, t, gpu, prog, sms) else 0
            else:
                si[s, SI_LAUNCHED] = 1 if _limit_sm(s, t, limit, gpu, prog, sms) else 0
        if gi[GS_CTAS_DONE] == gi[K_N_CTAS] and _drained(n_sm, si):
            for s in range(n_sm):
                _flush(s, t - 1, gpu, sms, cnt)
            _end_interval(t, gpu, sms, cnt)
            gi[GS_T] = t
            return ST_DONE
        if t >= BIG:
            return ST_DEADLOCK
        sample = _floor_period(t, period, gi[GS_EQ_SHIFT]) * period == t
        issued, issuing = 0, 0
        for k in range(n_due):
            s = si[k, SI_DUE]
            n_iss = _sm_cycle(s, t, sample, skip, si[s, SI_LAUNCHED] == 1, gpu, prog, sms, cnt)
            issued += n_iss
            issuing += 1 if n_iss > 0 else 0
        gi[GS_INSTS] += issued
        gi[GS_ISSUE_STEPS] += issuing
        gi[GS_SM_STEPS] += n_due
        if gi[GS_INSTS] >= boundary:
            for s in range(n_sm):
                _flush(s, t, gpu, sms, cnt)
            _end_interval(t + 1, gpu, sms, cnt)
            gi[GS_T] = t + 1
            return ST_BOUNDARY


@njit(cache=True, inline=_INLINE)
def _rescale_stamp(x, t, old_ns, new_ns, switch_ns):
    """A future stamp set by memory-side latency, re-expressed at a new core clock."""
    if x <= t or x >= BIG:
        return x
    left = (x - t) * old_ns - switch_ns
    if left <= 0.0:
        return t
    return t + int(math.ceil(left / new_ns - 1e-9))


@njit(cache=True, **_NO_REFCOUNT)
def switch_setting(t, old_ns, new_ns, switch_ns, gpu, prog, sms):
    """Re-time in-flight memory requests for a new core clock at cycle t.

    Requests in flight keep their remaining time in ns (their latency is set by the fixed and
    memory clock domains), less the switching time during which the SMs are halted. Core-
    clocked stamps (ALU/SFU results) keep their cycles; per-warp and per-CTA completion stamps
    mix both and are re-timed like memory stamps, an error of at most one ALU latency.
    """
    pi = prog.pi
    si, wi, done, ci, mi, qrel = sms.si, sms.wi, sms.done, sms.ci, sms.mi, sms.qrel
    # _rescale_stamp never reverses the order of two stamps, so the MSHR and store-queue
    # heaps stay heaps.
    for s in range(gpu.gi[GS_N_SM]):
        nxt = BIG
        for k in range(mi.shape[1]):
            if mi[s, k, MI_REL] >= 0:
                mi[s, k, MI_REL] = _rescale_stamp(mi[s, k, MI_REL], t, old_ns, new_ns, switch_ns)
                nxt = min(nxt, mi[s, k, MI_REL])
        si[s, SI_MSHR_NEXT] = nxt
        nxt = BIG
        for k in range(qrel.shape[1]):
            if qrel[s, k] >= 0:
                qrel[s, k] = _rescale_stamp(qrel[s, k], t, old_ns, new_ns, switch_ns)
                nxt = min(nxt, qrel[s, k])
        si[s, SI_SQ_NEXT] = nxt
        si[s, SI_LEAD_UNTIL] = _rescale_stamp(si[s, SI_LEAD_UNTIL], t, old_ns, new_ns, switch_ns)
        si[s, SI_LSU_MAXRET] = _rescale_stamp(si[s, SI_LSU_MAXRET], t, old_ns, new_ns, switch_ns)
        for w in range(wi.shape[1]):
            if wi[s, w, WI_ST] == W_EMPTY:
                continue
            wi[s, w, WI_LD] = _rescale_stamp(wi[s, w, WI_LD], t, old_ns, new_ns, switch_ns)
            wi[s, w, WI_WAIT] = 0
            for i in range(done.shape[2]):
                if pi[PI_OP, i] == OP_LD:
                    done[s, w, i] = _rescale_stamp(done[s, w, i], t, old_ns, new_ns, switch_ns)
        nxt = BIG
        for c in range(ci.shape[1]):
            if ci[s, c, CI_ST] != 0:
                ci[s, c, CI_DONE] = _rescale_stamp(ci[s, c, CI_DONE], t, old_ns, new_ns, switch_ns)
                if ci[s, c, CI_ST] == 2:
                    nxt = min(nxt, ci[s, c, CI_DONE])
        si[s, SI_CTA_EV] = nxt
        _reset_warp_sets(s, sms)               # every WI_WAIT was cleared
        si[s, SI_NEXT] = t
