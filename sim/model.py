"""Public wrappers of the simulator: validate, allocate, seed, run, turn counters into rows.

:func:`simulate` runs one kernel at one setting (or under a controller) and returns the run row
and its intervals as a ``pyarrow.Table`` whose columns are exactly those of the ``interval``
table (schema/0001_core_tables.sql). :class:`Simulation` is the closed-loop hook: ``step()``
advances the jitted state by one interval, ``apply()`` changes core MHz, memory MHz and the CTA
limit for the next one, charging the switching time (paper 000 section 4: 100 ns).

Intervals are cut by work: interval k ends at the end of the first cycle in which the GPU-wide
count of issued warp instructions reaches (k+1) * interval_instructions. Instructions issued in
that cycle all belong to interval k, so an interval overshoots its boundary by at most
issue_width * n_sm - 1 warp instructions (29 on gtx480, 0.03% of the default 100,000), and the
next interval is short by the same amount; the boundaries themselves never drift.

Epoch mode (``epoch_cycles=E``, for controllers that decide every E core cycles, as Equalizer
does every 4096-cycle epoch, paper 001 section IV): interval k covers exactly the core cycles
[t_k, t_k + E) from the cycle t_k at which it starts (t_0 = 0), the last one up to the kernel's
end; every counter is the same as if the cycles had been stepped one by one. Each epoch row also
carries ``row["sm_eq"]``, a float64 array (n_sm, 5) of the SM's Equalizer counters summed over
the interval's sample cycles: samples, active, waiting, xalu, xmem warps (columns K.E_*). Their
sums over SMs divided by n_sm are the row's eq_samples and eq_*_warps columns. sm_eq is for the
controller only: it has no column and is not stored in the database.

Per-SM CTA limits (for Equalizer's thread block allocation, paper 001 section IV-B):
``Simulation.apply_sm_limits(limits)`` gives each SM its own CTA limit from the next cycle on,
beside the Setting's GPU-wide ``ctas_per_sm`` (which still only gates new launches, as before).
An SM whose active CTAs exceed its own limit pauses the excess, most recently launched first:
their warps hold their state but are not scheduled and not counted in Equalizer's samples
(eq_* columns, ``sm_eq``; paper 001 section IV-A: only unpaused warps count). While an SM has
paused CTAs, a finishing CTA unpauses one (earliest launched first) instead of taking a new CTA
from the grid; new CTAs launch only once none is paused and the active CTAs are below
min(its limit, ctas_per_sm). A raised limit unpauses first, then launches. Resident CTAs never
exceed the hardware slots. The L1 capacity term (kernels with an L1 footprint) counts active
CTAs only: a paused CTA touches no lines, and reducing thread blocks to relieve the cache is
what the pausing is for (paper 001 section III-A). ``active_warps_avg`` and ``occupancy`` still
count resident warps, paused ones included (they hold their slots and registers). A controller
sets them in ``run()`` through an optional ``decide_sm_limits(idx, row, limits)`` method. Runs
that never set per-SM limits are unchanged, bit for bit, run ids included; a controller that
sets them must have its own name or run_key, since the limits do not enter the run_id.

Counter conventions (paper 000 section 4 averages counters over the SMs of the power domain):
cycle counters (``*_cycles``, ``miss_contributors``, ``eq_*``, ``active_warps_avg``) are per-SM
values averaged over the active SMs; instruction and transaction counts are GPU-wide totals.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import numpy as np
import pyarrow as pa

from sim import ENGINES, SAMPLED_VERSION, SIM_VERSION
from sim import _kernels as K
from sim.config import MAX_WARP_INSTRUCTIONS, ConfigError, GpuConfig, KernelSpec, load_gpu

DEFAULT_INTERVAL_INSTRUCTIONS = 100_000

# The interval table's columns, in schema order, with their Arrow types.
INTERVAL_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("run_id", pa.string()), ("idx", pa.int32()), ("core_mhz", pa.float64()),
    ("mem_mhz", pa.float64()), ("ctas_per_sm", pa.int32()), ("start_ns", pa.float64()),
    ("time_ns", pa.float64()), ("switch_ns", pa.float64()), ("cycles", pa.float64()),
    ("instructions", pa.int64()),
    ("stall_cycles", pa.float64()), ("leading_load_cycles", pa.float64()),
    ("miss_contributors", pa.float64()), ("crit_path_cycles", pa.float64()),
    ("crisp_lcp_cycles", pa.float64()), ("crisp_load_stall_cycles", pa.float64()),
    ("crisp_store_stall_cycles", pa.float64()), ("load_outstanding_cycles", pa.float64()),
    ("load_overlap_compute_cycles", pa.float64()), ("dram_min_ns", pa.float64()),
    ("prefetch_stall_cycles", pa.float64()),
    ("eq_samples", pa.float64()), ("eq_active_warps", pa.float64()),
    ("eq_waiting_warps", pa.float64()), ("eq_xalu_warps", pa.float64()),
    ("eq_xmem_warps", pa.float64()), ("eq_issued_warps", pa.float64()),
    ("alu_insts", pa.int64()), ("sfu_insts", pa.int64()), ("gld_insts", pa.int64()),
    ("gst_insts", pa.int64()), ("shared_insts", pa.int64()), ("barrier_insts", pa.int64()),
    ("gld_transactions", pa.int64()), ("gst_transactions", pa.int64()),
    ("l1_accesses", pa.int64()), ("l1_hits", pa.int64()), ("l2_accesses", pa.int64()),
    ("l2_hits", pa.int64()), ("dram_reads", pa.int64()), ("dram_writes", pa.int64()),
    ("shared_transactions", pa.int64()),
    ("alu_busy_cycles", pa.float64()), ("sfu_busy_cycles", pa.float64()),
    ("mem_unit_busy_cycles", pa.float64()), ("mem_unit_stall_cycles", pa.float64()),
    ("write_unit_stall_cycles", pa.float64()), ("active_warps_avg", pa.float64()),
    ("occupancy", pa.float64()),
    ("core_dynamic_j", pa.float64()), ("core_static_j", pa.float64()),
    ("dram_dynamic_j", pa.float64()), ("dram_static_j", pa.float64()), ("other_j", pa.float64()),
    ("crisp_slot_lcp_cycles", pa.float64()), ("crisp_slot_load_stall_cycles", pa.float64()),
    ("crisp_slot_store_stall_cycles", pa.float64()), ("sm_empty_cycles", pa.float64()),
    ("mshr_min_ns", pa.float64()), ("store_queue_min_ns", pa.float64()),
    ("dp_insts", pa.int64()),
]

# Per-SM counters averaged over SMs: column -> accumulator index.
_PER_SM = {
    "stall_cycles": K.A_STALL, "leading_load_cycles": K.A_LEAD,
    "miss_contributors": K.A_MISS, "crit_path_cycles": K.A_CRIT,
    "crisp_lcp_cycles": K.A_LCP, "crisp_load_stall_cycles": K.A_LOAD_STALL,
    "crisp_store_stall_cycles": K.A_STORE_STALL, "load_outstanding_cycles": K.A_LOAD_OUT,
    "load_overlap_compute_cycles": K.A_OVL_COMP, "eq_samples": K.A_EQ_SAMPLES,
    "eq_active_warps": K.A_EQ_ACTIVE, "eq_waiting_warps": K.A_EQ_WAIT,
    "eq_xalu_warps": K.A_EQ_XALU, "eq_xmem_warps": K.A_EQ_XMEM,
    "eq_issued_warps": K.A_EQ_ISSUED, "alu_busy_cycles": K.A_ALU_BUSY,
    "sfu_busy_cycles": K.A_SFU_BUSY, "mem_unit_busy_cycles": K.A_MEM_BUSY,
    "mem_unit_stall_cycles": K.A_MEM_STALL, "write_unit_stall_cycles": K.A_WRITE_STALL,
    "crisp_slot_lcp_cycles": K.A_LCP_SLOT, "crisp_slot_load_stall_cycles": K.A_SLOT_LOAD_STALL,
    "crisp_slot_store_stall_cycles": K.A_SLOT_STORE_STALL, "sm_empty_cycles": K.A_EMPTY,
}
# GPU-wide event counts: column -> accumulator index.
_TOTALS = {
    "instructions": K.A_INSTS, "alu_insts": K.A_ALU, "sfu_insts": K.A_SFU, "dp_insts": K.A_DP,
    "gld_insts": K.A_GLD, "gst_insts": K.A_GST, "shared_insts": K.A_SHARED,
    "barrier_insts": K.A_BAR, "gld_transactions": K.A_GLD_TRANS,
    "gst_transactions": K.A_GST_TRANS, "l1_accesses": K.A_L1_ACC, "l1_hits": K.A_L1_HIT,
    "l2_accesses": K.A_L2_ACC, "l2_hits": K.A_L2_HIT, "dram_reads": K.A_DRAM_RD,
    "dram_writes": K.A_DRAM_WR, "shared_transactions": K.A_SH_TRANS,
}


def check_setting(gpu: GpuConfig, core_mhz: float, mem_mhz: float) -> None:
    """Raise ConfigError unless the clocks (MHz) lie within the GPU's P-state range."""
    if not gpu.core_mhz[0] <= core_mhz <= gpu.core_mhz[-1]:
        raise ConfigError(f"core_mhz {core_mhz:g} outside {gpu.name}'s "
                          f"{gpu.core_mhz[0]:g}-{gpu.core_mhz[-1]:g} MHz")
    if not gpu.mem_mhz[0] <= mem_mhz <= gpu.mem_mhz[-1]:
        raise ConfigError(f"mem_mhz {mem_mhz:g} outside {gpu.name}'s "
                          f"{gpu.mem_mhz[0]:g}-{gpu.mem_mhz[-1]:g} MHz")


