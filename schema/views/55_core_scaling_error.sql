-- The predictions the accuracy queries score (paper 000 section 5.1): core-frequency scaling
-- from a base run to another core P-state at the same memory clock and SM count, where the
-- actual time is known, with the signed and absolute percentage errors. top_core_mhz is the
-- GPU's highest core P-state, the default base. The analytic predictors' rows are view
-- prediction's (model_id and is_current NULL); Wu et al.'s are those of every stored model
-- (model_id), for kernels outside its training split, with is_current true for each GPU's
-- latest model (view wu_model_current, the one view prediction holds). The stored queries
-- keep one model's: `coalesce(model_id = <chosen id>, is_current, true)`.
CREATE OR REPLACE VIEW core_scaling_error AS
WITH actual AS (
    -- the actual time as view prediction finds it (schema/views/50_prediction.sql: keep the
    -- two in step), for whole runs, the only samples Wu et al.'s model predicts
    SELECT granularity, kernel_id, gpu_id, n_sm, ctas_per_sm, interval_instructions,
           core_mhz, mem_mhz, seed, sample_idx, avg(t_ns) AS actual_ns
    FROM sample
    WHERE policy = 'fixed' AND granularity = 'run'
    GROUP BY ALL
),
predicted AS (
    SELECT *, CAST(NULL AS TEXT) AS model_id, CAST(NULL AS BOOLEAN) AS is_current
    FROM prediction
    WHERE predictor <> 'wu'
    UNION ALL
    SELECT
        w.predictor, w.granularity, w.run_id, w.kernel_id, w.gpu_id, w.sample_idx,
        w.base_core_mhz, w.base_mem_mhz, w.base_n_sm,
        w.target_core_mhz, w.target_mem_mhz, w.target_n_sm,
        w.predicted_ns, a.actual_ns, w.in_training, b.seed, w.model_id,
        w.model_id IN (SELECT model_id FROM wu_model_current) AS is_current
    FROM pred_wu AS w
    JOIN run AS b ON b.run_id = w.run_id
    JOIN actual AS a
        ON a.granularity = w.granularity
       AND a.kernel_id = w.kernel_id
       AND a.gpu_id = w.gpu_id
       AND a.core_mhz = w.target_core_mhz
       AND a.mem_mhz = w.target_mem_mhz
       AND a.n_sm IS NOT DISTINCT FROM w.target_n_sm
       AND a.ctas_per_sm IS NOT DISTINCT FROM w.base_ctas_per_sm
       AND a.interval_instructions IS NOT DISTINCT FROM w.interval_instructions
       AND a.sample_idx IS NOT DISTINCT FROM w.sample_idx
       AND a.seed IS NOT DISTINCT FROM b.seed
)
SELECT
    p.* EXCLUDE (model_id, is_current),
    t.top_core_mhz,
    (p.predicted_ns - p.actual_ns) / p.actual_ns * 100.0 AS pe,
    abs(p.predicted_ns - p.actual_ns) / p.actual_ns * 100.0 AS ape,
    p.model_id,
    p.is_current
FROM predicted AS p
JOIN gpu_top_core AS t USING (gpu_id)
WHERE p.target_core_mhz <> p.base_core_mhz
  AND p.target_mem_mhz = p.base_mem_mhz
  AND p.target_n_sm IS NOT DISTINCT FROM p.base_n_sm
  AND p.in_training IS NOT TRUE
  AND p.predicted_ns IS NOT NULL
  AND p.actual_ns IS NOT NULL;
