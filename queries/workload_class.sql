/* Per kernel, how its time divides at the GPU's highest core P-state, the quantities papers
   000 and 004 describe their benchmarks by: the share of cycles CRISP calls computation (paper
   000 section 4 calls a kernel compute-bound at >= 75%), the shares with a load outstanding,
   on CRIT's critical path (paper 004 section 3.1.1), on LEAD's leading loads, stalled with a
   load outstanding (STALL) and stalled on stores (paper 000 section 3.3), and the slowdown from
   the top to the lowest core P-state, and the kernel's length there in intervals (of
   interval_instructions warp instructions each). One row per kernel, then one per category
   and class with the mean and range of each share ('all' rows summarise the whole suite).
   Fixed simulated runs at the nominal memory clock, all SMs, the largest CTA limit, one seed.
   Parameters: :gpu_id  one GPU (default: every GPU)
               :suite   one kernel suite (default: every suite)
               :seed    the runs' seed (default: each kernel's lowest) */
WITH runs AS (
    SELECT r.run_id, r.gpu_id, r.kernel_id, r.core_mhz, r.time_ns, r.interval_instructions,
           t.top_core_mhz,
           min(r.core_mhz) OVER (PARTITION BY r.gpu_id, r.kernel_id) AS low_core_mhz
    FROM run AS r
    JOIN gpu AS g USING (gpu_id)
    JOIN gpu_top_core AS t USING (gpu_id)
    WHERE r.policy = 'fixed' AND r.source = 'sim'
      AND r.mem_mhz = g.nominal_mem_mhz AND r.n_sm = g.n_sm
      AND (CAST(:gpu_id AS TEXT) IS NULL OR r.gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR r.kernel_id LIKE CAST(:suite AS TEXT) || '/%')
      -- one seed for every setting, so the slowdown compares runs of one seed
      AND r.seed = coalesce(CAST(:seed AS BIGINT),
                            (SELECT min(s.seed) FROM run AS s
                             WHERE s.gpu_id = r.gpu_id AND s.kernel_id = r.kernel_id
                               AND s.policy = 'fixed' AND s.source = 'sim'
                               AND s.mem_mhz = g.nominal_mem_mhz AND s.n_sm = g.n_sm))
    QUALIFY row_number() OVER (PARTITION BY r.gpu_id, r.kernel_id, r.core_mhz
                               ORDER BY r.ctas_per_sm DESC NULLS FIRST, r.seed, r.created_at DESC,
                                        r.run_id) = 1
),
per_kernel AS (
    SELECT
        r.gpu_id, r.kernel_id, k.category,
        1.0 - sum(i.crisp_load_stall_cycles + i.crisp_store_stall_cycles) / sum(i.cycles)
            AS computation_share,
        sum(i.load_outstanding_cycles) / sum(i.cycles) AS load_outstanding_share,
        sum(i.crit_path_cycles) / sum(i.cycles) AS crit_share,
        sum(i.leading_load_cycles) / sum(i.cycles) AS lead_share,
        sum(i.stall_cycles) / sum(i.cycles) AS stall_share,
        sum(i.crisp_store_stall_cycles) / sum(i.cycles) AS store_stall_share,
        count(*) AS intervals, max(r.interval_instructions) AS interval_instructions
    FROM runs AS r
    JOIN interval AS i USING (run_id)
    JOIN kernel AS k USING (kernel_id)
    WHERE r.core_mhz = r.top_core_mhz
    GROUP BY r.gpu_id, r.kernel_id, k.category
),
slowdown AS (
    SELECT gpu_id, kernel_id,
           max(time_ns) FILTER (WHERE core_mhz = low_core_mhz)
           / max(time_ns) FILTER (WHERE core_mhz = top_core_mhz) AS slowdown_top_to_low
    FROM runs
    GROUP BY gpu_id, kernel_id
),
classified AS (
    SELECT p.*, s.slowdown_top_to_low,
           CASE WHEN p.computation_share >= 0.75 THEN 'compute-bound' ELSE 'memory-bound'
           END AS paper_000_class
    FROM per_kernel AS p
    JOIN slowdown AS s USING (gpu_id, kernel_id)
)
SELECT gpu_id, kernel_id, category, paper_000_class, 1 AS kernels,
       computation_share, load_outstanding_share, crit_share, lead_share, stall_share,
       store_stall_share, slowdown_top_to_low, intervals, interval_instructions,
       NULL::DOUBLE AS load_outstanding_min, NULL::DOUBLE AS load_outstanding_max,
       NULL::DOUBLE AS crit_min, NULL::DOUBLE AS crit_max
FROM classified
UNION ALL
SELECT gpu_id, NULL, coalesce(category, 'all'), coalesce(paper_000_class, 'all'), count(*),
       avg(computation_share), avg(load_outstanding_share), avg(crit_share), avg(lead_share),
       avg(stall_share), avg(store_stall_share), avg(slowdown_top_to_low), NULL, NULL,
       min(load_outstanding_share), max(load_outstanding_share), min(crit_share),
       max(crit_share)
FROM classified
GROUP BY GROUPING SETS ((gpu_id, category), (gpu_id, paper_000_class), (gpu_id))
ORDER BY gpu_id, kernel_id NULLS LAST, category, paper_000_class;
