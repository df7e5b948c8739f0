-- The predictions the accuracy queries score (paper 000 section 5.1): core-frequency scaling
-- from a base run to another core P-state at the same memory clock and SM count, where the
-- actual time is known, with the signed and absolute percentage errors. Wu et al.'s model
-- counts only for kernels outside its training split. top_core_mhz is the GPU's highest core
-- P-state, the default base.
CREATE OR REPLACE VIEW core_scaling_error AS
SELECT
    p.*,
    t.top_core_mhz,
    (p.predicted_ns - p.actual_ns) / p.actual_ns * 100.0 AS pe,
    abs(p.predicted_ns - p.actual_ns) / p.actual_ns * 100.0 AS ape
FROM prediction AS p
JOIN gpu_top_core AS t USING (gpu_id)
WHERE p.target_core_mhz <> p.base_core_mhz
  AND p.target_mem_mhz = p.base_mem_mhz
  AND p.target_n_sm IS NOT DISTINCT FROM p.base_n_sm
  AND p.in_training IS NOT TRUE
  AND p.predicted_ns IS NOT NULL
  AND p.actual_ns IS NOT NULL;
