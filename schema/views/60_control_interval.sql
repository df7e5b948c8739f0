-- The interval outcomes DVFS control is evaluated on (DESIGN.md section 5): one fixed
-- simulated run per kernel and core P-state, at the GPU's nominal memory clock, all SMs and
-- the hardware CTA limit (the largest one run; the newest run where a kernel was simulated
-- again, e.g. by a newer simulator), with each interval's time, energy split and
-- the P-state's voltage. Trace replay (queries/controller_replay.sql) and the offline policies
-- (gpudb/control/offline.py) read the actual outcomes of their choices from here.
CREATE OR REPLACE VIEW control_interval AS
WITH scope AS (
    SELECT
        r.run_id, r.gpu_id, r.kernel_id, r.core_mhz,
        coalesce(CAST(json_extract(g.config, '$.core.switch_ns') AS DOUBLE), 100.0) AS switch_ns
    FROM run AS r
    JOIN gpu AS g USING (gpu_id)
    WHERE r.policy = 'fixed'
      AND r.source = 'sim'
      AND r.mem_mhz = g.nominal_mem_mhz
      AND r.n_sm = g.n_sm
    QUALIFY row_number() OVER (PARTITION BY r.gpu_id, r.kernel_id, r.core_mhz
                               ORDER BY r.ctas_per_sm DESC NULLS FIRST, r.seed, r.created_at DESC,
                                        r.run_id) = 1
)
SELECT
    s.run_id, s.gpu_id, s.kernel_id, s.core_mhz, p.voltage_v, s.switch_ns, i.idx, i.time_ns,
    i.core_dynamic_j, i.core_static_j, i.dram_dynamic_j, i.dram_static_j, i.other_j,
    i.core_dynamic_j + i.core_static_j + i.dram_dynamic_j + i.dram_static_j + i.other_j
        AS energy_j
FROM scope AS s
JOIN interval AS i USING (run_id)
JOIN pstate AS p ON p.gpu_id = s.gpu_id AND p.domain = 'core' AND p.freq_mhz = s.core_mhz;

-- The baseline every control policy is compared with: each kernel always at its highest core
-- P-state in control_interval, totalled over the run.
CREATE OR REPLACE VIEW control_baseline AS
WITH per_setting AS (
    SELECT gpu_id, kernel_id, core_mhz, sum(time_ns) AS time_ns, sum(energy_j) AS energy_j
    FROM control_interval
    GROUP BY gpu_id, kernel_id, core_mhz
)
SELECT gpu_id, kernel_id, max(core_mhz) AS core_mhz,
       arg_max(time_ns, core_mhz) AS time_ns, arg_max(energy_j, core_mhz) AS energy_j
FROM per_setting
GROUP BY gpu_id, kernel_id;
