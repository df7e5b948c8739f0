/* Fraction of the potential savings a policy realises (paper 004 figure 1): its saving of
   the objective's metric (energy for 'energy' and 'energy_perf', EDP, ED2P) against the
   highest setting, over the dynamic-optimal policy's saving, per kernel, and overall (empty
   kernel_id: total realised over total potential saving of the kernels). 1 means all of the
   potential; negative means the policy loses against the baseline. Each result is set
   against the dynamic optimum of its own seed; a kernel's row pools its seeds' results.
   Parameters: :objective     'edp' (default), 'ed2p', 'energy' or 'energy_perf'
               :max_loss_pct  energy_perf's bound, % (default 1)
               :guard         'guarded' or 'paper': one guard of the replays (default: every one)
               :gpu_id        one GPU (default: every GPU)
               :suite         one kernel suite (default: every suite)
               :seed          one seed's results (default: every seed's, each against
                              its own seed's baseline) */
WITH results AS (
    SELECT *
    FROM control_result
    WHERE objective = coalesce(CAST(:objective AS TEXT), 'edp')
      AND max_loss_pct = coalesce(CAST(:max_loss_pct AS DOUBLE), 1.0)
      AND (CAST(:guard AS TEXT) IS NULL OR guard IN (CAST(:guard AS TEXT), ''))
      AND (CAST(:gpu_id AS TEXT) IS NULL OR gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR kernel_id LIKE CAST(:suite AS TEXT) || '/%')
      AND (CAST(:seed AS BIGINT) IS NULL OR seed = CAST(:seed AS BIGINT))
),
metric AS (
    SELECT
        r.gpu_id, r.kernel_id, r.seed, r.policy, r.predictor, r.guard,
        CASE r.objective
            WHEN 'edp' THEN r.energy_j * r.time_ns
            WHEN 'ed2p' THEN r.energy_j * r.time_ns * r.time_ns
            ELSE r.energy_j
        END AS value,
        CASE r.objective
            WHEN 'edp' THEN b.energy_j * b.time_ns
            WHEN 'ed2p' THEN b.energy_j * b.time_ns * b.time_ns
            ELSE b.energy_j
        END AS baseline
    FROM results AS r
    JOIN control_baseline AS b USING (gpu_id, kernel_id, seed)
),
saved AS (
    SELECT m.*, 1.0 - m.value / m.baseline AS saving,
           1.0 - d.value / d.baseline AS potential
    FROM metric AS m
    JOIN metric AS d
      ON d.gpu_id = m.gpu_id AND d.kernel_id = m.kernel_id AND d.seed = m.seed
     AND d.policy = 'dynamic_optimal'
)
SELECT
    policy,
    predictor,
    guard,
    kernel_id,
    100.0 * avg(saving) AS saving_pct,
    100.0 * avg(potential) AS potential_pct,
    sum(saving) / nullif(sum(potential), 0) AS fraction_realised
FROM saved
GROUP BY GROUPING SETS ((policy, predictor, guard, kernel_id), (policy, predictor, guard))
ORDER BY kernel_id NULLS FIRST, policy, predictor, guard;
