-- Wang & Chu's predicted time (paper 003 eq. 4-21) anchored at the base run's measured time:
-- time_ns x model(target) / model(base) (view wangchu_model; gpudb's DVFS use of the model,
-- gpudb.wangchu_fit), with the GPU's latest microbenchmark calibration or calibration file.
-- One row per fixed run and target pair; whole runs only (granularity 'run'); same SM count
-- and CTA limit as the base run. No rows for a GPU without such a calibration; NULL where the
-- model cannot take the run's inputs.
CREATE OR REPLACE VIEW pred_wangchu_scaled AS
SELECT 'wangchu_scaled' AS predictor, 'run' AS granularity, run_id, kernel_id, gpu_id,
       CAST(NULL AS INTEGER) AS sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, target_mem_mhz, n_sm AS target_n_sm,
       time_ns * model_ns / model_base_ns AS predicted_ns
FROM wangchu_model
WHERE kind = 'measured';
