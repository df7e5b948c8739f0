/* Accuracy per predictor and target setting (paper 000 figure 8): mean absolute percentage
   error, largest absolute percentage error and count of predictions with a known actual time,
   per GPU, target core MHz and memory MHz; the row with an empty target is the predictor over
   all of its GPU's targets (GPUs are never pooled: their clock grids differ). Predictions go from the base core MHz to every other core P-state at the base run's
   memory clock and SM count, so a GPU measured at several memory clocks has a base run and
   targets at each (Wu et al.'s model: kernels outside its training split only).
   Parameters: :granularity  'run' (default) or 'interval'
               :base_mhz     base core MHz (default: each GPU's highest core P-state)
               :gpu_id       one GPU (default: every GPU)
               :suite        one kernel suite (default: every suite)
               :model_id     one stored wu model, as `gpudb train wu` prints it
                             (default: each GPU's latest)
               :seed         one seed's runs (default: every seed; a prediction is
                             always scored against a run of its base run's seed) */
WITH wu_pick AS (
    SELECT CASE WHEN CAST(:model_id AS TEXT) IS NULL
                  OR CAST(:model_id AS TEXT) IN (SELECT model_id FROM wu_model)
                THEN CAST(:model_id AS TEXT)
                ELSE error('no wu model ''' || CAST(:model_id AS TEXT) || ''' (see table wu_model)')
           END AS model_id
),
scored AS (
    SELECT gpu_id, predictor, target_core_mhz, target_mem_mhz, ape
    FROM core_scaling_error
    WHERE granularity = coalesce(CAST(:granularity AS TEXT), 'run')
      AND base_core_mhz = coalesce(CAST(:base_mhz AS DOUBLE), top_core_mhz)
      AND (CAST(:gpu_id AS TEXT) IS NULL OR gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR kernel_id LIKE CAST(:suite AS TEXT) || '/%')
      AND (CAST(:seed AS BIGINT) IS NULL OR seed = CAST(:seed AS BIGINT))
      -- Wu et al.'s rows of one model: -p model_id's, else each GPU's latest
      AND coalesce(model_id = (SELECT model_id FROM wu_pick), is_current, true)
)
SELECT
    gpu_id,
    predictor,
    target_core_mhz,
    target_mem_mhz,
    avg(ape) AS mape_pct,
    max(ape) AS max_ape_pct,
    count(*) AS n
FROM scored
GROUP BY GROUPING SETS ((gpu_id, predictor, target_core_mhz, target_mem_mhz),
                        (gpu_id, predictor))
ORDER BY gpu_id, predictor, target_core_mhz NULLS LAST, target_mem_mhz NULLS LAST;
