"""``gpudb sweep``: simulate a suite over a grid of settings, with progress and Ctrl-C
keeping what finished.
"""

from __future__ import annotations

import os

import click

from gpudb.cli.common import (
    Context,
    echo_compiling,
    echo_swept,
    engine_option,
    friendly_errors,
    number_list,
    refuse_unasked_simulation,
    run_progress,
    seed_list,
    simulator_gpu_options,
    writes,
)
from gpudb.cli.main import cli


@cli.command()
@simulator_gpu_options
@click.option("--suite", default="default", show_default=True,
              help="Kernel suite: a name in fixtures/suites or a TOML path.")
@click.option("--kernel", "kernels", multiple=True, help="Only this kernel (repeatable).")
@click.option("--core-mhz", multiple=True, callback=number_list(float),
              help="Core MHz list, e.g. 700,400 (default: every core P-state).")
@click.option("--mem-mhz", multiple=True, callback=number_list(float),
              help="Memory MHz list (default: every memory P-state).")
@click.option("--sms", multiple=True, callback=number_list(int),
              help="SM counts (default: all SMs).")
@click.option("--ctas", multiple=True, callback=number_list(int),
              help="CTA limits per SM (default: the hardware limit).")
@click.option("--interval-instructions", type=click.IntRange(1),
              help="Warp instructions per interval, GPU-wide (default 100000).")
@click.option("--seed", "seeds", multiple=True, callback=seed_list, metavar="LIST",
              help="Random seeds, e.g. 0,1,2: the grid is simulated once per seed "
                   "(default 0).")
@click.option("--jobs", default=os.cpu_count() or 1, show_default="this machine's CPUs",
              type=click.IntRange(1),
              help="Simulator processes (one writer); with --scheduler local, Dask workers.")
@click.option("--scheduler", metavar="ADDRESS|local",
              help="Simulate on a Dask cluster: a dask.distributed scheduler's address "
                   "(tcp://host:8786), or 'local' for a LocalCluster of --jobs workers on this "
                   "machine (needs gpudb-dvfs[dask]).")
@click.option("--experiment", help="Experiment name (default: sim-<gpu>-<suite>).")
@engine_option()
@click.pass_obj
@friendly_errors
@writes
def sweep(obj: Context, gpu, suite, kernels, core_mhz, mem_mhz, sms, ctas,
          interval_instructions, seeds, jobs, scheduler, experiment, engine):
    """Simulate a kernel suite at every setting of a grid into the database.

    Runs already in the database (same inputs, same simulator version) are skipped, so an
    interrupted sweep resumes where it stopped; Ctrl-C keeps the runs that finished. With
    --scheduler, Dask workers simulate chunks of runs and this process stores them as they
    arrive; a killed worker's chunk is retried elsewhere.

    Example:

    \b
        gpudb sweep --gpu gtx480 --suite default --mem-mhz 924 --jobs 2
        gpudb sweep --gpu gtx480 --mem-mhz 924 --seed 0,1,2
        gpudb sweep --gpu gtx980 --scheduler tcp://10.0.0.5:8786
        gpudb --db sampled.duckdb sweep --gpu gtx480 --suite long --engine sampled
    """
    refuse_unasked_simulation(obj)
    echo_compiling()
    with run_progress("simulating", rate=True) as progress, obj.database() as database:
        summary = database.sweep(gpu, suite, kernels=list(kernels) or None, core_mhz=core_mhz,
                                 mem_mhz=mem_mhz, sms=sms, ctas=ctas,
                                 interval_instructions=interval_instructions,
                                 seeds=seeds or [0], jobs=jobs, scheduler=scheduler,
                                 experiment=experiment, progress=progress, engine=engine)
    echo_swept(obj, summary)
