"""Commands that show what is stored: query (stored queries), plot, report.
"""

from __future__ import annotations

import textwrap

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
from gpudb.present.output import FORMATS, HUMAN_FORMATS, TERMINAL_ROWS, format_rows, shown_rows
from gpudb.store.db import GpudbError


def _column_list(ctx, param, value):
    """--columns 'a,b,c' as a list of names (None when not given)."""
    if value is None:
        return None
    names = [part.strip() for part in value.split(",") if part.strip()]
    if not names:
        raise click.BadParameter("give column names separated by commas, e.g. "
                                 "kernel_id,energy_saving_pct")
    return names


@cli.command()
@click.argument("name", required=False)
@click.option("--list", "list_queries", is_flag=True, help="List the stored queries.")
@param_option
@click.option("--columns", callback=_column_list, metavar="A,B,...",
              help="Print only these columns, in this order (any format).")
@click.option("--limit", type=click.IntRange(1), metavar="N",
              help="Print at most N rows (any format). Default: every row, but a table on a "
                   f"terminal shows the first {TERMINAL_ROWS}.")
@click.option("--all", "all_rows", is_flag=True,
              help="Every row and column on a terminal too (as gpudb --wide does for cells).")
@output_options
@click.pass_obj
@friendly_errors
def query(obj: Context, name, list_queries, params, columns, limit, all_rows, fmt):
    """Run a stored query from queries/ by name, or list them.

    A table on a terminal leaves out what would not fit, saying so below it: rows past the
    first 40 (--limit, --all), columns wider than the terminal (the columns naming a row
    are kept, those with one value in every row said once; --columns, --all) and, in any
    table, columns empty in every row.
    CSV and JSON, and tables printed to a pipe or a file, keep every row and column.

    Example:

    \b
        gpudb query best_setting -p gpu_id v100 --format csv
        gpudb query best_setting --columns kernel_id,energy_core_mhz,energy_saving_pct
    """
    from gpudb.api import queries
    from gpudb.store.queries import get_query

    if list_queries or not name:
        listing = queries()
        output_rows(listing.columns, listing.rows, fmt)
        return
    stored = get_query(name)   # an unknown name before the file is opened
    with obj.database(read_only=True) as database:
        table = database.query(name, params=dict(params))
        no_runs = _no_runs(database, obj.path, params) if not table.rows else None
    if no_runs:
        # an empty file answers every query with nothing: say so, and how to fill it, rather
        # than print a header over no rows as if the query had looked and found none
        echo(no_runs, err=True)
        if fmt in HUMAN_FORMATS:
            return
    try:
        shown = shown_rows(table.columns, table.rows, fmt, columns, limit, all_rows,
                           stored.first)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--columns'") from None
    echo(format_rows(shown.columns, shown.rows, fmt, total=shown.total), nl=False)
    for note in shown.notes:
        # a note as wide as the terminal at most, as the table is
        echo(textwrap.fill(note, width=shown.width) if shown.width else note)


def _no_runs(database, path: str, params) -> str | None:
    """One line when the database (or the GPU of -p gpu_id) holds no runs: what to run to
    get some."""
    gpu = dict(params).get("gpu_id")
    runs = database.gpus().rows
    if any(g == gpu or gpu is None for g, *_ in runs):
        return None
    what = f"no runs of {gpu} in {path}" if gpu else f"no runs in {path} yet"
    return (f"{what}: gpudb demo simulates some, gpudb ingest FILE --mapping MAPPING.toml "
            "loads measured ones")


def _plot_size(ctx, param, value):
    """--size W,H: two numbers of inches."""
    if value is None:
        return None
    try:
        width, height = (float(v) for v in value.split(","))
    except ValueError:
        raise click.BadParameter(f"takes W,H in inches, e.g. 6.5,3.5 (got {value!r})") from None
    if not (0.5 <= width <= 100 and 0.5 <= height <= 100):
        raise click.BadParameter(f"width and height are 0.5 to 100 inches (got {value!r})")
    return width, height


PLOT_FORMATS = ("png", "pdf", "svg")


@cli.command()
@click.argument("name", required=False)
@click.option("--list", "list_plots", is_flag=True,
              help="List the plots with the paper figure each reproduces.")
@click.option("--gpu", help="The GPU to draw (-p gpu_id): required when the plot has rows of "
                            "several GPUs.")
@param_option
@click.option("--out", type=click.Path(dir_okay=False),
              help="Figure file; its suffix picks the format: .png, .svg or .pdf.")
@click.option("--title", help="The figure's title instead of the plot's own.")
@click.option("--size", callback=_plot_size, metavar="W,H",
              help="Figure size in inches, e.g. 7,3.5 (default: the plot's own, wider for "
                   "many kernels).")
@click.option("--dpi", default=100, show_default=True, type=click.IntRange(10, 1200),
              help="Resolution of a PNG.")
@click.option("--format", "fmt", type=click.Choice((*FORMATS, *PLOT_FORMATS)),
              help="The figure's format (png, pdf, svg; default: --out's suffix), or with "
                   "--list the list's (table, markdown, csv, json).")
@click.pass_obj
@friendly_errors
def plot(obj: Context, name, list_plots, gpu, params, out, title, size, dpi, fmt):
    """Draw a stored analysis as a figure (matplotlib: pip install 'gpudb-dvfs[plot]'), or list
    them.

    -p NAME VALUE sets a parameter of the plot's stored query (see gpudb query --list) or of
    the plot itself (e.g. metric). A figure shows one GPU: --gpu picks it where the plot has
    rows of several. The title names what is drawn; the command and the paper figure go into
    the file's metadata, notes (an axis cut, shortened names) into a caption under the axes.

    Example:

    \b
        gpudb plot error_by_target --gpu gtx480 --out error_by_target.png
        gpudb plot clock_trace -p kernel_id default/twoslope_lm -p predictor crisp --out t.svg
        gpudb plot mape_by_kernel --gpu v100 --size 7,3.5 --title "V100" --out fig.pdf
    """
    from gpudb import api
    from gpudb.present import plots

    if list_plots or not name:
        if fmt in PLOT_FORMATS:
            raise click.UsageError(f"--format {fmt} is a figure's format; the list is a table "
                                   f"({', '.join(FORMATS)})")
        listing = api.plots()
        output_rows(listing.columns, listing.rows, fmt or "table")
        return
    if fmt is not None and fmt not in PLOT_FORMATS:
        raise click.UsageError(f"--format {fmt}: a figure is {', '.join(PLOT_FORMATS)} (the "
                               f"rows it draws: gpudb query {plots.get(name).queries[0]} "
                               f"--format {fmt})")
    if not out:
        raise GpudbError("--out FILE is required (.png, .svg or .pdf)")
    params = dict(params)
    if gpu is not None:
        if params.get("gpu_id", gpu) != gpu:
            raise click.UsageError(f"--gpu {gpu} and -p gpu_id {params['gpu_id']}: give one")
        params["gpu_id"] = gpu
    plots.check_out(out, fmt)   # before the file is opened
    with obj.database(read_only=True) as database:
        path = database.save_plot(name, out, dpi=dpi, size=size, title=title, fmt=fmt,
                                  params=params)
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
    if folder and out_dir and folder != out_dir:
        raise click.UsageError("give the folder once: FOLDER or --out, not both")
    if not (folder or out_dir):
        raise click.UsageError("missing the folder for report.html: gpudb report FOLDER")
    with obj.database(read_only=True) as database:
        path = database.report(folder or out_dir)
    echo(f"wrote {path}")
