"""Controller kind ``predictor``: predictor-driven DVFS controllers run inside the simulator
(docs/DESIGN.md section 5).

Between intervals the controller sees the counters of the interval just finished, predicts
its time at every core P-state with the chosen predictor and its energy with the decision
energy model (gpudb.control.energy), and sets the next interval's P-state through the shared
decision step (gpudb.control.guard: the papers' controller, or gpudb's guarded one); the
simulator charges the switching time. With scope 'chip' the controller's energy leaves out
the board power (other_j), as papers 000 and 004 count energy (schema/0011_chip_energy.sql).
The counters are turned into predictor inputs by the `sample` view's own expressions
(gpudb.control.sample), so the controller decides as the trace replay
(queries/controller_replay.sql) would on the same interval; where the two differ is that the
closed loop runs the next interval at the chosen setting from the machine state the previous one
left, while replay splices in the fixed run.
"""

from __future__ import annotations

import numpy as np

from gpudb.control.energy import predict_energy, score
from gpudb.control.guard import GUARDED, PAPER, Guard, GuardState, decide
from gpudb.control.kinds import ControllerKind, Job
from gpudb.control.sample import run_columns, sample_columns
from gpudb.predictors import get, names
from sim.config import GpuConfig
from sim.model import Setting
from sim.sweep import GivenController


def predict_times(predictor: str, row: dict, targets_mhz: np.ndarray,
                  run: dict) -> np.ndarray:
    """Predicted time (ns) at each target core MHz of the interval in ``row`` (a simulator
    row: table interval's columns), by the registered predictor's formula on the sample
    view's columns (gpudb.control.sample, from the view's own SQL; ``run``: its
    run_columns for the GPU). The interval is taken without the switch that opened it, as a
    fixed run would have measured its work."""
    work = dict(row, run_id=None, time_ns=row["time_ns"] - row["switch_ns"])
    base = np.full(len(targets_mhz), row["core_mhz"])
    return get(predictor).predict(sample_columns(work, run), base, targets_mhz)


class PredictorController:
    """Sets the core P-state of the next interval with the shared decision step
    (gpudb.control.guard.decide); memory clock and CTA limit stay."""

    def __init__(self, gpu: GpuConfig, predictor: str, objective: str,
                 max_loss_pct: float = 1.0, guard: Guard = GUARDED, scope: str = "run"):
        if predictor not in names(replayable=True):
            raise ValueError(f"unknown predictor {predictor!r} (known: "
                             f"{', '.join(names(replayable=True))})")
        score(objective, 0.0, 0.0)  # validates
        if scope not in ("run", "chip"):
            raise ValueError(f"unknown energy scope {scope!r} (known: run, chip)")
        self.chip = scope == "chip"
        self.gpu = gpu
        self.predictor = predictor
        self.objective = objective
        self.max_loss = max_loss_pct / 100.0
        self.guard = guard
        self.name = "closed_loop"          # the run's policy; the columns say which
        self.columns = {"predictor": predictor, "objective": objective,
                        "max_loss_pct": max_loss_pct if objective == "energy_perf" else None,
                        "guard": guard.name, **({"variant": "chip"} if self.chip else {})}
        # the run scope's key is the one runs had before scopes, so their run_ids stay
        self.run_key = (_run_key(predictor, objective, max_loss_pct, guard)
                        + ("/chip" if self.chip else ""))
        self.mhz = np.array(gpu.core_mhz, dtype=float)
        self.volts = np.array(gpu.core_v, dtype=float)
        self.run = run_columns(gpu.raw, gpu.nominal_mem_mhz)
        self.state = GuardState(top=len(self.mhz) - 1)

    def decide(self, idx: int, row: dict, setting: Setting) -> Setting:
        if idx == 0:
            self.state = GuardState(top=len(self.mhz) - 1)   # a new kernel
        # The interval's work without the switch that opened it: time, and the static, DRAM
        # background and board energy burnt during the switch (as replay's fixed runs have).
        time_ns = row["time_ns"] - row["switch_ns"]
        work = time_ns / row["time_ns"]
        cd, dd = row["core_dynamic_j"], row["dram_dynamic_j"]
        cs, ds, ot = (row[c] * work for c in ("core_static_j", "dram_static_j", "other_j"))
        if self.chip:
            ot = 0.0   # the board's energy is outside the chip's scope
        cur_v = self.gpu.core_voltage(row["core_mhz"])
        times = predict_times(self.predictor, row, self.mhz, self.run)
        energies = predict_energy(cd, cs, dd, ds, ot, time_ns, cur_v, times, self.volts)
        switch_j = (cs * self.volts / cur_v + ds + ot) / time_ns * self.gpu.switch_ns
        self.state.cur = int(np.flatnonzero(self.mhz == row["core_mhz"])[0])
        nxt = decide(self.state, self.guard, self.objective, self.max_loss, idx, time_ns,
                     cd + cs + dd + ds + ot, times, energies, self.gpu.switch_ns, switch_j)
        return Setting(float(self.mhz[nxt]), setting.mem_mhz, setting.ctas_per_sm)


def _run_key(predictor: str, objective: str, max_loss_pct: float, guard: Guard) -> str:
    """What stands for the controller in the run_id hash: the string runs were stored with as
    their policy before migration 0006 (so their run_ids stay valid), and the guard's
    parameters, not only its preset name."""
    name = f"{predictor}/{objective}"
    if objective == "energy_perf":
        name += f"@{max_loss_pct:g}%"
    if guard != PAPER:
        name += f"/{guard.name}"
    return f"{name}#{guard}"


def plan(gpu: GpuConfig, kernels: list, predictor: str, objective: str,
         max_loss_pct: float = 1.0, interval_instructions: int | None = None,
         guard: Guard = GUARDED, scope: str = "run") -> list[Job]:
    """Each kernel under the controller from the highest core P-state at the nominal memory
    clock (as the fixed runs the replay reads), stored with policy 'closed_loop' and the
    controller in columns predictor, objective, max_loss_pct and guard (variant 'chip' when it
    minimised the chip's energy)."""
    controller = PredictorController(gpu, predictor, objective, max_loss_pct, guard, scope)
    return [Job(spec, max(gpu.core_mhz), gpu.nominal_mem_mhz, controller.run_key,
                GivenController(controller), controller.columns,
                interval_instructions=interval_instructions)
            for spec in kernels]


KIND = ControllerKind(
    "predictor", "predictor-driven DVFS through the guard's step",
    "paper 000 section 4, paper 004 section 4.2.3", plan,
    lambda gpu, suite: (f"closed-loop-{gpu.name}-{suite.name}",
                        f"closed-loop DVFS control on {gpu.name}, suite {suite.name}"))


def run_closed_loop(db_path, gpu: str, suite: str, kernels: list[str] | None, predictor: str,
                    objective: str, max_loss_pct: float = 1.0, experiment: str | None = None,
                    interval_instructions: int | None = None, progress=None,
                    guard: Guard = GUARDED, seed: int = 0, scope: str = "run") -> list[dict]:
    """:func:`gpudb.control.runner.run` with this kind: each kernel under the controller
    with the simulator's ``seed``, skipping runs already stored; returns their rows."""
    from gpudb.control.runner import run

    return run(db_path, KIND.name, gpu, suite, kernels, seed=seed, experiment=experiment,
               progress=progress, predictor=predictor, objective=objective,
               max_loss_pct=max_loss_pct, interval_instructions=interval_instructions,
               guard=guard, scope=scope)
