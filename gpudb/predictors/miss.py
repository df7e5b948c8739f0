"""MISS (paper 000 section 2): the memory part is the contributor misses times a fixed latency
(sample.miss_latency_ns; gpudb.predictors.linear)."""

from __future__ import annotations

from gpudb.predictors import Predictor
from gpudb.predictors.linear import linear_sql, predict_linear

PREDICTOR = Predictor(
    name="miss", title="MISS", paper="paper 000 section 2", order=30,
    inputs=("t_ns", "miss_ns"), formula=predict_linear, sql_function="predict_linear",
    plain_sql=linear_sql("miss_ns"))
