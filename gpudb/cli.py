"""The `gpudb` command line: one click group; commands open the database, call the library
and print through :func:`output_rows`. Errors are one line and a non-zero exit."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shlex
import sys
import textwrap
import time
from pathlib import Path

import click
import duckdb

from gpudb.predictors import names as predictor_names
from gpudb.present import output
from gpudb.present.output import (
    FORMATS,
    HUMAN_FORMATS,
    error_line,
    fetch,
    format_rows,
    json_records,
    printable,
)
from gpudb.store import db, trust
from gpudb.store.db import GpudbError, first_row


def echo(message: str = "", **kwargs) -> None:
    """click.echo for every line gpudb prints: names and values from files are escaped where
    they are put in (:func:`gpudb.present.output.printable`), and this last pass keeps any control
    character that slipped through (but the line breaks and tabs of gpudb's own layout) off the
    terminal."""
    click.echo(printable(message, keep="\n\t"), **kwargs)


class _OneLineError(click.ClickException):
    """A gpudb error shown as one line with what came from a file escaped."""

    def __init__(self, message: str):
        super().__init__(printable(message))


class Context:
    def __init__(self, path: str, read_only: bool):
        self.path = path
        self.read_only = read_only

    def connect(self, read_only: bool | None = None) -> duckdb.DuckDBPyConnection:
        return db.connect(self.path, read_only=self.read_only if read_only is None else read_only)

    def require_writable(self, what: str) -> None:
        """The one read-only guard: a command about to write says so and stops."""
        if self.read_only:
            raise GpudbError(f"{what} writes the database; drop --read-only")


def friendly_errors(command):
    """Turn gpudb and DuckDB errors, and the simulator's configuration errors, into one-line
    click errors (exit code 1)."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except GpudbError as exc:
            raise _OneLineError(db.ran_over() or str(exc)) from None
        except duckdb.Error as exc:  # the time bound's interrupt included
            raise _OneLineError(db.ran_over() or error_line(exc)) from None
        except RuntimeError as exc:
            if db.interrupted(exc):  # Ctrl-C while DuckDB ran a query
                raise KeyboardInterrupt from None
            raise
        except ValueError as exc:
            # sim.config.ConfigError (a ValueError: sim does not import gpudb); importing the
            # simulator here would load numba for every command, and unloaded it raised none
            config = sys.modules.get("sim.config")
            if config is None or not isinstance(exc, config.ConfigError):
                raise
            raise _OneLineError(str(exc)) from None
    return wrapper


class _UsageLine(click.UsageError):
    """A usage error shown as one line naming the help to read (click shows four)."""

    def __init__(self, error: click.UsageError, command_path: str):
        message = error.format_message().strip().rstrip(".")
        if message[1:2].islower():
            message = message[0].lower() + message[1:]
        super().__init__(f"{message} (see {command_path} --help)", error.ctx)

    def show(self, file=None) -> None:
        echo(f"Error: {self.format_message()}", file=file, err=file is None)


class _OneLineUsage:
    """Mixin of gpudb's commands and groups: their usage errors are one line, exit 2."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except _UsageLine:
            raise
        except click.UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # the help itself
                raise
            path = f"{parent.command_path} {info_name}" if parent else info_name
            raise _UsageLine(exc, path) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except _UsageLine:
            raise
        except click.UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":
                raise
            raise _UsageLine(exc, (exc.ctx or ctx).command_path) from None


class Command(_OneLineUsage, click.Command):
    pass


class Group(_OneLineUsage, click.Group):
    command_class = Command
    group_class = type  # subgroups are Groups too


def writes(command):
    """For commands that always write: stop under --read-only before doing anything."""
    @functools.wraps(command)
    def wrapper(obj: Context, *args, **kwargs):
        # the command path without the program name, which differs between entry points
        path = click.get_current_context().command_path.split(" ", 1)[1]
        obj.require_writable(f"gpudb {path}")
        return command(obj, *args, **kwargs)
    return wrapper


def _gpu_name(ctx, param, value):
    """--gpu is a GPU name everywhere; a path is an error that says where files go."""
    if value is not None and ("/" in value or "\\" in value or value.endswith(".toml")):
        raise click.BadParameter(f"takes a GPU name (a gpu_id in the database or a shipped "
                                 f"simulator configuration), not a path: {value} (sweep, "
                                 "control and bench sim take a file of your own as "
                                 "--gpu-config)")
    return value


def simulator_gpu_options(command):
    """--gpu NAME (a shipped configuration) and --gpu-config PATH (one of your own) of the
    commands that simulate; the command gets one ``gpu``: the file if given, else the name."""
    @functools.wraps(command)
    def wrapper(*args, gpu, gpu_config, **kwargs):
        return command(*args, gpu=gpu_config or gpu, **kwargs)
    wrapper = click.option(
        "--gpu-config", type=click.Path(dir_okay=False, exists=True),
        help="A GPU configuration file of your own (TOML like fixtures/gpus/*.toml), "
             "instead of --gpu.")(wrapper)
    return click.option(
        "--gpu", default="gtx480", show_default=True, callback=_gpu_name,
        help="Simulated GPU: a shipped configuration (gtx480, gtx980, hd7970).")(wrapper)


def output_options(command):
    return click.option("--format", "fmt", type=click.Choice(FORMATS), default="table",
                        show_default=True, help="Output format.")(command)


def param_option(command):
    return click.option("-p", "--param", "params", nargs=2, multiple=True,
                        metavar="NAME VALUE", help="Query parameter (repeatable).")(command)


def output_rows(columns: list[str], rows: list[tuple], fmt: str, name: str | None = None) -> None:
    """Print one table of a command's output. A command that prints several names each one:
    with 'json' they are gathered into one object of named tables, printed once when the
    command has succeeded (one document for a parser; nothing on failure); with 'csv' each
    starts with a line '# table: NAME'. A command printing one table prints it bare."""
    if name is not None and fmt == "json":
        tables = click.get_current_context().meta.setdefault(_JSON_TABLES, {})
        tables[name] = json_records(columns, rows)
        return
    if name is not None and fmt == "csv":
        echo(f"# table: {name}")
    echo(format_rows(columns, rows, fmt), nl=False)


# Commands that keep what they finished when interrupted (runs of a sweep, a measurement): a
# new database file they created stays. Every other command writes all or nothing.
KEEP_ON_INTERRUPT = frozenset({"sweep", "demo", "measure", "control", "evaluate", "bench",
                               "calibrate"})


# Commands that only read a database (merge: its source), whatever it holds, and so end
# within --timeout-s (a table of a billion rows, an object computing for hours)
TIME_BOUNDED = frozenset({"info", "query", "sql", "plot", "report", "export", "merge",
                          "evaluate", "materialize", "train"})
DEFAULT_TIMEOUT_S = 300.0


@contextlib.contextmanager
def _exit_on_stop():
    """SIGTERM or SIGHUP stop the command as Ctrl-C does (its clean-up runs, a new file goes),
    and it exits 128 + the signal's number, saying nothing was written."""
    import signal

    from gpudb.store.stop_signals import stop_on_signals

    fired: list[int] = []
    try:
        with stop_on_signals() as fired:
            yield
    except KeyboardInterrupt as stop:
        # Ctrl-C too: one line and 130, not click's "Aborted!" and 1
        signum = getattr(stop, "signum", None) or (fired[0] if fired else signal.SIGINT)
        echo(f"interrupted ({signal.Signals(signum).name}): nothing written", err=True)
        sys.exit(128 + signum)


@contextlib.contextmanager
def _exit_on_interrupt():
    """The commands that keep finished work say what they kept where they stop; a Ctrl-C
    anywhere else in them (before their work, between its steps) ends in one line and exit
    130 as well, not click's "Aborted!" and 1."""
    import signal

    try:
        yield
    except KeyboardInterrupt as stop:
        signum = getattr(stop, "signum", None) or signal.SIGINT
        echo(f"interrupted ({signal.Signals(signum).name}): what finished before it is kept",
             err=True)
        sys.exit(128 + signum)


@contextlib.contextmanager
def _built_aside(db_path):
    """trust.built_aside, its one failure of its own (the path taken meanwhile) one line."""
    try:
        with trust.built_aside(db_path):
            yield
    except GpudbError as exc:
        raise _OneLineError(str(exc)) from None


_JSON_TABLES = "gpudb.json_tables"   # key in click's context meta, shared by nested commands


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", "db_path", envvar="GPUDB_DB", default=db.DEFAULT_DB, show_default=True,
              type=click.Path(), help="Database file (env GPUDB_DB).")
@click.option("--read-only", is_flag=True, help="Open the database without writing.")
@click.option("--wide", is_flag=True, envvar="GPUDB_WIDE",
              help="Never cut table text to the terminal's width (env GPUDB_WIDE=1).")
