"""CRISP-L (paper 000 section 5.3): CRISP (gpudb.predictors.crisp) fed the load-outstanding time
as the load critical path and the computation overlapped by any outstanding load."""

from __future__ import annotations

from gpudb.predictors import Predictor
from gpudb.predictors.crisp import crisp_sql, predict_crisp

PREDICTOR = Predictor(
    name="crispl", title="CRISP-L", paper="paper 000 section 5.3", order=70,
    inputs=("t_ns", "crispl_lcp_ns", "crispl_lcp_comp_ns", "crisp_store_stall_ns"),
    formula=predict_crisp, sql_function="predict_crisp",
    plain_sql=crisp_sql("crispl_lcp_ns", "crispl_lcp_comp_ns"),
    paper_000_mape_pct=4.66, paper_000_edp_saving_pct=8.38)
