-- Every control result (table control_result) beside its baseline, the same kernel and seed
-- always at the highest core P-state (view control_baseline), with both energies in the
-- result's energy scope (schema/0011_chip_energy.sql): energy_j and baseline_energy_j are the
-- run's (board power included) for scope 'run', the chip's for 'chip'; baseline_time_ns the
-- baseline's time. One row per control result with a baseline: what the savings queries
-- (savings, savings_summary, fraction_of_potential) compare.
CREATE OR REPLACE VIEW control_vs_baseline AS
SELECT r.* REPLACE (CASE WHEN r.energy_scope = 'chip' THEN r.chip_energy_j ELSE r.energy_j END
                    AS energy_j),
       b.time_ns AS baseline_time_ns,
       CASE WHEN r.energy_scope = 'chip' THEN b.chip_energy_j ELSE b.energy_j END
           AS baseline_energy_j
FROM control_result AS r
JOIN control_baseline AS b USING (gpu_id, kernel_id, seed);