@click.option("--timeout-s", type=click.FloatRange(min=0), envvar="GPUDB_TIMEOUT_S",
              default=DEFAULT_TIMEOUT_S, show_default=True,
              help="Stop info, query, sql, plot, report, export, merge, evaluate, "
                   "materialize and train after this many seconds, naming what they were "
                   "reading (simulation inside evaluate does not count; 0: no bound; env "
                   "GPUDB_TIMEOUT_S).")
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
        ctx.with_resource(_exit_on_stop())
        # a new file is built aside and put in place on success: not even kill -9 leaves one
        ctx.with_resource(_built_aside(db_path))
    else:
        ctx.with_resource(_exit_on_interrupt())
    ctx.with_resource(trust.no_new_file_on_error(db_path, on_interrupt=all_or_nothing))
    if ctx.invoked_subcommand in TIME_BOUNDED:
        ctx.with_resource(db.time_bound(timeout_s))
    # Ctrl-C stops a statement DuckDB is running, which Python's handler alone cannot
    ctx.with_resource(db.interrupt_on_signals())
    ctx.with_resource(output.full_width(wide))


@cli.result_callback()
@click.pass_context
def _print_json_tables(ctx, *_result, **_params):
    """A command's named tables in --format json, as one document, once it has succeeded."""
    tables = ctx.meta.get(_JSON_TABLES)
    if tables is not None:
        echo(json.dumps(tables, indent=1))


@cli.command()
@click.pass_obj
@friendly_errors
@writes
def init(obj: Context):
    """Create the database file (or migrate an older one) and print its schema version.

    Example:

        gpudb --db lab.duckdb init
    """
    con = obj.connect()
    try:
        info = db.file_info(con)
    finally:
        con.close()
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
    con = obj.connect(read_only=True)
    try:
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
    finally:
        con.close()
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


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--mapping", "mapping_path", required=True, type=click.Path(dir_okay=False),
              help="TOML mapping of the files' columns (see fixtures/mappings/).")
@click.option("--experiment", help="Experiment the runs join (default: the mapping's, "
                                   "else the first file's name).")
@click.option("--suite", help="Kernel suite: kernel_id = '<suite>/<kernel>' (default: the "
                              "mapping's [run] suite).")
@click.pass_obj
@friendly_errors
@writes
def ingest(obj: Context, files, mapping_path, experiment, suite):
    """Load measured CSV/Parquet files as whole-run runs and metrics (all files or nothing).

    Every file is validated first; a bad cell stops the whole call with its file, row and
    column, and nothing is written. Files already ingested are skipped. Each file's report
    says which of its columns became metrics, were dropped as text (or empty) or ignored.

    Example:

        gpudb ingest v100-dvfs-real-profile.csv \\
            --mapping fixtures/mappings/v100-profile.toml
    """
    from gpudb.sources.ingest import ingest as ingest_files
    from gpudb.sources.mapping import load_mapping

    mapping = load_mapping(mapping_path)
    con = obj.connect()
    try:
        with click.progressbar(length=len(files), label="validating", file=sys.stderr,
                               hidden=len(files) < 2) as bar:
            reports = ingest_files(con, list(files), mapping, experiment,
                                   progress=lambda _name: bar.update(1), suite=suite)
    finally:
        con.close()
    _echo_reports(reports, lambda r: (
        f"{r.rows} rows, {r.runs_added} runs added, {r.runs_present} already present, "
        f"{r.metrics_added} metric values"
        + (f"; model inputs: {r.inputs_summary()}" if r.inputs else "")
        + (f"\n  columns: {r.columns_summary()}" if r.columns_summary() else "")))


def _echo_reports(reports, describe) -> None:
    """One line per ingested file (``describe(report)``), or why it was skipped."""
    for r in reports:
        if r.skipped_reason:
            echo(f"{r.file}: {r.skipped_reason}; nothing added")
        else:
            echo(f"{r.file}: {describe(r)}")


@cli.command("ingest-log")
@click.argument("paths", nargs=-1, required=True, type=click.Path(), metavar="FILE_OR_DIR...")
@click.option("--power-report", type=click.Path(dir_okay=False),
              help="GPUWattch/AccelWattch power report of the one log given (default: the "
                   "gpgpusim_power_report__*.log beside each log).")
@click.option("--experiment", help="Experiment the runs join (default: the directory's name "
              "when one directory is given, else the first log's name).")
@click.option("--gpu", "gpu_id", callback=_gpu_name,
              help="gpu_id of the simulated GPU (default: gpgpusim-<SMs>sm).")
@click.option("--suite", default="gpgpusim", show_default=True,
              help="Kernel suite: kernel_id = '<suite>/<program>:<kernel>:<launch uid>'.")
@click.pass_obj
@friendly_errors
@writes
def ingest_log(obj: Context, paths, power_report, experiment, gpu_id, suite):
    """Load GPGPU-Sim 3.x / Accel-Sim logs: each kernel launch becomes a run (all or nothing).

    A directory is searched for logs. Cycles are core-clock cycles (the first field of
    -gpgpu_clock_domains, which becomes core_mhz; the DRAM field becomes mem_mhz); energy is
    GPUWattch's average power x time. A bad or truncated log, or a missing power report,
    stops the call with one line, and nothing is written. Logs already ingested are skipped.

    Example:

        gpudb ingest-log rooflinedvfs-logs/ --experiment rooflinedvfs
    """
    from gpudb.sources.ingest_log import ingest_logs, read_logs, size_note

    # the logs first: one refused, or a command killed while reading, leaves no new file
    read = read_logs(list(paths), power_report)
    con = obj.connect()
    try:
        reports = ingest_logs(con, list(paths), power_report, experiment, gpu_id, suite,
                              read=read)
    finally:
        con.close()
    _echo_reports(reports, lambda r: (
        f"{r.launches} launch{'es' if r.launches != 1 else ''}, {r.runs_added} runs added, "
        f"{r.runs_present} already present, {r.metrics_added} metric values, "
        f"{r.intervals_added} intervals"
        + (f"; {r.counters_unwrapped} counter values read past a 32-bit wrap"
           if r.counters_unwrapped else "")
        + (f"; {r.counters_left_out} counter values left out (the counter went down: reset "
           "by the simulator)" if r.counters_left_out else "")
        + ("" if r.power_report else "; no power report: energy not known")))
    if note := size_note(reports):
        echo(printable(note))  # program names from the logs


def _numbers(kind):
    """Parse '700,600' (or a repeated option) into a list of numbers."""
    def convert(ctx, param, values):
        out = []
        for value in values:
            for part in str(value).split(","):
                if part.strip():
                    try:
                        out.append(kind(part))
                    except ValueError:
                        raise click.BadParameter(f"{part!r} is not a number") from None
        return out or None
    return convert


def _seeds(ctx, param, values):
    """Parse '0,1,2' (or a repeated option) into a list of distinct seeds >= 0, in order."""
    seeds = _numbers(int)(ctx, param, values)
    if seeds is None:
        return None
    if any(s < 0 for s in seeds):
        raise click.BadParameter(f"seeds are integers >= 0, got {min(seeds)}")
    return list(dict.fromkeys(seeds))


def seeds_option(command):
    """--seeds of the evaluations: each seed's runs evaluated on their own, then each figure's
    mean over the seeds with a 95% interval."""
    return click.option(
        "--seeds", multiple=True, callback=_seeds, metavar="LIST",
        help="Seeds to evaluate, e.g. 0,1,2: each figure on each seed's runs alone, reported "
             "as the mean over the seeds and the half-width of its 95% interval "
             "(<figure>_ci95 columns: Student's t with n-1 degrees of freedom over the "
             "per-seed figures; 'seeds' counts them); a verdict against a paper counts the "
             "paper's figure inside the interval as a match. Seeds the database lacks are "
             "simulated first (simulated GPUs). Default: every seed the database has, "
             "pooled.")(command)


@cli.command(context_settings={"allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED,
                metavar="-- COMMAND [ARGS]...")
@click.option("--core-mhz", "core_mhz", required=True, multiple=True, callback=_numbers(int),
              metavar="LIST",
              help="Core (graphics) clocks to measure at, MHz: 1380,1530 (or repeat it).")
@click.option("--mem-mhz", "mem_mhz", required=True, multiple=True, callback=_numbers(int),
              metavar="LIST",
              help="Memory clocks to measure at, MHz: 877,1215 (or repeat it).")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(min=1),
              help="Runs of the command at each setting.")
@click.option("--warmup", default=1, show_default=True, type=click.IntRange(min=0),
              help="Runs of the command at each setting before the measured ones, not "
                   "stored: application clocks are a ceiling the GPU ramps up to under load.")
@click.option("--kernel", help="Kernel name of the runs (default: the command's file name).")
@click.option("--suite", default="measured", show_default=True,
              help="Kernel suite: kernel_id = '<suite>/<kernel>'.")
