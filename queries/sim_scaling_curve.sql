/* The simulator against a real GPU, setting by setting (view sim_scaling): each measured
   kernel's normalised time and power (t / t_base, P / P_base) measured, simulated by its
   clone, proportional to the core clock and Wang & Chu fitted on other kernels, at every
   (core, memory) setting of both. `gpudb plot sim_scaling` draws it.
   Parameters: :gpu_id      one measured GPU (default: every GPU)
               :sim_gpu_id  one simulator configuration (default: every one)
               :kernel_id   one measured kernel (default: every kernel) */
SELECT gpu_id, sim_gpu_id, kernel_id, split, core_mhz, mem_mhz, is_base,
       measured_time_norm, sim_time_norm, proportional_time_norm, wangchu_fit_time_norm,
       measured_power_norm, sim_power_norm
FROM sim_scaling
WHERE (CAST(:gpu_id AS TEXT) IS NULL OR gpu_id = CAST(:gpu_id AS TEXT))
  AND (CAST(:sim_gpu_id AS TEXT) IS NULL OR sim_gpu_id = CAST(:sim_gpu_id AS TEXT))
  AND (CAST(:kernel_id AS TEXT) IS NULL OR kernel_id = CAST(:kernel_id AS TEXT))
ORDER BY gpu_id, sim_gpu_id, kernel_id, core_mhz, mem_mhz;
