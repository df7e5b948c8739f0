-- Predictions of a measured kernel's time at other settings made outside the prediction views,
-- by a model fitted on other kernels: `gpudb evaluate simulator` stores Wang & Chu's fitted
-- model (paper 003, gpudb/train/wangchu_fit.py) fitted on the simulator configuration's
-- training kernels (or, without one, on all kernels but the one predicted), so the simulator's
-- scaling error sits beside it on the same kernels (view sim_scaling, query sim_scaling_error).
-- predicted_ns is anchored at the base run's measured time; fitted_on names the kernels the
-- model was fitted on ('leave-one-out' for a cross-validation). One evaluation replaces the
-- GPU's rows of its predictor.
CREATE TABLE scaling_prediction (
    gpu_id          TEXT NOT NULL,
    kernel_id       TEXT NOT NULL,
    predictor       TEXT NOT NULL,
    base_core_mhz   DOUBLE NOT NULL,
    base_mem_mhz    DOUBLE NOT NULL,
    core_mhz        DOUBLE NOT NULL,
    mem_mhz         DOUBLE NOT NULL,
    predicted_ns    DOUBLE NOT NULL,
    fitted_on       TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (gpu_id, kernel_id, predictor, base_core_mhz, base_mem_mhz, core_mhz, mem_mhz)
);