@click.option("--experiment", help="Experiment the runs join (default: measured-<gpu>).")
@click.option("--gpu", "gpu_id", callback=_gpu_name,
              help="gpu_id of the GPU (default: NVML's name in lower case, e.g. "
                   "nvidia-a100-sxm4-40gb).")
@click.option("--device", default=0, show_default=True, type=click.IntRange(min=0),
              help="NVML index of the GPU to measure on.")
@click.option("--sms", type=click.IntRange(min=1),
              help="SM count, where NVML does not report it.")
@click.option("--sample-ms", default=10.0, show_default=True, type=click.FloatRange(min=1),
              help="Interval of the clock, throttle and (without an energy counter) power "
                   "samples, ms.")
@click.pass_obj
@friendly_errors
@writes
def measure(obj: Context, command, core_mhz, mem_mhz, repeat, warmup, kernel, suite, experiment,
            gpu_id, device, sms, sample_ms):
    """Run a command on an NVIDIA GPU at each core x memory clock setting and store each
    repetition as a measured run (needs pip install 'gpudb-dvfs[nvml]').

    Clocks are locked through NVML where the driver permits, else set as application clocks;
    where neither is permitted (usually: not root) the call stops with one line. Energy comes
    from the GPU's energy counter (Volta and later), else from power sampled every --sample-ms;
    the clocks seen and the throttle reasons become metrics. --warmup runs at each setting
    come first and are not stored. The SM count comes from NVML, else the CUDA driver, else
    --sms. Each setting's runs are stored when it completes; the default clocks are restored
    at the end, on an error and on Ctrl-C.
    Clocks the GPU does not support are refused before anything runs.

    Example:

    \b
        gpudb measure --core-mhz 1380,1530 --mem-mhz 877 --repeat 3 \\
            -- ./my_app --size 4096
    """
    from gpudb.sources import measure as m

    gpu = m.open_gpu(device)
    con = None
    try:
        settings = m.plan(core_mhz, mem_mhz, gpu.supported_clocks(), gpu.name)
        gid = gpu_id or m.gpu_id_of(gpu.name)
        target = m.Target(experiment or m.default_experiment(gid), gid,
                          kernel or m.kernel_name(command), suite, m.sm_count(gpu, sms))
        con = obj.connect()

        def progress(setting, done):
            first = done[0]
            clocks = [x.samples for x in done]
            line = (f"core {setting.core_mhz} MHz, memory {setting.mem_mhz} MHz "
                    f"({first.lock_method} clocks): {len(done)} runs, "
                    f"{sum(x.time_ns for x in done) / len(done) / 1e9:.3f} s, "
                    f"{sum(x.energy_j for x in done) / len(done):.3f} J "
                    f"({'energy counter' if first.energy_from_counter else 'sampled power'})"
                    f"; seen: SM {_mean([v for c in clocks for v in c.sm_mhz]):.0f} MHz, "
                    f"memory {_mean([v for c in clocks for v in c.mem_mhz]):.0f} MHz")
            reasons = 0
            for c in clocks:
                reasons |= c.reasons
            echo(line + (f", clock-event reasons 0x{reasons:x}" if reasons else ""))

        try:
            added = m.measure(con, gpu, command, settings, repeat, target, progress=progress,
                              warn=lambda line: echo(f"Warning: {line}", err=True),
                              interval_s=sample_ms / 1000, warmup=warmup)
        except m.MeasureStopped as stop:
            # an exit, not an error: a new database file keeps the settings measured before
            echo(f"Error: {stop} ({stop.settings_stored} settings before it stored and "
                 f"kept in {obj.path})", err=True)
            sys.exit(1)
        except m.MeasureInterrupted as stop:
            import signal

            echo(f"interrupted ({signal.Signals(stop.signum).name}): "
                 f"{stop.settings_stored} settings stored and kept; clocks restored",
                 err=True)
            sys.exit(128 + stop.signum)
    finally:
        if con is not None:
            con.close()
        gpu.close()
    echo(f"{added} runs added to experiment {target.experiment!r} of {obj.path}")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


@cli.command()
@simulator_gpu_options
@click.option("--suite", default="default", show_default=True,
              help="Kernel suite: a name in fixtures/suites or a TOML path.")
@click.option("--kernel", "kernels", multiple=True, help="Only this kernel (repeatable).")
@click.option("--core-mhz", multiple=True, callback=_numbers(float),
              help="Core MHz list, e.g. 700,400 (default: every core P-state).")
@click.option("--mem-mhz", multiple=True, callback=_numbers(float),
              help="Memory MHz list (default: every memory P-state).")
@click.option("--sms", multiple=True, callback=_numbers(int),
              help="SM counts (default: all SMs).")
@click.option("--ctas", multiple=True, callback=_numbers(int),
              help="CTA limits per SM (default: the hardware limit).")
@click.option("--interval-instructions", type=click.IntRange(1),
              help="Warp instructions per interval, GPU-wide (default 100000).")
@click.option("--seed", "seeds", multiple=True, callback=_seeds, metavar="LIST",
              help="Random seeds, e.g. 0,1,2: the grid is simulated once per seed "
                   "(default 0).")
@click.option("--jobs", default=os.cpu_count() or 1, show_default=True, type=click.IntRange(1),
              help="Simulator processes (one writer); with --scheduler local, Dask workers.")
@click.option("--scheduler", metavar="ADDRESS|local",
              help="Simulate on a Dask cluster: a dask.distributed scheduler's address "
                   "(tcp://host:8786), or 'local' for a LocalCluster of --jobs workers on this "
                   "machine (needs gpudb-dvfs[dask]).")
@click.option("--experiment", help="Experiment name (default: sim-<gpu>-<suite>).")
@click.pass_obj
@friendly_errors
@writes
def sweep(obj: Context, gpu, suite, kernels, core_mhz, mem_mhz, sms, ctas,
          interval_instructions, seeds, jobs, scheduler, experiment):
    """Simulate a kernel suite at every setting of a grid into the database.

    Runs already in the database (same inputs, same simulator version) are skipped, so an
    interrupted sweep resumes where it stopped; Ctrl-C keeps the runs that finished. With
    --scheduler, Dask workers simulate chunks of runs and this process stores them as they
    arrive; a killed worker's chunk is retried elsewhere.

    Example:

        gpudb sweep --gpu gtx480 --suite default --mem-mhz 924 --jobs 2
        gpudb sweep --gpu gtx480 --mem-mhz 924 --seed 0,1,2
        gpudb sweep --gpu gtx980 --scheduler tcp://10.0.0.5:8786
    """
    simulate(obj, gpu, suite, kernels=list(kernels) or None, core_mhz=core_mhz, mem_mhz=mem_mhz,
             sms=sms, ctas=ctas, interval_instructions=interval_instructions,
             seed=seeds or [0],
             jobs=jobs, experiment=experiment, scheduler=scheduler)


def simulate(obj: Context, gpu: str, suite: str, **grid) -> None:
    """gpudb.simulate.sweep.sweep with a progress bar and a summary line; Ctrl-C (SIGTERM, SIGHUP)
    keeps what finished and exits 130 (143, 129). ``grid``: sweep's keyword arguments."""
    from gpudb.simulate.sweep import sweep as run_sweep
    from sim._jit_cache import cache_root, compiled

    if compiled() is False:
        # the first run after an install compiles the simulator before any run can finish:
        # without this line a log shows "simulating" and nothing else for a minute or more
        echo("compiling the simulator (numba, once per installed version: about 40 s of "
             f"one core, minutes on a busy machine; kept in {cache_root()})", err=True)
    # the simulation's length is gpudb's, not the file's: outside evaluate's time bound
    with run_progress("simulating", rate=True) as progress, db.unbounded():
        summary = run_sweep(obj.path, gpu, suite, progress=progress, **grid)
    echo(f"{summary['runs_added']} runs simulated, {summary['runs_skipped']} already in "
         f"{obj.path}; {summary['instructions'] / 1e6:.1f} M warp instructions in "
         f"{summary['seconds']:.1f} s")


_LOG_EVERY_S = 5.0   # seconds between progress lines when stderr is not a terminal


