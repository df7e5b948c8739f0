"""``gpudb bench``: benchmarks of gpudb itself (ingest, predict, scale, sim).
"""

from __future__ import annotations

from pathlib import Path

import click

from gpudb.cli.common import (
    Context,
    echo,
    friendly_errors,
    number_list,
    seed_list,
    simulator_gpu_options,
)
from gpudb.cli.main import cli


@cli.group()
def bench():
    """Benchmarks that print a figure next to a reference measured in the same run.

    Example:

        gpudb bench ingest --rows 1000000
    """


@bench.command("ingest")
@click.option("--rows", default=1_000_000, show_default=True, type=click.IntRange(1),
              help="Synthetic run rows.")
@click.option("--metrics", default=4, show_default=True, type=click.IntRange(0),
              help="Metric columns per row.")
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(1),
              help="Alternating runs of each; medians are compared.")
@friendly_errors
def bench_ingest(rows, metrics, repeat):
    """Ingest speed (rows/s) against DuckDB's own INSERT ... SELECT from Arrow, as a ratio.

    Uses a temporary file and synthetic rows; nothing touches --db.

    Example:

        gpudb bench ingest --rows 200000
    """
    from gpudb.bench.bench import bench_ingest as run_bench

    for line in run_bench(rows, metrics, repeat=repeat).lines():
        echo(line)


@bench.command()
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(1),
              help="Timed runs of each query; the best is reported.")
@click.pass_obj
@friendly_errors
def predict(obj: Context, repeat):
    """Speed of the UDF-backed prediction view against the same view with its formulas in
    plain SQL, as a ratio, at the database's thread setting and at threads=1.

    Uses the runs in --db (read only); the formula-only comparison repeats its samples to a
    million predictions.

    Example:

        gpudb --db lab.duckdb bench predict
    """
    from gpudb.bench.bench import bench_predict as run_bench

    with obj.connection(read_only=True) as con:
        result = run_bench(con, repeat=repeat)
    for line in result.lines():
        echo(line)


@bench.command()
@click.option("--factor", "factors", default="1,10,100", show_default=True,
              callback=lambda ctx, param, value: number_list(int)(ctx, param, (value,)),
              help="Replication factors of the database's runs, e.g. 1,10,100.")
@click.option("--gpu", "gpu_id", help="GPU whose runs the queries read (default: the one "
                                      "with most fixed runs).")
@click.pass_obj
@friendly_errors
def scale(obj: Context, factors, gpu_id):
    """Cost of the main queries as the database grows: its runs replicated FACTOR times as new
    kernels (new run ids) into a temporary file, then the prediction view, the accuracy query
    of evaluate accuracy (and its core x memory tables, on a GPU measured at several memory
    clocks), crisp_gpudb's trace replay and best_setting timed at each size, with time per run,
    its ratio to the smallest factor, and peak memory (each factor in a fresh process). --db is
    only read.

    Example:

        gpudb --db gpudb.duckdb bench scale --factor 1,10,100
    """
    from gpudb.bench.bench_scale import bench_scale

    if not Path(obj.path).exists():
        raise click.UsageError(f"{obj.path} does not exist: run gpudb demo first")
    if not factors or any(f < 1 for f in factors):
        raise click.BadParameter("give factors >= 1, e.g. 1,10,100", param_hint="--factor")
    for line in bench_scale(Path(obj.path), factors, gpu_id).lines():
        echo(line)


@bench.command()
@simulator_gpu_options
@click.option("--suite", default="default", show_default=True, help="Kernel suite.")
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=1),
              help="Runs of each kernel; the best is reported, with the range.")
@friendly_errors
def sim(gpu, suite, repeat):
    """Simulated warp instructions per second (one process) for a compute-, a memory- and a
    store-bound kernel, the best of --repeat runs each, by the reference engine and by the
    sampled engine; for each, the SM-cycles the model processed per instruction and the time
    per processed SM-cycle; the memory-bound speed over the compute-bound one; the sampled
    engine's speed over the reference's, kernel by kernel; and the jitted model against its
    pure-Python execution.

    Example:

        gpudb bench sim --gpu gtx480 --repeat 5
    """
    from sim.bench import bench_sim as run_bench

    for row in run_bench(gpu, suite, repeat):
        value = row["value"]
        shown = (f"{value / 1e6:,.2f} M" if value >= 1e5
                 else f"{value:,.3f}" if value < 10 else f"{value:,.1f}")
        echo(f"{row['metric']}: {shown} {row['unit']}")


@bench.command()
@click.option("--suite", default="default", show_default=True, help="Kernel suite.")
@click.option("--kernel", "kernels", multiple=True, help="Only this kernel (repeatable).")
@click.option("--seed", "seeds", multiple=True, callback=seed_list, metavar="LIST",
              help="Seeds, e.g. 0,1,2: each engine's mean over them is compared, and the "
                   "reference's spread over them widens the time tolerance where larger "
                   "(default 0).")
@click.option("--jobs", default=1, show_default=True, type=click.IntRange(1),
              help="Worker processes (per-run seconds are comparable between runs timed "
                   "alike only).")
@click.option("--all-kernels/--misses", "show_all", default=True, show_default=True,
              help="List every kernel, or only those outside a tolerance.")
@friendly_errors
def engine(suite, kernels, seeds, jobs, show_all):
    """The sampled engine against the reference engine: every kernel of the suite at gtx480
    700 and 300 MHz and gtx980 1000 and 500 MHz (memory clocks nominal), each run's time and
    energy difference and its interval shares' largest difference (computation, load
    outstanding, CRIT path, load stall, store stall: each one's mean over the run), and per
    setting the kernels within tolerance (time 3%, or the reference's spread over the seeds
    where larger; energy 2%, and beside it 2% or the reference's energy spread over the
    seeds where larger; shares 0.03), the median difference and the reference's simulation
    time over the sampled engine's; beside them, seed by seed, the run that differs most from
    the reference's run of its seed (the tolerances are on the means over the seeds; a
    controller sees single runs). Nothing touches --db.

    Example:

    \b
        gpudb bench engine
        gpudb bench engine --kernel mem_stream --kernel store_burst --seed 0,1,2 --jobs 2
    """
    from gpudb.bench.engine import engine_lines
    from gpudb.cli.common import run_progress

    with run_progress("simulating") as progress:
        lines = engine_lines(suite, list(kernels) or None, seeds or [0], jobs, show_all,
                             progress)
    for line in lines:
        echo(line)
