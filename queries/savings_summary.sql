/* Average savings per GPU, kernel category and control policy against always running at the
   highest core P-state (paper 000 figures 11-12: EDP and ED2P reduction by benchmark class),
   from control_result; the category 'all' averages every kernel of the GPU. Savings are positive when
   the policy is better; time_change_pct is the slowdown. Beside the means: the worst kernel's
   EDP saving and slowdown, and the mean number of P-state switches, so a mean that hides a
   harmful controller shows it. Over several seeds the means are over every kernel and seed
   (`gpudb evaluate control --seeds` gives each seed's and their mean with an interval).
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
per_kernel AS (
    SELECT
        r.gpu_id, r.policy, r.predictor, r.guard, k.category, r.switches,
        100.0 * (r.time_ns / r.baseline_time_ns - 1.0) AS time_change_pct,
        100.0 * (1.0 - r.energy_j / r.baseline_energy_j) AS energy_saving_pct,
        100.0 * (1.0 - (r.energy_j * r.time_ns)
                   / (r.baseline_energy_j * r.baseline_time_ns)) AS edp_saving_pct,
        100.0 * (1.0 - (r.energy_j * r.time_ns * r.time_ns)
                       / (r.baseline_energy_j * r.baseline_time_ns
                          * r.baseline_time_ns)) AS ed2p_saving_pct
    FROM results AS r
    JOIN kernel AS k USING (kernel_id)
)
SELECT
    gpu_id,
    policy,
    predictor,
    guard,
    coalesce(category, 'all') AS category,
    count(*) AS kernels,
    avg(time_change_pct) AS time_change_pct,
    avg(energy_saving_pct) AS energy_saving_pct,
    avg(edp_saving_pct) AS edp_saving_pct,
    avg(ed2p_saving_pct) AS ed2p_saving_pct,
    min(edp_saving_pct) AS worst_edp_saving_pct,
    max(time_change_pct) AS worst_time_change_pct,
    avg(switches) AS switches
FROM per_kernel
GROUP BY GROUPING SETS ((gpu_id, policy, predictor, guard, category),
                        (gpu_id, policy, predictor, guard))
ORDER BY gpu_id, policy, predictor, guard, category NULLS LAST;
