/* Per kernel and GPU: the fixed-run setting with the least energy, the least EDP and the least
   ED2P, each with its saving (%) against the highest setting (most SMs, then highest core MHz,
   then highest memory MHz) and the slowdown (%) it costs. Repeated runs of one setting are
   averaged; ties go to the faster (higher) setting.
   Parameters: :gpu_id  one GPU (default: every GPU).
   Shown first: energy_core_mhz, energy_saving_pct, edp_core_mhz, edp_saving_pct, energy_mem_mhz,
   edp_mem_mhz */
WITH setting AS (
    SELECT
        gpu_id,
        kernel_id,
        n_sm,
        core_mhz,
        mem_mhz,
        avg(time_ns) AS time_ns,
        avg(energy_j) AS energy_j,
        avg(energy_j) * (avg(time_ns) * 1e-9) AS edp_j_s,
        avg(energy_j) * (avg(time_ns) * 1e-9) * (avg(time_ns) * 1e-9) AS ed2p_j_s2
    FROM run
    WHERE policy = 'fixed'
      AND energy_j IS NOT NULL
      AND (CAST(:gpu_id AS TEXT) IS NULL OR gpu_id = CAST(:gpu_id AS TEXT))
    GROUP BY gpu_id, kernel_id, n_sm, core_mhz, mem_mhz
),
ranked AS (
    SELECT
        *,
        row_number() OVER (PARTITION BY gpu_id, kernel_id
                           ORDER BY n_sm DESC NULLS LAST, core_mhz DESC, mem_mhz DESC) AS base_rank,
        row_number() OVER (PARTITION BY gpu_id, kernel_id
                           ORDER BY energy_j, core_mhz DESC, mem_mhz DESC, n_sm DESC) AS energy_rank,
        row_number() OVER (PARTITION BY gpu_id, kernel_id
                           ORDER BY edp_j_s, core_mhz DESC, mem_mhz DESC, n_sm DESC) AS edp_rank,
        row_number() OVER (PARTITION BY gpu_id, kernel_id
                           ORDER BY ed2p_j_s2, core_mhz DESC, mem_mhz DESC, n_sm DESC) AS ed2p_rank,
        count(*) OVER (PARTITION BY gpu_id, kernel_id) AS settings
    FROM setting
)
SELECT
    b.gpu_id,
    b.kernel_id,
    b.settings,
    b.n_sm AS base_n_sm,
    b.core_mhz AS base_core_mhz,
    b.mem_mhz AS base_mem_mhz,
    b.time_ns AS base_time_ns,
    b.energy_j AS base_energy_j,
    e.core_mhz AS energy_core_mhz,
    e.mem_mhz AS energy_mem_mhz,
    e.n_sm AS energy_n_sm,
    100.0 * (1.0 - e.energy_j / b.energy_j) AS energy_saving_pct,
    100.0 * (e.time_ns / b.time_ns - 1.0) AS energy_slowdown_pct,
    d.core_mhz AS edp_core_mhz,
    d.mem_mhz AS edp_mem_mhz,
    d.n_sm AS edp_n_sm,
    100.0 * (1.0 - d.edp_j_s / b.edp_j_s) AS edp_saving_pct,
    100.0 * (d.time_ns / b.time_ns - 1.0) AS edp_slowdown_pct,
    d2.core_mhz AS ed2p_core_mhz,
    d2.mem_mhz AS ed2p_mem_mhz,
    d2.n_sm AS ed2p_n_sm,
    100.0 * (1.0 - d2.ed2p_j_s2 / b.ed2p_j_s2) AS ed2p_saving_pct,
    100.0 * (d2.time_ns / b.time_ns - 1.0) AS ed2p_slowdown_pct
FROM ranked AS b
JOIN ranked AS e ON e.gpu_id = b.gpu_id AND e.kernel_id = b.kernel_id AND e.energy_rank = 1
JOIN ranked AS d ON d.gpu_id = b.gpu_id AND d.kernel_id = b.kernel_id AND d.edp_rank = 1
JOIN ranked AS d2 ON d2.gpu_id = b.gpu_id AND d2.kernel_id = b.kernel_id AND d2.ed2p_rank = 1
WHERE b.base_rank = 1
ORDER BY b.gpu_id, b.kernel_id;
