-- The cluster each model's classifiers choose for each base run, per quantity and cluster set
-- (paper 002 section III-D): inputs min-max normalised with the stored bounds, a sigmoid
-- hidden layer, the arg-max output. Runs lacking any feature get no rows. A set of one cluster
-- needs no classifier.
CREATE OR REPLACE VIEW wu_choice AS
WITH input AS (
    SELECT
        b.model_id,
        b.run_id,
        fb.position AS unit,
        CASE WHEN fb.max_value > fb.min_value
             THEN (f.value - fb.min_value) / (fb.max_value - fb.min_value)
             ELSE 0.0 END AS x
    FROM wu_base AS b
    JOIN wu_feature_bound AS fb ON fb.model_id = b.model_id
    JOIN wu_feature AS f ON f.run_id = b.run_id AND f.feature = fb.feature
),
complete AS (
    SELECT i.model_id, i.run_id
    FROM input AS i
    GROUP BY i.model_id, i.run_id
    HAVING count(*) = (SELECT count(*) FROM wu_feature_bound AS fb WHERE fb.model_id = i.model_id)
),
input_bias AS (
    SELECT i.model_id, i.run_id, i.unit, i.x FROM input AS i SEMI JOIN complete AS c USING (model_id, run_id)
    UNION ALL
    SELECT model_id, run_id, -1, 1.0 FROM complete
),
hidden AS (
    SELECT
        i.model_id, i.run_id, w.quantity, w.set_kind, w.set_n_sm, w.dst AS unit,
        1.0 / (1.0 + exp(-greatest(least(sum(i.x * w.weight), 500.0), -500.0))) AS h
    FROM input_bias AS i
    JOIN wu_weight AS w ON w.model_id = i.model_id AND w.layer = 1 AND w.src = i.unit
    GROUP BY i.model_id, i.run_id, w.quantity, w.set_kind, w.set_n_sm, w.dst
),
hidden_bias AS (
    SELECT * FROM hidden
    UNION ALL
    SELECT DISTINCT model_id, run_id, quantity, set_kind, set_n_sm, -1, 1.0 FROM hidden
),
output AS (
    SELECT
        h.model_id, h.run_id, h.quantity, h.set_kind, h.set_n_sm, w.dst AS cluster,
        sum(h.h * w.weight) AS score
    FROM hidden_bias AS h
    JOIN wu_weight AS w
      ON w.model_id = h.model_id AND w.quantity = h.quantity AND w.set_kind = h.set_kind
     AND w.set_n_sm IS NOT DISTINCT FROM h.set_n_sm AND w.layer = 2 AND w.src = h.unit
    GROUP BY h.model_id, h.run_id, h.quantity, h.set_kind, h.set_n_sm, w.dst
)
SELECT model_id, run_id, quantity, set_kind, set_n_sm, arg_max(cluster, score) AS cluster
FROM output
GROUP BY model_id, run_id, quantity, set_kind, set_n_sm
UNION ALL
SELECT c.model_id, c.run_id, s.quantity, s.set_kind, s.set_n_sm, 0
FROM complete AS c
JOIN wu_cluster_set AS s ON s.model_id = c.model_id AND s.n_clusters = 1;