def check_run(gpu: GpuConfig, kernel: KernelSpec, n_sm: int, ctas_per_sm: int | None,
              interval_instructions: int) -> None:
    """Raise ConfigError unless the kernel can run on n_sm SMs of the GPU with that CTA limit
    (None: the hardware's) and interval size (warp instructions)."""
    if not 1 <= n_sm <= gpu.n_sm:
        raise ConfigError(f"n_sm must be in 1..{gpu.n_sm}, got {n_sm}")
    if not 0 < interval_instructions <= MAX_WARP_INSTRUCTIONS:
        raise ConfigError(f"interval_instructions must be in 1..{MAX_WARP_INSTRUCTIONS:,} "
                          f"(warp instructions), got {interval_instructions:,}")
    if ctas_per_sm is not None and ctas_per_sm < 1:
        raise ConfigError(f"ctas_per_sm must be >= 1, got {ctas_per_sm}")
    if kernel.cta_slots(gpu) < 1:
        raise ConfigError(f"kernel {kernel.name!r} does not fit on one {gpu.name} SM")
    if not gpu.has_fp64_unit and np.any(kernel.program["op"] == K.OP_DP):
        raise ConfigError(f"kernel {kernel.name!r} has FP64 ('dp') instructions but {gpu.name} "
                          "gives no FP64 unit (dp_latency_cycles, dp_interval_cycles)")


