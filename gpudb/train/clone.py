"""Synthetic clones of measured kernels, built from their profiler metrics at one base setting
(``gpudb clone``; docs/simulator.md, "Validation against real GPUs").

A measured run with nvprof metrics says how much of each kind of work a kernel does (warp
instructions by class, load/store/shared requests and their 32-byte transactions, traffic at
L1, L2 and DRAM, FP64 and special-function work) and how it ran (occupancy, IPC). A clone is a
suite kernel of the simulator (sim/config.py) with the same launch geometry and occupancy,
the same instruction mix per warp, the same transactions per request and hit probabilities
set so the expected traffic at each level is the profile's. What aggregate metrics cannot
say (where the loads sit in the code, what depends on what) is one fixed structure plus
knobs calibrated at the base setting only, never at the settings being predicted:

- the loop body is *phased*: the iteration's loads, then its computation, then its stores
  (with a barrier after the loads and at the end where the kernel uses shared memory and its
  CTAs have more than one warp), so a warp waits for memory and then computes, as a tile or
  stencil kernel does; the loads are independent of each other;
- ``dependence`` (d): each instruction of the computation waits for the one d places before
  it (the first d after the loads wait for the loads), so d = 1 is one dependent chain and a
  large d independent streams. The smallest |log(IPC_sim / executed_ipc)| over a ladder of d
  wins;
- ``fp64_conversion_share`` (q): only for kernels that execute FP64 arithmetic and whose
  clone is still faster than measured at d = 1. nvprof's classes (inst_fp_32, inst_integer,
  inst_fp_64, control, memory) leave some of inst_executed unclassified: conversions,
  moves, shuffles. On compute capability 6.1 conversions to and from 64-bit types run at the
  FP64 rate (4 per clock per SM, CUDA C Programming Guide, arithmetic instruction throughput
  table), and a kernel that computes in double from float data converts; q is the share of
  the unclassified instructions run on the FP64 unit (the rest on the ALUs), the ladder value
  whose IPC is closest to the measured one;
- ``load_chain`` (m): for the other kernels still faster than measured at d = 1, the share
  of the iteration's loads that wait for the load before them (an index loaded, then the
  value it points to: a sparse matrix's column index, a gather), the same way. A chained load
  waits for the whole round trip, L2 (core clock) and DRAM (memory clock), so it trades
  memory-level parallelism for latency, which both clocks set.

Every derived field keeps the metrics and the formula it came from (:class:`Derived`), and
:func:`suite_text` writes them beside the values in the suite file.

The clone is smaller than the kernel: loop iterations and whole waves of CTAs (a wave is every
SM's CTA slots filled once) are cut to about ``budget`` warp instructions, keeping every CTA
of a kernel of up to 16 waves (the uneven end of a few waves is part of its time) and at
least 16 waves of a longer one, so each setting's time is its steady state. Its normalised
time (t / t_base) is what is compared, so its size does not enter; its power is anchored to
the kernel's size (``instructions`` in the clone table).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb
import numpy as np

from gpudb.store.db import GpudbError
from sim.config import GpuConfig, kernel_from_table

RECIPE_VERSION = "1"
# metrics the recipe cannot do without (the others default to 0: a kernel without shared
# memory has no shared_* metrics in some profiles)
REQUIRED = ("inst_executed", "executed_ipc", "achieved_occupancy", "blocks", "warps_per_block")
OPTIONAL = (
    "warp_execution_efficiency", "gld_transactions", "gld_transactions_per_request",
    "gst_transactions", "gst_transactions_per_request", "shared_load_transactions",
    "shared_load_transactions_per_request", "shared_store_transactions",
    "shared_store_transactions_per_request", "l2_tex_read_transactions",
    "tex_cache_transactions", "l2_read_transactions", "dram_read_transactions",
    "l2_write_transactions", "dram_write_transactions", "inst_fp_32", "inst_integer",
    "inst_fp_64", "flop_count_sp_special", "cf_executed")
BODY_SLOTS = 126        # instructions of the loop body (the simulator's limit is 128: 2 barriers)
DEPENDENCE_LADDER = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 126)
SHARE_LADDER = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
WAVES = 16.0
DEFAULT_BUDGET = 3_000_000   # warp instructions per clone run


@dataclass(frozen=True)
class Profile:
    """A measured kernel at the base setting: its run's time (ns) and metrics by name."""

    gpu_id: str
    kernel_id: str
    core_mhz: float
    mem_mhz: float
    time_ns: float
    metrics: dict[str, float]

    def m(self, name: str) -> float:
        value = self.metrics.get(name)
        return 0.0 if value is None or not math.isfinite(value) else float(value)


