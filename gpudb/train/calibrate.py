"""Calibrating Wang & Chu's model (paper 003) by microbenchmarks on the simulator, and the table
``calibration`` that holds every GPU's parameters (schema/0007_calibration.sql).

The eight parameters are those of :class:`gpudb.predictors.wangchu_model.Calibration` (Table IV).
Section IV
measures them with microbenchmarks; :func:`calibrate` runs the same kind of benchmark, the
``micro`` suite (fixtures/suites/micro.toml, all synthetic), on a simulated GPU through gpudb's
ordinary sweep (:func:`gpudb.simulate.sweep.sweep`: runs are content-hashed, so a second calibration
reuses them), fits each parameter from the stored runs and stores the result:

- ``dm_lat_slope`` (core cycles per unit core/mem ratio) and ``dm_lat_intercept`` (core cycles):
  eq. 4 (section IV-A, Table II), least squares of the DRAM pointer chase's latency in core
  cycles (time x core MHz / loads) on core_f/mem_f, over every core P-state x a few memory
  P-states (lowest, middle, highest and the baseline's).
- ``dm_del`` (memory cycles): eq. 3 solved for dm_del (section IV-A, Table III;
  :func:`gpudb.predictors.wangchu_model.dm_del_from_streaming`): stream_read at the baseline, less
  the pointer chase's latency there, per transaction of one SM, times mem_f/core_f.
- ``l2_lat`` (core cycles): section IV-B, the L2 pointer chase's latency averaged over the core
  P-states ("always within 220 to 224 cycles ... we take the average").
- ``l2_del`` (core cycles): section IV-B's L2 delay measured as eq. 3 with L2 in place of DRAM:
  stream_read_l2 at the baseline, less l2_lat, per transaction of one SM.
- ``sh_lat`` (core cycles): Table IV, the shared-memory chain's time per access, averaged over
  the core P-states.
- ``inter_arr`` (core cycles): eq. 2, ``T = interArr x #W + dm_lat x gld_trans``: least squares
  of the time of the dram_burst_<W> kernels (one CTA of W warps, one DRAM load each) on W, at
  the baseline.
- ``inst_cycle`` (core cycles): Table IV's cycles per compute instruction as eq. 9 uses it
  (``avr_comp x #Aw``: all active warps share one SM's issue): alu_only's time per warp
  instruction of one SM at full occupancy, averaged over the core P-states.

The *baseline* is section IV-C's setting "in which the ratio of memory frequency to core
frequency is one": the (core, memory) P-state pair whose ratio is closest to one, the higher
clocks on a tie (GTX 980: 1000/1000 MHz), or one given. Per SM (dm_del, l2_del): eq. 11
charges ``agl_del`` once per transaction of the warps of *one* SM, so the delay is the time a
transaction of one SM occupies while every SM streams.

Each stored parameter carries its fit residual (RMS of the residuals of its least-squares fit,
in ``residual_unit``; for a parameter averaged over runs the RMS spread of those runs about the
value; 0 with ``n_points`` 1 for a single run), the runs it came from and a note saying how.
:func:`store_calibration` is the one writer of the table (also for 'file' and 'least_squares'
calibrations) and :func:`load_calibration` reads a GPU's latest, through view
``wangchu_calibration``.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import pyarrow as pa

from gpudb.predictors.wangchu_model import (
    GTX980_PUBLISHED,
    Calibration,
    dm_del_from_streaming,
)
from gpudb.store.db import GpudbError, atomic, connect, first_row

if TYPE_CHECKING:
    from sim.config import GpuConfig

PARAMETERS = ("dm_lat_slope", "dm_lat_intercept", "dm_del", "l2_lat", "l2_del", "sh_lat",
              "inter_arr", "inst_cycle")
METHODS = ("microbenchmark", "file", "least_squares")
CORE_CYCLES = "core cycles"
MEM_CYCLES = "memory cycles"
# The unit each parameter is stored in (gpudb.predictors.wangchu_model.Calibration): eq. 4's slope
# is core cycles
# per unit of core_f/mem_f (i.e. memory cycles), dm_del is measured at ratio one in memory cycles.
UNITS = {"dm_lat_slope": "core cycles per unit core/mem ratio", "dm_lat_intercept": CORE_CYCLES,
         "dm_del": MEM_CYCLES, "l2_lat": CORE_CYCLES, "l2_del": CORE_CYCLES,
         "sh_lat": CORE_CYCLES, "inter_arr": CORE_CYCLES, "inst_cycle": CORE_CYCLES}
# What the paper publishes for its GTX 980 (eq. 4, section IV-B, Table III at 700/700 MHz).
PAPER_GTX980 = dict(GTX980_PUBLISHED)

SUITE = "micro"
BURSTS = {f"dram_burst_{w}": w for w in (1, 2, 4, 8, 16, 32)}  # kernel -> warps (eq. 2's #W)

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ParameterFit:
    """One parameter of a calibration, as stored in a row of table ``calibration``."""

    parameter: str
    value: float
    unit: str
    fit_residual: float | None = None
    residual_unit: str | None = None
    n_points: int | None = None
    source_run_ids: tuple[str, ...] | None = None
    note: str | None = None


@dataclass
class CalibrationReport:
    """What :func:`calibrate` or :func:`calibrate_from_file` stored."""

    calibration_id: str
    gpu_id: str
    method: str
    fits: list[ParameterFit]
    baseline: tuple[float, float] | None = None     # (core MHz, memory MHz)
    runs_added: int = 0
    runs_reused: int = 0
    seconds: float = 0.0

    def values(self) -> dict[str, float]:
        return {f.parameter: f.value for f in self.fits}

    def table(self) -> tuple[list[str], list[tuple]]:
        """(columns, rows) to print: each parameter with its fit and, where paper 003
        publishes one, the GTX 980's value."""
        columns = ["parameter", "value", "unit", "fit_residual", "residual_unit", "n_points",
                   "paper_gtx980"]
        rows = [(f.parameter, f.value, f.unit, f.fit_residual, f.residual_unit, f.n_points,
                 PAPER_GTX980.get(f.parameter)) for f in self.fits]
        return columns, rows


