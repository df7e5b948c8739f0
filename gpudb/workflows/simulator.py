"""The simulator against a real GPU (``gpudb clone``, ``gpudb evaluate simulator``;
docs/simulator.md, "Validation against real GPUs").

:func:`make_clones` turns a measured GPU's kernels at its base setting into calibrated clones
(gpudb.train.clone) and their annotated suite file. :func:`check_simulator` then sweeps the
clones over the settings the GPU was measured at, on the simulator configuration that models
it, fits Wang & Chu's model on other kernels for comparison (table scaling_prediction), and
leaves the comparison to view sim_scaling and the stored queries sim_scaling_error,
sim_scaling_summary and sim_scaling_curve.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpudb.store import db
from gpudb.store.base import refuse_read_only
from gpudb.store.db import GpudbError

Steps = Callable[[int, int], None]


@dataclass
class Target:
    """A measured GPU, the simulator configuration that models it, its base setting (MHz),
    the settings it was measured at and the kernels the configuration was fitted on."""

    gpu: str
    model: str          # the configuration: a shipped name or a file
    model_name: str     # its name, the gpu_id of its runs
    core_mhz: float
    mem_mhz: float
    cores: list[float]
    mems: list[float]
    trained_on: list[str] = field(default_factory=list)


def default_model(gpu: str) -> str:
    """The shipped configuration modelling a measured GPU: ``<gpu>-sim``."""
    from sim.config import available

    name = f"{gpu}-sim"
    if name not in available("gpus"):
        raise GpudbError(f"no simulator configuration models {gpu!r} (none named {name!r} in "
                         f"{', '.join(available('gpus'))}); give one with --model")
    return name


def target(path: str, gpu: str, model: str | None = None, base_mhz: float | None = None,
           base_mem_mhz: float | None = None, read_only: bool = True) -> Target:
    """The measured GPU in the file at ``path`` and what the check needs of it (a writable
    open migrates a file from an older gpudb first)."""
    from sim.config import ConfigError, load_gpu
    from sim.model import check_setting

    if not Path(path).exists():
        raise GpudbError(f"{path}: no such database")
    con = db.connect(path, read_only=read_only)
    try:
        row = con.execute("SELECT nominal_core_mhz, nominal_mem_mhz FROM gpu WHERE gpu_id = ?",
                          [gpu]).fetchone()
        settings = con.execute(
            "SELECT DISTINCT core_mhz, mem_mhz FROM run WHERE gpu_id = ? AND source = "
            "'measured' AND policy = 'fixed' ORDER BY ALL", [gpu]).fetchall()
        # what a clone is built from, checked before anything else: a file of DCGM activities
        # and static PTX counts (the shared V100 files) cannot be cloned on any configuration
        have = {n for (n,) in con.execute(
            "SELECT DISTINCT m.name FROM metric AS m JOIN run AS r USING (run_id) "
            "WHERE r.gpu_id = ? AND r.source = 'measured'", [gpu]).fetchall()}
    finally:
        con.close()
    if row is None or not settings:
        raise GpudbError(f"no measured runs of {gpu!r} in {path}")
    from gpudb.train.clone import REQUIRED

    lacking = [n for n in REQUIRED if n not in have]
    if lacking:
        raise GpudbError(
            f"{gpu}'s measured runs lack what a clone is built from: {', '.join(lacking)} "
            f"(they have {len(have)} metrics: {', '.join(sorted(have)[:8])}"
            f"{', ...' if len(have) > 8 else ''}); cloning needs nvprof-style metrics and the "
            "launch geometry (docs/simulator.md, \"Validation against real GPUs\")")
    core = base_mhz if base_mhz is not None else row[0]
    mem = base_mem_mhz if base_mem_mhz is not None else row[1]
    if (core, mem) not in {(float(c), float(m)) for c, m in settings}:
        raise GpudbError(f"{gpu} was not measured at {core:g}/{mem:g} MHz (the base setting); "
                         "give --base-mhz and --base-mem-mhz")
    name = model or default_model(gpu)
    try:
        config = load_gpu(name)
        for c, m in settings:
            check_setting(config, c, m)
    except ConfigError as exc:
        raise GpudbError(str(exc)) from None
    validation = config.raw.get("validation", {})
    trained = validation.get("trained_on", []) if validation.get("measured_gpu") == gpu else []
    return Target(gpu, name, config.name, float(core), float(mem),
                  sorted({float(c) for c, _ in settings}),
                  sorted({float(m) for _, m in settings}), list(trained))


def make_clones(path: str, t: Target, kernels: list[str] | None = None,
                budget: int | None = None, jobs: int | None = None,
                progress: Steps | None = None, command: str = "",
                without: frozenset = frozenset()) -> tuple[str, list]:
    """Clone the measured kernels of ``t`` at its base setting: (suite file text, clones)."""
    from gpudb.train import clone as recipe
    from sim.config import load_gpu

    gpu = load_gpu(t.model)
    budget = budget or recipe.DEFAULT_BUDGET
    con = db.connect(path, read_only=True)
    try:
        profiles = recipe.load_profiles(con, t.gpu, t.core_mhz, t.mem_mhz, kernels)
    finally:
        con.close()
    clones = [recipe.derive(p, gpu, budget, without) for p in profiles]
    names = [c.name for c in clones]
    for name in {n for n in names if names.count(n) > 1}:
        for i, c in enumerate(x for x in clones if x.name == name):
            c.name = f"{name}.{i + 1}"
    recipe.calibrate(clones, gpu, jobs=jobs or os.cpu_count() or 1, progress=progress)
    return recipe.suite_text(clones, gpu, command), clones


@dataclass
class Checked:
    """What a check did: the clone suite file (and whether it was made now), the sweep's
    summary, and how Wang & Chu's comparison was fitted (or why it was not)."""

    suite_path: Path
    cloned: bool
    sweep: dict
    wangchu: str
    seconds: float


