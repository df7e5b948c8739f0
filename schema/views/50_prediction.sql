-- Every predictor's prediction from every fixed-run sample to every target setting, with the
-- actual time: the same sample (same interval index, or the whole run) of the fixed run of
-- the same kernel and GPU at the target setting, with the same SM count, CTA limit, interval
-- size and seed as the base run (averaged if repeated; NULL where that run does not exist):
-- a prediction is never scored against another seed's run; seed is the base run's. Wu et
-- al.'s model (45_pred_wu.sql) predicts whole runs at every setting of its grid, SM count
-- and memory clock included. One row per predictor, sample and target setting.
CREATE OR REPLACE VIEW prediction AS
-- analytic_prediction: the union of every registered predictor's view but Wu et al.'s
-- (gpudb.store.db.view_definitions makes it from gpudb/predictors' declarations).
WITH
-- in_training: whether the sample's kernel trained the model (Wu et al.); NULL for the
-- analytic predictors, which learn nothing.
predicted AS (
    SELECT *, CAST(NULL AS BOOLEAN) AS in_training FROM analytic_prediction
    UNION ALL SELECT * EXCLUDE (model_id, predicted_power_w) FROM pred_wu
        WHERE model_id IN (SELECT model_id FROM wu_model_current)  -- each GPU's latest model
),
actual AS (
    SELECT granularity, kernel_id, gpu_id, n_sm, ctas_per_sm, interval_instructions,
           core_mhz, mem_mhz, seed, sample_idx, avg(t_ns) AS actual_ns
    FROM sample
    WHERE policy = 'fixed'
    GROUP BY ALL
)
SELECT
    p.predictor, p.granularity, p.run_id, p.kernel_id, p.gpu_id, p.sample_idx,
    p.base_core_mhz, p.base_mem_mhz, p.base_n_sm,
    p.target_core_mhz, p.target_mem_mhz, p.target_n_sm,
    p.predicted_ns, a.actual_ns, p.in_training, b.seed
FROM predicted AS p
JOIN run AS b ON b.run_id = p.run_id
LEFT JOIN actual AS a
    ON a.granularity = p.granularity
   AND a.kernel_id = p.kernel_id
   AND a.gpu_id = p.gpu_id
   AND a.core_mhz = p.target_core_mhz
   AND a.mem_mhz = p.target_mem_mhz
   AND a.n_sm IS NOT DISTINCT FROM p.target_n_sm
   AND a.ctas_per_sm IS NOT DISTINCT FROM p.base_ctas_per_sm
   AND a.interval_instructions IS NOT DISTINCT FROM p.interval_instructions
   AND a.sample_idx IS NOT DISTINCT FROM p.sample_idx
   AND a.seed IS NOT DISTINCT FROM b.seed;
