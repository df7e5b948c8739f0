"""Wang & Chu's model (paper 003) as gpudb uses it for DVFS: anchored at the base run's measured
time, with its per-GPU parameters fitted to kernels' measured times (for GPUs where nobody can
run the microbenchmarks of section IV).

*Anchored* (views ``pred_wangchu_scaled`` and ``pred_wangchu_fit``): the predicted time at a
target is the base run's measured time times the model's ratio between target and base,
``T(target) = T_measured(base) * T_model(target) / T_model(base)``, as the scaling predictors of
papers 000 and 004 start from the measured base time. The paper's own use (view
``pred_wangchu``) predicts the time itself; on gtx980 and the GTX 1080 Ti its error is mostly
the absolute level at the base (README), which the ratio cancels.

*Fitted*: the model's structure stays the paper's (eq. 4-21,
:mod:`gpudb.predictors.wangchu_model`); only the
seven parameters the prediction uses (eq. 4's slope and intercept, dm_del, l2_lat, l2_del,
sh_lat, inst_cycle; Table IV) are estimated, by non-linear least squares (scipy's
trust-region reflective ``least_squares``) on the log of anchored predicted over measured time,
over every (core, memory) setting of each training kernel. The log keeps the fit relative (a
long kernel weighs no more than a short one) and the parameters are fitted as logarithms, so
they stay positive. Scaling all seven by one factor scales every time term and leaves every
regime condition unchanged, so anchored predictions cannot see it: ``inst_cycle`` is held at
its starting value (the microbenchmark's, else one cycle) to fix that scale, and the other six
are fitted relative to it. A parameter no training kernel's time depends on (sh_lat without a
shared-memory kernel) keeps its starting value and is reported as not identified (zero column
of the Jacobian).

:func:`train` fits and stores the parameters in table ``calibration`` (method
'least_squares'), which view ``pred_wangchu_fit`` reads; :func:`cross_validate` fits on some
kernels and predicts the others, fold by fold, for honest accuracy figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import duckdb
import numpy as np

from gpudb.predictors.wangchu_model import (
    CALIBRATION_ARGS,
    COUNTER_ARGS,
    GTX980_PUBLISHED,
    predict_rows,
)
from gpudb.store.db import GpudbError

# Where the fit starts when the GPU has no microbenchmark calibration: the paper's GTX 980
# values (eq. 4, Table III, section IV-B) and, for the two it does not publish, one cycle per
# compute instruction and a shared-memory latency of the order of an L1 hit.
DEFAULT_START = {**{k: GTX980_PUBLISHED[k] for k in (
    "dm_lat_slope", "dm_lat_intercept", "dm_del", "l2_lat", "l2_del")},
    "sh_lat": 30.0, "inst_cycle": 1.0}
SCALE = "inst_cycle"   # held at its start: it fixes the scale anchored predictions cannot see
FREE = tuple(k for k in CALIBRATION_ARGS if k != SCALE)


@dataclass
class Rows:
    """Training or test rows: one per kernel and target setting, with the kernel's counters at
    the base setting (arrays named as :data:`gpudb.predictors.wangchu_model.COUNTER_ARGS`), the
    base clocks and
    measured time, the target clocks, the measured time there and the runs involved."""
    kernel_id: np.ndarray
    counters: dict[str, np.ndarray]
    target_core_mhz: np.ndarray
    target_mem_mhz: np.ndarray
    actual_ns: np.ndarray
    run_ids: np.ndarray           # per row: the base run's and the target runs' ids
    base_core_mhz: np.ndarray
    base_mem_mhz: np.ndarray
    base_ns: np.ndarray           # measured time of the base run

    @property
    def all_run_ids(self) -> list[str]:
        return sorted({r for ids in self.run_ids for r in ids})

    def __len__(self) -> int:
        return len(self.kernel_id)

    def subset(self, mask: np.ndarray) -> Rows:
        return Rows(self.kernel_id[mask], {k: v[mask] for k, v in self.counters.items()},
                    self.target_core_mhz[mask], self.target_mem_mhz[mask],
                    self.actual_ns[mask], self.run_ids[mask], self.base_core_mhz[mask],
                    self.base_mem_mhz[mask], self.base_ns[mask])

    def _model(self, params: dict[str, float], core: np.ndarray, mem: np.ndarray) -> np.ndarray:
        n = len(self)
        columns = {**self.counters, **{k: np.full(n, float(params[k])) for k in CALIBRATION_ARGS},
                   "target_core_mhz": core, "target_mem_mhz": mem}
        return predict_rows(columns)[0]

    def predict(self, params: dict[str, float], anchored: bool = True) -> np.ndarray:
        """Predicted ns per row with these parameters (NaN where the model cannot): anchored
        at the base run's measured time (default), or the model's own time."""
        at_target = self._model(params, self.target_core_mhz, self.target_mem_mhz)
        if not anchored:
            return at_target
        return self.base_ns * at_target / self._model(params, self.base_core_mhz,
                                                      self.base_mem_mhz)


def load_rows(con: duckdb.DuckDBPyConnection, gpu_id: str, base_core_mhz: float,
              base_mem_mhz: float, suite: str | None = None) -> Rows:
    """Every kernel of the GPU (of ``suite``, if given) with a fixed whole run at the base
    setting: its counters there (view wangchu_input) against its measured time at each setting
    it was run at with the same SM count and CTA limit (repeats averaged), base included.
    Kernels whose inputs the model cannot take are left out."""
    rows = con.execute(f"""
        WITH base AS (
            SELECT * FROM wangchu_input
            WHERE gpu_id = $gpu AND core_mhz = $core AND mem_mhz = $mem
              AND (CAST($suite AS TEXT) IS NULL OR kernel_id LIKE $suite || '/%')
            QUALIFY row_number() OVER (PARTITION BY kernel_id ORDER BY run_id) = 1
        )
        SELECT b.kernel_id, {', '.join('b.' + c for c in COUNTER_ARGS)},
               t.core_mhz, t.mem_mhz, avg(t.time_ns), list(DISTINCT b.run_id),
               list(t.run_id), b.time_ns
        FROM base AS b
        JOIN wangchu_input AS t
          ON t.gpu_id = b.gpu_id AND t.kernel_id = b.kernel_id
         AND t.n_sm IS NOT DISTINCT FROM b.n_sm
         AND t.ctas_per_sm IS NOT DISTINCT FROM b.ctas_per_sm
         AND t.interval_instructions IS NOT DISTINCT FROM b.interval_instructions
        WHERE {' AND '.join(f'b.{c} IS NOT NULL' for c in COUNTER_ARGS)}
        GROUP BY ALL
        ORDER BY b.kernel_id, t.core_mhz, t.mem_mhz""",
        {"gpu": gpu_id, "core": base_core_mhz, "mem": base_mem_mhz, "suite": suite}).fetchall()
    if not rows:
        raise GpudbError(f"no fixed runs of {gpu_id} at {base_core_mhz:g}/{base_mem_mhz:g} MHz "
                         "with paper 003's inputs (view wangchu_input)")
    cols = list(zip(*rows, strict=True))
    k = len(COUNTER_ARGS)
    run_ids = np.empty(len(rows), dtype=object)
    run_ids[:] = [sorted({*a, *b}) for a, b in zip(cols[k + 4], cols[k + 5], strict=True)]
    result = Rows(np.array(cols[0], dtype=object),
                  {c: np.array(cols[1 + i], dtype=float) for i, c in enumerate(COUNTER_ARGS)},
                  np.array(cols[k + 1], dtype=float), np.array(cols[k + 2], dtype=float),
                  np.array(cols[k + 3], dtype=float), run_ids,
                  np.full(len(rows), float(base_core_mhz)), np.full(len(rows), float(base_mem_mhz)),
                  np.array(cols[k + 6], dtype=float))
    usable = np.isfinite(result.predict(DEFAULT_START))
    return result.subset(usable)


@dataclass
class Fit:
    """Fitted parameters (core/memory cycles as in
    :class:`gpudb.predictors.wangchu_model.Calibration`), the
    RMS of the fit's relative error of anchored predictions (%), the number of rows and which
    parameters the data constrains."""
    params: dict[str, float]
    rms_error_pct: float
    n_rows: int
    identified: dict[str, bool]


def starting_values(start: dict[str, float] | None) -> dict[str, float]:
    """Where the fit starts, per parameter: ``start`` (else the defaults), at least 1e-3 (the
    fit works in log space)."""
    return {k: max(float((start or DEFAULT_START)[k]), 1e-3) for k in CALIBRATION_ARGS}


def fit(rows: Rows, start: dict[str, float] | None = None, restarts: int = 4) -> Fit:
    """Least-squares estimate of the seven parameters on ``rows`` (see the module docstring),
    the best of the fits from ``start`` and from ``restarts`` perturbations of it."""
    try:
        from scipy.optimize import least_squares
    except ImportError:
        raise GpudbError("fitting Wang & Chu's parameters needs scipy: pip install "
                         "'gpudb-dvfs[ml]'") from None
    start = starting_values(start)
    x0 = np.log([start[k] for k in FREE])

    def params_at(x) -> dict[str, float]:
        return {**dict(zip(FREE, np.exp(x).tolist(), strict=True)), SCALE: start[SCALE]}

    def residual(x):
        pred = rows.predict(params_at(x))
        # a row the model cannot take at these parameters weighs as a factor-e error
        return np.where(np.isfinite(pred), np.log(pred / rows.actual_ns), 1.0)

    # The regimes make the objective piecewise smooth, with local minima where a kernel's
    # regime flips: the fit restarts from the start scaled by fixed random factors (x1/3 to
    # x3 per parameter, seeded, so a fit is reproducible) and keeps the lowest cost. A relative
    # finite-difference step of 1e-3 in log space steps over the kinks rather than into them.
    # Where kernels leave a direction nearly flat the solver creeps along it for thousands of
    # evaluations at a cost already ~1e-12; 300 evaluations per start bound that.
    offsets = np.random.default_rng(0).uniform(-np.log(3), np.log(3), (restarts, len(FREE)))
    result = min((least_squares(residual, x, method="trf", diff_step=1e-3, max_nfev=300)
                  for x in (x0, *(x0 + offsets))), key=lambda r: r.cost)
    params = params_at(result.x)
    pred = rows.predict(params)
    rel = (pred - rows.actual_ns) / rows.actual_ns
    identified = {k: bool(np.any(np.abs(result.jac[:, i]) > 1e-9)) for i, k in enumerate(FREE)}
    identified[SCALE] = False
    return Fit(params, float(np.sqrt(np.nanmean(rel ** 2)) * 100.0), len(rows), identified)


def folds_by_kernel(kernels: np.ndarray, folds: int) -> dict[str, int]:
    """Each kernel's fold: sorted kernel names dealt round-robin (deterministic)."""
    names = sorted(set(kernels.tolist()))
    if not 2 <= folds <= len(names):
        raise GpudbError(f"cross-validation needs 2 to {len(names)} folds (one kernel at least "
                         f"per fold), got {folds}")
    return {name: i % folds for i, name in enumerate(names)}


