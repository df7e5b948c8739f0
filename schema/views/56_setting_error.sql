-- Two-dimensional accuracy (paper 003 section VI, figures 13-14): every whole-run prediction
-- from a base (core, memory) setting to a (core, memory) target at the same SM count and CTA
-- limit where the actual time is known, the base setting itself included (paper 003 scores
-- its model at all 49 settings; a model that scales the base run's time is exact there), with
-- the signed and absolute percentage errors. One row per predictor, base run and target.
-- Core-only predictors (papers 000 and 004) have rows at the base memory clock only; Wu et
-- al.'s are the GPU's latest model's, for kernels outside its training split.
CREATE OR REPLACE VIEW setting_error AS
SELECT
    p.*,
    p.target_core_mhz = p.base_core_mhz AND p.target_mem_mhz = p.base_mem_mhz AS is_base,
    (p.predicted_ns - p.actual_ns) / p.actual_ns * 100.0 AS pe,
    abs(p.predicted_ns - p.actual_ns) / p.actual_ns * 100.0 AS ape
FROM prediction AS p
WHERE p.granularity = 'run'
  AND p.target_n_sm IS NOT DISTINCT FROM p.base_n_sm
  AND p.in_training IS NOT TRUE
  AND p.predicted_ns IS NOT NULL
  AND p.actual_ns IS NOT NULL;
