/* Static optimal on whole runs (paper 004 section 4.3, with a run's setting fixed for its
   whole length): per kernel, the fixed-run setting (SM count, core MHz, memory MHz) that
   minimises the objective, and its change against the highest setting (most SMs, then highest
   core MHz, then highest memory MHz). Works on measured runs, which have no intervals to
   replay a controller on. Repeated runs of one setting are averaged; ties go to the faster
   setting. The row with an empty kernel_id is the mean over the GPU's kernels, with the worst
   kernel's EDP saving and slowdown.
   Parameters: :objective     'edp' (default), 'ed2p', 'energy' or 'energy_perf' (least
                              energy within :max_loss_pct of the highest setting's time)
               :max_loss_pct  energy_perf's bound, % (default 1)
               :gpu_id        one GPU (default: every GPU)
               :suite         one kernel suite (default: every suite) */
WITH settings AS (
    SELECT
        coalesce(CAST(:objective AS TEXT), 'edp') AS objective,
        coalesce(CAST(:max_loss_pct AS DOUBLE), 1.0) / 100.0 AS max_loss
),
setting AS (
    SELECT
        gpu_id, kernel_id, n_sm, core_mhz, mem_mhz,
        avg(time_ns) AS time_ns,
        avg(energy_j) AS energy_j
    FROM run
    WHERE policy = 'fixed'
      AND energy_j IS NOT NULL
      AND (CAST(:gpu_id AS TEXT) IS NULL OR gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR kernel_id LIKE CAST(:suite AS TEXT) || '/%')
    GROUP BY gpu_id, kernel_id, n_sm, core_mhz, mem_mhz
),
top AS (
    SELECT gpu_id, kernel_id,
           arg_max(time_ns, [coalesce(n_sm, 0), core_mhz, mem_mhz]) AS top_time_ns,
           arg_max(energy_j, [coalesce(n_sm, 0), core_mhz, mem_mhz]) AS top_energy_j
    FROM setting
    GROUP BY gpu_id, kernel_id
),
scored AS (
    SELECT
        s.*, t.top_time_ns, t.top_energy_j, o.objective,
        CASE o.objective
            WHEN 'edp' THEN s.energy_j * s.time_ns
            WHEN 'ed2p' THEN s.energy_j * s.time_ns * s.time_ns
            WHEN 'energy' THEN s.energy_j
            WHEN 'energy_perf' THEN CASE WHEN s.time_ns <= (1.0 + o.max_loss) * t.top_time_ns
                                         THEN s.energy_j END
            ELSE error('objective must be edp, ed2p, energy or energy_perf, got '
                       || o.objective)
        END AS score
    FROM setting AS s
    JOIN top AS t USING (gpu_id, kernel_id)
    CROSS JOIN settings AS o
),
chosen AS (
    SELECT
        gpu_id, kernel_id, objective, n_sm, core_mhz, mem_mhz,
        100.0 * (time_ns / top_time_ns - 1.0) AS time_change_pct,
        100.0 * (1.0 - energy_j / top_energy_j) AS energy_saving_pct,
        100.0 * (1.0 - energy_j * time_ns / (top_energy_j * top_time_ns)) AS edp_saving_pct,
        100.0 * (1.0 - energy_j * time_ns * time_ns
                       / (top_energy_j * top_time_ns * top_time_ns)) AS ed2p_saving_pct
    FROM scored
    WHERE score IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY gpu_id, kernel_id
                               ORDER BY score, core_mhz DESC, mem_mhz DESC,
                                        n_sm DESC NULLS FIRST) = 1
)
SELECT
    gpu_id,
    kernel_id,
    any_value(objective) AS objective,
    CASE WHEN kernel_id IS NOT NULL THEN any_value(n_sm) END AS n_sm,
    CASE WHEN kernel_id IS NOT NULL THEN any_value(core_mhz) END AS core_mhz,
    CASE WHEN kernel_id IS NOT NULL THEN any_value(mem_mhz) END AS mem_mhz,
    count(*) AS kernels,
    avg(time_change_pct) AS time_change_pct,
    avg(energy_saving_pct) AS energy_saving_pct,
    avg(edp_saving_pct) AS edp_saving_pct,
    avg(ed2p_saving_pct) AS ed2p_saving_pct,
    min(edp_saving_pct) AS worst_edp_saving_pct,
    max(time_change_pct) AS worst_time_change_pct
FROM chosen
GROUP BY GROUPING SETS ((gpu_id, kernel_id), (gpu_id))
ORDER BY gpu_id, kernel_id NULLS FIRST;
