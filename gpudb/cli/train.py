"""``gpudb train`` (wu, wangchu) and ``gpudb calibrate``: fitting models to stored runs.
"""

from __future__ import annotations

import click

from gpudb.cli.common import (
    Context,
    Finite,
    Setting,
    friendly_errors,
    gpu_name,
    name_list,
    output_options,
    print_tables,
    workflow_progress,
    writes,
)
from gpudb.cli.main import cli
from gpudb.present.output import HUMAN_FORMATS


@cli.group()
def train():
    """Train a machine-learning predictor on the database's runs and store it there.

    Example:

    \b
        gpudb --db lab.duckdb train wu --gpu v100 --seed 0
        gpudb --db lab.duckdb train wangchu --gpu gtx1080ti --base 1800,5000
    """


@train.command()
@click.option("--gpu", "gpu_id", required=True, callback=gpu_name,
              help="GPU whose fixed runs train the model (a gpu_id in the database).")
@click.option("--base", default=None, type=Setting(sms=True, words=("all",)),
              help="Base setting the model predicts from, or 'all' for one model per setting "
                   "(default: the highest setting).")
@click.option("--train-fraction", default=0.8, show_default=True,
              type=Finite(0, 1, min_open=True), help="Share of kernels trained on.")
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed of the kernel split, k-means and the networks.")
@click.option("--clusters", default=12, show_default=True, type=click.IntRange(1),
              help="k-means clusters per cluster set.")
@click.option("--features", default=None, metavar="NAME,...",
              help="Classifier inputs, names in view wu_feature (default: the DCGM activities "
                   "of measured runs, as dcgm_* metrics or under DCGM's names DRAMA, SMACT, "
                   "...; table II analogues of simulated ones).")
@click.option("--no-power", is_flag=True, help="Model time only.")
@click.option("--suite", default=None,
              help="Train on kernels of this suite only (default: all); the others stay out "
                   "of both splits and are predicted as unseen kernels.")
@click.option("--kernel", "kernels", multiple=True,
              help="Train on this kernel_id only (repeatable; default: every kernel).")
@output_options
@click.pass_obj
@friendly_errors
@writes
def wu(obj: Context, gpu_id, base, train_fraction, seed, clusters, features, no_power, suite,
       kernels, fmt):
    """Wu et al.'s model (paper 002): k-means scaling surfaces and neural-network classifiers.

    Splits the GPU's kernels at random (stored), trains, stores the model for the pred_wu
    view, and prints its id (a line `model_id ID`) and the validation error per kernel (the
    id and summary go to stderr unless --format table). With --base all, one model per
    setting and a row per model (see the stored query wu_error_by_base for the heat map).
    Needs scikit-learn (gpudb-dvfs[ml]). --suite and --kernel keep the other kernels (apps
    held out for later) out of training and validation alike.

    Models stay stored side by side (table wu_model; the id is a hash of the settings and
    runs, so retraining the same thing replaces it). View prediction and the stored queries
    use each GPU's latest; pick another in a query with `-p model_id ID`
    (wu_error_by_base: the latest per base setting; `-p model_id all` lists every model).
    View pred_wu holds every model's predictions, with a model_id column.

    Example:

        gpudb --db lab.duckdb train wu --gpu v100 --train-fraction 0.8 --seed 0

        gpudb --db lab.duckdb train wu --gpu rtx8000 --suite rodinia

        gpudb --db lab.duckdb query mape_by_kernel -p model_id 8d0f952dfd8712c0
    """
    from gpudb.workflows.train import wu as train_wu

    print_tables(train_wu(obj.path, gpu=gpu_id, base=base, train_fraction=train_fraction,
                          seed=seed, clusters=clusters, features=name_list(features),
                          power=not no_power, suite=suite, kernels=list(kernels) or None),
                 fmt, named=False, notes="always")


@train.command()
@click.option("--gpu", "gpu_id", required=True, callback=gpu_name,
              help="GPU whose fixed runs the parameters are fitted to (a gpu_id in the "
                   "database).")
@click.option("--base", required=True, type=Setting(),
              help="Base setting whose counters the model predicts from (paper 003: 700,700).")
@click.option("--suite", default=None, help="Only kernels of this suite (default: all).")
@click.option("--kernel", "kernels", multiple=True,
              help="Train on this kernel_id only (repeatable; default: every kernel).")
@output_options
@click.pass_obj
@friendly_errors
@writes
def wangchu(obj: Context, gpu_id, base, suite, kernels, fmt):
    """Wang & Chu's model (paper 003) with its seven parameters fitted by least squares to the
    kernels' measured times at every (core, memory) setting, instead of microbenchmarks
    (`gpudb calibrate`). Stores them as the GPU's least_squares calibration, which view
    pred_wangchu_fit predicts with; prints them, the fit's RMS error and which parameters the
    kernels leave unconstrained. `gpudb evaluate accuracy` cross-validates the fit by kernel.
    Needs scipy (gpudb-dvfs[ml]).

    Example:

        gpudb --db lab.duckdb train wangchu --gpu gtx1080ti --base 1800,5000
    """
    from gpudb.workflows.train import wangchu as train_wangchu

    print_tables(train_wangchu(obj.path, gpu=gpu_id, base=base, suite=suite,
                               kernels=list(kernels) or None), fmt, named=False, notes="always")


