"""``gpudb evaluate``: accuracy, equalizer, classes and control tables, and what they need
(sweeping when data is missing).
"""

from __future__ import annotations

import click

from gpudb.cli.common import (
    Context,
    gpu_name,
    seed_list,
    echo,
    friendly_errors,
    output_options,
    output_rows,
    refuse_unasked_simulation,
    run_progress,
    seeds_option,
)
from gpudb.cli.control import OBJECTIVE_CHOICE
from gpudb.cli.main import cli
from gpudb.cli.simulate import echo_compiling, echo_swept
from gpudb.present.output import HUMAN_FORMATS
from gpudb.store import db
from gpudb.store.db import GpudbError


@cli.group()
def evaluate():
    """The papers' evaluations on the database's runs, as tables.

    Example:

        gpudb evaluate accuracy --gpu gtx480 --suite default
    """


def evaluation_options(command):
    """--gpu and --suite of the commands that evaluate what the database holds."""
    command = click.option(
        "--suite", default=None,
        help="Kernel suite (simulated GPUs: a shipped name or a suite file, default "
             "'default'; measured GPUs: a suite name, default every kernel).")(command)
    return click.option(
        "--gpu", default="gtx480", show_default=True, callback=gpu_name,
        help="GPU: a gpu_id in the database or a shipped simulator configuration; give it "
             "when the database holds measured runs.")(command)


def sweep_option(command):
    return click.option("--sweep/--no-sweep", "do_sweep", default=True, show_default=True,
                        help="Simulate the suite first if the database has no runs of it "
                             "(simulated GPUs).")(command)


def scope_with_sweep(obj: Context, gpu: str, suite: str | None, do_sweep: bool,
           seeds: list[int] | None = None):
    """The evaluation's Scope (gpudb.workflows.evaluate.evaluation_scope, which sweeps what
    it lacks), its sweep's notice, progress bar and summary line on the terminal."""
    from gpudb.workflows.evaluate import evaluation_scope

    refuse_unasked_simulation(obj, evaluates=True)

    def sweeping(scope, command: str) -> None:
        # a plain statement of what happens next (it read like an error; issue 38)
        echo(f"simulating suite {scope.suite} on {gpu} (once: the runs are kept)", err=True)
        echo_compiling()

    with run_progress("simulating", rate=True) as progress:
        scope, summary = evaluation_scope(obj.path, gpu, suite, read_only=obj.read_only,
                                          do_sweep=do_sweep, seeds=seeds, progress=progress,
                                          on_sweep=sweeping)
    if summary is not None:
        echo_swept(obj, summary)
    return scope


def _seeds_line(seeds: list[int] | None) -> str | None:
    """What the tables' figures are over, for several explicit seeds."""
    if not seeds or len(seeds) < 2:
        return None
    return (f"each figure: the mean over seeds {', '.join(map(str, seeds))}, each seed's runs "
            "evaluated alone; *_ci95 columns: the half-width of its 95% interval (Student's t "
            "with n-1 degrees of freedom over the per-seed figures); seeds: how many")


def suite_label(scope) -> str:
    return f"suite {scope.suite}" if scope.suite else "all kernels"


def _echo_verdict_rule(table, seeds: list[int] | None, fmt: str) -> None:
    """Under a table with a verdict column (several seeds), the rule it follows."""
    from gpudb.present.demo import verdict_rule

    if fmt in HUMAN_FORMATS and "verdict" in table.columns:
        echo(verdict_rule(len(seeds or [])))


def print_accuracy(obj: Context, scope, base_mhz, granularity: str, fmt: str,
                   seeds: list[int] | None = None) -> None:
    from gpudb.analysis.evaluate import (
        accuracy_over_seeds,
        accuracy_tables,
        check_base_mhz,
        check_same_kernels,
        default_base_mhz,
        predictor_coverage,
        wu_base_note,
    )

    with obj.connection(read_only=True) as con:
        check_base_mhz(con, scope, base_mhz)
        # no --base-mhz: where the GPU's Wu model was trained, if not at the highest clock
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
    if fmt in HUMAN_FORMATS and _seeds_line(seeds):
        echo(_seeds_line(seeds))
    if fmt in HUMAN_FORMATS:
        if chosen:
            echo(f"base {chosen[0]:g} MHz: {chosen[1]} (--base-mhz for another)")
        if absent:
            echo(f"predictors with predictions on these runs: {', '.join(applies) or 'none'}"
                 f"; none from {', '.join(absent)} ({_why_absent(absent, wu_note)})")
        echo(f"MAPE (%) by predictor and target setting, {granularity} granularity, "
             f"{scope.gpu}, {suite_label(scope)}:")
    output_rows(per_predictor.columns, per_predictor.rows, fmt, "by_predictor")
    _echo_verdict_rule(per_predictor, seeds, fmt)
    if fmt in HUMAN_FORMATS:
        echo("\nMAPE (%) by kernel, over all targets:")
    output_rows(per_kernel.columns, per_kernel.rows, fmt, "by_kernel")


