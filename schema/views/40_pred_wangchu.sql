-- Wang & Chu's predicted time (paper 003 eq. 4-21) as the paper predicts it: the model's own
-- time (view wangchu_model) from each fixed run's counters at every (core, memory) P-state pair
-- of its GPU, with the GPU's latest microbenchmark calibration or calibration file.
-- One row per fixed run and target pair; whole runs only (granularity 'run'); same SM count
-- and CTA limit as the base run. No rows for a GPU without such a calibration; NULL where the
-- model cannot take the run's inputs.
CREATE OR REPLACE VIEW pred_wangchu AS
SELECT 'wangchu' AS predictor, 'run' AS granularity, run_id, kernel_id, gpu_id,
       CAST(NULL AS INTEGER) AS sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, target_mem_mhz, n_sm AS target_n_sm,
       model_ns AS predicted_ns
FROM wangchu_model
WHERE kind = 'measured';
