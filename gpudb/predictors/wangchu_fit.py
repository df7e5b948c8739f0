"""Wang & Chu's model (paper 003) anchored at the base run's measured time, with its per-GPU
parameters fitted by least squares on training kernels' measured times instead of
microbenchmarks (gpudb's variant, for GPUs where nobody can run the microbenchmarks):
:mod:`gpudb.train.wangchu_fit` fits and stores them in the ``calibration`` table (method
'least_squares'); the equations and the SQL function are Wang & Chu's
(:mod:`gpudb.predictors.wangchu`)."""

from __future__ import annotations

from gpudb.predictors import Predictor

PREDICTOR = Predictor(
    name="wangchu_fit", title="Wang & Chu, fitted",
    paper="paper 003 eq. 4-21, anchored, parameters fitted by least squares (gpudb)",
    order=97, granularity=("run",), domains=("core", "mem"),
    needs="a fit: gpudb train wangchu")
