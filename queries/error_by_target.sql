/* Signed mean percentage error per GPU, predictor and target core MHz: positive means the predictor
   over-predicts the time (as paper 000 section 5.1 says STALL does at lower frequencies),
   negative that it under-predicts. Also the share of predictions that are over. GPUs are never
   pooled: their clock grids differ.
   Parameters: :granularity  'run' (default) or 'interval'
               :base_mhz     base core MHz (default: each GPU's highest core P-state)
               :gpu_id       one GPU (default: every GPU)
               :suite        one kernel suite (default: every suite)
               :model_id     one stored wu model, as `gpudb train wu` prints it
                             (default: each GPU's latest) */
WITH wu_pick AS (
    SELECT CASE WHEN CAST(:model_id AS TEXT) IS NULL
                  OR CAST(:model_id AS TEXT) IN (SELECT model_id FROM wu_model)
                THEN CAST(:model_id AS TEXT)
                ELSE error('no wu model ''' || CAST(:model_id AS TEXT) || ''' (see table wu_model)')
           END AS model_id
),
scored AS (
    SELECT gpu_id, predictor, target_core_mhz, pe
    FROM core_scaling_error
    WHERE granularity = coalesce(CAST(:granularity AS TEXT), 'run')
      AND base_core_mhz = coalesce(CAST(:base_mhz AS DOUBLE), top_core_mhz)
      AND (CAST(:gpu_id AS TEXT) IS NULL OR gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR kernel_id LIKE CAST(:suite AS TEXT) || '/%')
      -- Wu et al.'s rows of one model: -p model_id's, else each GPU's latest
      AND coalesce(model_id = (SELECT model_id FROM wu_pick), is_current, true)
)
SELECT
    gpu_id,
    predictor,
    target_core_mhz,
    avg(pe) AS mean_error_pct,
    min(pe) AS min_error_pct,
    max(pe) AS max_error_pct,
    avg(CAST(pe > 0 AS DOUBLE)) * 100.0 AS over_predicted_pct,
    count(*) AS n
FROM scored
GROUP BY gpu_id, predictor, target_core_mhz
ORDER BY gpu_id, predictor, target_core_mhz;