# --- The table: store and load ----------------------------------------------------------------

def calibration_id(gpu_id: str, method: str, values: Mapping[str, float]) -> str:
    """Content hash of gpu_id, method and the values (first 16 hex digits of SHA-256): the same
    calibration stored twice has one id."""
    payload = {"gpu_id": gpu_id, "method": method,
               "values": {k: repr(float(values[k])) for k in sorted(values)}}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _per_parameter(arg, name: str, params: list[str]) -> dict:
    """A per-parameter argument of store_calibration: a dict over (some of) the parameters,
    or one value for all of them (None: none)."""
    if isinstance(arg, Mapping):
        unknown = sorted(set(arg) - set(params))
        if unknown:
            raise GpudbError(f"{name} names {', '.join(map(repr, unknown))}, which the "
                             f"calibration has no value for")
        return {p: arg.get(p) for p in params}
    return {p: arg for p in params}


def _finite(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise GpudbError(f"{what} must be a number, got {_short(value)}")
    try:
        number = float(value)
    except OverflowError:  # an integer of 400 digits
        number = math.inf
    if not math.isfinite(number):
        raise GpudbError(f"{what} must be a finite number, got {_short(value)}")
    return number


def store_calibration(con: duckdb.DuckDBPyConnection, gpu_id: str, method: str,
                      values: Mapping[str, float], *, units: Mapping[str, str] | None = None,
                      source_run_ids: Iterable[str] | Mapping[str, Iterable[str]] | None = None,
                      fit_residuals: Mapping[str, float] | float | None = None,
                      residual_units: Mapping[str, str] | str | None = None,
                      n_points: Mapping[str, int] | int | None = None,
                      notes: Mapping[str, str] | str | None = None) -> str:
    """Store a calibration of GPU ``gpu_id`` (a row of table gpu) in one transaction; returns
    its calibration_id.

    ``method``: 'microbenchmark', 'file' or 'least_squares'. ``values``: {parameter: value} for
    any non-empty subset of :data:`PARAMETERS` (a parameter left out reads as NULL in view
    wangchu_calibration and NaN from :func:`load_calibration`). ``units``: {parameter: unit},
    each of which must be the parameter's unit in :data:`UNITS` ('core cycles', 'memory
    cycles', 'core cycles per unit core/mem ratio'; default those). ``source_run_ids``: the runs
    the values came from, one list for all parameters or {parameter: list}. ``fit_residuals``
    (in ``residual_units``, default the parameter's unit), ``n_points`` and ``notes``: one value
    for all parameters or {parameter: value}.

    The id is a content hash of gpu_id, method and the values, so storing the same values again
    replaces that calibration's rows (with the new residuals, runs and notes, and created_at
    now, making it the latest) rather than adding rows. Raises GpudbError, writing nothing, on
    an unknown method, parameter or GPU, a wrong unit or a value that is not a finite number.
    """
    if method not in METHODS:
        raise GpudbError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if not values:
        raise GpudbError("a calibration needs at least one parameter value")
    unknown = sorted(set(values) - set(PARAMETERS))
    if unknown:
        raise GpudbError(f"unknown parameter {unknown[0]!r} (known: {', '.join(PARAMETERS)})")
    params = [p for p in PARAMETERS if p in values]
    vals = {p: _finite(values[p], p) for p in params}
    given_units = _per_parameter(units, "units", params) if units is not None else {}
    for p in params:
        unit = given_units.get(p)
        if unit is not None and unit != UNITS[p]:
            raise GpudbError(f"{p}: unit {unit!r} is wrong, expected {UNITS[p]!r}")
    if isinstance(source_run_ids, Mapping):
        runs = {p: v for p, v in _per_parameter(source_run_ids, "source_run_ids",
                                                params).items()}
    else:
        runs = _per_parameter(None if source_run_ids is None else list(source_run_ids),
                              "source_run_ids", params)
    residuals = _per_parameter(fit_residuals, "fit_residuals", params)
    res_units = _per_parameter(residual_units, "residual_units", params)
    points = _per_parameter(n_points, "n_points", params)
    note = _per_parameter(notes, "notes", params)
    for p in params:
        if residuals[p] is not None:
            residuals[p] = _finite(residuals[p], f"{p}: fit_residual")
            if residuals[p] < 0:
                raise GpudbError(f"{p}: fit_residual must be >= 0, got {residuals[p]}")
        if points[p] is not None:
            n = points[p]
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not (
                    1 <= n <= _INT32_MAX):
                raise GpudbError(f"{p}: n_points must be a whole number from 1 to "
                                 f"{_INT32_MAX}, got {_short(n)}")
    if first_row(con.execute("SELECT count(*) FROM gpu WHERE gpu_id = ?", [gpu_id]))[0] == 0:
        raise GpudbError(f"no GPU {gpu_id!r} in the database: sweep or ingest its runs first")
    cid = calibration_id(gpu_id, method, vals)
    rows = pa.table({
        "calibration_id": pa.array([cid] * len(params), pa.string()),
        "gpu_id": pa.array([gpu_id] * len(params), pa.string()),
        "method": pa.array([method] * len(params), pa.string()),
        "parameter": pa.array(params, pa.string()),
        "value": pa.array([vals[p] for p in params], pa.float64()),
        "unit": pa.array([UNITS[p] for p in params], pa.string()),
        "source_run_ids": pa.array([None if runs[p] is None else [str(r) for r in runs[p]]
                                    for p in params], pa.list_(pa.string())),
        "fit_residual": pa.array([residuals[p] for p in params], pa.float64()),
        "residual_unit": pa.array([None if residuals[p] is None else (res_units[p] or UNITS[p])
                                   for p in params], pa.string()),
        "n_points": pa.array([None if points[p] is None else int(points[p]) for p in params],
                             pa.int32()),
        "note": pa.array([note[p] for p in params], pa.string()),
    })
    columns = ", ".join(rows.column_names)
    con.register("_gpudb_new_calibration", rows)
    try:
        with atomic(con):
            con.execute("DELETE FROM calibration WHERE calibration_id = ?", [cid])
            con.execute(f"INSERT INTO calibration ({columns}, created_at) "
                        f"SELECT {columns}, now() FROM _gpudb_new_calibration")
    finally:
        con.unregister("_gpudb_new_calibration")
    return cid


def load_calibration(con: duckdb.DuckDBPyConnection, gpu_id: str,
                     method: str = "microbenchmark") -> Calibration | None:
    """The latest calibration of ``gpu_id`` by ``method`` (view wangchu_calibration) as a
    :class:`gpudb.predictors.wangchu_model.Calibration`, or None when the GPU has none. A parameter
    that calibration lacks (a 'least_squares' fit has no inter_arr) is NaN."""
    if method not in METHODS:
        raise GpudbError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    row = first_row(con.execute(
        f"SELECT {', '.join(PARAMETERS)} FROM wangchu_calibration "
        "WHERE gpu_id = ? AND method = ?", [gpu_id, method]))
    if row is None:
        return None
    return Calibration(**{p: math.nan if v is None else float(v)
                          for p, v in zip(PARAMETERS, row, strict=True)})


# --- Microbenchmarks on the simulator ---------------------------------------------------------

def baseline_setting(gpu: GpuConfig, baseline: tuple[float, float] | None = None
                     ) -> tuple[float, float]:
    """Section IV-C's baseline (core MHz, memory MHz): the P-state pair whose ratio is closest
    to one (higher clocks first on a tie), or ``baseline`` if given (a pair of P-states)."""
    if baseline is not None:
        core, mem = (float(x) for x in baseline)
        if core not in gpu.core_mhz or mem not in gpu.mem_mhz:
            raise GpudbError(
                f"baseline {core:g}/{mem:g} MHz is not a pair of {gpu.name} P-states (core: "
                f"{', '.join(f'{f:g}' for f in gpu.core_mhz)}; memory: "
                f"{', '.join(f'{f:g}' for f in gpu.mem_mhz)})")
        return core, mem
    pairs = [(c, m) for c in gpu.core_mhz for m in gpu.mem_mhz]
    return min(pairs, key=lambda cm: (round(abs(math.log(cm[0] / cm[1])), 12), -cm[1], -cm[0]))


def _eq4_mems(gpu: GpuConfig, base_mem: float) -> list[float]:
    """The memory P-states of the eq. 4 grid: lowest, middle, highest and the baseline's."""
    mems = gpu.mem_mhz
    return sorted({mems[0], mems[(len(mems) - 1) // 2], mems[-1], base_mem})


@dataclass(frozen=True)
class _Step:
    """One sweep of the calibration: kernels of the micro suite at cores x mems."""

    kernels: tuple[str, ...]
    cores: tuple[float, ...]
    mems: tuple[float, ...]


def _steps(gpu: GpuConfig, base: tuple[float, float]) -> list[_Step]:
    core, mem = base
    return [
        _Step(("pointer_chase",), tuple(gpu.core_mhz), tuple(_eq4_mems(gpu, mem))),
        _Step(("pointer_chase_l2", "shared_chain", "alu_only"), tuple(gpu.core_mhz), (mem,)),
        _Step(("stream_read", "stream_read_l2", *BURSTS), (core,), (mem,)),
    ]


def _plan(gpu: GpuConfig, base: tuple[float, float], seed: int):
    """The runs of the calibration: [(step, [sim.sweep.Task])]."""
    from sim.config import load_suite
    from sim.sweep import plan

    suite = load_suite(SUITE)
    return suite, [(s, plan(gpu, suite, list(s.kernels), list(s.cores), list(s.mems),
                            seed=seed)) for s in _steps(gpu, base)]


@dataclass
class _Run:
    run_id: str
    kernel: str
    core_mhz: float
    mem_mhz: float
    cycles: float          # time_ns x core MHz / 1000 (the paper's "time ... times the core
    gld_insts: int         # frequency"), to 1e-6 cycle: float noise would read as spread"
    gld_transactions: int
    shared_insts: int
    instructions: int
    warps: int             # warps of the grid (#W)
    active_sms: int        # SMs with work: min(n_sm, CTAs)


def _read_runs(con: duckdb.DuckDBPyConnection, tasks, suite) -> dict[tuple, _Run]:
    """The stored runs of ``tasks``, by (kernel name, core MHz, memory MHz)."""
    ids = pa.table({"run_id": pa.array([t.run_id for t in tasks], pa.string())})
    con.register("_gpudb_calibration_runs", ids)
    try:
        rows = con.execute(
            "SELECT r.run_id, r.core_mhz, r.mem_mhz, r.time_ns, r.n_sm, "
            "CAST(sum(i.gld_insts) AS BIGINT), CAST(sum(i.gld_transactions) AS BIGINT), "
            "CAST(sum(i.shared_insts) AS BIGINT), CAST(sum(i.instructions) AS BIGINT) "
            "FROM run AS r JOIN interval AS i USING (run_id) "
            "WHERE r.run_id IN (SELECT run_id FROM _gpudb_calibration_runs) "
            "GROUP BY r.run_id, r.core_mhz, r.mem_mhz, r.time_ns, r.n_sm").fetchall()
    finally:
        con.unregister("_gpudb_calibration_runs")
    by_id = {r[0]: r for r in rows}
    out = {}
    for t in tasks:
        r = by_id.get(t.run_id)
        if r is None:
            raise GpudbError(f"run {t.run_id[:16]} ({t.kernel.kernel_id} at {t.core_mhz:g}/"
                             f"{t.mem_mhz:g} MHz) is not in the database: run `gpudb calibrate "
                             f"--gpu {t.gpu.name}` to simulate it")
        k = suite.kernel(t.kernel.name)
        out[(t.kernel.name, t.core_mhz, t.mem_mhz)] = _Run(
            run_id=r[0], kernel=t.kernel.name, core_mhz=r[1], mem_mhz=r[2],
            cycles=round(r[3] * r[1] / 1000.0, 6), gld_insts=r[5], gld_transactions=r[6],
            shared_insts=r[7], instructions=r[8], warps=k.ctas * k.warps_per_cta,
            active_sms=min(int(r[4]), k.ctas))
    return out


def _line_fit(x, y) -> tuple[float, float, float]:
    """Least squares y = slope * x + intercept: (slope, intercept, RMS of the residuals)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    design = np.column_stack([x, np.ones_like(x)])
    (slope, intercept), *_ = np.linalg.lstsq(design, y, rcond=None)
    rms = float(np.sqrt(np.mean((design @ np.array([slope, intercept]) - y) ** 2)))
    return float(slope), float(intercept), rms


def _mean_fit(parameter: str, runs: list[_Run], per_run: Callable[[_Run], float],
              note: str) -> ParameterFit:
    """A parameter measured once per run and averaged; the residual is the RMS spread."""
    values = [per_run(r) for r in runs]
    mean = statistics.fmean(values)
    spread = math.sqrt(statistics.fmean([(v - mean) ** 2 for v in values]))
    return ParameterFit(parameter, mean, UNITS[parameter], spread, UNITS[parameter],
                        len(values), tuple(r.run_id for r in runs), note)


def _fmt(values: Iterable[float]) -> str:
    return ", ".join(f"{v:g}" for v in values)


def fit_microbenchmarks(con: duckdb.DuckDBPyConnection, gpu: str | GpuConfig,
                        baseline: tuple[float, float] | None = None,
                        seed: int = 0) -> tuple[list[ParameterFit], tuple[float, float]]:
    """The eight parameters from the micro suite's runs stored in the database (module
    docstring), without simulating anything; returns (fits, baseline). Raises GpudbError
    naming the first run missing (:func:`calibrate` simulates them)."""
    from sim.config import load_gpu

    gpu = load_gpu(gpu) if isinstance(gpu, str) else gpu
    base = baseline_setting(gpu, baseline)
    suite, steps = _plan(gpu, base, seed)
    runs = _read_runs(con, [t for _, tasks in steps for t in tasks], suite)
    core0, mem0 = base

    def chosen(kernel: str) -> list[_Run]:
        return sorted((r for (k, _, _), r in runs.items() if k == kernel),
                      key=lambda r: (r.core_mhz, r.mem_mhz))

    # Eq. 4: dm_lat (core cycles) = slope * core_f/mem_f + intercept, over the pointer chase.
    chase = chosen("pointer_chase")
    if len({r.core_mhz / r.mem_mhz for r in chase}) < 2:
        raise GpudbError(f"{gpu.name} has one core/memory clock ratio only: eq. 4's slope and "
                         "intercept cannot be told apart")
    latency = {(r.core_mhz, r.mem_mhz): r.cycles / r.gld_insts for r in chase}
    slope, intercept, rms = _line_fit([r.core_mhz / r.mem_mhz for r in chase],
                                      [latency[(r.core_mhz, r.mem_mhz)] for r in chase])
    eq4_ids = tuple(r.run_id for r in chase)
    grid = (f"{len({r.core_mhz for r in chase})} core x {len({r.mem_mhz for r in chase})} "
            f"memory P-states (memory {_fmt(sorted({r.mem_mhz for r in chase}))} MHz)")
    eq4_note = ("paper 003 eq. 4: least squares of the DRAM pointer chase's latency (time x "
                f"core MHz / loads, core cycles) on core_f/mem_f over {len(chase)} runs, "
                f"{grid}; residual in core cycles")
    fits = [
        ParameterFit("dm_lat_slope", slope, UNITS["dm_lat_slope"], rms, CORE_CYCLES,
                     len(chase), eq4_ids, eq4_note),
        ParameterFit("dm_lat_intercept", intercept, UNITS["dm_lat_intercept"], rms, CORE_CYCLES,
                     len(chase), eq4_ids, eq4_note),
    ]

    # Eq. 3 at the baseline: T = dm_lat + dm_del * gld_trans * #W, #W the warps of one SM.
    stream = runs[("stream_read", core0, mem0)]
    chase0 = runs[("pointer_chase", core0, mem0)]
    per_sm_warps = stream.warps / stream.active_sms
    dm_del_core = float(dm_del_from_streaming(stream.cycles, latency[(core0, mem0)],
                                              stream.gld_transactions / stream.warps,
                                              per_sm_warps))
    fits.append(ParameterFit(
        "dm_del", dm_del_core * mem0 / core0, UNITS["dm_del"], 0.0, MEM_CYCLES, 1,
        (stream.run_id, chase0.run_id),
        f"paper 003 eq. 3 (section IV-A, Table III): stream_read at the baseline {core0:g}/"
        f"{mem0:g} MHz, (time in core cycles - the pointer chase's dm_lat there) / "
        f"transactions of one SM ({stream.gld_transactions / stream.active_sms:g}) = "
        f"{dm_del_core:.4g} core cycles, x mem_f/core_f; one run"))

    # Section IV-B: L2 latency, the L2 pointer chase per core P-state at the baseline memory.
    l2_chase = [r for r in chosen("pointer_chase_l2") if r.mem_mhz == mem0]
    fits.append(_mean_fit(
        "l2_lat", l2_chase, lambda r: r.cycles / r.gld_insts,
        f"paper 003 section IV-B: the L2 pointer chase's time per load in core cycles, mean "
        f"over {len(l2_chase)} core P-states ({_fmt(r.core_mhz for r in l2_chase)} MHz) at "
        f"memory {mem0:g} MHz; residual = RMS spread over them"))
    l2_lat0 = runs[("pointer_chase_l2", core0, mem0)]
    l2_stream = runs[("stream_read_l2", core0, mem0)]
    l2_lat_base = l2_lat0.cycles / l2_lat0.gld_insts
    l2_per_sm = l2_stream.gld_transactions / l2_stream.active_sms
    fits.append(ParameterFit(
        "l2_del", (l2_stream.cycles - l2_lat_base) / l2_per_sm, UNITS["l2_del"], 0.0,
        CORE_CYCLES, 1, (l2_stream.run_id, l2_lat0.run_id),
        f"paper 003 section IV-B's l2_del measured like eq. 3: stream_read_l2 (L2 hits, full "
        f"occupancy) at the baseline {core0:g}/{mem0:g} MHz, (time in core cycles - l2_lat "
        f"there) / transactions of one SM ({l2_per_sm:g}); one run"))

    shared = [r for r in chosen("shared_chain") if r.mem_mhz == mem0]
    fits.append(_mean_fit(
        "sh_lat", shared, lambda r: r.cycles / r.shared_insts,
        f"paper 003 Table IV: the shared-memory chain's time per access in core cycles, mean "
        f"over {len(shared)} core P-states at memory {mem0:g} MHz; residual = RMS spread"))

    # Eq. 2 with one load per warp: T = interArr * #W + dm_lat; the slope over #W.
    bursts = [runs[(k, core0, mem0)] for k in BURSTS]
    ia, ia_intercept, ia_rms = _line_fit([r.warps for r in bursts], [r.cycles for r in bursts])
    fits.append(ParameterFit(
        "inter_arr", ia, UNITS["inter_arr"], ia_rms, CORE_CYCLES, len(bursts),
        tuple(r.run_id for r in bursts),
        f"paper 003 eq. 2: least squares of the time in core cycles of one CTA of #W warps "
        f"issuing one DRAM load each (dram_burst_<W>, W = {_fmt(BURSTS.values())}) on #W at "
        f"the baseline {core0:g}/{mem0:g} MHz; intercept {ia_intercept:.4g} cycles (eq. 2's "
        f"dm_lat x 1; the pointer chase's is {latency[(core0, mem0)]:.4g}); residual in core "
        "cycles"))

    alu = [r for r in chosen("alu_only") if r.mem_mhz == mem0]
    fits.append(_mean_fit(
        "inst_cycle", alu, lambda r: r.cycles / (r.instructions / r.active_sms),
        f"paper 003 Table IV / eq. 9: alu_only (independent ALU instructions, full occupancy) "
        f"core cycles per warp instruction of one SM, mean over {len(alu)} core P-states at "
        f"memory {mem0:g} MHz; residual = RMS spread"))
    order = {p: i for i, p in enumerate(PARAMETERS)}
    return sorted(fits, key=lambda f: order[f.parameter]), base


def microbenchmark_runs(gpu: str | GpuConfig, baseline: tuple[float, float] | None = None,
                        seed: int = 0) -> int:
    """How many runs a calibration of ``gpu`` needs (stored ones are reused)."""
    from sim.config import load_gpu

    gpu = load_gpu(gpu) if isinstance(gpu, str) else gpu
    return sum(len(tasks) for _, tasks in _plan(gpu, baseline_setting(gpu, baseline), seed)[1])


def calibrate(db_path: str | Path, gpu: str | GpuConfig,
              baseline: tuple[float, float] | None = None, seed: int = 0, jobs: int = 1,
              progress: Progress | None = None) -> CalibrationReport:
    """Calibrate Wang & Chu's model for simulated GPU ``gpu`` (a shipped configuration's name
    or a GpuConfig) in the database at ``db_path``: simulate the micro suite's runs the
    database lacks (:func:`gpudb.simulate.sweep.sweep`, experiment ``calibrate-<gpu>``), fit the
    eight parameters (:func:`fit_microbenchmarks`) and store them as method 'microbenchmark'
    (:func:`store_calibration`). ``progress(runs_done, runs_total)`` follows the simulation.
    A database path, not a connection: the sweep is the file's one writer while it runs.
    Raises gpudb.simulate.runner.RunsInterrupted on Ctrl-C (finished runs are kept).
    """
    from gpudb.simulate.sweep import sweep
    from sim.config import load_gpu

    started = time.perf_counter()
    gpu = load_gpu(gpu) if isinstance(gpu, str) else gpu
    base = baseline_setting(gpu, baseline)
    _, steps = _plan(gpu, base, seed)
    total = sum(len(tasks) for _, tasks in steps)
    added = 0
    done_before = 0
    if progress:
        progress(0, total)
    for step, tasks in steps:
        step_progress = _step_progress(progress, done_before, len(tasks), total)
        summary = sweep(db_path, gpu, SUITE, kernels=list(step.kernels),
                        core_mhz=list(step.cores), mem_mhz=list(step.mems), seed=seed,
                        jobs=jobs, experiment=f"calibrate-{gpu.name}", progress=step_progress)
        added += summary["runs_added"]
        done_before += len(tasks)
    con = connect(db_path)
    try:
        fits, base = fit_microbenchmarks(con, gpu, base, seed)
        cid = _store_fits(con, gpu.name, "microbenchmark", fits)
    finally:
        con.close()
    return CalibrationReport(cid, gpu.name, "microbenchmark", fits, base, runs_added=added,
                             runs_reused=total - added, seconds=time.perf_counter() - started)


def _step_progress(progress: Progress | None, before: int, planned: int, total: int):
    """sweep's progress(done, todo, instructions) for one step, as the calibration's
    progress(runs done, runs in all): runs of earlier steps and runs reused count as done."""
    def report(done: int, todo: int, _instructions: int) -> None:
        if progress:
            progress(before + (planned - todo) + done, total)
    return report


def _store_fits(con: duckdb.DuckDBPyConnection, gpu_id: str, method: str,
                fits: list[ParameterFit]) -> str:
    return store_calibration(
        con, gpu_id, method, {f.parameter: f.value for f in fits},
        units={f.parameter: f.unit for f in fits},
        source_run_ids={f.parameter: f.source_run_ids for f in fits},
        fit_residuals={f.parameter: f.fit_residual for f in fits},
        residual_units={f.parameter: f.residual_unit for f in fits},
        n_points={f.parameter: f.n_points for f in fits},
        notes={f.parameter: f.note for f in fits})


# --- Measured GPUs: parameters from a file ----------------------------------------------------

_FILE_KEYS = {"value", "unit", "fit_residual", "residual_unit", "n_points", "note"}
# Bounds of a calibration file: a short TOML file; values in cycles (no access takes a
# billion); n_points fits the table's INTEGER column; a note is a sentence or a paragraph.
MAX_FILE_BYTES = 1 << 20
MAX_CYCLES = 1e9
_INT32_MAX = 2**31 - 1
MAX_NOTE_CHARS = 10_000


def _short(value) -> str:
    """A value from a file as an error shows it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def eq4_points(con: duckdb.DuckDBPyConnection, gpu_id: str) -> tuple[list[str], list[tuple]]:
    """Eq. 4's data behind the GPU's latest microbenchmark calibration: each DRAM pointer-chase
    run's latency per load in core cycles (total cycles / loads) at its core/memory ratio,
    beside the fitted line and paper 003's GTX 980 line (222.78 x ratio + 277.32)."""
    rows = con.execute("""
        WITH cal AS (
            SELECT * FROM wangchu_calibration WHERE gpu_id = $gpu AND method = 'microbenchmark'
        ),
        ids AS (
            SELECT unnest(c.source_run_ids) AS run_id
            FROM calibration AS c JOIN cal USING (calibration_id)
            WHERE c.parameter = 'dm_lat_slope'
        ),
        chase AS (
            SELECT r.run_id, r.core_mhz, r.mem_mhz, sum(i.cycles) / sum(i.gld_insts) AS latency
            FROM ids JOIN run AS r USING (run_id) JOIN interval AS i USING (run_id)
            GROUP BY ALL
        )
        SELECT h.core_mhz / h.mem_mhz AS core_mem_ratio, h.core_mhz, h.mem_mhz,
               h.latency AS dm_lat_cycles,
               cal.dm_lat_slope * h.core_mhz / h.mem_mhz + cal.dm_lat_intercept AS fitted_cycles,
               $slope * h.core_mhz / h.mem_mhz + $intercept AS paper_gtx980_cycles
        FROM chase AS h CROSS JOIN cal
        ORDER BY 1, 2""", {"gpu": gpu_id, "slope": PAPER_GTX980["dm_lat_slope"],
                           "intercept": PAPER_GTX980["dm_lat_intercept"]}).fetchall()
    return (["core_mem_ratio", "core_mhz", "mem_mhz", "dm_lat_cycles", "fitted_cycles",
             "paper_gtx980_cycles"], rows)


def read_calibration_file(path: str | Path) -> list[ParameterFit]:
    """Parameters from a TOML file of ``parameter = { value = ..., unit = "..." }`` tables
    (optional keys: fit_residual, residual_unit, n_points, note), in :data:`UNITS`; any
    subset of :data:`PARAMETERS`. Raises GpudbError with one line naming the file and the
    parameter: not TOML, an unknown parameter or key, a missing or wrong unit, a value that is
    not a finite number."""
    from gpudb.store.trust import read_regular

    path = Path(path)
    data = read_regular(path, MAX_FILE_BYTES, "a calibration file (TOML)")
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise GpudbError(f"{path}: not valid TOML: {str(exc).splitlines()[0]}") from None
    except RecursionError:  # arrays or tables nested thousands deep
        raise GpudbError(f"{path}: not valid TOML: nested too deep") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise GpudbError(f"{path}: not valid TOML: {str(exc).splitlines()[0]}") from None
    if not raw:
        raise GpudbError(f"{path}: no parameters (write e.g. l2_lat = {{ value = 222, unit = "
                         f"\"core cycles\" }})")
    fits = []
    for name, entry in raw.items():
        where = f"{path}: {name}"
        if name not in PARAMETERS:
            raise GpudbError(f"{path}: unknown parameter {name!r} (known: "
                             f"{', '.join(PARAMETERS)})")
        if not isinstance(entry, dict):
            raise GpudbError(f"{where} must be a table like {{ value = 1.0, unit = "
                             f"\"{UNITS[name]}\" }}")
        extra = sorted(set(entry) - _FILE_KEYS)
        if extra:
            raise GpudbError(f"{where}: unknown key {extra[0]!r} (allowed: "
                             f"{', '.join(sorted(_FILE_KEYS))})")
        if "value" not in entry:
            raise GpudbError(f"{where}: missing 'value'")
        if "unit" not in entry:
            raise GpudbError(f"{where}: missing 'unit' (expected {UNITS[name]!r})")
        if entry["unit"] != UNITS[name]:
            raise GpudbError(f"{where}: unit {entry['unit']!r} is wrong, expected "
                             f"{UNITS[name]!r}")
        try:
            value = _finite(entry["value"], "'value'")
            residual = (None if "fit_residual" not in entry
                        else _finite(entry["fit_residual"], "'fit_residual'"))
        except GpudbError as exc:
            raise GpudbError(f"{where}: {exc}") from None
        # every parameter is a latency, delay, slope or cycle count: 0 or less makes
        # pred_wangchu predict nothing, and no GPU waits a billion cycles for one access
        if not 0 < value <= MAX_CYCLES:
            raise GpudbError(f"{where}: 'value' must be > 0 and at most {MAX_CYCLES:.0e} "
                             f"{UNITS[name]}, got {value!r}")
        if residual is not None and not 0 <= residual <= MAX_CYCLES:
            raise GpudbError(f"{where}: 'fit_residual' must be >= 0 and at most "
                             f"{MAX_CYCLES:.0e}, got {residual!r}")
        n = entry.get("n_points")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int)
                              or not 1 <= n <= _INT32_MAX):
            raise GpudbError(f"{where}: 'n_points' must be a whole number from 1 to "
                             f"{_INT32_MAX}, got {_short(n)}")
        for key in ("residual_unit", "note"):
            if key in entry and not isinstance(entry[key], str):
                raise GpudbError(f"{where}: {key!r} must be text, got {_short(entry[key])}")
            if key in entry and len(entry[key]) > MAX_NOTE_CHARS:
                raise GpudbError(f"{where}: {key!r} is longer than {MAX_NOTE_CHARS} characters")
        residual_unit = entry.get("residual_unit", None if residual is None else UNITS[name])
        fits.append(ParameterFit(name, value, UNITS[name], residual, residual_unit, n, None,
                                 entry.get("note", f"from {path.name}")))
    order = {p: i for i, p in enumerate(PARAMETERS)}
    return sorted(fits, key=lambda f: order[f.parameter])


def calibrate_from_file(con: duckdb.DuckDBPyConnection, gpu_id: str,
                        path: str | Path) -> CalibrationReport:
    """Store the parameters of a calibration file (:func:`read_calibration_file`) as GPU
    ``gpu_id``'s calibration by method 'file'; nothing is written when the file or the GPU is
    refused."""
    started = time.perf_counter()
    fits = read_calibration_file(path)
    cid = _store_fits(con, gpu_id, "file", fits)
    return CalibrationReport(cid, gpu_id, "file", fits, seconds=time.perf_counter() - started)


__all__ = ["PARAMETERS", "METHODS", "UNITS", "ParameterFit", "CalibrationReport",
           "calibration_id", "store_calibration", "load_calibration", "baseline_setting",
           "fit_microbenchmarks", "calibrate", "read_calibration_file", "calibrate_from_file",
           "microbenchmark_runs"]