@contextlib.contextmanager
def run_progress(label: str, rate: bool = False):
    """A ``progress(done, total[, instructions])`` callback drawing a bar on stderr (with the
    simulation rate when ``rate``). A sweep stopped by Ctrl-C, SIGTERM or SIGHUP
    (SweepInterrupted) says what it kept and exits 130, 143 or 129."""
    from gpudb.simulate.sweep import SweepInterrupted

    state = {"bar": None, "done": 0, "start": time.perf_counter(), "instructions": 0,
             "said": time.perf_counter()}
    # click draws no bar where stderr is not a terminal (a log, CI, nohup): a line every few
    # seconds there instead, so a long sweep is seen to move
    terminal = sys.stderr.isatty()

    def progress(done, total, instructions=None):
        if instructions is not None:
            state["instructions"] = instructions
        if not terminal:
            now = time.perf_counter()
            if total and (now - state["said"] >= _LOG_EVERY_S or done == total):
                state["said"] = now
                echo(f"{label}: {done}/{total} runs" + (f", {_rate(state)}" if rate else "")
                     + f", {now - state['start']:.0f} s", err=True)
            state["done"] = done
            return
        if state["bar"] is None:
            state["bar"] = click.progressbar(
                length=total, label=label, file=sys.stderr, show_pos=True, show_eta=True,
                item_show_func=(lambda _: _rate(state)) if rate else None)
            state["bar"].__enter__()
        state["bar"].update(done - state["done"], current_item=done)
        state["done"] = done

    def close():
        if state["bar"] is not None:
            state["bar"].__exit__(None, None, None)
            state["bar"] = None

    try:
        yield progress
    except SweepInterrupted as stop:
        close()
        import signal

        echo(f"interrupted ({signal.Signals(stop.signum).name}): "
             f"{stop.summary['runs_added']} runs written and kept; "
             "run the same command again to resume", err=True)
        sys.exit(128 + stop.signum)
    finally:
        close()


def _rate(state) -> str:
    elapsed = time.perf_counter() - state["start"]
    return f"{state['instructions'] / max(elapsed, 1e-9) / 1e6:.1f} M warp instr/s"


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
    con = obj.connect(read_only=True)
    try:
        columns, rows = run_query(con, name, resolve_names(con, dict(params)))
    finally:
        con.close()
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
    con = obj.connect(read_only=True)
    try:
        path = plots.render(con, name, dict(params), out, dpi=dpi)
    finally:
        con.close()
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

        gpudb --db lab.duckdb report --out lab-report
        chromium lab-report/report.html
    """
    from gpudb.present.report import build

    con = obj.connect(read_only=True)
    try:
        path = build(con, obj.path, out_dir)
    finally:
        con.close()
    echo(f"wrote {path}")


@cli.command()
@click.argument("statement", required=False)
@output_options
@click.pass_obj
@friendly_errors
def sql(obj: Context, statement, fmt):
    """Run ad hoc SQL (argument, or standard input) with gpudb's SQL functions available.

    Several statements separated by ';' run in order; the last one's rows are printed.

    Example:

        gpudb sql "SELECT kernel_id, min(time_ns) FROM run GROUP BY ALL"
        echo "SELECT predict_linear(31, 20, 2, 1)" | gpudb sql
    """
    if statement is None or statement == "-":
        statement = sys.stdin.read()
    if not statement.strip():
        raise GpudbError("no SQL given (pass it as an argument or on standard input)")
    con = obj.connect()
    try:
        try:
            db.doing("running the SQL given")
            columns, rows = fetch(con, statement)
        except duckdb.Error as exc:
            raise GpudbError(f"SQL error: {error_line(exc)}") from None
    finally:
        con.close()
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

    con = obj.connect(read_only=True)
    try:
        counts = export_tables(con, directory)
    finally:
        con.close()
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
    con = obj.connect()
    try:
        report = merge_runs(con, source)
    finally:
        con.close()
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

    con = obj.connect()
    try:
        rows = write_table(con)
    finally:
        con.close()
    echo(f"{TABLE}: {rows} predictions written")


@cli.group()
def evaluate():
    """The papers' evaluations on the database's runs, as tables.

    Example:

        gpudb evaluate accuracy --gpu gtx480 --suite default
    """


OBJECTIVE_CHOICE = click.Choice(["edp", "ed2p", "energy", "energy_perf"])
GUARD_CHOICE = click.Choice(["guarded", "paper"])


@cli.command()
@click.option("--predictor", required=True,
              type=click.Choice(list(predictor_names(replayable=True))),
              help="Performance model of the controller.")
@click.option("--guard", "guard_name", type=GUARD_CHOICE, default="guarded", show_default=True,
              help="gpudb's guarded controller step, or the papers' controller exactly.")
@click.option("--objective", type=OBJECTIVE_CHOICE, default="edp", show_default=True,
              help="What the controller minimises.")
@click.option("--max-loss-pct", type=click.FloatRange(0), default=1.0, show_default=True,
              help="energy_perf: largest predicted slowdown against the highest setting, %.")
@simulator_gpu_options
@click.option("--suite", default="default", show_default=True, help="Kernel suite.")
@click.option("--kernel", "kernels", multiple=True,
              help="Kernel to run (repeatable; default: the whole suite).")
@click.option("--interval-instructions", type=click.IntRange(1),
              help="Warp instructions per decision interval (default 100000, as sweeps).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0),
              help="Random seed of the runs (compare with the replay on that seed's runs).")
@click.option("--scope", "energy_scope", type=click.Choice(["run", "chip"]), default="run",
              show_default=True,
              help="Energy the controller minimises: the run's (board power included) or the "
                   "chip's (without it, the papers').")
@click.pass_obj
@friendly_errors
@writes
def control(obj: Context, predictor, guard_name, objective, max_loss_pct, gpu, suite, kernels,
            interval_instructions, seed, energy_scope):
    """Run a predictor-driven DVFS controller inside the simulator (closed loop).

    Each kernel starts at the highest core P-state; after every interval the controller
    predicts time and energy at each P-state and switches (paying the switching time) to the
    one minimising the objective, through the guard (gpudb/control/guard.py) unless --guard
    paper. The run is stored with policy 'closed_loop' and the controller in columns
    predictor, objective, max_loss_pct and guard (variant 'chip' with --scope chip);
    `gpudb query replay_vs_closed_loop` compares it with the trace replay.

    Example:

        gpudb control --predictor crisp_gpudb --objective edp --kernel twoslope_lm
        gpudb control --predictor crisp_gpudb --objective energy --scope chip
    """
    from gpudb.control.guard import GUARDS
    from gpudb.control.kinds.predictor import run_closed_loop

    with contextlib.ExitStack() as stack:
        bars = []

        def progress(done, total):
            # opened at the first report, once the suite and kernels have been found
            if not bars:
                bars.append(stack.enter_context(click.progressbar(
                    length=total, label="controlling", file=sys.stderr, show_pos=True)))
            bars[0].update(done - bars[0].pos)
        rows = run_closed_loop(obj.path, gpu, suite, list(kernels) or None, predictor,
                               objective, max_loss_pct,
                               interval_instructions=interval_instructions,
                               progress=progress, guard=GUARDS[guard_name], seed=seed,
                               scope=energy_scope)
    output_rows(["kernel_id", "time_ns", "energy_j", "run_id"],
                [(r["kernel_id"], r["time_ns"], r["energy_j"], r["run_id"]) for r in rows],
                "table")


def evaluation_options(command):
    """--gpu and --suite of the commands that evaluate what the database holds."""
    command = click.option(
        "--suite", default=None,
        help="Kernel suite (simulated GPUs: a shipped name or a suite file, default "
             "'default'; measured GPUs: a suite name, default every kernel).")(command)
    return click.option(
        "--gpu", default="gtx480", show_default=True, callback=_gpu_name,
        help="GPU: a gpu_id in the database or a shipped simulator configuration.")(command)


def sweep_option(command):
    return click.option("--sweep/--no-sweep", "do_sweep", default=True, show_default=True,
                        help="Simulate the suite first if the database has no runs of it "
                             "(simulated GPUs).")(command)


def _scope(obj: Context, gpu: str, suite: str | None, do_sweep: bool,
           seeds: list[int] | None = None):
    """The evaluation's Scope; sweeps a simulated GPU's suite at the nominal memory clock if
    the database lacks it (of each of ``seeds``; None: of any seed, else seed 0)."""
    from gpudb.analysis.evaluate import resolve_scope

    exists = Path(obj.path).exists()
    con = obj.connect(read_only=True) if exists else None
    try:
        scope = resolve_scope(con, gpu, suite)
    finally:
        if con is not None:
            con.close()
    if not scope.simulated:
        return scope
    missing = [s for s in (seeds or [None]) if not exists or _needs_sweep(obj, scope, s)]
    if missing:
        missing = [0 if s is None else s for s in missing]
        command = f"gpudb --db {obj.path} sweep --gpu {gpu} --suite {suite or 'default'}"
        if missing != [0]:
            command += f" --seed {','.join(map(str, missing))}"
        if not do_sweep or obj.read_only:
            raise GpudbError(f"no simulated runs of suite {scope.suite} on {gpu} in "
                             f"{obj.path}; run: {command}")
        echo(f"no runs of suite {scope.suite} on {gpu} from this simulator yet: "
             f"{command}", err=True)
        simulate(obj, gpu, suite or "default", mem_mhz=_nominal_mem(gpu),
                 jobs=os.cpu_count() or 1, seed=missing)
    return scope


def _needs_sweep(obj: Context, scope, seed: int | None = None) -> bool:
    from gpudb.analysis.evaluate import missing_sweep

    # a writable open migrates a file from an older gpudb before it is looked at
    con = obj.connect(read_only=obj.read_only)
    try:
        return missing_sweep(con, scope.gpu, scope.suite, seed)
    finally:
        con.close()


def _seeds_line(seeds: list[int] | None) -> str | None:
    """What the tables' figures are over, for several explicit seeds."""
    if not seeds or len(seeds) < 2:
        return None
    return (f"each figure: the mean over seeds {', '.join(map(str, seeds))}, each seed's runs "
            "evaluated alone; *_ci95 columns: the half-width of its 95% interval (Student's t "
            "with n-1 degrees of freedom over the per-seed figures); seeds: how many")


