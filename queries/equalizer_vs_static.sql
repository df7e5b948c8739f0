/* Paper 001 figures 7-8: Equalizer in each mode (and with CTA control alone, with V/F control
   alone, and gpudb's energy-mode variant 'inclined', which throttles no domain of an unsaturated
   kernel without one excess warp per sample) against the static operating points (SM and memory V/F 15% up or down), per kernel
   category and over all kernels ('all'): geometric-mean speedup (%) and energy change (%) against
   the same kernel's nominal static run; chip energy leaves out gtx480's constant board power
   (other_j), since the paper's energy is GPUWattch's (its power report's components: SMs, NoC, L2,
   MC, DRAM) plus leakage, with no board term. 'paper classes' is the overall mean over the kernels
   of paper 001's four classes (compute, memory, cache, unsaturated) only; the paper's overall
   figures stand beside both it and 'all'. 'best static performance' is, per kernel, the fastest
   static point (nominal included); 'best static energy' the least-energy one among those at most
   5% slower than nominal (section V-B's "static best"). The paper's figures from its text (section
   V-B) are beside ours: overall, performance mode 22% speedup at +6% energy, SM high 7% at +12%,
   memory high 6% at +7%, energy mode 5% faster at -15% energy, the static best (SM or memory low
   within a 5% loss) -8% energy, SM low and memory low 9% and 7% slower; compute kernels 13.8% at
   +15% and 0.1% slower at -5% energy; memory kernels 12.4% at +11% and 2.5% slower at -11%; cache-
   sensitive kernels 54% faster at -11% energy in performance mode and 30% faster at -36% in energy
   mode; unsaturated kernels 1.3% slower at -6.4% in energy mode. Runs from `gpudb evaluate
   equalizer` (gpudb/control/kinds/equalizer.py).
   Every run is set against the nominal run of its own seed; over several seeds the means
   are over every kernel and seed (`gpudb evaluate equalizer --seeds` gives their mean over
   seeds with an interval).
   Parameters: :gpu_id  one GPU (default: every GPU)
               :suite   one kernel suite (default: every suite)
               :kernels 'all' (default: per category and overall) or 'each' (also per kernel)
               :seed    one seed's runs (default: every seed's) */