def check_simulator(path: str, t: Target, suite_path: str | Path, read_only: bool = False,
                    reclone: bool = False,
                    kernels: list[str] | None = None, seeds: list[int] | None = None,
                    jobs: int | None = None, clone_progress: Steps | None = None,
                    sweep_progress: Callable | None = None, command: str = "",
                    without: frozenset = frozenset(), engine: str | None = None) -> Checked:
    """Clone (unless the suite file exists and ``reclone`` is off), sweep the clones over
    the measured settings on ``t.model`` with ``engine`` (None: the database's, else the
    reference; the clones themselves are calibrated on the reference) and store Wang & Chu's
    comparison predictions."""
    from gpudb.simulate.sweep import sweep
    from sim.config import ConfigError, load_suite

    started = time.perf_counter()
    refuse_read_only(read_only, "gpudb evaluate simulator")
    suite_path = Path(suite_path)
    cloned = reclone or not suite_path.exists()
    if cloned:
        with db.unbounded():   # gpudb's simulation, whose length the file does not decide
            text, _ = make_clones(path, t, kernels, jobs=jobs, progress=clone_progress,
                                  command=command, without=without)
        tmp = suite_path.with_name(suite_path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, suite_path)
    try:
        suite = load_suite(suite_path)
    except ConfigError as exc:
        raise GpudbError(str(exc)) from None
    linked = [k for k in suite.kernels if k.raw.get("clone", {}).get("measured_gpu") == t.gpu]
    if not linked:
        raise GpudbError(f"{suite_path}: no clone of a {t.gpu} kernel (make one with gpudb "
                         "clone)")
    with db.unbounded():
        summary = sweep(path, t.model, suite, kernels=[k.name for k in linked],
                        core_mhz=t.cores, mem_mhz=t.mems, seed=seeds or [0],
                        jobs=jobs or os.cpu_count() or 1, progress=sweep_progress,
                        engine=engine)
    with db.unbounded():
        note = _store_wangchu(path, t, [k.raw["clone"]["measured_kernel"] for k in linked])
    return Checked(suite_path, cloned, summary, note, time.perf_counter() - started)


