"""The `gpudb` command line: one click group; commands open the database, call the library
and print through :func:`output_rows`. Errors are one line and a non-zero exit."""

from __future__ import annotations

import contextlib
import functools
import math
import sys
import time
from collections.abc import Iterator

import click
import duckdb

from gpudb.api import Database
from gpudb.control.energy import OBJECTIVES
from gpudb.present.output import (
    FORMATS,
    error_line,
    format_rows,
    json_records,
    printable,
)
from gpudb.store import db, trust
from gpudb.store.base import refuse_read_only
from gpudb.store.db import GpudbError
from sim import ENGINES


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

    @contextlib.contextmanager
    def connection(self, read_only: bool | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """The database opened for the block and closed after it, however it ends: the one
        open/close of the commands."""
        con = self.connect(read_only)
        try:
            yield con
        finally:
            con.close()

    @contextlib.contextmanager
    def database(self, read_only: bool | None = None) -> Iterator[Database]:
        """The file opened through the Python API (gpudb.api.Database, the one connect) for
        the block and closed after it: what the commands call."""
        with Database(self.path, read_only=self.read_only if read_only is None
                      else read_only) as database:
            yield database

    def require_writable(self, what: str) -> None:
        """A command about to write says so and stops when read-only."""
        refuse_read_only(self.read_only, what)


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
            if isinstance(exc, duckdb.InterruptException) and not db.ran_over():
                # the signal watcher stopped the statement (db.interrupt_on_signals): Ctrl-C,
                # SIGTERM or SIGHUP landing inside DuckDB, outside any transaction block that
                # would have turned it back into the KeyboardInterrupt it was
                raise KeyboardInterrupt from None
            raise _OneLineError(db.ran_over() or db.damage_line(exc) or error_line(exc)
                                ) from None
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


def gpu_name(ctx, param, value):
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
        "--gpu", default="gtx480", show_default=True, callback=gpu_name,
        help="Simulated GPU: a shipped configuration (gtx480, gtx980, hd7970, "
             "gtx1080ti-sim); give it when the database holds measured runs.")(wrapper)


def refuse_unasked_simulation(obj: Context, evaluates: bool = False) -> None:
    """Stop (usage error, exit 2) a command that may simulate into the database when --gpu
    (and --gpu-config) was left at its default and the file holds measured runs: a
    forgotten --gpu must not write synthetic gtx480 runs beside measured ones. Reads the file
    read-only, so a refused command leaves it byte for byte as it was. ``evaluates``: the
    command takes a measured GPU too, which the line then suggests."""
    from pathlib import Path

    from gpudb.store.runs import measured_gpus

    ctx = click.get_current_context()
    defaults = (None, click.core.ParameterSource.DEFAULT,
                click.core.ParameterSource.DEFAULT_MAP)
    if any(ctx.get_parameter_source(name) not in defaults for name in ("gpu", "gpu_config")
           if name in ctx.params):
        return
    if not Path(obj.path).exists():
        return
    try:
        con = obj.connect(read_only=True)
    except GpudbError:
        # an older schema opens read-only only once migrated, which the command does anyway
        con = obj.connect()
    try:
        gpus = measured_gpus(con)
    finally:
        con.close()
    if gpus:
        which = f"--gpu {gpus[0]} to evaluate its runs, or " if evaluates else ""
        raise click.UsageError(
            f"--gpu not given and {obj.path} holds measured runs ({', '.join(gpus)}): give "
            f"{which}--gpu gtx480 to simulate into this file")


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
        tables = click.get_current_context().meta.setdefault(JSON_TABLES, {})
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
# Of those, the commands whose work is gpudb's own evaluation of the runs, not what a file
# decides (the trust model keeps a file's views and macros out of them): bounded only by a
# --timeout-s or GPUDB_TIMEOUT_S the user gives. The default cut the demo's paper-scale
# `evaluate control` after 25 minutes of simulation, discarding it (issue 41 item 5).
OWN_WORK = frozenset({"evaluate", "materialize", "train"})


