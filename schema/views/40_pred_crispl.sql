-- CRISP-L (paper 000 section 5.3): load-outstanding cycles as the critical path
-- One row per sample of prediction_input and target core P-state, with the columns every
-- pred_<name> view has (50_prediction.sql unions them).
CREATE OR REPLACE VIEW pred_crispl AS
SELECT 'crispl' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_crisp(t_ns, crispl_lcp_ns, crispl_lcp_comp_ns, crisp_store_stall_ns, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;
