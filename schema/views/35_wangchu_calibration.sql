-- One row per (gpu_id, method): the latest calibration of Wang & Chu's model (paper 003) of
-- that GPU by that method (table calibration; latest by created_at, ties to the greater
-- calibration_id), with its eight Table IV parameters as columns, NULL where the calibration
-- lacks one. Units as gpudb.wangchu.Calibration: dm_lat_slope and dm_del memory cycles, the
-- rest core cycles.
CREATE OR REPLACE VIEW wangchu_calibration AS
WITH calibrations AS (
    SELECT gpu_id, method, calibration_id, max(created_at) AS created_at
    FROM calibration
    GROUP BY gpu_id, method, calibration_id
),
latest AS (
    SELECT *
    FROM calibrations
    QUALIFY row_number() OVER (PARTITION BY gpu_id, method
                               ORDER BY created_at DESC, calibration_id DESC) = 1
)
SELECT
    l.gpu_id,
    l.method,
    l.calibration_id,
    l.created_at,
    CAST(max(c.value) FILTER (WHERE c.parameter = 'dm_lat_slope') AS DOUBLE) AS dm_lat_slope,
    CAST(max(c.value) FILTER (WHERE c.parameter = 'dm_lat_intercept') AS DOUBLE)
        AS dm_lat_intercept,
    CAST(max(c.value) FILTER (WHERE c.parameter = 'dm_del') AS DOUBLE) AS dm_del,
    CAST(max(c.value) FILTER (WHERE c.parameter = 'l2_lat') AS DOUBLE) AS l2_lat,
    CAST(max(c.value) FILTER (WHERE c.parameter = 'l2_del') AS DOUBLE) AS l2_del,
    CAST(max(c.value) FILTER (WHERE c.parameter = 'sh_lat') AS DOUBLE) AS sh_lat,
    CAST(max(c.value) FILTER (WHERE c.parameter = 'inter_arr') AS DOUBLE) AS inter_arr,
    CAST(max(c.value) FILTER (WHERE c.parameter = 'inst_cycle') AS DOUBLE) AS inst_cycle
FROM latest AS l
JOIN calibration AS c
    ON c.calibration_id = l.calibration_id AND c.gpu_id = l.gpu_id AND c.method = l.method
GROUP BY l.gpu_id, l.method, l.calibration_id, l.created_at;
