-- One view per runtime predictor of papers 000 and 004, all with the same columns; the
-- prediction view (50_prediction.sql) unions them and adds the actual time.

-- naive reference: all time scales with 1/f (predict_linear with no memory part)
CREATE OR REPLACE VIEW pred_proportional AS
SELECT 'proportional' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_linear(t_ns, 0, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;

-- STALL (paper 000 section 2): T_memory = cycles stalled with a load outstanding
CREATE OR REPLACE VIEW pred_stall AS
SELECT 'stall' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_linear(t_ns, stall_ns, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;

-- LEAD (paper 000 section 2): T_memory = leading-load latencies
CREATE OR REPLACE VIEW pred_lead AS
SELECT 'lead' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_linear(t_ns, lead_ns, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;

-- MISS (paper 000 section 2): T_memory = contributor misses x a fixed latency (sample.miss_latency_ns)
CREATE OR REPLACE VIEW pred_miss AS
SELECT 'miss' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_linear(t_ns, miss_ns, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;

-- CRIT (paper 000 section 2, paper 004 section 3.1.1): T_memory = critical path through misses
CREATE OR REPLACE VIEW pred_crit AS
SELECT 'crit' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_linear(t_ns, crit_ns, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;

-- CRISP (paper 000 eq. 3-5, section 5.2): adjusted load critical path, overlapped computation, store stalls
CREATE OR REPLACE VIEW pred_crisp AS
SELECT 'crisp' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_crisp(t_ns, crisp_lcp_ns, crisp_lcp_comp_ns, crisp_store_stall_ns, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;

-- CRISP-L (paper 000 section 5.3): load-outstanding cycles as the critical path
CREATE OR REPLACE VIEW pred_crispl AS
SELECT 'crispl' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_crisp(t_ns, crispl_lcp_ns, crispl_lcp_comp_ns, crisp_store_stall_ns, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;

-- CRIT+BW (paper 004 eq. 2): CRIT bounded below by the least DRAM time
CREATE OR REPLACE VIEW pred_critbw AS
SELECT 'critbw' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_critbw(t_ns, crit_ns, prefetch_stall_ns, dram_min_ns, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;

-- gpudb's CRISP (gpudb/predictors/crisp_gpudb.py; README "Where gpudb differs from the
-- papers"): issue-slot stall accounting, and an upward form that lets computation shrink,
-- keeps stalls and is floored by the memory system's least time
CREATE OR REPLACE VIEW pred_crisp_gpudb AS
SELECT 'crisp_gpudb' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_crisp_gpudb(t_ns, crisp_slot_lcp_ns, crisp_slot_load_stall_ns, crisp_slot_store_stall_ns, memory_min_ns, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;

-- gpudb's CRISP-L: the same, with the load-outstanding time as the load critical path
CREATE OR REPLACE VIEW pred_crispl_gpudb AS
SELECT 'crispl_gpudb' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       predict_crisp_gpudb(t_ns, crispl_slot_lcp_ns, crisp_slot_load_stall_ns, crisp_slot_store_stall_ns, memory_min_ns, core_mhz, target_core_mhz) AS predicted_ns
FROM prediction_input;
