-- Wu et al.'s machine-learning model (paper 002, HPCA 2015): features, classification and
-- predictions of the models stored by gpudb.wu_model.train_wu (schema/0003_wu_model.sql).
-- Plain SQL, no Python UDF: a classifier's forward pass is sums over its weight rows and
-- eq. 1 is a sum of logarithms of scaling values along a path, so these views also work in
-- DuckDB clients that have not registered gpudb's functions, and on untrusted files.

-- Predicted time (ns) and average power (W) from each base run to every setting at which the
-- GPU has fixed runs (the base setting included), with the columns of the other pred_* views
-- first (a whole-run prediction: sample_idx NULL, the base run's CTA limit and interval size)
-- and model_id, in_training, predicted_power_w after them: paper 002 eq. 1 with the chosen clusters'
-- centroids. CU steps first (at the base frequencies), then engine steps at the base memory
-- MHz, then memory steps at the target engine MHz, both from the target CU count's cluster set;
-- a downward step divides by its scaling value. NULL where the base run lacks a feature or the
-- target lies off the model's grid.
CREATE OR REPLACE VIEW pred_wu AS
WITH target AS (
    SELECT DISTINCT
        m.model_id,
        r.n_sm AS target_n_sm,
        coalesce(r.n_sm, g.n_sm) AS target_cu,
        r.core_mhz AS target_core_mhz,
        r.mem_mhz AS target_mem_mhz
    FROM wu_model AS m
    JOIN gpu AS g ON g.gpu_id = m.gpu_id
    JOIN run AS r ON r.gpu_id = m.gpu_id AND r.policy = 'fixed'
),
grid AS (
    SELECT model_id,
           list(value) FILTER (WHERE axis = 'cu') AS cu,
           list(value) FILTER (WHERE axis = 'core') AS core,
           list(value) FILTER (WHERE axis = 'mem') AS mem
    FROM wu_grid
    GROUP BY model_id
),
classified AS (
    SELECT c.model_id, c.run_id
    FROM wu_choice AS c
    GROUP BY c.model_id, c.run_id
    HAVING count(*) = (SELECT count(*) FROM wu_cluster_set AS s WHERE s.model_id = c.model_id)
),
pair AS (
    SELECT
        b.*, t.target_n_sm, t.target_cu, t.target_core_mhz, t.target_mem_mhz,
        c.run_id IS NOT NULL
            AND list_contains(gr.cu, CAST(t.target_cu AS DOUBLE))
            AND list_contains(gr.core, t.target_core_mhz)
            AND list_contains(gr.mem, t.target_mem_mhz) AS ok
    FROM wu_base AS b
    JOIN target AS t ON t.model_id = b.model_id
    JOIN grid AS gr ON gr.model_id = b.model_id
    LEFT JOIN classified AS c ON c.model_id = b.model_id AND c.run_id = b.run_id
),
step AS (
    SELECT p.model_id, p.run_id, p.target_cu, p.target_core_mhz, p.target_mem_mhz, k.quantity,
           CASE WHEN p.target_cu > p.cu THEN ln(k.scale) ELSE -ln(k.scale) END AS log_scale
    FROM pair AS p
    JOIN wu_choice AS ch ON ch.model_id = p.model_id AND ch.run_id = p.run_id AND ch.set_kind = 'cu'
    JOIN wu_centroid AS k
      ON k.model_id = ch.model_id AND k.quantity = ch.quantity AND k.set_kind = 'cu'
     AND k.cluster = ch.cluster AND k.axis = 'cu'
     AND k.from_value >= least(p.cu, p.target_cu) AND k.to_value <= greatest(p.cu, p.target_cu)
    WHERE p.ok
    UNION ALL
    SELECT p.model_id, p.run_id, p.target_cu, p.target_core_mhz, p.target_mem_mhz, k.quantity,
           CASE WHEN p.target_core_mhz > p.core_mhz THEN ln(k.scale) ELSE -ln(k.scale) END
    FROM pair AS p
    JOIN wu_choice AS ch
      ON ch.model_id = p.model_id AND ch.run_id = p.run_id AND ch.set_kind = 'freq'
     AND ch.set_n_sm = p.target_cu
    JOIN wu_centroid AS k
      ON k.model_id = ch.model_id AND k.quantity = ch.quantity AND k.set_kind = 'freq'
     AND k.set_n_sm = ch.set_n_sm AND k.cluster = ch.cluster AND k.axis = 'core'
     AND k.fixed_mhz = p.mem_mhz
     AND k.from_value >= least(p.core_mhz, p.target_core_mhz)
     AND k.to_value <= greatest(p.core_mhz, p.target_core_mhz)
    WHERE p.ok
    UNION ALL
    SELECT p.model_id, p.run_id, p.target_cu, p.target_core_mhz, p.target_mem_mhz, k.quantity,
           CASE WHEN p.target_mem_mhz > p.mem_mhz THEN ln(k.scale) ELSE -ln(k.scale) END
    FROM pair AS p
    JOIN wu_choice AS ch
      ON ch.model_id = p.model_id AND ch.run_id = p.run_id AND ch.set_kind = 'freq'
     AND ch.set_n_sm = p.target_cu
    JOIN wu_centroid AS k
      ON k.model_id = ch.model_id AND k.quantity = ch.quantity AND k.set_kind = 'freq'
     AND k.set_n_sm = ch.set_n_sm AND k.cluster = ch.cluster AND k.axis = 'mem'
     AND k.fixed_mhz = p.target_core_mhz
     AND k.from_value >= least(p.mem_mhz, p.target_mem_mhz)
     AND k.to_value <= greatest(p.mem_mhz, p.target_mem_mhz)
    WHERE p.ok
),
path AS (
    SELECT
        model_id, run_id, target_cu, target_core_mhz, target_mem_mhz,
        sum(log_scale) FILTER (WHERE quantity = 'time') AS log_time,
        sum(log_scale) FILTER (WHERE quantity = 'power') AS log_power
    FROM step
    GROUP BY model_id, run_id, target_cu, target_core_mhz, target_mem_mhz
)
SELECT
    'wu' AS predictor,
    'run' AS granularity,
    p.run_id,
    p.kernel_id,
    p.gpu_id,
    CAST(NULL AS INTEGER) AS sample_idx,
    p.core_mhz AS base_core_mhz,
    p.mem_mhz AS base_mem_mhz,
    p.n_sm AS base_n_sm,
    p.ctas_per_sm AS base_ctas_per_sm,
    p.interval_instructions,
    p.target_core_mhz,
    p.target_mem_mhz,
    p.target_n_sm,
    CASE WHEN p.ok THEN p.time_ns * exp(coalesce(x.log_time, 0.0)) END AS predicted_ns,
    p.model_id,
    p.in_training,
    CASE WHEN p.ok AND list_contains(m.quantities, 'power')
         THEN p.power_w * exp(coalesce(x.log_power, 0.0)) END AS predicted_power_w
FROM pair AS p
JOIN wu_model AS m ON m.model_id = p.model_id
LEFT JOIN path AS x
  ON x.model_id = p.model_id AND x.run_id = p.run_id AND x.target_cu = p.target_cu
 AND x.target_core_mhz = p.target_core_mhz AND x.target_mem_mhz = p.target_mem_mhz;
