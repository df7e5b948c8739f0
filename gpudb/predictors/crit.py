"""CRIT (paper 000 section 2, paper 004 section 3.1.1): the memory part is the critical path
through outstanding misses (gpudb.predictors.linear)."""

from __future__ import annotations

from gpudb.predictors import Predictor
from gpudb.predictors.linear import linear_sql, predict_linear

PREDICTOR = Predictor(
    name="crit", title="CRIT", paper="paper 000 section 2, paper 004 section 3.1.1", order=40,
    inputs=("t_ns", "crit_ns"), formula=predict_linear, sql_function="predict_linear",
    plain_sql=linear_sql("crit_ns"),
    paper_000_mape_pct=11.0, paper_000_edp_saving_pct=5.65)
