/* Fixed runs over the (core, memory) grid, for core x memory heat maps (paper 003's 7x7 grid):
   per GPU and setting, one kernel's time, average power and EDP, or (no kernel_id) their means
   over the kernels run at that setting; and, comparable across kernels, the geometric mean over
   the kernels of each one's time, power and EDP relative to its own run at the highest core and
   memory clocks run on the GPU (1 there; NULL for a kernel without a run there). Runs at
   all of the GPU's SMs; of several at one setting (CTA limits, seeds), their mean.
   Parameters: :gpu_id     one GPU (default: every GPU)
               :kernel_id  one kernel (default: every kernel)
               :suite      one kernel suite (default: every suite) */
WITH runs AS (
    SELECT r.gpu_id, r.kernel_id, r.core_mhz, r.mem_mhz,
           avg(r.time_ns) AS time_ns, avg(r.energy_j) AS energy_j
    FROM run AS r
    JOIN gpu AS g USING (gpu_id)
    WHERE r.policy = 'fixed'
      AND coalesce(r.n_sm, g.n_sm) = g.n_sm
      AND (CAST(:gpu_id AS TEXT) IS NULL OR r.gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:kernel_id AS TEXT) IS NULL OR r.kernel_id = CAST(:kernel_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR r.kernel_id LIKE CAST(:suite AS TEXT) || '/%')
    GROUP BY ALL
),
top AS (
    -- the highest setting run, so a GPU without P-state rows has one too
    SELECT gpu_id, max(core_mhz) AS core_mhz, max(mem_mhz) AS mem_mhz
    FROM runs
    GROUP BY gpu_id
),
relative AS (
    SELECT r.*,
           r.energy_j / r.time_ns * 1e9 AS power_w,
           r.energy_j * r.time_ns * 1e-9 AS edp_j_s,
           r.time_ns / b.time_ns AS time_ratio,
           (r.energy_j / r.time_ns) / (b.energy_j / b.time_ns) AS power_ratio,
           (r.energy_j * r.time_ns) / (b.energy_j * b.time_ns) AS edp_ratio
    FROM runs AS r
    JOIN top AS t USING (gpu_id)
    LEFT JOIN runs AS b
      ON b.gpu_id = r.gpu_id AND b.kernel_id = r.kernel_id
     AND b.core_mhz = t.core_mhz AND b.mem_mhz = t.mem_mhz
)
SELECT
    gpu_id,
    core_mhz,
    mem_mhz,
    count(*) AS kernels,
    avg(time_ns) AS time_ns,
    avg(power_w) AS power_w,
    avg(edp_j_s) AS edp_j_s,
    exp(avg(ln(time_ratio))) AS time_ratio,
    exp(avg(ln(power_ratio))) AS power_ratio,
    exp(avg(ln(edp_ratio))) AS edp_ratio
FROM relative
GROUP BY gpu_id, core_mhz, mem_mhz
ORDER BY gpu_id, core_mhz, mem_mhz;
