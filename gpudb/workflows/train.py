"""Fitting models to a database's runs, as named tables (gpudb.store.result.Tables): what
``gpudb train wu``, ``train wangchu``, ``calibrate`` and ``clone`` print. Each function takes
the database's path and the command's options (keyword arguments named as the CLI's options,
with its defaults); ``notes`` say what was stored (its id) and how well it fits.
"""

from __future__ import annotations

from pathlib import Path

from gpudb.store import db
from gpudb.store.db import GpudbError
from gpudb.store.result import Table, Tables
from gpudb.workflows.evaluate import Progress, steps_of


def wu(path: str, *, gpu: str, base=None, train_fraction: float = 0.8, seed: int = 0,
       clusters: int = 12, features: list[str] | None = None, power: bool = True,
       suite: str | None = None, kernels: list[str] | None = None) -> Tables:
    """Wu et al.'s model (paper 002) trained on the GPU's fixed runs and stored: from ``base``
    (an (SMs, core MHz, memory MHz) setting; None: the highest; 'all': one model per setting),
    ``train_fraction`` of the kernels (of ``suite``, or ``kernels``) split at random by
    ``seed``, ``clusters`` k-means clusters, the classifiers on ``features`` (default the DCGM
    activities), time and (``power``) power. Table ``validation``: the validation error per
    kernel (with 'all', a row per model); notes: the model's id and summary."""
    from gpudb.train import wu_model

    db.doing("training Wu's model")
    con = db.connect(path)
    try:
        if base == "all":
            columns, rows = wu_model.train_many(
                con, gpu, cluster_counts=(clusters,), train_fraction=train_fraction,
                seed=seed, features=features, power=power, suite=suite, kernels=kernels)
            # the last one trained is the GPU's default from now on
            notes = ([f"latest model_id {rows[-1][columns.index('model_id')]} (the default of "
                      "view prediction and the accuracy queries)"] if rows else [])
        else:
            report = wu_model.train_wu(
                con, gpu, base=base, train_fraction=train_fraction, seed=seed,
                clusters=clusters, features=features, power=power, suite=suite,
                kernels=kernels)
            columns, rows = wu_model.validation_table(con, report.model_id)
            notes = [f"model_id {report.model_id}", report.summary()]
    finally:
        con.close()
    return Tables({"validation": Table(columns, rows)}, notes)


def wangchu(path: str, *, gpu: str, base: tuple[float, float], suite: str | None = None,
            kernels: list[str] | None = None) -> Tables:
    """Wang & Chu's model (paper 003) with its seven parameters fitted by least squares to the
    kernels' measured times at every (core, memory) setting from ``base`` (core MHz, memory
    MHz), stored as the GPU's least_squares calibration. Table ``parameters``: each with its
    unit and whether the kernels constrain it; a note: the calibration's id and the fit's RMS
    time error (%)."""
    from gpudb.train import wangchu_fit
    from gpudb.train.calibrate import UNITS

    db.doing("fitting Wang & Chu's model")
    core, mem = base
    con = db.connect(path)
    try:
        calibration_id, result = wangchu_fit.train(con, gpu, core, mem, suite, kernels)
    finally:
        con.close()
    return Tables({"parameters": Table(
        ["parameter", "value", "unit", "identified"],
        [(k, v, UNITS[k], result.identified[k]) for k, v in result.params.items()])},
        [f"calibration_id {calibration_id} (method least_squares): RMS time error "
         f"{result.rms_error_pct:.2f}% over {result.n_rows} (kernel, setting) pairs"])


