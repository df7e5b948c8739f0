"""CRISP and CRISP-L as gpudb corrects them: ``crisp_gpudb`` and ``crispl_gpudb``.

Two deviations from paper 000 (Nath & Tullsen, MICRO 2015), each measured on the simulator
(README, "Where gpudb differs from the papers"). ``gpudb.predictors.crisp`` keeps the paper's
forms exactly; these are separate predictors so both can be compared on the same data.

1. Issue-slot accounting (the inputs, ``interval.crisp_slot_*_cycles``). Section 3.5 calls a
   one-issue cycle of the dual-issue SM computation when there is an arithmetic hazard and a
   whole stall otherwise, so the computation issued in it is booked as memory time that does
   not scale with the clock. gpudb's simulator also counts each cycle as issue slots: used
   slots are computation, unused ones are classified by rules A-D (section 3.5), and a cycle
   of an SM with no resident CTA is in no class. The rules are read in two places the paper
   leaves open: an LSU replaying a divergent access while a ready memory instruction waits for
   it (and the miss and store buffers have room) is rule A's pipeline-speed bank conflict, and
   an SM whose warps have all issued and wait only for their loads is stalled on them (rule B).
   The sample view takes the counters per SM that had work. Measured on twoslope_lm at 700 MHz
   (interval 10): the paper's rules leave 1,837 computation cycles where issuing the
   interval's 6,667 warp instructions per SM needs 3,333 at two a cycle, so eq. 4 puts the
   knee at ~167 MHz; the slot counters give 3,357 and the knee at ~305 MHz, where it is.

2. The upward form. For a higher frequency section 5.2 holds the load critical path constant,
   T = T_Memory + T_CSP^Stall + T_CSP^Comp * f1/f2. At low clocks the load critical path is
   mostly overlapped computation that would shrink, so the form predicts almost no speed-up
   (twoslope_lm from 100 MHz: +167% at 700 MHz) and a controller that stepped down cannot
   come back. gpudb keeps the measured stalls, lets all computation scale, and floors the
   result at the memory system's own least time for the sample's requests, ``memory_min_ns``:
   the largest of the DRAM channels' (paper 004 eq. 2's T_memory^min), the MSHRs' and the
   store queue's (Little's law on each buffer):

       S = T_LCP^Stall + T_CSP^Stall
       T(f2) = max(T_memory^min, S + (T - S) * f1/f2)

   Store stalls are kept, not dropped: they grow, not shrink, as the clock rises.

For a lower or equal frequency both variants use eq. 3-5 unchanged, on the slot counters:

    T(f2) = max(T_LCP, f1/f2 * (T_LCP - T_LCP^Stall))
          + max(T - T_LCP, f1/f2 * (T - T_LCP - T_CSP^Stall))

CRISP-L (section 5.3) is the same function fed the load-outstanding time as T_LCP.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from gpudb.predictors import Predictor, Udf, as_float64


def predict_crisp_gpudb(t_ns: np.ndarray, lcp_ns: np.ndarray, load_stall_ns: np.ndarray,
                        store_stall_ns: np.ndarray, memory_min_ns: np.ndarray,
                        base_mhz: np.ndarray, target_mhz: np.ndarray) -> np.ndarray:
    """Predicted time (ns) at target_mhz from t_ns measured at base_mhz.

    lcp_ns: load critical path T_LCP (ns; CRISP's adjusted LCP or CRISP-L's load-outstanding
    time); load_stall_ns, store_stall_ns: T_LCP^Stall and T_CSP^Stall (ns, issue-slot
    accounting); memory_min_ns: least time of the memory system for the sample's requests (ns).
    """
    scale = base_mhz / target_mhz
    lcp_comp_ns = lcp_ns - load_stall_ns
    csp_ns = t_ns - lcp_ns
    csp_comp_ns = csp_ns - store_stall_ns
    lower = (np.maximum(lcp_ns, scale * lcp_comp_ns)
             + np.maximum(csp_ns, scale * csp_comp_ns))
    stalls_ns = load_stall_ns + store_stall_ns
    higher = np.maximum(memory_min_ns, stalls_ns + (t_ns - stalls_ns) * scale)
    return np.where(target_mhz <= base_mhz, lower, higher)


def _predict_crisp_gpudb_udf(t_ns, lcp_ns, load_stall_ns, store_stall_ns, memory_min_ns,
                             base_mhz, target_mhz):
    return pa.array(predict_crisp_gpudb(*(as_float64(a) for a in (
        t_ns, lcp_ns, load_stall_ns, store_stall_ns, memory_min_ns, base_mhz, target_mhz))))


UDFS = (Udf("predict_crisp_gpudb", _predict_crisp_gpudb_udf, ("DOUBLE",) * 7, "DOUBLE",
            "predict_crisp_gpudb(t_ns, lcp_ns, load_stall_ns, store_stall_ns, memory_min_ns, "
            "base_mhz, target_mhz): gpudb's CRISP / CRISP-L runtime (ns), issue-slot stalls "
            "and an upward form floored by the memory system's least time"),)


def crisp_gpudb_sql(lcp: str) -> str:
    """The formula in plain SQL over prediction_input; SQL's greatest() skips NULLs, so a
    NULL input is made a NULL prediction explicitly, as the UDF does."""
    return f"""CASE WHEN {lcp} IS NULL OR crisp_slot_load_stall_ns IS NULL
        OR crisp_slot_store_stall_ns IS NULL OR memory_min_ns IS NULL THEN NULL
    WHEN target_core_mhz <= core_mhz THEN
        greatest({lcp}, core_mhz / target_core_mhz * ({lcp} - crisp_slot_load_stall_ns))
        + greatest(t_ns - {lcp}, core_mhz / target_core_mhz
                   * (t_ns - {lcp} - crisp_slot_store_stall_ns))
    ELSE greatest(memory_min_ns, crisp_slot_load_stall_ns + crisp_slot_store_stall_ns
                  + (t_ns - crisp_slot_load_stall_ns - crisp_slot_store_stall_ns)
                  * core_mhz / target_core_mhz) END"""


PREDICTOR = Predictor(
    name="crisp_gpudb", title="CRISP (gpudb)",
    paper="paper 000 eq. 3-5 on issue-slot counters; gpudb's upward form (README)", order=80,
    inputs=("t_ns", "crisp_slot_lcp_ns", "crisp_slot_load_stall_ns",
            "crisp_slot_store_stall_ns", "memory_min_ns"),
    formula=predict_crisp_gpudb, sql_function="predict_crisp_gpudb",
    plain_sql=crisp_gpudb_sql("crisp_slot_lcp_ns"))
