"""Trace replay in Python through :func:`gpudb.control.guard.decide`: the reference that the
SQL replay (queries/controller_replay.sql) is tested against, as sim/reference.py is for the
jitted simulator. Same inputs (view control_interval, view prediction), same energy model,
same switching charge, same energy scope (the controller's energy without the board's in
scope 'chip'); one :class:`~gpudb.control.offline.PolicyResult` per kernel, with the run's
and the chip's energy."""

from __future__ import annotations

import duckdb
import numpy as np

from gpudb.control.energy import predict_energy
from gpudb.control.guard import GUARDED, Guard, GuardState, decide
from gpudb.control.offline import (
    KernelOutcomes,
    PolicyResult,
    in_scope,
    replayed,
    with_scopes,
)

_PARTS = ("core_dynamic_j", "core_static_j", "dram_dynamic_j", "dram_static_j", "other_j")


def replay(con: duckdb.DuckDBPyConnection, predictor: str, objective: str,
           max_loss_pct: float = 1.0, gpu_id: str | None = None, suite: str | None = None,
           guard: Guard = GUARDED, scope: str = "run",
           seed: int | None = None) -> list[PolicyResult]:
    """One seed's runs (None: each kernel's lowest seed), as controller_replay.sql."""
    rows = con.execute(f"""
        SELECT gpu_id, kernel_id, core_mhz, idx, voltage_v, switch_ns, time_ns, energy_j,
               {", ".join(_PARTS)}, run_id, seed
        FROM control_interval AS c
        WHERE (? IS NULL OR gpu_id = ?) AND (? IS NULL OR kernel_id LIKE ? || '/%')
          AND seed = coalesce(CAST(? AS BIGINT), (SELECT min(s.seed) FROM control_interval AS s
                              WHERE s.gpu_id = c.gpu_id AND s.kernel_id = c.kernel_id))
        ORDER BY gpu_id, kernel_id, core_mhz, idx""",
                       [gpu_id, gpu_id, suite, suite, seed]).fetchall()
    kernels: dict[tuple[str, str], list[tuple]] = {}
    for row in rows:
        kernels.setdefault((row[0], row[1]), []).append(row)
    predicted: dict[tuple[str, int, float], float] = {}
    if predictor != "oracle":
        for run_id, idx, target, ns in con.execute("""
                SELECT p.run_id, p.sample_idx, p.target_core_mhz, p.predicted_ns
                FROM prediction AS p
                JOIN control_interval AS c ON c.run_id = p.run_id AND c.idx = p.sample_idx
                WHERE p.granularity = 'interval' AND p.predictor = ?""", [predictor]).fetchall():
            predicted[(run_id, idx, target)] = ns
    return [_replay_kernel(key, group, predictor, objective, max_loss_pct / 100.0, guard,
                           predicted, scope) for key, group in kernels.items()]


def _replay_kernel(key, group, predictor, objective, max_loss, guard, predicted, scope):
    mhz = np.array(sorted({r[2] for r in group}))
    n = len(group) // len(mhz)
    shape = (len(mhz), n)
    volts = np.array([r[4] for r in group]).reshape(shape)[:, 0]
    switch_ns = float(group[0][5])
    time_ns = np.array([r[6] for r in group]).reshape(shape)
    energy_j = np.array([r[7] for r in group]).reshape(shape)
    parts = np.array([r[8:13] for r in group]).reshape(shape + (5,))
    background = (parts[..., 1] + parts[..., 3] + parts[..., 4]) / time_ns
    run_outcomes = KernelOutcomes(key[0], key[1], mhz, time_ns, energy_j, background, switch_ns,
                                  int(group[0][14]), parts[..., 4].copy())
    outcomes = in_scope(run_outcomes, scope)
    energy_j = outcomes.energy_j
    if scope == "chip":
        parts[..., 4] = 0.0
    run_ids = [group[s * n][13] for s in range(len(mhz))]
    top = len(mhz) - 1
    state = GuardState(top=top)
    choice = [top]
    for i in range(n - 1):
        cur = state.cur
        cd, cs, dd, ds, ot = parts[cur, i]
        if predictor == "oracle":
            p_ns, p_j = time_ns[:, i], energy_j[:, i]
        else:
            p_ns = np.array([predicted.get((run_ids[cur], i, m), np.nan) for m in mhz])
            p_j = predict_energy(cd, cs, dd, ds, ot, time_ns[cur, i], volts[cur], p_ns, volts)
        switch_j = (cs * volts / volts[cur] + ds + ot) / time_ns[cur, i] * switch_ns
        choice.append(decide(state, guard, objective, max_loss, i, time_ns[cur, i],
                             energy_j[cur, i], p_ns, p_j, switch_ns, switch_j))
    return with_scopes(run_outcomes, replayed(outcomes, "replay", choice), pay_switch=True)
