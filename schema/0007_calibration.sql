-- Calibrations of Wang & Chu's model (paper 003, gpudb/wangchu.py): the per-GPU parameters of
-- Table IV, one row per parameter. Written by gpudb.calibrate: method 'microbenchmark'
-- (`gpudb calibrate --gpu G`, the micro suite on the simulator, section IV), 'file' (values
-- measured elsewhere, `gpudb calibrate --gpu G --from-file cal.toml`) or 'least_squares'
-- (fitted to a GPU's runs). calibration_id is a content hash of gpu_id, method and the values,
-- so calibrating the same thing again replaces its rows (refreshing created_at) rather than
-- adding new ones; view wangchu_calibration reads the latest per GPU and method.
-- Units (gpudb.calibrate.UNITS): 'core cycles' (of the core clock), 'memory cycles' (dm_del, at
-- the ratio-1 baseline) and 'core cycles per unit core/mem ratio' (dm_lat_slope, eq. 4).
-- fit_residual: RMS of the residuals of the parameter's fit in residual_unit, or for a
-- parameter averaged over runs the RMS spread of those runs about the value (0 with
-- n_points 1); source_run_ids: the runs it came from (NULL for method 'file').
CREATE TABLE calibration (
    calibration_id  TEXT NOT NULL,   -- content hash of gpu_id, method and the values
    gpu_id          TEXT NOT NULL REFERENCES gpu (gpu_id),
    method          TEXT NOT NULL CHECK (method IN ('microbenchmark', 'file', 'least_squares')),
    parameter       TEXT NOT NULL CHECK (parameter IN ('dm_lat_slope', 'dm_lat_intercept', 'dm_del', 'l2_lat', 'l2_del', 'sh_lat', 'inter_arr', 'inst_cycle')),
    value           DOUBLE NOT NULL,
    unit            TEXT NOT NULL,
    source_run_ids  TEXT[],
    fit_residual    DOUBLE,
    residual_unit   TEXT,
    n_points        INTEGER,
    note            TEXT,
    created_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (calibration_id, parameter)
);
