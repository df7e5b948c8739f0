/* Paper 001 figures 7-8: Equalizer in each mode (and with CTA control alone, and with V/F
   control alone) against the static operating points (SM and memory V/F 15% up or down), per
   kernel category and over all kernels ('all'): geometric-mean speedup (%) and energy change
   (%) against the same kernel's nominal static run. 'best static performance' is, per kernel,
   the fastest static point (nominal included); 'best static energy' the least-energy one among
   those at most 5% slower than nominal (section V-B's "static best"). The paper's figures from
   its text (section V-B) are beside ours: overall, performance mode 22% speedup at +6% energy,
   SM high 7% at +12%, memory high 6% at +7%, energy mode 5% faster (energy saving not given
   overall), SM low and memory low 9% and 7% slower; compute kernels 13.8% at +15% and 0.1%
   slower at -5% energy; memory kernels 12.4% at +11% and 2.5% slower at -11%; cache-sensitive
   kernels 54% faster at -11% energy in performance mode and 30% faster in energy mode. Runs
   from `gpudb evaluate equalizer` (gpudb/control/equalizer_loop.py).
   Parameters: :gpu_id  one GPU (default: every GPU)
               :suite   one kernel suite (default: every suite)
               :kernels 'all' (default: per category and overall) or 'each' (also per kernel) */
WITH nominal AS (
    SELECT gpu_id, kernel_id, avg(time_ns) AS time_ns, avg(energy_j) AS energy_j
    FROM run
    WHERE policy = 'static' AND variant = 'nominal'
    GROUP BY ALL
),
measured AS (
    SELECT r.gpu_id, r.kernel_id, k.category, r.policy, r.variant,
           CASE WHEN r.policy = 'static' THEN 'static ' || r.variant
                WHEN r.variant = 'full' THEN 'equalizer ' || r.objective
                WHEN r.variant = 'cta' THEN 'equalizer (cta only)'
                ELSE 'equalizer ' || r.objective || ' (' || r.variant || ' only)' END AS label,
           n.time_ns / r.time_ns AS speedup,
           r.energy_j / n.energy_j AS energy_ratio
    FROM run AS r
    JOIN kernel AS k USING (kernel_id)
    JOIN nominal AS n USING (gpu_id, kernel_id)
    WHERE (r.policy = 'static' OR r.policy = 'closed_loop' AND r.predictor = 'equalizer')
      AND (CAST(:gpu_id AS TEXT) IS NULL OR r.gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR r.kernel_id LIKE CAST(:suite AS TEXT) || '/%')
),
best AS (
    SELECT gpu_id, kernel_id, category, 'best static performance' AS label,
           max(speedup) AS speedup, arg_max(energy_ratio, speedup) AS energy_ratio
    FROM measured WHERE policy = 'static'
    GROUP BY ALL
    UNION ALL
    SELECT gpu_id, kernel_id, category, 'best static energy',
           arg_min(speedup, energy_ratio), min(energy_ratio)
    FROM measured WHERE policy = 'static' AND speedup >= 1.0 / 1.05
    GROUP BY ALL
),
policy AS (
    -- one row per kernel and label (a label run twice, e.g. the CTA-only variant stored under
    -- both modes by an older gpudb, counts once)
    SELECT gpu_id, kernel_id, category, label, exp(avg(ln(speedup))) AS speedup,
           exp(avg(ln(energy_ratio))) AS energy_ratio
    FROM measured WHERE NOT (policy = 'static' AND variant = 'nominal')
    GROUP BY ALL
    UNION ALL
    SELECT * FROM best
),
grouped AS (
    SELECT gpu_id, label AS policy,
           CASE WHEN coalesce(CAST(:kernels AS TEXT), 'all') = 'each' THEN kernel_id END
               AS kernel_id,
           category,
           count(*) AS kernels,
           (exp(avg(ln(speedup))) - 1.0) * 100.0 AS speedup_pct,
           (exp(avg(ln(energy_ratio))) - 1.0) * 100.0 AS energy_change_pct
    FROM policy
    GROUP BY GROUPING SETS ((gpu_id, label, 3, category), (gpu_id, label))
),
paper (category, policy, speedup_pct, energy_change_pct) AS (
    VALUES ('all', 'equalizer performance', 22.0, 6.0), ('all', 'static sm_high', 7.0, 12.0),
           ('all', 'static mem_high', 6.0, 7.0), ('all', 'equalizer energy', 5.0, NULL),
           ('all', 'static sm_low', -9.0, NULL), ('all', 'static mem_low', -7.0, NULL),
           ('compute', 'equalizer performance', 13.8, 15.0),
           ('compute', 'equalizer energy', -0.1, -5.0),
           ('memory', 'equalizer performance', 12.4, 11.0),
           ('memory', 'equalizer energy', -2.5, -11.0),
           ('cache', 'equalizer performance', 54.0, -11.0),
           ('cache', 'equalizer energy', 30.0, NULL)
)
SELECT
    g.gpu_id, g.policy, coalesce(g.category, 'all') AS category, g.kernel_id, g.kernels,
    g.speedup_pct, g.energy_change_pct,
    CASE WHEN g.kernel_id IS NULL THEN p.speedup_pct END AS paper_001_speedup_pct,
    CASE WHEN g.kernel_id IS NULL THEN p.energy_change_pct END AS paper_001_energy_change_pct
FROM grouped AS g
LEFT JOIN paper AS p ON p.category = coalesce(g.category, 'all') AND p.policy = g.policy
WHERE coalesce(CAST(:kernels AS TEXT), 'all') IN ('all', 'each')
ORDER BY g.gpu_id, g.category IS NOT NULL, g.category, g.kernel_id NULLS FIRST, g.policy;
