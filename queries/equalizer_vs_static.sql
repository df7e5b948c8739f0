/* Paper 001 figures 7-8: Equalizer in each mode (and with CTA control alone) against the static
   operating points (nominal, SM and memory V/F 15% up or down), per kernel category and over
   all kernels ('all'): geometric-mean speedup (%) and energy change (%) against the same
   kernel's nominal static run, with the paper's averages beside ours where its text gives them
   (section V: performance mode 22% speedup at +6% energy, SM high 7% at +12%, memory high 6%
   at +7%; energy mode 15% energy saving at 5% higher performance, SM low and memory low 9% and
   7% slower). Runs from `gpudb evaluate equalizer` (gpudb/control/equalizer_loop.py).
   Parameters: :gpu_id  one GPU (default: every GPU)
               :suite   one kernel suite (default: every suite)
               :kernels 'all' (default: per category and overall) or 'each' (one row per kernel) */
WITH nominal AS (
    SELECT gpu_id, kernel_id, avg(time_ns) AS time_ns, avg(energy_j) AS energy_j
    FROM run
    WHERE policy = 'static' AND variant = 'nominal'
    GROUP BY ALL
),
policy AS (
    SELECT r.gpu_id, r.kernel_id, k.category,
           CASE WHEN r.policy = 'static' THEN 'static ' || r.variant
                WHEN r.variant = 'full' THEN 'equalizer ' || r.objective
                ELSE 'equalizer ' || r.objective || ' (' || r.variant || ' only)' END AS policy,
           n.time_ns / r.time_ns AS speedup,
           r.energy_j / n.energy_j AS energy_ratio
    FROM run AS r
    JOIN kernel AS k USING (kernel_id)
    JOIN nominal AS n USING (gpu_id, kernel_id)
    WHERE (r.policy = 'static' AND r.variant <> 'nominal'
           OR r.policy = 'closed_loop' AND r.predictor = 'equalizer')
      AND (CAST(:gpu_id AS TEXT) IS NULL OR r.gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR r.kernel_id LIKE CAST(:suite AS TEXT) || '/%')
),
grouped AS (
    SELECT gpu_id, policy,
           CASE WHEN coalesce(CAST(:kernels AS TEXT), 'all') = 'each' THEN kernel_id END
               AS kernel_id,
           category,
           count(*) AS kernels,
           (exp(avg(ln(speedup))) - 1.0) * 100.0 AS speedup_pct,
           (exp(avg(ln(energy_ratio))) - 1.0) * 100.0 AS energy_change_pct
    FROM policy
    GROUP BY GROUPING SETS ((gpu_id, policy, 3, category), (gpu_id, policy))
)
SELECT
    gpu_id, policy, coalesce(category, 'all') AS category, kernel_id, kernels,
    speedup_pct, energy_change_pct,
    CASE WHEN category IS NULL THEN CASE policy
        WHEN 'equalizer performance' THEN 22.0 WHEN 'static sm_high' THEN 7.0
        WHEN 'static mem_high' THEN 6.0 WHEN 'equalizer energy' THEN 5.0
        WHEN 'static sm_low' THEN -9.0 WHEN 'static mem_low' THEN -7.0 END END
        AS paper_001_speedup_pct,
    CASE WHEN category IS NULL THEN CASE policy
        WHEN 'equalizer performance' THEN 6.0 WHEN 'static sm_high' THEN 12.0
        WHEN 'static mem_high' THEN 7.0 WHEN 'equalizer energy' THEN -15.0 END END
        AS paper_001_energy_change_pct
FROM grouped
WHERE coalesce(CAST(:kernels AS TEXT), 'all') IN ('all', 'each')
ORDER BY gpu_id, category IS NOT NULL, category, kernel_id NULLS FIRST, policy;