@cli.command()
@click.option("--gpu", required=True, callback=gpu_name,
              help="GPU to calibrate: a shipped simulator configuration (gtx480, gtx980, "
                   "hd7970), or with --from-file a gpu_id in the database.")
@click.option("--from-file", "from_file", type=click.Path(dir_okay=False, exists=True),
              help="TOML file of measured parameters, `name = { value = V, unit = \"U\" }` "
                   "(method 'file'); nothing is simulated.")
@click.option("--baseline", type=Setting(),
              help="Ratio-one baseline of dm_del, l2_del and inter_arr (default: the P-state "
                   "pair with core/memory closest to one, higher clocks first).")
@click.option("--seed", default=0, show_default=True, type=int, help="Random seed of the runs.")
@click.option("--jobs", default=1, show_default=True, type=click.IntRange(1),
              help="Simulator processes (one writer).")
@output_options
@click.pass_obj
@friendly_errors
@writes
def calibrate(obj: Context, gpu, from_file, baseline, seed, jobs, fmt):
    """Calibrate Wang & Chu's model (paper 003): the eight parameters of its Table IV.

    A simulated GPU runs the `micro` suite's microbenchmarks (section IV: DRAM pointer chase
    at every core x a few memory P-states for eq. 4, streaming for dm_del by eq. 3, L2 and
    shared-memory chains, L2 streaming, DRAM bursts for eq. 2's interArr, ALU-only for
    inst_cycle) through the ordinary sweep (stored runs are reused), fits each parameter and
    stores it in table calibration (method 'microbenchmark') with its fit residual and runs;
    the table printed puts paper 003's GTX 980 values beside. A measured GPU takes its
    parameters from a file (method 'file'). Calibrating the same thing again gives the same
    calibration_id and replaces its rows. View wangchu_calibration has the latest per GPU.

    Example:

        gpudb --db lab.duckdb calibrate --gpu gtx980

        gpudb --db lab.duckdb calibrate --gpu v100 --from-file v100-cal.toml
    """
    from gpudb.workflows.train import calibrate as calibrate_gpu

    with workflow_progress(obj, fmt) as progress:
        tables = calibrate_gpu(obj.path, gpu=gpu, from_file=from_file, baseline=baseline,
                               seed=seed, jobs=jobs, progress=progress)
    if fmt not in HUMAN_FORMATS:
        tables.pop("eq4", None)   # a second bare table would not parse
    print_tables(tables, fmt, named=False, notes="always")


@cli.command("clone")
@click.option("--gpu", "gpu_id", required=True, callback=gpu_name,
              help="Measured GPU whose kernels to clone (a gpu_id in the database; its runs "
                   "need profiler metrics, as the gtx1080ti mapping stores them).")
@click.option("--model", default=None,
              help="Simulator configuration that models it (default: <gpu>-sim, e.g. "
                   "gtx1080ti-sim).")
@click.option("--base-mhz", type=float, help="Base core MHz the profiles are taken at "
              "(default: the GPU's nominal).")
@click.option("--base-mem-mhz", type=float, help="Base memory MHz (default: the GPU's "
              "nominal).")
@click.option("--kernel", "kernels", multiple=True, help="Only this measured kernel_id "
              "(repeatable).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Suite file to write (default: clone-<gpu>.toml here).")
@click.option("--jobs", type=click.IntRange(1), default=None,
              help="Processes calibrating (default: one per core).")
@output_options
@click.pass_obj
@friendly_errors
def clone_command(obj: Context, gpu_id, model, base_mhz, base_mem_mhz, kernels, output, jobs,
                  fmt):
    """Write a suite of synthetic clones of a measured GPU's kernels, each built from its
    profiler metrics at the base setting, every field annotated with the metric and formula
    it came from; two knobs are calibrated there by simulation (docs/simulator.md,
    "Validation against real GPUs"). Prints each clone's measured and simulated IPC at the
    base and its knobs. `gpudb evaluate simulator` sweeps the clones and compares.

    Example:

    \b
        gpudb --db lab.duckdb clone --gpu gtx1080ti -o clones.toml
        gpudb --db lab.duckdb sweep --gpu gtx1080ti-sim --suite clones.toml
    """
    from gpudb.workflows.train import clone

    with workflow_progress(obj, fmt) as progress:
        tables = clone(obj.path, gpu=gpu_id, model=model, base_mhz=base_mhz,
                       base_mem_mhz=base_mem_mhz, kernels=list(kernels) or None,
                       output=output, jobs=jobs, progress=progress)
    print_tables(tables, fmt, named=False)
