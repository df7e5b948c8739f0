"""Wang & Chu's model (paper 003) with its microbenchmark (or file) calibration, anchored at
the base run's measured time: ``T(target) = T_measured(base) * T_model(target) /
T_model(base)`` (gpudb's DVFS use of the model, :mod:`gpudb.train.wangchu_fit`), where
``pred_wangchu`` predicts the time itself as the paper does. The equations and the SQL
function are Wang & Chu's (:mod:`gpudb.predictors.wangchu`)."""

from __future__ import annotations

from gpudb.predictors import Predictor

PREDICTOR = Predictor(
    name="wangchu_scaled", title="Wang & Chu, anchored",
    paper="paper 003 eq. 4-21 as a ratio from the measured base time (gpudb)",
    order=96, granularity=("run",), domains=("core", "mem"),
    needs="a calibration like wangchu")