def _store_wangchu(path: str, t: Target, kernels: list[str]) -> str:
    """Wang & Chu's fitted model (paper 003) on the same kernels, each predicted by a fit on
    other kernels: the configuration's training kernels where it names them (its held-out
    kernels are then predicted by a model that never saw them, and its training kernels by
    one that did, as the simulator's configuration did), else all kernels but the one.
    Returns how it was fitted, or why it was not (no scipy, no model inputs)."""
    import numpy as np

    from gpudb.train import wangchu_fit as wcf

    try:
        import scipy  # noqa: F401
    except ImportError:
        return "Wang & Chu's fit skipped: it needs scipy (pip install 'gpudb-dvfs[ml]')"
    con = db.connect(path)
    try:
        try:
            rows = wcf.load_rows(con, t.gpu, t.core_mhz, t.mem_mhz)
        except GpudbError as exc:
            return f"Wang & Chu's fit skipped: {exc}"
        rows = rows.subset(np.isin(rows.kernel_id, kernels))
        present = sorted(set(rows.kernel_id.tolist()))
        trained = [k for k in t.trained_on if k in present]
        if trained:
            fit = wcf.fit(rows.subset(np.isin(rows.kernel_id, trained)))
            predicted = rows.predict(fit.params)
            fitted_on = np.full(len(rows), ", ".join(trained), dtype=object)
            how = f"fitted on the configuration's {len(trained)} training kernels"
        elif len(present) >= 2:
            predicted, _ = wcf.cross_validate(rows, folds=len(present))
            fitted_on = np.full(len(rows), "leave-one-out", dtype=object)
            how = f"each of {len(present)} kernels fitted on the others"
        else:
            return "Wang & Chu's fit skipped: it needs two kernels or more"
        import pyarrow as pa

        table = pa.table({
            "gpu_id": [t.gpu] * len(rows), "kernel_id": rows.kernel_id.tolist(),
            "predictor": ["wangchu_fit"] * len(rows),
            "base_core_mhz": rows.base_core_mhz, "base_mem_mhz": rows.base_mem_mhz,
            "core_mhz": rows.target_core_mhz, "mem_mhz": rows.target_mem_mhz,
            "predicted_ns": predicted, "fitted_on": fitted_on.tolist()})
        with db.atomic(con):
            con.execute("DELETE FROM scaling_prediction WHERE gpu_id = ? AND predictor = "
                        "'wangchu_fit' AND base_core_mhz = ? AND base_mem_mhz = ?",
                        [t.gpu, t.core_mhz, t.mem_mhz])
            con.register("_gpudb_scaling", table)
            try:
                con.execute("INSERT INTO scaling_prediction SELECT gpu_id, kernel_id, "
                            "predictor, base_core_mhz, base_mem_mhz, core_mhz, mem_mhz, "
                            "predicted_ns, fitted_on, now() FROM _gpudb_scaling "
                            "WHERE isfinite(predicted_ns)")
            finally:
                con.unregister("_gpudb_scaling")
        return f"Wang & Chu's fit (wcf_): {how}"
    finally:
        con.close()


def fit_config(path: str, t: Target) -> tuple[list[str], list[tuple[str, float]], dict]:
    """The configuration's calibrated values fitted on its training kernels (gpudb.train.
    sim_config_fit), as TOML lines; and each kernel's normalised-power MAPE with the power
    parameters fitted on every other kernel (leave one kernel out) and the simulated time.
    Needs the clones' runs (check_simulator first)."""
    import numpy as np

    from gpudb.train import sim_config_fit as fit
    from sim.config import load_gpu

    if not t.trained_on:
        raise GpudbError(f"{t.model} names no training kernels of {t.gpu} "
                         "([validation] trained_on): nothing to fit on")
    con = db.connect(path, read_only=True)
    try:
        bandwidth = fit.sustained_bandwidth(con, t.gpu, t.trained_on, t.core_mhz, t.mem_mhz)
        rows = fit.power_rows(con, t.gpu, t.model_name)
        sim_norm = {(k, c, m): tn for k, c, m, tn in con.execute(
            "SELECT kernel_id, core_mhz, mem_mhz, sim_time_norm FROM sim_scaling "
            "WHERE gpu_id = ? AND sim_gpu_id = ?", [t.gpu, t.model_name]).fetchall()}
    finally:
        con.close()
    result = fit.fit_power(rows, t.trained_on, t.core_mhz, t.mem_mhz)
    config = load_gpu(t.model)
    lines = fit.toml_lines(result, bandwidth, list(config.core_mhz), t.core_mhz,
                           int(config.raw["memory"]["channels"]), t.mem_mhz)
    loao = []
    for kernel, r in sorted(rows.items()):
        others = [k for k in rows if k != kernel]
        one = fit.fit_power(rows, others, t.core_mhz, t.mem_mhz)
        base = r["t"][(r["core"] == t.core_mhz) & (r["mem"] == t.mem_mhz)]
        norm = np.array([sim_norm.get((kernel, c, m), np.nan)
                         for c, m in zip(r["core"], r["mem"], strict=True)])
        mape = fit.normalised_power_mape(r, one["coef"], one["beta"], t.core_mhz, t.mem_mhz,
                                         one["mems"], norm * base[0] if len(base) else None)
        loao.append((kernel, mape))
    return lines, loao, result