# What a predictor without predictions on a database's runs needs (the rest read per-interval
# counters, which simulated runs have and measured ones do not).
_NEEDS = {"wu": "wu needs a model: gpudb train wu",
          "wangchu": "wangchu needs a calibration: gpudb calibrate (--from-file for a "
                     "measured GPU)",
          "wangchu_scaled": "wangchu_scaled needs a calibration like wangchu",
          "wangchu_fit": "wangchu_fit needs a fit: gpudb train wangchu"}


def _why_absent(absent: list[str], wu_note: str | None = None) -> str:
    """Why each predictor in ``absent`` predicted nothing, in one clause per cause;
    ``wu_note``: why a stored Wu model has no predictions from the base, if it has one."""
    interval = [p for p in absent if p not in _NEEDS]
    reasons = [wu_note if p == "wu" and wu_note else _NEEDS[p] for p in absent if p in _NEEDS]
    if interval:
        reasons.insert(0, f"{', '.join(interval)} read per-interval counters, which simulated "
                          "runs have and measured ones do not")
    return "; ".join(reasons)


def folds_used(folds: int, kernels: int) -> str:
    """The cross-validation's folds as run: at most one per kernel (evaluate_grid._cv_rows)."""
    if folds <= kernels:
        return f"{folds} folds by kernel"
    return f"{kernels} folds by kernel, one per kernel: --folds {folds} asked for more"


def print_grid_accuracy(obj: Context, scope, base_mhz, base_mem_mhz, folds: int,
                        fmt: str) -> None:
    from gpudb.analysis.evaluate_grid import default_base, grid_tables, has_grid

    with obj.connection(read_only=True) as con:
        if not has_grid(con, scope.gpu):
            return
        top = default_base(con, scope.gpu)
        base = (base_mhz or top[0], base_mem_mhz or top[1])
        summary, heat, per_kernel = grid_tables(con, scope.gpu, scope.suite, base, folds)
    if not summary.rows:
        if fmt in HUMAN_FORMATS:
            echo(f"\nno predictions from base {base[0]:g}/{base[1]:g} MHz (core/memory)"
                 " with a known actual time")
        return
    if fmt in HUMAN_FORMATS:
        # the folds used: one kernel per fold at most (evaluate_grid._cv_rows)
        kernels = len({r[per_kernel.columns.index("kernel_id")] for r in per_kernel.rows})
        used = folds_used(folds, kernels)
        cv = any(r[0] == "wangchu_fit_cv" for r in summary.rows)
        echo(f"\ncore x memory accuracy (paper 003) from base {base[0]:g}/{base[1]:g} MHz "
             "(core/memory), MAPE (%) over every target setting, the base included"
             + (f"; wangchu_fit_cv: fitted on the other kernels ({used})" if cv else "")
             + ":")
    output_rows(summary.columns, summary.rows, fmt, "grid_summary")
    if heat.rows:
        if fmt in HUMAN_FORMATS:
            echo("\nMAPE (%) by target, core MHz down, memory MHz across "
                 "(query error_by_setting):")
        output_rows(heat.columns, heat.rows, fmt, "grid_by_setting")
    if fmt in HUMAN_FORMATS:
        echo("\nMAPE (%) by kernel over every target, with the case of paper 003 "
             "section V the model picks at the base:")
    output_rows(per_kernel.columns, per_kernel.rows, fmt, "grid_by_kernel")


def step_bar(label: str):
    """A ``progress(done, total)`` callback for a workflow's steps (a replay's): common's
    run_progress counting steps, with its ETA on a terminal and in a log alike."""
    return run_progress(label, unit="steps")


