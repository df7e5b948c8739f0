"""The papers' evaluations on a database's runs, as named tables (gpudb.store.result.Tables):
what ``gpudb evaluate`` prints and ``gpudb.Database.evaluate_*`` returns. Each function takes
the database's path and the command's options (keyword arguments named as the CLI's options,
with its defaults), simulates what the evaluation needs and the database lacks (a simulated
GPU's suite at the nominal memory clock: paper 000's evaluation scales the core clock only;
the dynamic optimal's schedules; Equalizer's runs), then reads the tables.

A returned Tables holds the tables in print order, ``notes`` (the lines a reader needs before
them: the base chosen, the predictors without predictions and why, what the figures are over),
``captions`` (what each table shows) and ``footnotes`` (how to read it: the verdict's rule).

``progress``, where given, hears how a long evaluation goes (the CLI draws its bars from it):
  progress(step, done, total[, instructions])  a counted step, ``step`` one of "simulating"
      (a sweep of the runs the database lacks; instructions: warp instructions so far),
      "dynamic optimal runs", "replaying" (replay steps), "equalizer runs[, seed N]",
      "calibrating clones";
  progress("sweeping", text)   a simulation is about to start (text: what it simulates, or
      None);
  progress("swept", summary)   gpudb.simulate.sweep.sweep's summary after a sweep;
  progress("notice", text)     something the evaluation left out, as it happens.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from gpudb.analysis.evaluate import Scope, missing_sweep, resolve_scope
from gpudb.store import db
from gpudb.store.base import refuse_read_only
from gpudb.store.db import GpudbError
from gpudb.store.result import Table, Tables

Progress = Callable[..., None]

# sweep's progress: (runs done, runs in all, warp instructions simulated so far)
SweepProgress = Callable[[int, int, int | None], None]

ENERGY_SCOPES = {"chip": "chip energy (no board power: papers 000 and 004's scope)",
                 "run": "run energy (board power included)"}


def steps_of(progress: Progress | None, step: str) -> Callable[..., None] | None:
    """``progress`` as one step's ``(done, total[, instructions])`` callback."""
    if progress is None:
        return None
    return lambda *counts: progress(step, *counts)


def _tell(progress: Progress | None, event: str, value) -> None:
    if progress is not None:
        progress(event, value)


def suite_label(scope: Scope) -> str:
    return f"suite {scope.suite}" if scope.suite else "all kernels"


def seeds_line(seeds: list[int] | None) -> str | None:
    """What the tables' figures are over, for several explicit seeds."""
    if not seeds or len(seeds) < 2:
        return None
    return (f"each figure: the mean over seeds {', '.join(map(str, seeds))}, each seed's runs "
            "evaluated alone; *_ci95 columns: the half-width of its 95% interval (Student's t "
            "with n-1 degrees of freedom over the per-seed figures); seeds: how many")


def _verdict_footnote(tables: Tables, name: str, seeds: list[int] | None) -> None:
    """Under a table with a verdict column (several seeds), the rule it follows."""
    from gpudb.analysis.verdict import verdict_rule

    if "verdict" in tables[name].columns:
        tables.footnotes[name] = verdict_rule(len(seeds or []))


