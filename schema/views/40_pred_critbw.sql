-- CRIT+BW (paper 004 eq. 2): CRIT bounded below by the least DRAM time
-- One row per sample of prediction_input and target core P-state, with the columns every
-- pred_<name> view has (50_prediction.sql unions them).
CREATE OR REPLACE VIEW pred_critbw AS
SELECT 'critbw' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_critbw(t_ns, crit_ns, prefetch_stall_ns, dram_min_ns, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;
