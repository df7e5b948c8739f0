"""``gpudb demo``'s results on a simulated GPU: the closed-loop runs and the replay it needs,
then the short tables beside paper 000's figures and the figures next to the database
(gpudb.present.demo builds each); the caller prints them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gpudb.analysis.evaluate import Scope, Table
from gpudb.control.energy import OBJECTIVES
from gpudb.store import db
from gpudb.store.base import refuse_read_only
from gpudb.store.db import GpudbError
from gpudb.store.result import Tables
from gpudb.workflows.evaluate import (
    Progress,
    control_savings,
    counted_steps,
    predictor_accuracy,
    steps_of,
)

# the objectives besides EDP, replayed in the chip's energy scope (paper 000's)
OTHER_OBJECTIVES = [objective for objective in OBJECTIVES if objective != "edp"]


@dataclass
class DemoResults:
    accuracy: Table      # demo.accuracy_summary: MAPE % per predictor and target
    savings: Table       # demo.savings_summary: EDP savings % with the paper's
    objectives: Table    # demo.objectives_summary: every objective
    length: str | None   # the kernels' length line
    figures: list        # (figure name, params) as demo.demo_figures gives them
    written: list[Path]  # the figure files written (empty when none could be)
    skipped: str | None  # why no figure was written


def demo_results(path: str, scope: Scope, *, read_only: bool,
                 progress: Progress | None = None) -> DemoResults:
    """The simulated GPU's accuracy and savings of one seed (the lowest: the demo sweeps
    seed 0): the EDP schedule run in the closed loop ("dynamic optimal runs"), the replay of
    every objective ("replaying"; EDP in both energy scopes, the figures count the run's, the
    others in the chip's), the tables in the chip's scope (paper 000's), and the figures
    written to gpudb-figures/ beside the database. ``progress``: gpudb.workflows.evaluate's
    protocol."""
    from gpudb.analysis.evaluate import accuracy_tables, control_table, interval_seeds
    from gpudb.control import schedule_run
    from gpudb.control.results import REPLAY_PREDICTORS
    from gpudb.control.results import evaluate as evaluate_policies
    from gpudb.present import demo

    con = db.connect(path, read_only=read_only)
    try:
        seed = (interval_seeds(con, scope) or [None])[0]
        per_predictor, _ = accuracy_tables(con, scope.gpu, scope.suite, None, "run", seed)
        refuse_read_only(read_only, "gpudb demo (into control_result)")
        # the achievable bound of the savings table: the EDP schedule run in the closed loop
        schedule_run.simulate(con, ["edp"], 1.0, scope.gpu, scope.suite, ("chip",),
                              progress=steps_of(progress, "dynamic optimal runs"),
                              seeds=[seed], workers=os.cpu_count() or 1)
        steps = (2 + len(OTHER_OBJECTIVES)) * (2 * len(REPLAY_PREDICTORS) + 1)
        step = counted_steps(steps_of(progress, "replaying"), steps)
        evaluate_policies(con, REPLAY_PREDICTORS, ["edp"], 1.0, scope.gpu, scope.suite,
                          progress=step, scopes=("chip", "run"), seeds=[seed])
        evaluate_policies(con, REPLAY_PREDICTORS, OTHER_OBJECTIVES, 1.0, scope.gpu,
                          scope.suite, progress=step, scopes=("chip",), seeds=[seed])
        # compared with paper 000 in its energy scope: the chip's, no board power
        by_objective = {objective: control_table(con, scope.gpu, scope.suite, objective, 1.0,
                                                 "chip", seed)
                        for objective in ("edp", *OTHER_OBJECTIVES)}
        length = demo.kernel_length_line(con, scope.gpu, scope.suite, seed,
                                         "chip scope (no board power, papers 000 and 004's)")
        kernel = demo.demo_kernel(con, scope.suite)
        figures = demo.demo_figures(scope.gpu, scope.suite, kernel)
        folder = Path(path).resolve().parent / demo.FIGURES_DIR
        skipped = None
        try:
            written = demo.write_figures(con, folder, figures)
        except GpudbError as missing:
            written, skipped = [], str(missing)
    finally:
        con.close()
    return DemoResults(demo.accuracy_summary(per_predictor),
                       demo.savings_summary(by_objective["edp"]),
                       demo.objectives_summary(by_objective), length, figures, written,
                       skipped)


def measured_demo(path: str, scope: Scope, *, read_only: bool,
                  progress: Progress | None = None) -> list[Tables]:
    """The demo on a measured GPU: evaluate accuracy's tables of paper 000 from the highest
    core clock (whole runs), then evaluate control's EDP savings (1% slowdown bound for
    energy_perf, unused here), in print order."""
    return [predictor_accuracy(path, scope, None, "run"),
            control_savings(path, scope, ["edp"], 1.0, read_only=read_only,
                            progress=progress)]


def hint_inputs(path: str, scope: Scope) -> tuple[str | None, float]:
    """What the demo's closing hints name: the kernel its clock-trace figure shows (None for a
    measured GPU) and the GPU's highest fixed core clock (MHz), from the database at path."""
    from gpudb.present import demo

    con = db.connect(path, read_only=True)
    try:
        kernel = demo.demo_kernel(con, scope.suite) if scope.simulated else None
        top_mhz = db.first_row(con.execute(
            "SELECT max(core_mhz) FROM run WHERE gpu_id = ? AND policy = 'fixed'",
            [scope.gpu]))[0]
    finally:
        con.close()
    return kernel, top_mhz
