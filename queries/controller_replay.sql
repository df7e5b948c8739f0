/* Trace replay of a predictor-driven DVFS controller (paper 000 section 4, paper 004 section
   4.2.3): each kernel starts at its highest core P-state; from interval i's counters at the
   setting in force the controller predicts time and energy at every core P-state and picks
   the one minimising the objective for interval i+1, whose actual time and energy are those
   of the fixed run at that setting (plus the switching time when the setting changes).
   The decisions are gpudb/control/guard.py's step, the one the closed loop runs, called
   once per kernel through the SQL function guard_replay; this query gathers its inputs
   (the fixed runs' outcomes, the predictions and the energy model) and the outcomes of its
   choices. With :guard 'guarded' (the default) the step has gpudb's guard, the same for every
   predictor: switching cost in the decision, at most :max_down_steps P-states down per
   interval, and verification (a move the next interval's measurement does not bear out is
   undone, and that direction is barred for 2^k intervals); with :verify_stay, an interval whose
   measured objective departs by more than the hysteresis from the measurement a stay (or a
   return) rested on marks a phase change: the controller moves to the highest setting, a move
   verified as any other.
   :guard 'paper' is the papers' controller exactly.
   One row per kernel and interval with the setting chosen, whether it changed, whether it is
   a return after a failed verification, and its outcome.
   Energy model (gpudb/control/energy.py): core dynamic energy x (V/Vc)^2, core static
   power x V/Vc x predicted time, DRAM dynamic energy unchanged, DRAM static and board power
   x predicted time. With :scope 'chip' the controller sees no board energy (other_j taken
   as 0: papers 000 and 004's scope, schema/0011_chip_energy.sql) in its estimates, its
   verification and energy_perf's choice alike; energy_j is always the run's energy (board
   included) and chip_energy_j the chip's, of the intervals run and their switches.
   Parameters: :predictor       a pred_<name> predictor, or 'oracle' for the actual outcomes
                                (default 'crisp')
               :objective       'edp' (default), 'ed2p', 'energy', or 'energy_perf' (least
                                energy within :max_loss_pct of the highest setting's time)
               :max_loss_pct    performance-loss bound of energy_perf, % (default 1)
               :guard           'guarded' (default) or 'paper'; the five below override it
               :switch_cost     true/false: charge a candidate the switch (guarded: true)
               :max_down_steps  P-states down per interval, 0 = no limit (guarded: 1)
               :verify          true/false: undo moves the measurement refutes (guarded: true)
               :hysteresis_pct  margin a move must be predicted, and measured, to gain, %
                                (guarded: 2; paper: 0)
               :min_dwell       intervals at a setting before the next move (default 1)
               :verify_stay     true/false: on a phase change (an interval departing from
                                what a stay rested on) move to the highest setting, verified
                                as any move (default false; needs :verify)
               :gpu_id          one GPU (default: every GPU)
               :suite           one kernel suite (default: every suite)
               :seed            the seed of the fixed runs replayed (default: each kernel's
                                lowest); one seed at a time, so that the outcomes spliced
                                together are one seed's
               :scope           'run' (default) or 'chip': the energy the controller minimises */
