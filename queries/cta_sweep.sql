/* Paper 001's test for its cache-sensitive class (section II-A, figure 1e; figure 2a): each
   kernel's fixed simulated runs over CTA limits per SM (gpudb sweep --ctas) at one core and
   memory clock, all SMs, with the time against the run at the kernel's largest limit, the L1
   hit rate and the limit that runs fastest. peaks_at_fewer_ctas: the fastest limit is below
   the largest and its L1 hit rate is higher there, i.e. the kernel runs best at fewer CTAs
   because its working set thrashes L1 at full occupancy, the paper's definition of the class.
   One row per kernel and CTA limit (the lowest seed's run of each).
   Parameters: :gpu_id    one GPU (default: every GPU)
               :suite     one kernel suite (default: every suite)
               :core_mhz  core clock, MHz (default: the GPU's nominal)
               :mem_mhz   memory clock, MHz (default: the GPU's nominal) */
WITH runs AS (
    SELECT r.run_id, r.gpu_id, r.kernel_id, r.ctas_per_sm, r.time_ns, r.energy_j
    FROM run AS r
    JOIN gpu AS g USING (gpu_id)
    WHERE r.policy = 'fixed' AND r.source = 'sim' AND r.n_sm = g.n_sm
      AND r.ctas_per_sm IS NOT NULL
      AND r.core_mhz = coalesce(CAST(:core_mhz AS DOUBLE), g.nominal_core_mhz)
      AND r.mem_mhz = coalesce(CAST(:mem_mhz AS DOUBLE), g.nominal_mem_mhz)
      AND (CAST(:gpu_id AS TEXT) IS NULL OR r.gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR r.kernel_id LIKE CAST(:suite AS TEXT) || '/%')
    QUALIFY row_number() OVER (PARTITION BY r.gpu_id, r.kernel_id, r.ctas_per_sm
                               ORDER BY r.seed, r.created_at DESC, r.run_id) = 1
),
limits AS (
    SELECT r.gpu_id, r.kernel_id, r.ctas_per_sm, any_value(r.time_ns) AS time_ns,
           any_value(r.energy_j) AS energy_j,
           CAST(sum(i.l1_hits) AS DOUBLE) / nullif(sum(i.l1_accesses), 0) AS l1_hit_rate
    FROM runs AS r
    JOIN interval AS i USING (run_id)
    GROUP BY r.gpu_id, r.kernel_id, r.ctas_per_sm
),
ranked AS (
    SELECT *,
           max(ctas_per_sm) OVER k AS max_ctas,
           -- the fastest limit; on a tie the larger one (no reason to run fewer CTAs)
           first_value(ctas_per_sm) OVER (PARTITION BY gpu_id, kernel_id
                                          ORDER BY time_ns, ctas_per_sm DESC) AS best_ctas
    FROM limits
    WINDOW k AS (PARTITION BY gpu_id, kernel_id)
),
judged AS (
    SELECT *,
           max(time_ns) FILTER (WHERE ctas_per_sm = max_ctas) OVER k AS time_at_max_ns,
           max(l1_hit_rate) FILTER (WHERE ctas_per_sm = max_ctas) OVER k AS l1_at_max,
           max(l1_hit_rate) FILTER (WHERE ctas_per_sm = best_ctas) OVER k AS l1_at_best,
           count(*) OVER k AS limits_run
    FROM ranked
    WINDOW k AS (PARTITION BY gpu_id, kernel_id)
)
SELECT j.gpu_id, j.kernel_id, k.category, j.ctas_per_sm, j.time_ns,
       j.time_ns / j.time_at_max_ns AS time_vs_max_ctas,
       j.energy_j, j.l1_hit_rate, j.max_ctas, j.best_ctas, j.limits_run,
       j.time_at_max_ns / min(j.time_ns) OVER (PARTITION BY j.gpu_id, j.kernel_id)
           AS best_speedup,
       j.best_ctas < j.max_ctas AND j.l1_at_best > j.l1_at_max AS peaks_at_fewer_ctas
FROM judged AS j
JOIN kernel AS k USING (kernel_id)
ORDER BY j.gpu_id, j.kernel_id, j.ctas_per_sm;