@dataclass(frozen=True)
class Derived:
    """A clone field's value and where it came from (metrics and formula, for the file)."""

    value: float
    how: str


@dataclass
class Clone:
    """A kernel's clone before and after calibration: the derived fields (per warp unless
    named otherwise), the body, the knobs and what calibration found."""

    profile: Profile
    name: str
    fields: dict[str, Derived]
    dependence: int = 1
    fp64_share: float = 0.0
    load_chain: float = 0.0
    fp64_unit: bool = True          # the configuration has an FP64 unit (else FP64 on the SFU)
    without: frozenset = frozenset()  # recipe parts left out (ABLATIONS), for measuring them
    base_ipc_sim: float | None = None
    notes: list[str] = field(default_factory=list)

    def f(self, key: str) -> float:
        return self.fields[key].value

    @property
    def fp64(self) -> bool:
        return self.f("dp") > 0


def load_profiles(con: duckdb.DuckDBPyConnection, gpu_id: str, core_mhz: float,
                  mem_mhz: float, kernels: list[str] | None = None) -> list[Profile]:
    """The measured fixed runs of ``gpu_id`` at (core_mhz, mem_mhz) with their whole-run
    metrics, one per kernel (the first run by id where a kernel was measured twice)."""
    rows = con.execute("""
        WITH base AS (
            SELECT run_id, kernel_id, time_ns FROM run
            WHERE gpu_id = ? AND core_mhz = ? AND mem_mhz = ? AND source = 'measured'
              AND policy = 'fixed'
            QUALIFY row_number() OVER (PARTITION BY kernel_id ORDER BY run_id) = 1)
        SELECT b.kernel_id, b.time_ns, list(m.name), list(m.value)
        FROM base AS b LEFT JOIN metric AS m ON m.run_id = b.run_id AND m.idx IS NULL
        GROUP BY ALL ORDER BY b.kernel_id""", [gpu_id, core_mhz, mem_mhz]).fetchall()
    if not rows:
        raise GpudbError(f"no measured runs of {gpu_id} at {core_mhz:g}/{mem_mhz:g} MHz")
    profiles = [Profile(gpu_id, k, float(core_mhz), float(mem_mhz), float(t),
                        {n: float(v) for n, v in zip(names, values, strict=True)
                         if n is not None and v is not None})
                for k, t, names, values in rows]
    if kernels:
        unknown = sorted(set(kernels) - {p.kernel_id for p in profiles})
        if unknown:
            raise GpudbError(f"no measured run at {core_mhz:g}/{mem_mhz:g} MHz for "
                             f"{', '.join(unknown)}")
        profiles = [p for p in profiles if p.kernel_id in kernels]
    return profiles


def missing_metrics(profile: Profile) -> list[str]:
    return [n for n in REQUIRED if n not in profile.metrics]


def clone_name(kernel_id: str) -> str:
    """A suite kernel name for a measured kernel_id ('suite/app:kernel' -> 'app.kernel')."""
    tail = kernel_id.split("/", 1)[-1]
    name = re.sub(r"[^A-Za-z0-9_.-]+", ".", tail.replace(":", ".")).strip(".")
    return name or "kernel"


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 0.0


def _clamp(x: float) -> float:
    return min(1.0, max(0.0, x))


ABLATIONS = ("ctas_per_sm", "load_chain")


