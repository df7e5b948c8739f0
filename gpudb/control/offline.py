"""Offline DVFS policies (paper 004 section 4.3), computed with hindsight from the fixed runs'
interval outcomes (view control_interval):

- static optimal: the one core P-state that is best for the whole run;
- dynamic optimal: the best setting for every interval, chosen jointly over the run, so it
  bounds every policy from below. For energy this is the per-interval minimum the paper
  describes; EDP, ED2P and energy under a time bound are not sums over intervals, so gpudb
  finds the exact optimum over all schedules by dynamic programming over the Pareto frontier of
  (total time, total energy). Like the paper, it pays no switching cost;
- perfect memoryless: each interval runs at the setting that was best for the previous one
  (the first at the highest setting), i.e. a controller with a perfect memoryless predictor.
  It pays the switching time, as replayed controllers do.

Objectives apply to whole-run totals for static and dynamic optimal, and per interval for
perfect memoryless (as a controller sees them); energy_perf bounds the time at
(1 + max_loss) x the highest setting's.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np

from gpudb.control.energy import objective_scores, pick


@dataclass
class KernelOutcomes:
    """Interval outcomes of one kernel: [setting, interval] arrays, settings ascending."""
    gpu_id: str
    kernel_id: str
    mhz: np.ndarray
    time_ns: np.ndarray
    energy_j: np.ndarray
    background_j_per_ns: np.ndarray  # static + DRAM background + board energy per ns of time
    switch_ns: float
    seed: int = 0                    # the seed of the fixed runs


@dataclass
class PolicyResult:
    gpu_id: str
    kernel_id: str
    policy: str
    settings: list[float]
    time_ns: float
    energy_j: float
    switches: int
    seed: int = 0


def load_outcomes(con: duckdb.DuckDBPyConnection, gpu_id: str | None = None,
                  suite: str | None = None, seed: int | None = None) -> list[KernelOutcomes]:
    """Every kernel's interval outcomes at every core P-state in control_interval, from the
    runs of one seed (None: each kernel's lowest seed, as controller_replay.sql takes)."""
    rows = con.execute(
        "SELECT gpu_id, kernel_id, core_mhz, idx, time_ns, energy_j, "
        "(core_static_j + dram_static_j + other_j) / time_ns, switch_ns, seed "
        "FROM control_interval AS c WHERE (? IS NULL OR gpu_id = ?) "
        "AND (? IS NULL OR kernel_id LIKE ? || '/%') "
        "AND seed = coalesce(CAST(? AS BIGINT), (SELECT min(s.seed) FROM control_interval AS s "
        "WHERE s.gpu_id = c.gpu_id AND s.kernel_id = c.kernel_id)) "
        "ORDER BY gpu_id, kernel_id, core_mhz, idx",
        [gpu_id, gpu_id, suite, suite, seed]).fetchall()
    out: list[KernelOutcomes] = []
    groups: dict[tuple[str, str], list[tuple]] = {}
    for row in rows:
        groups.setdefault((row[0], row[1]), []).append(row)
    for (gpu, kernel), group in groups.items():
        mhz = np.array(sorted({r[2] for r in group}))
        n = len(group) // len(mhz)
        shape = (len(mhz), n)
        out.append(KernelOutcomes(
            gpu, kernel, mhz,
            np.array([r[4] for r in group]).reshape(shape),
            np.array([r[5] for r in group]).reshape(shape),
            np.array([r[6] for r in group]).reshape(shape),
            float(group[0][7]), int(group[0][8])))
    return out


def _score_totals(objective: str, time_ns, energy_j, top_time_ns: float, max_loss: float):
    return objective_scores(objective, np.asarray(time_ns, float), np.asarray(energy_j, float),
                            top_time_ns, max_loss)


def replayed(k: KernelOutcomes, policy: str, choice: list[int]) -> PolicyResult:
    """Totals of running interval i at setting choice[i], paying the switching time."""
    time_ns = energy_j = 0.0
    switches = 0
    for i, s in enumerate(choice):
        t, e = k.time_ns[s, i], k.energy_j[s, i]
        if i and s != choice[i - 1]:
            switches += 1
            t += k.switch_ns
            e += k.background_j_per_ns[s, i] * k.switch_ns
        time_ns += t
        energy_j += e
    return PolicyResult(k.gpu_id, k.kernel_id, policy, [float(k.mhz[s]) for s in choice],
                        time_ns, energy_j, switches, k.seed)


def static_optimal(k: KernelOutcomes, objective: str, max_loss: float) -> PolicyResult:
    totals_t, totals_e = k.time_ns.sum(axis=1), k.energy_j.sum(axis=1)
    scores = _score_totals(objective, totals_t, totals_e, totals_t[-1], max_loss)
    best = int(np.flatnonzero(k.mhz == pick(k.mhz, scores))[0])
    return replayed(k, "static_optimal", [best] * k.time_ns.shape[1])


def perfect_memoryless(k: KernelOutcomes, objective: str, max_loss: float) -> PolicyResult:
    n = k.time_ns.shape[1]
    top = len(k.mhz) - 1
    choice = [top]
    for i in range(n - 1):
        scores = objective_scores(objective, k.time_ns[:, i], k.energy_j[:, i],
                                  k.time_ns[top, i], max_loss)
        choice.append(int(np.flatnonzero(k.mhz == pick(k.mhz, scores))[0]))
    return replayed(k, "perfect_memoryless", choice)


def dynamic_optimal(k: KernelOutcomes, objective: str, max_loss: float) -> PolicyResult:
    """Exact optimum over all schedules: the Pareto frontier of (total time, total energy)
    is extended interval by interval; every objective here improves as either total falls
    (at equal other), so the optimum lies on the final frontier."""
    n_settings, n = k.time_ns.shape
    times, energies = np.zeros(1), np.zeros(1)
    parents: list[np.ndarray] = []   # per interval: frontier index it extends
    chosen: list[np.ndarray] = []    # per interval: setting taken
    for i in range(n):
        cand_t = (times[:, None] + k.time_ns[None, :, i]).ravel()
        cand_e = (energies[:, None] + k.energy_j[None, :, i]).ravel()
        order = np.lexsort((cand_e, cand_t))
        cand_t, cand_e = cand_t[order], cand_e[order]
        # keep a candidate only if it uses strictly less energy than every faster one
        best_before = np.concatenate(([np.inf], np.minimum.accumulate(cand_e)[:-1]))
        keep = cand_e < best_before
        times, energies = cand_t[keep], cand_e[keep]
        parents.append(order[keep] // n_settings)
        chosen.append(order[keep] % n_settings)
    scores = _score_totals(objective, times, energies, k.time_ns[-1].sum(), max_loss)
    j = int(np.argmin(scores))
    total_t, total_e = float(times[j]), float(energies[j])
    path = []
    for i in range(n - 1, -1, -1):
        path.append(int(chosen[i][j]))
        j = int(parents[i][j])
    path.reverse()
    return PolicyResult(k.gpu_id, k.kernel_id, "dynamic_optimal",
                        [float(k.mhz[s]) for s in path], total_t, total_e,
                        sum(1 for a, b in zip(path, path[1:], strict=False) if a != b),
                        k.seed)


POLICIES = {"static_optimal": static_optimal, "dynamic_optimal": dynamic_optimal,
            "perfect_memoryless": perfect_memoryless}
