-- Seeds as a dimension of every evaluation: a control result is the outcome of one seed's runs
-- (the fixed runs of view control_interval, now one run family per kernel and seed), so the
-- seed joins control_result's primary key and results of several seeds sit side by side.
-- Results written before this migration came from the lowest seed, which every sweep and
-- evaluation used by default: 0. The key changes, so the table is rebuilt (as in 0005).
CREATE TABLE control_result_v10 (
    gpu_id          TEXT NOT NULL,
    kernel_id       TEXT NOT NULL,
    seed            BIGINT NOT NULL, -- the seed of the fixed runs the policy was scored on
    policy          TEXT NOT NULL,   -- 'replay' or an offline policy (gpudb/control/offline.py)
    predictor       TEXT NOT NULL,   -- the replay's predictor; '' for offline policies
    guard           TEXT NOT NULL,   -- the replay's guard; '' for offline policies
    objective       TEXT NOT NULL CHECK (objective IN ('energy', 'edp', 'ed2p', 'energy_perf')),
    max_loss_pct    DOUBLE NOT NULL CHECK (max_loss_pct >= 0),
    intervals       INTEGER NOT NULL CHECK (intervals > 0),
    switches        INTEGER NOT NULL CHECK (switches >= 0),
    time_ns         DOUBLE NOT NULL CHECK (time_ns > 0),
    energy_j        DOUBLE NOT NULL CHECK (energy_j >= 0),
    settings        DOUBLE[] NOT NULL, -- core MHz chosen for each interval, in order
    created_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (gpu_id, kernel_id, seed, policy, predictor, guard, objective, max_loss_pct)
);
INSERT INTO control_result_v10 BY NAME SELECT *, 0 AS seed FROM control_result;
DROP TABLE control_result;
ALTER TABLE control_result_v10 RENAME TO control_result;
