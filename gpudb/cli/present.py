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
from gpudb.present.output import FORMATS
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
    from gpudb.present import plots

    if list_plots or not name:
        if fmt in PLOT_FORMATS:
            raise click.UsageError(f"--format {fmt} is a figure's format; the list is a table "
                                   f"({', '.join(FORMATS)})")
        rows = [(p.name, p.figure, ", ".join(p.queries), ", ".join(plots.parameters(p)),
                 p.description) for p in plots.registry().values()]
        output_rows(["plot", "paper figure", "queries", "parameters", "description"], rows,
                    fmt or "table")
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
    plots.check_out(out, fmt)
    with obj.connection(read_only=True) as con:
        path = plots.render(con, name, params, out, dpi=dpi, size=size, title=title, fmt=fmt)
    echo(f"wrote {path}", err=True)


@cli.command()
@click.option("--out", "out_dir", required=True, type=click.Path(),
              help="Folder for report.html (made if missing).")
@click.pass_obj
@friendly_errors
def report(obj: Context, out_dir):
    """One self-contained HTML page of the database for a teammate's browser: its info, the
    main stored analyses as tables and every plot that has data, the figures embedded
    (matplotlib: pip install 'gpudb-dvfs[plot]').

    Example:

    \b
        gpudb --db lab.duckdb report --out lab-report
        chromium lab-report/report.html
    """
    from gpudb.present.report import build

    with obj.connection(read_only=True) as con:
        path = build(con, obj.path, out_dir)
    echo(f"wrote {path}")
