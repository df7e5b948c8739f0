/* A kernel's core clock interval by interval under every control policy in control_result
   (trace-replayed controllers with their guard, and the offline policies), with the interval's
   actual time and energy at that clock from the fixed run, so a reader sees why a controller
   wins or loses: where it steps down, ping-pongs, or stays low. One row per policy and
   interval; switching overhead is not included (see savings for the totals).
   Parameters: :kernel_id     the kernel, e.g. default/twoslope_lm (default: every kernel)
               :objective     'edp' (default), 'ed2p', 'energy' or 'energy_perf'
               :max_loss_pct  energy_perf's bound, % (default 1)
               :predictor     one predictor of the replays (default: every one)
               :guard         'guarded' or 'paper': one guard of the replays (default: every one)
               :gpu_id        one GPU (default: every GPU)
               :seed          one seed (default: each kernel's lowest)
               :scope         'run' (default) or 'chip': the energy scope the policies
                              minimised (schema/0011_chip_energy.sql); energy_j is in it */
WITH results AS (
    SELECT *
    FROM control_result
    WHERE energy_scope = coalesce(CAST(:scope AS TEXT), 'run')
      AND objective = coalesce(CAST(:objective AS TEXT), 'edp')
      AND max_loss_pct = coalesce(CAST(:max_loss_pct AS DOUBLE), 1.0)
      AND (CAST(:kernel_id AS TEXT) IS NULL OR kernel_id = CAST(:kernel_id AS TEXT))
      AND (CAST(:predictor AS TEXT) IS NULL OR predictor IN (CAST(:predictor AS TEXT), ''))
      AND (CAST(:guard AS TEXT) IS NULL OR guard IN (CAST(:guard AS TEXT), ''))
      AND (CAST(:gpu_id AS TEXT) IS NULL OR gpu_id = CAST(:gpu_id AS TEXT))
      AND seed = coalesce(CAST(:seed AS BIGINT),
                          (SELECT min(s.seed) FROM control_result AS s
                           WHERE s.gpu_id = control_result.gpu_id
                             AND s.kernel_id = control_result.kernel_id))
),
steps AS (
    SELECT r.gpu_id, r.kernel_id, r.seed, r.policy, r.predictor, r.guard,
           CAST(s.idx - 1 AS INTEGER) AS idx, s.core_mhz
    FROM results AS r,
         unnest(r.settings) WITH ORDINALITY AS s(core_mhz, idx)
)
SELECT
    s.gpu_id, s.kernel_id, s.policy, s.predictor, s.guard, s.idx, s.core_mhz,
    s.idx > 0 AND s.core_mhz <> lag(s.core_mhz) OVER (
        PARTITION BY s.gpu_id, s.kernel_id, s.policy, s.predictor, s.guard ORDER BY s.idx)
        AS switched,
    o.time_ns,
    CASE WHEN coalesce(CAST(:scope AS TEXT), 'run') = 'chip' THEN o.energy_j - o.other_j
         ELSE o.energy_j END AS energy_j
FROM steps AS s
JOIN control_interval AS o
  ON o.gpu_id = s.gpu_id AND o.kernel_id = s.kernel_id AND o.seed = s.seed AND o.idx = s.idx
 AND o.core_mhz = s.core_mhz
ORDER BY s.gpu_id, s.kernel_id, s.policy, s.predictor, s.guard, s.idx;
