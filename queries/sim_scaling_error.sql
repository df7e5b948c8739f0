/* The simulator against a real GPU, per measured kernel (view sim_scaling; `gpudb evaluate
   simulator`): how well its clone's time and power follow the core and the memory clock.
   time_mape_pct: mean absolute % error of the normalised time (t / t_base) over the settings
   other than the base, for the simulator (sim_), time proportional to the core clock (prop_)
   and Wang & Chu fitted on other kernels (wcf_, where evaluated). core_sens: t at the lowest
   core clock (base memory clock) / t_base; mem_sens: t at the lowest memory clock (base core
   clock) / t_base, measured and predicted. class: from the measured sensitivities, each as a
   share of full proportionality (the core's (core_sens - 1) / (base / lowest core - 1), the
   memory's likewise): 'core-bound' where only the core's share is 0.25 or more, 'memory-bound'
   where only the memory's is, 'both' where both are, 'neither' where none. power_mape_pct:
   the same for the normalised power, the simulator's against constant power (const_).
   edp_regret_pct: how much more EDP the measured kernel spends at the setting with the least
   simulated EDP (P x t^2, normalised) than at its measured least-EDP setting; prop_ with
   constant power (the fastest setting).
   Parameters: :gpu_id      one measured GPU (default: every GPU)
               :sim_gpu_id  one simulator configuration (default: every one) */
SELECT * FROM sim_scaling_kernel
WHERE (CAST(:gpu_id AS TEXT) IS NULL OR gpu_id = CAST(:gpu_id AS TEXT))
  AND (CAST(:sim_gpu_id AS TEXT) IS NULL OR sim_gpu_id = CAST(:sim_gpu_id AS TEXT))
ORDER BY gpu_id, sim_gpu_id, split NULLS LAST, class, kernel_id;
