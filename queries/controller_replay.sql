/* Trace replay of a predictor-driven DVFS controller (paper 000 section 4, paper 004 section
   4.2.3): each kernel starts at its highest core P-state; from interval i's counters at the
   setting in force the controller predicts time and energy at every core P-state and picks
   the one minimising the objective for interval i+1, whose actual time and energy are those
   of the fixed run at that setting (plus the switching time when the setting changes).
   With :guard 'guarded' (the default) the step has gpudb's guard, the same for every
   predictor (gpudb/control/guard.py, which the closed loop runs): switching cost in the
   decision, at most :max_down_steps P-states down per interval, and verification (a move the
   next interval's measurement does not bear out is undone, and that direction is barred for
   2^k intervals); with :verify_stay, an interval whose measured objective departs by more
   than the hysteresis from the measurement a stay (or a return) rested on marks a phase
   change: the controller moves to the highest setting, a move verified as any other.
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
WITH RECURSIVE
settings AS (
    SELECT
        coalesce(CAST(:predictor AS TEXT), 'crisp') AS predictor,
        coalesce(CAST(:objective AS TEXT), 'edp') AS objective,
        coalesce(CAST(:max_loss_pct AS DOUBLE), 1.0) / 100.0 AS max_loss,
        coalesce(CAST(:guard AS TEXT), 'guarded') AS preset,
        coalesce(CAST(:scope AS TEXT), 'run') AS scope
),
params AS (
    SELECT
        s.*,
        coalesce(CAST(:switch_cost AS BOOLEAN), s.preset = 'guarded') AS switch_cost,
        coalesce(CAST(:max_down_steps AS INTEGER),
                 CASE WHEN s.preset = 'guarded' THEN 1 ELSE 0 END) AS max_down,
        coalesce(CAST(:verify AS BOOLEAN), s.preset = 'guarded') AS verify,
        coalesce(CAST(:hysteresis_pct AS DOUBLE),
                 CASE WHEN s.preset = 'guarded' THEN 2.0 ELSE 0.0 END) / 100.0 AS hysteresis,
        coalesce(CAST(:min_dwell AS INTEGER), 1) AS min_dwell,
        coalesce(CAST(:verify_stay AS BOOLEAN), false) AS verify_stay,
        CASE s.objective WHEN 'edp' THEN 1 WHEN 'ed2p' THEN 2 ELSE 0 END AS weight,
        CASE WHEN s.preset NOT IN ('guarded', 'paper')
             THEN error('guard must be guarded or paper, got ' || s.preset)
             WHEN s.scope NOT IN ('run', 'chip')
             THEN error('scope must be run or chip, got ' || s.scope) END AS checked
    FROM settings AS s
),
checked_params AS (
    SELECT
        p.*,
        CASE WHEN p.verify_stay AND NOT p.verify THEN error('verify_stay needs verify') END
            AS stay_checked
    FROM params AS p
),
guard AS (
    SELECT
        p.*,
        CASE
            WHEN p.switch_cost AND p.max_down = 1 AND p.verify
                 AND round(100.0 * p.hysteresis, 9) = 2 AND p.min_dwell = 1
                 AND NOT p.verify_stay THEN 'guarded'
            WHEN NOT p.switch_cost AND p.max_down = 0 AND NOT p.verify AND p.hysteresis = 0
                 AND p.min_dwell = 1 AND NOT p.verify_stay THEN 'paper'
            ELSE printf('cost%d-down%d-verify%d-h%g-dwell%d%s', CAST(p.switch_cost AS INTEGER),
                        p.max_down, CAST(p.verify AS INTEGER), round(100.0 * p.hysteresis, 9),
                        p.min_dwell, CASE WHEN p.verify_stay THEN '-stay1' ELSE '' END)
        END AS guard_name
    FROM checked_params AS p
    WHERE p.checked IS NULL AND p.stay_checked IS NULL
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
    CROSS JOIN guard AS g
    WHERE (CAST(:gpu_id AS TEXT) IS NULL OR c.gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR c.kernel_id LIKE CAST(:suite AS TEXT) || '/%')
      AND c.seed = coalesce(CAST(:seed AS BIGINT),
                            (SELECT min(s.seed) FROM control_interval AS s
                             WHERE s.gpu_id = c.gpu_id AND s.kernel_id = c.kernel_id))
),
kernels AS (
    SELECT gpu_id, kernel_id, max(pidx) AS top_idx, max(idx) AS last_idx
    FROM outcome
    GROUP BY gpu_id, kernel_id
),
predicted AS (
    SELECT b.gpu_id, b.kernel_id, b.idx, b.core_mhz AS base_mhz, t.core_mhz AS target_mhz,
           p.predicted_ns
    FROM outcome AS b
    JOIN outcome AS t ON t.gpu_id = b.gpu_id AND t.kernel_id = b.kernel_id AND t.idx = b.idx
    JOIN prediction AS p
      ON p.run_id = b.run_id AND p.granularity = 'interval' AND p.sample_idx = b.idx
     AND p.target_core_mhz = t.core_mhz
    WHERE p.predictor = coalesce(CAST(:predictor AS TEXT), 'crisp')
),
candidate AS (
    SELECT
        b.gpu_id, b.kernel_id, b.idx, b.pidx AS base_idx, t.pidx AS target_idx,
        t.core_mhz AS target_mhz,
        CASE WHEN g.predictor = 'oracle' THEN t.time_ns ELSE p.predicted_ns END AS time_ns,
        CASE WHEN g.predictor = 'oracle' THEN t.energy_j
             ELSE b.core_dynamic_j * (t.voltage_v / b.voltage_v) ^ 2
                  + b.core_static_j * (t.voltage_v / b.voltage_v) * p.predicted_ns / b.time_ns
                  + b.dram_dynamic_j
                  + (b.dram_static_j + b.other_j) * p.predicted_ns / b.time_ns
        END AS energy_j,
        -- a switch to t halts the SMs for switch_ns at t's static power
        CASE WHEN t.pidx <> b.pidx AND g.switch_cost THEN b.switch_ns ELSE 0 END AS switch_ns,
        CASE WHEN t.pidx <> b.pidx AND g.switch_cost
             THEN (b.core_static_j * t.voltage_v / b.voltage_v + b.dram_static_j + b.other_j)
                  / b.time_ns * b.switch_ns
             ELSE 0 END AS switch_j
    FROM outcome AS b
    JOIN outcome AS t ON t.gpu_id = b.gpu_id AND t.kernel_id = b.kernel_id AND t.idx = b.idx
    CROSS JOIN guard AS g
    LEFT JOIN predicted AS p
      ON p.gpu_id = b.gpu_id AND p.kernel_id = b.kernel_id AND p.idx = b.idx
     AND p.base_mhz = b.core_mhz AND p.target_mhz = t.core_mhz
),
-- MATERIALIZED: computed once. Inlined, DuckDB evaluated it (the prediction view and its UDFs
-- included) again at every step of the recursion below: 1.5 s per replay of the demo database
-- against 0.15 s, with identical rows. Only the columns the recursion reads are kept.
scored AS MATERIALIZED (
    SELECT
        c.gpu_id, c.kernel_id, c.idx, c.base_idx, c.target_idx, c.time_ns,
        -- the predicted time at the highest setting: energy_perf's reference
        max(c.time_ns) FILTER (WHERE c.target_idx = k.top_idx)
            OVER (PARTITION BY c.gpu_id, c.kernel_id, c.idx, c.base_idx) AS top_ns,
        (c.energy_j + c.switch_j) * (c.time_ns + c.switch_ns) ^ g.weight AS score
    FROM candidate AS c
    JOIN kernels AS k USING (gpu_id, kernel_id)
    CROSS JOIN guard AS g
    WHERE c.time_ns IS NOT NULL
),
-- One row per kernel and interval: the setting it runs at (cur, a P-state index) and what the
-- guard remembers (gpudb/control/guard.py, GuardState).
steps(gpu_id, kernel_id, idx, cur, prev, prev_time_ns, prev_energy_j, top_time_ns, debt_ns,
      chosen, reverted, since_switch, floor_idx, floor_until, ceiling_idx, ceiling_until,
      fails_down, fails_up, expecting, expect_time_ns, expect_energy_j) AS (
    SELECT gpu_id, kernel_id, 0, top_idx, -1, CAST(0 AS DOUBLE), CAST(0 AS DOUBLE),
           CAST(0 AS DOUBLE), CAST(0 AS DOUBLE), false, false, 0, 0, -1, top_idx, -1, 0, 0,
           false, CAST(0 AS DOUBLE), CAST(0 AS DOUBLE)
    FROM kernels
    UNION ALL
    SELECT
        a.gpu_id, a.kernel_id, a.idx + 1, a.next, a.cur, a.m_time_ns, a.m_energy_j,
        a.new_top_time_ns, a.new_debt_ns,
        NOT a.failed AND a.next <> a.cur AND a.free,
        a.failed,
        CASE WHEN a.next <> a.cur THEN 0 ELSE a.since_switch + 1 END,
        CASE WHEN a.failed AND a.down THEN a.prev ELSE a.floor_idx END,
        CASE WHEN a.failed AND a.down THEN a.idx + 1 + CAST(2 ^ (a.fails_down + 1) AS INTEGER)
             ELSE a.floor_until END,
        CASE WHEN a.failed AND NOT a.down THEN a.prev ELSE a.ceiling_idx END,
        CASE WHEN a.failed AND NOT a.down THEN a.idx + 1 + CAST(2 ^ (a.fails_up + 1) AS INTEGER)
             ELSE a.ceiling_until END,
        CASE WHEN a.verifying AND a.down THEN (CASE WHEN a.failed THEN a.fails_down + 1 ELSE 0 END)
             ELSE a.fails_down END,
        CASE WHEN a.verifying AND NOT a.down THEN (CASE WHEN a.failed THEN a.fails_up + 1 ELSE 0 END)
             ELSE a.fails_up END,
        -- verify_stay: a stay rests on the interval just run, a return on the one measured
        -- at that setting before the refuted move; a predictor-driven move on nothing
        NOT (NOT a.failed AND a.next <> a.cur AND a.free),
        CASE WHEN a.failed THEN a.prev_time_ns ELSE a.m_time_ns END,
        CASE WHEN a.failed THEN a.prev_energy_j ELSE a.m_energy_j END
    FROM (
        SELECT
            d.*,
            CASE
                WHEN d.failed THEN d.prev
                WHEN NOT d.free THEN d.cur
                -- a departed stay re-enters the new phase from the top, unless moving up is
                -- barred; the move is verified next interval as any chosen move
                WHEN d.departed AND d.cur <> d.top_idx AND NOT d.idx + 1 < d.ceiling_until
                    THEN d.top_idx
                WHEN d.best <> d.cur AND NOT d.cur_too_slow AND d.hysteresis > 0
                     AND NOT d.best_score < d.cur_score * (1.0 - d.hysteresis) THEN d.cur
                ELSE d.best
            END AS next
        FROM (
            SELECT
                r.gpu_id, r.kernel_id, r.idx, r.cur, r.prev, r.prev_time_ns, r.prev_energy_j,
                r.top_time_ns, r.debt_ns, r.chosen, r.reverted, r.since_switch, r.floor_idx,
                r.floor_until, r.ceiling_idx, r.ceiling_until, r.fails_down, r.fails_up,
                r.hysteresis, r.m_time_ns, r.m_energy_j, r.new_top_time_ns, r.new_debt_ns,
                r.verifying, r.down, r.failed, r.free, r.departed, r.top_idx,
                arg_min(r.target_idx, [CAST(r.too_slow AS DOUBLE), r.score, -r.target_idx])
                    FILTER (WHERE r.allowed) AS best,
                arg_min(r.score, [CAST(r.too_slow AS DOUBLE), r.score, -r.target_idx])
                    FILTER (WHERE r.allowed) AS best_score,
                max(r.score) FILTER (WHERE r.target_idx = r.cur) AS cur_score,
                bool_or(r.too_slow) FILTER (WHERE r.target_idx = r.cur) AS cur_too_slow
            FROM (
                -- one row per state and candidate setting
                SELECT
                    e.*,
                    -- energy_perf's bound, less the debt; the highest setting is the
                    -- baseline, never too slow
                    e.objective = 'energy_perf' AND e.target_idx <> e.top_idx
                        AND e.target_ns > (1.0 + e.max_loss) * e.top_ns + e.new_debt_ns
                        AS too_slow
                FROM (
                    SELECT
                        s.*, g.objective, g.max_loss, g.hysteresis, k.top_idx,
                        m.time_ns AS m_time_ns, m.energy_j AS m_energy_j,
                        c.target_idx, c.time_ns AS target_ns, c.top_ns, c.score,
                        CASE WHEN s.cur = k.top_idx THEN m.time_ns ELSE s.top_time_ns END
                            AS new_top_time_ns,
                        -- energy_perf's debt: measured time over the bound, against the time
                        -- at the highest setting (measured there, else the smaller of the
                        -- prediction and the last measurement there)
                        CASE WHEN g.verify AND g.objective = 'energy_perf'
                             THEN least(0.0, s.debt_ns + (1.0 + g.max_loss)
                                  * (CASE WHEN s.cur = k.top_idx THEN m.time_ns
                                          ELSE least(c.top_ns, s.top_time_ns) END)
                                  - m.time_ns)
                             ELSE s.debt_ns END AS new_debt_ns,
                        g.verify AND g.objective <> 'energy_perf' AND s.chosen
                            AND s.prev <> s.cur AS verifying,
                        s.cur < s.prev AS down,
                        g.verify AND g.objective <> 'energy_perf' AND s.chosen
                            AND s.prev <> s.cur
                            AND m.energy_j * m.time_ns ^ g.weight
                                > s.prev_energy_j * s.prev_time_ns ^ g.weight
                                  * (1.0 - g.hysteresis) AS failed,
                        s.since_switch + 1 >= g.min_dwell AS free,
                        c.target_idx = s.cur OR (
                            c.target_idx >= greatest(
                                CASE WHEN g.max_down > 0 THEN s.cur - g.max_down ELSE 0 END,
                                CASE WHEN s.idx + 1 < s.floor_until THEN s.floor_idx ELSE 0 END)
                            AND c.target_idx <= CASE WHEN s.idx + 1 < s.ceiling_until
                                                     THEN s.ceiling_idx ELSE k.top_idx END)
                            AS allowed
                    FROM (
                        -- verify_stay: the interval just run departs from the measurement
                        -- the stay (or return) rested on by more than the hysteresis, either
                        -- way: a phase change
                        SELECT
                            s0.*,
                            g0.verify_stay AND g0.objective <> 'energy_perf' AND s0.expecting
                                AND abs(m0.energy_j * m0.time_ns ^ g0.weight
                                        - s0.expect_energy_j * s0.expect_time_ns ^ g0.weight)
                                    > s0.expect_energy_j * s0.expect_time_ns ^ g0.weight
                                      * g0.hysteresis AS departed
                        FROM steps AS s0
                        JOIN outcome AS m0
                          ON m0.gpu_id = s0.gpu_id AND m0.kernel_id = s0.kernel_id
                         AND m0.idx = s0.idx AND m0.pidx = s0.cur
                        CROSS JOIN guard AS g0
                    ) AS s
                    JOIN kernels AS k ON k.gpu_id = s.gpu_id AND k.kernel_id = s.kernel_id
                    JOIN outcome AS m
                      ON m.gpu_id = s.gpu_id AND m.kernel_id = s.kernel_id AND m.idx = s.idx
                     AND m.pidx = s.cur
                    JOIN scored AS c
                      ON c.gpu_id = s.gpu_id AND c.kernel_id = s.kernel_id AND c.idx = s.idx
                     AND c.base_idx = s.cur
                    CROSS JOIN guard AS g
                    WHERE s.idx < k.last_idx
                ) AS e
            ) AS r
            GROUP BY ALL
        ) AS d
    ) AS a
)
SELECT
    g.predictor,
    g.objective,
    100.0 * g.max_loss AS max_loss_pct,
    g.guard_name AS guard,
    st.gpu_id,
    st.kernel_id,
    o.seed,
    st.idx,
    o.core_mhz,
    st.idx > 0 AND st.prev <> st.cur AS switched,
    st.reverted,
    -- a change of P-state halts the SMs for switch_ns, burning static, DRAM background and
    -- board power (sim.model.Simulation.apply does the same in the closed loop)
    o.time_ns + CASE WHEN st.idx > 0 AND st.prev <> st.cur THEN o.switch_ns ELSE 0 END AS time_ns,
    o.run_energy_j
        + CASE WHEN st.idx > 0 AND st.prev <> st.cur
               THEN (o.core_static_j + o.dram_static_j + o.board_j) / o.time_ns * o.switch_ns
               ELSE 0 END AS energy_j,
    o.core_dynamic_j + o.core_static_j + o.dram_dynamic_j + o.dram_static_j
        + CASE WHEN st.idx > 0 AND st.prev <> st.cur
               THEN (o.core_static_j + o.dram_static_j) / o.time_ns * o.switch_ns
               ELSE 0 END AS chip_energy_j
FROM steps AS st
JOIN outcome AS o
  ON o.gpu_id = st.gpu_id AND o.kernel_id = st.kernel_id AND o.idx = st.idx
 AND o.pidx = st.cur
CROSS JOIN guard AS g
ORDER BY st.gpu_id, st.kernel_id, st.idx;
