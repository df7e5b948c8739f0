/* Accuracy per predictor and target core MHz (paper 000 figure 8): mean absolute percentage
   error, largest absolute percentage error and count of predictions with a known actual time;
   the row with an empty target is the predictor over all targets. Predictions go from the base
   core MHz to every other core P-state, at the base run's memory clock and SM count (Wu et
   al.'s model: kernels outside its training split only).
   Parameters: :granularity  'run' (default) or 'interval'
               :base_mhz     base core MHz (default: each GPU's highest core P-state)
               :gpu_id       one GPU (default: every GPU)
               :suite        one kernel suite (default: every suite) */
WITH scored AS (
    SELECT predictor, target_core_mhz, ape
    FROM core_scaling_error
    WHERE granularity = coalesce(CAST(:granularity AS TEXT), 'run')
      AND base_core_mhz = coalesce(CAST(:base_mhz AS DOUBLE), top_core_mhz)
      AND (CAST(:gpu_id AS TEXT) IS NULL OR gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR kernel_id LIKE CAST(:suite AS TEXT) || '/%')
)
SELECT
    predictor,
    target_core_mhz,
    avg(ape) AS mape_pct,
    max(ape) AS max_ape_pct,
    count(*) AS n
FROM scored
GROUP BY GROUPING SETS ((predictor, target_core_mhz), (predictor))
ORDER BY predictor, target_core_mhz NULLS LAST;