ENERGY_SCOPES = {"chip": "chip energy (no board power: papers 000 and 004's scope)",
                 "run": "run energy (board power included)"}


def print_control(obj: Context, scope, objectives: list[str], max_loss_pct: float,
                  fmt: str, seeds: list[int] | None = None,
                  energy_scopes: tuple[str, ...] = ("chip", "run")) -> None:
    """gpudb.workflows.evaluate.control_tables with its progress bars, then its tables."""
    from gpudb.workflows.evaluate import control_tables

    def notice(message: str) -> None:
        if fmt in HUMAN_FORMATS:
            echo(message, err=True)

    with run_progress("dynamic optimal runs") as runs, step_bar("replaying") as replay:
        result = control_tables(obj.path, scope, objectives, max_loss_pct,
                                read_only=obj.read_only, seeds=seeds,
                                energy_scopes=energy_scopes, run_progress=runs,
                                replay_progress=replay, notice=notice)
    tables, run_seeds = result.tables, result.run_seeds
    if result.replayed:
        what = "mean savings (%) against the highest P-state"
        if fmt in HUMAN_FORMATS and _seeds_line(seeds):
            echo(_seeds_line(seeds))
        elif fmt in HUMAN_FORMATS and not seeds and len(run_seeds) > 1:
            echo(f"seeds {', '.join(map(str, run_seeds))} pooled: each seed replayed "
                 "on its own runs, the means over every kernel and seed (--seeds "
                 "for the mean over seeds with a 95% interval)")
    else:
        if fmt in HUMAN_FORMATS:
            echo(f"{scope.gpu} has whole runs only (no per-interval runs to replay a "
                 "controller on): static optimal over its (SM, core, memory) "
                 "settings, the first row the mean over its kernels")
        what = "static optimal savings (%) against the highest setting"
    for objective, energy_scope, table in tables:
        if fmt in HUMAN_FORMATS:
            echo(f"\n{what}, objective {objective}"
                 + (f" (slowdown bound {max_loss_pct:g}%)" if objective == "energy_perf"
                          else "") + f", {scope.gpu}, {suite_label(scope)}"
                 + (f", {ENERGY_SCOPES[energy_scope]}" if energy_scope else "") + ":")
        output_rows(table.columns, table.rows, fmt,
                    objective + (f"_{energy_scope}" if energy_scope else ""))
        _echo_verdict_rule(table, seeds, fmt)


@evaluate.command()
@evaluation_options
@click.option("--base-mhz", type=float,
              help="Base core MHz (default: the GPU's highest core P-state, 700 on gtx480).")
@click.option("--base-mem-mhz", type=float,
              help="Base memory MHz of the core x memory tables (default: the GPU's highest "
                   "memory P-state).")
@click.option("--granularity", type=click.Choice(["run", "interval"]), default="run",
              show_default=True, help="Predict whole runs or single intervals.")
@click.option("--folds", type=click.IntRange(2), default=5, show_default=True,
              help="Folds (by kernel) of the fitted Wang & Chu variant's cross-validation.")
@seeds_option
@sweep_option
@output_options
@click.pass_obj
@friendly_errors
def accuracy(obj: Context, gpu, suite, base_mhz, base_mem_mhz, granularity, folds, seeds,
             do_sweep, fmt):
    """Each predictor's MAPE from the base core P-state to every other one (paper 000
    figure 8, with the paper's averages beside ours), then per kernel (figure 9). On a GPU
    run at several memory clocks, per (core, memory) target, then paper 003's evaluation:
    from one base (core, memory) setting to every (core, memory) target, per predictor (Wang &
    Chu's fitted variant cross-validated by kernel), as a core x memory table of Wang & Chu's
    error (query error_by_setting) and per kernel with the model's regime.

    Example:

    \b
        gpudb --db sim.duckdb evaluate accuracy --gpu gtx480 --suite default
        gpudb --db lab.duckdb evaluate accuracy --gpu rtx2070s
        gpudb --db sim.duckdb evaluate accuracy --gpu gtx980 --base-mhz 700 --base-mem-mhz 700
        gpudb --db sim.duckdb evaluate accuracy --seeds 0,1,2

    With --seeds the tables of paper 000 are per seed and then averaged (mean and 95%
    interval); paper 003's core x memory tables pool the seeds (each prediction scored
    against a run of its own seed).
    """
    db.doing("computing evaluate accuracy")
    scope = scope_with_sweep(obj, gpu, suite, do_sweep, seeds)
    print_accuracy(obj, scope, base_mhz, granularity, fmt, seeds)
    if granularity == "run":
        print_grid_accuracy(obj, scope, base_mhz, base_mem_mhz, folds, fmt)


