-- CRIT (paper 000 section 2, paper 004 section 3.1.1): T_memory = critical path through misses
-- One row per sample of prediction_input and target core P-state, with the columns every
-- pred_<name> view has (50_prediction.sql unions them).
CREATE OR REPLACE VIEW pred_crit AS
SELECT 'crit' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_linear(t_ns, crit_ns, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;
