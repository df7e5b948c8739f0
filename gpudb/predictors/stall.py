"""STALL (paper 000 section 2): the memory part is the cycles the SM issued nothing while a load
was outstanding (gpudb.predictors.linear)."""

from __future__ import annotations

from gpudb.predictors import Predictor
from gpudb.predictors.linear import linear_sql, predict_linear

PREDICTOR = Predictor(
    name="stall", title="STALL", paper="paper 000 section 2", order=10,
    inputs=("t_ns", "stall_ns"), formula=predict_linear, sql_function="predict_linear",
    plain_sql=linear_sql("stall_ns"),
    paper_000_mape_pct=35.0, paper_000_edp_saving_pct=0.0)
