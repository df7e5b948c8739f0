/* Trace replay of a predictor-driven DVFS controller (paper 000 section 4, paper 004 section
   4.2.3): each kernel starts at its highest core P-state; from interval i's counters at the
   setting in force the controller predicts time and energy at every core P-state and picks
   the one minimising the objective for interval i+1, whose actual time and energy are those
   of the fixed run at that setting (plus the switching time when the setting changes).
   One row per kernel and interval with the setting chosen and its outcome.
   Energy model (gpudb/control/energy.py): core dynamic energy x (V/Vc)^2, core static
   power x V/Vc x predicted time, DRAM dynamic energy unchanged, DRAM static and board power
   x predicted time.
   Parameters: :predictor     a pred_<name> predictor, or 'oracle' for the actual outcomes
                              (default 'crisp')
               :objective     'edp' (default), 'ed2p', 'energy', or 'energy_perf' (least energy
                              within :max_loss_pct of the highest setting's time)
               :max_loss_pct  performance-loss bound of energy_perf, % (default 1)
               :gpu_id        one GPU (default: every GPU)
               :suite         one kernel suite (default: every suite) */
WITH RECURSIVE
settings AS (
    SELECT
        coalesce(CAST(:predictor AS TEXT), 'crisp') AS predictor,
        coalesce(CAST(:objective AS TEXT), 'edp') AS objective,
        coalesce(CAST(:max_loss_pct AS DOUBLE), 1.0) / 100.0 AS max_loss
),
outcome AS (
    SELECT *
    FROM control_interval
    WHERE (CAST(:gpu_id AS TEXT) IS NULL OR gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR kernel_id LIKE CAST(:suite AS TEXT) || '/%')
),
kernels AS (
    SELECT gpu_id, kernel_id, max(core_mhz) AS top_mhz, max(idx) AS last_idx
    FROM outcome
    GROUP BY gpu_id, kernel_id
),
predicted AS (
    SELECT b.gpu_id, b.kernel_id, b.idx, b.core_mhz AS base_mhz, t.core_mhz AS target_mhz,
           t.voltage_v AS target_v, p.predicted_ns
    FROM outcome AS b
    JOIN outcome AS t ON t.gpu_id = b.gpu_id AND t.kernel_id = b.kernel_id AND t.idx = b.idx
    JOIN prediction AS p
      ON p.run_id = b.run_id AND p.granularity = 'interval' AND p.sample_idx = b.idx
     AND p.target_core_mhz = t.core_mhz
    WHERE p.predictor = coalesce(CAST(:predictor AS TEXT), 'crisp')
),
candidate AS (
    SELECT
        b.gpu_id, b.kernel_id, b.idx, b.core_mhz AS base_mhz, t.core_mhz AS target_mhz,
        CASE WHEN s.predictor = 'oracle' THEN t.time_ns ELSE p.predicted_ns END AS time_ns,
        CASE WHEN s.predictor = 'oracle' THEN t.energy_j
             ELSE b.core_dynamic_j * (t.voltage_v / b.voltage_v) ^ 2
                  + b.core_static_j * (t.voltage_v / b.voltage_v) * p.predicted_ns / b.time_ns
                  + b.dram_dynamic_j
                  + (b.dram_static_j + b.other_j) * p.predicted_ns / b.time_ns
        END AS energy_j
    FROM outcome AS b
    JOIN outcome AS t ON t.gpu_id = b.gpu_id AND t.kernel_id = b.kernel_id AND t.idx = b.idx
    CROSS JOIN settings AS s
    LEFT JOIN predicted AS p
      ON p.gpu_id = b.gpu_id AND p.kernel_id = b.kernel_id AND p.idx = b.idx
     AND p.base_mhz = b.core_mhz AND p.target_mhz = t.core_mhz
),
scored AS (
    SELECT
        c.*,
        CASE s.objective
            WHEN 'energy' THEN c.energy_j
            WHEN 'edp' THEN c.energy_j * c.time_ns
            WHEN 'ed2p' THEN c.energy_j * c.time_ns * c.time_ns
            WHEN 'energy_perf' THEN c.energy_j
        END AS score,
        -- energy_perf: only settings predicted within the loss bound of the highest setting
        s.objective = 'energy_perf'
            AND c.time_ns > (1.0 + s.max_loss) * max(c.time_ns) FILTER (WHERE c.target_mhz = k.top_mhz)
                OVER (PARTITION BY c.gpu_id, c.kernel_id, c.idx, c.base_mhz) AS too_slow
    FROM candidate AS c
    JOIN kernels AS k USING (gpu_id, kernel_id)
    CROSS JOIN settings AS s
    WHERE c.time_ns IS NOT NULL
),
steps(gpu_id, kernel_id, idx, core_mhz) AS (
    SELECT gpu_id, kernel_id, 0, top_mhz FROM kernels
    UNION ALL
    SELECT c.gpu_id, c.kernel_id, c.idx + 1,
           arg_min(c.target_mhz, [CAST(c.too_slow AS DOUBLE), c.score, -c.target_mhz])
    FROM steps AS s
    JOIN scored AS c
      ON c.gpu_id = s.gpu_id AND c.kernel_id = s.kernel_id AND c.idx = s.idx
     AND c.base_mhz = s.core_mhz
    JOIN kernels AS k ON k.gpu_id = c.gpu_id AND k.kernel_id = c.kernel_id
    WHERE c.idx < k.last_idx
    GROUP BY c.gpu_id, c.kernel_id, c.idx
),
chosen AS (
    SELECT
        st.gpu_id, st.kernel_id, st.idx, st.core_mhz,
        coalesce(lag(st.core_mhz) OVER (PARTITION BY st.gpu_id, st.kernel_id ORDER BY st.idx)
                 <> st.core_mhz, false) AS switched
    FROM steps AS st
)
SELECT
    s.predictor,
    s.objective,
    100.0 * s.max_loss AS max_loss_pct,
    c.gpu_id,
    c.kernel_id,
    c.idx,
    c.core_mhz,
    c.switched,
    -- a change of P-state halts the SMs for switch_ns, burning static, DRAM background and
    -- board power (sim.model.Simulation.apply does the same in the closed loop)
    o.time_ns + CASE WHEN c.switched THEN o.switch_ns ELSE 0 END AS time_ns,
    o.energy_j + CASE WHEN c.switched
                      THEN (o.core_static_j + o.dram_static_j + o.other_j) / o.time_ns
                           * o.switch_ns
                      ELSE 0 END AS energy_j
FROM chosen AS c
JOIN outcome AS o
  ON o.gpu_id = c.gpu_id AND o.kernel_id = c.kernel_id AND o.idx = c.idx
 AND o.core_mhz = c.core_mhz
CROSS JOIN settings AS s
ORDER BY c.gpu_id, c.kernel_id, c.idx;