@evaluate.command()
@click.option("--gpu", default="gtx480", show_default=True, callback=gpu_name,
              help="Simulated GPU (a shipped configuration); give it when the database holds "
                   "measured runs.")
@click.option("--suite", default="default", show_default=True,
              help="Kernel suite: a shipped name or a suite file.")
@click.option("--kernel", "kernels", multiple=True, help="Only this kernel (repeatable).")
@click.option("--per-kernel", is_flag=True, help="Also print one row per kernel.")
@click.option("--run/--no-run", "do_run", default=True, show_default=True,
              help="Simulate the runs the database lacks first.")
@seeds_option
@output_options
@click.pass_obj
@friendly_errors
def equalizer(obj: Context, gpu, suite, kernels, per_kernel, do_run, seeds, fmt):
    """Equalizer (paper 001) against the static operating points: each kernel under
    Equalizer in energy and performance mode (and with V/F or CTA control alone), and at
    nominal, SM high/low and memory high/low (15% up or down), simulated where the database
    lacks them (4096-cycle epochs; per-SM CTA limits with pausing; V/F one step per epoch by
    the SMs' majority vote), then the stored query equalizer_vs_static: geometric-mean speedup and
    energy change against nominal per kernel category and overall, the paper's figures beside
    ours (per category, over all kernels, and over the paper's four classes).

    Example:

    \b
        gpudb --db sim.duckdb evaluate equalizer --gpu gtx480 --suite default
        gpudb --db sim.duckdb evaluate equalizer --kernel mem_stream --kernel compute_ilp
        gpudb --db sim.duckdb evaluate equalizer --kernel mem_stream --seeds 0,1,2
    """
    db.doing("computing evaluate equalizer")
    from gpudb.analysis.evaluate import Table, equalizer_over_seeds
    from gpudb.control.kinds.equalizer import run_equalizer
    from gpudb.store.queries import run_query
    from sim.config import ConfigError, available, load_suite

    refuse_unasked_simulation(obj)
    if gpu not in available("gpus"):
        raise GpudbError(f"{gpu!r} is not a simulator GPU ({', '.join(available('gpus'))}): "
                         "Equalizer runs in the simulator's closed loop")
    try:
        suite_name = load_suite(suite).name
    except ConfigError as exc:
        raise GpudbError(str(exc)) from None
    if do_run:
        obj.require_writable("gpudb evaluate equalizer (simulating its runs)")
        for seed in seeds or [0]:
            with run_progress("equalizer runs" + (f", seed {seed}" if seeds else "")) \
                    as progress, db.unbounded():
                run_equalizer(obj.path, gpu, suite, list(kernels) or None, progress=progress,
                              seed=seed)
    with obj.connection(read_only=True) as con:
        tables = []
        for seed in seeds or [None]:
            columns, rows = run_query(con, "equalizer_vs_static", {
                "gpu_id": gpu, "suite": suite_name, "kernels": "each" if per_kernel else None,
                "seed": None if seed is None else str(seed)})
            tables.append(Table(columns, rows))
    table = equalizer_over_seeds(tables)
    columns, rows = table.columns, table.rows
    if not rows:
        raise GpudbError(f"no Equalizer runs of suite {suite_name} on {gpu} in {obj.path}: "
                         f"run gpudb --db {obj.path} evaluate equalizer --gpu {gpu}")
    if fmt in HUMAN_FORMATS:
        echo(f"Equalizer and the static operating points against nominal, {gpu}, "
             f"suite {suite_name} (geometric means; 'all' over every kernel):")
        if _seeds_line(seeds):
            echo(_seeds_line(seeds))
    output_rows(columns, rows, fmt)
    if fmt in HUMAN_FORMATS and "speedup_verdict" in columns:
        from gpudb.present.demo import verdict_rule

        echo(verdict_rule(len(seeds)) + "; energy: our chip energy against the paper's")


