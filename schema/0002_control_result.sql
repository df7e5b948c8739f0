-- Outcomes of DVFS control policies per kernel (docs/DESIGN.md section 5): trace-replay
-- controllers, the offline policies of paper 004 section 4.3, with the totals of the fixed
-- runs' intervals at the settings each policy chose. Written by `gpudb evaluate control`
-- (gpudb/control/); the savings queries compare them with the always-highest baseline.
CREATE TABLE control_result (
    gpu_id          TEXT NOT NULL,
    kernel_id       TEXT NOT NULL,
    policy          TEXT NOT NULL,   -- 'replay', 'dynamic_optimal', 'static_optimal', 'perfect_memoryless'
    predictor       TEXT NOT NULL,   -- the replay's predictor; '' for offline policies
    objective       TEXT NOT NULL CHECK (objective IN ('energy', 'edp', 'ed2p', 'energy_perf')),
    max_loss_pct    DOUBLE NOT NULL CHECK (max_loss_pct >= 0),
    intervals       INTEGER NOT NULL CHECK (intervals > 0),
    switches        INTEGER NOT NULL CHECK (switches >= 0),
    time_ns         DOUBLE NOT NULL CHECK (time_ns > 0),
    energy_j        DOUBLE NOT NULL CHECK (energy_j >= 0),
    settings        DOUBLE[] NOT NULL, -- core MHz chosen for each interval, in order
    created_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (gpu_id, kernel_id, policy, predictor, objective, max_loss_pct)
);
