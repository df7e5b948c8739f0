-- Wang & Chu's predicted time (paper 003 eq. 4-21, gpudb.predictors.wangchu) from each fixed
-- run's counters (wangchu_input) to every (core, memory) P-state pair of its GPU, with the
-- GPU's latest microbenchmark calibration or calibration file: the model's own time, as the
-- paper predicts it (eq. 6).
-- One row per fixed run and target pair; whole runs only (granularity 'run'); same SM count
-- and CTA limit as the base run. No rows for a GPU without such a calibration; NULL where the
-- model cannot take the run's inputs.
CREATE OR REPLACE VIEW pred_wangchu AS
WITH cal AS (
    SELECT *
    FROM wangchu_calibration
    WHERE method IN ('microbenchmark', 'file')
    QUALIFY row_number() OVER (PARTITION BY gpu_id ORDER BY created_at DESC, method) = 1
),
target AS (
    SELECT c.gpu_id, c.freq_mhz AS target_core_mhz, m.freq_mhz AS target_mem_mhz
    FROM pstate AS c
    JOIN pstate AS m ON m.gpu_id = c.gpu_id AND m.domain = 'mem'
    WHERE c.domain = 'core'
)
SELECT 'wangchu' AS predictor, 'run' AS granularity, i.run_id, i.kernel_id, i.gpu_id,
       CAST(NULL AS INTEGER) AS sample_idx,
       i.core_mhz AS base_core_mhz, i.mem_mhz AS base_mem_mhz, i.n_sm AS base_n_sm,
       i.ctas_per_sm AS base_ctas_per_sm, i.interval_instructions,
       t.target_core_mhz, t.target_mem_mhz, i.n_sm AS target_n_sm,
       wangchu_time_ns(i.gld_trans_per_warp, i.l2_hit_rate, i.comp_inst_per_warp,
                           i.shm_inst_per_warp, i.blocks, i.warps_per_block, i.active_sms,
                           i.warps_per_sm, c.dm_lat_slope, c.dm_lat_intercept, c.dm_del,
                           c.l2_lat, c.l2_del, c.sh_lat, c.inst_cycle, t.target_core_mhz,
                           t.target_mem_mhz)
           AS predicted_ns
FROM wangchu_input AS i
JOIN cal AS c ON c.gpu_id = i.gpu_id
JOIN target AS t ON t.gpu_id = i.gpu_id;