def derive(profile: Profile, gpu: GpuConfig, budget: int = DEFAULT_BUDGET,
           without: frozenset = frozenset()) -> Clone:
    """The clone's fields from the profile (no simulation). Raises GpudbError naming the
    metrics the profile lacks. ``without``: parts of the recipe to leave out (ABLATIONS:
    the kernel's own CTA limit, the load-chain knob), to measure what each one does."""
    missing = missing_metrics(profile)
    if missing:
        raise GpudbError(f"{profile.kernel_id}: the profile lacks {', '.join(missing)} "
                         "(gpudb clone needs nvprof-style metrics and the launch geometry "
                         "as inputs 'blocks' and 'warps_per_block'; docs/simulator.md)")
    m = profile.m
    ctas = int(round(m("blocks")))
    wpc = int(round(m("warps_per_block")))
    if ctas < 1 or wpc < 1 or m("inst_executed") <= 0 or m("executed_ipc") <= 0:
        raise GpudbError(f"{profile.kernel_id}: blocks, warps_per_block, inst_executed and "
                         "executed_ipc must be positive")
    if wpc > gpu.max_warps_per_sm:
        raise GpudbError(f"{profile.kernel_id}: {wpc} warps per block do not fit an SM of "
                         f"{gpu.name} ({gpu.max_warps_per_sm} warps)")
    w = ctas * wpc
    wee = m("warp_execution_efficiency") or 1.0
    fields: dict[str, Derived] = {}

    def put(key, value, how):
        fields[key] = Derived(float(value), how)

    put("ctas", ctas, "blocks")
    put("warps_per_cta", wpc, "warps_per_block")
    put("W", w, "blocks x warps_per_block (warps in the grid)")
    put("I", m("inst_executed") / w, "inst_executed / W")
    per_thread = 32 * wee
    put("ld", _ratio(m("gld_transactions"), m("gld_transactions_per_request")) / w,
        "gld_transactions / gld_transactions_per_request / W")
    put("st", _ratio(m("gst_transactions"), m("gst_transactions_per_request")) / w,
        "gst_transactions / gst_transactions_per_request / W")
    shl = _ratio(m("shared_load_transactions"), m("shared_load_transactions_per_request")) / w
    shs = _ratio(m("shared_store_transactions"), m("shared_store_transactions_per_request")) / w
    put("sh", shl + shs, "(shared_load_transactions / shared_load_transactions_per_request + "
        "the same for stores) / W")
    put("dp", m("inst_fp_64") / per_thread / w,
        "inst_fp_64 / (32 x warp_execution_efficiency) / W")
    put("sfu", m("flop_count_sp_special") / per_thread / w,
        "flop_count_sp_special / (32 x warp_execution_efficiency) / W")
    alu = ((m("inst_fp_32") + m("inst_integer")) / per_thread + m("cf_executed")) / w
    put("alu", max(alu - fields["sfu"].value, 0.0),
        "(inst_fp_32 + inst_integer) / (32 x warp_execution_efficiency) / W + cf_executed / W "
        "- sfu")
    known = sum(fields[k].value for k in ("ld", "st", "sh", "dp", "sfu", "alu"))
    unclassified = max(fields["I"].value - known, 0.0)
    tex = 0.0
    if fields["ld"].value == 0 and m("l2_tex_read_transactions") > 0:
        # texture fetches are no global loads: their requests, at the 4 transactions a
        # request of the global loads shows, out of the unclassified instructions
        tex = min(m("tex_cache_transactions") / 4 / w, unclassified)
    put("tex", tex, "texture-only kernel: tex_cache_transactions / 4 / W (at most the "
        "unclassified instructions)")
    put("unclassified", unclassified - tex, "I - ld - st - sh - dp - sfu - alu - tex")
    loads = (fields["ld"].value + tex) * w
    l1_sectors = max(_ratio(m("tex_cache_transactions"), loads),
                     _ratio(m("l2_tex_read_transactions"), loads), 1.0)
    put("ld_trans", l1_sectors, "max(tex_cache_transactions, l2_tex_read_transactions) / "
        "load requests (32 B sectors per request at L1)")
    put("l1_hit", _clamp(1 - _ratio(m("l2_tex_read_transactions"), l1_sectors * loads))
        if loads else 0.0, "1 - l2_tex_read_transactions / L1 sectors")
    put("l2_hit", _clamp(1 - _ratio(m("dram_read_transactions"), m("l2_read_transactions")))
        if m("l2_read_transactions") > 0 else 0.0,
        "1 - dram_read_transactions / l2_read_transactions")
    put("st_trans", max(m("gst_transactions_per_request"), 1.0), "gst_transactions_per_request")
    put("dram_write", _clamp(_ratio(m("dram_write_transactions"), m("l2_write_transactions")))
        if m("l2_write_transactions") > 0 else 1.0,
        "dram_write_transactions / l2_write_transactions")
    sh_tx = m("shared_load_transactions") + m("shared_store_transactions")
    put("sh_trans", max(_ratio(sh_tx, (shl + shs) * w), 1.0),
        "shared transactions / shared requests (1 + bank-conflict replays)")
    # resident CTAs: what achieved_occupancy says of the kernel's own limit (registers, shared
    # memory), but at most the hardware's; a grid of one partial wave fills what it has
    hw = min(gpu.max_ctas_per_sm, gpu.max_warps_per_sm // wpc)
    occ = m("achieved_occupancy")
    if ctas <= gpu.n_sm * hw:
        cps, how = min(hw, math.ceil(ctas / gpu.n_sm)), "ceil(blocks / SMs): one partial wave"
    else:
        cps = max(1, min(hw, round(occ * gpu.max_warps_per_sm / wpc)))
        how = (f"round(achieved_occupancy x {gpu.max_warps_per_sm} / warps_per_block), "
               f"at most {hw}")
    put("ctas_per_sm", cps, how)
    # the clone's size: every CTA of a kernel of up to WAVES waves (a few waves end
    # unevenly, and that tail's share must be the kernel's), else WAVES waves or more; then
    # as many loop iterations (at least one) as the budget allows
    waves = ctas / (gpu.n_sm * cps)
    slots = body_slots(fields)
    per_iteration_wave = gpu.n_sm * cps * wpc * slots
    full = max(1, round(fields["I"].value / slots))
    if waves <= WAVES:
        clone_ctas = ctas
        iterations = max(1, min(full, int(budget // (ctas * wpc * slots))))
    else:
        iterations = max(1, min(full, int(budget // (WAVES * per_iteration_wave))))
        keep = min(waves, max(WAVES, budget / (per_iteration_wave * iterations)))
        clone_ctas = max(1, min(ctas, int(round(keep * gpu.n_sm * cps))))
    put("waves", waves, "blocks / (SMs x ctas_per_sm)")
    put("iterations", iterations, f"I / body length, fewer where the clone's CTAs at that "
        f"length exceed {budget:,} warp instructions")
    put("clone_ctas", clone_ctas, f"every CTA of a kernel of up to {WAVES:g} waves, else "
        f"{WAVES:g} waves or as many more as {budget:,} warp instructions allow")
    return Clone(profile, clone_name(profile.kernel_id), fields,
                 fp64_unit=gpu.has_fp64_unit, without=frozenset(without))


def body_slots(fields: dict[str, Derived]) -> int:
    """Instructions of the clone's loop body: the kernel's per warp, at most BODY_SLOTS."""
    kinds = sum(1 for k in ("ld", "tex", "st", "sh", "sfu", "dp", "alu", "unclassified")
                if fields[k].value > 0)
    return int(min(BODY_SLOTS, max(kinds, round(fields["I"].value))))


def _spread(counts: dict[str, float], slots: int) -> list[str]:
    """``slots`` instruction kinds in the proportions of ``counts`` (every kind at least once),
    each kind's instructions spaced evenly."""
    total = sum(counts.values())
    ints = {k: max(1, int(math.floor(v * slots / total))) for k, v in counts.items()}
    while sum(ints.values()) > slots:
        k = max(ints, key=lambda k: ints[k] - counts[k] * slots / total)
        ints[k] -= 1
    order = sorted(counts, key=lambda k: -(counts[k] * slots / total - ints[k]))
    i = 0
    while sum(ints.values()) < slots:
        ints[order[i % len(order)]] += 1
        i += 1
    placed = sorted(((j + 0.5) / n, k) for k, n in ints.items() for j in range(n))
    return [k for _, k in placed]


OPS = {"ld": "ld", "tex": "ld", "st": "st", "sh": "shared", "sfu": "sfu", "alu": "alu",
       "dp": "dp"}
# without an FP64 unit, FP64 instructions run on the SFU (the model before issue 37)
NO_FP64_UNIT = {**OPS, "dp": "sfu"}
PHASE_RANK = {"ld": 0, "tex": 0, "st": 2}


def kernel_table(c: Clone) -> dict:
    """The clone as a suite [[kernel]] table (sim/config.py), at its current knobs."""
    f = c.f
    q = c.fp64_share if c.fp64 else 0.0
    counts = {"ld": f("ld") + f("tex"), "st": f("st"), "sh": f("sh"), "sfu": f("sfu"),
              "dp": f("dp") + q * f("unclassified"),
              "alu": f("alu") + (1 - q) * f("unclassified")}
    counts = {k: v for k, v in counts.items() if v > 1e-3 * f("I")}
    barriers = f("sh") > 0 and f("warps_per_cta") > 1
    slots = max(len(counts), body_slots(c.fields))
    order = sorted(_spread(counts, slots), key=lambda k: PHASE_RANK.get(k, 1))
    n_ld = sum(1 for k in order if k == "ld")
    d = max(1, min(slots, c.dependence))
    body = []
    chained = int(round(c.load_chain * max(n_ld - 1, 0)))
    for j, kind in enumerate(order):
        ins: dict = {"op": (OPS if c.fp64_unit else NO_FP64_UNIT)[kind], "id": f"i{j}"}
        if kind == "ld" and 1 <= j <= chained:
            ins["dep"] = f"i{j - 1}"
        if kind != "ld":
            if j - d < n_ld:
                if n_ld and j >= n_ld:
                    ins["dep"] = f"i{(j - n_ld) % n_ld}"
            else:
                ins["dep"] = f"i{j - d}"
        if kind == "ld":
            ins.update(trans=max(1, int(round(f("ld_trans")))), l1_hit=round(f("l1_hit"), 4),
                       l2_hit=round(f("l2_hit"), 4))
        elif kind == "st":
            ins.update(trans=max(1, int(round(f("st_trans")))),
                       dram_write=round(f("dram_write"), 4))
        elif kind == "sh":
            ins.update(trans=max(1, int(round(f("sh_trans")))))
        body.append(ins)
    if barriers:
        body.insert(n_ld, {"op": "bar"})
        body.append({"op": "bar"})
    ctas = int(f("clone_ctas"))
    wpc = int(f("warps_per_cta"))
    iterations = int(f("iterations"))
    p = c.profile
    table = {
        "name": c.name, "category": "clone",
        "description": (f"Synthetic clone of the measured kernel {p.kernel_id} on {p.gpu_id}, "
                        f"built by gpudb clone from its profiler metrics at "
                        f"{p.core_mhz:g}/{p.mem_mhz:g} MHz (recipe {RECIPE_VERSION})."),
        "ctas": ctas, "warps_per_cta": wpc, "ctas_per_sm": int(f("ctas_per_sm")),
        "clone": {"measured_gpu": p.gpu_id, "measured_kernel": p.kernel_id,
                  "base_core_mhz": p.core_mhz, "base_mem_mhz": p.mem_mhz,
                  "instructions": float(p.m("inst_executed")),
                  "executed_ipc": p.m("executed_ipc"), "recipe": RECIPE_VERSION,
                  "dependence": d, "fp64_conversion_share": q,
                  "load_chain": c.load_chain,
                  "base_ipc_simulated": (None if c.base_ipc_sim is None
                                         else round(c.base_ipc_sim, 4))},
        "phase": [{"iterations": iterations, "body": body}],
    }
    if "ctas_per_sm" in c.without:
        del table["ctas_per_sm"]
    return table


def simulated_ipc(gpu: GpuConfig, table: dict, core_mhz: float, mem_mhz: float,
                  seed: int = 0) -> float:
    """Warp instructions per cycle of an SM with resident CTAs (nvprof's executed_ipc), of a
    clone simulated at one setting."""
    from sim.model import simulate

    r = simulate(gpu, kernel_from_table(table, "clone"), core_mhz, mem_mhz, seed=seed)
    iv = r.intervals
    cycles = np.asarray(iv.column("cycles").to_numpy(), float)
    empty = np.asarray(iv.column("sm_empty_cycles").to_numpy(), float)
    active = float(np.sum(gpu.n_sm * (cycles - empty)))
    return float(r.run["instructions"]) / active if active > 0 else 0.0


def _closest(ladder, ipc_at, target: float, rising: bool):
    """The ladder value whose simulated IPC is closest to ``target`` (in log), by bisection on
    a ladder along which the IPC rises (or, ``rising`` False, falls) with the value:
    (value, its IPC). ``ipc_at`` simulates, memoised by index."""
    seen: dict[int, float] = {}

    def at(i: int) -> float:
        if i not in seen:
            seen[i] = ipc_at(ladder[i])
        return seen[i]

    lo, hi = 0, len(ladder) - 1
    below = (lambda i: at(i) < target) if rising else (lambda i: at(i) > target)
    if not below(lo):
        lo = hi = 0
    elif below(hi):
        lo = hi
    else:
        while hi - lo > 1:          # below(lo) and not below(hi)
            mid = (lo + hi) // 2
            if below(mid):
                lo = mid
            else:
                hi = mid
    best = min({lo, hi}, key=lambda i: abs(math.log(max(at(i), 1e-9) / target)))
    return ladder[best], at(best)


def calibrate_one(c: Clone, gpu: GpuConfig) -> Clone:
    """Set one clone's knobs at its base setting (see the module docstring): the dependence
    distance, then, for an FP64 kernel still too fast at d = 1, the FP64 conversion share."""
    p = c.profile
    target = p.m("executed_ipc")

    def ipc_at(d: int, q: float = 0.0) -> float:
        c.dependence, c.fp64_share = d, q
        return simulated_ipc(gpu, kernel_table(c), p.core_mhz, p.mem_mhz)

    c.load_chain = 0.0
    d, ipc = _closest(DEPENDENCE_LADDER, ipc_at, target, rising=True)
    q = m = 0.0
    if d == DEPENDENCE_LADDER[0] and ipc > 1.02 * target and c.fp64:
        q, ipc = _closest(SHARE_LADDER, lambda x: ipc_at(1, x), target, rising=False)
    elif d == DEPENDENCE_LADDER[0] and ipc > 1.02 * target and "load_chain" not in c.without:

        def chained(x: float) -> float:
            c.load_chain = x
            return ipc_at(1)

        m, ipc = _closest(SHARE_LADDER, chained, target, rising=False)
    c.dependence, c.fp64_share, c.load_chain, c.base_ipc_sim = d, q, m, ipc
    c.notes = []
    if ipc > 1.1 * target:
        c.notes.append(f"the clone is faster than measured at every knob setting (IPC "
                       f"{ipc:.2f} against {target:.2f})")
    elif ipc < target / 1.1:
        c.notes.append(f"the clone is slower than measured at every knob setting (IPC "
                       f"{ipc:.2f} against {target:.2f})")
    return c


def _calibrate_job(args) -> Clone:
    return calibrate_one(*args)


def calibrate(clones: list[Clone], gpu: GpuConfig, jobs: int = 1,
              progress: Callable[[int, int], None] | None = None) -> None:
    """Calibrate every clone (calibrate_one), ``jobs`` clones at a time in worker
    processes; the clones are updated in place."""
    from sim.sweep import worker_pool

    if progress is not None:
        progress(0, len(clones))
    if jobs <= 1 or len(clones) <= 1:
        done = (calibrate_one(c, gpu) for c in clones)
        pool = None
    else:
        pool = worker_pool(min(jobs, len(clones)))
        done = pool.map(_calibrate_job, [(c, gpu) for c in clones])
    try:
        for n, (c, result) in enumerate(zip(clones, done, strict=True)):
            c.dependence, c.fp64_share = result.dependence, result.fp64_share
            c.load_chain = result.load_chain
            c.base_ipc_sim, c.notes = result.base_ipc_sim, result.notes
            if progress is not None:
                progress(n + 1, len(clones))
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else "nan"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    raise TypeError(f"no TOML for {v!r}")


def _inline(d: dict) -> str:
    return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in d.items()) + "}"


def suite_name(gpu_id: str) -> str:
    return "clone-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", gpu_id)


def suite_text(clones: list[Clone], gpu: GpuConfig, command: str = "") -> str:
    """The clones as a suite file (sim/config.py format), every field beside the metrics and
    formula it came from. Loads back with sim.config.load_suite."""
    first = clones[0].profile
    lines = [
        f"# Synthetic clones of {len(clones)} measured kernels of {first.gpu_id}, each built",
        f"# from its profiler metrics at {first.core_mhz:g}/{first.mem_mhz:g} MHz by gpudb "
        f"clone (recipe {RECIPE_VERSION},",
        f"# simulator configuration {gpu.name}). None is the measured program: a clone has its "
        "launch geometry,",
        "# occupancy, instruction mix, transactions and hit rates, and two knobs calibrated at "
        "the base",
        "# setting only (docs/simulator.md, \"Validation against real GPUs\").",
    ]
    if command:
        lines.append(f"# Made by: {command}")
    lines += [f"name = {_toml_value(suite_name(first.gpu_id))}",
              "description = " + _toml_value(
                  f"Synthetic clones of measured {first.gpu_id} kernels from their profiles "
                  f"at {first.core_mhz:g}/{first.mem_mhz:g} MHz (gpudb clone, recipe "
                  f"{RECIPE_VERSION})"),
              ""]
    for c in clones:
        table = kernel_table(c)
        f = c.fields
        lines.append(f"# ---- {c.profile.kernel_id}")
        lines.append(f"# per warp (W = {f['W'].value:,.0f} warps; "
                     f"{f['waves'].value:,.1f} waves):")
        for key in ("I", "ld", "tex", "st", "sh", "alu", "sfu", "dp", "unclassified", "ld_trans",
                    "l1_hit", "l2_hit", "st_trans", "dram_write", "sh_trans"):
            lines.append(f"#   {key:<13} {f[key].value:12.4g}  = {f[key].how}")
        clone = table["clone"]
        lines.append(f"# knobs at the base setting (measured executed_ipc "
                     f"{clone['executed_ipc']:.3g}, simulated {clone['base_ipc_simulated']}):"
                     f" dependence {clone['dependence']}, FP64 conversion share "
                     f"{clone['fp64_conversion_share']:g}")
        for note in c.notes:
            lines.append(f"# note: {note}")
        lines.append("[[kernel]]")
        for key in ("name", "category", "description"):
            lines.append(f"{key} = {_toml_value(table[key])}")
        lines.append(f"ctas = {table['ctas']}  # {f['clone_ctas'].how} (the kernel has "
                     f"{f['ctas'].value:,.0f} = blocks)")
        lines.append(f"warps_per_cta = {table['warps_per_cta']}  # {f['warps_per_cta'].how}")
        if "ctas_per_sm" in table:
            lines.append(f"ctas_per_sm = {table['ctas_per_sm']}  # {f['ctas_per_sm'].how}")
        lines.append("[kernel.clone]")
        for key, value in clone.items():
            if value is not None:
                lines.append(f"{key} = {_toml_value(value)}")
        phase = table["phase"][0]
        lines.append("[[kernel.phase]]")
        lines.append(f"iterations = {phase['iterations']}  # {f['iterations'].how}")
        lines.append("body = [")
        for ins in phase["body"]:
            lines.append(f"  {_inline(ins)},")
        lines.append("]")
        lines.append("")
    return "\n".join(lines)