@evaluate.command()
@evaluation_options
@sweep_option
@output_options
@click.pass_obj
@friendly_errors
def classes(obj: Context, gpu, suite, do_sweep, fmt):
    """The suite's kernels by the quantities papers 000 and 004 describe their benchmarks by,
    at the highest core P-state: computation share (paper 000's compute-bound class is >= 75%),
    load-outstanding, CRIT, LEAD, stall and store-stall shares, per category and class and
    per kernel, with what the papers report beside them. Needs per-interval counters
    (simulated runs).

    Example:

        gpudb --db sim.duckdb evaluate classes --gpu gtx480 --suite default
    """
    db.doing("computing evaluate classes")
    from gpudb.analysis.evaluate import PAPER_CLASSES, class_tables, length_line

    scope = scope_with_sweep(obj, gpu, suite, do_sweep)
    with obj.connection(read_only=True) as con:
        summary, kernels = class_tables(con, scope.gpu, scope.suite)
        length = length_line(con, scope.gpu, scope.suite)
    if not kernels.rows:
        raise GpudbError(f"no per-interval counters for {scope.gpu} ({suite_label(scope)}): "
                         "workload classes need simulated runs")
    if fmt in HUMAN_FORMATS:
        echo(f"shares of the time at the highest core P-state by category and paper 000 "
             f"class ('all' summarises), {scope.gpu}, {suite_label(scope)}:")
    output_rows(summary.columns, summary.rows, fmt, "summary")
    if fmt in HUMAN_FORMATS:
        echo("\nper kernel:")
    output_rows(kernels.columns, kernels.rows, fmt, "by_kernel")
    if fmt in HUMAN_FORMATS:
        echo(f"\n{length}\n" + "\n".join(PAPER_CLASSES))


@evaluate.command("control")
@evaluation_options
@click.option("--objective", "objectives", type=OBJECTIVE_CHOICE, multiple=True,
              help="Objective (repeatable; default: all four).")
@click.option("--max-loss-pct", type=click.FloatRange(0), default=1.0, show_default=True,
              help="energy_perf's bound on the slowdown, %.")
@seeds_option
@click.option("--scope", "energy_scope", type=click.Choice(["chip", "run", "both"]),
              default="both", show_default=True,
              help="Energy scope: chip (no board power, the papers'), run (board power "
                   "included), or both; the controllers minimise it and savings count it.")
@sweep_option
@output_options
@click.pass_obj
@friendly_errors
def evaluate_control(obj: Context, gpu, suite, objectives, max_loss_pct, seeds, energy_scope,
                     do_sweep, fmt):
    """Energy savings of predictor-driven DVFS controllers (trace replay) and of the offline
    bounds, against always running at the highest core P-state (paper 000 figures 11-12,
    paper 004 section 4.3), in the chip's energy (papers 000 and 004's scope, with paper
    000's EDP savings beside ours) and the run's (board power included). The bounds: the
    dynamic optimal stitched from the fixed runs (paper 004's), the same schedule run in the
    simulator's closed loop (dynamic_optimal_run, simulated where the database lacks it),
    static optimal and perfect memoryless; each controller's fraction of each (and of the
    better of the run bound and static optimal: fraction_of_achievable). A GPU with
    whole runs only (measured) gets the static optimal over its settings.

    Example:

    \b
        gpudb --db sim.duckdb evaluate control --objective edp
        gpudb --db sim.duckdb evaluate control --objective energy --scope chip
        gpudb --db lab.duckdb evaluate control --gpu v100 --objective energy_perf
        gpudb --db sim.duckdb evaluate control --objective edp --seeds 0,1,2
    """
    db.doing("computing evaluate control")
    print_control(obj, scope_with_sweep(obj, gpu, suite, do_sweep, seeds),
                  list(objectives) or ["edp", "ed2p", "energy", "energy_perf"], max_loss_pct,
                  fmt, seeds, ("chip", "run") if energy_scope == "both" else (energy_scope,))


@evaluate.command("simulator")
@click.option("--gpu", "gpu_id", required=True, callback=gpu_name,
              help="Measured GPU (a gpu_id in the database with profiler metrics).")
@click.option("--model", default=None,
              help="Simulator configuration that models it (default: <gpu>-sim).")
@click.option("--suite", "suite_file", type=click.Path(dir_okay=False), default=None,
              help="Clone suite file (default: <database>.clone-<gpu>.toml beside the "
                   "database, made by cloning first if missing).")