def cross_validate(rows: Rows, folds: int = 5,
                   start: dict[str, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(predicted ns, fold) per row, each kernel predicted with parameters fitted on the
    kernels of the other folds only."""
    fold_of = folds_by_kernel(rows.kernel_id, folds)
    fold = np.array([fold_of[k] for k in rows.kernel_id])
    predicted = np.full(len(rows), np.nan)
    for f in range(folds):
        held = fold == f
        predicted[held] = rows.subset(held).predict(fit(rows.subset(~held), start).params)
    return predicted, fold


def train(con: duckdb.DuckDBPyConnection, gpu_id: str, base_core_mhz: float,
          base_mem_mhz: float, suite: str | None = None,
          kernels: list[str] | None = None) -> tuple[str, Fit]:
    """Fit the parameters on the GPU's kernels (all, or ``kernels`` by kernel_id) and store
    them as the GPU's 'least_squares' calibration; returns (calibration_id, fit). Starts from
    the GPU's microbenchmark calibration when it has one."""
    from gpudb.train.calibrate import UNITS, load_calibration, store_calibration

    rows = load_rows(con, gpu_id, base_core_mhz, base_mem_mhz, suite)
    if kernels:
        unknown = sorted(set(kernels) - set(rows.kernel_id.tolist()))
        if unknown:
            raise GpudbError(f"no usable base run at {base_core_mhz:g}/{base_mem_mhz:g} MHz "
                             f"for {', '.join(unknown)}")
        rows = rows.subset(np.isin(rows.kernel_id, kernels))
    measured = load_calibration(con, gpu_id, "microbenchmark")
    start = ({k: getattr(measured, k) for k in CALIBRATION_ARGS} if measured is not None
             else DEFAULT_START)
    result = fit(rows, start)
    first = starting_values(start)
    trained = sorted(set(rows.kernel_id.tolist()))
    note = (f"least squares (anchored at the base's measured time) on {len(trained)} kernels' "
            f"times at {len(rows)} settings from base {base_core_mhz:g}/{base_mem_mhz:g} MHz: "
            f"{', '.join(trained)}")
    calibration_id = store_calibration(
        con, gpu_id, "least_squares", result.params,
        units={k: UNITS[k] for k in CALIBRATION_ARGS}, source_run_ids=rows.all_run_ids,
        fit_residuals={k: result.rms_error_pct for k in CALIBRATION_ARGS},
        residual_units={k: "% RMS time error" for k in CALIBRATION_ARGS},
        n_points={k: len(rows) for k in CALIBRATION_ARGS},
        notes={k: note if result.identified[k] else note + (
            "; held at its starting value: it sets the scale, which anchored predictions "
            "cannot see" if k == SCALE else _unidentified(first[k], result.params[k]))
            for k in CALIBRATION_ARGS})
    return calibration_id, result


def _unidentified(start: float, value: float) -> str:
    """The note of a parameter the predictions do not depend on at the fit (zero column of
    the Jacobian): either it never moved, or the fit carried it to where it stops mattering
    (a regime of eq. 17 without it), and its value says nothing."""
    if math.isclose(value, start, rel_tol=1e-9):
        return "; not identified by these kernels (kept at its starting value)"
    return (f"; not identified by these kernels: the fit moved it from {start:g} to "
            f"{value:g}, where the predictions no longer depend on it, so the value is "
            "arbitrary")


def mape_pct(predicted: np.ndarray, actual: np.ndarray) -> float:
    ok = np.isfinite(predicted)
    return math.nan if not ok.any() else float(
        np.mean(np.abs(predicted[ok] - actual[ok]) / actual[ok]) * 100.0)
