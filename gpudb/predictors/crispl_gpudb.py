"""gpudb's CRISP-L: gpudb.predictors.crisp_gpudb fed the load-outstanding time (per SM with
work) as the load critical path."""

from __future__ import annotations

from gpudb.predictors import Predictor
from gpudb.predictors.crisp_gpudb import crisp_gpudb_sql, predict_crisp_gpudb

PREDICTOR = Predictor(
    name="crispl_gpudb", title="CRISP-L (gpudb)",
    paper="paper 000 section 5.3 on issue-slot counters; gpudb's upward form (README)",
    order=90,
    inputs=("t_ns", "crispl_slot_lcp_ns", "crisp_slot_load_stall_ns",
            "crisp_slot_store_stall_ns", "memory_min_ns"),
    formula=predict_crisp_gpudb, sql_function="predict_crisp_gpudb",
    plain_sql=crisp_gpudb_sql("crispl_slot_lcp_ns"))
