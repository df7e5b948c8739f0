/* Per kernel and control policy: total time, energy, EDP and ED2P, and their change against
   always running at the highest core P-state (the baseline), from control_result (written by
   `gpudb evaluate control`). Savings are positive when the policy is better; time_change_pct
   is the slowdown. Policies: 'replay' (a predictor-driven controller, trace-replayed, with
   its guard: 'guarded' or 'paper'), 'dynamic_optimal', 'static_optimal',
   'perfect_memoryless' (paper 004 section 4.3).
   Parameters: :objective     'edp' (default), 'ed2p', 'energy' or 'energy_perf'
               :max_loss_pct  energy_perf's bound, % (default 1)
               :guard         'guarded' or 'paper': one guard of the replays (default: every one)
               :gpu_id        one GPU (default: every GPU)
               :suite         one kernel suite (default: every suite)
               :seed          one seed's results (default: every seed's, each against
                              its own seed's baseline)
               :scope         'run' (default: the run's energy, board power included) or
                              'chip' (without it, papers 000 and 004's scope): the energy the
                              policies minimised and the savings are counted in
   Shown first: edp_saving_pct, energy_saving_pct, time_change_pct */
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
)
SELECT
    r.gpu_id,
    r.kernel_id,
    k.category,
    r.policy,
    r.predictor,
    r.guard,
    r.objective,
    r.switches,
    r.time_ns,
    r.energy_j,
    r.energy_j * r.time_ns * 1e-9 AS edp_j_s,
    r.energy_j * (r.time_ns * 1e-9) * (r.time_ns * 1e-9) AS ed2p_j_s2,
    100.0 * (r.time_ns / r.baseline_time_ns - 1.0) AS time_change_pct,
    100.0 * (1.0 - r.energy_j / r.baseline_energy_j) AS energy_saving_pct,
    100.0 * (1.0 - (r.energy_j * r.time_ns)
                   / (r.baseline_energy_j * r.baseline_time_ns)) AS edp_saving_pct,
    100.0 * (1.0 - (r.energy_j * r.time_ns * r.time_ns)
                   / (r.baseline_energy_j * r.baseline_time_ns
                      * r.baseline_time_ns)) AS ed2p_saving_pct,
    r.seed
FROM results AS r
JOIN kernel AS k USING (kernel_id)
ORDER BY r.gpu_id, r.kernel_id, r.policy, r.predictor, r.guard, r.seed;