def evaluation_scope(path: str, gpu: str, suite: str | None, *, read_only: bool,
                     sweep: bool = True, seeds: list[int] | None = None,
                     progress: Progress | None = None, engine: str | None = None) -> Scope:
    """The evaluation's Scope. A simulated GPU's suite is swept at the nominal memory clock
    if the database at ``path`` lacks it (of each of ``seeds``; None: of any seed, else seed
    0), ``progress`` told ("sweeping", what), then the sweep's counts ("simulating", ...), then
    ("swept", summary), by simulator ``engine`` (None: the database's, else the reference; a
    database holding the other engine's runs, or an engine given for a measured GPU, is a
    GpudbError, whether or not anything is missing). Without ``sweep``, or ``read_only``, a
    missing sweep is a GpudbError naming the ``gpudb sweep`` command that would run it."""
    exists = Path(path).exists()
    con = db.connect(path, read_only=True) if exists else None
    try:
        scope = resolve_scope(con, gpu, suite)
        if engine is not None and not scope.simulated:
            raise GpudbError(f"{gpu} is a measured GPU: its runs are not simulated, so no "
                             f"simulator engine ({engine}) applies to them")
        if con is not None and engine is not None:
            from gpudb.store.runs import run_engine

            run_engine(con, engine)     # one engine's runs per database
    finally:
        if con is not None:
            con.close()
    if not scope.simulated:
        return scope
    missing = [s for s in (seeds or [None])
               if not exists or _needs_sweep(path, read_only, scope, s)]
    if not missing:
        return scope
    missing = [0 if s is None else s for s in missing]
    command = f"gpudb --db {path} sweep --gpu {gpu} --suite {suite or 'default'}"
    if missing != [0]:
        command += f" --seed {','.join(map(str, missing))}"
    if engine is not None:
        command += f" --engine {engine}"
    if not sweep or read_only:
        raise GpudbError(f"no simulated runs of suite {scope.suite} on {gpu} in "
                         f"{path}; run: {command}")
    # a plain statement of what happens next (it read like an error; issue 38)
    _tell(progress, "sweeping", f"simulating suite {scope.suite} on {gpu} (once: the runs "
                                "are kept)")
    from gpudb.simulate.sweep import sweep as run_sweep

    # the simulation's length is gpudb's, not the file's: outside evaluate's time bound
    with db.unbounded():
        summary = run_sweep(path, gpu, suite or "default",
                            progress=steps_of(progress, "simulating"), mem_mhz=nominal_mem(gpu),
                            jobs=os.cpu_count() or 1, seed=missing, engine=engine)
    _tell(progress, "swept", summary)
    return scope


def _needs_sweep(path: str, read_only: bool, scope: Scope, seed: int | None = None) -> bool:
    # a writable open migrates a file from an older gpudb before it is looked at
    con = db.connect(path, read_only=read_only)
    try:
        return missing_sweep(con, scope.gpu, scope.suite, seed)
    finally:
        con.close()


def nominal_mem(gpu: str) -> list[float]:
    """The paper 000 evaluation scales the core clock only: memory stays at its nominal."""
    from sim.config import load_gpu

    return [load_gpu(gpu).nominal_mem_mhz]


def counted_steps(progress: Callable[[int, int], None] | None,
                  steps: int) -> Callable[[object], None]:
    """A replay's per-step callback that reports (steps done, steps) to ``progress``, which
    hears (0, steps) at once."""
    done = 0

    def step(_step) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, steps)

    if progress is not None:
        progress(0, steps)
    return step


# ---------------------------------------------------------------------------- accuracy


def accuracy(path: str, *, read_only: bool = False, gpu: str, suite: str | None = None,
             base_mhz: float | None = None, base_mem_mhz: float | None = None,
             granularity: str = "run", folds: int = 5, seeds: list[int] | None = None,
             sweep: bool = True, progress: Progress | None = None) -> Tables:
    """Each predictor's MAPE (%) from the base core P-state (MHz; default the highest, or
    where the GPU's Wu model was trained) to every other one (paper 000 figure 8, the paper's
    averages beside ours: table ``by_predictor``), then per kernel (figure 9: ``by_kernel``);
    with ``seeds``, per seed and then the mean with its 95% interval. ``granularity``: whole
    runs ('run') or single intervals ('interval'). With 'run' on a GPU run at several memory
    clocks, paper 003's evaluation too: from one base (core, memory) setting (``base_mhz``,
    ``base_mem_mhz``; default the highest) to every target (``grid_summary``, Wang & Chu's
    fitted variant cross-validated in ``folds`` folds by kernel), Wang & Chu's error as a core
    x memory table (``grid_by_setting``) and per kernel with the model's regime
    (``grid_by_kernel``)."""
    db.doing("computing evaluate accuracy")
    scope = evaluation_scope(path, gpu, suite, read_only=read_only, sweep=sweep, seeds=seeds,
                             progress=progress)
    tables = predictor_accuracy(path, scope, base_mhz, granularity, seeds)
    if granularity == "run":
        grid_accuracy(path, scope, base_mhz, base_mem_mhz, folds, tables)
    return tables


