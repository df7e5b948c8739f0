"""Commands on the database file itself: init, info, check, sql, export, merge, delete,
materialize.
"""

from __future__ import annotations

import os
import sys

import click

from gpudb.cli.common import Context, echo, friendly_errors, output_options, output_rows, writes
from gpudb.cli.main import cli
from gpudb.present.output import HUMAN_FORMATS, printable
from gpudb.store import db
from gpudb.store.db import GpudbError


@cli.command()
@click.pass_obj
@friendly_errors
@writes
def init(obj: Context):
    """Create the database file (or migrate an older one) and print its schema version.

    Example:

        gpudb --db lab.duckdb init
    """
    with obj.database() as database:
        versions = database.versions()
    echo(f"{obj.path}: gpudb database, schema version {versions['schema_version']}")


@cli.command()
@output_options
@click.pass_obj
@friendly_errors
def info(obj: Context, fmt):
    """Schema and gpudb versions, rows per table, and the experiments in the database.

    Example:

        gpudb --db lab.duckdb info --format json
    """
    with obj.database(read_only=True) as database:
        about = database.info()
    meta, lost = about.meta, about.orphans
    if fmt in HUMAN_FORMATS:
        echo(f"database:      {obj.path}")
        echo(f"schema:        version {meta['schema_version']} "
             f"(this gpudb: {meta['gpudb_schema_version']})")
        echo(f"written by:    gpudb {meta['written_by']} (this: {meta['gpudb_version']})")
        echo(f"materialized:  prediction_materialized {about.materialized}")
        echo("not gpudb's:   " + (", ".join(f"{kind} {printable(name)}"
                                            for kind, name in about.foreign)
                                  or "nothing (only gpudb's own tables and views)"))
        echo("orphans:       " + (_orphans_line(lost, obj.path) if lost
                                   else "none (every derived row refers to a stored run)"))
        echo("")
        output_rows(about.tables.columns, about.tables.rows, fmt)
        echo("")
        output_rows(about.experiments.columns, about.experiments.rows, fmt)
    else:
        output_rows(["key", "value"], _info_values(about), fmt)


def _info_values(about) -> list[tuple]:
    """``gpudb info`` as (key, value) rows, for CSV and JSON."""
    meta = about.meta
    rows = [("schema_version", meta["schema_version"]), ("written_by", meta["written_by"]),
            ("gpudb_version", meta["gpudb_version"]),
            ("prediction_materialized", about.materialized)]
    rows += [(f"rows.{t}", n) for t, n in about.tables.rows]
    rows += [(f"experiment.{e[0]}.runs", e[1]) for e in about.experiments.rows]
    rows += [(f"not_gpudb.{kind}", name) for kind, name in about.foreign]
    rows += [(f"orphans.{t}", n) for t, n in about.orphans.items()]
    return rows


def _orphans_line(lost: dict[str, int], path: str) -> str:
    """'rows referring to runs the database no longer holds: metric 12, ...; repair: ...'"""
    return ("rows referring to runs the database no longer holds: "
            + ", ".join(f"{t} {n}" for t, n in lost.items())
            + f"; repair: gpudb --db {path} delete --orphans")


@cli.command()
@click.pass_obj
@friendly_errors
def check(obj: Context):
    """Look for rows that refer to runs the database no longer holds (orphans): intervals,
    metrics, control results, predictions, Wu models and calibrations of deleted runs, and
    records of ingested files none of whose runs is left (which would refuse the file's
    next ingest). Exit status 1 when there are any, with their counts per table and the
    command that deletes them. Runs deleted with plain SQL leave them; `gpudb delete`
    never does.

    Example:

    \b
        gpudb --db lab.duckdb check
        gpudb --db lab.duckdb delete --orphans
    """
    with obj.database(read_only=True) as database:
        lost = database.check()
    if not lost:
        echo(f"{obj.path}: no orphans (every derived row refers to a stored run)")
        return
    echo(f"{obj.path}: " + _orphans_line(lost, obj.path))
    sys.exit(1)