def _nominal_mem(gpu: str) -> list[float]:
    """The paper 000 evaluation scales the core clock only: memory stays at its nominal."""
    from sim.config import load_gpu

    return [load_gpu(gpu).nominal_mem_mhz]


def _suite_label(scope) -> str:
    return f"suite {scope.suite}" if scope.suite else "all kernels"


def _echo_verdict_rule(table, seeds: list[int] | None, fmt: str) -> None:
    """Under a table with a verdict column (several seeds), the rule it follows."""
    from gpudb.present.demo import verdict_rule

    if fmt in HUMAN_FORMATS and "verdict" in table.columns:
        echo(verdict_rule(len(seeds or [])))


def print_accuracy(obj: Context, scope, base_mhz, granularity: str, fmt: str,
                   seeds: list[int] | None = None) -> None:
    from gpudb.analysis.evaluate import (
        accuracy_over_seeds,
        accuracy_tables,
        check_base_mhz,
        check_same_kernels,
        predictor_coverage,
    )

    con = obj.connect(read_only=True)
    try:
        check_base_mhz(con, scope, base_mhz)
        applies, absent = predictor_coverage(con, scope.gpu, scope.suite, granularity)
        if seeds:
            check_same_kernels(con, scope, seeds, "run")
            per_predictor, per_kernel = accuracy_over_seeds(con, scope.gpu, scope.suite,
                                                            base_mhz, granularity, seeds)
        else:
            per_predictor, per_kernel = accuracy_tables(con, scope.gpu, scope.suite, base_mhz,
                                                        granularity)
    finally:
        con.close()
    if fmt in HUMAN_FORMATS and _seeds_line(seeds):
        echo(_seeds_line(seeds))
    if fmt in HUMAN_FORMATS:
        if absent:
            echo(f"predictors with predictions on these runs: {', '.join(applies) or 'none'}"
                 f"; none from {', '.join(absent)} ({_why_absent(absent)})")
        echo(f"MAPE (%) by predictor and target setting, {granularity} granularity, "
             f"{scope.gpu}, {_suite_label(scope)}:")
    output_rows(per_predictor.columns, per_predictor.rows, fmt, "by_predictor")
    _echo_verdict_rule(per_predictor, seeds, fmt)
    if fmt in HUMAN_FORMATS:
        echo("\nMAPE (%) by kernel, over all targets:")
    output_rows(per_kernel.columns, per_kernel.rows, fmt, "by_kernel")


# What a predictor without predictions on a database's runs needs (the rest read per-interval
# counters, which simulated runs have and measured ones do not).
_NEEDS = {"wu": "wu needs a model: gpudb train wu",
          "wangchu": "wangchu needs a calibration: gpudb calibrate (--from-file for a "
                     "measured GPU)",
          "wangchu_scaled": "wangchu_scaled needs a calibration like wangchu",
          "wangchu_fit": "wangchu_fit needs a fit: gpudb train wangchu"}


def _why_absent(absent: list[str]) -> str:
    """Why each predictor in ``absent`` predicted nothing, in one clause per cause."""
    interval = [p for p in absent if p not in _NEEDS]
    reasons = [_NEEDS[p] for p in absent if p in _NEEDS]
    if interval:
        reasons.insert(0, f"{', '.join(interval)} read per-interval counters, which simulated "
                          "runs have and measured ones do not")
    return "; ".join(reasons)


def folds_used(folds: int, kernels: int) -> str:
    """The cross-validation's folds as run: at most one per kernel (evaluate_grid._cv_rows)."""
    if folds <= kernels:
        return f"{folds} folds by kernel"
    return f"{kernels} folds by kernel, one per kernel: --folds {folds} asked for more"


def print_grid_accuracy(obj: Context, scope, base_mhz, base_mem_mhz, folds: int,
                        fmt: str) -> None:
    from gpudb.analysis.evaluate_grid import default_base, grid_tables, has_grid

    con = obj.connect(read_only=True)
    try:
        if not has_grid(con, scope.gpu):
            return
        top = default_base(con, scope.gpu)
        base = (base_mhz or top[0], base_mem_mhz or top[1])
        summary, heat, per_kernel = grid_tables(con, scope.gpu, scope.suite, base, folds)
    finally:
        con.close()
    if not summary.rows:
        if fmt in HUMAN_FORMATS:
            echo(f"\nno predictions from base {base[0]:g}/{base[1]:g} MHz (core/memory)"
                 " with a known actual time")
        return
    if fmt in HUMAN_FORMATS:
        # the folds used: one kernel per fold at most (evaluate_grid._cv_rows)
        kernels = len({r[per_kernel.columns.index("kernel_id")] for r in per_kernel.rows})
        used = folds_used(folds, kernels)
        cv = any(r[0] == "wangchu_fit_cv" for r in summary.rows)
        echo(f"\ncore x memory accuracy (paper 003) from base {base[0]:g}/{base[1]:g} MHz "
             "(core/memory), MAPE (%) over every target setting, the base included"
             + (f"; wangchu_fit_cv: fitted on the other kernels ({used})" if cv else "")
             + ":")
    output_rows(summary.columns, summary.rows, fmt, "grid_summary")
    if heat.rows:
        if fmt in HUMAN_FORMATS:
            echo("\nMAPE (%) by target, core MHz down, memory MHz across "
                 "(query error_by_setting):")
        output_rows(heat.columns, heat.rows, fmt, "grid_by_setting")
    if fmt in HUMAN_FORMATS:
        echo("\nMAPE (%) by kernel over every target, with the case of paper 003 "
             "section V the model picks at the base:")
    output_rows(per_kernel.columns, per_kernel.rows, fmt, "grid_by_kernel")


ENERGY_SCOPES = {"chip": "chip energy (no board power: papers 000 and 004's scope)",
                 "run": "run energy (board power included)"}


