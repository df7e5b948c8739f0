-- Wang & Chu's model (paper 003 eq. 4-21, SQL function wangchu_time_ns) for every fixed run
-- with the model's inputs (wangchu_input) and each kind of calibration its GPU has: the
-- model's time at every (core, memory) P-state pair of the GPU (model_ns) and at the run's own
-- clocks (model_base_ns, the row whose target is the run's setting), the two numbers views
-- pred_wangchu, pred_wangchu_scaled and pred_wangchu_fit are made of. One row per fixed run,
-- calibration kind and target pair. kind 'measured': the GPU's latest microbenchmark or file
-- calibration; 'fitted': its latest least-squares one (gpudb train wangchu). model_ns is NULL
-- where the model cannot take the run's inputs.
CREATE OR REPLACE VIEW wangchu_model AS
WITH kinds AS (
    SELECT *, CASE WHEN method = 'least_squares' THEN 'fitted' ELSE 'measured' END AS kind
    FROM wangchu_calibration
),
cal AS (
    SELECT *
    FROM kinds
    QUALIFY row_number() OVER (PARTITION BY gpu_id, kind ORDER BY created_at DESC, method) = 1
),
target AS (
    SELECT c.gpu_id, c.freq_mhz AS target_core_mhz, m.freq_mhz AS target_mem_mhz
    FROM pstate AS c
    JOIN pstate AS m ON m.gpu_id = c.gpu_id AND m.domain = 'mem'
    WHERE c.domain = 'core'
),
model AS (
    SELECT i.run_id, i.kernel_id, i.gpu_id, c.kind, i.core_mhz, i.mem_mhz, i.n_sm,
           i.ctas_per_sm, i.interval_instructions, i.time_ns,
           t.target_core_mhz, t.target_mem_mhz,
           wangchu_time_ns(i.gld_trans_per_warp, i.l2_hit_rate, i.comp_inst_per_warp,
                           i.shm_inst_per_warp, i.blocks, i.warps_per_block, i.active_sms,
                           i.warps_per_sm, c.dm_lat_slope, c.dm_lat_intercept, c.dm_del,
                           c.l2_lat, c.l2_del, c.sh_lat, c.inst_cycle, t.target_core_mhz,
                           t.target_mem_mhz) AS model_ns
    FROM wangchu_input AS i
    JOIN cal AS c ON c.gpu_id = i.gpu_id
    JOIN target AS t ON t.gpu_id = i.gpu_id
)
SELECT
    *,
    max(model_ns) FILTER (WHERE target_core_mhz = core_mhz AND target_mem_mhz = mem_mhz)
        OVER (PARTITION BY run_id, kind) AS model_base_ns
FROM model;