def _why_absent(absent: list[str], wu_note: str | None = None) -> str:
    """Why each predictor in ``absent`` predicted nothing, in one clause per cause: what it
    declares it needs (gpudb.predictors.Predictor.needs), else the per-interval counters it
    reads; ``wu_note``: why a stored Wu model has no predictions from the base, if it has
    one."""
    from gpudb.predictors import get

    needs = {name: get(name).needs for name in absent if get(name).needs}
    interval = [p for p in absent if p not in needs]
    reasons = [wu_note if p == "wu" and wu_note else f"{p} needs {needs[p]}"
               for p in absent if p in needs]
    if interval:
        reasons.insert(0, f"{', '.join(interval)} read per-interval counters, which simulated "
                          "runs have and measured ones do not")
    return "; ".join(reasons)


def predictor_accuracy(path: str, scope: Scope, base_mhz: float | None, granularity: str,
                       seeds: list[int] | None = None) -> Tables:
    """Paper 000's accuracy tables (``by_predictor``, ``by_kernel``) of :func:`accuracy`, on
    the runs the database at ``path`` has for ``scope``."""
    from gpudb.analysis.evaluate import (
        accuracy_over_seeds,
        accuracy_tables,
        check_base_mhz,
        check_same_kernels,
        default_base_mhz,
        predictor_coverage,
        wu_base_note,
    )

    con = db.connect(path, read_only=True)
    try:
        check_base_mhz(con, scope, base_mhz)
        # no base_mhz: where the GPU's Wu model was trained, if not at the highest clock
        chosen = default_base_mhz(con, scope) if base_mhz is None else None
        if chosen:
            base_mhz = chosen[0]
        applies, absent = predictor_coverage(con, scope.gpu, scope.suite, granularity,
                                             base_mhz)
        wu_note = wu_base_note(con, scope.gpu, base_mhz) if "wu" in absent else None
        if seeds:
            check_same_kernels(con, scope, seeds, "run")
            per_predictor, per_kernel = accuracy_over_seeds(con, scope.gpu, scope.suite,
                                                            base_mhz, granularity, seeds)
        else:
            per_predictor, per_kernel = accuracy_tables(con, scope.gpu, scope.suite, base_mhz,
                                                        granularity)
    finally:
        con.close()
    notes = [line for line in [
        seeds_line(seeds),
        chosen and f"base {chosen[0]:g} MHz: {chosen[1]} (--base-mhz for another)",
        absent and (f"predictors with predictions on these runs: {', '.join(applies) or 'none'}"
                    f"; none from {', '.join(absent)} ({_why_absent(absent, wu_note)})")]
        if line]
    tables = Tables({"by_predictor": per_predictor, "by_kernel": per_kernel}, notes, captions={
        "by_predictor": f"MAPE (%) by predictor and target setting, {granularity} granularity, "
                        f"{scope.gpu}, {suite_label(scope)}:",
        "by_kernel": "\nMAPE (%) by kernel, over all targets:"})
    _verdict_footnote(tables, "by_predictor", seeds)
    return tables


def folds_used(folds: int, kernels: int) -> str:
    """The cross-validation's folds as run: at most one per kernel (evaluate_grid._cv_rows)."""
    if folds <= kernels:
        return f"{folds} folds by kernel"
    return f"{kernels} folds by kernel, one per kernel: --folds {folds} asked for more"


