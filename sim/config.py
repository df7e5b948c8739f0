"""GPU configurations (fixtures/gpus/*.toml) and kernel suites (fixtures/suites/*.toml).

Both are found by name in the shipped fixture folders (:func:`fixture_dir`: a source checkout
or an installed wheel) or by path. Loading validates everything
and raises :class:`ConfigError` naming the file, the kernel and the field, so a bad fixture
never reaches the jitted model.

A kernel is data (docs/DESIGN.md section 4): a grid (``ctas`` x ``warps_per_cta``) and a per-warp
program of phases, each a loop body run ``iterations`` times. A body is a list of instruction
groups, e.g. ``{op = "alu", n = 4, dep = "prev"}``:

- ``op``: ``alu``, ``sfu``, ``ld`` (global load), ``st`` (global store), ``shared``, ``bar``.
- ``n``: repeat count (default 1).
- ``dep``: producer(s) whose result the instruction waits for (the scoreboard): ``"prev"``
  (the instruction before it; for the body's first instruction, the body's last one in the
  previous iteration), a label given by another group's ``id`` (its last instruction), or a
  list of up to two of these. A label defined later in the body means the previous
  iteration's instance (a loop-carried dependence). With ``n > 1`` and ``dep = "prev"`` the
  group is a dependent chain; with a label, all ``n`` wait for that label only.
- ``ld``: ``trans`` (transactions per warp request: 1 coalesced .. 32 scattered), ``l1_hit``
  and ``l2_hit`` (hit probabilities per transaction).
- ``st``: ``trans``, ``dram_write`` (fraction of transactions written through to DRAM; the
  rest are absorbed by L2).
- ``shared``: ``trans`` (1 + bank-conflict replays).

A suite may instead derive every kernel from another suite (``base = "default"``) by a
whole-number rule per kernel, ``ctas_scale`` or ``iterations_scale``
(:func:`_derived_kernels`): the ``long`` suite is ``default`` at paper scale without a second
copy of its programs.
"""

from __future__ import annotations

import copy
import difflib
import math
import os
import stat
import tomllib
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

import numpy as np

from sim import _kernels as K

OPS = {"alu": K.OP_ALU, "sfu": K.OP_SFU, "ld": K.OP_LD, "st": K.OP_ST, "shared": K.OP_SH,
       "bar": K.OP_BAR, "dp": K.OP_DP}
MAX_BODY = 128  # instructions per phase body; bounds the per-warp scoreboard array
# Warp instructions one run of a kernel may execute: 450 times the largest shipped kernel
# (the long suite's 22 M), about 40 minutes of simulation at 4 M warp instructions/s; far
# below where the simulator's int64 counters overflow. A suite file asking for more (ctas
# 10^12, iterations 10^15) ran without bound (issue 41 item 4); it is refused when loaded.
MAX_WARP_INSTRUCTIONS = 10_000_000_000
# Bytes of a kernel's footprint or shared memory per CTA: 1 TiB, far past any GPU's memory
MAX_BYTES = 1 << 40


class ConfigError(ValueError):
    """A GPU or suite file that cannot be used; the message names file, kernel and field."""