class SimulationError(RuntimeError):
    """The model reached a state it cannot leave (a bug or an impossible kernel)."""


class Setting(NamedTuple):
    """What a controller sets for the next interval."""

    core_mhz: float
    mem_mhz: float
    ctas_per_sm: int


class Controller(Protocol):
    """Closed-loop controller: ``name`` becomes the run's ``policy``.

    ``decide`` sees the interval just finished (a dict with the interval columns) and the
    setting it ran at, and returns the setting for the next interval. A controller may have a
    ``run_key`` (default: its name) that goes into the run_id in its place, so that two
    controllers shown under one name but deciding differently never share a run.

    It may also have ``decide_sm_limits(idx, row, limits) -> tuple[int, ...] | None``, called
    in ``Simulation.run`` after ``decide`` with the per-SM CTA limits in force (None: none
    set); its answer goes to ``Simulation.apply_sm_limits`` (see the module docstring).
    """

    name: str

    def decide(self, idx: int, row: dict, setting: Setting) -> Setting: ...


class FixedController:
    """Keeps the setting it is given: reproduces a fixed run exactly."""

    name = "fixed"

    def decide(self, idx: int, row: dict, setting: Setting) -> Setting:
        return setting


@dataclass
class SimResult:
    """A finished simulation: ``run`` holds the run-table fields (without experiment and
    timestamps), ``intervals`` the interval rows, ``extra`` per-interval diagnostics that have
    no column (e.g. CRISP's computation cycles, which complete the cycle classification),
    ``controller`` a closed loop's controller as the run left it (what it recorded, e.g.
    Equalizer's CTA limits per epoch; it comes back with the result from a worker process),
    None for a fixed run."""

    run: dict
    intervals: pa.Table
    extra: dict = field(default_factory=dict)
    controller: object | None = None


def check_engine(engine: str) -> None:
    """Raise ConfigError unless ``engine`` names one of sim.ENGINES."""
    if engine not in ENGINES:
        raise ConfigError(f"no engine {engine!r}: the engines are {', '.join(ENGINES)}")


