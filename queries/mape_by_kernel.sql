/* Per kernel, each predictor's mean absolute percentage error over all target core P-states
   (paper 000 figure 9), from the base core MHz; Wu et al.'s model counts only kernels it
   was not trained on. One column per registered predictor (gpudb/predictors), <name>_pct,
   from view core_scaling_error_by_predictor's pred_<name>_ape.
   Parameters: :granularity  'run' (default) or 'interval'
               :base_mhz  base core MHz (default: each GPU's highest core P-state)
               :gpu_id    one GPU (default: every GPU)
               :suite     one kernel suite (default: every suite)
               :model_id  one stored wu model, as `gpudb train wu` prints it
                          (default: each GPU's latest)
               :seed      one seed's runs (default: every seed; a prediction is
                          always scored against a run of its base run's seed) */
WITH wu_pick AS (
    SELECT CASE WHEN CAST(:model_id AS TEXT) IS NULL
                  OR CAST(:model_id AS TEXT) IN (SELECT model_id FROM wu_model)
                THEN CAST(:model_id AS TEXT)
                ELSE error('no wu model ''' || CAST(:model_id AS TEXT) || ''' (see table wu_model)')
           END AS model_id
),
scored AS (
    SELECT gpu_id, kernel_id, COLUMNS('^pred_\w+_ape$')
    FROM core_scaling_error_by_predictor
    WHERE granularity = coalesce(CAST(:granularity AS TEXT), 'run')
      AND base_core_mhz = coalesce(CAST(:base_mhz AS DOUBLE), top_core_mhz)
      AND (CAST(:gpu_id AS TEXT) IS NULL OR gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR kernel_id LIKE CAST(:suite AS TEXT) || '/%')
      AND (CAST(:seed AS BIGINT) IS NULL OR seed = CAST(:seed AS BIGINT))
      -- Wu et al.'s rows of one model: -p model_id's, else each GPU's latest
      AND coalesce(model_id = (SELECT model_id FROM wu_pick), is_current, true)
)
SELECT
    s.gpu_id,
    s.kernel_id,
    any_value(k.category) AS category,
    avg(COLUMNS('^pred_(\w+)_ape$')) AS '\1_pct'
FROM scored AS s
JOIN kernel AS k USING (kernel_id)
GROUP BY s.gpu_id, s.kernel_id
ORDER BY s.gpu_id, s.kernel_id;
