-- One row per interval (granularity 'interval') and one per run ('run', counters summed over
-- its intervals), with the predictors' inputs converted from core cycles to ns at the
-- interval's own core clock (docs/DESIGN.md section 3). Measured runs have no intervals: they
-- appear at 'run' granularity with NULL counters, which the predictors turn into NULL.
--
-- miss_latency_ns is MISS's fixed memory latency (paper 000 section 2): the GPU's unloaded
-- L1-miss-to-DRAM latency at its nominal memory clock, from the simulator configuration
-- (L2 path + DRAM fixed part + DRAM memory-clocked part); NULL for measured GPUs.
--
-- crisp_slot_*_ns and crispl_slot_lcp_ns are gpudb's issue-slot counters
-- (schema/0004_issue_slot_counters.sql), the inputs of crisp_gpudb and crispl_gpudb, taken per
-- SM that had work (divided by the share of SM cycles with a resident CTA); NULL for runs
-- simulated before them. memory_min_ns is the least time of the memory system for the
-- sample's requests: the largest of the DRAM channels', the MSHRs' and the store queue's.
-- seed is the run's (NULL for measured runs): an actual time is another run of the same seed.
CREATE OR REPLACE VIEW sample AS
WITH counters AS (
    SELECT
        i.run_id,
        i.idx,
        i.core_mhz,
        i.mem_mhz,
        i.ctas_per_sm,
        i.time_ns,
        i.instructions,
        1000.0 / i.core_mhz AS ns_per_cycle,
        i.stall_cycles,
        i.leading_load_cycles,
        i.miss_contributors,
        i.crit_path_cycles,
        i.crisp_lcp_cycles,
        i.crisp_load_stall_cycles,
        i.crisp_store_stall_cycles,
        i.load_outstanding_cycles,
        i.load_overlap_compute_cycles,
        i.dram_min_ns,
        greatest(i.dram_min_ns, i.mshr_min_ns, i.store_queue_min_ns) AS memory_min_ns,
        i.prefetch_stall_cycles,
        i.crisp_slot_lcp_cycles,
        i.crisp_slot_load_stall_cycles,
        i.crisp_slot_store_stall_cycles,
        -- gpudb's counters are per SM that had work: the share of SM cycles with a resident CTA
        1.0 - i.sm_empty_cycles / nullif(i.cycles, 0) AS active_share,
        i.core_dynamic_j + i.core_static_j + i.dram_dynamic_j + i.dram_static_j + i.other_j
            AS energy_j
    FROM interval AS i
),
per_interval AS (
    SELECT
        run_id,
        idx,
        core_mhz,
        mem_mhz,
        ctas_per_sm,
        time_ns AS t_ns,
        instructions,
        energy_j,
        stall_cycles * ns_per_cycle AS stall_ns,
        leading_load_cycles * ns_per_cycle AS lead_ns,
        miss_contributors,
        crit_path_cycles * ns_per_cycle AS crit_ns,
        crisp_lcp_cycles * ns_per_cycle AS crisp_lcp_ns,
        (crisp_lcp_cycles - crisp_load_stall_cycles) * ns_per_cycle AS crisp_lcp_comp_ns,
        crisp_store_stall_cycles * ns_per_cycle AS crisp_store_stall_ns,
        load_outstanding_cycles * ns_per_cycle AS crispl_lcp_ns,
        load_overlap_compute_cycles * ns_per_cycle AS crispl_lcp_comp_ns,
        dram_min_ns,
        memory_min_ns,
        prefetch_stall_cycles * ns_per_cycle AS prefetch_stall_ns,
        crisp_slot_lcp_cycles / active_share * ns_per_cycle AS crisp_slot_lcp_ns,
        crisp_slot_load_stall_cycles / active_share * ns_per_cycle AS crisp_slot_load_stall_ns,
        crisp_slot_store_stall_cycles / active_share * ns_per_cycle AS crisp_slot_store_stall_ns,
        load_outstanding_cycles / active_share * ns_per_cycle AS crispl_slot_lcp_ns
    FROM counters
),
per_run AS (
    SELECT
        run_id,
        sum(instructions) AS instructions,
        sum(energy_j) AS energy_j,
        sum(stall_ns) AS stall_ns,
        sum(lead_ns) AS lead_ns,
        sum(miss_contributors) AS miss_contributors,
        sum(crit_ns) AS crit_ns,
        sum(crisp_lcp_ns) AS crisp_lcp_ns,
        sum(crisp_lcp_comp_ns) AS crisp_lcp_comp_ns,
        sum(crisp_store_stall_ns) AS crisp_store_stall_ns,
        sum(crispl_lcp_ns) AS crispl_lcp_ns,
        sum(crispl_lcp_comp_ns) AS crispl_lcp_comp_ns,
        sum(dram_min_ns) AS dram_min_ns,
        sum(memory_min_ns) AS memory_min_ns,
        sum(prefetch_stall_ns) AS prefetch_stall_ns,
        sum(crisp_slot_lcp_ns) AS crisp_slot_lcp_ns,
        sum(crisp_slot_load_stall_ns) AS crisp_slot_load_stall_ns,
        sum(crisp_slot_store_stall_ns) AS crisp_slot_store_stall_ns,
        sum(crispl_slot_lcp_ns) AS crispl_slot_lcp_ns
    FROM per_interval
    GROUP BY run_id
),
runs AS (
    SELECT
        r.*,
        CAST(json_extract(g.config, '$.memory.l2_latency_ns') AS DOUBLE)
          + CAST(json_extract(g.config, '$.memory.dram_latency_ns') AS DOUBLE)
          + CAST(json_extract(g.config, '$.memory.dram_latency_mem_cycles') AS DOUBLE)
            * 1000.0 / g.nominal_mem_mhz AS miss_latency_ns
    FROM run AS r
    JOIN gpu AS g USING (gpu_id)
)
SELECT
    'interval' AS granularity,
    r.run_id, r.experiment_id, r.source, r.policy, r.kernel_id, r.gpu_id,
    r.interval_instructions,
    i.idx AS sample_idx,
    r.n_sm, i.ctas_per_sm, i.core_mhz, i.mem_mhz,
    i.t_ns, i.instructions, i.energy_j,
    i.stall_ns, i.lead_ns, i.miss_contributors * r.miss_latency_ns AS miss_ns, i.crit_ns,
    i.crisp_lcp_ns, i.crisp_lcp_comp_ns, i.crisp_store_stall_ns,
    i.crispl_lcp_ns, i.crispl_lcp_comp_ns,
    i.dram_min_ns, i.prefetch_stall_ns,
    i.crisp_slot_lcp_ns, i.crisp_slot_load_stall_ns, i.crisp_slot_store_stall_ns,
    i.crispl_slot_lcp_ns, i.memory_min_ns, r.seed
FROM per_interval AS i
JOIN runs AS r USING (run_id)
UNION ALL
SELECT
    'run' AS granularity,
    r.run_id, r.experiment_id, r.source, r.policy, r.kernel_id, r.gpu_id,
    r.interval_instructions,
    CAST(NULL AS INTEGER) AS sample_idx,
    r.n_sm, r.ctas_per_sm, r.core_mhz, r.mem_mhz,
    r.time_ns AS t_ns, coalesce(r.instructions, p.instructions), r.energy_j,
    p.stall_ns, p.lead_ns, p.miss_contributors * r.miss_latency_ns, p.crit_ns,
    p.crisp_lcp_ns, p.crisp_lcp_comp_ns, p.crisp_store_stall_ns,
    p.crispl_lcp_ns, p.crispl_lcp_comp_ns,
    p.dram_min_ns, p.prefetch_stall_ns,
    p.crisp_slot_lcp_ns, p.crisp_slot_load_stall_ns, p.crisp_slot_store_stall_ns,
    p.crispl_slot_lcp_ns, p.memory_min_ns, r.seed
FROM runs AS r
LEFT JOIN per_run AS p USING (run_id);
