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
