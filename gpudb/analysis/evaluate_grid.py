"""Two-dimensional accuracy (paper 003 section VI): predictions from one base (core, memory)
setting to every (core, memory) target of a GPU's grid, per predictor, per target and per
kernel, with Wang & Chu's fitted variant cross-validated by kernel beside the stored
predictors (view ``setting_error``, query ``error_by_setting``)."""

from __future__ import annotations

import math

import duckdb
import numpy as np

from gpudb.store.result import Table
from gpudb.predictors import names
from gpudb.predictors.wangchu_model import COUNTER_ARGS
from gpudb.store.db import GpudbError
from gpudb.store.queries import run_query

# Paper 003 abstract and section VI: 3.5% MAPE over 49 settings (core and memory 400-1000 MHz)
# of 12 kernels on a GTX 980, from a 700/700 MHz base; per kernel 0.7% to 6.9% (figure 14).
PAPER_003_MAPE_PCT = 3.5
CV = "wangchu_fit_cv"   # the row of the fitted variant cross-validated by kernel


def has_grid(con: duckdb.DuckDBPyConnection, gpu: str) -> bool:
    """Whether the GPU has fixed runs at several memory clocks (a core x memory grid)."""
    return con.execute("SELECT count(DISTINCT mem_mhz) FROM run WHERE gpu_id = ? AND "
                       "policy = 'fixed'", [gpu]).fetchone()[0] > 1


def default_base(con: duckdb.DuckDBPyConnection, gpu: str) -> tuple[float, float]:
    """The GPU's highest core and memory P-state (error_by_setting's default base)."""
    core, mem = con.execute(
        "SELECT max(freq_mhz) FILTER (WHERE domain = 'core'), "
        "max(freq_mhz) FILTER (WHERE domain = 'mem') FROM pstate WHERE gpu_id = ?",
        [gpu]).fetchone()
    if core is None or mem is None:
        raise GpudbError(f"no P-states of {gpu}")
    return core, mem


def _cv_rows(con, gpu: str, suite: str | None, base: tuple[float, float], folds: int):
    """(kernel ids, target core, target mem, cross-validated ape) of Wang & Chu's fitted
    (anchored) variant, or None when it cannot be cross-validated (too few kernels, no
    scipy)."""
    from gpudb.train import wangchu_fit

    try:
        rows = wangchu_fit.load_rows(con, gpu, base[0], base[1], suite)
        n_kernels = len(set(rows.kernel_id.tolist()))
        if n_kernels < 3:
            return None
        predicted, _ = wangchu_fit.cross_validate(rows, min(folds, n_kernels))
    except GpudbError:
        return None
    ape = np.abs(predicted - rows.actual_ns) / rows.actual_ns * 100.0
    return rows.kernel_id, rows.target_core_mhz, rows.target_mem_mhz, ape


def _mean(values) -> float | None:
    values = [v for v in values if v is not None and not math.isnan(v)]
    return sum(values) / len(values) if values else None