def grid_accuracy(path: str, scope: Scope, base_mhz: float | None,
                  base_mem_mhz: float | None, folds: int, tables: Tables) -> None:
    """Paper 003's core x memory tables of :func:`accuracy` added to ``tables`` (nothing for
    a GPU run at one memory clock; a footnote when no prediction from the base has an actual
    time)."""
    from gpudb.analysis.evaluate_grid import default_base, grid_tables, has_grid

    con = db.connect(path, read_only=True)
    try:
        if not has_grid(con, scope.gpu):
            return
        top = default_base(con, scope.gpu)
        base = (base_mhz or top[0], base_mem_mhz or top[1])
        summary, heat, per_kernel = grid_tables(con, scope.gpu, scope.suite, base, folds)
    finally:
        con.close()
    if not summary.rows:
        last = list(tables)[-1]
        tables.footnotes[last] = "\n".join(filter(None, [
            tables.footnotes.get(last), f"\nno predictions from base {base[0]:g}/{base[1]:g} "
                                        "MHz (core/memory) with a known actual time"]))
        return
    # the folds used: one kernel per fold at most (evaluate_grid._cv_rows)
    kernels = len({r[per_kernel.columns.index("kernel_id")] for r in per_kernel.rows})
    cv = any(r[0] == "wangchu_fit_cv" for r in summary.rows)
    tables["grid_summary"] = summary
    tables.captions["grid_summary"] = (
        f"\ncore x memory accuracy (paper 003) from base {base[0]:g}/{base[1]:g} MHz "
        "(core/memory), MAPE (%) over every target setting, the base included"
        + (f"; wangchu_fit_cv: fitted on the other kernels ({folds_used(folds, kernels)})"
           if cv else "") + ":")
    if heat.rows:
        tables["grid_by_setting"] = heat
        tables.captions["grid_by_setting"] = ("\nMAPE (%) by target, core MHz down, memory MHz "
                                              "across (query error_by_setting):")
    tables["grid_by_kernel"] = per_kernel
    tables.captions["grid_by_kernel"] = ("\nMAPE (%) by kernel over every target, with the case "
                                         "of paper 003 section V the model picks at the base:")


# ----------------------------------------------------------------------------- classes


def classes(path: str, *, read_only: bool = False, gpu: str, suite: str | None = None,
            sweep: bool = True, progress: Progress | None = None) -> Tables:
    """The suite's kernels by the quantities papers 000 and 004 describe their benchmarks by,
    at the highest core P-state: computation share (paper 000's compute-bound class is
    >= 75%), load-outstanding, CRIT, LEAD, stall and store-stall shares, per category and
    class (``summary``) and per kernel (``by_kernel``), with what the papers report beside
    them. Needs per-interval counters (simulated runs)."""
    from gpudb.analysis.evaluate import PAPER_CLASSES, class_tables, length_line

    db.doing("computing evaluate classes")
    scope = evaluation_scope(path, gpu, suite, read_only=read_only, sweep=sweep,
                             progress=progress)
    con = db.connect(path, read_only=True)
    try:
        summary, kernels = class_tables(con, scope.gpu, scope.suite)
        length = length_line(con, scope.gpu, scope.suite)
    finally:
        con.close()
    if not kernels.rows:
        raise GpudbError(f"no per-interval counters for {scope.gpu} ({suite_label(scope)}): "
                         "workload classes need simulated runs")
    return Tables({"summary": summary, "by_kernel": kernels}, captions={
        "summary": f"shares of the time at the highest core P-state by category and paper 000 "
                   f"class ('all' summarises), {scope.gpu}, {suite_label(scope)}:",
        "by_kernel": "\nper kernel:"},
        footnotes={"by_kernel": f"\n{length}\n" + "\n".join(PAPER_CLASSES)})


# ----------------------------------------------------------------------------- control


