-- The simulator against a real GPU, one row per measured kernel and simulator configuration
-- (view sim_scaling): errors, sensitivities, class and EDP regret; the columns are described
-- in queries/sim_scaling_error.sql, which lists them.
CREATE OR REPLACE VIEW sim_scaling_kernel AS
WITH s AS (
    SELECT * FROM sim_scaling
),
lowest AS (
    SELECT gpu_id, sim_gpu_id, kernel_id,
           min(core_mhz) FILTER (WHERE mem_mhz = base_mem_mhz) AS low_core_mhz,
           min(mem_mhz) FILTER (WHERE core_mhz = base_core_mhz) AS low_mem_mhz
    FROM s GROUP BY ALL
),
sens AS (
    SELECT s.gpu_id, s.sim_gpu_id, s.kernel_id,
           any_value(s.measured_time_norm) FILTER (WHERE s.core_mhz = l.low_core_mhz
                                                     AND s.mem_mhz = s.base_mem_mhz) AS core_sens,
           any_value(s.sim_time_norm) FILTER (WHERE s.core_mhz = l.low_core_mhz
                                                AND s.mem_mhz = s.base_mem_mhz) AS sim_core_sens,
           any_value(s.proportional_time_norm) FILTER (WHERE s.core_mhz = l.low_core_mhz
                                                     AND s.mem_mhz = s.base_mem_mhz) AS prop_core_sens,
           any_value(s.wangchu_fit_time_norm) FILTER (WHERE s.core_mhz = l.low_core_mhz
                                                     AND s.mem_mhz = s.base_mem_mhz) AS wcf_core_sens,
           any_value(s.measured_time_norm) FILTER (WHERE s.mem_mhz = l.low_mem_mhz
                                                     AND s.core_mhz = s.base_core_mhz) AS mem_sens,
           any_value(s.sim_time_norm) FILTER (WHERE s.mem_mhz = l.low_mem_mhz
                                                AND s.core_mhz = s.base_core_mhz) AS sim_mem_sens,
           any_value(s.wangchu_fit_time_norm) FILTER (WHERE s.mem_mhz = l.low_mem_mhz
                                                     AND s.core_mhz = s.base_core_mhz) AS wcf_mem_sens,
           any_value(s.base_core_mhz / l.low_core_mhz) AS core_full,
           any_value(s.base_mem_mhz / l.low_mem_mhz) AS mem_full
    FROM s JOIN lowest AS l USING (gpu_id, sim_gpu_id, kernel_id)
    GROUP BY ALL
),
best AS (
    SELECT gpu_id, sim_gpu_id, kernel_id, min(measured_edp_norm) AS best_edp,
           arg_min(measured_edp_norm, sim_edp_norm) AS at_sim_choice,
           arg_min(measured_edp_norm, proportional_time_norm * proportional_time_norm)
               AS at_prop_choice
    FROM s GROUP BY ALL
),
err AS (
    SELECT gpu_id, sim_gpu_id, kernel_id, any_value(split) AS split, count(*) AS settings,
           avg(abs(sim_time_norm - measured_time_norm) / measured_time_norm)
               FILTER (WHERE NOT is_base) * 100 AS sim_time_mape_pct,
           avg(abs(proportional_time_norm - measured_time_norm) / measured_time_norm)
               FILTER (WHERE NOT is_base) * 100 AS prop_time_mape_pct,
           avg(abs(wangchu_fit_time_norm - measured_time_norm) / measured_time_norm)
               FILTER (WHERE NOT is_base) * 100 AS wcf_time_mape_pct,
           avg(abs(sim_power_norm - measured_power_norm) / measured_power_norm)
               FILTER (WHERE NOT is_base) * 100 AS sim_power_mape_pct,
           avg(abs(1.0 - measured_power_norm) / measured_power_norm)
               FILTER (WHERE NOT is_base) * 100 AS const_power_mape_pct
    FROM s GROUP BY ALL
)
SELECT
    e.gpu_id, e.sim_gpu_id, e.kernel_id, e.split,
    CASE WHEN (v.core_sens - 1) / (v.core_full - 1) >= 0.25
              AND (v.mem_sens - 1) / (v.mem_full - 1) >= 0.25 THEN 'both'
         WHEN (v.core_sens - 1) / (v.core_full - 1) >= 0.25 THEN 'core-bound'
         WHEN (v.mem_sens - 1) / (v.mem_full - 1) >= 0.25 THEN 'memory-bound'
         ELSE 'neither' END AS class,
    e.settings,
    e.sim_time_mape_pct, e.prop_time_mape_pct, e.wcf_time_mape_pct,
    v.core_sens, v.sim_core_sens, v.prop_core_sens, v.wcf_core_sens,
    v.mem_sens, v.sim_mem_sens, v.wcf_mem_sens,
    e.sim_power_mape_pct, e.const_power_mape_pct,
    (b.at_sim_choice / b.best_edp - 1) * 100 AS sim_edp_regret_pct,
    (b.at_prop_choice / b.best_edp - 1) * 100 AS prop_edp_regret_pct
FROM err AS e
JOIN sens AS v USING (gpu_id, sim_gpu_id, kernel_id)
JOIN best AS b USING (gpu_id, sim_gpu_id, kernel_id);
