"""The linear DVFS models STALL, LEAD, MISS and CRIT, and the naive proportional model.

All four prior models of paper 000 (Nath & Tullsen, MICRO 2015) section 2 split a run measured
at a base core frequency into a part that scales with the core clock and a memory part that
does not (section 2.1), and differ only in how they measure the memory part (section 2.2,
adapted to GPUs by counting from the L1 miss):

    T = T_compute(t) + T_memory                                          (paper 000 eq. 1)
    T(f_target) = (T(f_base) - T_mem) * f_base / f_target + T_mem      (paper 000 eq. 2)

- STALL: T_mem = cycles the SM issued nothing while a load was outstanding;
- LEAD: T_mem = leading-load cycles (the first miss of each cluster of overlapping misses);
- MISS: T_mem = contributor misses x a fixed memory latency;
- CRIT: T_mem = the global critical path through outstanding misses (paper 004 section 3.1.1).

The proportional model (time scales with 1/f) is the same formula with T_mem = 0.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from gpudb.predictors import Udf, as_float64


def predict_linear(t_ns: np.ndarray, mem_ns: np.ndarray, base_mhz: np.ndarray,
                   target_mhz: np.ndarray) -> np.ndarray:
    """Predicted time (ns) at target_mhz from a time t_ns (ns) measured at base_mhz with
    mem_ns (ns) of it not scaling with the core clock (paper 000 eq. 2)."""
    return (t_ns - mem_ns) * (base_mhz / target_mhz) + mem_ns


def proportional(t_ns: np.ndarray, base_mhz: np.ndarray, target_mhz: np.ndarray) -> np.ndarray:
    """All time scales with 1/f: eq. 2 with no memory part."""
    return predict_linear(t_ns, 0.0, base_mhz, target_mhz)


def _predict_linear_udf(t_ns, mem_ns, base_mhz, target_mhz):
    return pa.array(predict_linear(as_float64(t_ns), as_float64(mem_ns),
                                   as_float64(base_mhz), as_float64(target_mhz)))


def _predict_proportional_udf(t_ns, base_mhz, target_mhz):
    return pa.array(proportional(as_float64(t_ns), as_float64(base_mhz), as_float64(target_mhz)))


UDFS = (Udf("predict_linear", _predict_linear_udf, ("DOUBLE",) * 4, "DOUBLE",
            "predict_linear(t_ns, mem_ns, base_mhz, target_mhz): STALL/LEAD/MISS/CRIT runtime "
            "(ns), paper 000 eq. 2"),
        Udf("predict_proportional", _predict_proportional_udf, ("DOUBLE",) * 3, "DOUBLE",
            "predict_proportional(t_ns, base_mhz, target_mhz): the proportional runtime (ns), "
            "paper 000 eq. 2 with no memory part"))


def linear_sql(mem: str) -> str:
    """Eq. 2 in plain SQL over prediction_input, with `mem` the memory part's column."""
    return f"(t_ns - {mem}) * core_mhz / target_core_mhz + {mem}"
