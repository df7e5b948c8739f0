"""LEAD (paper 000 section 2): the memory part is the leading-load latencies, the first miss of
each cluster of overlapping misses (gpudb.predictors.linear)."""

from __future__ import annotations

from gpudb.predictors import Predictor
from gpudb.predictors.linear import linear_sql, predict_linear

PREDICTOR = Predictor(
    name="lead", title="LEAD", paper="paper 000 section 2", order=20,
    inputs=("t_ns", "lead_ns"), formula=predict_linear, sql_function="predict_linear",
    plain_sql=linear_sql("lead_ns"),
    paper_000_mape_pct=11.0, paper_000_edp_saving_pct=6.16)