def print_control(obj: Context, scope, objectives: list[str], max_loss_pct: float,
                  fmt: str, seeds: list[int] | None = None,
                  energy_scopes: tuple[str, ...] = ("chip", "run")) -> None:
    from gpudb.analysis.evaluate import (
        check_same_kernels,
        control_over_seeds,
        control_table,
        has_interval_runs,
        interval_seeds,
        run_static_table,
    )
    from gpudb.control import schedule_run
    from gpudb.control.results import REPLAY_PREDICTORS
    from gpudb.control.results import evaluate as evaluate_policies

    con = obj.connect(read_only=obj.read_only)
    try:
        if has_interval_runs(con, scope):
            obj.require_writable("gpudb evaluate control (into control_result)")
            # each seed replayed on its own runs; without --seeds every seed the database
            # has, pooled in the tables
            run_seeds = seeds or interval_seeds(con, scope)
            if seeds:
                check_same_kernels(con, scope, seeds)
            # the achievable bound: the dynamic optimal's schedules run in the closed loop
            # (stored runs are reused)
            with run_progress("dynamic optimal runs") as progress, db.unbounded():
                _, unrunnable = schedule_run.simulate(
                    con, objectives, max_loss_pct, scope.gpu, scope.suite, energy_scopes,
                    progress=progress, seeds=run_seeds, workers=os.cpu_count() or 1)
            if unrunnable and fmt in HUMAN_FORMATS:
                echo(f"{unrunnable} dynamic-optimal schedules not run: their GPU is not "
                     "a shipped simulator configuration", err=True)
            with click.progressbar(length=len(run_seeds) * len(energy_scopes) * len(objectives)
                                   * (2 * len(REPLAY_PREDICTORS) + 1),
                                   label="replaying", file=sys.stderr) as bar:
                evaluate_policies(con, REPLAY_PREDICTORS, objectives, max_loss_pct, scope.gpu,
                                  scope.suite, progress=lambda _step: bar.update(1),
                                  scopes=energy_scopes, seeds=run_seeds)
            if seeds:
                tables = [(objective, energy_scope,
                           control_over_seeds(con, scope.gpu, scope.suite, objective,
                                              max_loss_pct, seeds, energy_scope))
                          for objective in objectives for energy_scope in energy_scopes]
            else:
                tables = [(objective, energy_scope,
                           control_table(con, scope.gpu, scope.suite, objective, max_loss_pct,
                                         energy_scope))
                          for objective in objectives for energy_scope in energy_scopes]
            what = "mean savings (%) against the highest P-state"
            if fmt in HUMAN_FORMATS and _seeds_line(seeds):
                echo(_seeds_line(seeds))
            elif fmt in HUMAN_FORMATS and not seeds and len(run_seeds) > 1:
                echo(f"seeds {', '.join(map(str, run_seeds))} pooled: each seed replayed "
                     "on its own runs, the means over every kernel and seed (--seeds "
                     "for the mean over seeds with a 95% interval)")
        else:
            if fmt in HUMAN_FORMATS:
                echo(f"{scope.gpu} has whole runs only (no per-interval runs to replay a "
                     "controller on): static optimal over its (SM, core, memory) "
                     "settings, the first row the mean over its kernels")
            tables = [(objective, None, run_static_table(con, scope, objective, max_loss_pct))
                      for objective in objectives]
            what = "static optimal savings (%) against the highest setting"
    finally:
        con.close()
    for objective, energy_scope, table in tables:
        if fmt in HUMAN_FORMATS:
            echo(f"\n{what}, objective {objective}"
                 + (f" (slowdown bound {max_loss_pct:g}%)" if objective == "energy_perf"
                          else "") + f", {scope.gpu}, {_suite_label(scope)}"
                 + (f", {ENERGY_SCOPES[energy_scope]}" if energy_scope else "") + ":")
        output_rows(table.columns, table.rows, fmt,
                    objective + (f"_{energy_scope}" if energy_scope else ""))
        _echo_verdict_rule(table, seeds, fmt)


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

        gpudb --db sim.duckdb evaluate accuracy --gpu gtx480 --suite default
        gpudb --db lab.duckdb evaluate accuracy --gpu rtx2070s
        gpudb --db sim.duckdb evaluate accuracy --gpu gtx980 --base-mhz 700 --base-mem-mhz 700
        gpudb --db sim.duckdb evaluate accuracy --seeds 0,1,2

    With --seeds the tables of paper 000 are per seed and then averaged (mean and 95%
    interval); paper 003's core x memory tables pool the seeds (each prediction scored
    against a run of its own seed).
    """
    db.doing("computing evaluate accuracy")
    scope = _scope(obj, gpu, suite, do_sweep, seeds)
    print_accuracy(obj, scope, base_mhz, granularity, fmt, seeds)
    if granularity == "run":
        print_grid_accuracy(obj, scope, base_mhz, base_mem_mhz, folds, fmt)


@evaluate.command()
@click.option("--gpu", default="gtx480", show_default=True, callback=_gpu_name,
              help="Simulated GPU (a shipped configuration).")
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
    Equalizer in energy and performance mode (and with V/F or CTA control alone), and at
    nominal, SM high/low and memory high/low (15% up or down), simulated where the database
    lacks them (4096-cycle epochs; per-SM CTA limits with pausing; V/F one step per epoch by
    the SMs' majority vote), then the stored query equalizer_vs_static: geometric-mean speedup and
    energy change against nominal per kernel category and overall, the paper's figures beside
    ours (per category, over all kernels, and over the paper's four classes).

    Example:

        gpudb --db sim.duckdb evaluate equalizer --gpu gtx480 --suite default
        gpudb --db sim.duckdb evaluate equalizer --kernel mem_stream --kernel compute_ilp
        gpudb --db sim.duckdb evaluate equalizer --kernel mem_stream --seeds 0,1,2
    """
    db.doing("computing evaluate equalizer")
    from gpudb.analysis.evaluate import Table, equalizer_over_seeds
    from gpudb.control.kinds.equalizer import run_equalizer
    from gpudb.store.queries import run_query
    from sim.config import ConfigError, available, load_suite

    if gpu not in available("gpus"):
        raise GpudbError(f"{gpu!r} is not a simulator GPU ({', '.join(available('gpus'))}): "
                         "Equalizer runs in the simulator's closed loop")
    try:
        suite_name = load_suite(suite).name
    except ConfigError as exc:
        raise GpudbError(str(exc)) from None
    if do_run:
        obj.require_writable("gpudb evaluate equalizer (simulating its runs)")
        for seed in seeds or [0]:
            with run_progress("equalizer runs" + (f", seed {seed}" if seeds else "")) \
                    as progress, db.unbounded():
                run_equalizer(obj.path, gpu, suite, list(kernels) or None, progress=progress,
                              seed=seed)
    con = obj.connect(read_only=True)
    try:
        tables = []
        for seed in seeds or [None]:
            columns, rows = run_query(con, "equalizer_vs_static", {
                "gpu_id": gpu, "suite": suite_name, "kernels": "each" if per_kernel else None,
                "seed": None if seed is None else str(seed)})
            tables.append(Table(columns, rows))
    finally:
        con.close()
    table = equalizer_over_seeds(tables)
    columns, rows = table.columns, table.rows
    if not rows:
        raise GpudbError(f"no Equalizer runs of suite {suite_name} on {gpu} in {obj.path}: "
                         f"run gpudb --db {obj.path} evaluate equalizer --gpu {gpu}")
    if fmt in HUMAN_FORMATS:
        echo(f"Equalizer and the static operating points against nominal, {gpu}, "
             f"suite {suite_name} (geometric means; 'all' over every kernel):")
        if _seeds_line(seeds):
            echo(_seeds_line(seeds))
    output_rows(columns, rows, fmt)
    if fmt in HUMAN_FORMATS and "speedup_verdict" in columns:
        from gpudb.present.demo import verdict_rule

        echo(verdict_rule(len(seeds)) + "; energy: our chip energy against the paper's")


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
    db.doing("computing evaluate classes")
    from gpudb.analysis.evaluate import PAPER_CLASSES, class_tables, length_line

    scope = _scope(obj, gpu, suite, do_sweep)
    con = obj.connect(read_only=True)
    try:
        summary, kernels = class_tables(con, scope.gpu, scope.suite)
        length = length_line(con, scope.gpu, scope.suite)
    finally:
        con.close()
    if not kernels.rows:
        raise GpudbError(f"no per-interval counters for {scope.gpu} ({_suite_label(scope)}): "
                         "workload classes need simulated runs")
    if fmt in HUMAN_FORMATS:
        echo(f"shares of the time at the highest core P-state by category and paper 000 "
             f"class ('all' summarises), {scope.gpu}, {_suite_label(scope)}:")
    output_rows(summary.columns, summary.rows, fmt, "summary")
    if fmt in HUMAN_FORMATS:
        echo("\nper kernel:")
    output_rows(kernels.columns, kernels.rows, fmt, "by_kernel")
    if fmt in HUMAN_FORMATS:
        echo(f"\n{length}\n" + "\n".join(PAPER_CLASSES))


@evaluate.command("control")
@evaluation_options
@click.option("--objective", "objectives", type=OBJECTIVE_CHOICE, multiple=True,
              help="Objective (repeatable; default: all four).")
