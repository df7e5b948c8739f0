-- The papers' energy scope. A run's energy includes the GPU configuration's constant board
-- power (interval.other_j: gtx480's assumed 30 W, 24% of the energy at 700 MHz); paper 000's
-- energy (GPUWattch + GPUSimpow) and paper 004's have no board term. So every control result
-- now carries both totals, and says in which scope its decisions were made:
--   energy_j        the run's energy (every interval column, board included), as before;
--   chip_energy_j   the chip's: core_dynamic_j + core_static_j + dram_dynamic_j + dram_static_j
--                   of the same intervals (and of the switches), no other_j; NULL for results
--                   written before this migration (`gpudb evaluate control` writes them again);
--   energy_scope    'run' or 'chip': the energy the policy minimised (a controller's energy
--                   estimates, the offline policies' hindsight), 'run' for every result written
--                   before this migration. The scope joins the primary key, so the table is
--                   rebuilt (as in 0005).
-- Closed-loop runs of the dynamic optimal's schedule (`gpudb evaluate control`: policy
-- 'closed_loop', predictor 'dynamic_optimal' in table run) name the scope their schedule was
-- found in in run.variant ('run' or 'chip'); their totals are control_result's policy
-- 'dynamic_optimal_run'.
CREATE TABLE control_result_v11 (
    gpu_id          TEXT NOT NULL,
    kernel_id       TEXT NOT NULL,
    seed            BIGINT NOT NULL, -- the seed of the fixed runs the policy was scored on (0010)
    policy          TEXT NOT NULL,   -- 'replay', 'dynamic_optimal', 'dynamic_optimal_run',
                                     -- 'static_optimal', 'perfect_memoryless'
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
    energy_scope    TEXT NOT NULL CHECK (energy_scope IN ('run', 'chip')),
    chip_energy_j   DOUBLE CHECK (chip_energy_j >= 0),
    PRIMARY KEY (gpu_id, kernel_id, seed, policy, predictor, guard, objective, max_loss_pct,
                 energy_scope)
);
INSERT INTO control_result_v11 BY NAME
SELECT *, 'run' AS energy_scope, CAST(NULL AS DOUBLE) AS chip_energy_j FROM control_result;
DROP TABLE control_result;
ALTER TABLE control_result_v11 RENAME TO control_result;
