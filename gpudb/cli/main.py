"""The root group ``gpudb`` (global options: --db, --read-only, --wide, --timeout-s) and
the entry point; the commands register on it from their group's module.
"""

from __future__ import annotations

import json
import os
import sys

import click
from click.core import ParameterSource

from gpudb.cli.common import (
    JSON_TABLES,
    DEFAULT_TIMEOUT_S,
    KEEP_ON_INTERRUPT,
    OWN_WORK,
    TIME_BOUNDED,
    Context,
    Finite,
    Group,
    build_aside,
    exit_on_interrupt,
    exit_on_stop,
    echo,
)
from gpudb.present import output
from gpudb.store import db, trust


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", "db_path", envvar="GPUDB_DB", default=db.DEFAULT_DB, show_default=True,
              type=click.Path(), help="Database file (env GPUDB_DB).")
@click.option("--read-only", is_flag=True, help="Open the database without writing.")
@click.option("--wide", is_flag=True, envvar="GPUDB_WIDE",
              help="Never cut table text to the terminal's width (env GPUDB_WIDE=1).")
@click.option("--timeout-s", type=Finite(min=0), envvar="GPUDB_TIMEOUT_S",
              default=DEFAULT_TIMEOUT_S, show_default=True,
              help="Stop info, query, sql, plot, report, export and merge after this many "
                   "seconds, naming what they were reading (0: no bound; env "
                   "GPUDB_TIMEOUT_S); evaluate, materialize and train only when it is given "
                   "(their simulation never counts).")
@click.version_option(package_name="gpudb-dvfs")
@click.pass_context
def cli(ctx, db_path, read_only, wide, timeout_s):
    """gpudb: an experiment database for GPU DVFS research.

    Keeps simulated and measured runs of GPU kernels at many core/memory frequency settings
    in one DuckDB file, with performance predictors as SQL functions and stored queries.

    Example:

        gpudb --db lab.duckdb init && gpudb --db lab.duckdb info
    """
    ctx.obj = Context(db_path, read_only)
    # a failed command creates no file; nor does an interrupted one that writes all or nothing
    all_or_nothing = ctx.invoked_subcommand not in KEEP_ON_INTERRUPT
    if all_or_nothing:
        # SIGTERM and SIGHUP unwind like Ctrl-C (the commands that keep work on an
        # interrupt install this around their own work); outside the next, which removes
        # the new file on the way out
        ctx.with_resource(exit_on_stop())
        # a new file is built aside and put in place on success: not even kill -9 leaves one
        ctx.with_resource(build_aside(db_path))
    else:
        ctx.with_resource(exit_on_interrupt())
    ctx.with_resource(trust.no_new_file_on_error(db_path, on_interrupt=all_or_nothing))
    if ctx.invoked_subcommand in TIME_BOUNDED and (
            ctx.invoked_subcommand not in OWN_WORK
            or ctx.get_parameter_source("timeout_s") is not ParameterSource.DEFAULT):
        ctx.with_resource(db.time_bound(timeout_s))
    # Ctrl-C stops a statement DuckDB is running, which Python's handler alone cannot
    ctx.with_resource(db.interrupt_on_signals())
    ctx.with_resource(output.full_width(wide))


@cli.result_callback()
@click.pass_context
def _print_json_tables(ctx, *_result, **_params):
    """A command's named tables in --format json, as one document, once it has succeeded."""
    tables = ctx.meta.get(JSON_TABLES)
    if tables is not None:
        echo(json.dumps(tables, indent=1))


def main() -> None:
    threads = os.environ.get("NUMBA_NUM_THREADS", "").strip()
    if threads.lstrip("+-").isdigit() and int(threads) <= 0:
        # numba raises at import, inside whichever command first loads the simulator: a
        # traceback (issue 41 item 7); the simulator runs no numba threads of its own
        echo(f"Error: NUMBA_NUM_THREADS={ascii(threads)} is not a number of threads >= 1, "
             "which numba needs to load: unset it or give one", err=True)
        sys.exit(1)
    try:
        os.getcwd()
    except FileNotFoundError:  # every relative path (the default --db) resolves against it
        echo("Error: the working directory no longer exists (deleted while this shell was in "
             "it): cd to a folder that exists", err=True)
        sys.exit(1)
    cli(prog_name="gpudb")