@contextlib.contextmanager
def exit_on_stop():
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
def exit_on_interrupt():
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
def build_aside(db_path):
    """trust.built_aside, its one failure of its own (the path taken meanwhile) one line."""
    try:
        with trust.built_aside(db_path):
            yield
    except GpudbError as exc:
        raise _OneLineError(str(exc)) from None


JSON_TABLES = "gpudb.json_tables"   # key in click's context meta, shared by nested commands


def number_list(kind, least: int | None = 1, most: int | None = 2**31 - 1):
    """Parse '700,600' (or a repeated option) into a list of numbers: finite floats, or
    integers in least..most (an INTEGER column's range by default; None: the caller checks)."""
    def convert(ctx, param, values):
        out = []
        for value in values:
            parts = [part for part in str(value).split(",") if part.strip()]
            if not parts:  # `--core-mhz "$CLOCKS"` with CLOCKS unset: not every clock
                raise click.BadParameter(f"{value!r} holds no number")
            for part in parts:
                try:
                    out.append(kind(part))
                except ValueError:
                    raise click.BadParameter(f"{part!r} is not a number") from None
                if kind is int and least is not None and not least <= out[-1] <= most:
                    raise click.BadParameter(f"{part.strip()} is not in {least}..{most:,}")
                if kind is float and not math.isfinite(out[-1]):
                    raise click.BadParameter(f"{part.strip()} is not a finite number")
        return out or None
    return convert


class Finite(click.FloatRange):
    """click's FloatRange without NaN and infinities, which it lets through (NaN compares
    false with either bound): `--timeout-s inf` printed an OverflowError traceback and ran
    unbounded, `--max-loss-pct nan` answered empty (issue 41 items 4 and 6)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class Setting(click.ParamType):
    """A clock setting on the command line, the one parser of every base or baseline option:
    'CORE_MHZ,MEM_MHZ' as (core MHz, memory MHz), or with ``sms`` 'SMS,CORE_MHZ,MEM_MHZ' as
    (SM count, core MHz, memory MHz); ``words`` (e.g. 'all') pass through as themselves.
    Clocks are finite and > 0, an SM count a whole number > 0."""

    name = "setting"

    def __init__(self, sms: bool = False, words: tuple[str, ...] = ()):
        self.sms, self.words = sms, words
        self.metavar = "SMS,CORE_MHZ,MEM_MHZ" if sms else "CORE_MHZ,MEM_MHZ"

    def get_metavar(self, param, ctx=None) -> str:   # click 8.2 passes ctx
        return self.metavar

    def convert(self, value, param, ctx):
        if not isinstance(value, str) or value in self.words:
            return value
        example = "32,1000,1375" if self.sms else "700,700"
        try:
            numbers = [float(part) for part in value.split(",")]
        except ValueError:
            numbers = []
        good = (len(numbers) == len(self.metavar.split(","))
                and all(math.isfinite(x) and x > 0 for x in numbers)
                and (not self.sms or numbers[0].is_integer()))
        if not good:
            either = " or ".join(repr(w) for w in self.words)
            self.fail(f"{value!r} is not {self.metavar} (e.g. {example})"
                      + (f" or {either}" if either else ""), param, ctx)
        return (int(numbers[0]), *numbers[1:]) if self.sms else tuple(numbers)


def seed_list(ctx, param, values):
    """Parse '0,1,2' (or a repeated option) into a list of distinct seeds >= 0, in order."""
    seeds = number_list(int, least=None, most=None)(ctx, param, values)
    if seeds is None:
        return None
    for seed in seeds:
        if not 0 <= seed <= 2**63 - 1:
            raise click.BadParameter(f"seeds are integers in 0..{2**63 - 1:,} (a BIGINT), got "
                                     f"{seed:,}")
    return list(dict.fromkeys(seeds))


def seeds_option(command):
    """--seeds of the evaluations: each seed's runs evaluated on their own, then each figure's
    mean over the seeds with a 95% interval."""
    return click.option(
        "--seeds", multiple=True, callback=seed_list, metavar="LIST",
        help="Seeds to evaluate, e.g. 0,1,2: each figure on each seed's runs alone, reported "
             "as the mean over the seeds and the half-width of its 95% interval "
             "(<figure>_ci95 columns: Student's t with n-1 degrees of freedom over the "
             "per-seed figures; 'seeds' counts them); a verdict against a paper counts the "
             "paper's figure inside the interval as a match. Seeds the database lacks are "
             "simulated first (simulated GPUs). Default: every seed the database has, "
             "pooled.")(command)


def engine_option(of: str = "", note: str = ""):
    """--engine of the commands that simulate: the simulator engine (sim.ENGINES), by
    default the engine of the database's runs."""
    return click.option(
        "--engine", type=click.Choice(ENGINES),
        help=f"Simulator engine{of}: 'reference' (the cycle engine) or 'sampled' (steady "
             "stretches copied from detailed windows; faster, approximate: `gpudb bench "
             f"engine` measures it{note}). Default: the engine of the database's runs, else "
             "reference. A database holds one engine's runs.")


