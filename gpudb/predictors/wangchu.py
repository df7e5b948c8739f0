"""Wang & Chu's core x memory frequency model (paper 003, sections IV-V) as SQL functions.

The model's equations are in :mod:`gpudb.predictors.wangchu_model`; here they become the Arrow UDFs
``wangchu_time_ns`` and ``wangchu_regime``, which the views ``pred_wangchu`` (parameters from
microbenchmarks or a calibration file) and ``pred_wangchu_fit`` (parameters fitted by least
squares on training kernels' times, :mod:`gpudb.train.wangchu_fit`) call over ``wangchu_input``
(one base run's counters) x ``wangchu_calibration`` x every (core, memory) P-state pair.

Unlike the scaling predictors of papers 000 and 004, the model predicts a time from counters,
not by scaling the base run's time: the prediction at the base setting is a prediction too.
Rows whose inputs the model cannot take (no global transaction reaching L2, zero occupancy, a
hit rate outside [0, 1]) give NULL, the NULL-out contract of every predictor.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from gpudb.predictors import Predictor, Udf, as_float64
from gpudb.predictors.wangchu_model import ARGS, predict_rows


def _columns(arrays) -> dict[str, np.ndarray]:
    return {name: as_float64(a) for name, a in zip(ARGS, arrays, strict=True)}


# DuckDB checks a Python function's arity against the SQL signature, so the arguments are
# spelt out (the names and order of gpudb.predictors.wangchu_model.ARGS).
def _time_udf(gld_trans_per_warp, l2_hit_rate, comp_inst_per_warp, shm_inst_per_warp, blocks,
              warps_per_block, active_sms, warps_per_sm, dm_lat_slope, dm_lat_intercept,
              dm_del, l2_lat, l2_del, sh_lat, inst_cycle, target_core_mhz, target_mem_mhz):
    ns, ok = predict_rows(_columns((
        gld_trans_per_warp, l2_hit_rate, comp_inst_per_warp, shm_inst_per_warp, blocks,
        warps_per_block, active_sms, warps_per_sm, dm_lat_slope, dm_lat_intercept, dm_del,
        l2_lat, l2_del, sh_lat, inst_cycle, target_core_mhz, target_mem_mhz)))
    return pa.array(ns, mask=~ok)


def _regime_udf(gld_trans_per_warp, l2_hit_rate, comp_inst_per_warp, shm_inst_per_warp, blocks,
                warps_per_block, active_sms, warps_per_sm, dm_lat_slope, dm_lat_intercept,
                dm_del, l2_lat, l2_del, sh_lat, inst_cycle, target_core_mhz, target_mem_mhz):
    _, ok, which = predict_rows(_columns((
        gld_trans_per_warp, l2_hit_rate, comp_inst_per_warp, shm_inst_per_warp, blocks,
        warps_per_block, active_sms, warps_per_sm, dm_lat_slope, dm_lat_intercept, dm_del,
        l2_lat, l2_del, sh_lat, inst_cycle, target_core_mhz, target_mem_mhz)),
        return_regime=True)
    return pa.array(which.tolist(), type=pa.string(), mask=~ok)


_SIGNATURE = ", ".join(ARGS)
UDFS = (
    Udf("wangchu_time_ns", _time_udf, ("DOUBLE",) * len(ARGS), "DOUBLE",
        f"wangchu_time_ns({_SIGNATURE}): Wang & Chu's predicted kernel time (ns) at the target "
        "clocks, paper 003 eq. 5-21; NULL where the model cannot take the inputs",
        null_handling="special"),
    Udf("wangchu_regime", _regime_udf, ("DOUBLE",) * len(ARGS), "VARCHAR",
        f"wangchu_regime({_SIGNATURE}): the case of paper 003 section V the model chooses "
        "(compute, memory, few_warps_short_comp, few_warps_long_comp, shared_infrequent, "
        "shared_intensive)", null_handling="special"),
)

PREDICTOR = Predictor(
    name="wangchu", title="Wang & Chu",
    paper="paper 003 eq. 4-21 (sections IV-V), parameters by microbenchmarks (Table IV)",
    order=95, granularity=("run",), domains=("core", "mem"),
    needs="a calibration: gpudb calibrate (--from-file for a measured GPU)")
