-- The simulator against a real GPU (docs/simulator.md, "Validation against real GPUs"): one
-- row per measured kernel, simulator configuration and (core, memory) setting at which both the
-- kernel was measured and its clone (`gpudb clone`: a suite kernel whose spec has a `clone`
-- table naming the measured GPU, kernel and base setting) was simulated. Times and powers are
-- normalised by their own base setting's (t / t_base, P / P_base): the scaling, not the level.
-- Repeated runs (seeds, measurements) are averaged.
--   measured_*       the measured runs (power = energy / time)
--   sim_time_norm    the clone's simulated time
--   sim_power_norm   the clone's simulated power, anchored to the kernel's size: its dynamic
--                    energy per instruction x the kernel's instructions (clone.instructions)
--                    over the kernel's time (the measured base time x sim_time_norm), plus its
--                    static, DRAM background and board power. The clone is smaller than the
--                    kernel and runs at the IPC its knobs reached, so its own power would
--                    weigh dynamic against static power wrongly where that IPC missed.
--   proportional_time_norm  time proportional to the core clock (base_core / core)
--   wangchu_fit_time_norm   Wang & Chu fitted on other kernels (table scaling_prediction)
--   split            'train' or 'held_out' where the simulator configuration names the
--                    kernels it was fitted on ([validation] trained_on), else NULL
CREATE OR REPLACE VIEW sim_scaling AS
WITH link AS (
    SELECT k.kernel_id AS clone_kernel_id,
           json_extract_string(k.spec, '$.clone.measured_gpu') AS gpu_id,
           json_extract_string(k.spec, '$.clone.measured_kernel') AS kernel_id,
           CAST(json_extract(k.spec, '$.clone.base_core_mhz') AS DOUBLE) AS base_core_mhz,
           CAST(json_extract(k.spec, '$.clone.base_mem_mhz') AS DOUBLE) AS base_mem_mhz,
           CAST(json_extract(k.spec, '$.clone.instructions') AS DOUBLE) AS kernel_instructions
    FROM kernel AS k
    WHERE json_extract_string(k.spec, '$.clone.measured_kernel') IS NOT NULL
),
measured AS (
    SELECT gpu_id, kernel_id, core_mhz, mem_mhz, avg(time_ns) AS time_ns,
           avg(energy_j / time_ns * 1e9) AS power_w
    FROM run
    WHERE source = 'measured' AND policy = 'fixed'
    GROUP BY ALL
),
sim_energy AS (
    SELECT run_id, sum(core_dynamic_j + dram_dynamic_j) AS dynamic_j,
           sum(core_static_j + dram_static_j + other_j) AS static_j
    FROM interval
    GROUP BY run_id
),
simulated AS (
    SELECT r.gpu_id AS sim_gpu_id, r.kernel_id AS clone_kernel_id, r.core_mhz, r.mem_mhz,
           avg(r.time_ns) AS time_ns, avg(e.dynamic_j / r.instructions) AS dynamic_j_per_inst,
           avg(e.static_j / r.time_ns * 1e9) AS static_w
    FROM run AS r
    JOIN sim_energy AS e USING (run_id)
    WHERE r.source = 'sim' AND r.policy = 'fixed' AND r.instructions > 0
    GROUP BY ALL
),
paired AS (
    SELECT l.gpu_id, s.sim_gpu_id, l.kernel_id, l.clone_kernel_id, l.base_core_mhz,
           l.base_mem_mhz, s.core_mhz, s.mem_mhz, l.kernel_instructions,
           m.time_ns AS measured_ns, m.power_w AS measured_w,
           s.time_ns AS sim_ns, s.dynamic_j_per_inst, s.static_w
    FROM link AS l
    JOIN simulated AS s USING (clone_kernel_id)
    JOIN measured AS m ON m.gpu_id = l.gpu_id AND m.kernel_id = l.kernel_id
                      AND m.core_mhz = s.core_mhz AND m.mem_mhz = s.mem_mhz
),
normalised AS (
    SELECT p.*,
           p.measured_ns / b.measured_ns AS measured_time_norm,
           p.sim_ns / b.sim_ns AS sim_time_norm,
           p.measured_w / b.measured_w AS measured_power_norm,
           -- anchored power (see the header): W at this setting over W at the base
           (p.dynamic_j_per_inst * p.kernel_instructions
               / (p.sim_ns / b.sim_ns * b.measured_ns * 1e-9) + p.static_w)
           / (b.dynamic_j_per_inst * b.kernel_instructions / (b.measured_ns * 1e-9)
              + b.static_w) AS sim_power_norm,
           b.measured_ns AS base_measured_ns
    FROM paired AS p
    JOIN paired AS b ON b.clone_kernel_id = p.clone_kernel_id AND b.sim_gpu_id = p.sim_gpu_id
                    AND b.core_mhz = p.base_core_mhz AND b.mem_mhz = p.base_mem_mhz
)
SELECT
    n.gpu_id, n.sim_gpu_id, n.kernel_id, n.clone_kernel_id, n.base_core_mhz, n.base_mem_mhz,
    n.core_mhz, n.mem_mhz,
    n.core_mhz = n.base_core_mhz AND n.mem_mhz = n.base_mem_mhz AS is_base,
    CASE WHEN json_extract(g.config, '$.validation.trained_on') IS NULL THEN NULL
         WHEN list_contains(CAST(json_extract(g.config, '$.validation.trained_on') AS TEXT[]),
                            n.kernel_id) THEN 'train'
         ELSE 'held_out' END AS split,
    n.measured_time_norm, n.sim_time_norm, n.base_core_mhz / n.core_mhz AS proportional_time_norm,
    w.predicted_ns / n.base_measured_ns AS wangchu_fit_time_norm,
    n.measured_power_norm, n.sim_power_norm,
    n.measured_power_norm * n.measured_time_norm * n.measured_time_norm AS measured_edp_norm,
    n.sim_power_norm * n.sim_time_norm * n.sim_time_norm AS sim_edp_norm
FROM normalised AS n
JOIN gpu AS g ON g.gpu_id = n.sim_gpu_id
LEFT JOIN scaling_prediction AS w
       ON w.gpu_id = n.gpu_id AND w.kernel_id = n.kernel_id AND w.predictor = 'wangchu_fit'
      AND w.base_core_mhz = n.base_core_mhz AND w.base_mem_mhz = n.base_mem_mhz
      AND w.core_mhz = n.core_mhz AND w.mem_mhz = n.mem_mhz;
