"""Commands on the database file itself: init, info, sql, export, merge, materialize.
"""

from __future__ import annotations

import sys

import click
import duckdb

from gpudb.cli.common import Context, echo, friendly_errors, output_options, output_rows, writes
from gpudb.cli.main import cli
from gpudb.present.output import HUMAN_FORMATS, error_line, fetch, printable
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
    with obj.connection() as con:
        info = db.file_info(con)
    echo(f"{obj.path}: gpudb database, schema version {info['schema_version']}")


@cli.command()
@output_options
@click.pass_obj
@friendly_errors
def info(obj: Context, fmt):
    """Schema and gpudb versions, rows per table, and the experiments in the database.

    Example:

        gpudb --db lab.duckdb info --format json
    """
    with obj.connection(read_only=True) as con:
        meta = db.file_info(con)
        from gpudb.store.transfer import TABLES
        counts = []
        for t in TABLES:
            db.doing(f"counting the rows of table {t}")
            counts.append((t, db.first_row(con.execute(f"SELECT count(*) FROM {t}"))[0]))
        db.doing("listing the experiments")
        result = con.execute(
            "SELECT e.name AS experiment, count(r.run_id) AS runs, "
            "count(DISTINCT r.kernel_id) AS kernels, string_agg(DISTINCT r.gpu_id, ', ') AS gpus, "
            "min(r.source) AS source, CAST(e.created_at AS DATE) AS created "
            "FROM experiment AS e LEFT JOIN run AS r USING (experiment_id) "
            "GROUP BY e.name, e.created_at ORDER BY e.created_at, e.name")
        experiments = result.fetchall()
        exp_columns = [d[0] for d in result.description]
        from gpudb.store.materialize import status
        materialized = status(con)
        from gpudb.store.foreign import foreign_objects
        foreign = foreign_objects(con)
    if fmt in HUMAN_FORMATS:
        echo(f"database:      {obj.path}")
        echo(f"schema:        version {meta['schema_version']} "
             f"(this gpudb: {meta['gpudb_schema_version']})")
        echo(f"written by:    gpudb {meta['written_by']} (this: {meta['gpudb_version']})")
        echo(f"materialized:  prediction_materialized {materialized}")
        echo("not gpudb's:   " + (", ".join(f"{kind} {printable(name)}" for kind, name in foreign)
                                       or "nothing (only gpudb's own tables and views)"))
        echo("")
        output_rows(["table", "rows"], counts, fmt)
        echo("")
        output_rows(exp_columns, experiments, fmt)
    else:
        rows = [("schema_version", meta["schema_version"]), ("written_by", meta["written_by"]),
                ("gpudb_version", meta["gpudb_version"]),
                ("prediction_materialized", materialized)]
        rows += [(f"rows.{t}", n) for t, n in counts]
        rows += [(f"experiment.{e[0]}.runs", e[1]) for e in experiments]
        rows += [(f"not_gpudb.{kind}", name) for kind, name in foreign]
        output_rows(["key", "value"], rows, fmt)


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
    """Run ad hoc SQL (argument, or standard input) with gpudb's SQL functions available.

    Several statements separated by ';' run in order; the last one's rows are printed. SQL
    may start with a comment ('-- ...' and a line break, or '/* ... */').

    Example:

    \b
        gpudb sql "SELECT kernel_id, min(time_ns) FROM run GROUP BY ALL"
        echo "SELECT predict_linear(31, 20, 2, 1)" | gpudb sql
        gpudb sql "-- runs per GPU
        SELECT gpu_id, count(*) FROM run GROUP BY ALL"
    """
    if statement is None or statement == "-":
        statement = sys.stdin.read()
    if not statement.strip():
        raise GpudbError("no SQL given (pass it as an argument or on standard input)")
    with obj.connection() as con:
        try:
            db.doing("running the SQL given")
            columns, rows = fetch(con, statement)
        except duckdb.Error as exc:
            raise GpudbError(f"SQL error: {error_line(exc)}") from None
    if columns:
        output_rows(columns, rows, fmt)


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False))
@click.pass_obj
@friendly_errors
def export(obj: Context, directory):
    """Write every table to DIRECTORY/<table>.parquet (a new directory).

    Example:

        gpudb --db lab.duckdb export lab-parquet/
    """
    from gpudb.store.transfer import export as export_tables

    with obj.connection(read_only=True) as con:
        counts = export_tables(con, directory)
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
    from gpudb.store.transfer import merge as merge_runs
    from gpudb.store.transfer import same_file

    if same_file(source, obj.path):
        raise GpudbError(f"cannot merge a database into itself: {source} is {obj.path}")
    with obj.connection() as con:
        report = merge_runs(con, source)
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
    db.doing("materializing the predictions")
    from gpudb.store.materialize import TABLE
    from gpudb.store.materialize import materialize as write_table

    with obj.connection() as con:
        rows = write_table(con)
    echo(f"{TABLE}: {rows} predictions written")