WITH
settings AS (
    SELECT
        coalesce(CAST(:predictor AS TEXT), 'crisp') AS predictor,
        coalesce(CAST(:objective AS TEXT), 'edp') AS objective,
        coalesce(CAST(:max_loss_pct AS DOUBLE), 1.0) AS max_loss_pct,
        coalesce(CAST(:scope AS TEXT), 'run') AS scope
),
checked AS (
    SELECT s.*
    FROM settings AS s
    WHERE CASE WHEN s.scope NOT IN ('run', 'chip')
               THEN error('scope must be run or chip, got ' || s.scope) ELSE true END
),
-- energy_j and other_j in the decisions' scope; run_energy_j and board_j whatever the scope
outcome AS (
    SELECT
        c.* REPLACE (CASE WHEN g.scope = 'chip' THEN 0.0 ELSE c.other_j END AS other_j,
                     CASE WHEN g.scope = 'chip' THEN c.energy_j - c.other_j
                          ELSE c.energy_j END AS energy_j),
        c.energy_j AS run_energy_j,
        c.other_j AS board_j,
        dense_rank() OVER (PARTITION BY c.gpu_id, c.kernel_id ORDER BY c.core_mhz) - 1 AS pidx
    FROM control_interval AS c
    CROSS JOIN checked AS g
    WHERE (CAST(:gpu_id AS TEXT) IS NULL OR c.gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR c.kernel_id LIKE CAST(:suite AS TEXT) || '/%')
      AND c.seed = coalesce(CAST(:seed AS BIGINT),
                            (SELECT min(s.seed) FROM control_interval AS s
                             WHERE s.gpu_id = c.gpu_id AND s.kernel_id = c.kernel_id))
),
predicted AS (
    SELECT b.gpu_id, b.kernel_id, b.idx, b.core_mhz AS base_mhz, t.core_mhz AS target_mhz,
           p.predicted_ns
    FROM outcome AS b
    JOIN outcome AS t ON t.gpu_id = b.gpu_id AND t.kernel_id = b.kernel_id AND t.idx = b.idx
    -- the predictor's own view pred_<predictor> (the oracle predicts nothing: no row of any
    -- view matches it, so the default's serves): the rows view prediction has for it
    -- (50_prediction.sql joins each row to its run and left-joins the actual time, which
    -- neither adds nor drops one), planned without the union of every predictor (83 -> 27
    -- ms a replay of a two-kernel database; a demo runs ~110)
    JOIN query_table('pred_' || coalesce(nullif(CAST(:predictor AS TEXT), 'oracle'), 'crisp'))
        AS p
      ON p.run_id = b.run_id AND p.granularity = 'interval' AND p.sample_idx = b.idx
     AND p.target_core_mhz = t.core_mhz
    WHERE p.predictor = coalesce(CAST(:predictor AS TEXT), 'crisp')
),
-- what a controller at base after interval idx predicts for target (energy model:
-- gpudb/control/energy.py), and what a switch there costs it (the SMs halted for switch_ns
-- at target's static power, with DRAM background and board power)
candidate AS (
    SELECT
        b.gpu_id, b.kernel_id, b.idx, b.pidx AS base_idx, t.pidx AS target_idx,
        CASE WHEN g.predictor = 'oracle' THEN t.time_ns ELSE p.predicted_ns END AS time_ns,
        CASE WHEN g.predictor = 'oracle' THEN t.energy_j
             ELSE b.core_dynamic_j * (t.voltage_v / b.voltage_v) ^ 2
                  + b.core_static_j * (t.voltage_v / b.voltage_v) * p.predicted_ns / b.time_ns
                  + b.dram_dynamic_j
                  + (b.dram_static_j + b.other_j) * p.predicted_ns / b.time_ns
        END AS energy_j,
        (b.core_static_j * t.voltage_v / b.voltage_v + b.dram_static_j + b.other_j)
            / b.time_ns * b.switch_ns AS switch_j
    FROM outcome AS b
    JOIN outcome AS t ON t.gpu_id = b.gpu_id AND t.kernel_id = b.kernel_id AND t.idx = b.idx
    CROSS JOIN checked AS g
    LEFT JOIN predicted AS p
      ON p.gpu_id = b.gpu_id AND p.kernel_id = b.kernel_id AND p.idx = b.idx
     AND p.base_mhz = b.core_mhz AND p.target_mhz = t.core_mhz
),
-- One row per kernel: its inputs as flat lists (row-major: measured [setting, interval],
-- candidates [interval, base, target]) and guard_replay's answer, the setting of each
-- interval. MATERIALIZED: computed once, the UDF called once per kernel.
replayed AS MATERIALIZED (
    SELECT
        m.gpu_id, m.kernel_id,
        guard_replay(CAST(:guard AS TEXT), CAST(:switch_cost AS BOOLEAN),
                     CAST(:max_down_steps AS INTEGER), CAST(:verify AS BOOLEAN),
                     CAST(:hysteresis_pct AS DOUBLE), CAST(:min_dwell AS INTEGER),
                     CAST(:verify_stay AS BOOLEAN), g.objective, g.max_loss_pct,
                     m.n_settings, m.measured_ns, m.measured_j, c.predicted_ns, c.predicted_j,
                     m.switch_ns, c.switch_j) AS r
    FROM (
        SELECT gpu_id, kernel_id, CAST(max(pidx) + 1 AS INTEGER) AS n_settings,
               any_value(switch_ns) AS switch_ns,
               list(time_ns ORDER BY pidx, idx) AS measured_ns,
               list(energy_j ORDER BY pidx, idx) AS measured_j
        FROM outcome
        GROUP BY gpu_id, kernel_id
    ) AS m
    JOIN (
        SELECT gpu_id, kernel_id,
               list(time_ns ORDER BY idx, base_idx, target_idx) AS predicted_ns,
               list(energy_j ORDER BY idx, base_idx, target_idx) AS predicted_j,
               list(switch_j ORDER BY idx, base_idx, target_idx) AS switch_j
        FROM candidate
        GROUP BY gpu_id, kernel_id
    ) AS c USING (gpu_id, kernel_id)
    CROSS JOIN checked AS g
),
steps AS (
    SELECT gpu_id, kernel_id, r.guard AS guard, unnest(range(len(r.setting_idx))) AS idx,
           unnest(r.setting_idx) AS cur, unnest(r.reverted) AS reverted
    FROM replayed
),
switches AS (
    SELECT s.*,
           s.cur <> coalesce(lag(s.cur) OVER (PARTITION BY s.gpu_id, s.kernel_id
                                              ORDER BY s.idx), s.cur) AS switched
    FROM steps AS s
)
SELECT
    g.predictor,
    g.objective,
    100.0 * (g.max_loss_pct / 100.0) AS max_loss_pct,
    st.guard,
    st.gpu_id,
    st.kernel_id,
    o.seed,
    st.idx,
    o.core_mhz,
    st.switched,
    st.reverted,
    -- a change of P-state halts the SMs for switch_ns, burning static, DRAM background and
    -- board power (sim.model.Simulation.apply does the same in the closed loop)
    o.time_ns + CASE WHEN st.switched THEN o.switch_ns ELSE 0 END AS time_ns,
    o.run_energy_j
        + CASE WHEN st.switched
               THEN (o.core_static_j + o.dram_static_j + o.board_j) / o.time_ns * o.switch_ns
               ELSE 0 END AS energy_j,
    o.core_dynamic_j + o.core_static_j + o.dram_dynamic_j + o.dram_static_j
        + CASE WHEN st.switched
               THEN (o.core_static_j + o.dram_static_j) / o.time_ns * o.switch_ns
               ELSE 0 END AS chip_energy_j
FROM switches AS st
JOIN outcome AS o
  ON o.gpu_id = st.gpu_id AND o.kernel_id = st.kernel_id AND o.idx = st.idx
 AND o.pidx = st.cur
CROSS JOIN checked AS g
ORDER BY st.gpu_id, st.kernel_id, st.idx;
