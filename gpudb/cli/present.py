"""Commands that show what is stored: query (stored queries), plot, report.
"""

from __future__ import annotations

import click

from gpudb.cli.common import (
    Context,
    echo,
    friendly_errors,
    output_options,
    output_rows,
    param_option,
)
from gpudb.cli.main import cli
from gpudb.store.db import GpudbError


@cli.command()
@click.argument("name", required=False)
@click.option("--list", "list_queries", is_flag=True, help="List the stored queries.")
@param_option
@output_options
@click.pass_obj
@friendly_errors
def query(obj: Context, name, list_queries, params, fmt):
    """Run a stored query from queries/ by name, or list them.

    Example:

        gpudb query best_setting -p gpu_id v100 --format csv
    """
    from gpudb.store.queries import resolve_names, run_query, stored_queries

    if list_queries or not name:
        rows = [(q.name, ", ".join(q.params), q.description)
                for q in stored_queries().values()]
        output_rows(["query", "parameters", "description"], rows, fmt)
        return
    with obj.connection(read_only=True) as con:
        columns, rows = run_query(con, name, resolve_names(con, dict(params)))
    output_rows(columns, rows, fmt)


@cli.command()
@click.argument("name", required=False)
@click.option("--list", "list_plots", is_flag=True,
              help="List the plots with the paper figure each reproduces.")
@param_option
@click.option("--out", type=click.Path(dir_okay=False),
              help="Figure file; its suffix picks the format: .png, .svg or .pdf.")
@click.option("--dpi", default=100, show_default=True, type=click.IntRange(10, 1200),
              help="Resolution of a PNG.")
@output_options
@click.pass_obj
@friendly_errors
def plot(obj: Context, name, list_plots, params, out, dpi, fmt):
    """Draw a stored analysis as a figure (matplotlib: pip install 'gpudb-dvfs[plot]'), or list
    them.

    -p NAME VALUE sets a parameter of the plot's stored query (see gpudb query --list) or of
    the plot itself (e.g. metric).

    Example:

    \b
        gpudb plot error_by_target --out error_by_target.png
        gpudb plot clock_trace -p kernel_id default/twoslope_lm -p predictor crisp --out t.svg
    """
    from gpudb.present import plots

    if list_plots or not name:
        rows = [(p.name, p.figure, ", ".join(p.queries), ", ".join(plots.parameters(p)),
                 p.description) for p in plots.registry().values()]
        output_rows(["plot", "paper figure", "queries", "parameters", "description"], rows, fmt)
        return
    if not out:
        raise GpudbError("--out FILE is required (.png, .svg or .pdf)")
    plots.check_out(out)
    with obj.connection(read_only=True) as con:
        path = plots.render(con, name, dict(params), out, dpi=dpi)
    echo(f"wrote {path}", err=True)


@cli.command()
@click.argument("folder", required=False, type=click.Path())
@click.option("--out", "out_dir", type=click.Path(),
              help="Folder for report.html (made if missing); the same as FOLDER.")
@click.pass_obj
@friendly_errors
def report(obj: Context, folder, out_dir):
    """One self-contained HTML page of the database for a teammate's browser, in FOLDER
    (made if missing): a section per GPU, measured GPUs first (a measured GPU's opens with
    its summary: runs, clock grid, the least-energy and least-EDP setting per kernel, each
    predictor's accuracy), each with the GPU's figures and main stored analyses as tables;
    the figures embedded (matplotlib: pip install 'gpudb-dvfs[plot]').

    Example:

    \b
        gpudb --db lab.duckdb report lab-report
        chromium lab-report/report.html
    """
    from gpudb.present.report import build

    if folder and out_dir and folder != out_dir:
        raise click.UsageError("give the folder once: FOLDER or --out, not both")
    if not (folder or out_dir):
        raise click.UsageError("missing the folder for report.html: gpudb report FOLDER")
    with obj.connection(read_only=True) as con:
        path = build(con, obj.path, folder or out_dir)
    echo(f"wrote {path}")
