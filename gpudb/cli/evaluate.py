"""``gpudb evaluate``: accuracy, equalizer, classes and control tables, and what they need
(sweeping when data is missing).
"""

from __future__ import annotations

import click

from gpudb.cli.common import (
    OBJECTIVE_CHOICE,
    Context,
    Finite,
    engine_option,
    evaluation_options,
    friendly_errors,
    gpu_name,
    output_options,
    print_tables,
    refuse_unasked_simulation,
    seed_list,
    seeds_option,
    workflow_progress,
)
from gpudb.cli.main import cli


@cli.group()
def evaluate():
    """The papers' evaluations on the database's runs, as tables.

    Example:

        gpudb evaluate accuracy --gpu gtx480 --suite default
    """


def sweep_option(command):
    return click.option("--sweep/--no-sweep", "do_sweep", default=True, show_default=True,
                        help="Simulate the suite first if the database has no runs of it "
                             "(simulated GPUs).")(command)


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
    from gpudb.workflows.evaluate import accuracy as evaluate_accuracy

    refuse_unasked_simulation(obj, evaluates=True)
    with workflow_progress(obj, fmt) as progress:
        tables = evaluate_accuracy(
            obj.path, read_only=obj.read_only, gpu=gpu, suite=suite, base_mhz=base_mhz,
            base_mem_mhz=base_mem_mhz, granularity=granularity, folds=folds, seeds=seeds,
            sweep=do_sweep, progress=progress)
    print_tables(tables, fmt)


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
    Equalizer in energy and performance mode (and with V/F or CTA control alone, and
    energy mode's 'inclined' variant: no throttling without an excess warp), and at
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
    from gpudb.workflows.evaluate import equalizer as evaluate_equalizer

    refuse_unasked_simulation(obj)
    with workflow_progress(obj, fmt) as progress:
        tables = evaluate_equalizer(
            obj.path, read_only=obj.read_only, gpu=gpu, suite=suite, kernels=list(kernels),
            per_kernel=per_kernel, run=do_run, seeds=seeds, progress=progress)
    print_tables(tables, fmt, named=False)


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
    from gpudb.workflows.evaluate import classes as evaluate_classes

    refuse_unasked_simulation(obj, evaluates=True)
    with workflow_progress(obj, fmt) as progress:
        tables = evaluate_classes(obj.path, read_only=obj.read_only, gpu=gpu, suite=suite,
                                  sweep=do_sweep, progress=progress)
    print_tables(tables, fmt)


@evaluate.command("control")
@evaluation_options
@click.option("--objective", "objectives", type=OBJECTIVE_CHOICE, multiple=True,
              help="Objective (repeatable; default: all four).")
@click.option("--max-loss-pct", type=Finite(0), default=1.0, show_default=True,
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
    from gpudb.workflows.evaluate import control

    refuse_unasked_simulation(obj, evaluates=True)
    with workflow_progress(obj, fmt) as progress:
        tables = control(obj.path, read_only=obj.read_only, gpu=gpu, suite=suite,
                         objectives=list(objectives) or None, max_loss_pct=max_loss_pct,
                         seeds=seeds, energy_scope=energy_scope, sweep=do_sweep,
                         progress=progress)
    print_tables(tables, fmt)


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
@engine_option(" of the clones' runs", "; faster only where a clone's loop repeats")
@output_options
@click.pass_obj
@friendly_errors
def evaluate_simulator(obj: Context, gpu_id, model, suite_file, reclone, base_mhz,
                       base_mem_mhz, kernels, per_kernel, do_fit, jobs, seeds, engine, fmt):
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
        gpudb --db fast.duckdb evaluate simulator --gpu gtx1080ti --engine sampled
    """
    from gpudb.workflows.evaluate import simulator

    with workflow_progress(obj, fmt) as progress:
        tables = simulator(obj.path, read_only=obj.read_only, gpu=gpu_id, model=model,
                           suite=suite_file, reclone=reclone, kernels=list(kernels),
                           base_mhz=base_mhz, base_mem_mhz=base_mem_mhz,
                           per_kernel=per_kernel, fit=do_fit, jobs=jobs, seeds=seeds,
                           engine=engine, progress=progress)
    print_tables(tables, fmt)