def run_id(gpu: GpuConfig, kernel: KernelSpec, core_mhz: float, mem_mhz: float, n_sm: int,
           ctas_per_sm: int | None, interval_instructions: int, seed: int,
           policy: str = "fixed", epoch_cycles: int | None = None,
           core_headroom: float = 0.0, engine: str = "reference") -> str:
    """Content hash of a run's inputs and SIM_VERSION (hex sha256). ``epoch_cycles``,
    ``core_headroom`` and an engine other than the reference (with its version) enter the
    hash only when set, so the ids of other runs are unchanged."""
    payload = {
        "gpu": gpu.raw, "kernel": kernel.raw, "suite": kernel.suite,
        "core_mhz": float(core_mhz), "mem_mhz": float(mem_mhz), "n_sm": int(n_sm),
        "ctas_per_sm": None if ctas_per_sm is None else int(ctas_per_sm),
        "interval_instructions": int(interval_instructions), "seed": int(seed),
        "policy": policy, "sim_version": SIM_VERSION,
    }
    if epoch_cycles is not None:
        payload["epoch_cycles"] = int(epoch_cycles)
    if core_headroom:
        payload["core_headroom"] = float(core_headroom)
    check_engine(engine)
    if engine != "reference":
        payload["engine"] = engine
        payload["engine_version"] = SAMPLED_VERSION
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _engine(reference: bool):
    if reference:
        from sim import reference as ref
        return ref.kernels()
    return K


