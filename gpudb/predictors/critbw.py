"""CRIT+BW: the limited-bandwidth DVFS model of paper 004 (Miftakhutdinov, Ebrahimi & Patt,
MICRO 2012), section 3.2.

    T(t) = max(T_memory^min, C_compute * t + T_demand)                    (eq. 2)
    C_compute * t_base = T(t_base) - T_demand - T_prefetch_stall(t_base)  (section 3.2.2)

T_demand is the critical path through non-prefetchable demand requests (CRIT's counter,
section 3.1.1), T_prefetch_stall the time stalled with only prefetch(-able) requests
outstanding, and T_memory^min the least time the DRAM system needs for the interval's
requests (from its measured slack). On a GPU without a prefetcher the prefetch stall is zero
and what the model adds over CRIT is the bandwidth bound T_memory^min.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from gpudb.predictors import Predictor, Udf, as_float64


def predict_critbw(t_ns: np.ndarray, demand_ns: np.ndarray, prefetch_stall_ns: np.ndarray,
                   memory_min_ns: np.ndarray, base_mhz: np.ndarray,
                   target_mhz: np.ndarray) -> np.ndarray:
    """Predicted time (ns) at target_mhz from t_ns measured at base_mhz (paper 004 eq. 2);
    cycle time scales as base_mhz / target_mhz."""
    compute_ns = t_ns - demand_ns - prefetch_stall_ns
    return np.maximum(memory_min_ns, compute_ns * (base_mhz / target_mhz) + demand_ns)


def _predict_critbw_udf(t_ns, demand_ns, prefetch_stall_ns, memory_min_ns, base_mhz,
                        target_mhz):
    return pa.array(predict_critbw(*(as_float64(a) for a in (
        t_ns, demand_ns, prefetch_stall_ns, memory_min_ns, base_mhz, target_mhz))))


UDFS = (Udf("predict_critbw", _predict_critbw_udf, ("DOUBLE",) * 6, "DOUBLE",
            "predict_critbw(t_ns, demand_ns, prefetch_stall_ns, memory_min_ns, base_mhz, "
            "target_mhz): CRIT+BW runtime (ns), paper 004 eq. 2"),)

PREDICTOR = Predictor(
    name="critbw", title="CRIT+BW", paper="paper 004 eq. 2 (section 3.2)", order=50,
    inputs=("t_ns", "crit_ns", "prefetch_stall_ns", "dram_min_ns"), formula=predict_critbw,
    sql_function="predict_critbw",
    plain_sql="""greatest(dram_min_ns, (t_ns - crit_ns - prefetch_stall_ns)
                          * core_mhz / target_core_mhz + crit_ns)""")