def control(path: str, *, read_only: bool = False, gpu: str, suite: str | None = None,
            objectives: list[str] | None = None, max_loss_pct: float = 1.0,
            seeds: list[int] | None = None, energy_scope: str = "both", sweep: bool = True,
            progress: Progress | None = None) -> Tables:
    """Energy savings (%) of the predictor-driven DVFS controllers (trace replay) and of the
    offline bounds against always running at the highest core P-state (paper 000 figures
    11-12, paper 004 section 4.3), one table per objective (``objectives``, default all of
    gpudb.control.energy.OBJECTIVES; energy_perf within ``max_loss_pct`` % slowdown) and
    energy scope ('chip': no board power, the papers'; 'run': board power included; 'both'),
    named OBJECTIVE_SCOPE. A GPU with whole runs only (measured) gets the static optimal over
    its settings, one table per objective."""
    from gpudb.control.energy import OBJECTIVES

    db.doing("computing evaluate control")
    scope = evaluation_scope(path, gpu, suite, read_only=read_only, sweep=sweep, seeds=seeds,
                             progress=progress)
    return control_savings(path, scope, list(objectives or OBJECTIVES), max_loss_pct,
                           read_only=read_only, seeds=seeds,
                           energy_scopes=("chip", "run") if energy_scope == "both"
                           else (energy_scope,), progress=progress)


def control_savings(path: str, scope: Scope, objectives: list[str], max_loss_pct: float, *,
                    read_only: bool, seeds: list[int] | None = None,
                    energy_scopes: tuple[str, ...] = ("chip", "run"),
                    progress: Progress | None = None) -> Tables:
    """The tables of :func:`control` for ``scope``. With per-interval runs: the dynamic
    optimal's schedules run in the closed loop (stored runs reused; "dynamic optimal runs"),
    then each seed's trace replay into control_result ("replaying"), then the tables (the
    mean over ``seeds`` with 95% intervals; without, every seed the database has, pooled).
    With whole runs only: the static optimal over the GPU's settings."""
    from gpudb.analysis.evaluate import (
        check_same_kernels,
        control_over_seeds,
        control_table,
        has_interval_runs,
        interval_seeds,
        run_static_table,
    )
    from gpudb.control import schedule_run
    from gpudb.control.results import REPLAY_PREDICTORS
    from gpudb.control.results import evaluate as evaluate_policies

    con = db.connect(path, read_only=read_only)
    try:
        if not has_interval_runs(con, scope):
            found = [(objective, None, run_static_table(con, scope, objective, max_loss_pct))
                     for objective in objectives]
            what = "static optimal savings (%) against the highest setting"
            notes = [f"{scope.gpu} has whole runs only (no per-interval runs to replay a "
                     "controller on): static optimal over its (SM, core, memory) settings, the "
                     "first row the mean over its kernels"]
        else:
            refuse_read_only(read_only, "gpudb evaluate control (into control_result)")
            run_seeds = seeds or interval_seeds(con, scope)
            if seeds:
                check_same_kernels(con, scope, seeds)
            # the achievable bound: the dynamic optimal's schedules run in the closed loop
            # (stored runs are reused); their length is gpudb's, outside evaluate's time bound
            with db.unbounded():
                _, unrunnable = schedule_run.simulate(
                    con, objectives, max_loss_pct, scope.gpu, scope.suite, energy_scopes,
                    progress=steps_of(progress, "dynamic optimal runs"), seeds=run_seeds,
                    workers=os.cpu_count() or 1)
            if unrunnable:
                _tell(progress, "notice", f"{unrunnable} dynamic-optimal schedules not run: "
                                          "their GPU is not a shipped simulator configuration")
            steps = (len(run_seeds) * len(energy_scopes) * len(objectives)
                     * (2 * len(REPLAY_PREDICTORS) + 1))
            step = counted_steps(steps_of(progress, "replaying"), steps)
            evaluate_policies(con, REPLAY_PREDICTORS, objectives, max_loss_pct, scope.gpu,
                              scope.suite, progress=step, scopes=energy_scopes, seeds=run_seeds)
            found = [(objective, energy_scope,
                      control_over_seeds(con, scope.gpu, scope.suite, objective, max_loss_pct,
                                         seeds, energy_scope) if seeds else
                      control_table(con, scope.gpu, scope.suite, objective, max_loss_pct,
                                    energy_scope))
                     for objective in objectives for energy_scope in energy_scopes]
            what = "mean savings (%) against the highest P-state"
            notes = [seeds_line(seeds) or (
                f"seeds {', '.join(map(str, run_seeds))} pooled: each seed replayed on its own "
                "runs, the means over every kernel and seed (--seeds for the mean over seeds "
                "with a 95% interval)" if not seeds and len(run_seeds) > 1 else None)]
    finally:
        con.close()
    tables = Tables(notes=[n for n in notes if n])
    for objective, energy_scope, table in found:
        name = objective + (f"_{energy_scope}" if energy_scope else "")
        tables[name] = table
        tables.captions[name] = (
            f"\n{what}, objective {objective}"
            + (f" (slowdown bound {max_loss_pct:g}%)" if objective == "energy_perf" else "")
            + f", {scope.gpu}, {suite_label(scope)}"
            + (f", {ENERGY_SCOPES[energy_scope]}" if energy_scope else "") + ":")
        _verdict_footnote(tables, name, seeds)
    return tables