class Simulation:
    """One kernel on one GPU, advanced interval by interval (the closed-loop hook).

    gpu: a GpuConfig or fixture name. core_mhz / mem_mhz: start setting (default nominal).
    n_sm: active SMs (default all). ctas_per_sm: CTA limit for launches (default the
    hardware's). seed: seeds the per-SM random streams (L1/L2 hits, DRAM channels).
    skip: skip cycles in which nothing can happen (counters are identical either way).
    reference: run the pure-Python execution of the same kernels (tiny cases only).
    epoch_cycles: None cuts intervals by work (interval_instructions); an int E >= 1 cuts
    them every E core cycles instead (epoch mode, see the module docstring; the instruction
    boundary is then ignored, though interval_instructions still enters the run_id).
    core_headroom: share above the GPU's highest core P-state that a setting may take (0: none).
    Paper 001's SM "high" state is nominal + 15% (section IV-C), above gtx480's top P-state,
    which is its nominal; there the core voltage rises linearly with the frequency from the
    top P-state's (section V-A: "a linear change in voltage"), and the energy model uses it.
    """

    engine = "reference"     # part of the run's identity (run_id and the run.engine column)

    def __init__(self, gpu: GpuConfig | str, kernel: KernelSpec, core_mhz: float | None = None,
                 mem_mhz: float | None = None, n_sm: int | None = None,
                 ctas_per_sm: int | None = None,
                 interval_instructions: int = DEFAULT_INTERVAL_INSTRUCTIONS, seed: int = 0,
                 skip: bool = True, reference: bool = False,
                 epoch_cycles: int | None = None, core_headroom: float = 0.0):
        self.gpu = gpu = load_gpu(gpu) if isinstance(gpu, str) else gpu
        if not (isinstance(core_headroom, (int, float)) and 0.0 <= core_headroom <= 1.0):
            raise ConfigError(f"core_headroom must be a share in [0, 1], got {core_headroom!r}")
        self.core_headroom = float(core_headroom)
        if epoch_cycles is not None:
            if isinstance(epoch_cycles, bool) or int(epoch_cycles) != epoch_cycles \
                    or epoch_cycles < 1:
                raise ConfigError(f"epoch_cycles must be an integer >= 1, got {epoch_cycles!r}")
            epoch_cycles = int(epoch_cycles)
        self.epoch_cycles = epoch_cycles
        self.kernel = kernel
        self.n_sm = gpu.n_sm if n_sm is None else int(n_sm)
        check_run(gpu, kernel, self.n_sm, ctas_per_sm, interval_instructions)
        self.slots = kernel.cta_slots(gpu)
        self.requested_ctas = ctas_per_sm
        self.interval_instructions = int(interval_instructions)
        self.seed = int(seed)
        self.skip = bool(skip)
        self.k = _engine(reference)
        # None is the nominal clock; 0 is a clock, and out of range
        self.setting = Setting(float(gpu.nominal_core_mhz if core_mhz is None else core_mhz),
                               float(gpu.nominal_mem_mhz if mem_mhz is None else mem_mhz),
                               self._cta_limit(ctas_per_sm))
        self._check(self.setting)
        self._allocate()
        self.sm_limits: tuple[int, ...] | None = None
        self.idx = 0
        self.start_ns = 0.0
        self.pending_switch_ns = 0.0
        self.finished = False
        self.rows: list[dict] = []
        self.extra: dict[str, list] = {"crisp_compute_cycles": [], "end_cycle": [],
                                       "sm_cycles_processed": [], "sm_cycles_issuing": []}

    def _cta_limit(self, ctas: int | None) -> int:
        if ctas is None:
            return self.slots
        if ctas < 1:
            raise ConfigError(f"ctas_per_sm must be >= 1, got {ctas}")
        return min(int(ctas), self.slots)

    def _check(self, s: Setting) -> None:
        top = self.gpu.core_mhz[-1]
        if top < s.core_mhz <= top * (1.0 + self.core_headroom) + 1e-9:
            check_setting(self.gpu, top, s.mem_mhz)     # the memory clock still checked
        else:
            check_setting(self.gpu, s.core_mhz, s.mem_mhz)

    def core_voltage(self, mhz: float) -> float:
        """Core voltage (V) at ``mhz``: the P-state table's, and above the top P-state (with
        core_headroom) the top's voltage scaled linearly with the frequency."""
        top = self.gpu.core_mhz[-1]
        if mhz > top:
            return self.gpu.core_v[-1] * mhz / top
        return self.gpu.core_voltage(mhz)

    def _allocate(self) -> None:
        g, kern, n = self.gpu, self.kernel, self.n_sm
        prog = kern.program
        i64 = np.int64
        n_inst, n_ph = len(prog["op"]), len(prog["ph_start"])
        self.pi = np.zeros((K.N_PI, max(n_inst, n_ph)), i64)
        for row, key in ((K.PI_OP, "op"), (K.PI_DEP0, "dep0"), (K.PI_DEP1, "dep1"),
                         (K.PI_TRANS, "trans")):
            self.pi[row, :n_inst] = prog[key]
        for row, key in ((K.PI_PH_START, "ph_start"), (K.PI_PH_LEN, "ph_len"),
                         (K.PI_PH_ITERS, "ph_iters")):
            self.pi[row, :n_ph] = prog[key]
        self.pf = np.stack([prog["pl1"], prog["pl2"], prog["pwr"]])
        self.fp = np.zeros(K.N_FP)
        self.fp[:K.N_GP] = g.gp
        self.fp[K.R_CORE_MHZ] = self.setting.core_mhz
        self.fp[K.R_MEM_MHZ] = self.setting.mem_mhz
        self.fp[K.R_CYC_NS] = 1000.0 / self.setting.core_mhz
        self.gi = np.zeros(K.N_GI, i64)
        self.gi[K.K_N_CTAS] = kern.ctas
        self.gi[K.K_WPC] = kern.warps_per_cta
        self.gi[K.K_N_PH] = n_ph
        self.gi[K.K_SLOTS] = self.slots
        self.gi[K.K_FOOT] = kern.footprint_bytes
        self.gi[K.GS_CTA_LIMIT] = self.setting.ctas_per_sm
        self.gi[K.GS_N_SM] = n
        self.si = np.zeros((n, K.N_SI), i64)
        self.si[:, K.SI_LIMIT] = self.slots
        self.si[:, K.SI_LSU_W] = -1
        self.si[:, K.SI_LSU_PEND] = -1
        for col in (K.SI_MSHR_NEXT, K.SI_SQ_NEXT, K.SI_CTA_EV, K.SI_W_MIN):
            self.si[:, col] = K.BIG
        self.sg = np.zeros((n, K.N_ACC - K.A_CLASS0))
        self.acc = np.zeros(K.N_ACC)
        self.se = np.zeros((n, K.N_SE))
        self.kinds = np.zeros(K.N_KIND * (int(g.gp[K.G_ISSUE_WIDTH]) + 1), i64)
        n_w = self.slots * kern.warps_per_cta
        self.wi = np.zeros((n, n_w, K.N_WI), i64)
        self.done = np.zeros((n, n_w, n_inst), i64)
        self.ci = np.zeros((n, self.slots, K.N_CI), i64)
        self.mi = np.zeros((n, int(g.gp[K.G_N_MSHR]), K.N_MI), i64)
        self.mi[:, :, K.MI_REL] = -1
        self.qrel = np.full((n, int(g.gp[K.G_SQ_SIZE])), -1, i64)
        self.wm = np.zeros((n, K.N_WM, (n_w + 31) // 32), i64)      # 32 warps to a word
        self.wt = np.full((n, n_w), K.BIG, i64)
        self.wq = np.zeros((n, K.W_LONG, (n_w + 31) // 32), i64)
        self.chn = np.zeros((2, int(g.gp[K.G_N_CH])))
        # One independent stream per SM, drawn from a numpy Generator seeded by the run's seed.
        self.rng = np.random.default_rng(self.seed).integers(
            0, np.iinfo(np.uint64).max, size=n, dtype=np.uint64, endpoint=True)
        # The same arrays, grouped as sim._kernels' functions take them.
        self.gpu_state = K.Gpu(self.fp, self.gi, self.chn)
        self.program = K.Program(self.pi, self.pf)
        self.sm_state = K.SmState(self.si, self.wi, self.done, self.ci, self.mi, self.qrel,
                                  self.rng, self.wm, self.wt, self.wq)
        self.counters = K.Counters(self.acc, self.sg, self.se, self.kinds)
        self.k.initial_fill(self.gpu_state, self.program, self.sm_state)

    def apply(self, setting: Setting) -> None:
        """Run the next interval at ``setting``; a V/F change halts the SMs for switch_ns."""
        setting = Setting(float(setting.core_mhz), float(setting.mem_mhz),
                          self._cta_limit(setting.ctas_per_sm))
        self._check(setting)
        old = self.setting
        t = int(self.gi[K.GS_T])
        if (setting.core_mhz, setting.mem_mhz) != (old.core_mhz, old.mem_mhz):
            old_ns = 1000.0 / old.core_mhz
            new_ns = 1000.0 / setting.core_mhz
            switch = self.gpu.switch_ns
            now_ns = self.fp[K.R_SEG_NS] + (t - self.fp[K.R_SEG_CYC]) * old_ns
            self.k.switch_setting(t, old_ns, new_ns, switch, self.gpu_state, self.program,
                                  self.sm_state)
            self.fp[K.R_CORE_MHZ] = setting.core_mhz
            self.fp[K.R_MEM_MHZ] = setting.mem_mhz
            self.fp[K.R_CYC_NS] = new_ns
            self.fp[K.R_SEG_NS] = now_ns + switch
            self.fp[K.R_SEG_CYC] = t
            self.pending_switch_ns += switch
        if setting.ctas_per_sm != old.ctas_per_sm:
            self.gi[K.GS_CTA_LIMIT] = setting.ctas_per_sm
            self.si[:, K.SI_NEXT] = np.minimum(self.si[:, K.SI_NEXT], t)
        self.setting = setting

    def apply_sm_limits(self, limits) -> None:
        """Give each SM its own CTA limit from the next cycle on (one int >= 1 per active SM,
        capped at the hardware's slots), or remove them all (None). An SM with more active CTAs
        than its limit pauses the excess; see the module docstring. Costs no time."""
        if limits is None:
            new = None
            col = np.full(self.n_sm, self.slots, np.int64)
        else:
            vals = list(limits)
            if len(vals) != self.n_sm:
                raise ConfigError(f"need {self.n_sm} per-SM CTA limits, got {len(vals)}")
            for v in vals:
                if isinstance(v, bool) or int(v) != v or v < 1:
                    raise ConfigError(f"per-SM CTA limits must be integers >= 1, got {v!r}")
            new = tuple(min(int(v), self.slots) for v in vals)
            col = np.asarray(new, np.int64)
        self.sm_limits = new
        if not np.array_equal(self.si[:, K.SI_LIMIT], col):
            t = int(self.gi[K.GS_T])
            self.si[:, K.SI_LIMIT] = col
            self.si[:, K.SI_NEXT] = np.minimum(self.si[:, K.SI_NEXT], t)

    def step(self) -> dict | None:
        """Simulate one interval; returns its row (interval columns, without run_id) or None
        once the kernel has finished."""
        if self.finished:
            return None
        t0 = self._start_interval()
        if self.epoch_cycles is None:
            boundary, cycle_end = (self.idx + 1) * self.interval_instructions, K.BIG
        else:
            boundary, cycle_end = K.BIG, t0 + self.epoch_cycles
        self._advance_to(boundary, cycle_end)
        return self._finish_interval(t0)

    def _start_interval(self) -> int:
        """Clear the per-interval accumulators; returns the interval's first cycle."""
        self.acc[:] = 0.0
        self.se[:] = 0.0
        self.chn[K.CH_BUSY] = 0.0
        self.gi[K.GS_SM_STEPS] = 0
        self.gi[K.GS_ISSUE_STEPS] = 0
        return int(self.gi[K.GS_T])

    def _advance_to(self, boundary: int, cycle_end: int) -> None:
        """Run the cycle engine until ``boundary`` warp instructions or ``cycle_end``, or the
        kernel's end (then ``finished``)."""
        status = self.k.advance(boundary, cycle_end, self.skip, self.gpu_state, self.program,
                                self.sm_state, self.counters)
        if status == K.ST_DEADLOCK:
            raise SimulationError(f"{self.kernel.kernel_id} on {self.gpu.name}: no event left "
                                  "but the kernel has not finished")
        if status == K.ST_DONE:
            self.finished = True

    def _finish_interval(self, t0: int) -> dict | None:
        """The row of the interval that began at cycle ``t0`` (kept, with its diagnostics),
        or None if it did nothing."""
        cycles = int(self.gi[K.GS_T]) - t0
        if cycles == 0 and self.acc[K.A_INSTS] == 0:
            return None
        row = self._row(cycles)
        if self.epoch_cycles is not None:
            row["sm_eq"] = self.se.copy()
        self.rows.append(row)
        self.extra["crisp_compute_cycles"].append(self.acc[K.A_COMPUTE] / self.n_sm)
        self.extra["end_cycle"].append(int(self.gi[K.GS_T]))
        self.extra["sm_cycles_processed"].append(int(self.gi[K.GS_SM_STEPS]))
        self.extra["sm_cycles_issuing"].append(int(self.gi[K.GS_ISSUE_STEPS]))
        self.idx += 1
        return row

    def _row(self, cycles: int) -> dict:
        s, g, acc, n = self.setting, self.gpu, self.acc, self.n_sm
        switch = self.pending_switch_ns
        self.pending_switch_ns = 0.0
        time_ns = cycles * 1000.0 / s.core_mhz + switch
        row = {"idx": self.idx, "core_mhz": s.core_mhz, "mem_mhz": s.mem_mhz,
               "ctas_per_sm": s.ctas_per_sm, "start_ns": self.start_ns, "time_ns": time_ns,
               "switch_ns": switch, "cycles": float(cycles)}
        self.start_ns += time_ns
        for col, a in _TOTALS.items():
            row[col] = int(acc[a])
        for col, a in _PER_SM.items():
            row[col] = acc[a] / n
        # CRIT+BW's least DRAM time (paper 004 section 3.2.2): the interval minus the slack of
        # the least-slack channel, i.e. the busiest channel's service time.
        row["dram_min_ns"] = float(self.chn[K.CH_BUSY].max())
        row["mshr_min_ns"] = float(acc[K.A_MSHR_MIN_NS])
        row["store_queue_min_ns"] = float(acc[K.A_SQ_MIN_NS])
        row["prefetch_stall_cycles"] = 0.0      # no prefetcher in this model
        row["active_warps_avg"] = acc[K.A_WARPS] / n / cycles if cycles else 0.0
        row["occupancy"] = row["active_warps_avg"] / g.max_warps_per_sm
        row.update(self._energy(row, time_ns))
        return row

    def _energy(self, row: dict, time_ns: float) -> dict:
        """Energy of an interval, J (docs/DESIGN.md section 4; papers 000 section 4, 001
        section V-A).

        Core dynamic: SM events x energy per event x (V/V0)^2. Core static: leakage x (V/V0)
        (paper 000 section 4: P_static ~ v), for the active SMs' share of the chip. Memory
        domain (the ``dram_*`` columns): per DRAM transaction the DRAM's access energy (fixed
        per command, as GPUWattch's DRAM coefficients) plus the memory controller's at
        (Vm/Vm0)^2, and the DRAM background power of the memory state (I_dd2n x VDD). L2 and
        interconnect accesses: at (Vm/Vm0)^2 in the memory domain where the GPU puts them there
        (``l2_domain = "mem"``, paper 001 section V-A: "the network on chip, L2 cache, memory
        controller and DRAM" change with the memory V/F), else unscaled in their own fixed
        domain and booked with the core's dynamic energy. Other: constant board power.
        """
        g, p, s = self.gpu, self.gpu.power, self.setting
        v = self.core_voltage(s.core_mhz) / g.nominal_core_v
        vm = g.mem_voltage(s.mem_mhz) / g.nominal_mem_v
        sm_nj = (row["instructions"] * p["inst_nj"] + row["alu_insts"] * p["alu_nj"]
                 + row["sfu_insts"] * p["sfu_nj"] + row["l1_accesses"] * p["l1_nj"]
                 + row["shared_transactions"] * p["shared_nj"] + row["dp_insts"] * p["dp_nj"])
        l2_nj = row["l2_accesses"] * p["l2_nj"]
        mem_l2_nj = l2_nj * vm * vm if g.l2_domain == "mem" else 0.0
        core_l2_nj = 0.0 if g.l2_domain == "mem" else l2_nj
        dram_tx = row["dram_reads"] + row["dram_writes"]
        seconds = time_ns * 1e-9
        return {
            "core_dynamic_j": (sm_nj * v * v + core_l2_nj) * 1e-9,
            "core_static_j": p["core_static_w"] * v * (self.n_sm / g.n_sm) * seconds,
            "dram_dynamic_j": (dram_tx * (p["dram_nj"] + p["mc_nj"] * vm * vm)
                               + mem_l2_nj) * 1e-9,
            "dram_static_j": g.dram_background_w(s.mem_mhz) * seconds,
            "other_j": p["other_w"] * seconds,
        }

    def run(self, controller: Controller | None = None) -> SimResult:
        """Run to the end, letting ``controller`` choose each next interval's setting."""
        start = self.setting
        while True:
            row = self.step()
            if row is None:
                break
            if controller is not None and not self.finished:
                self.apply(controller.decide(row["idx"], row, self.setting))
                per_sm = getattr(controller, "decide_sm_limits", None)
                if per_sm is not None:
                    self.apply_sm_limits(per_sm(row["idx"], row, self.sm_limits))
        policy = "fixed" if controller is None else controller.name
        key = policy if controller is None else getattr(controller, "run_key", policy)
        rid = run_id(self.gpu, self.kernel, start.core_mhz, start.mem_mhz, self.n_sm,
                     self.requested_ctas, self.interval_instructions, self.seed, key,
                     self.epoch_cycles, self.core_headroom, self.engine)
        result = self._result(rid, start, policy)
        result.controller = controller
        return result

    def _result(self, rid: str, start: Setting, policy: str) -> SimResult:
        rows = self.rows
        columns = {}
        for name, typ in INTERVAL_COLUMNS:
            if name == "run_id":
                columns[name] = pa.array([rid] * len(rows), typ)
            else:
                columns[name] = pa.array([r[name] for r in rows], typ)
        table = pa.table(columns)
        energy = sum(r[c] for r in rows for c in ("core_dynamic_j", "core_static_j",
                                                   "dram_dynamic_j", "dram_static_j", "other_j"))
        run = {
            "run_id": rid, "source": "sim", "kernel_id": self.kernel.kernel_id,
            "gpu_id": self.gpu.name, "policy": policy, "core_mhz": start.core_mhz,
            "mem_mhz": start.mem_mhz, "n_sm": self.n_sm, "ctas_per_sm": start.ctas_per_sm,
            "interval_instructions": self.interval_instructions, "seed": self.seed,
            "time_ns": sum(r["time_ns"] for r in rows), "energy_j": energy,
            "instructions": sum(r["instructions"] for r in rows), "input_hash": rid,
            "engine": self.engine,
        }
        extra = {k: np.asarray(v) for k, v in self.extra.items()}
        return SimResult(run=run, intervals=table, extra=extra)


def simulate(gpu: GpuConfig | str, kernel: KernelSpec, core_mhz: float | None = None,
             mem_mhz: float | None = None, n_sm: int | None = None,
             ctas_per_sm: int | None = None,
             interval_instructions: int = DEFAULT_INTERVAL_INSTRUCTIONS, seed: int = 0,
             controller: Controller | None = None, skip: bool = True,
             reference: bool = False, epoch_cycles: int | None = None,
             core_headroom: float = 0.0) -> SimResult:
    """Simulate ``kernel`` on ``gpu`` from the given setting (defaults: nominal clocks, all
    SMs, the hardware CTA limit); with ``controller`` the setting may change per interval;
    with ``epoch_cycles`` intervals are cut every that many core cycles; ``core_headroom``
    allows core clocks that far above the top P-state (see Simulation)."""
    sim = Simulation(gpu, kernel, core_mhz, mem_mhz, n_sm, ctas_per_sm, interval_instructions,
                     seed, skip=skip, reference=reference, epoch_cycles=epoch_cycles,
                     core_headroom=core_headroom)
    return sim.run(controller)
