-- Control results name the controller's guard (gpudb/control/guard.py): 'paper' for the
-- papers' controller, 'guarded' for gpudb's default, or the parameters spelled out; '' for the
-- offline policies, which have none. Results written before this migration came from the
-- papers' controller. The guard joins the primary key, so the table is rebuilt.
CREATE TABLE control_result_v5 (
    gpu_id          TEXT NOT NULL,
    kernel_id       TEXT NOT NULL,
    policy          TEXT NOT NULL,   -- 'replay', 'dynamic_optimal', 'static_optimal', 'perfect_memoryless'
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
    PRIMARY KEY (gpu_id, kernel_id, policy, predictor, guard, objective, max_loss_pct)
);
INSERT INTO control_result_v5
SELECT gpu_id, kernel_id, policy, predictor, CASE WHEN policy = 'replay' THEN 'paper' ELSE '' END,
       objective, max_loss_pct, intervals, switches, time_ns, energy_j, settings, created_at
FROM control_result;
DROP TABLE control_result;
ALTER TABLE control_result_v5 RENAME TO control_result;
