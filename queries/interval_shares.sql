/* A kernel's intervals at its GPU's highest core P-state, from the run family DVFS control is
   evaluated on (view control_interval): per interval, the shares of its cycles on CRIT's
   critical path through memory (paper 004 section 3.1.1), on LEAD's leading loads, stalled
   with a load outstanding (STALL), with a load outstanding (CRISP-L's load critical path) and
   computation as CRISP classifies it (paper 000 section 3.5: not a load or store stall), with
   the interval's time. What a controller's clock trace (clock_trace) answers to: memory-bound
   intervals invite a lower clock.
   Parameters: :kernel_id  the kernel, e.g. default/twoslope_lm (default: every kernel)
               :gpu_id     one GPU (default: every GPU)
               :seed       one seed (default: each kernel's lowest) */
SELECT
    c.gpu_id,
    c.kernel_id,
    CAST(i.idx AS INTEGER) AS idx,
    c.core_mhz,
    i.time_ns,
    i.crit_path_cycles / i.cycles AS crit_share,
    i.leading_load_cycles / i.cycles AS lead_share,
    i.stall_cycles / i.cycles AS stall_share,
    i.load_outstanding_cycles / i.cycles AS load_outstanding_share,
    1.0 - (i.crisp_load_stall_cycles + i.crisp_store_stall_cycles) / i.cycles
        AS computation_share
FROM control_interval AS c
JOIN gpu_top_core AS t ON t.gpu_id = c.gpu_id AND t.top_core_mhz = c.core_mhz
JOIN interval AS i ON i.run_id = c.run_id AND i.idx = c.idx
WHERE (CAST(:kernel_id AS TEXT) IS NULL OR c.kernel_id = CAST(:kernel_id AS TEXT))
  AND (CAST(:gpu_id AS TEXT) IS NULL OR c.gpu_id = CAST(:gpu_id AS TEXT))
  AND c.seed = coalesce(CAST(:seed AS BIGINT),
                        (SELECT min(s.seed) FROM control_interval AS s
                         WHERE s.gpu_id = c.gpu_id AND s.kernel_id = c.kernel_id))
ORDER BY c.gpu_id, c.kernel_id, idx;