def evaluation_options(command):
    """--gpu and --suite of the commands that evaluate what the database holds."""
    command = click.option(
        "--suite", default=None,
        help="Kernel suite (simulated GPUs: a shipped name or a suite file, default "
             "'default'; measured GPUs: a suite name, default every kernel).")(command)
    return click.option(
        "--gpu", default="gtx480", show_default=True, callback=gpu_name,
        help="GPU: a gpu_id in the database or a shipped simulator configuration; give it "
             "when the database holds measured runs.")(command)


# the objectives a DVFS controller minimises, as a choice (gpudb.control.energy names them)
OBJECTIVE_CHOICE = click.Choice(list(OBJECTIVES))


_LOG_EVERY_S = 5.0   # seconds between progress lines when stderr is not a terminal


def eta_text(done: int, total: int, elapsed_s: float) -> str:
    """'about N s left' (or min) at the mean pace so far; '' before the first item is done
    or once all are."""
    if done <= 0 or done >= total:
        return ""
    left = elapsed_s / done * (total - done)
    return f"about {left:.0f} s left" if left < 120 else f"about {left / 60:.0f} min left"


@contextlib.contextmanager
def run_progress(label: str, rate: bool = False, unit: str = "runs",
                 every_s: float = _LOG_EVERY_S):
    """A ``progress(done, total[, instructions])`` callback showing how far a long step is,
    with its ETA, on stderr: a click bar on a terminal (with the simulation rate when
    ``rate``); elsewhere (a log, CI, nohup, where click draws no bar) a line every
    ``every_s`` seconds and at the end, 'LABEL: DONE/TOTAL UNIT, N s, about M s left'. A
    simulation stopped by Ctrl-C, SIGTERM or SIGHUP (gpudb.simulate.runner.RunsInterrupted)
    says what it kept and exits 130, 143 or 129."""
    from gpudb.simulate.runner import RunsInterrupted

    state = {"bar": None, "done": 0, "start": time.perf_counter(), "instructions": 0,
             "said": time.perf_counter()}
    terminal = sys.stderr.isatty()

    def progress(done, total, instructions=None):
        if state["done"] == 0 and done == 0:
            # the clock starts at the step's first report, not where the block began (a
            # replay's bar is opened with the closed-loop runs' that come before it)
            state["start"] = state["said"] = time.perf_counter()
        if instructions is not None:
            state["instructions"] = instructions
        if not terminal:
            now = time.perf_counter()
            if total and (now - state["said"] >= every_s or done == total):
                state["said"] = now
                elapsed = now - state["start"]
                eta = eta_text(done, total, elapsed)
                echo(f"{label}: {done}/{total} {unit}" + (f", {_rate(state)}" if rate else "")
                     + f", {elapsed:.0f} s" + (f", {eta}" if eta else ""), err=True)
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
    except RunsInterrupted as stop:
        close()
        exit_interrupted(stop)
    finally:
        close()


@contextlib.contextmanager
def click_bar(label: str):
    """A ``progress(done, total)`` callback drawing click's bar on stderr, opened at the first
    report (once the work has been planned) and closed with the block."""
    with contextlib.ExitStack() as stack:
        bars = []

        def progress(done, total):
            if not bars:
                bars.append(stack.enter_context(click.progressbar(
                    length=total, label=label, file=sys.stderr, show_pos=True)))
            bars[0].update(done - bars[0].pos)
        yield progress


