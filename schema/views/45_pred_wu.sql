-- Wu et al.'s machine-learning model (paper 002, HPCA 2015): features, classification and
-- predictions of the models stored by gpudb.wu_model.train_wu (schema/0003_wu_model.sql).
-- Plain SQL, no Python UDF: a classifier's forward pass is sums over its weight rows and
-- eq. 1 is a sum of logarithms of scaling values along a path, so these views also work in
-- DuckDB clients that have not registered gpudb's functions, and on untrusted files.

-- Classifier inputs per run: every whole-run metric (e.g. the DCGM activities of a measured
-- dataset) and, for runs with intervals (simulated), analogues of paper 002 table II computed
-- from the interval counters summed over the run. Ratios of counts that are 0 are 0 (no
-- stores: 0 stores per store transaction); NULL counters give NULL features.
CREATE OR REPLACE VIEW wu_feature AS
SELECT run_id, name AS feature, avg(value) AS value
FROM metric
WHERE idx IS NULL AND value IS NOT NULL
GROUP BY run_id, name
UNION ALL
SELECT run_id, feature, value
FROM (
    SELECT
        run_id,
        -- instruction mix (VALUInsts, VFetchInsts, VWriteInsts, LDSInsts; SFU for SALUInsts)
        CASE WHEN sum(instructions) = 0 THEN 0.0 ELSE sum(alu_insts) / sum(instructions) END AS wu_alu_inst_frac,
        CASE WHEN sum(instructions) = 0 THEN 0.0 ELSE sum(sfu_insts) / sum(instructions) END AS wu_sfu_inst_frac,
        CASE WHEN sum(instructions) = 0 THEN 0.0 ELSE sum(gld_insts) / sum(instructions) END AS wu_load_inst_frac,
        CASE WHEN sum(instructions) = 0 THEN 0.0 ELSE sum(gst_insts) / sum(instructions) END AS wu_store_inst_frac,
        CASE WHEN sum(instructions) = 0 THEN 0.0 ELSE sum(shared_insts) / sum(instructions) END AS wu_shared_inst_frac,
        -- unit activity, fractions of core cycles (VALUBusy, SALUBusy, MemUnitBusy,
        -- MemUnitStalled, WriteUnitStalled)
        CASE WHEN sum(cycles) = 0 THEN 0.0 ELSE sum(alu_busy_cycles) / sum(cycles) END AS wu_alu_busy,
        CASE WHEN sum(cycles) = 0 THEN 0.0 ELSE sum(sfu_busy_cycles) / sum(cycles) END AS wu_sfu_busy,
        CASE WHEN sum(cycles) = 0 THEN 0.0 ELSE sum(mem_unit_busy_cycles) / sum(cycles) END AS wu_mem_unit_busy,
        CASE WHEN sum(cycles) = 0 THEN 0.0 ELSE sum(mem_unit_stall_cycles) / sum(cycles) END AS wu_mem_unit_stalled,
        CASE WHEN sum(cycles) = 0 THEN 0.0 ELSE sum(write_unit_stall_cycles) / sum(cycles) END AS wu_write_unit_stalled,
        -- CacheHit (L2 hit rate)
        CASE WHEN sum(l2_accesses) = 0 THEN 0.0 ELSE sum(l2_hits) / sum(l2_accesses) END AS wu_l2_hit_rate,
        -- Occupancy, time-weighted
        sum(occupancy * time_ns) / sum(time_ns) AS wu_occupancy,
        -- V_IPC: warp instructions per core cycle (per-SM cycles, GPU-wide instructions)
        CASE WHEN sum(cycles) = 0 THEN 0.0 ELSE sum(instructions) / sum(cycles) END AS wu_ipc,
        -- MemTime: least DRAM time for the run's requests over the run time
        sum(dram_min_ns) / sum(time_ns) AS wu_mem_time,
        -- FetchPerLoadByte, WritePerStoreByte: per transaction (bytes per transaction are fixed)
        CASE WHEN sum(gld_transactions) = 0 THEN 0.0 ELSE sum(gld_insts) / sum(gld_transactions) END AS wu_loads_per_transaction,
        CASE WHEN sum(gst_transactions) = 0 THEN 0.0 ELSE sum(gst_insts) / sum(gst_transactions) END AS wu_stores_per_transaction,
        -- ReadBandwidth, WriteBandwidth: DRAM transactions per ns
        sum(dram_reads) / sum(time_ns) AS wu_read_bandwidth,
        sum(dram_writes) / sum(time_ns) AS wu_write_bandwidth
    FROM interval
    GROUP BY run_id
) UNPIVOT (value FOR feature IN (
    wu_alu_inst_frac, wu_sfu_inst_frac, wu_load_inst_frac, wu_store_inst_frac, wu_shared_inst_frac,
    wu_alu_busy, wu_sfu_busy, wu_mem_unit_busy, wu_mem_unit_stalled, wu_write_unit_stalled,
    wu_l2_hit_rate, wu_occupancy, wu_ipc, wu_mem_time, wu_loads_per_transaction,
    wu_stores_per_transaction, wu_read_bandwidth, wu_write_bandwidth));

-- Base runs of each model: the fixed runs of its GPU at its base setting (a NULL n_sm is the
-- GPU's SM count), with average power = energy / time (W). in_training: the kernel was in the
-- model's training split; false for its validation kernels and for kernels it never saw.
CREATE OR REPLACE VIEW wu_base AS
SELECT
    m.model_id,
    r.run_id,
    r.kernel_id,
    r.gpu_id,
    r.n_sm,
    coalesce(r.n_sm, g.n_sm) AS cu,
    r.core_mhz,
    r.mem_mhz,
    r.ctas_per_sm,
    r.interval_instructions,
    r.time_ns,
    r.energy_j / (r.time_ns * 1e-9) AS power_w,
    coalesce(s.in_training, false) AS in_training
FROM wu_model AS m
JOIN gpu AS g ON g.gpu_id = m.gpu_id
JOIN run AS r
  ON r.gpu_id = m.gpu_id
 AND r.policy = 'fixed'
 AND coalesce(r.n_sm, g.n_sm) = m.base_n_sm
 AND r.core_mhz = m.base_core_mhz
 AND r.mem_mhz = m.base_mem_mhz
LEFT JOIN wu_split AS s ON s.model_id = m.model_id AND s.kernel_id = r.kernel_id;

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