def grid_tables(con: duckdb.DuckDBPyConnection, gpu: str, suite: str | None,
                base: tuple[float, float], folds: int = 5) -> tuple[Table, Table, Table]:
    """(per predictor: MAPE over all targets, over core-only and memory-only targets, largest
    error, kernels, predictions, paper 003's figure; Wang & Chu's MAPE per target as a core x
    memory table; per kernel: the model's regime at the base (with the microbenchmark or file
    calibration, else the fitted one) and each predictor's MAPE)."""
    params = {"gpu_id": gpu, "suite": suite, "base_mhz": str(base[0]),
              "base_mem_mhz": str(base[1])}
    rows = con.execute("""
        SELECT predictor, kernel_id, target_core_mhz, target_mem_mhz, ape
        FROM setting_error
        WHERE gpu_id = $gpu_id AND base_core_mhz = $core AND base_mem_mhz = $mem
          AND (CAST($suite AS TEXT) IS NULL OR kernel_id LIKE $suite || '/%')""",
        {"gpu_id": gpu, "core": base[0], "mem": base[1], "suite": suite}).fetchall()
    scored = [(p, k, c, m, a) for p, k, c, m, a in rows]
    cv = _cv_rows(con, gpu, suite, base, folds)
    if cv is not None:
        scored += [(CV, k, c, m, a) for k, c, m, a in zip(*cv, strict=True)]
    order = [*names(), CV]
    present = [p for p in order if any(r[0] == p for r in scored)]

    def mape(pred, where=lambda c, m: True):
        return _mean([a for p, _, c, m, a in scored if p == pred and where(c, m)])

    core_only = lambda c, m: m == base[1] and c != base[0]  # noqa: E731
    mem_only = lambda c, m: c == base[0] and m != base[1]  # noqa: E731
    summary = Table(
        ["predictor", "mape_pct", "core_only_mape_pct", "mem_only_mape_pct", "max_ape_pct",
         "kernels", "n", "paper_003_pct"],
        [(p, mape(p), mape(p, core_only), mape(p, mem_only),
          max(a for q, *_, a in scored if q == p),
          len({k for q, k, *_ in scored if q == p}), sum(1 for r in scored if r[0] == p),
          PAPER_003_MAPE_PCT if p == "wangchu" else None) for p in present])
    # the heat map (paper 003 figure 13) of the first Wang & Chu variant present
    shown = next((p for p in ("wangchu", "wangchu_scaled", "wangchu_fit") if p in present),
                 None)
    columns, found = run_query(con, "error_by_setting", {**params, "predictor": shown}) \
        if shown else ([], [])
    # MAPE % by (target core MHz, target memory MHz), read by name (the query leads with
    # gpu_id); the overall row, without a target, is not a cell
    by = {(r["target_core_mhz"], r["target_mem_mhz"]): r["mape_pct"]
          for r in (dict(zip(columns, x, strict=True)) for x in found)
          if r["target_core_mhz"] is not None}
    mems = sorted({m for _, m in by})
    heat = Table([f"{shown or 'wangchu'}_core_mhz"] + [f"mem_{m:g}_mhz_pct" for m in mems],
                 [tuple([c] + [by.get((c, m)) for m in mems])
                  for c in sorted({c for c, _ in by})])
    regimes = dict(con.execute(f"""
        SELECT i.kernel_id, wangchu_regime({', '.join('i.' + c for c in COUNTER_ARGS)},
               c.dm_lat_slope, c.dm_lat_intercept, c.dm_del, c.l2_lat, c.l2_del, c.sh_lat,
               c.inst_cycle, i.core_mhz, i.mem_mhz)
        FROM wangchu_input AS i
        JOIN wangchu_calibration AS c ON c.gpu_id = i.gpu_id
        WHERE i.gpu_id = $gpu_id AND i.core_mhz = $core AND i.mem_mhz = $mem
        -- the microbenchmark or file calibration (pred_wangchu's), else the fitted one
        QUALIFY row_number() OVER (PARTITION BY i.kernel_id
                                   ORDER BY c.method = 'least_squares', c.created_at DESC,
                                            i.run_id) = 1""",
        {"gpu_id": gpu, "core": base[0], "mem": base[1]}).fetchall())
    # errors grouped once by (predictor, kernel): scanning every error per kernel and
    # predictor grew with the square of the kernels (8,000 kernels of 8 runs: 109 s)
    by_kernel: dict[tuple[str, str], list] = {}
    for p, k, *_, a in scored:
        by_kernel.setdefault((p, k), []).append(a)
    kernels = sorted({k for _, k in by_kernel})
    per_kernel = Table(
        ["kernel_id", "wangchu_regime"] + [f"{p}_pct" for p in present],
        [tuple([k, regimes.get(k)] + [_mean(by_kernel.get((p, k), ())) for p in present])
         for k in kernels])
    return summary, heat, per_kernel
