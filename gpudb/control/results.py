"""Running every control policy over a database's fixed runs and keeping the totals in
control_result, which the savings queries read. Every policy runs in each energy scope
(schema/0011_chip_energy.sql): 'run' minimises the run's energy (board power included),
'chip' the chip's (papers 000 and 004's scope); either way both totals are stored."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import duckdb
import pyarrow as pa

from gpudb.control import schedule_run
from gpudb.control.guard import GUARDED, PAPER, Guard, guard_params
from gpudb.control.offline import (
    POLICIES,
    SCOPES,
    PolicyResult,
    in_scope,
    load_outcomes,
    with_scopes,
)
from gpudb.predictors import names
from gpudb.store.db import atomic, first_row
from gpudb.store.queries import get_query

# The predictors a replay can use: every registered predictor with a per-interval formula,
# and the oracle (actual outcomes).
REPLAY_PREDICTORS = (*names(replayable=True), "oracle")


def replay(con: duckdb.DuckDBPyConnection, predictor: str, objective: str,
           max_loss_pct: float = 1.0, gpu_id: str | None = None,
           suite: str | None = None, guard: Guard = GUARDED, scope: str = "run",
           seed: int | None = None) -> int:
    """Trace replay (queries/controller_replay.sql) of one seed's runs (None: each kernel's
    lowest seed) with decisions in energy ``scope``, totalled per kernel into control_result
    by one INSERT ... SELECT over the query (the rows never leave DuckDB); returns the rows
    written."""
    sql, params = get_query("controller_replay").bind({
        "predictor": predictor, "objective": objective, "max_loss_pct": str(max_loss_pct),
        "gpu_id": gpu_id, "suite": suite, "scope": scope, **guard_params(guard),
        "seed": None if seed is None else str(seed)})
    return first_row(con.execute(f"""
        INSERT OR REPLACE INTO control_result BY NAME
        SELECT gpu_id, kernel_id, seed, 'replay' AS policy,
               CAST($predictor AS TEXT) AS predictor, $guard_stored AS guard,
               CAST($objective AS TEXT) AS objective,
               CAST($max_loss_pct AS DOUBLE) AS max_loss_pct,
               count(*) AS intervals, count(*) FILTER (WHERE switched) AS switches,
               sum(time_ns) AS time_ns, sum(energy_j) AS energy_j,
               sum(chip_energy_j) AS chip_energy_j, CAST($scope AS TEXT) AS energy_scope,
               list(core_mhz ORDER BY idx) AS settings, now() AS created_at
        FROM ({sql.rstrip().rstrip(";")}) AS replayed
        GROUP BY gpu_id, kernel_id, seed""", {**params, "guard_stored": guard.name}))[0]


def offline(con: duckdb.DuckDBPyConnection, objective: str, max_loss_pct: float = 1.0,
            gpu_id: str | None = None, suite: str | None = None,
            scope: str = "run", seed: int | None = None) -> list[PolicyResult]:
    """Static optimal, dynamic optimal and perfect memoryless for every kernel, on one seed's
    runs (None: each kernel's lowest seed), minimising the energy of ``scope``; each result
    with its run and chip energy."""
    kernels = load_outcomes(con, gpu_id, suite, seed)
    return [with_scopes(k, policy(in_scope(k, scope), objective, max_loss_pct / 100.0),
                        pay_switch=name != "dynamic_optimal")
            for name, policy in POLICIES.items() for k in kernels]


def store(con: duckdb.DuckDBPyConnection, results: Iterable[PolicyResult], objective: str,
          max_loss_pct: float, scope: str = "run") -> int:
    """Insert or replace the offline policies' totals for one objective and energy scope
    (predictor and guard '')."""
    results = list(results)
    if not results:
        return 0
    table = pa.table({
        "gpu_id": [r.gpu_id for r in results],
        "kernel_id": [r.kernel_id for r in results],
        "seed": [int(r.seed) for r in results],
        "policy": [r.policy for r in results],
        "predictor": [""] * len(results),
        "guard": [""] * len(results),
        "objective": [objective] * len(results),
        "max_loss_pct": [float(max_loss_pct)] * len(results),
        "intervals": [len(r.settings) for r in results],
        "switches": [r.switches for r in results],
        "time_ns": [float(r.time_ns) for r in results],
        "energy_j": [float(r.energy_j) for r in results],
        "settings": [list(map(float, r.settings)) for r in results],
        "energy_scope": [scope] * len(results),
        "chip_energy_j": [r.chip_energy_j for r in results],
    })
    con.register("_gpudb_control", table)
    try:
        con.execute("INSERT OR REPLACE INTO control_result BY NAME "
                    "SELECT *, now() AS created_at FROM _gpudb_control")
    finally:
        con.unregister("_gpudb_control")
    return len(results)


def evaluate(con: duckdb.DuckDBPyConnection, predictors: Iterable[str],
             objectives: Iterable[str], max_loss_pct: float = 1.0, gpu_id: str | None = None,
             suite: str | None = None,
             progress: Callable[[str], None] | None = None,
             guards: Iterable[Guard] = (GUARDED, PAPER),
             scopes: Iterable[str] = SCOPES,
             seeds: Iterable[int | None] = (None,)) -> int:
    """Replay every predictor under every guard, and the offline policies, for every
    objective, energy scope and seed (each on that seed's runs only; None: each kernel's
    lowest seed) into control_result, in one transaction, with the dynamic optimal's
    closed-loop runs already stored (gpudb.control.schedule_run.simulate runs them); returns
    the rows written."""
    written = 0
    predictors, guards, scopes = list(predictors), list(guards), list(scopes)
    with atomic(con):
        for seed in seeds:
            at = "" if seed is None else f"/seed {seed}"
            for scope in scopes:
                for objective in objectives:
                    if progress:
                        progress(f"offline/{objective}/{scope}{at}")
                    written += store(con, offline(con, objective, max_loss_pct, gpu_id, suite,
                                                  scope, seed), objective, max_loss_pct, scope)
                    written += store(con, schedule_run.results(con, objective, max_loss_pct,
                                                               gpu_id, suite, scope, seed),
                                     objective, max_loss_pct, scope)
                    for guard in guards:
                        for predictor in predictors:
                            if progress:
                                progress(f"{predictor}/{objective}/{guard.name}/{scope}{at}")
                            written += replay(con, predictor, objective, max_loss_pct, gpu_id,
                                              suite, guard, scope, seed)
    return written
