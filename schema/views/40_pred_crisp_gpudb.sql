-- gpudb's CRISP (gpudb/predictors/crisp_gpudb.py; README "Where gpudb differs from the
-- papers"): issue-slot stall accounting, and an upward form that lets computation shrink,
-- keeps stalls and is floored by the memory system's least time
-- One row per sample of prediction_input and target core P-state, with the columns every
-- pred_<name> view has (50_prediction.sql unions them).
CREATE OR REPLACE VIEW pred_crisp_gpudb AS
SELECT 'crisp_gpudb' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_crisp_gpudb(t_ns, crisp_slot_lcp_ns, crisp_slot_load_stall_ns, crisp_slot_store_stall_ns, memory_min_ns, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;
