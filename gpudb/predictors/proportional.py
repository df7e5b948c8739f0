"""The naive reference: all of a sample's time scales with 1/f (paper 000 eq. 2 with no memory
part)."""

from __future__ import annotations

from gpudb.predictors import Predictor
from gpudb.predictors.linear import proportional

PREDICTOR = Predictor(
    name="proportional", title="proportional",
    paper="naive reference: all time scales with 1/f", order=0,
    inputs=("t_ns",), formula=proportional, sql_function="predict_proportional",
    plain_sql="t_ns * core_mhz / target_core_mhz")
