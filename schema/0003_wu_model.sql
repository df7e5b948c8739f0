-- Wu et al.'s machine-learning performance and power model (paper 002, HPCA 2015), trained by
-- gpudb.wu_model.train_wu and evaluated in SQL by the pred_wu view (schema/views/pred_wu.sql).
-- A model is trained for one GPU and one base setting; its id is a content hash of its
-- parameters and training data, so retraining the same thing replaces it. Child rows carry no
-- foreign keys: a model is written (and replaced) whole, in one transaction.
-- Quantities: 'time' (run time, ns) and 'power' (average power = energy / time, W).
-- Cluster sets: set_kind 'freq' with set_n_sm = a CU (SM) count (engine and memory scaling at
-- that count, figure 7), or set_kind 'cu' with set_n_sm NULL (CU scaling, figure 8).

CREATE TABLE wu_model (
    model_id              TEXT PRIMARY KEY,
    gpu_id                TEXT NOT NULL REFERENCES gpu (gpu_id),
    base_n_sm             INTEGER NOT NULL CHECK (base_n_sm > 0),
    base_core_mhz         DOUBLE NOT NULL CHECK (base_core_mhz > 0),
    base_mem_mhz          DOUBLE NOT NULL CHECK (base_mem_mhz > 0),
    features              TEXT[] NOT NULL,     -- classifier inputs, names in view wu_feature
    clusters              INTEGER NOT NULL CHECK (clusters > 0),  -- requested per cluster set
    seed                  BIGINT NOT NULL,
    train_fraction        DOUBLE NOT NULL CHECK (train_fraction > 0 AND train_fraction <= 1),
    quantities            TEXT[] NOT NULL,     -- ['time'] or ['time', 'power']
    data_sha256           TEXT NOT NULL,       -- of the fixed runs trained on (run_id, time, energy)
    trainer               TEXT NOT NULL,       -- library and settings that built it
    created_at            TIMESTAMPTZ NOT NULL,
    gpudb_version         TEXT NOT NULL,
    train_seconds         DOUBLE,
    -- mean absolute percentage errors over kernels x targets (base setting excluded)
    val_time_mape_pct     DOUBLE,
    val_power_mape_pct    DOUBLE,
    train_time_mape_pct   DOUBLE,
    train_power_mape_pct  DOUBLE,
    oracle_time_mape_pct  DOUBLE,   -- training kernels, k-means labels as the classifier (section V-B2)
    oracle_power_mape_pct DOUBLE
);

-- The random kernel split (section IV: 80% train, 20% validation by default).
CREATE TABLE wu_split (
    model_id     TEXT NOT NULL,
    kernel_id    TEXT NOT NULL,
    in_training  BOOLEAN NOT NULL,
    PRIMARY KEY (model_id, kernel_id)
);

-- The grid the scaling values cover: axis 'cu' (SM count), 'core' or 'mem' (MHz).
CREATE TABLE wu_grid (
    model_id  TEXT NOT NULL,
    axis      TEXT NOT NULL CHECK (axis IN ('cu', 'core', 'mem')),
    position  INTEGER NOT NULL CHECK (position >= 0),
    value     DOUBLE NOT NULL,
    PRIMARY KEY (model_id, axis, position)
);

-- Min-max normalisation bounds of each classifier input over the training kernels (III-D).
CREATE TABLE wu_feature_bound (
    model_id   TEXT NOT NULL,
    position   INTEGER NOT NULL CHECK (position >= 0),   -- input unit of the classifiers
    feature    TEXT NOT NULL,
    min_value  DOUBLE NOT NULL,
    max_value  DOUBLE NOT NULL,
    PRIMARY KEY (model_id, position)
);

CREATE TABLE wu_cluster_set (
    model_id      TEXT NOT NULL,
    quantity      TEXT NOT NULL CHECK (quantity IN ('time', 'power')),
    set_kind      TEXT NOT NULL CHECK (set_kind IN ('freq', 'cu')),
    set_n_sm      INTEGER CHECK ((set_kind = 'cu') = (set_n_sm IS NULL)),
    n_clusters    INTEGER NOT NULL CHECK (n_clusters > 0),  -- a set of one needs no classifier
    inertia       DOUBLE                                     -- k-means sum of squared distances
);

-- Centroids (section III-C): one row per scaling value. axis 'core' (engine) steps hold the
-- memory MHz fixed_mhz constant, 'mem' steps the core MHz; 'cu' steps are at the base setting.
-- scale = value at to_value / value at from_value (dimensionless), to_value the next grid
-- point above from_value.
CREATE TABLE wu_centroid (
    model_id    TEXT NOT NULL,
    quantity    TEXT NOT NULL,
    set_kind    TEXT NOT NULL,
    set_n_sm    INTEGER,
    cluster     INTEGER NOT NULL CHECK (cluster >= 0),
    axis        TEXT NOT NULL CHECK (axis IN ('cu', 'core', 'mem')),
    fixed_mhz   DOUBLE,
    from_value  DOUBLE NOT NULL,
    to_value    DOUBLE NOT NULL CHECK (to_value > from_value),
    scale       DOUBLE NOT NULL CHECK (scale > 0)
);

-- k-means labels of the training kernels: the oracle classifier of section V-B2.
CREATE TABLE wu_assignment (
    model_id   TEXT NOT NULL,
    quantity   TEXT NOT NULL,
    set_kind   TEXT NOT NULL,
    set_n_sm   INTEGER,
    kernel_id  TEXT NOT NULL,
    cluster    INTEGER NOT NULL
);

-- Classifier weights (section III-D, figure 9), stored as numbers rather than a pickled
-- object so that reading a model never runs code from the file. Layer 1: input unit src
-- (wu_feature_bound.position) -> hidden unit dst; layer 2: hidden unit src -> output dst =
-- cluster. src = -1 is the bias. Hidden units are sigmoid, the chosen cluster the arg-max.
CREATE TABLE wu_weight (
    model_id  TEXT NOT NULL,
    quantity  TEXT NOT NULL,
    set_kind  TEXT NOT NULL,
    set_n_sm  INTEGER,
    layer     INTEGER NOT NULL CHECK (layer IN (1, 2)),
    src       INTEGER NOT NULL CHECK (src >= -1),
    dst       INTEGER NOT NULL CHECK (dst >= 0),
    weight    DOUBLE NOT NULL
);
