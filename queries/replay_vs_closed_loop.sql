/* Trace replay against the same controller run inside the simulator (`gpudb control`): per
   kernel, total time and energy of each, and how far the replay is from the closed loop (%).
   Replay splices in the fixed runs' intervals at the chosen settings; the closed loop runs
   each interval from the state the previous one left (warps mid-flight, caches, queues), so
   the two agree where a kernel's intervals are alike at every setting.
   A closed-loop run (policy 'closed_loop') is matched with the replay of the same predictor,
   objective, energy_perf bound, guard and energy scope (run.variant 'chip': `gpudb control
   --scope chip`) in control_result, replayed on the fixed runs of the closed-loop run's seed; a run of the dynamic optimal's
   schedule (predictor 'dynamic_optimal', `gpudb evaluate control`) with the stitched dynamic
   optimal of the same objective and energy scope (run.variant; the replay columns then hold
   the stitched bound). Chip energy: without the board power (other_j), papers 000 and 004's
   scope.
   Parameters: :predictor  one predictor (default: every one run in the closed loop)
               :objective  'edp', 'ed2p', 'energy' or 'energy_perf' (default: every one)
               :guard      'guarded' or 'paper' (default: every one)
               :gpu_id     one GPU (default: every GPU) */
WITH closed AS (
    SELECT
        gpu_id,
        kernel_id,
        predictor,
        objective,
        max_loss_pct,
        guard,
        seed,
        variant,
        time_ns,
        energy_j,
        energy_j - (SELECT sum(other_j) FROM interval AS i WHERE i.run_id = r.run_id)
            AS chip_energy_j,
        (SELECT count(*) FROM interval AS i WHERE i.run_id = r.run_id AND i.switch_ns > 0)
            AS switches
    FROM run AS r
    WHERE source = 'sim'
      AND policy = 'closed_loop'
)
SELECT
    c.gpu_id,
    c.kernel_id,
    c.predictor,
    c.objective,
    c.guard,
    r.energy_scope,
    r.time_ns AS replay_time_ns,
    c.time_ns AS closed_loop_time_ns,
    100.0 * (r.time_ns / c.time_ns - 1.0) AS time_diff_pct,
    r.energy_j AS replay_energy_j,
    c.energy_j AS closed_loop_energy_j,
    100.0 * (r.energy_j / c.energy_j - 1.0) AS energy_diff_pct,
    100.0 * (r.energy_j * r.time_ns / (c.energy_j * c.time_ns) - 1.0) AS edp_diff_pct,
    r.chip_energy_j AS replay_chip_energy_j,
    c.chip_energy_j AS closed_loop_chip_energy_j,
    100.0 * (r.chip_energy_j / c.chip_energy_j - 1.0) AS chip_energy_diff_pct,
    r.switches AS replay_switches,
    c.switches AS closed_loop_switches
FROM closed AS c
JOIN control_result AS r
  ON r.gpu_id = c.gpu_id AND r.kernel_id = c.kernel_id AND r.seed = c.seed
 AND r.objective = c.objective
 -- a predictor's closed-loop run minimised the chip's energy if its variant says so
 AND (r.policy = 'replay' AND r.energy_scope = coalesce(c.variant, 'run')
      AND r.predictor = c.predictor AND r.guard = c.guard
      OR c.predictor = 'dynamic_optimal' AND r.policy = 'dynamic_optimal'
      AND r.energy_scope = c.variant)
 AND (c.objective <> 'energy_perf' OR r.max_loss_pct = c.max_loss_pct)
WHERE (CAST(:predictor AS TEXT) IS NULL OR c.predictor = CAST(:predictor AS TEXT))
  AND (CAST(:objective AS TEXT) IS NULL OR c.objective = CAST(:objective AS TEXT))
  AND (CAST(:guard AS TEXT) IS NULL OR c.guard = CAST(:guard AS TEXT))
  AND (CAST(:gpu_id AS TEXT) IS NULL OR c.gpu_id = CAST(:gpu_id AS TEXT))
ORDER BY c.gpu_id, c.kernel_id, c.predictor, c.objective, c.guard, r.energy_scope;
