/* The simulator against a real GPU, per split and class (query sim_scaling_error's kernels):
   mean and worst normalised-time MAPE of the simulator, proportional and Wang & Chu fitted,
   the kernels whose core and memory sensitivities the simulator gets within 0.03 (of how
   many), mean normalised-power MAPE (simulator, constant power) and mean EDP regret. One row
   per (split, class), one per split over every class ('all'), and one over every kernel
   (split and class 'all').
   Parameters: :gpu_id      one measured GPU (default: every GPU)
               :sim_gpu_id  one simulator configuration (default: every one) */
WITH k AS (
    SELECT * FROM sim_scaling_kernel
    WHERE (CAST(:gpu_id AS TEXT) IS NULL OR gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:sim_gpu_id AS TEXT) IS NULL OR sim_gpu_id = CAST(:sim_gpu_id AS TEXT))
)
SELECT
    gpu_id, sim_gpu_id,
    CASE WHEN GROUPING(split) = 1 THEN 'all' ELSE coalesce(split, 'none') END AS split,
    CASE WHEN GROUPING(class) = 1 THEN 'all' ELSE class END AS class,
    count(*) AS kernels,
    avg(sim_time_mape_pct) AS sim_time_mape_pct,
    max(sim_time_mape_pct) AS sim_worst_pct,
    avg(prop_time_mape_pct) AS prop_time_mape_pct,
    avg(wcf_time_mape_pct) AS wcf_time_mape_pct,
    count(*) FILTER (WHERE abs(sim_core_sens - core_sens) <= 0.03) AS core_sens_ok,
    count(*) FILTER (WHERE abs(sim_mem_sens - mem_sens) <= 0.03) AS mem_sens_ok,
    avg(sim_power_mape_pct) AS sim_power_mape_pct,
    avg(const_power_mape_pct) AS const_power_mape_pct,
    avg(sim_edp_regret_pct) AS sim_edp_regret_pct,
    avg(prop_edp_regret_pct) AS prop_edp_regret_pct
FROM k
GROUP BY GROUPING SETS ((gpu_id, sim_gpu_id, split, class), (gpu_id, sim_gpu_id, split),
                        (gpu_id, sim_gpu_id))
ORDER BY gpu_id, sim_gpu_id, GROUPING(split), split, GROUPING(class), class;
