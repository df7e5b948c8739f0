/* Fraction of the potential savings a policy realises (paper 004 section 4.3 and figure 1):
   its saving of the objective's metric (energy for 'energy' and 'energy_perf', EDP, ED2P)
   against the highest setting, over a bound's saving, per GPU and kernel, and per GPU overall
   (empty kernel_id: total realised over total potential saving of the GPU's kernels, i.e. the mean saving
   over the mean potential, as paper 004's 65% of dynamic optimal and 75% of perfect
   memoryless, which are for the energy objective). The bounds:
   fraction_realised        over the dynamic optimal, stitched from the fixed runs with
                            hindsight and no switching (policy 'dynamic_optimal', paper 004's
                            definition);
   fraction_of_run_bound    over the same schedule run in the simulator's closed loop
                            ('dynamic_optimal_run': switching paid, each interval from the
                            state the previous one left; NULL where it was not run);
   fraction_of_achievable   over the better of that run and the static optimal;
   fraction_of_memoryless   over perfect memoryless (a perfect memoryless predictor).
   1 means all of that potential; negative means the policy loses against the baseline.
   Each result is set against the bounds of its own seed; a kernel's row pools its seeds'
   results.
   Parameters: :objective     'edp' (default), 'ed2p', 'energy' or 'energy_perf'
               :max_loss_pct  energy_perf's bound, % (default 1)
               :guard         'guarded' or 'paper': one guard of the replays (default: every one)
               :gpu_id        one GPU (default: every GPU)
               :suite         one kernel suite (default: every suite)
               :seed          one seed's results (default: every seed's, each against
                              its own seed's baseline)
               :scope         'run' (default: the run's energy, board power included) or
                              'chip' (without it, papers 000 and 004's scope): the energy the
                              policies minimised and the savings are counted in */
-- MATERIALIZED: a scope other than run or chip is refused even where no result matches
WITH scope AS MATERIALIZED (
    SELECT CASE WHEN coalesce(CAST(:scope AS TEXT), 'run') IN ('run', 'chip')
                THEN coalesce(CAST(:scope AS TEXT), 'run')
                ELSE error('scope must be run or chip, got ' || CAST(:scope AS TEXT)) END AS name
),
results AS (
    -- each result beside its baseline, energies in the scope asked for
    SELECT *
    FROM control_vs_baseline
    WHERE energy_scope = (SELECT name FROM scope)
      AND objective = coalesce(CAST(:objective AS TEXT), 'edp')
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
            WHEN 'edp' THEN r.baseline_energy_j * r.baseline_time_ns
            WHEN 'ed2p' THEN r.baseline_energy_j * r.baseline_time_ns * r.baseline_time_ns
            ELSE r.baseline_energy_j
        END AS baseline
    FROM results AS r
),
-- per kernel, each bound's saving beside the policy's
saved AS (
    SELECT m.*, 1.0 - m.value / m.baseline AS saving,
           1.0 - d.value / d.baseline AS potential,
           1.0 - dr.value / dr.baseline AS potential_run,
           greatest(1.0 - dr.value / dr.baseline, 1.0 - so.value / so.baseline)
               AS potential_achievable,
           1.0 - pm.value / pm.baseline AS potential_memoryless
    FROM metric AS m
    JOIN metric AS d
      ON d.gpu_id = m.gpu_id AND d.kernel_id = m.kernel_id AND d.seed = m.seed
     AND d.policy = 'dynamic_optimal'
    LEFT JOIN metric AS dr
      ON dr.gpu_id = m.gpu_id AND dr.kernel_id = m.kernel_id AND dr.seed = m.seed
     AND dr.policy = 'dynamic_optimal_run'
    LEFT JOIN metric AS so
      ON so.gpu_id = m.gpu_id AND so.kernel_id = m.kernel_id AND so.seed = m.seed
     AND so.policy = 'static_optimal'
    LEFT JOIN metric AS pm
      ON pm.gpu_id = m.gpu_id AND pm.kernel_id = m.kernel_id AND pm.seed = m.seed
     AND pm.policy = 'perfect_memoryless'
)
SELECT
    gpu_id,
    policy,
    predictor,
    guard,
    kernel_id,
    100.0 * avg(saving) AS saving_pct,
    100.0 * avg(potential) AS potential_pct,
    sum(saving) / nullif(sum(potential), 0) AS fraction_realised,
    100.0 * avg(potential_run) AS potential_run_pct,
    -- NULL unless every kernel has the bound
    CASE WHEN count(potential_run) = count(*)
         THEN sum(saving) / nullif(sum(potential_run), 0) END AS fraction_of_run_bound,
    CASE WHEN count(potential_achievable) = count(*)
         THEN sum(saving) / nullif(sum(potential_achievable), 0) END AS fraction_of_achievable,
    100.0 * avg(potential_memoryless) AS potential_memoryless_pct,
    CASE WHEN count(potential_memoryless) = count(*)
         THEN sum(saving) / nullif(sum(potential_memoryless), 0) END AS fraction_of_memoryless
FROM saved
GROUP BY GROUPING SETS ((gpu_id, policy, predictor, guard, kernel_id),
                        (gpu_id, policy, predictor, guard))
ORDER BY gpu_id, kernel_id NULLS FIRST, policy, predictor, guard;
