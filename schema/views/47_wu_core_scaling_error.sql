-- Every stored model's predictions scored as view core_scaling_error scores view prediction's
-- (schema/views/50_prediction.sql and 55_core_scaling_error.sql: keep the three in step), with
-- model_id: from a base run to another core P-state at its memory clock and SM count, kernels
-- outside the model's training split, against the actual time of the fixed run at the
-- target; signed (pe) and absolute (ape) percentage errors. The stored accuracy queries read
-- it for -p model_id.
CREATE OR REPLACE VIEW wu_core_scaling_error AS
WITH actual AS (
    SELECT granularity, kernel_id, gpu_id, n_sm, ctas_per_sm, interval_instructions,
           core_mhz, mem_mhz, sample_idx, avg(t_ns) AS actual_ns
    FROM sample
    WHERE policy = 'fixed' AND granularity = 'run'
    GROUP BY ALL
),
scored AS (
    SELECT
        p.predictor, p.granularity, p.run_id, p.kernel_id, p.gpu_id, p.sample_idx,
        p.base_core_mhz, p.base_mem_mhz, p.base_n_sm,
        p.target_core_mhz, p.target_mem_mhz, p.target_n_sm,
        p.predicted_ns, a.actual_ns, p.in_training, p.model_id
    FROM pred_wu AS p
    JOIN actual AS a
        ON a.granularity = p.granularity
       AND a.kernel_id = p.kernel_id
       AND a.gpu_id = p.gpu_id
       AND a.core_mhz = p.target_core_mhz
       AND a.mem_mhz = p.target_mem_mhz
       AND a.n_sm IS NOT DISTINCT FROM p.target_n_sm
       AND a.ctas_per_sm IS NOT DISTINCT FROM p.base_ctas_per_sm
       AND a.interval_instructions IS NOT DISTINCT FROM p.interval_instructions
       AND a.sample_idx IS NOT DISTINCT FROM p.sample_idx
    WHERE p.target_core_mhz <> p.base_core_mhz
      AND p.target_mem_mhz = p.base_mem_mhz
      AND p.target_n_sm IS NOT DISTINCT FROM p.base_n_sm
      AND p.in_training IS NOT TRUE
      AND p.predicted_ns IS NOT NULL
      AND a.actual_ns IS NOT NULL
)
SELECT
    s.*,
    t.top_core_mhz,
    (s.predicted_ns - s.actual_ns) / s.actual_ns * 100.0 AS pe,
    abs(s.predicted_ns - s.actual_ns) / s.actual_ns * 100.0 AS ape
FROM scored AS s
JOIN gpu_top_core AS t USING (gpu_id);
