/* Paper 002 (Wu et al.) figures 10-11: the error of the wu model from each base setting. One
   row per base setting of a GPU (each SM count, core MHz and memory MHz with fixed runs) and
   stored wu model trained at it: the mean absolute percentage error (%) and largest error of
   predicted time and average power from the base to every other setting (the base itself
   excluded, as in the paper), over the model's validation kernels (or its training kernels).
   By default each setting shows the latest model trained at it (created_at), so after
   `gpudb train wu --base all` the rows are the heat map; a setting no model was trained at
   has NULL errors.
   Parameters: :gpu_id  one GPU (default: every GPU);
               :model_id  one stored model (its id, as `gpudb train wu` prints it), or 'all'
                          for every stored model (default: the latest at each base setting);
               :clusters  only models with this many clusters per set (default: all);
               :seed  only models trained with this seed (default: all);
               :split  'validation' (default) or 'training'. */
WITH side AS (
    SELECT CASE coalesce(CAST(:split AS TEXT), 'validation')
               WHEN 'validation' THEN false
               WHEN 'training' THEN true
               ELSE error('split must be validation or training')
           END AS in_training
),
setting AS (
    SELECT DISTINCT r.gpu_id, coalesce(r.n_sm, g.n_sm) AS n_sm, r.core_mhz, r.mem_mhz
    FROM run AS r
    JOIN gpu AS g ON g.gpu_id = r.gpu_id
    WHERE r.policy = 'fixed'
      AND (CAST(:gpu_id AS TEXT) IS NULL OR r.gpu_id = CAST(:gpu_id AS TEXT))
),
pick AS (
    SELECT CASE WHEN CAST(:model_id AS TEXT) IS NULL OR CAST(:model_id AS TEXT) = 'all'
                  OR CAST(:model_id AS TEXT) IN (SELECT model_id FROM wu_model)
                THEN CAST(:model_id AS TEXT)
                ELSE error('no wu model ''' || CAST(:model_id AS TEXT) || ''' (see table wu_model)')
           END AS model_id
),
model AS (
    SELECT m.*
    FROM wu_model AS m
    WHERE (CAST(:gpu_id AS TEXT) IS NULL OR m.gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:clusters AS INTEGER) IS NULL OR m.clusters = CAST(:clusters AS INTEGER))
      AND (CAST(:seed AS BIGINT) IS NULL OR m.seed = CAST(:seed AS BIGINT))
      AND coalesce((SELECT model_id FROM pick) IN ('all', m.model_id), true)
    -- no model_id: the latest at each base setting, ties to the greater id (view
    -- wu_model_current's rule, per base setting instead of per GPU)
    QUALIFY (SELECT model_id FROM pick) IS NOT NULL
         OR row_number() OVER (PARTITION BY m.gpu_id, m.base_n_sm, m.base_core_mhz,
                                            m.base_mem_mhz
                               ORDER BY m.created_at DESC, m.model_id DESC) = 1
),
actual AS (
    SELECT gpu_id, kernel_id, n_sm, core_mhz, mem_mhz,
           avg(time_ns) AS time_ns,
           avg(energy_j / (time_ns * 1e-9)) AS power_w
    FROM run
    WHERE policy = 'fixed' AND gpu_id IN (SELECT gpu_id FROM model)
    GROUP BY gpu_id, kernel_id, n_sm, core_mhz, mem_mhz
),
err AS (
    SELECT
        p.model_id,
        p.kernel_id,
        abs(p.predicted_ns - a.time_ns) / a.time_ns AS time_err,
        abs(p.predicted_power_w - a.power_w) / a.power_w AS power_err
    FROM pred_wu AS p
    JOIN actual AS a
      ON a.gpu_id = p.gpu_id AND a.kernel_id = p.kernel_id
     AND a.n_sm IS NOT DISTINCT FROM p.target_n_sm
     AND a.core_mhz = p.target_core_mhz AND a.mem_mhz = p.target_mem_mhz
    WHERE p.model_id IN (SELECT model_id FROM model)
      AND p.in_training = (SELECT in_training FROM side)
      AND NOT (p.target_n_sm IS NOT DISTINCT FROM p.base_n_sm
               AND p.target_core_mhz = p.base_core_mhz AND p.target_mem_mhz = p.base_mem_mhz)
),
model_err AS (
    SELECT
        model_id,
        count(DISTINCT kernel_id) AS kernels,
        count(time_err) AS predictions,
        100.0 * avg(time_err) AS time_mape_pct,
        100.0 * max(time_err) AS time_max_err_pct,
        100.0 * avg(power_err) AS power_mape_pct,
        100.0 * max(power_err) AS power_max_err_pct
    FROM err
    GROUP BY model_id
)
SELECT
    s.gpu_id,
    s.n_sm AS base_n_sm,
    s.core_mhz AS base_core_mhz,
    s.mem_mhz AS base_mem_mhz,
    m.model_id,
    m.clusters,
    m.seed,
    m.train_fraction,
    e.kernels,
    e.predictions,
    e.time_mape_pct,
    e.time_max_err_pct,
    e.power_mape_pct,
    e.power_max_err_pct
FROM setting AS s
LEFT JOIN model AS m
  ON m.gpu_id = s.gpu_id AND m.base_n_sm = s.n_sm
 AND m.base_core_mhz = s.core_mhz AND m.base_mem_mhz = s.mem_mhz
LEFT JOIN model_err AS e ON e.model_id = m.model_id
ORDER BY s.gpu_id, base_core_mhz DESC, base_mem_mhz, base_n_sm, m.clusters, m.seed, m.model_id;