@dataclass(frozen=True)
class GpuConfig:
    """A GPU: structure, latencies, DRAM, P-states and power (units in the field names)."""

    name: str
    description: str
    path: str
    raw: dict                                   # the parsed TOML, stored as gpu.config
    n_sm: int
    sm_counts: tuple[int, ...]
    max_warps_per_sm: int
    max_ctas_per_sm: int
    shared_bytes_per_sm: int
    transaction_bytes: int
    core_mhz: tuple[float, ...]
    core_v: tuple[float, ...]
    nominal_core_mhz: float
    mem_mhz: tuple[float, ...]
    mem_v: tuple[float, ...]
    mem_background_w: tuple[float, ...]
    nominal_mem_mhz: float
    switch_ns: float
    power: dict
    gp: np.ndarray = field(repr=False)          # G_* parameter vector of sim._kernels
    # the V/F domain of L2 and the interconnect: "fixed" (own clock, energy not voltage-scaled,
    # paper 000 section 2.2) or "mem" (with the memory controller and DRAM, paper 001 IV-C)
    l2_domain: str = "fixed"

    def core_voltage(self, mhz: float) -> float:
        """Core voltage at ``mhz``, interpolated linearly between P-states."""
        return float(np.interp(mhz, self.core_mhz, self.core_v))

    def mem_voltage(self, mhz: float) -> float:
        """Memory-domain voltage at memory clock ``mhz``, V, interpolated between states."""
        return float(np.interp(mhz, self.mem_mhz, self.mem_v))

    def dram_background_w(self, mhz: float) -> float:
        """DRAM background (active standby, refresh) power at memory clock ``mhz``, W: the
        configured per-state value, I_dd2n x VDD (paper 001 section V-A)."""
        return float(np.interp(mhz, self.mem_mhz, self.mem_background_w))

    @property
    def has_fp64_unit(self) -> bool:
        """Whether FP64 ('dp') instructions have a unit of their own (dp_* parameters)."""
        return bool(self.gp[K.G_DP_II] > 0)

    @property
    def nominal_core_v(self) -> float:
        return self.core_voltage(self.nominal_core_mhz)

    @property
    def nominal_mem_v(self) -> float:
        return self.mem_voltage(self.nominal_mem_mhz)