# --------------------------------------------------------------------------- equalizer


def equalizer(path: str, *, read_only: bool = False, gpu: str, suite: str | None = None,
              kernels: list[str] | None = None, per_kernel: bool = False, run: bool = True,
              seeds: list[int] | None = None, progress: Progress | None = None) -> Tables:
    """Equalizer (paper 001) against the static operating points: each kernel of ``suite``
    (a shipped name or a suite file; None: 'default'), or those in ``kernels``, under
    Equalizer in energy and performance mode (and with V/F or CTA control alone, and
    energy mode's 'inclined' variant: no throttling without an excess warp), and at
    nominal, SM high/low and memory high/low (15% up or down), simulated on the shipped GPU
    ``gpu`` where the database lacks them (``run``; of each of ``seeds``, default 0), then
    the stored query equalizer_vs_static: geometric-mean speedup and energy change against
    nominal per kernel category and overall (``per_kernel``: a row per kernel too), the
    paper's figures beside ours; with several seeds, the mean over them. One table,
    ``equalizer``."""
    from gpudb.analysis.evaluate import equalizer_over_seeds
    from gpudb.analysis.verdict import verdict_rule
    from gpudb.control.runner import run as run_kind
    from gpudb.store.queries import run_query
    from sim.config import ConfigError, available, load_suite

    db.doing("computing evaluate equalizer")
    suite = suite or "default"
    if gpu not in available("gpus"):
        raise GpudbError(f"{gpu!r} is not a simulator GPU ({', '.join(available('gpus'))}): "
                         "Equalizer runs in the simulator's closed loop")
    try:
        suite_name = load_suite(suite).name
    except ConfigError as exc:
        raise GpudbError(str(exc)) from None
    if run:
        refuse_read_only(read_only, "gpudb evaluate equalizer (simulating its runs)")
        for seed in seeds or [0]:
            # gpudb's simulation, whose length the file does not decide
            with db.unbounded():
                run_kind(path, "equalizer", gpu, suite, kernels or None, seed=seed,
                         progress=steps_of(progress, "equalizer runs"
                                         + (f", seed {seed}" if seeds else "")))
    con = db.connect(path, read_only=True)
    try:
        per_seed = []
        for seed in seeds or [None]:
            columns, rows = run_query(con, "equalizer_vs_static", {
                "gpu_id": gpu, "suite": suite_name, "kernels": "each" if per_kernel else None,
                "seed": None if seed is None else str(seed)})
            per_seed.append(Table(columns, rows))
    finally:
        con.close()
    table = equalizer_over_seeds(per_seed)
    if not table.rows:
        raise GpudbError(f"no Equalizer runs of suite {suite_name} on {gpu} in {path}: "
                         f"run gpudb --db {path} evaluate equalizer --gpu {gpu}")
    caption = "\n".join(filter(None, [
        f"Equalizer and the static operating points against nominal, {gpu}, suite "
        f"{suite_name} (geometric means; 'all' over every kernel):", seeds_line(seeds)]))
    footnotes = ({"equalizer": verdict_rule(len(seeds)) + "; energy: our chip energy against "
                                                          "the paper's"}
                 if "speedup_verdict" in table.columns else {})
    return Tables({"equalizer": table}, captions={"equalizer": caption}, footnotes=footnotes)