@click.option("--reclone", is_flag=True, help="Clone again even if the suite file exists.")
@click.option("--kernel", "kernels", multiple=True,
              help="Clone only this measured kernel_id (repeatable; default every kernel).")
@click.option("--base-mhz", type=float, help="Base core MHz (default: the GPU's nominal).")
@click.option("--base-mem-mhz", type=float, help="Base memory MHz (default: the GPU's "
              "nominal).")
@click.option("--per-kernel/--summary-only", default=True, show_default=True,
              help="Also print one row per kernel (query sim_scaling_error).")
@click.option("--fit", "do_fit", is_flag=True,
              help="Also fit the configuration's calibrated values (sustained DRAM bandwidth, "
                   "power) on its training kernels and print them as TOML lines, with each "
                   "kernel's power error with parameters fitted on the others (needs scipy).")
@click.option("--jobs", type=click.IntRange(1), default=None,
              help="Processes simulating (default: one per core).")
@click.option("--seeds", multiple=True, callback=seed_list, metavar="LIST",
              help="Seeds of the clones' runs, e.g. 0,1,2: each setting simulated once per "
                   "seed and the times and powers averaged (default: 0).")
@output_options
@click.pass_obj
@friendly_errors
def evaluate_simulator(obj: Context, gpu_id, model, suite_file, reclone, base_mhz,
                       base_mem_mhz, kernels, per_kernel, do_fit, jobs, seeds, fmt):
    """The simulator against a real GPU: clone its measured kernels from their profiles
    (gpudb clone), simulate the clones at every setting the GPU was measured at, and compare
    how time and power scale with the core and the memory clock, beside time proportional to
    the core clock and Wang & Chu fitted on other kernels: per split and class (query
    sim_scaling_summary), then per kernel (sim_scaling_error). `gpudb plot sim_scaling` draws
    the curves.

    Example:

    \b
        gpudb --db lab.duckdb ingest gtx1080ti-train.csv --mapping fixtures/mappings/gtx1080ti.toml
        gpudb --db lab.duckdb evaluate simulator --gpu gtx1080ti
    """
    from pathlib import Path

    from gpudb.store.queries import run_query
    from gpudb.workflows.simulator import check_simulator, target

    t = target(obj.path, gpu_id, model, base_mhz, base_mem_mhz, read_only=obj.read_only)
    suite = Path(suite_file) if suite_file else Path(obj.path).with_name(
        f"{Path(obj.path).name}.clone-{gpu_id}.toml")
    if suite.exists() and not reclone and fmt in HUMAN_FORMATS:
        echo(f"clones from {suite} (--reclone to build them again)", err=True)
    echo_compiling()
    with run_progress("calibrating clones") as cloning, \
            run_progress("simulating", rate=True) as simulating:
        checked = check_simulator(obj.path, t, suite, read_only=obj.read_only,
                                  reclone=reclone, kernels=list(kernels) or None,
                                  seeds=seeds, jobs=jobs,
                                  clone_progress=cloning, sweep_progress=simulating,
                                  command=f"gpudb --db {obj.path} evaluate simulator "
                                          f"--gpu {gpu_id}")
    if fmt in HUMAN_FORMATS:
        if checked.cloned:
            echo(f"wrote the clones to {checked.suite_path}")
        echo(f"{checked.sweep['runs_added']} runs simulated, {checked.sweep['runs_skipped']} "
             f"already stored; {checked.wangchu}; {checked.seconds:.0f} s")
    params = {"gpu_id": gpu_id, "sim_gpu_id": t.model_name}
    db.doing("computing evaluate simulator")
    with obj.connection(read_only=True) as con:
        for name in ("sim_scaling_summary",) + (("sim_scaling_error",) if per_kernel else ()):
            columns, rows = run_query(con, name, params)
            output_rows(columns, rows, fmt, name=name)
    if do_fit:
        from gpudb.workflows.simulator import fit_config

        lines, loao, result = fit_config(obj.path, t)
        if fmt in HUMAN_FORMATS:
            echo(f"fitted on {len(result['kernels'])} training kernels (normalised power MAPE "
                 f"there, measured time: {result['train_mape_pct']:.2f}%):")
            for line in lines:
                echo(f"  {line}")
        output_rows(["kernel_id", "power_mape_pct_fitted_on_others"], loao, fmt,
                    name="power_leave_one_out")
