/* Paper 003 figures 13-14 as a heat map: each predictor's error from one base (core, memory)
   setting to every (core, memory) target, one row per GPU, predictor and target (mean absolute
   and mean signed percentage error over the kernels, largest absolute error, kernels), then
   one row per GPU and predictor with empty targets over all of them (GPUs are never pooled:
   their clock grids differ). The base setting itself is a target
   (paper 003 scores all 49 settings of its 7x7 grid); predictors that scale the core clock
   only have targets at the base memory clock.
   Parameters: :gpu_id         one GPU (default: every GPU)
               :suite          one kernel suite (default: every suite)
               :predictor      one predictor (default: every predictor)
               :base_mhz       base core MHz (default: each GPU's highest core P-state)
               :base_mem_mhz   base memory MHz (default: each GPU's highest memory P-state) */
WITH top AS (
    SELECT gpu_id, max(freq_mhz) FILTER (WHERE domain = 'core') AS core_mhz,
           max(freq_mhz) FILTER (WHERE domain = 'mem') AS mem_mhz
    FROM pstate
    GROUP BY gpu_id
),
scored AS (
    SELECT e.gpu_id, e.predictor, e.target_core_mhz, e.target_mem_mhz, e.ape, e.pe, e.kernel_id
    FROM setting_error AS e
    JOIN top AS t USING (gpu_id)
    WHERE e.base_core_mhz = coalesce(CAST(:base_mhz AS DOUBLE), t.core_mhz)
      AND e.base_mem_mhz = coalesce(CAST(:base_mem_mhz AS DOUBLE), t.mem_mhz)
      AND (CAST(:gpu_id AS TEXT) IS NULL OR e.gpu_id = CAST(:gpu_id AS TEXT))
      AND (CAST(:suite AS TEXT) IS NULL OR e.kernel_id LIKE CAST(:suite AS TEXT) || '/%')
      AND (CAST(:predictor AS TEXT) IS NULL OR e.predictor = CAST(:predictor AS TEXT))
)
SELECT
    gpu_id,
    predictor,
    target_core_mhz,
    target_mem_mhz,
    avg(ape) AS mape_pct,
    avg(pe) AS mean_error_pct,
    max(ape) AS max_ape_pct,
    count(DISTINCT kernel_id) AS kernels,
    count(*) AS n
FROM scored
GROUP BY GROUPING SETS ((gpu_id, predictor, target_core_mhz, target_mem_mhz),
                        (gpu_id, predictor))
ORDER BY gpu_id, predictor, target_core_mhz NULLS LAST, target_mem_mhz NULLS LAST;