# --------------------------------------------------------------------------- simulator


def simulator(path: str, *, read_only: bool = False, gpu: str, model: str | None = None,
              suite: str | None = None, reclone: bool = False,
              kernels: list[str] | None = None, base_mhz: float | None = None,
              base_mem_mhz: float | None = None, per_kernel: bool = True, fit: bool = False,
              jobs: int | None = None, seeds: list[int] | None = None,
              engine: str | None = None, progress: Progress | None = None) -> Tables:
    """The simulator against a measured GPU (``gpu``, a gpu_id with profiler metrics): its
    kernels cloned from their profiles onto ``model`` (default <gpu>-sim) into the suite file
    ``suite`` (default <database>.clone-<gpu>.toml beside it; cloned again with ``reclone``),
    the clones simulated at every setting the GPU was measured at (of each of ``seeds``; with
    ``engine``, None: the database's, else the reference), and
    how time and power scale with the core and memory clock compared beside time proportional
    to the core clock and Wang & Chu fitted on other kernels: ``sim_scaling_summary`` (per
    split and class) and with ``per_kernel`` ``sim_scaling_error``. With ``fit``, the
    configuration's calibrated values fitted on its training kernels (a caption of TOML lines)
    and each kernel's power MAPE (%) fitted on the others (``power_leave_one_out``)."""
    from gpudb.store.queries import run_query
    from gpudb.workflows.simulator import check_simulator, fit_config, target

    t = target(path, gpu, model, base_mhz, base_mem_mhz, read_only=read_only)
    suite_path = Path(suite) if suite else Path(path).with_name(
        f"{Path(path).name}.clone-{gpu}.toml")
    if suite_path.exists() and not reclone:
        _tell(progress, "notice", f"clones from {suite_path} (--reclone to build them again)")
    _tell(progress, "sweeping", None)
    checked = check_simulator(path, t, suite_path, read_only=read_only, reclone=reclone,
                              kernels=kernels or None, seeds=seeds, jobs=jobs, engine=engine,
                              clone_progress=steps_of(progress, "calibrating clones"),
                              sweep_progress=steps_of(progress, "simulating"),
                              command=f"gpudb --db {path} evaluate simulator --gpu {gpu}")
    notes = ([f"wrote the clones to {checked.suite_path}"] if checked.cloned else []) + [
        f"{checked.sweep['runs_added']} runs simulated, {checked.sweep['runs_skipped']} "
        f"already stored; {checked.wangchu}; {checked.seconds:.0f} s"]
    params = {"gpu_id": gpu, "sim_gpu_id": t.model_name}
    db.doing("computing evaluate simulator")
    tables = Tables(notes=notes)
    con = db.connect(path, read_only=True)
    try:
        for name in ("sim_scaling_summary",) + (("sim_scaling_error",) if per_kernel else ()):
            tables[name] = Table(*run_query(con, name, params))
    finally:
        con.close()
    if fit:
        lines, loao, result = fit_config(path, t)
        tables["power_leave_one_out"] = Table(
            ["kernel_id", "power_mape_pct_fitted_on_others"], loao)
        tables.captions["power_leave_one_out"] = "\n".join(
            [f"fitted on {len(result['kernels'])} training kernels (normalised power MAPE "
             f"there, measured time: {result['train_mape_pct']:.2f}%):"]
            + [f"  {line}" for line in lines])
    return tables
