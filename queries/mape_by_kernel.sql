/* Per kernel, each predictor's mean absolute percentage error over all target core P-states
   (paper 000 figure 9), from the base core MHz at whole-run granularity; Wu et al.'s model
   counts only kernels it was not trained on.
   Parameters: :base_mhz  base core MHz (default: each GPU's highest core P-state)
               :gpu_id    one GPU (default: every GPU)
               :suite     one kernel suite (default: every suite) */
WITH scored AS (
    SELECT
        p.gpu_id,
        p.kernel_id,
        p.predictor,
        abs(p.predicted_ns - p.actual_ns) / p.actual_ns * 100.0 AS ape
    FROM prediction AS p
    JOIN gpu_top_core AS t USING (gpu_id)
    WHERE p.granularity = 'run'
      AND p.base_core_mhz = coalesce(CAST(:base_mhz AS DOUBLE), t.top_core_mhz)
      AND (CAST(:gpu_id AS TEXT) IS NULL OR p.gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR p.kernel_id LIKE CAST(:suite AS TEXT) || '/%')
      AND p.target_core_mhz <> p.base_core_mhz
      AND p.target_mem_mhz = p.base_mem_mhz
      AND p.target_n_sm IS NOT DISTINCT FROM p.base_n_sm
      AND p.in_training IS NOT TRUE
      AND p.actual_ns IS NOT NULL
)
SELECT
    s.gpu_id,
    s.kernel_id,
    any_value(k.category) AS category,
    avg(ape) FILTER (WHERE predictor = 'proportional') AS proportional_pct,
    avg(ape) FILTER (WHERE predictor = 'stall') AS stall_pct,
    avg(ape) FILTER (WHERE predictor = 'lead') AS lead_pct,
    avg(ape) FILTER (WHERE predictor = 'miss') AS miss_pct,
    avg(ape) FILTER (WHERE predictor = 'crit') AS crit_pct,
    avg(ape) FILTER (WHERE predictor = 'critbw') AS critbw_pct,
    avg(ape) FILTER (WHERE predictor = 'crisp') AS crisp_pct,
    avg(ape) FILTER (WHERE predictor = 'crispl') AS crispl_pct,
    avg(ape) FILTER (WHERE predictor = 'wu') AS wu_pct
FROM scored AS s
JOIN kernel AS k USING (kernel_id)
GROUP BY s.gpu_id, s.kernel_id
ORDER BY s.gpu_id, s.kernel_id;
