/* Predicted against actual whole-run time over the target core MHz for one kernel (paper 000
   figure 10), from the base core MHz at the base run's memory clock and SM count; times in
   ns. One column per registered predictor (gpudb/predictors), <name>_ns (view
   prediction_by_predictor's pred_<name>_ns); Wu et al.'s is each
   GPU's latest model's, as in view prediction (kernels it was trained on included).
   Parameters: :kernel_id  the kernel (default: every kernel)
               :base_mhz   base core MHz (default: each GPU's highest core P-state)
               :gpu_id     one GPU (default: every GPU) */
SELECT
    p.gpu_id,
    p.kernel_id,
    p.base_mem_mhz,
    p.target_core_mhz,
    any_value(p.actual_ns) AS actual_ns,
    any_value(COLUMNS('^pred_(\w+)_ns$')) AS '\1_ns'
FROM prediction_by_predictor AS p
JOIN gpu_top_core AS t USING (gpu_id)
WHERE p.granularity = 'run'
  AND p.base_core_mhz = coalesce(CAST(:base_mhz AS DOUBLE), t.top_core_mhz)
  -- core scaling only (Wu et al.'s model also predicts other memory clocks and SM counts)
  AND p.target_mem_mhz = p.base_mem_mhz
  AND p.target_n_sm IS NOT DISTINCT FROM p.base_n_sm
  AND (CAST(:kernel_id AS TEXT) IS NULL OR p.kernel_id = CAST(:kernel_id AS TEXT))
  AND (CAST(:gpu_id AS TEXT) IS NULL OR p.gpu_id = CAST(:gpu_id AS TEXT))
GROUP BY p.gpu_id, p.kernel_id, p.base_mem_mhz, p.target_core_mhz
ORDER BY p.gpu_id, p.kernel_id, p.base_mem_mhz, p.target_core_mhz DESC;
