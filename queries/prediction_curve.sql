/* Predicted against actual whole-run time over the target core MHz for one kernel (paper 000
   figure 10), from the base core MHz; times in ns.
   Parameters: :kernel_id  the kernel (default: every kernel)
               :base_mhz   base core MHz (default: each GPU's highest core P-state)
               :gpu_id     one GPU (default: every GPU) */
SELECT
    p.gpu_id,
    p.kernel_id,
    p.base_mem_mhz,
    p.target_core_mhz,
    any_value(p.actual_ns) AS actual_ns,
    any_value(p.predicted_ns) FILTER (WHERE p.predictor = 'proportional') AS proportional_ns,
    any_value(p.predicted_ns) FILTER (WHERE p.predictor = 'stall') AS stall_ns,
    any_value(p.predicted_ns) FILTER (WHERE p.predictor = 'lead') AS lead_ns,
    any_value(p.predicted_ns) FILTER (WHERE p.predictor = 'miss') AS miss_ns,
    any_value(p.predicted_ns) FILTER (WHERE p.predictor = 'crit') AS crit_ns,
    any_value(p.predicted_ns) FILTER (WHERE p.predictor = 'critbw') AS critbw_ns,
    any_value(p.predicted_ns) FILTER (WHERE p.predictor = 'crisp') AS crisp_ns,
    any_value(p.predicted_ns) FILTER (WHERE p.predictor = 'crispl') AS crispl_ns
FROM prediction AS p
JOIN gpu_top_core AS t USING (gpu_id)
WHERE p.granularity = 'run'
  AND p.base_core_mhz = coalesce(CAST(:base_mhz AS DOUBLE), t.top_core_mhz)
  AND (CAST(:kernel_id AS TEXT) IS NULL OR p.kernel_id = CAST(:kernel_id AS TEXT))
  AND (CAST(:gpu_id AS TEXT) IS NULL OR p.gpu_id = CAST(:gpu_id AS TEXT))
GROUP BY p.gpu_id, p.kernel_id, p.base_mem_mhz, p.target_core_mhz
ORDER BY p.gpu_id, p.kernel_id, p.base_mem_mhz, p.target_core_mhz DESC;
