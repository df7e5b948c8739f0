-- The baseline every control policy is compared with: each kernel always at its highest core
-- P-state in control_interval, totalled over the run; one row per kernel and seed (a policy
-- scored on one seed's runs is compared with the same seed's baseline); chip_energy_j without
-- the board power (other_j), the papers' scope (schema/0011_chip_energy.sql).
CREATE OR REPLACE VIEW control_baseline AS
WITH per_setting AS (
    SELECT gpu_id, kernel_id, seed, core_mhz, sum(time_ns) AS time_ns, sum(energy_j) AS energy_j,
           sum(core_dynamic_j + core_static_j + dram_dynamic_j + dram_static_j)
               AS chip_energy_j
    FROM control_interval
    GROUP BY gpu_id, kernel_id, seed, core_mhz
)
SELECT gpu_id, kernel_id, seed, max(core_mhz) AS core_mhz,
       arg_max(time_ns, core_mhz) AS time_ns, arg_max(energy_j, core_mhz) AS energy_j,
       arg_max(chip_energy_j, core_mhz) AS chip_energy_j
FROM per_setting
GROUP BY gpu_id, kernel_id, seed;