@click.option("--max-loss-pct", type=click.FloatRange(0), default=1.0, show_default=True,
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

        gpudb --db sim.duckdb evaluate control --objective edp
        gpudb --db sim.duckdb evaluate control --objective energy --scope chip
        gpudb --db lab.duckdb evaluate control --gpu v100 --objective energy_perf
        gpudb --db sim.duckdb evaluate control --objective edp --seeds 0,1,2
    """
    db.doing("computing evaluate control")
    print_control(obj, _scope(obj, gpu, suite, do_sweep, seeds),
                  list(objectives) or ["edp", "ed2p", "energy", "energy_perf"], max_loss_pct,
                  fmt, seeds, ("chip", "run") if energy_scope == "both" else (energy_scope,))


@cli.command()
@evaluation_options
@click.pass_obj
@friendly_errors
@writes
def demo(obj: Context, gpu, suite):
    """The main job: simulate the default suite on gtx480 at every core P-state (reusing runs
    already in the database), then print the predictors' accuracy (paper 000 figure 8) and
    the DVFS controllers' EDP savings (figures 11-12) with the papers' figures beside ours.
    With a measured GPU in the database, the same tables on its runs.

    Example:

        gpudb demo            # into ./gpudb.duckdb; gpudb --db other.duckdb demo
    """
    scope = _scope(obj, gpu, suite, do_sweep=True)
    echo(f"gpudb demo: {_suite_label(scope)} on {scope.gpu} into {obj.path}"
         + (" (synthetic kernels)" if scope.simulated else ""))
    if scope.simulated:
        _readable_demo(obj, scope)
    else:
        print_accuracy(obj, scope, None, "run", "table")
        print_control(obj, scope, ["edp"], 1.0, "table")
    hints = _demo_hints(obj, scope, gpu, suite)
    # the hints leave out --db: one export line instead keeps each within the demo's width
    export = ("" if obj.path == db.DEFAULT_DB
              else f" (first: export GPUDB_DB={shlex.quote(str(obj.path))})")
    echo(f"\nnext{export}:\n" + "\n".join(textwrap.indent(h, "  ") for h in hints))


def _readable_demo(obj: Context, scope) -> None:
    """The simulated GPU's accuracy and savings as short tables beside paper 000's figures
    with a verdict, the figures in gpudb-figures/ next to the database, and a closing
    paragraph (gpudb.present.demo)."""
    from gpudb.analysis.evaluate import accuracy_tables, control_table, interval_seeds
    from gpudb.control import schedule_run
    from gpudb.control.results import REPLAY_PREDICTORS
    from gpudb.control.results import evaluate as evaluate_policies
    from gpudb.present import demo

    con = obj.connect(read_only=obj.read_only)
    try:
        # one seed, the lowest (the demo sweeps seed 0), for accuracy and control alike
        seed = (interval_seeds(con, scope) or [None])[0]
        per_predictor, _ = accuracy_tables(con, scope.gpu, scope.suite, None, "run", seed)
        obj.require_writable("gpudb demo (into control_result)")
        # the achievable bound of the table below: the EDP schedule run in the closed loop
        with run_progress("dynamic optimal runs") as progress:
            schedule_run.simulate(con, ["edp"], 1.0, scope.gpu, scope.suite, ("chip",),
                                  progress=progress, seeds=[seed], workers=os.cpu_count() or 1)
        # EDP in both energy scopes (the figures count the run's), the other objectives in
        # the chip's, the papers'
        others = ["ed2p", "energy", "energy_perf"]
        with click.progressbar(length=(2 + len(others)) * (2 * len(REPLAY_PREDICTORS) + 1),
                               label="replaying", file=sys.stderr) as bar:
            evaluate_policies(con, REPLAY_PREDICTORS, ["edp"], 1.0, scope.gpu, scope.suite,
                              progress=lambda _step: bar.update(1), scopes=("chip", "run"),
                              seeds=[seed])
            evaluate_policies(con, REPLAY_PREDICTORS, others, 1.0, scope.gpu, scope.suite,
                              progress=lambda _step: bar.update(1), scopes=("chip",),
                              seeds=[seed])
        # compared with paper 000 in its energy scope: the chip's, no board power
        by_objective = {objective: control_table(con, scope.gpu, scope.suite, objective, 1.0,
                                                 "chip", seed)
                        for objective in ("edp", *others)}
        control = by_objective["edp"]
        length = demo.kernel_length_line(con, scope.gpu, scope.suite, seed,
                                         "chip scope (no board power, papers 000 and 004's)")
        kernel = demo.demo_kernel(con, scope.suite)
        figures = demo.demo_figures(scope.gpu, scope.suite, kernel)
        folder = Path(obj.path).resolve().parent / demo.FIGURES_DIR
        try:
            written = demo.write_figures(con, folder, figures)
        except GpudbError as missing:
            written, skipped = [], str(missing)
    finally:
        con.close()
    accuracy = demo.accuracy_summary(per_predictor)
    savings = demo.savings_summary(control)
    objectives = demo.objectives_summary(by_objective)
    def caption(text: str) -> None:
        echo("\n" + textwrap.fill(text, width=DEMO_WIDTH))

    if length:
        echo(textwrap.fill(length, width=DEMO_WIDTH))
    caption("Prediction error (paper 000 figure 8), whole runs: MAPE % from the highest core "
            "P-state to each lower one (columns: target core MHz; all: over every target; "
            "paper: paper 000's). critbw reads as crit: CRIT+BW adds a prefetcher's stalls "
            "(the simulator has none) and a DRAM bound:")
    output_rows(accuracy.columns, accuracy.rows, "table")
    caption("EDP saving % against always running at the highest P-state (paper 000 figures "
            "11-12), chip energy (no board power, as the paper's), mean over the kernels: "
            "EDP, time: the papers' controller as they give it; g: with gpudb's guard "
            "(\"Where gpudb differs from the papers\" in README.md); paper: paper 000's. The "
            "first rows are offline bounds (dynamic_optimal_run: the dynamic optimal's "
            "schedule as the simulator runs it):")
    output_rows(savings.columns, savings.rows, "table")
    echo(textwrap.fill(demo.verdict_rule(), width=DEMO_WIDTH))
    caption("Every objective, the bounds and gpudb's guarded controllers, chip energy, mean "
            "over the kernels, savings % against the highest P-state: EDP, ED2P; E: energy "
            "(the energy objective), E/dyn and E/mless its fraction of the dynamic optimal's "
            "and of perfect memoryless's saving (paper 004 section 4.3; its best controller: "
            f"{demo.PAPER_004_FRACTION['dynamic']:.2f} and "
            f"{demo.PAPER_004_FRACTION['memoryless']:.2f}); 1% E: energy within 1% slowdown, "
            "slow and worst: its mean and worst kernel's slowdown %:")
    output_rows(objectives.columns, objectives.rows, "table")
    if written:
        echo("\nfigures, each with the command that draws it again:")
        for path, (name, params) in zip(written, figures, strict=True):
            echo(f"  {path}\n" + textwrap.indent(
                demo.redraw_command(name, params, path.name, DEMO_WIDTH - 4), "    "))
    else:
        echo(f"\nno figures: {skipped}")
    echo("\n" + textwrap.fill(demo.closing_paragraph(accuracy, savings), width=DEMO_WIDTH))


DEMO_WIDTH = 100   # the demo's lines and tables fit this many columns


def _demo_hints(obj: Context, scope, gpu: str, suite: str | None) -> list[str]:
    """The commands to try after the demo, for the GPU and suite it ran on (without --db: the
    demo prints the GPUDB_DB to export first), each with what it shows."""
    from gpudb.present import demo

    where = (f" --gpu {gpu}" if gpu != "gtx480" else "") + (f" --suite {suite}" if suite else "")
    con = obj.connect(read_only=True)
    try:
        kernel = demo.demo_kernel(con, scope.suite) if scope.simulated else None
        top_mhz = first_row(con.execute(
            "SELECT max(core_mhz) FROM run WHERE gpu_id = ? AND policy = 'fixed'",
            [scope.gpu]))[0]
    finally:
        con.close()
    hints = [("query --list", "stored analyses"),
             ("query mape_by_kernel", "accuracy per kernel"),
             ("query savings -p objective edp", "savings per kernel and policy"),
             # the accuracy table's 'all' column by hand: whole runs from the highest P-state
             ('sql "SELECT predictor, round(100 * avg(abs(predicted_ns - actual_ns)\n'
              "        / actual_ns), 1) AS mape_pct FROM prediction WHERE granularity = 'run'\n"
              f"        AND base_core_mhz = {top_mhz:g} AND target_core_mhz < {top_mhz:g} "
              'GROUP BY ALL ORDER BY ALL"', "the accuracy table's 'all' column, in SQL")]
    if not scope.simulated:
        return _aligned([*hints, (f"evaluate control{where} --objective energy_perf",
                                  "energy within 1% slowdown")])
    return _aligned([
        *hints,
        (f"query clock_trace -p kernel_id {kernel.split('/', 1)[1]}", "clocks per controller"),
        (f"evaluate control{where} --objective energy_perf", "energy within 1% slowdown"),
        (f"evaluate control{' --gpu ' + gpu if gpu != 'gtx480' else ''} --suite long "
         "--seeds 0,1,2 --scope chip", "paper scale, 3 seeds"),
        (f"evaluate classes{where}", "the kernels' classes"),
        (f"control{where} --predictor crisp_gpudb --kernel {kernel.split('/', 1)[1]}",
         "closed loop")])


def _aligned(hints: list[tuple[str, str]]) -> list[str]:
    """'gpudb COMMAND   # what it shows', the comments aligned; a command of several lines
    (SQL in quotes, where a '#' would be part of the string) gets its comment on a line of
    its own above it."""
    width = max(len(command) for command, _ in hints if "\n" not in command)
    return [f"# {what}:\ngpudb {command}" if "\n" in command
            else f"gpudb {command}" + " " * (width - len(command) + 2) + f"# {what}"
            for command, what in hints]


@cli.group()
def train():
    """Train a machine-learning predictor on the database's runs and store it there.

    Example:

        gpudb --db lab.duckdb train wu --gpu v100 --seed 0
        gpudb --db lab.duckdb train wangchu --gpu gtx1080ti --base 1800,5000
    """


@train.command()
@click.option("--gpu", "gpu_id", required=True, callback=_gpu_name,
              help="GPU whose fixed runs train the model (a gpu_id in the database).")
@click.option("--base", default=None, metavar="SMS,CORE_MHZ,MEM_MHZ",
              help="Base setting the model predicts from, or 'all' for one model per setting "
                   "(default: the highest setting).")
@click.option("--train-fraction", default=0.8, show_default=True,
              type=click.FloatRange(0, 1, min_open=True), help="Share of kernels trained on.")
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed of the kernel split, k-means and the networks.")
@click.option("--clusters", default=12, show_default=True, type=click.IntRange(1),
              help="k-means clusters per cluster set.")
@click.option("--features", default=None, metavar="NAME,...",
              help="Classifier inputs, names in view wu_feature (default: dcgm_* metrics of "
                   "measured runs, table II analogues of simulated ones).")
@click.option("--no-power", is_flag=True, help="Model time only.")
@output_options
@click.pass_obj
@friendly_errors
@writes
def wu(obj: Context, gpu_id, base, train_fraction, seed, clusters, features, no_power,
             fmt):
    """Wu et al.'s model (paper 002): k-means scaling surfaces and neural-network classifiers.

    Splits the GPU's kernels at random (stored), trains, stores the model for the pred_wu
    view, and prints its id (a line `model_id ID`) and the validation error per kernel (the
    id and summary go to stderr unless --format table). With --base all, one model per
    setting and a row per model (see the stored query wu_error_by_base for the heat map).
    Needs scikit-learn (gpudb-dvfs[ml]).

    Models stay stored side by side (table wu_model; the id is a hash of the settings and
    runs, so retraining the same thing replaces it). View prediction and the stored queries
    use each GPU's latest; pick another in a query with `-p model_id ID`
    (wu_error_by_base: the latest per base setting; `-p model_id all` lists every model).
    View pred_wu holds every model's predictions, with a model_id column.

    Example:

        gpudb --db lab.duckdb train wu --gpu v100 --train-fraction 0.8 --seed 0

        gpudb --db lab.duckdb query mape_by_kernel -p model_id 8d0f952dfd8712c0
    """
    db.doing("training Wu's model")
    from gpudb.train import wu_model

    names = [f.strip() for f in features.split(",") if f.strip()] if features else None
    con = obj.connect()
    try:
        if base == "all":
            columns, rows = wu_model.train_many(
                con, gpu_id, cluster_counts=(clusters,), train_fraction=train_fraction,
                seed=seed, features=names, power=not no_power)
            if rows:  # the last one trained is the GPU's default from now on
                echo(f"latest model_id {rows[-1][columns.index('model_id')]} (the "
                     "default of view prediction and the accuracy queries)",
                     err=fmt not in HUMAN_FORMATS)
        else:
            report = wu_model.train_wu(
                con, gpu_id, base=wu_model.parse_base(base), train_fraction=train_fraction,
                seed=seed, clusters=clusters, features=names, power=not no_power)
            columns, rows = wu_model.validation_table(con, report.model_id)
            echo(f"model_id {report.model_id}", err=fmt not in HUMAN_FORMATS)
            echo(report.summary(), err=fmt not in HUMAN_FORMATS)
    finally:
        con.close()
    output_rows(columns, rows, fmt)


@train.command()
@click.option("--gpu", "gpu_id", required=True, callback=_gpu_name,
              help="GPU whose fixed runs the parameters are fitted to (a gpu_id in the "
                   "database).")
@click.option("--base", required=True, metavar="CORE_MHZ,MEM_MHZ",
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
    db.doing("fitting Wang & Chu's model")
    from gpudb.train import wangchu_fit
    from gpudb.train.calibrate import UNITS

    try:
        core, mem = (float(v) for v in base.split(","))
    except ValueError:
        raise GpudbError(f"--base takes CORE_MHZ,MEM_MHZ, e.g. 700,700; got {base!r}") from None
    con = obj.connect()
    try:
        calibration_id, result = wangchu_fit.train(con, gpu_id, core, mem, suite,
                                                   list(kernels) or None)
    finally:
        con.close()
    echo(f"calibration_id {calibration_id} (method least_squares): RMS time error "
         f"{result.rms_error_pct:.2f}% over {result.n_rows} (kernel, setting) pairs",
         err=fmt not in HUMAN_FORMATS)
    output_rows(["parameter", "value", "unit", "identified"],
                [(k, v, UNITS[k], result.identified[k])
                 for k, v in result.params.items()], fmt)


def _mhz_pair(ctx, param, value):
    """'700,700' as (700.0, 700.0)."""
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",")]
    try:
        pair = tuple(float(p) for p in parts)
    except ValueError:
        pair = ()
    if len(pair) != 2:
        raise click.BadParameter(f"{value!r} is not CORE_MHZ,MEM_MHZ (e.g. 700,700)")
    return pair


@cli.command()
@click.option("--gpu", required=True, callback=_gpu_name,
              help="GPU to calibrate: a shipped simulator configuration (gtx480, gtx980, "
                   "hd7970), or with --from-file a gpu_id in the database.")
@click.option("--from-file", "from_file", type=click.Path(dir_okay=False, exists=True),
              help="TOML file of measured parameters, `name = { value = V, unit = \"U\" }` "
                   "(method 'file'); nothing is simulated.")
@click.option("--baseline", metavar="CORE_MHZ,MEM_MHZ", callback=_mhz_pair,
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
    from gpudb.train import calibrate as cal

    if from_file:
        if baseline:
            raise GpudbError("--baseline applies to a simulated calibration, not --from-file")
        con = obj.connect()
        try:
            report = cal.calibrate_from_file(con, gpu, from_file)
        finally:
            con.close()
        summary = f"from {from_file}"
    else:
        from sim.config import available

        if gpu not in available("gpus"):
            raise GpudbError(f"{gpu!r} is not a simulator GPU ({', '.join(available('gpus'))}); "
                             "a measured GPU's parameters come from a file: --from-file "
                             "cal.toml")
        report = _calibrate_simulated(obj, gpu, baseline, seed, jobs)
        summary = (f"{report.runs_added} runs simulated, {report.runs_reused} reused; baseline "
                   f"{report.baseline[0]:g}/{report.baseline[1]:g} MHz")
    echo(f"calibration_id {report.calibration_id} ({report.gpu_id}, {report.method}; "
         f"{summary}; {report.seconds:.1f} s)", err=fmt not in HUMAN_FORMATS)
    output_rows(*report.table(), fmt)
    if report.method == "microbenchmark" and fmt in HUMAN_FORMATS:
        con = obj.connect(read_only=True)
        try:
            columns, rows = cal.eq4_points(con, report.gpu_id)
        finally:
            con.close()
        echo("\neq. 4, DRAM latency against core_f/mem_f: each pointer-chase run, the "
             "fitted line and paper 003's GTX 980 line (core cycles):")
        output_rows(columns, rows, fmt)


def _calibrate_simulated(obj: Context, gpu: str, baseline, seed: int, jobs: int):
    """gpudb.train.calibrate.calibrate with a progress bar; Ctrl-C (SIGTERM, SIGHUP) keeps the runs
    that finished and exits 130 (143, 129), as `gpudb sweep` does."""
    from gpudb.train.calibrate import calibrate as run_calibration

    with run_progress("calibrating") as progress:
        return run_calibration(obj.path, gpu, baseline=baseline, seed=seed, jobs=jobs,
                               progress=progress)


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

    con = obj.connect(read_only=True)
    try:
        result = run_bench(con, repeat=repeat)
    finally:
        con.close()
    for line in result.lines():
        echo(line)


@bench.command()
@click.option("--factor", "factors", default="1,10,100", show_default=True,
              callback=lambda ctx, param, value: _numbers(int)(ctx, param, (value,)),
              help="Replication factors of the database's runs, e.g. 1,10,100.")
@click.option("--gpu", "gpu_id", help="GPU whose runs the queries read (default: the one "
                                      "with most fixed runs).")
@click.pass_obj
@friendly_errors
def scale(obj: Context, factors, gpu_id):
    """Cost of the main queries as the database grows: its runs replicated FACTOR times as new
    kernels (new run ids) into a temporary file, then the prediction view, the accuracy query
    of evaluate accuracy, crisp_gpudb's trace replay and best_setting timed at each size, with
    time per run, its ratio to the smallest factor, and peak memory (each factor in a fresh
    process). --db is only read.

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
    store-bound kernel, the best of --repeat runs each; for each, the SM-cycles the model
    processed per instruction and the time per processed SM-cycle; the memory-bound speed
    over the compute-bound one; and the jitted model against its pure-Python execution.

    Example:

        gpudb bench sim --gpu gtx480 --repeat 5
    """
    from sim.bench import bench_sim as run_bench

    for row in run_bench(gpu, suite, repeat):
        value = row["value"]
        shown = (f"{value / 1e6:,.2f} M" if value >= 1e5
                 else f"{value:,.3f}" if value < 10 else f"{value:,.1f}")
        echo(f"{row['metric']}: {shown} {row['unit']}")


def main() -> None:
    cli(prog_name="gpudb")


if __name__ == "__main__":
    main()
