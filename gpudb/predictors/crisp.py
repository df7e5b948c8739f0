"""CRISP and CRISP-L: the critical stalled path model of paper 000 (Nath & Tullsen, MICRO 2015).

CRISP splits a run's time T into a load critical path and a compute/store path (section 3.1):

    T = T_LCP + T_CSP                                                     (eq. 3)
    T_LCP(f2) = max(T_Memory, f1/f2 * T_LCP^Comp)                         (eq. 4)
    T_CSP(f2) = max(T_CSP^Comp + T_CSP^Stall, f1/f2 * T_CSP^Comp)         (eq. 5)

where T_Memory is the adjusted load critical path (section 3.5: critical load latencies plus
the load stalls between them, so it includes all load stalls and the overlapped computation),
T_LCP^Comp = T_Memory - load stalls is the computation overlapped by the critical loads,
T_CSP = T - T_Memory, and T_CSP^Stall the store stalls (rule C of section 3.5) with
T_CSP^Comp = T_CSP - T_CSP^Stall the pure computation.

Equations 4-5 predict lower frequencies. For a higher frequency section 5.2 uses

    T(f2) = T_Memory + T_CSP^Stall + T_CSP^Comp * f1/f2

which ignores store-stall growth and computation becoming overlapped.

CRISP-L (section 5.3) is the same function fed the load-outstanding cycles as T_Memory and the
computation overlapped by any outstanding load as T_LCP^Comp.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from gpudb.predictors import Predictor, Udf, as_float64


def predict_crisp(t_ns: np.ndarray, lcp_ns: np.ndarray, lcp_comp_ns: np.ndarray,
                  csp_stall_ns: np.ndarray, base_mhz: np.ndarray,
                  target_mhz: np.ndarray) -> np.ndarray:
    """Predicted time (ns) at target_mhz from a time t_ns measured at base_mhz.

    lcp_ns: adjusted load critical path T_Memory (ns); lcp_comp_ns: overlapped computation
    T_LCP^Comp (ns); csp_stall_ns: store stalls T_CSP^Stall (ns). Eq. 3-5 of paper 000 for
    target_mhz <= base_mhz, the section 5.2 form above it.
    """
    scale = base_mhz / target_mhz
    csp_ns = t_ns - lcp_ns
    csp_comp_ns = csp_ns - csp_stall_ns
    lower = (np.maximum(lcp_ns, scale * lcp_comp_ns)
             + np.maximum(csp_comp_ns + csp_stall_ns, scale * csp_comp_ns))
    higher = lcp_ns + csp_stall_ns + csp_comp_ns * scale
    return np.where(target_mhz <= base_mhz, lower, higher)


def _predict_crisp_udf(t_ns, lcp_ns, lcp_comp_ns, csp_stall_ns, base_mhz, target_mhz):
    return pa.array(predict_crisp(*(as_float64(a) for a in (
        t_ns, lcp_ns, lcp_comp_ns, csp_stall_ns, base_mhz, target_mhz))))


UDFS = (Udf("predict_crisp", _predict_crisp_udf, ("DOUBLE",) * 6, "DOUBLE",
            "predict_crisp(t_ns, lcp_ns, lcp_comp_ns, csp_stall_ns, base_mhz, target_mhz): "
            "CRISP / CRISP-L runtime (ns), paper 000 eq. 3-5 and section 5.2"),)


def crisp_sql(lcp: str, lcp_comp: str) -> str:
    """Eq. 3-5 and the section 5.2 form in plain SQL over prediction_input."""
    return f"""CASE WHEN target_core_mhz <= core_mhz THEN
        greatest({lcp}, core_mhz / target_core_mhz * {lcp_comp})
        + greatest(t_ns - {lcp}, core_mhz / target_core_mhz
                   * (t_ns - {lcp} - crisp_store_stall_ns))
        ELSE {lcp} + crisp_store_stall_ns
             + (t_ns - {lcp} - crisp_store_stall_ns) * core_mhz / target_core_mhz END"""


PREDICTOR = Predictor(
    name="crisp", title="CRISP", paper="paper 000 eq. 3-5 (section 3), section 5.2", order=60,
    inputs=("t_ns", "crisp_lcp_ns", "crisp_lcp_comp_ns", "crisp_store_stall_ns"),
    formula=predict_crisp, sql_function="predict_crisp",
    plain_sql=crisp_sql("crisp_lcp_ns", "crisp_lcp_comp_ns"),
    paper_000_mape_pct=4.0, paper_000_edp_saving_pct=10.7)