def _rate(state) -> str:
    elapsed = time.perf_counter() - state["start"]
    return f"{state['instructions'] / max(elapsed, 1e-9) / 1e6:.1f} M warp instr/s"


def exit_interrupted(stop) -> None:
    """A simulation stopped by a signal (gpudb.simulate.runner.RunsInterrupted): what it kept,
    and exit 128 + the signal's number."""
    import signal

    echo(f"interrupted ({signal.Signals(stop.signum).name}): "
         f"{stop.summary['runs_added']} runs written and kept; "
         "run the same command again to resume", err=True)
    sys.exit(128 + stop.signum)


# a workflow step's unit and whether its bar shows the simulation rate (run_progress)
_STEP_UNIT = {"replaying": "steps"}
_RATE_STEPS = frozenset({"simulating"})


def echo_compiling() -> None:
    """Before a sweep: the simulator's compilation, where it has not been compiled yet."""
    from sim._jit_cache import cache_root, compiled

    if compiled() is False:
        # the first run after an install compiles the simulator before any run can finish:
        # without this line a log shows "simulating" and nothing else for a minute or more
        echo("compiling the simulator (numba, once per installed version: about 40 s of "
             f"one core, minutes on a busy machine; kept in {cache_root()})", err=True)


def echo_swept(obj: Context, summary: dict) -> None:
    """After a sweep: what it simulated and what it found already done."""
    echo(f"{summary['runs_added']} runs simulated, {summary['runs_skipped']} already in "
         f"{obj.path}; {summary['instructions'] / 1e6:.1f} M warp instructions in "
         f"{summary['seconds']:.1f} s")


@contextlib.contextmanager
def workflow_progress(obj: Context, fmt: str = "table"):
    """A workflow's ``progress`` callback (gpudb.workflows.evaluate's protocol) on stderr: a
    :func:`run_progress` bar per counted step, opened at its first report; before a
    simulation its notice and the compiler's; after a sweep its summary line; notices in the
    human formats only."""
    from gpudb.present.output import HUMAN_FORMATS
    from gpudb.simulate.runner import RunsInterrupted

    with contextlib.ExitStack() as bars:
        opened: dict = {}

        def progress(step: str, *args) -> None:
            if step in ("sweeping", "swept", "notice"):
                bars.close()   # a line of its own, after the bars before it
                opened.clear()
            if step == "sweeping":
                if args[0]:
                    echo(args[0], err=True)
                echo_compiling()
            elif step == "swept":
                echo_swept(obj, args[0])
            elif step == "notice":
                if fmt in HUMAN_FORMATS:
                    echo(args[0], err=True)
            else:
                if step not in opened:
                    opened[step] = bars.enter_context(run_progress(
                        step, rate=step in _RATE_STEPS, unit=_STEP_UNIT.get(step, "runs")))
                opened[step](*args)

        try:
            yield progress
        except RunsInterrupted as stop:   # stopped before any bar opened
            bars.close()
            exit_interrupted(stop)


def print_tables(tables, fmt: str, named: bool = True, notes: str = "human") -> None:
    """A workflow's gpudb.store.result.Tables: in the human formats its notes, then each table
    under its caption and over its footnote; in the others the tables alone, by name (bare
    when not ``named``: a command of one table). ``notes`` 'always': the notes in every
    format, on stderr in the machine-read ones (a trained model's id)."""
    from gpudb.present.output import HUMAN_FORMATS

    human = fmt in HUMAN_FORMATS
    if human or notes == "always":
        for note in tables.notes:
            echo(note, err=not human)
    for name, table in tables.items():
        if human and tables.captions.get(name):
            echo(tables.captions[name])
        output_rows(table.columns, table.rows, fmt, name if named else None)
        if human and tables.footnotes.get(name):
            echo(tables.footnotes[name])


def name_list(text: str | None) -> list[str] | None:
    """'a, b,c' as ['a', 'b', 'c'] (None for none given)."""
    return [n.strip() for n in text.split(",") if n.strip()] if text else None