WITH energy AS (
    -- chip energy: the run's energy less the constant board power (other_j), the scope of
    -- paper 001's GPUWattch figures (dynamic power of SMs, NoC, L2, MC and DRAM plus leakage)
    SELECT r.*, r.energy_j - i.other_j AS chip_j
    FROM run AS r
    JOIN (SELECT run_id, sum(other_j) AS other_j FROM interval GROUP BY run_id) AS i
      USING (run_id)
    WHERE r.policy = 'static' OR r.policy = 'closed_loop' AND r.predictor = 'equalizer'
),
nominal AS (
    SELECT gpu_id, kernel_id, seed, avg(time_ns) AS time_ns, avg(energy_j) AS energy_j,
           avg(chip_j) AS chip_j
    FROM energy
    WHERE policy = 'static' AND variant = 'nominal'
    GROUP BY ALL
),
measured AS (
    SELECT r.gpu_id, r.kernel_id, k.category, r.seed, r.policy, r.variant,
           CASE WHEN r.policy = 'static' THEN 'static ' || r.variant
                WHEN r.variant = 'full' THEN 'equalizer ' || r.objective
                WHEN r.variant = 'cta' THEN 'equalizer (cta only)'
                WHEN r.variant = 'inclined' THEN 'equalizer ' || r.objective || ' (inclined)'
                ELSE 'equalizer ' || r.objective || ' (' || r.variant || ' only)' END AS label,
           n.time_ns / r.time_ns AS speedup,
           r.energy_j / n.energy_j AS energy_ratio,
           r.chip_j / n.chip_j AS chip_ratio
    FROM energy AS r
    JOIN kernel AS k USING (kernel_id)
    JOIN nominal AS n USING (gpu_id, kernel_id, seed)
    WHERE (CAST(:gpu_id AS TEXT) IS NULL OR r.gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR r.kernel_id LIKE CAST(:suite AS TEXT) || '/%')
      AND (CAST(:seed AS BIGINT) IS NULL OR r.seed = CAST(:seed AS BIGINT))
),
best AS (
    SELECT gpu_id, kernel_id, category, seed, 'best static performance' AS label,
           max(speedup) AS speedup, arg_max(energy_ratio, speedup) AS energy_ratio,
           arg_max(chip_ratio, speedup) AS chip_ratio
    FROM measured WHERE policy = 'static'
    GROUP BY ALL
    UNION ALL
    SELECT gpu_id, kernel_id, category, seed, 'best static energy',
           arg_min(speedup, energy_ratio), min(energy_ratio), arg_min(chip_ratio, energy_ratio)
    FROM measured WHERE policy = 'static' AND speedup >= 1.0 / 1.05
    GROUP BY ALL
),
policy AS (
    -- one row per kernel, seed and label (a label run twice, e.g. the CTA-only variant stored under
    -- both modes by an older gpudb, counts once)
    SELECT gpu_id, kernel_id, category, seed, label, exp(avg(ln(speedup))) AS speedup,
           exp(avg(ln(energy_ratio))) AS energy_ratio, exp(avg(ln(chip_ratio))) AS chip_ratio
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
           count(DISTINCT kernel_id) AS kernels,
           (exp(avg(ln(speedup))) - 1.0) * 100.0 AS speedup_pct,
           (exp(avg(ln(energy_ratio))) - 1.0) * 100.0 AS energy_change_pct,
           (exp(avg(ln(chip_ratio))) - 1.0) * 100.0 AS chip_energy_change_pct
    FROM policy
    GROUP BY GROUPING SETS ((gpu_id, label, 3, category), (gpu_id, label))
    UNION ALL
    -- the paper's 27 kernels all fall in its four classes; these rows are the like-for-like
    -- match for its overall figures, leaving out the categories of paper 000's suite
    SELECT gpu_id, label, NULL, 'paper classes', count(DISTINCT kernel_id),
           (exp(avg(ln(speedup))) - 1.0) * 100.0, (exp(avg(ln(energy_ratio))) - 1.0) * 100.0,
           (exp(avg(ln(chip_ratio))) - 1.0) * 100.0
    FROM policy
    WHERE category IN ('compute', 'memory', 'cache', 'unsaturated')
    GROUP BY gpu_id, label
),
paper (category, policy, speedup_pct, energy_change_pct) AS (
    VALUES ('all', 'equalizer performance', 22.0, 6.0), ('all', 'static sm_high', 7.0, 12.0),
           ('all', 'static mem_high', 6.0, 7.0), ('all', 'equalizer energy', 5.0, -15.0),
           ('all', 'best static energy', NULL, -8.0),
           ('all', 'static sm_low', -9.0, NULL), ('all', 'static mem_low', -7.0, NULL),
           ('compute', 'equalizer performance', 13.8, 15.0),
           ('compute', 'equalizer energy', -0.1, -5.0),
           ('memory', 'equalizer performance', 12.4, 11.0),
           ('memory', 'equalizer energy', -2.5, -11.0),
           ('cache', 'equalizer performance', 54.0, -11.0),
           ('cache', 'equalizer energy', 30.0, -36.0),
           ('unsaturated', 'equalizer energy', -1.3, -6.4)
)
SELECT
    g.gpu_id, g.policy, coalesce(g.category, 'all') AS category, g.kernel_id, g.kernels,
    g.speedup_pct, g.energy_change_pct, g.chip_energy_change_pct,
    CASE WHEN g.kernel_id IS NULL THEN p.speedup_pct END AS paper_001_speedup_pct,
    CASE WHEN g.kernel_id IS NULL THEN p.energy_change_pct END AS paper_001_energy_change_pct
FROM grouped AS g
LEFT JOIN paper AS p
  ON p.category = CASE WHEN g.category = 'paper classes' THEN 'all'
                       ELSE coalesce(g.category, 'all') END
 AND p.policy = g.policy
WHERE coalesce(CAST(:kernels AS TEXT), 'all') IN ('all', 'each')
ORDER BY g.gpu_id, g.category IS NOT NULL, g.category = 'paper classes' DESC, g.category,
         g.kernel_id NULLS FIRST, g.policy;