class _SqlCommand(click.Command):
    """`gpudb sql`, whose statement may start with an SQL comment: '-- note\nSELECT 1' would
    be taken for an option, so an argument that starts with '--' and holds white space
    before any '=' (no option name does) is moved behind a '--', where click reads it as the
    statement."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" not in args:
            for i, arg in enumerate(args):
                if arg.startswith("--") and any(c.isspace() for c in arg.split("=", 1)[0]):
                    args = [*args[:i], *args[i + 1:], "--", arg]
                    break
        return super().parse_args(ctx, args)


@cli.command(cls=_SqlCommand)
@click.argument("statement", required=False)
@output_options
@click.pass_obj
@friendly_errors
def sql(obj: Context, statement, fmt):
    """Run ad hoc SQL (argument, or standard input) with gpudb's SQL functions available, and
    the stored queries as table functions (parameters by name, docs/sql.md).

    Several statements separated by ';' run in order in one transaction: one that fails
    rolls back them all, and so does SQL that would leave the file one gpudb refuses (a
    macro named like a function of gpudb's or DuckDB's, a changed gpudb table); the last
    one's rows are printed. The database must exist (`gpudb init`). SQL may start with a
    comment ('-- ...' and a line break, or '/* ... */').

    Example:

    \b
        gpudb sql "SELECT kernel_id, min(time_ns) FROM run GROUP BY ALL"
        echo "SELECT predict_linear(31, 20, 2, 1)" | gpudb sql
        gpudb sql "SELECT kernel_id, edp_saving_pct FROM best_setting(gpu_id := 'v100')"
        gpudb sql "-- runs per GPU
        SELECT gpu_id, count(*) FROM run GROUP BY ALL"
    """
    if statement is None or statement == "-":
        statement = sys.stdin.read()
    if not statement.strip():
        raise GpudbError("no SQL given (pass it as an argument or on standard input)")
    if obj.path.strip() and obj.path != db.MEMORY and not os.path.lexists(obj.path):
        # a mistyped path is not a new database (query and info refuse it too)
        raise GpudbError(f"no database at {obj.path} (create it with `gpudb init`)")
    with obj.database() as database:
        table = database.sql_table(statement)
    if table.columns:
        output_rows(table.columns, table.rows, fmt)


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False))
@click.pass_obj
@friendly_errors
def export(obj: Context, directory):
    """Write every table to DIRECTORY/<table>.parquet (a new directory).

    Example:

        gpudb --db lab.duckdb export lab-parquet/
    """
    with obj.database(read_only=True) as database:
        counts = database.export(directory)
    total = sum(counts.values())
    echo(f"exported {len(counts)} tables ({total} rows) to {directory}")


@cli.command()
@click.argument("source", type=click.Path())
@click.pass_obj
@friendly_errors
@writes
def merge(obj: Context, source):
    """Bring in the runs of another .duckdb file or Parquet export that this one lacks.

    Runs are matched by run_id (a content hash): merging twice adds nothing. The other file
    is opened read-only with external access disabled, so its stored views cannot touch files.
    It is checked whole first and refused, with nothing written, if it holds what ingest
    would refuse or a run this database holds with different contents. Control results, Wu
    models, Wang & Chu calibrations and materialised predictions are not merged: recompute
    them here (a calibration measured elsewhere: gpudb calibrate --from-file).

    Example:

        gpudb --db mine.duckdb merge teammate.duckdb
    """
    with obj.database() as database:
        report = database.merge(source)
    others = ", ".join(f"{n} {t}" for t, n in report.rows_added.items() if t != "run" and n)
    echo(f"merged {source}: {report.runs_added} runs added, {report.runs_skipped} "
         f"already present" + (f"; also {others}" if others else ""))
    left = ", ".join(t if n is None else f"{t} ({n} row{'' if n == 1 else 's'})"
                     for t, n in report.not_merged.items() if n != 0)
    if left:
        echo(f"not merged (computed from runs, or in calibration's case measured or "
             f"fitted for one GPU: recompute them here, or load a calibration file with "
             f"gpudb calibrate --from-file): {left}")


@cli.command()
@click.option("--experiment", "experiments", multiple=True, metavar="NAME",
              help="Runs of this experiment (repeatable; names as `gpudb info` lists them).")
@click.option("--ingest", "ingests", multiple=True, metavar="FILE|SHA256",
              help="Runs an ingested file added: its file name as ingested, or its SHA-256 "
                   "(8 hex digits or more; repeatable).")
@click.option("--gpu", "gpus", multiple=True,
              help="Runs of this GPU (a gpu_id; repeatable).")
@click.option("--kernel", "kernels", multiple=True, metavar="KERNEL_ID",
              help="Runs of this kernel (a kernel_id, '<suite>/<name>'; repeatable).")
@click.option("--orphans", is_flag=True,
              help="No runs: the rows that refer to runs the database no longer holds "
                   "(`gpudb check` lists them).")
@click.option("--dry-run", is_flag=True, help="Only show what would be deleted.")
@click.pass_obj
@friendly_errors
@writes
def delete(obj: Context, experiments, ingests, gpus, kernels, orphans, dry_run):
    """Delete runs with every row derived from them, after showing the rows per table.

    The options select runs; given together, a run must match each (--gpu A --kernel K: K's
    runs on A), and a repeated option matches any of its values. With the runs go their
    intervals and metrics, the control results, scaling and materialised predictions of
    their (GPU, kernel), the Wu models trained on them, the calibrations fitted to them,
    and the records of ingested files none of whose runs is left (so such a file can be
    ingested again); then, in a second transaction, the GPU (with its P-states), kernel and
    experiment rows nothing refers to any more. Nothing is asked: --dry-run shows the
    counts and deletes nothing.

    Example:

    \b
        gpudb --db lab.duckdb delete --ingest rtx8000.csv --dry-run
        gpudb --db lab.duckdb delete --gpu rtx8000
        gpudb --db lab.duckdb delete --orphans
    """
    if not (experiments or ingests or gpus or kernels or orphans):
        raise click.UsageError("say which runs: --experiment, --ingest, --gpu, --kernel or "
                               "--orphans")
    if orphans and (experiments or ingests or gpus or kernels):
        raise click.UsageError("--orphans selects no runs: give it alone")
    with obj.database() as database:
        counts = database.delete(experiment=experiments, ingest=ingests, gpu=gpus,
                                 kernel=kernels, orphans=orphans, dry_run=dry_run)
    if not counts:
        echo("nothing to delete: " + ("no orphans" if orphans else "no run matches"))
        return
    echo(("would delete (dry run, nothing deleted):" if dry_run else "deleted:"))
    output_rows(["table", "rows"], sorted(counts.items(), key=_table_order), "table")


def _table_order(item: tuple[str, int]) -> tuple[int, str]:
    """Runs first, then what hangs on them, the GPU, kernel and experiment rows last."""
    order = ("run", "interval", "metric", "control_result", "scaling_prediction",
             "prediction_materialized", "calibration", "wu_model", "ingest_file", "pstate",
             "gpu", "kernel", "experiment")
    return (order.index(item[0]) if item[0] in order else len(order) - 4, item[0])


@cli.command()
@click.pass_obj
@friendly_errors
@writes
def materialize(obj: Context):
    """Write the prediction view to the plain table prediction_materialized.

    Teammates with a plain DuckDB client (no gpudb, so no Python UDFs) can query the table;
    `gpudb info` says when new runs have made it stale.

    Example:

        gpudb --db lab.duckdb materialize
    """
    from gpudb.store.materialize import TABLE

    with obj.database() as database:
        rows = database.materialize()
    echo(f"{TABLE}: {rows} predictions written")
