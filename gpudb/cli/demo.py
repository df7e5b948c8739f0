"""``gpudb demo``: the papers' headline results reproduced on the simulator, as short tables
with the papers' figures beside ours.
"""

from __future__ import annotations

import shlex
import textwrap

import click

from gpudb.cli.common import (
    Context,
    echo,
    engine_option,
    evaluation_options,
    friendly_errors,
    output_rows,
    print_tables,
    refuse_unasked_simulation,
    workflow_progress,
    writes,
)
from gpudb.cli.main import cli
from gpudb.store import db


@cli.command()
@evaluation_options
@engine_option(" of the runs it simulates (the sweep and the closed-loop runs)",
               "; `gpudb demo --suite long --engine sampled` is the paper scale in minutes")
@click.pass_obj
@friendly_errors
@writes
def demo(obj: Context, gpu, suite, engine):
    """The main job: simulate the default suite on gtx480 at every core P-state (reusing runs
    already in the database), then print the predictors' accuracy (paper 000 figure 8) and
    the DVFS controllers' EDP savings (figures 11-12) with the papers' figures beside ours.
    With a measured GPU in the database, the same tables on its runs.

    Example:

    \b
        gpudb demo            # into ./gpudb.duckdb; gpudb --db other.duckdb demo
        gpudb --db long.duckdb demo --suite long --engine sampled   # paper scale, approximate
    """
    from gpudb.workflows.demo import demo_results, measured_demo
    from gpudb.workflows.evaluate import evaluation_scope, suite_label

    refuse_unasked_simulation(obj, evaluates=True)
    with workflow_progress(obj) as progress:
        scope = evaluation_scope(obj.path, gpu, suite, read_only=obj.read_only,
                                 progress=progress, engine=engine)
    echo(f"gpudb demo: {suite_label(scope)} on {scope.gpu} into {obj.path}"
         + (" (synthetic kernels)" if scope.simulated else ""))
    with workflow_progress(obj) as progress:
        results = (demo_results if scope.simulated else measured_demo)(
            obj.path, scope, read_only=obj.read_only, progress=progress)
    if scope.simulated:
        _readable_demo(results)
    else:
        for tables in results:
            print_tables(tables, "table")
    _echo_next(obj, scope, gpu, suite)


def _readable_demo(results) -> None:
    """The simulated GPU's accuracy and savings as short tables beside paper 000's figures
    with a verdict, the figures in gpudb-figures/ next to the database, and a closing
    paragraph (gpudb.present.demo)."""
    from gpudb.present import demo

    accuracy, savings, objectives = results.accuracy, results.savings, results.objectives
    length, figures, written = results.length, results.figures, results.written

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
        echo(f"\nno figures: {results.skipped}")
    echo("\n" + textwrap.fill(demo.closing_paragraph(accuracy, savings), width=DEMO_WIDTH))


DEMO_WIDTH = 100   # the demo's lines and tables fit this many columns


def _echo_next(obj: Context, scope, gpu: str, suite: str | None) -> None:
    """The demo's closing lines: the commands to try next (:func:`_demo_hints`)."""
    hints = _demo_hints(obj, scope, gpu, suite)
    # the hints leave out --db: one export line instead keeps each within the demo's width
    export = ("" if obj.path == db.DEFAULT_DB
              else f" (first: export GPUDB_DB={shlex.quote(str(obj.path))})")
    echo(f"\nnext{export}:\n" + "\n".join(textwrap.indent(h, "  ") for h in hints))


def _demo_hints(obj: Context, scope, gpu: str, suite: str | None) -> list[str]:
    """The commands to try after the demo, for the GPU and suite it ran on (without --db: the
    demo prints the GPUDB_DB to export first), each with what it shows."""
    from gpudb.workflows.demo import hint_inputs

    where = (f" --gpu {gpu}" if gpu != "gtx480" else "") + (f" --suite {suite}" if suite else "")
    kernel, top_mhz = hint_inputs(obj.path, scope)
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
