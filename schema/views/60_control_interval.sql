-- The interval outcomes DVFS control is evaluated on (docs/DESIGN.md section 5). One row per
-- kernel, seed, core P-state and interval of the kernel's run family: the fixed simulated
-- runs of one kernel and seed that share everything but the core clock (memory clock, SM
-- count, CTA limit and interval size), so that interval k is the same work at every setting.
-- A kernel and seed are here only with a family that has a run at every core P-state of its
-- GPU, at the GPU's nominal memory clock with all SMs; of several such families of one seed
-- the one with the hardware CTA limit (or the largest), then the newest. Where a family was
-- simulated again (e.g. by a newer simulator) each P-state takes its newest run. Each seed
-- is its own family: a consumer evaluates one seed at a time (or groups by seed), never
-- mixing one seed's intervals with another's. Trace replay (queries/controller_replay.sql)
-- and the offline policies (gpudb/control/offline.py) read the actual outcomes of their
-- choices from here.
CREATE OR REPLACE VIEW control_interval AS
WITH candidate AS (
    SELECT
        r.run_id, r.gpu_id, r.kernel_id, r.core_mhz, r.mem_mhz, r.n_sm, r.ctas_per_sm,
        r.interval_instructions, r.seed, r.created_at,
        coalesce(CAST(json_extract(g.config, '$.core.switch_ns') AS DOUBLE), 100.0) AS switch_ns
    FROM run AS r
    JOIN gpu AS g USING (gpu_id)
    WHERE r.policy = 'fixed'
      AND r.source = 'sim'
      AND r.mem_mhz = g.nominal_mem_mhz
      AND r.n_sm = g.n_sm
    QUALIFY row_number() OVER (
        PARTITION BY r.gpu_id, r.kernel_id, r.core_mhz, r.ctas_per_sm,
                     r.interval_instructions, r.seed
        ORDER BY r.created_at DESC, r.run_id) = 1
),
core_pstates AS (
    SELECT gpu_id, count(*) AS n_pstates
    FROM pstate
    WHERE domain = 'core'
    GROUP BY gpu_id
),
family AS (
    SELECT c.gpu_id, c.kernel_id, c.ctas_per_sm, c.interval_instructions, c.seed
    FROM candidate AS c
    JOIN core_pstates AS p USING (gpu_id)
    SEMI JOIN pstate AS s ON s.gpu_id = c.gpu_id AND s.domain = 'core' AND s.freq_mhz = c.core_mhz
    GROUP BY c.gpu_id, c.kernel_id, c.ctas_per_sm, c.interval_instructions, c.seed, p.n_pstates
    HAVING count(*) = p.n_pstates
    QUALIFY row_number() OVER (
        PARTITION BY c.gpu_id, c.kernel_id, c.seed
        ORDER BY c.ctas_per_sm DESC NULLS FIRST, max(c.created_at) DESC,
                 c.interval_instructions) = 1
)
SELECT
    c.run_id, c.gpu_id, c.kernel_id, c.seed, c.core_mhz, p.voltage_v, c.switch_ns, i.idx, i.time_ns,
    i.core_dynamic_j, i.core_static_j, i.dram_dynamic_j, i.dram_static_j, i.other_j,
    i.core_dynamic_j + i.core_static_j + i.dram_dynamic_j + i.dram_static_j + i.other_j
        AS energy_j
FROM candidate AS c
SEMI JOIN family AS f
    ON f.gpu_id = c.gpu_id AND f.kernel_id = c.kernel_id
   AND f.ctas_per_sm IS NOT DISTINCT FROM c.ctas_per_sm
   AND f.interval_instructions = c.interval_instructions
   AND f.seed IS NOT DISTINCT FROM c.seed
JOIN interval AS i ON i.run_id = c.run_id
JOIN pstate AS p ON p.gpu_id = c.gpu_id AND p.domain = 'core' AND p.freq_mhz = c.core_mhz;