def calibrate(path: str, *, gpu: str, from_file: str | None = None,
              baseline: tuple[float, float] | None = None, seed: int = 0, jobs: int = 1,
              progress: Progress | None = None) -> Tables:
    """Wang & Chu's eight parameters (paper 003 Table IV) for ``gpu``: a simulated GPU's from
    the `micro` suite's microbenchmarks (simulated where the database lacks them, with
    ``seed`` in ``jobs`` processes; "calibrating"; ``baseline`` the (core, memory) MHz of the
    ratio-one parameters), a measured GPU's from the TOML file ``from_file``. Table
    ``parameters`` (paper 003's GTX 980 values beside); a microbenchmark calibration adds
    ``eq4``, eq. 4's DRAM latency per pointer-chase run against core_f/mem_f with the fitted
    line and the paper's. A note: the calibration's id and what it ran."""
    from gpudb.train import calibrate as cal

    if from_file:
        if baseline:
            raise GpudbError("--baseline applies to a simulated calibration, not --from-file")
        con = db.connect(path)
        try:
            report = cal.calibrate_from_file(con, gpu, from_file)
        finally:
            con.close()
        summary = f"from {from_file}"
    else:
        from sim.config import available

        if gpu not in available("gpus"):
            raise GpudbError(f"{gpu!r} is not a simulator GPU ({', '.join(available('gpus'))}); "
                             "a measured GPU's parameters come from a file: --from-file "
                             "cal.toml")
        report = cal.calibrate(path, gpu, baseline=baseline, seed=seed, jobs=jobs,
                               progress=steps_of(progress, "calibrating"))
        summary = (f"{report.runs_added} runs simulated, {report.runs_reused} reused; baseline "
                   f"{report.baseline[0]:g}/{report.baseline[1]:g} MHz")
    tables = Tables({"parameters": Table(*report.table())}, [
        f"calibration_id {report.calibration_id} ({report.gpu_id}, {report.method}; "
        f"{summary}; {report.seconds:.1f} s)"])
    if report.method == "microbenchmark":
        con = db.connect(path, read_only=True)
        try:
            tables["eq4"] = Table(*cal.eq4_points(con, report.gpu_id))
        finally:
            con.close()
        tables.captions["eq4"] = ("\neq. 4, DRAM latency against core_f/mem_f: each "
                                  "pointer-chase run, the fitted line and paper 003's GTX 980 "
                                  "line (core cycles):")
    return tables


def clone(path: str, *, gpu: str, model: str | None = None, base_mhz: float | None = None,
          base_mem_mhz: float | None = None, kernels: list[str] | None = None,
          output: str | None = None, jobs: int | None = None,
          progress: Progress | None = None) -> Tables:
    """A suite file (``output``, default clone-<gpu>.toml here) of synthetic clones of the
    measured GPU's kernels (all, or ``kernels``) on the simulator configuration ``model``
    (default <gpu>-sim), each built from its profiler metrics at the base setting (``base_mhz``
    / ``base_mem_mhz``, default the nominal) and calibrated there by simulation in ``jobs``
    processes ("calibrating clones"). Table ``clones``: each clone's measured and simulated
    IPC at the base and its knobs; a footnote: where it was written and how to sweep it."""
    from gpudb.workflows.simulator import make_clones, target
    from sim.config import load_suite

    t = target(path, gpu, model, base_mhz, base_mem_mhz)
    out = Path(output or f"clone-{gpu}.toml")
    text, clones = make_clones(path, t, kernels, jobs=jobs,
                               progress=steps_of(progress, "calibrating clones"),
                               command=f"gpudb --db {path} clone --gpu {gpu}")
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text)
    load_suite(tmp)   # what is written loads back
    tmp.replace(out)
    rows = [(c.profile.kernel_id, c.name, c.profile.m("executed_ipc"), c.base_ipc_sim,
             c.dependence, c.fp64_share, "; ".join(c.notes)) for c in clones]
    return Tables({"clones": Table(["kernel_id", "clone", "executed_ipc", "simulated_ipc",
                                    "dependence", "fp64_conversion_share", "note"], rows)},
                  footnotes={"clones": f"wrote {len(clones)} clones to {out} (suite "
                                       f"{load_suite(out).name}); sweep them with: gpudb --db "
                                       f"{path} evaluate simulator --gpu {gpu} --suite {out}"})
