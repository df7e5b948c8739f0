"""The dynamic optimal as the simulator runs it: an achievable bound beside the stitched one.

``dynamic_optimal`` (gpudb.control.offline, paper 004 section 4.3) takes each interval's
outcome from the fixed run at the chosen clock, with hindsight and no switching: a drop to
a low clock in a kernel's last intervals is scored with the time of a run that was at that
clock all along, and each interval's noise at every clock is harvested. Here its schedule is
executed in the closed loop (sim.model.Simulation: each interval from the state the previous
one left, paying the switching time) by a controller that only follows it, and the run is
stored like any other (table run: policy 'closed_loop', predictor 'dynamic_optimal', the
objective and energy_perf's bound in their columns, the scope the schedule minimised in
variant; the schedule in the run_id). Its totals are control_result's policy
'dynamic_optimal_run'; its settings list is the schedule, as run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import duckdb

from gpudb.control.offline import (
    KernelOutcomes,
    PolicyResult,
    dynamic_optimal,
    in_scope,
    load_outcomes,
)
from sim.model import Setting

POLICY = "dynamic_optimal_run"


class ScheduleController:
    """A sim.model.Controller that runs interval i at ``schedule_mhz[i]`` (core MHz); memory
    clock and CTA limit stay. The run starts at schedule_mhz[0]."""

    name = "closed_loop"

    def __init__(self, schedule_mhz: list[float], objective: str, max_loss_pct: float,
                 scope: str):
        self.schedule_mhz = [float(m) for m in schedule_mhz]
        bound = f"@{max_loss_pct:g}%" if objective == "energy_perf" else ""
        # the schedule enters the run_id: another schedule is another run
        self.run_key = (f"dynamic_optimal/{objective}{bound}/{scope}#"
                        + ",".join(f"{m:g}" for m in self.schedule_mhz))
        self.columns = {"predictor": "dynamic_optimal", "objective": objective,
                        "max_loss_pct": max_loss_pct if objective == "energy_perf" else None,
                        "guard": None, "variant": scope}

    def decide(self, idx: int, row: dict, setting: Setting) -> Setting:
        nxt = self.schedule_mhz[min(idx + 1, len(self.schedule_mhz) - 1)]
        return Setting(nxt, setting.mem_mhz, setting.ctas_per_sm)


@dataclass
class Job:
    """One kernel's schedule and what its closed-loop run needs (the fixed runs' family)."""
    outcomes: KernelOutcomes
    schedule: PolicyResult
    controller: ScheduleController
    run_id: str | None   # None: the GPU is not the shipped simulator configuration
    simulation: dict


def jobs(con: duckdb.DuckDBPyConnection, objective: str, max_loss_pct: float = 1.0,
         gpu_id: str | None = None, suite: str | None = None, scope: str = "run",
         seed: int | None = None) -> list[Job]:
    """The dynamic optimal's schedule of every kernel in control_interval (objective and
    energy scope as given; one seed's runs, None: each kernel's lowest), with the run_id its
    closed-loop run has (run with the seed of the fixed runs it was found on)."""
    from sim.config import available, kernel_from_table, load_gpu
    from sim.model import run_id

    out = []
    gpus: dict[str, object] = {}
    kernels = load_outcomes(con, gpu_id, suite, seed)
    # Every kernel's family (one of its fixed runs of that seed) in one statement: read once
    # per kernel, the control_interval view cost ~25 ms a time, 4.6 s of a warm `gpudb demo`
    # on the default suite (29 kernels, 6 calls).
    families = {(row[0], row[1], row[2]): row[3:] for row in con.execute("""
        SELECT f.gpu_id, f.kernel_id, f.seed, r.mem_mhz, r.n_sm, r.ctas_per_sm,
               r.interval_instructions, r.seed, k.suite, k.spec, g.config,
               coalesce(r.engine, 'reference')
        FROM (SELECT gpu_id, kernel_id, seed, any_value(run_id) AS run_id
              FROM control_interval
              WHERE (CAST(? AS TEXT) IS NULL OR gpu_id = CAST(? AS TEXT))
              GROUP BY gpu_id, kernel_id, seed) AS f
        JOIN run AS r USING (run_id) JOIN kernel AS k ON k.kernel_id = r.kernel_id
        JOIN gpu AS g ON g.gpu_id = r.gpu_id""", [gpu_id, gpu_id]).fetchall()} \
        if kernels else {}
    for k in kernels:
        schedule = dynamic_optimal(in_scope(k, scope), objective, max_loss_pct / 100.0)
        controller = ScheduleController(schedule.settings, objective, max_loss_pct, scope)
        mem, n_sm, ctas, interval, seed, kernel_suite, spec, config, engine = \
            families[(k.gpu_id, k.kernel_id, k.seed)]
        if k.gpu_id not in gpus:
            # only a GPU whose stored configuration is the shipped one can be run again
            gpu = load_gpu(k.gpu_id) if k.gpu_id in available("gpus") else None
            gpus[k.gpu_id] = gpu if gpu is not None and gpu.raw == json.loads(config) else None
        gpu = gpus[k.gpu_id]
        rid = None
        sim: dict = {}
        if gpu is not None and spec is not None:
            kernel = kernel_from_table(json.loads(spec), kernel_suite)
            sim = {"gpu": gpu, "kernel": kernel, "core_mhz": schedule.settings[0],
                   "mem_mhz": mem, "n_sm": n_sm, "ctas_per_sm": ctas,
                   "interval_instructions": interval, "seed": seed, "engine": engine}
            # the closed loop runs on the engine of the fixed runs its schedule was found on
            rid = run_id(gpu, kernel, schedule.settings[0], mem, n_sm, ctas, interval, seed,
                         controller.run_key, engine=engine)
        out.append(Job(k, schedule, controller, rid, sim))
    return out


def simulate(con: duckdb.DuckDBPyConnection, objectives: Iterable[str], max_loss_pct: float = 1.0,
             gpu_id: str | None = None, suite: str | None = None,
             scopes: Iterable[str] = ("run", "chip"),
             progress: Callable[[int, int], None] | None = None,
             seeds: Iterable[int | None] = (None,), workers: int = 1) -> tuple[int, int]:
    """Run in the closed loop every dynamic-optimal schedule (each objective and scope) whose
    run is not stored yet, in ``workers`` processes, through the one runner
    (gpudb.simulate.runner: each run stored whole as it finishes; an interrupted call keeps
    those and raises its RunsInterrupted). Returns (runs simulated, schedules that cannot be
    run: GPUs other than a shipped simulator configuration)."""
    from gpudb.simulate.runner import Planned, simulate_and_store
    from sim.sweep import GivenController, Task

    todo = [j for seed in seeds for scope in scopes for objective in objectives
            for j in jobs(con, objective, max_loss_pct, gpu_id, suite, scope, seed)]
    runnable = [j for j in todo if j.run_id is not None]
    planned = [
        Planned(Task(s["gpu"], s["kernel"], float(s["core_mhz"]), float(s["mem_mhz"]),
                     int(s["n_sm"]), s["ctas_per_sm"], int(s["interval_instructions"]),
                     int(s["seed"]), job.run_id, GivenController(job.controller),
                     engine=s["engine"]),
                f"dynamic-optimal-run-{s['gpu'].name}-{s['kernel'].suite}",
                f"the dynamic optimal's schedules run in the closed loop on {s['gpu'].name}, "
                f"suite {s['kernel'].suite}", job.controller.columns)
        for job in runnable for s in (job.simulation,)]
    summary = simulate_and_store(
        con, planned, workers, progress and (lambda done, total, _: progress(done, total)))
    return summary.runs_added, len(todo) - len(runnable)


def results(con: duckdb.DuckDBPyConnection, objective: str, max_loss_pct: float = 1.0,
            gpu_id: str | None = None, suite: str | None = None,
            scope: str = "run", seed: int | None = None) -> list[PolicyResult]:
    """Policy 'dynamic_optimal_run' of every kernel whose schedule's run is stored: time and
    energy (run and chip scope) of the simulated run, its settings interval by interval."""
    found = {j.run_id: j for j in jobs(con, objective, max_loss_pct, gpu_id, suite, scope, seed)
             if j.run_id is not None}
    if not found:
        return []
    rows = con.execute("""
        SELECT r.run_id, r.time_ns, r.energy_j,
               sum(i.core_dynamic_j + i.core_static_j + i.dram_dynamic_j + i.dram_static_j),
               list(i.core_mhz ORDER BY i.idx), count(*) FILTER (WHERE i.switch_ns > 0)
        FROM run AS r JOIN interval AS i USING (run_id)
        WHERE r.run_id IN (SELECT unnest(?))
        GROUP BY r.run_id, r.time_ns, r.energy_j""", [list(found)]).fetchall()
    out = []
    for rid, time_ns, energy_j, chip_j, settings, switches in rows:
        k = found[rid].outcomes
        out.append(PolicyResult(k.gpu_id, k.kernel_id, POLICY, [float(m) for m in settings],
                                float(time_ns), float(energy_j), int(switches), float(chip_j),
                                seed=k.seed))
    return out
