-- One row per run with its average power and energy-delay products, for ad hoc queries and
-- the stored energy queries. power_w = energy_j / time; EDP in J*s, ED2P in J*s^2.
CREATE OR REPLACE VIEW run_summary AS
SELECT
    r.run_id,
    r.experiment_id,
    r.source,
    r.gpu_id,
    r.kernel_id,
    k.suite,
    k.category,
    r.policy,
    r.n_sm,
    r.core_mhz,
    r.mem_mhz,
    r.ctas_per_sm,
    r.time_ns,
    r.energy_j,
    r.energy_j / (r.time_ns * 1e-9)              AS power_w,
    r.energy_j * (r.time_ns * 1e-9)              AS edp_j_s,
    r.energy_j * (r.time_ns * 1e-9) * (r.time_ns * 1e-9) AS ed2p_j_s2
FROM run AS r
JOIN kernel AS k USING (kernel_id);
