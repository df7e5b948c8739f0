"""``gpudb control``: run a DVFS controller in closed loop on the simulator and store its
runs.
"""

from __future__ import annotations

import click

from gpudb.cli.common import (
    OBJECTIVE_CHOICE,
    Context,
    Finite,
    click_bar,
    friendly_errors,
    output_rows,
    refuse_unasked_simulation,
    simulator_gpu_options,
    writes,
)
from gpudb.cli.main import cli
from gpudb.predictors import names as predictor_names

GUARD_CHOICE = click.Choice(["guarded", "paper"])


@cli.command()
@click.option("--predictor", required=True,
              type=click.Choice(list(predictor_names(replayable=True))),
              help="Performance model of the controller.")
@click.option("--guard", "guard_name", type=GUARD_CHOICE, default="guarded", show_default=True,
              help="gpudb's guarded controller step, or the papers' controller exactly.")
@click.option("--objective", type=OBJECTIVE_CHOICE, default="edp", show_default=True,
              help="What the controller minimises.")
@click.option("--max-loss-pct", type=Finite(0), default=1.0, show_default=True,
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

    \b
        gpudb control --predictor crisp_gpudb --objective edp --kernel twoslope_lm
        gpudb control --predictor crisp_gpudb --objective energy --scope chip
    """
    from gpudb.control.guard import GUARDS
    from gpudb.control.runner import run

    refuse_unasked_simulation(obj)
    with click_bar("controlling") as progress:
        rows = run(obj.path, "predictor", gpu, suite, list(kernels) or None, seed=seed,
                   progress=progress, predictor=predictor, objective=objective,
                   max_loss_pct=max_loss_pct, interval_instructions=interval_instructions,
                   guard=GUARDS[guard_name], scope=energy_scope)
    output_rows(["kernel_id", "time_ns", "energy_j", "run_id"],
                [(r["kernel_id"], r["time_ns"], r["energy_j"], r["run_id"]) for r in rows],
                "table")
