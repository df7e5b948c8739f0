"""Predictor-driven DVFS controllers run inside the simulator (docs/DESIGN.md section 5).

Between intervals the controller sees the counters of the interval just finished, predicts
its time at every core P-state with the chosen predictor and its energy with the decision
energy model (gpudb.control.energy), and sets the next interval's P-state through the shared
decision step (gpudb.control.guard: the papers' controller, or gpudb's guarded one); the
simulator charges the switching time. With scope 'chip' the controller's energy leaves out
the board power (other_j), as papers 000 and 004 count energy (schema/0011_chip_energy.sql).
The counters are turned into predictor inputs exactly as the `sample` view does, so the
controller decides as the trace replay (queries/controller_replay.sql) would on the same
interval; where the two differ is that the closed loop runs the next interval at the chosen
setting from the machine state the previous one left, while replay splices in the fixed run.
"""

from __future__ import annotations

import numpy as np

from gpudb.control.energy import predict_energy, score
from gpudb.control.guard import GUARDED, PAPER, Guard, GuardState, decide
from gpudb.predictors import get, names
from sim.config import GpuConfig
from sim.model import Setting


def miss_latency_ns(gpu: GpuConfig) -> float:
    """MISS's fixed latency: the unloaded L1-miss-to-DRAM latency at the nominal memory
    clock (the same expression as the sample view)."""
    memory = gpu.raw["memory"]
    return (memory["l2_latency_ns"] + memory["dram_latency_ns"]
            + memory["dram_latency_mem_cycles"] * 1000.0 / gpu.nominal_mem_mhz)


def sample_columns(row: dict, miss_latency: float) -> dict[str, float]:
    """The ``sample`` view's predictor inputs (schema/views/20_sample.sql, per_interval) for
    one interval's counters; t_ns without the switch that opened the interval."""
    ns = 1000.0 / row["core_mhz"]
    # gpudb's slot counters are per SM that had work, as the sample view takes them
    active_ns = ns / (1.0 - row["sm_empty_cycles"] / row["cycles"])
    return {
        "t_ns": row["time_ns"] - row["switch_ns"],
        "stall_ns": row["stall_cycles"] * ns,
        "lead_ns": row["leading_load_cycles"] * ns,
        "miss_ns": row["miss_contributors"] * miss_latency,
        "crit_ns": row["crit_path_cycles"] * ns,
        "crisp_lcp_ns": row["crisp_lcp_cycles"] * ns,
        "crisp_lcp_comp_ns": (row["crisp_lcp_cycles"] - row["crisp_load_stall_cycles"]) * ns,
        "crisp_store_stall_ns": row["crisp_store_stall_cycles"] * ns,
        "crispl_lcp_ns": row["load_outstanding_cycles"] * ns,
        "crispl_lcp_comp_ns": row["load_overlap_compute_cycles"] * ns,
        "dram_min_ns": row["dram_min_ns"],
        "memory_min_ns": max(row["dram_min_ns"], row["mshr_min_ns"],
                             row["store_queue_min_ns"]),
        "prefetch_stall_ns": row["prefetch_stall_cycles"] * ns,
        "crisp_slot_lcp_ns": row["crisp_slot_lcp_cycles"] * active_ns,
        "crisp_slot_load_stall_ns": row["crisp_slot_load_stall_cycles"] * active_ns,
        "crisp_slot_store_stall_ns": row["crisp_slot_store_stall_cycles"] * active_ns,
        "crispl_slot_lcp_ns": row["load_outstanding_cycles"] * active_ns,
    }


def predict_times(predictor: str, row: dict, targets_mhz: np.ndarray,
                  miss_latency: float) -> np.ndarray:
    """Predicted time (ns) of the interval in `row` at each target core MHz, by the
    registered predictor's formula on the sample view's columns."""
    base = np.full(len(targets_mhz), row["core_mhz"])
    return get(predictor).predict(sample_columns(row, miss_latency), base, targets_mhz)


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
        self.miss_latency = miss_latency_ns(gpu)
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
        times = predict_times(self.predictor, row, self.mhz, self.miss_latency)
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


def run_closed_loop(db_path, gpu: str, suite: str, kernels: list[str] | None, predictor: str,
                    objective: str, max_loss_pct: float = 1.0, experiment: str | None = None,
                    interval_instructions: int | None = None, progress=None,
                    guard: Guard = GUARDED, seed: int = 0, scope: str = "run") -> list[dict]:
    """Run each kernel under the controller from the highest core P-state at the nominal
    memory clock with the simulator's ``seed`` (as the fixed runs the replay of that seed
    reads) and store the runs through gpudb.store.runs (skipping those already stored), with
    policy 'closed_loop' and the controller in columns predictor, objective, max_loss_pct
    and guard (variant 'chip' when it minimised the chip's energy); returns their rows."""
    import gpudb
    from gpudb.store.runs import ensure_experiment, ensure_gpu, ensure_kernels, write_run
    from sim.config import load_gpu, load_suite
    from sim.model import DEFAULT_INTERVAL_INSTRUCTIONS, Simulation, run_id

    g = load_gpu(gpu)
    s = load_suite(suite)
    specs = [s.kernel(k) for k in kernels] if kernels else list(s.kernels)
    controller = PredictorController(g, predictor, objective, max_loss_pct, guard, scope)
    top = max(g.core_mhz)
    interval = int(interval_instructions or DEFAULT_INTERVAL_INSTRUCTIONS)
    con = gpudb.connect(db_path)
    done = []
    if progress:
        progress(0, len(specs))
    try:
        ensure_gpu(con, g)
        ensure_kernels(con, specs)
        eid = ensure_experiment(con, experiment or f"closed-loop-{g.name}-{s.name}",
                                 f"closed-loop DVFS control on {g.name}, suite {s.name}")
        for n, spec in enumerate(specs):
            rid = run_id(g, spec, top, g.nominal_mem_mhz, g.n_sm, None,
                         interval, seed, controller.run_key)
            have = con.execute("SELECT run_id, time_ns, energy_j FROM run WHERE run_id = ?",
                               [rid]).fetchall()
            if not have:
                result = Simulation(g, spec, top, g.nominal_mem_mhz, seed=seed,
                                    interval_instructions=interval).run(controller)
                result.run.update(controller.columns)
                write_run(con, result, eid)
                have = [(result.run["run_id"], result.run["time_ns"],
                         result.run["energy_j"])]
            done.append({"kernel_id": spec.kernel_id, "run_id": have[0][0],
                         "time_ns": have[0][1], "energy_j": have[0][2]})
            if progress:
                progress(n + 1, len(specs))
    finally:
        con.close()
    return done