@dataclass(frozen=True)
class KernelSpec:
    """One synthetic kernel of a suite, with its program compiled to arrays."""

    name: str
    suite: str
    category: str
    description: str
    raw: dict                                   # the TOML table, stored as kernel.spec
    ctas: int
    warps_per_cta: int
    footprint_bytes: int
    shared_bytes_per_cta: int
    program: dict = field(repr=False)           # op, dep0, dep1, trans, pl1, pl2, pwr, ph_*
    # resident CTAs per SM the kernel's own resources allow (registers; 0: the GPU's limits)
    max_ctas_per_sm: int = 0

    @property
    def kernel_id(self) -> str:
        return f"{self.suite}/{self.name}"

    @property
    def warp_instructions(self) -> int:
        """Warp instructions the whole grid executes."""
        per_warp = int(np.sum(self.program["ph_len"] * self.program["ph_iters"]))
        return self.ctas * self.warps_per_cta * per_warp

    def cta_slots(self, gpu: GpuConfig) -> int:
        """Resident CTAs per SM the hardware allows (warps, CTA and shared-memory limits, and
        the kernel's own ``ctas_per_sm``: a limit its registers set, which a suite file states
        because the model has no register file)."""
        slots = min(gpu.max_ctas_per_sm, gpu.max_warps_per_sm // self.warps_per_cta)
        if self.shared_bytes_per_cta > 0:
            slots = min(slots, gpu.shared_bytes_per_sm // self.shared_bytes_per_cta)
        if self.max_ctas_per_sm > 0:
            slots = min(slots, self.max_ctas_per_sm)
        return slots


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    path: str
    kernels: tuple[KernelSpec, ...]

    def kernel(self, name: str) -> KernelSpec:
        for k in self.kernels:
            if k.name == name:
                return k
        raise ConfigError(f"{self.path}: no kernel named {name!r} "
                          f"(have: {', '.join(k.name for k in self.kernels)})")


def fixture_dir(kind: str) -> Path:
    """Folder of the shipped fixtures of a kind, 'gpus' or 'suites'.

    A wheel carries the top-level ``fixtures/<kind>`` as ``sim/_data/fixtures/<kind>`` (see
    pyproject.toml); a checkout or an editable install has it beside the package.
    """
    package = files("sim")
    bundled = package / "_data" / "fixtures" / kind
    if bundled.is_dir():
        return Path(str(bundled))
    checkout = Path(str(package)).parent / "fixtures" / kind
    if checkout.is_dir():
        return checkout
    raise ConfigError(f"fixture folder fixtures/{kind} not found (broken installation?)")


def _resolve(name_or_path: str | Path, kind: str) -> Path:
    text = str(name_or_path)
    path = Path(text)
    if path.suffix == ".toml" or path.exists() or "/" in text:
        if not path.is_file():
            raise ConfigError(f"{text}: no such {kind[:-1]} file")
        return path
    candidate = fixture_dir(kind) / f"{text}.toml"
    if not candidate.is_file():
        known = available(kind)
        # difflib's nearest names first: 'gtx48' -> 'gtx480' (gpudb.store.names does the same
        # for the database's names; sim stays free of gpudb)
        close = difflib.get_close_matches(text, known, n=3)
        guess = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        raise ConfigError(f"no {kind[:-1]} named {text!r} ({guess}known: {', '.join(known)})")
    return candidate


def available(kind: str) -> list[str]:
    """Names of the shipped fixtures of a kind: 'gpus' or 'suites'."""
    return sorted(p.stem for p in fixture_dir(kind).glob("*.toml"))


# the largest GPU or suite file read: the shipped ones are a few tens of KB
MAX_FILE_BYTES = 16 << 20


def _read(path: Path) -> dict:
    """A GPU or suite file's TOML tables. Only a regular file of at most MAX_FILE_BYTES is
    read (opened without blocking: a FIFO hangs nothing); invalid UTF-8 and nesting too deep
    for the parser are refused as invalid TOML, not tracebacks (issue 41 item 7)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            raise ConfigError(f"{path}: not a regular file of at most {MAX_FILE_BYTES:,} bytes")
        data = os.read(fd, MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: not UTF-8 at byte {exc.start}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None


def _num(table: dict, key: str, where: str, positive: bool = True, integer: bool = False,
         default=None):
    if key not in table:
        if default is not None:
            return default
        raise ConfigError(f"{where}: missing {key!r}")
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: {key!r} must be a number, got {value!r}")
    if integer and not (isinstance(value, int) or float(value).is_integer()):
        raise ConfigError(f"{where}: {key!r} must be a whole number, got {value!r}")
    if (positive and value <= 0) or (not positive and value < 0) or not math.isfinite(value):
        raise ConfigError(f"{where}: {key!r} must be {'>' if positive else '>='} 0, got {value!r}")
    return int(value) if integer else float(value)


def _bytes(table: dict, key: str, where: str) -> int:
    value = _num(table, key, where, positive=False, integer=True, default=0)
    if value > MAX_BYTES:
        raise ConfigError(f"{where}: {key!r} must be at most {MAX_BYTES:,} bytes, got {value:,}")
    return value


def _list(table: dict, key: str, where: str, n: int | None = None,
          zero: bool = False) -> tuple[float, ...]:
    values = table.get(key)
    if not isinstance(values, list) or not values:
        raise ConfigError(f"{where}: {key!r} must be a non-empty list")
    if n is not None and len(values) != n:
        raise ConfigError(f"{where}: {key!r} has {len(values)} entries, expected {n}")
    for v in values:
        if (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                or v < 0 or (v == 0 and not zero)):
            raise ConfigError(f"{where}: {key!r} entries must be "
                              f"{'numbers >= 0' if zero else 'positive numbers'}, got {v!r}")
    return tuple(float(v) for v in values)


def load_gpu(name_or_path: str | Path) -> GpuConfig:
    """Load a GPU configuration by fixture name (``gtx480``) or TOML path."""
    path = _resolve(name_or_path, "gpus")
    raw = _read(path)
    where = str(path)
    for section in ("sm", "memory", "core", "mem", "power"):
        if not isinstance(raw.get(section), dict):
            raise ConfigError(f"{where}: missing section [{section}]")
    sm, mem, core, mst, pw = raw["sm"], raw["memory"], raw["core"], raw["mem"], raw["power"]
    w = f"{where} [sm]"
    n_sm = _num(sm, "count", w, integer=True)
    sm_counts = tuple(int(v) for v in _list(sm, "counts", w)) if "counts" in sm else (n_sm,)
    if max(sm_counts) > n_sm:
        raise ConfigError(f"{w}: 'counts' exceeds 'count' ({n_sm})")
    gp = np.zeros(K.N_GP)
    gp[K.G_ISSUE_WIDTH] = _num(sm, "issue_width", w, integer=True)
    gp[K.G_ALU_WIDTH] = _num(sm, "alu_width", w, integer=True)
    gp[K.G_ALU_LAT] = _num(sm, "alu_latency_cycles", w, integer=True)
    gp[K.G_SFU_LAT] = _num(sm, "sfu_latency_cycles", w, integer=True)
    gp[K.G_SFU_II] = _num(sm, "sfu_interval_cycles", w, integer=True)
    gp[K.G_L1_LAT] = _num(sm, "l1_latency_cycles", w, integer=True)
    gp[K.G_SHARED_LAT] = _num(sm, "shared_latency_cycles", w, integer=True)
    gp[K.G_N_MSHR] = _num(sm, "mshrs", w, integer=True)
    gp[K.G_SQ_SIZE] = _num(sm, "store_queue", w, integer=True)
    gp[K.G_L1_BYTES] = _num(sm, "l1_bytes", w, integer=True)
    gp[K.G_EQ_PERIOD] = _num(sm, "equalizer_sample_cycles", w, integer=True, default=128)
    # Mechanisms added for issue 37 (docs/simulator.md, "Validation against real GPUs"); a
    # configuration without them keeps the model it had.
    if ("dp_latency_cycles" in sm) != ("dp_interval_cycles" in sm):
        raise ConfigError(f"{w}: give both dp_latency_cycles and dp_interval_cycles, or neither")
    gp[K.G_DP_LAT] = _num(sm, "dp_latency_cycles", w, integer=True, default=0)
    gp[K.G_DP_II] = _num(sm, "dp_interval_cycles", w, integer=True, default=0)
    gp[K.G_LSU_TPC] = _num(sm, "lsu_transactions_per_cycle", w, integer=True, default=1)
    tbytes = _num(sm, "transaction_bytes", w, integer=True)
    w = f"{where} [memory]"
    gp[K.G_L2_NS] = _num(mem, "l2_latency_ns", w, positive=False)
    gp[K.G_L2_CYC] = _num(mem, "l2_latency_cycles", w, positive=False)
    gp[K.G_DRAM_NS] = _num(mem, "dram_latency_ns", w, positive=False)
    gp[K.G_DRAM_MEMCYC] = _num(mem, "dram_latency_mem_cycles", w, positive=False)
    gp[K.G_DRAM_CYC] = _num(mem, "dram_latency_cycles", w, positive=False)
    gp[K.G_N_CH] = _num(mem, "channels", w, integer=True)
    gp[K.G_SVC_MEMCYC] = tbytes / _num(mem, "channel_bytes_per_mem_cycle", w)
    w = f"{where} [core]"
    core_mhz = _list(core, "mhz", w)
    core_v = _list(core, "voltage_v", w, len(core_mhz))
    nominal_core = _num(core, "nominal_mhz", w)
    w = f"{where} [mem]"
    mem_mhz = _list(mst, "mhz", w)
    mem_v = _list(mst, "voltage_v", w, len(mem_mhz))
    mem_bg = _list(mst, "background_w", w, len(mem_mhz), zero=True)
    nominal_mem = _num(mst, "nominal_mhz", w)
    for name, values, nominal in (("core", core_mhz, nominal_core), ("mem", mem_mhz, nominal_mem)):
        if list(values) != sorted(set(values)):
            raise ConfigError(f"{where} [{name}]: 'mhz' must be strictly increasing")
        if nominal not in values:
            raise ConfigError(f"{where} [{name}]: nominal_mhz {nominal} is not a P-state")
    w = f"{where} [power]"
    power = {k: _num(pw, k, w, positive=False) for k in (
        "inst_nj", "alu_nj", "sfu_nj", "l1_nj", "shared_nj", "l2_nj", "dram_nj",
        "core_static_w", "other_w")}
    # optional, for configurations written before the memory V/F domain existed
    power["mc_nj"] = _num(pw, "mc_nj", w, positive=False, default=0.0)
    power["dp_nj"] = _num(pw, "dp_nj", w, positive=False, default=0.0)
    l2_domain = pw.get("l2_domain", "fixed")
    if l2_domain not in ("fixed", "mem"):
        raise ConfigError(f"{w}: 'l2_domain' must be \"fixed\" or \"mem\", got {l2_domain!r}")
    return GpuConfig(
        name=str(raw.get("name", path.stem)), description=str(raw.get("description", "")),
        path=where, raw=raw, n_sm=n_sm, sm_counts=sm_counts,
        max_warps_per_sm=_num(sm, "max_warps", f"{where} [sm]", integer=True),
        max_ctas_per_sm=_num(sm, "max_ctas", f"{where} [sm]", integer=True),
        shared_bytes_per_sm=_num(sm, "shared_bytes", f"{where} [sm]", integer=True),
        transaction_bytes=tbytes, core_mhz=core_mhz, core_v=core_v,
        nominal_core_mhz=nominal_core, mem_mhz=mem_mhz, mem_v=mem_v,
        mem_background_w=mem_bg, nominal_mem_mhz=nominal_mem,
        switch_ns=_num(core, "switch_ns", f"{where} [core]", positive=False, default=100.0),
        power=power, gp=gp, l2_domain=l2_domain)


def _compile_phase(body: list, where: str) -> list[tuple]:
    """Expand a phase body into (op, deps, trans, l1, l2, wr) rows with resolved indices."""
    if not isinstance(body, list) or not body:
        raise ConfigError(f"{where}: 'body' must be a non-empty list of instruction tables")
    rows, labels = [], {}
    for j, group in enumerate(body):
        gw = f"{where} instruction {j}"
        if not isinstance(group, dict):
            raise ConfigError(f"{gw}: must be a table like {{op = \"alu\"}}")
        unknown = set(group) - {"op", "n", "dep", "id", "trans", "l1_hit", "l2_hit",
                                "dram_write"}
        if unknown:
            raise ConfigError(f"{gw}: unknown field(s) {', '.join(sorted(unknown))}")
        op = group.get("op")
        if op not in OPS:
            raise ConfigError(f"{gw}: 'op' must be one of {', '.join(OPS)}, got {op!r}")
        n = _num(group, "n", gw, integer=True, default=1)
        if len(rows) + n > MAX_BODY:  # before expanding it: n = 2^63 would never end
            raise ConfigError(f"{where}: body expands to more than {MAX_BODY} instructions "
                              f"(max {MAX_BODY}; instruction {j} repeats {n:,} times)")
        trans = _num(group, "trans", gw, integer=True, default=1)
        if trans > 32:
            raise ConfigError(f"{gw}: 'trans' must be at most 32 (one per thread)")
        probs = []
        for key, default in (("l1_hit", 0.0), ("l2_hit", 0.0), ("dram_write", 1.0)):
            p = _num(group, key, gw, positive=False, default=default)
            if p > 1:
                raise ConfigError(f"{gw}: {key!r} must be a probability in [0, 1], got {p}")
            probs.append(p)
        dep = group.get("dep", [])
        deps = [dep] if isinstance(dep, str) else dep
        if not isinstance(deps, list) or len(deps) > 2 or not all(isinstance(d, str) for d in deps):
            raise ConfigError(f"{gw}: 'dep' must be \"prev\", a label or a list of up to two")
        for _ in range(n):
            # "prev" is the row just before; -1 (first row) becomes the body's last row.
            resolved = [len(rows) - 1 if d == "prev" else d for d in deps]
            rows.append([OPS[op], resolved, trans, *probs])
        if "id" in group:
            label = group["id"]
            if not isinstance(label, str) or label == "prev" or label in labels:
                raise ConfigError(f"{gw}: 'id' must be a new label other than \"prev\"")
            labels[label] = len(rows) - 1
    if len(rows) > MAX_BODY:
        raise ConfigError(f"{where}: body expands to {len(rows)} instructions (max {MAX_BODY})")
    out = []
    for op, deps, trans, l1, l2, wr in rows:
        idx = []
        for d in deps:
            if isinstance(d, int):
                idx.append(d if d >= 0 else len(rows) - 1)
            elif d in labels:
                idx.append(labels[d])
            else:
                raise ConfigError(f"{where}: dependence on unknown label {d!r}")
        out.append((op, idx, trans, l1, l2, wr))
    return out


def _compile_kernel(table: dict, suite: str, where: str) -> KernelSpec:
    name = table.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: every [[kernel]] needs a 'name'")
    kw = f"{where} kernel {name!r}"
    for key in ("category", "description"):
        if not isinstance(table.get(key), str) or not table[key]:
            raise ConfigError(f"{kw}: missing {key!r}")
    phases = table.get("phase")
    if not isinstance(phases, list) or not phases:
        raise ConfigError(f"{kw}: needs at least one [[kernel.phase]]")
    ctas = _num(table, "ctas", kw, integer=True)
    warps = _num(table, "warps_per_cta", kw, integer=True)
    op, dep0, dep1, trans, pl1, pl2, pwr, ph_start, ph_len, ph_iters = ([] for _ in range(10))
    per_warp = 0
    for p, phase in enumerate(phases):
        pw = f"{kw} phase {p}"
        if not isinstance(phase, dict):
            raise ConfigError(f"{pw}: must be a table with 'iterations' and 'body'")
        iters = _num(phase, "iterations", pw, integer=True)
        rows = _compile_phase(phase.get("body"), pw)
        per_warp += len(rows) * iters
        if ctas * warps * per_warp > MAX_WARP_INSTRUCTIONS:  # Python integers: exact
            raise ConfigError(
                f"{kw}: {ctas:,} CTAs x {warps:,} warps x {per_warp:,} instructions per warp "
                f"(so far) is more than the {MAX_WARP_INSTRUCTIONS:,} warp instructions a "
                "run may execute")
        base = len(op)
        ph_start.append(base)
        ph_len.append(len(rows))
        ph_iters.append(iters)
        for o, idx, tr, l1, l2, wr in rows:
            op.append(o)
            dep0.append(base + idx[0] if len(idx) > 0 else -1)
            dep1.append(base + idx[1] if len(idx) > 1 else -1)
            trans.append(tr)
            pl1.append(l1)
            pl2.append(l2)
            pwr.append(wr)
    i64 = np.int64
    program = {
        "op": np.array(op, i64), "dep0": np.array(dep0, i64), "dep1": np.array(dep1, i64),
        "trans": np.array(trans, i64), "pl1": np.array(pl1, float), "pl2": np.array(pl2, float),
        "pwr": np.array(pwr, float), "ph_start": np.array(ph_start, i64),
        "ph_len": np.array(ph_len, i64), "ph_iters": np.array(ph_iters, i64),
    }
    return KernelSpec(
        name=name, suite=suite, category=table["category"], description=table["description"],
        raw=table, ctas=ctas, warps_per_cta=warps,
        footprint_bytes=_bytes(table, "footprint_bytes", kw),
        shared_bytes_per_cta=_bytes(table, "shared_bytes", kw),
        program=program,
        max_ctas_per_sm=_num(table, "ctas_per_sm", kw, integer=True, default=0))


DERIVE_RULES = ("ctas_scale", "iterations_scale")


def _derived_kernels(raw: dict, name: str, path: Path) -> list[dict]:
    """The [[kernel]] tables of a suite derived from another (``base = "default"``).

    Each [[kernel]] of the derived file names one kernel of the base and one whole-number rule:
    ``ctas_scale = N`` (N times the CTAs: the same CTAs in N times as many waves, for grids that
    already fill the GPU) or ``iterations_scale = N`` (each phase's loop N times as long, the
    phases in the same order, for one-wave grids, whose class depends on their few CTAs, and
    for phased kernels). Running the phase sequence N times instead would not keep a phased
    kernel's phases: its warps drift apart over the repetitions until every SM mixes them
    (measured on phase_cache_compute, whose intervals then all have a load outstanding).
    Every base kernel must have exactly one rule, so the derived suite
    cannot silently drop a kernel added to its base. A derived kernel keeps the base's
    category and description (with the derivation appended) and records where it came from
    in ``derived_from`` (stored with the kernel's spec).
    """
    where = str(path)
    base_ref = raw["base"]
    if not isinstance(base_ref, str) or not base_ref:
        raise ConfigError(f"{where}: 'base' must be a suite name or a path, got {base_ref!r}")
    if base_ref.endswith(".toml") or "/" in base_ref:
        base_ref = str(path.parent / base_ref)  # a relative path is relative to this file
    base_path = _resolve(base_ref, "suites")
    base_raw = _read(base_path)
    if "base" in base_raw:
        raise ConfigError(f"{where}: base suite {str(base_path)!r} is itself derived "
                          "(derive from a suite that lists its kernels)")
    base_name = str(base_raw.get("name", base_path.stem))
    base_tables = base_raw.get("kernel")
    if not isinstance(base_tables, list) or not base_tables:
        raise ConfigError(f"{base_path}: no [[kernel]] tables")
    by_name = {t.get("name"): t for t in base_tables if isinstance(t, dict)}
    rules = raw.get("kernel")
    if not isinstance(rules, list) or not rules:
        raise ConfigError(f"{where}: no [[kernel]] tables (one per kernel of base "
                          f"{base_name!r}, each with {' or '.join(DERIVE_RULES)})")
    chosen: dict[str, tuple[str, int]] = {}
    for i, rule in enumerate(rules):
        kname = rule.get("name") if isinstance(rule, dict) else None
        if not isinstance(kname, str) or not kname:
            raise ConfigError(f"{where}: [[kernel]] {i} needs a 'name' (a kernel of "
                              f"{base_name!r})")
        kw = f"{where} kernel {kname!r}"
        unknown = set(rule) - {"name", *DERIVE_RULES}
        if unknown:
            raise ConfigError(f"{kw}: unknown field(s) {', '.join(sorted(unknown))} (a derived "
                              f"suite's kernel has only 'name' and one of "
                              f"{', '.join(DERIVE_RULES)})")
        if kname not in by_name:
            raise ConfigError(f"{kw}: no such kernel in base suite {base_name!r}")
        if kname in chosen:
            raise ConfigError(f"{kw}: listed twice")
        given = [k for k in DERIVE_RULES if k in rule]
        if len(given) != 1:
            raise ConfigError(f"{kw}: needs exactly one of {', '.join(DERIVE_RULES)}, "
                              f"got {len(given)}")
        chosen[kname] = (given[0], _num(rule, given[0], kw, integer=True))
    missing = [n for n in by_name if n not in chosen]
    if missing:
        raise ConfigError(f"{where}: base kernel(s) {', '.join(missing)} of {base_name!r} have "
                          f"no rule (add a [[kernel]] with 'name' and one of "
                          f"{', '.join(DERIVE_RULES)})")
    tables = []
    for base_table in base_tables:
        kname = base_table.get("name")
        rule, factor = chosen[kname]
        table = copy.deepcopy(base_table)
        if rule == "ctas_scale":
            ctas = _num(base_table, "ctas", f"{base_path} kernel {kname!r}", integer=True)
            table["ctas"] = ctas * factor
            how = f"{factor}x the CTAs ({ctas * factor}), i.e. more waves of the same CTAs"
        else:
            bw = f"{base_path} kernel {kname!r}"
            phases = base_table.get("phase")
            if not isinstance(phases, list) or not phases:
                raise ConfigError(f"{bw}: needs at least one [[kernel.phase]]")
            for p, phase in enumerate(table["phase"]):
                phase["iterations"] = factor * _num(phase, "iterations", f"{bw} phase {p}",
                                                    integer=True)
            how = f"each phase's loop {factor}x as long, in the same order"
        table["description"] = (f"{base_table.get('description', '')} Derived for suite "
                                f"{name!r} from {base_name}/{kname}: {how}.")
        table["derived_from"] = {"suite": base_name, "kernel": kname, rule: factor}
        tables.append(table)
    return tables


def load_suite(name_or_path: str | Path) -> Suite:
    """Load a kernel suite by fixture name (``default``, ``micro``, ``long``) or TOML path.

    A suite file either lists its kernels or derives them from another suite (``base``; see
    :func:`_derived_kernels`).
    """
    path = _resolve(name_or_path, "suites")
    raw = _read(path)
    where = str(path)
    name = str(raw.get("name", path.stem))
    kernels = _derived_kernels(raw, name, path) if "base" in raw else raw.get("kernel")
    if not isinstance(kernels, list) or not kernels:
        raise ConfigError(f"{where}: no [[kernel]] tables")
    specs = tuple(_compile_kernel(k, name, where) for k in kernels)
    names = [k.name for k in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"{where}: duplicate kernel name(s) {', '.join(dupes)}")
    return Suite(name=name, description=str(raw.get("description", "")), path=where,
                 kernels=specs)


def kernel_from_table(table: dict, suite: str = "adhoc") -> KernelSpec:
    """Compile a kernel given as a dict shaped like a suite's [[kernel]] table (tests, tools)."""
    return _compile_kernel(table, suite, f"<{suite}>")
