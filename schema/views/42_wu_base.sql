-- Base runs of each model: the fixed runs of its GPU at its base setting (a NULL n_sm is the
-- GPU's SM count), with average power = energy / time (W). in_training: the kernel was in the
-- model's training split; false for its validation kernels and for kernels it never saw.
CREATE OR REPLACE VIEW wu_base AS
SELECT
    m.model_id,
    r.run_id,
    r.kernel_id,
    r.gpu_id,
    r.n_sm,
    coalesce(r.n_sm, g.n_sm) AS cu,
    r.core_mhz,
    r.mem_mhz,
    r.ctas_per_sm,
    r.interval_instructions,
    r.time_ns,
    r.energy_j / (r.time_ns * 1e-9) AS power_w,
    coalesce(s.in_training, false) AS in_training
FROM wu_model AS m
JOIN gpu AS g ON g.gpu_id = m.gpu_id
JOIN run AS r
  ON r.gpu_id = m.gpu_id
 AND r.policy = 'fixed'
 AND coalesce(r.n_sm, g.n_sm) = m.base_n_sm
 AND r.core_mhz = m.base_core_mhz
 AND r.mem_mhz = m.base_mem_mhz
LEFT JOIN wu_split AS s ON s.model_id = m.model_id AND s.kernel_id = r.kernel_id;
