"""Wang & Chu's GPU performance model with core *and* memory frequency scaling (paper 003,
"GPGPU Performance Estimation with Core and Memory Frequency Scaling"), as pure numpy functions.

From one base run's counters (global transactions per warp, L2 hit rate, compute and shared-memory
instructions, launch shape, occupancy) and a handful of per-GPU parameters measured by
microbenchmarks (Table IV), the model predicts the kernel's time at any (core, memory) frequency
pair. All times inside the model are **core-clock cycles** ("Since we calculate the execution
time in the scope of core frequency", section IV-C); :func:`predict_time_ns` converts to ns.

Where each part comes from:

* Section IV-A, eq. 2-3: total time of many DRAM requests, unsaturated (eq. 2) and saturated
  (eq. 3); eq. 3 is also how the paper infers ``dm_del`` from a streaming benchmark
  (:func:`t_lat_light`, :func:`t_lat_saturated`, :func:`dm_del_from_streaming`).
* Section IV-A, eq. 4 and Table II: minimum DRAM latency as a linear function of core_f/mem_f
  (:func:`dram_latency_cycles`); the paper's GTX 980 fit is in :data:`GTX980_PUBLISHED`.
* Section IV-B: L2 latency 222 cycles and delay 1 cycle on the GTX 980.
* Section IV-C, eq. 5a-5b: AMAT of global memory, ``agl_lat`` and ``agl_del`` (:func:`amat`).
* Section V, eq. 6: kernel time from one round of active warps (:func:`t_exec_cycles`).
* Section V-A, eq. 7-15: kernels without shared memory; average compute per transaction (eq. 7,
  :func:`avr_comp_cycles`), compute-dominated (eq. 8-9), memory-dominated (eq. 10-11) and the two
  few-warps cases (eq. 12-13 and 14-15).
* Section V-B, eq. 16-21: kernels with shared memory, infrequent (eq. 16-17) and intensive
  (eq. 18-21) shared-memory access.
* :func:`regime` picks the case by the paper's conditions; :func:`predict_time_ns` puts it all
  together and broadcasts over arrays of target (core MHz, memory MHz).

Readings of the paper's ambiguous or apparently mistaken spots are collected in
:class:`Readings` (defaults = the reading argued for in the comments, which for the regime
conditions and eq. 11 is the paper's literal text) and explained where they are used.

Around it: :func:`predict_rows` evaluates the model over many base runs and targets at once (the
SQL functions of :mod:`gpudb.predictors.wangchu` and the fit of :mod:`gpudb.train.wangchu_fit`);
:mod:`gpudb.train.calibrate` measures :class:`Calibration` with the simulator's microbenchmarks; the
view ``wangchu_input`` maps simulator counters and measured metrics onto :class:`KernelCounters`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Regime names, as returned by regime() / predict_time_ns(..., return_regime=True).
COMPUTE = "compute"              # eq. 8-9
MEMORY = "memory"                # eq. 10-11
FEW_WARPS_SHORT = "few_warps_short_comp"   # eq. 12-13 (avr_comp <= agl_del)
FEW_WARPS_LONG = "few_warps_long_comp"     # eq. 14-15 (avr_comp >= agl_del)
SHARED_INFREQUENT = "shared_infrequent"    # eq. 16-17
SHARED_INTENSIVE = "shared_intensive"      # eq. 18-21
REGIMES = (COMPUTE, MEMORY, FEW_WARPS_SHORT, FEW_WARPS_LONG, SHARED_INFREQUENT, SHARED_INTENSIVE)


@dataclass(frozen=True)
class Calibration:
    """Per-GPU parameters of Table IV, all in **core-clock cycles** unless stated otherwise.

    The paper's "cycle is the time unit under GPU core frequency" (section IV-A, Table II).
    ``dm_lat`` is not a constant but eq. 4, ``dm_lat = 222.78 * core_f/mem_f + 277.32`` on the
    GTX 980: the slope is core cycles per unit of core_f/mem_f (i.e. memory-clock cycles; that
    part of the path runs at the memory clock) and the intercept core cycles (the core-clock
    part). ``dm_del`` is measured at the baseline ratio core_f/mem_f = 1 (Table III, section IV-C:
    "our performance model defines baseline frequency setting in which the ratio of memory
    frequency to core frequency is one"), so it is in memory-clock cycles (= core cycles at the
    baseline) and eq. 5b scales it by core_f/mem_f.
    """

    dm_lat_slope: float       # eq. 4 coefficient of core_f/mem_f; core cycles (= memory cycles)
    dm_lat_intercept: float   # eq. 4 constant; core cycles
    dm_del: float             # DRAM service time per transaction at ratio 1; memory cycles
    l2_lat: float             # L2 hit latency; core cycles (GTX 980: 222, section IV-B)
    l2_del: float             # L2 service time per transaction; core cycles (GTX 980: 1)
    sh_lat: float             # latency of one shared-memory transaction; core cycles
    inter_arr: float          # inter-arrival time of consecutive requests (eq. 2); core cycles
    inst_cycle: float         # cycles per (warp-level) compute instruction; core cycles

    def dm_lat(self, core_mhz=1.0, mem_mhz=1.0):
        """Minimum DRAM latency in core cycles at core_f/mem_f (eq. 4); ratio 1 by default."""
        return dram_latency_cycles(self, core_mhz, mem_mhz)


# What the paper publishes for the GTX 980 (eq. 4, Table III at the 700/700 baseline, section
# IV-B). sh_lat, inter_arr and inst_cycle are not published: supply them, e.g.
# Calibration(**GTX980_PUBLISHED, sh_lat=..., inter_arr=..., inst_cycle=...).
# dm_del varies mildly with the memory clock in Table III (10.06 cycles at 400/400 to 9.0 at
# 1000/1000); the model takes one value, the baseline's.
GTX980_PUBLISHED = dict(dm_lat_slope=222.78, dm_lat_intercept=277.32, dm_del=9.31,
                        l2_lat=222.0, l2_del=1.0)


@dataclass(frozen=True)
class Readings:
    """Choices where the paper is ambiguous or looks mistaken; see the comments where used.

    ``eq5a_scale_dm_lat``: eq. 5a writes ``dm_lat * (core_f/mem_f)``. False (default): the value
    of eq. 4 is already in core cycles at the target ratio (Table II's "Cycles" are core cycles
    and eq. 4 reproduces them at core 400 MHz), so it is used as is; True multiplies eq. 4 by the
    ratio again, as the letters of eq. 5a say.
    ``eq11_warps``: "wpb" (default, the paper's text: ``agl_del * #Wpb * o_itrs``) or "aw"
    (``#Aw``, the queue of all active warps that condition 10b and Fig. 7 describe).
    ``memory_conditions``: "paper" (default: 10b and 12b as printed) or "swapped" (10b and 12b
    exchanged, so the memory side, like the compute side, picks the larger of its two times).
    ``whole_rounds``: eq. 6 uses a plain quotient (default False); True rounds the number of
    rounds of active warps up.
    """

    eq5a_scale_dm_lat: bool = False
    eq11_warps: str = "wpb"
    memory_conditions: str = "paper"
    whole_rounds: bool = False


PAPER = Readings()

# The readings gpudb's SQL functions and fit use (README "Where gpudb differs from the papers"):
# eq. 11 with #Aw and conditions 10b/12b exchanged. Both are argued from the paper's own
# description (Fig. 7's queue of every active warp; the memory side choosing the larger time,
# as the compute side does) and borne out per kernel on the gtx980 7x7 grid, where eq. 11
# with #Wpb under-predicts every memory-dominated kernel by about #Aw/#Wpb (phase_alternating:
# 7.3x; 47.4/6 = 7.9); the literal text gives 50.8% MAPE there, these readings 22.5%.
GPUDB = Readings(eq11_warps="aw", memory_conditions="swapped")


@dataclass
class KernelCounters:
    """One base run's inputs (Table IV's "Nsight profiling", "kernel setup" and "source code
    analysis" rows). Per-warp quantities are warp-level counts (one instruction or transaction
    issued by a warp counts once), averaged over the kernel's warps.
    """

    gld_trans_per_warp: float     # global load + store transactions per warp, whole kernel
    l2_hit_rate: float            # L2 hit rate of the global transactions, fraction 0..1
    comp_inst_per_warp: float     # compute (non-memory) warp instructions per warp
    blocks: float                 # #B, thread blocks in the grid
    warps_per_block: float        # #Wpb
    active_sms: float             # #Asm, SMs running the kernel
    warps_per_sm: float           # #Aw, warps resident at once on one SM (occupancy x max warps)
    shm_inst_per_warp: float = 0.0  # shared-memory transactions per warp; > 0 selects section V-B
    o_itrs: float | None = None   # outer iterations per warp (Table IV o_itr); default below
    i_itrs: float | None = None   # shared transactions per warp per outer iteration (i_itr)

    def __post_init__(self):
        # Fields may be scalars or equal-shaped arrays (one element per kernel/base run: the
        # SQL function evaluates many base runs in one call).
        for name in ("gld_trans_per_warp", "blocks", "warps_per_block", "active_sms",
                     "warps_per_sm"):
            if not np.all(np.asarray(getattr(self, name), dtype=float) > 0):
                raise ValueError(f"KernelCounters.{name} must be > 0 (the model divides by it "
                                 f"or needs global transactions), got {getattr(self, name)!r}")
        hr = np.asarray(self.l2_hit_rate, dtype=float)
        if not np.all((hr >= 0.0) & (hr <= 1.0)):
            raise ValueError(f"l2_hit_rate must be a fraction in [0, 1], got {self.l2_hit_rate}")

    @property
    def uses_shared(self):
        """Whether section V-B applies (bool, or a bool array for array counters)."""
        return np.asarray(self.shm_inst_per_warp, dtype=float) > 0

    @property
    def outer_iterations(self):
        # Section V-A: "o_itrs denotes the repeat times of one computation period and one global
        # memory transaction", so without shared memory a warp runs one period per transaction:
        # o_itrs = gld_trans per warp (then avr_comp * o_itrs is the warp's whole compute time).
        # With shared memory o_itr comes from "source code analysis" (Table IV); default 1.
        if self.o_itrs is not None:
            return np.asarray(self.o_itrs, dtype=float)
        return np.where(self.uses_shared, 1.0, np.asarray(self.gld_trans_per_warp, dtype=float))

    @property
    def inner_iterations(self):
        # i_itrs "denotes the number of shared memory transactions within phase2" (section V-B),
        # one phase 2 per outer iteration: default = shared transactions per warp / o_itrs.
        if self.i_itrs is not None:
            return np.asarray(self.i_itrs, dtype=float)
        return np.asarray(self.shm_inst_per_warp, dtype=float) / self.outer_iterations


# --- Section IV: memory ----------------------------------------------------------------------

def t_lat_light(inter_arr, n_warps, dm_lat, gld_trans):
    """Eq. 2: total time of the DRAM requests of ``n_warps`` warps (#W) issuing ``gld_trans``
    transactions each when requests are infrequent (no queueing): ``interArr * #W + dm_lat *
    gld_trans``. Cycles in, cycles out."""
    return np.asarray(inter_arr) * n_warps + np.asarray(dm_lat) * gld_trans


def t_lat_saturated(dm_lat, dm_del, gld_trans, n_warps):
    """Eq. 3: total time when the memory system is saturated: ``dm_lat + dm_del * gld_trans *
    #W``. Cycles."""
    return np.asarray(dm_lat) + np.asarray(dm_del) * gld_trans * n_warps


def dm_del_from_streaming(t_lat_cycles, dm_lat, gld_trans, n_warps):
    """Eq. 3 solved for dm_del, as section IV-A infers it from a bandwidth benchmark ("we
    transfer the total execution time into cycles by multiplying the time and the core frequency
    and calculate how many memory transactions of all warps")."""
    return (np.asarray(t_lat_cycles) - dm_lat) / (np.asarray(gld_trans) * n_warps)


def dram_latency_cycles(cal: Calibration, core_mhz, mem_mhz):
    """Eq. 4: minimum DRAM latency in core cycles, ``dm_lat = a * core_f/mem_f + b`` (GTX 980:
    a = 222.78, b = 277.32, R^2 = 0.9959). Table II lists it at memory 400-1000 MHz; its values
    (500 at 400 MHz down to 366.4 at 1000 MHz) are eq. 4 at a core clock of 400 MHz, although
    the extracted table repeats the memory clock in the core column."""
    ratio = np.asarray(core_mhz, dtype=float) / np.asarray(mem_mhz, dtype=float)
    return cal.dm_lat_slope * ratio + cal.dm_lat_intercept


def amat(cal: Calibration, l2_hit_rate, core_mhz, mem_mhz, readings: Readings = PAPER):
    """Eq. 5a-5b: average latency and delay of a global transaction, in core cycles.

    ``agl_lat = l2_lat * l2_hr + dm_lat * (core_f/mem_f) * (1 - l2_hr)``    (5a)
    ``agl_del = l2_del * l2_hr + dm_del * (core_f/mem_f) * (1 - l2_hr)``    (5b)

    Returns (agl_lat, agl_del), broadcast over the arguments.
    """
    ratio = np.asarray(core_mhz, dtype=float) / np.asarray(mem_mhz, dtype=float)
    hr = np.asarray(l2_hit_rate, dtype=float)
    dm_lat = dram_latency_cycles(cal, core_mhz, mem_mhz)
    # Reading (Readings.eq5a_scale_dm_lat): 5a's factor (core_f/mem_f) converts a latency
    # "measure[d] under baseline setting" (ratio one, section IV-C) to core cycles at the target.
    # Eq. 4 has already done that conversion -- it is fitted to latencies in core cycles ("The
    # cycle is the time unit under GPU core frequency") over several ratios -- so multiplying its
    # value by the ratio again would count the memory-clock part twice (222.78 r^2) and scale the
    # core-clock intercept with the memory clock. Default: eq. 4's value replaces 5a's product.
    dram_part = dm_lat * ratio if readings.eq5a_scale_dm_lat else dm_lat
    agl_lat = cal.l2_lat * hr + dram_part * (1.0 - hr)
    # dm_del is a baseline (ratio 1) measurement, so 5b's ratio applies as written.
    agl_del = cal.l2_del * hr + cal.dm_del * ratio * (1.0 - hr)
    return agl_lat, agl_del


# --- Section V: kernel time ------------------------------------------------------------------

def t_exec_cycles(t_active, counters: KernelCounters, readings: Readings = PAPER):
    """Eq. 6: ``T_exec = T_active * (#Wpb * #B / (#Aw * #SM))``, core cycles.

    #SM is the number of *active* SMs (Table IV's #Asm, "Nsight profiling") and #Aw warps per
    SM, so the quotient is the number of rounds of active warps each SM runs. The paper writes a
    plain quotient, not a ceiling; #Aw is a profiled average (achieved occupancy), so a fractional
    number of rounds is kept by default (Readings.whole_rounds rounds it up).
    """
    rounds = (counters.warps_per_block * counters.blocks
              / (counters.warps_per_sm * counters.active_sms))
    if readings.whole_rounds:
        rounds = np.ceil(rounds)
    return np.asarray(t_active) * rounds


def avr_comp_cycles(cal: Calibration, comp_inst_per_warp, gld_trans_per_warp):
    """Eq. 7a-7b: compute cycles before each global transaction, ``inst_cycle * comp_inst /
    gld_trans``. Table IV calls comp_inst "total compute instructions of the kernel" and gld_trans
    transactions "of one warp"; the quotient is meant as compute instructions *per transaction*
    ("average compute instructions number ... before each global memory transaction"), so both
    are taken per warp over the whole kernel (equivalently kernel totals of both)."""
    return cal.inst_cycle * np.asarray(comp_inst_per_warp, dtype=float) / gld_trans_per_warp


def t_active_compute(avr_comp, agl_lat, n_aw, o_itrs):
    """Eq. 9 (compute-dominated, conditions 8a-8b): ``avr_comp * #Aw * o_itrs + agl_lat``."""
    return avr_comp * n_aw * o_itrs + agl_lat


def t_active_memory(avr_comp, agl_lat, agl_del, n_warps, o_itrs):
    """Eq. 11 (memory-dominated, conditions 10a-10b): ``agl_lat + avr_comp + agl_del * #Wpb *
    o_itrs``; ``n_warps`` is #Wpb as printed (or #Aw, see Readings.eq11_warps)."""
    return agl_lat + avr_comp + agl_del * n_warps * o_itrs


def t_active_few_warps_short(avr_comp, agl_lat, agl_del, n_aw, o_itrs):
    """Eq. 13 (few warps, avr_comp <= agl_del; conditions 12a-12b): ``agl_del * #Aw + agl_lat +
    avr_comp + (avr_comp + agl_lat) * (o_itrs - 1)``."""
    return agl_del * n_aw + agl_lat + avr_comp + (avr_comp + agl_lat) * (o_itrs - 1)


def t_active_few_warps_long(avr_comp, agl_lat, n_aw, o_itrs):
    """Eq. 15 (few warps, avr_comp >= agl_del; conditions 14a-14b): ``avr_comp * (#Aw - 1) +
    (avr_comp + agl_lat) * o_itrs``."""
    return avr_comp * (n_aw - 1) + (avr_comp + agl_lat) * o_itrs


def t_active_shared_infrequent(avr_comp, agl_lat, agl_del, n_aw, gld_trans):
    """Eq. 17 (infrequent shared memory, conditions 16a-16b): ``avr_comp + agl_lat + agl_del *
    #Aw * gld_trans``. ``gld_trans`` is the warp's transactions over the whole kernel: Table IV
    defines gld_trans "of one warp in one iteration", but eq. 17 has no o_itrs factor (its example,
    transpose, runs one iteration), so the per-warp total keeps every transaction counted."""
    return avr_comp + agl_lat + agl_del * n_aw * gld_trans


def t_active_shared_intensive(avr_comp, agl_lat, agl_del, sh_lat, n_aw, n_wpb, gld_trans_iter,
                              i_itrs, o_itrs):
    """Eq. 18-21 (intensive shared memory). ``gld_trans_iter`` is transactions per warp per outer
    iteration (Table IV: "of one warp in one iteration"), ``i_itrs`` shared transactions per warp
    in one phase 2. Returns (T_active, T_phase1, T_phase2, T_phase3), core cycles.

    ``T_phase1 = avr_comp * 2 + agl_del * gld_trans * #Aw + agl_lat + sh_lat``        (18)
    ``T_phase2 = avr_comp * (warps_per_block - 1) + (avr_comp + sh_lat) * i_itrs``    (19)
    ``T_phase3 = avr_comp * 2 + agl_del * gld_trans * #Wpb + agl_lat + sh_lat``       (20)
    ``T_active = T_phase1 + (T_phase2 + T_phase3) * o_itrs``                          (21)
    """
    t1 = avr_comp * 2 + agl_del * gld_trans_iter * n_aw + agl_lat + sh_lat
    t2 = avr_comp * (n_wpb - 1) + (avr_comp + sh_lat) * i_itrs
    t3 = avr_comp * 2 + agl_del * gld_trans_iter * n_wpb + agl_lat + sh_lat
    return t1 + (t2 + t3) * o_itrs, t1, t2, t3


def regime(avr_comp, agl_lat, agl_del, counters: KernelCounters, sh_lat=0.0,
           readings: Readings = PAPER):
    """The paper's case analysis, as an array of names from :data:`REGIMES`.

    Without shared memory (section V-A) the conditions are, with A = #Aw:

    * avr_comp >= agl_del (8a/14a): compute-dominated if avr_comp*(A-1) >= agl_lat (8b), else few
      warps with long compute (14b: avr_comp*(A-1) <= agl_lat);
    * avr_comp < agl_del (10a/12a): memory-dominated if (avr_comp + agl_lat) >= agl_del*(A-1)
      (10b as printed), else few warps with short compute (12b: (avr_comp + agl_lat) <=
      agl_del*(A-1)).

    The printed conditions overlap only at equality; ties go to the first case listed (8 before
    14, 8 before 10 at avr_comp == agl_del, 10 before 12). On the compute side the chosen time is
    the larger of eq. 9 and eq. 15 (eq. 9 - eq. 15 = (o_itrs-1)(avr_comp(A-1) - agl_lat)); on
    the memory side 10b/12b as printed pick the *smaller* of eq. 11 (with #Aw) and eq. 13
    (eq. 11 - eq. 13 = (o_itrs-1)(agl_del*A - avr_comp - agl_lat)), and Fig. 7 ("one memory
    transaction cannot be processed until all outstanding transactions have been finished")
    describes a queue longer than the latency, i.e. 12b's inequality. The two look exchanged;
    Readings(memory_conditions="swapped") exchanges them. Default: as printed.

    With shared memory (section V-B, shm_inst_per_warp > 0): infrequent (eq. 17) when 16a
    avr_comp <= agl_del and 16b (avr_comp + sh_lat) <= agl_del*(#Aw - #Wpb) hold; the paper states
    no condition for the intensive case, so every other shared-memory kernel is intensive.
    """
    avr_comp, agl_lat, agl_del = np.broadcast_arrays(
        np.asarray(avr_comp, dtype=float), np.asarray(agl_lat, dtype=float),
        np.asarray(agl_del, dtype=float))
    a = np.asarray(counters.warps_per_sm, dtype=float)
    infrequent = (avr_comp <= agl_del) & (
        avr_comp + sh_lat <= agl_del * (a - counters.warps_per_block))
    shared = np.where(infrequent, SHARED_INFREQUENT, SHARED_INTENSIVE)
    compute_side = avr_comp >= agl_del                                  # 8a / 14a
    compute = avr_comp * (a - 1) >= agl_lat                             # 8b
    if readings.memory_conditions == "paper":
        memory = avr_comp + agl_lat >= agl_del * (a - 1)                # 10b as printed
    elif readings.memory_conditions == "swapped":
        memory = avr_comp + agl_lat <= agl_del * (a - 1)                # 12b's inequality
    else:
        raise ValueError(f"memory_conditions must be 'paper' or 'swapped', "
                         f"got {readings.memory_conditions!r}")
    plain = np.select(
        [compute_side & compute, compute_side, memory],
        [COMPUTE, FEW_WARPS_LONG, MEMORY], default=FEW_WARPS_SHORT)
    return np.where(counters.uses_shared, shared, plain)


def t_active_cycles(counters: KernelCounters, cal: Calibration, core_mhz, mem_mhz,
                    readings: Readings = PAPER):
    """T_active (core cycles, one round of active warps on one SM) at each target and the regime
    chosen, broadcast over core_mhz and mem_mhz."""
    if readings.eq11_warps not in ("wpb", "aw"):
        raise ValueError(f"eq11_warps must be 'wpb' or 'aw', got {readings.eq11_warps!r}")
    core, mem = np.broadcast_arrays(np.asarray(core_mhz, dtype=float),
                                    np.asarray(mem_mhz, dtype=float))
    agl_lat, agl_del = amat(cal, counters.l2_hit_rate, core, mem, readings)
    avr, agl_lat, agl_del = np.broadcast_arrays(
        avr_comp_cycles(cal, counters.comp_inst_per_warp, counters.gld_trans_per_warp),
        agl_lat, agl_del)
    a, wpb, o = counters.warps_per_sm, counters.warps_per_block, counters.outer_iterations
    which = regime(avr, agl_lat, agl_del, counters, cal.sh_lat, readings)
    # Every regime's time is computed and the chosen one kept: with array counters different
    # base runs sit in different regimes.
    with np.errstate(divide="ignore", invalid="ignore"):
        times = {
            SHARED_INFREQUENT: t_active_shared_infrequent(
                avr, agl_lat, agl_del, a, counters.gld_trans_per_warp),
            SHARED_INTENSIVE: t_active_shared_intensive(
                avr, agl_lat, agl_del, cal.sh_lat, a, wpb,
                np.asarray(counters.gld_trans_per_warp, dtype=float) / o,
                counters.inner_iterations, o)[0],
            COMPUTE: t_active_compute(avr, agl_lat, a, o),
            MEMORY: t_active_memory(avr, agl_lat, agl_del,
                                    wpb if readings.eq11_warps == "wpb" else a, o),
            FEW_WARPS_SHORT: t_active_few_warps_short(avr, agl_lat, agl_del, a, o),
            FEW_WARPS_LONG: t_active_few_warps_long(avr, agl_lat, a, o),
        }
    t = np.full(which.shape, np.nan)
    for name, value in times.items():
        t = np.where(which == name, value, t)
    return t, which


def predict_time_ns(counters: KernelCounters, calibration: Calibration, core_mhz, mem_mhz,
                    return_regime: bool = False, readings: Readings = PAPER):
    """Predicted kernel time in ns at target (core_mhz, mem_mhz), broadcast over both.

    T_active from the regime's equation (9, 11, 13, 15, 17 or 21), times the rounds of eq. 6,
    gives core cycles; ns = cycles / core_mhz * 1000. The counters come from one base run (the
    paper profiles at 700/700 MHz); only frequency-dependent terms change with the target, which
    is the model's premise. With ``return_regime`` also returns the regime name per target.
    """
    t_active, which = t_active_cycles(counters, calibration, core_mhz, mem_mhz, readings)
    cycles = t_exec_cycles(t_active, counters, readings)
    ns = cycles / np.broadcast_to(np.asarray(core_mhz, dtype=float), cycles.shape) * 1e3
    return (ns, which) if return_regime else ns


# --- Rows: the model over many base runs and targets at once (the SQL function, the fit) ---

# The arguments of predict_rows and of the SQL functions, in order: the counters of
# KernelCounters, then the Calibration parameters the prediction uses (inter_arr only
# calibrates, eq. 2), then the target clocks.
COUNTER_ARGS = ("gld_trans_per_warp", "l2_hit_rate", "comp_inst_per_warp", "shm_inst_per_warp",
                "blocks", "warps_per_block", "active_sms", "warps_per_sm")
CALIBRATION_ARGS = ("dm_lat_slope", "dm_lat_intercept", "dm_del", "l2_lat", "l2_del", "sh_lat",
                    "inst_cycle")
ARGS = (*COUNTER_ARGS, *CALIBRATION_ARGS, "target_core_mhz", "target_mem_mhz")


def _valid(c: dict[str, np.ndarray]) -> np.ndarray:
    """Rows the model can take: positive launch and occupancy, global transactions (or none at
    all, see :func:`t_active_no_global`), a hit rate in [0, 1] where there are transactions,
    finite non-negative instructions and parameters."""
    ok = np.ones(len(c["blocks"]), dtype=bool)
    for name in ("blocks", "warps_per_block", "active_sms", "warps_per_sm", "target_core_mhz",
                 "target_mem_mhz"):
        ok &= np.isfinite(c[name]) & (c[name] > 0)
    for name in ("gld_trans_per_warp", "comp_inst_per_warp", "shm_inst_per_warp",
                 *CALIBRATION_ARGS):
        ok &= np.isfinite(c[name]) & (c[name] >= 0)
    ok &= (c["gld_trans_per_warp"] > 0) | _no_global(c)
    with np.errstate(invalid="ignore"):
        ok &= ((c["l2_hit_rate"] >= 0) & (c["l2_hit_rate"] <= 1)) | _no_global(c)
    return ok


# the columns _no_global reads (predict_rows cleans only these: the fit calls it ~16,000 times)
_NO_GLOBAL_ARGS = ("gld_trans_per_warp", "shm_inst_per_warp", "comp_inst_per_warp")


def _no_global(c: dict[str, np.ndarray]) -> np.ndarray:
    return ((c["gld_trans_per_warp"] == 0) & (c["shm_inst_per_warp"] == 0)
            & (c["comp_inst_per_warp"] > 0))


def t_active_no_global(inst_cycle, comp_inst_per_warp, n_aw):
    """gpudb's limit of eq. 9 for a kernel without global transactions, which the paper's
    equations divide by (eq. 7): such a kernel is compute-dominated (8a holds for any agl_del)
    and eq. 9's ``avr_comp * #Aw * o_itrs`` is ``inst_cycle * comp_inst * #Aw`` whatever the
    number of transactions (o_itrs = gld_trans); the ``agl_lat`` of one transaction is left out
    because there is none. Core cycles."""
    return np.asarray(inst_cycle) * comp_inst_per_warp * n_aw


def predict_rows(columns: dict[str, np.ndarray], return_regime: bool = False,
                 readings: Readings = GPUDB):
    """The model over rows of equal-length arrays named as :data:`ARGS`: (time ns, valid
    mask[, regime names]); invalid rows' values are NaN (regime ''). gpudb's readings
    (:data:`GPUDB`) unless told otherwise."""
    ok = _valid(columns)
    none = ok & _no_global({k: np.nan_to_num(columns[k]) for k in _NO_GLOBAL_ARGS})
    full = ok & ~none
    v = {k: a[full] for k, a in columns.items()}
    ns = np.full(len(ok), np.nan)
    which = np.full(len(ok), "", dtype=object)
    if full.any():
        counters = KernelCounters(**{k: v[k] for k in COUNTER_ARGS})
        cal = Calibration(**{k: v[k] for k in CALIBRATION_ARGS}, inter_arr=0.0)
        t, r = predict_time_ns(counters, cal, v["target_core_mhz"], v["target_mem_mhz"],
                               return_regime=True, readings=readings)
        ns[full], which[full] = t, r
    if none.any():
        z = {k: a[none] for k, a in columns.items()}
        rounds = z["warps_per_block"] * z["blocks"] / (z["warps_per_sm"] * z["active_sms"])
        if readings.whole_rounds:
            rounds = np.ceil(rounds)
        cycles = t_active_no_global(z["inst_cycle"], z["comp_inst_per_warp"],
                                    z["warps_per_sm"]) * rounds
        ns[none], which[none] = cycles / z["target_core_mhz"] * 1e3, COMPUTE
    return (ns, ok, which) if return_regime else (ns, ok)
