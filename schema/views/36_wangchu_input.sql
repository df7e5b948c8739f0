-- Paper 003's model inputs (Table IV) for every fixed run, one row per run: the counters the
-- model takes from one base run, per warp over the whole kernel.
--
-- Simulated runs (counters summed over the run's intervals):
--   gld_trans_per_warp  global load and store transactions that reach L2 (l2_accesses) per
--                       warp. On Maxwell, the paper's GPU, global loads are cached in L2 only
--                       (section IV-B: "global memory ... L2 cache and DRAM"), so its transactions
--                       are L2 transactions; the simulator's L1 hits are left out of the memory
--                       path (their ~30 cycles count as neither L2 nor DRAM time).
--   l2_hit_rate         l2_hits / l2_accesses (stores absorbed by L2 count as hits); 0 without
--                       any L2 transaction.
--   comp_inst_per_warp  ALU and SFU warp instructions per warp.
--   shm_inst_per_warp   shared-memory transactions per warp (bank-conflict replays included).
--   blocks, warps_per_block  the launch (kernel.spec's ctas and warps_per_cta).
--   warps_per_sm        achieved occupancy in warps: resident warps averaged over the cycles in
--                       which an SM had a resident CTA, as nvprof's achieved_occupancy.
-- Measured runs: the whole-run metrics a mapping's [inputs] section stores under these names
-- (gpudb.mapping), warps_per_sm = achieved_occupancy x the GPU's max_warps_per_sm.
-- active_sms: the run's SM count (the GPU's when NULL), at most one per block.
CREATE OR REPLACE VIEW wangchu_input AS
WITH simulated AS (
    SELECT
        run_id,
        sum(l2_accesses) AS l2_accesses,
        sum(l2_hits) AS l2_hits,
        sum(alu_insts + sfu_insts) AS comp_insts,
        sum(shared_transactions) AS shared_transactions,
        sum(active_warps_avg * cycles) / nullif(sum(cycles - sm_empty_cycles), 0)
            AS warps_per_sm
    FROM interval
    GROUP BY run_id
),
measured AS (
    SELECT
        run_id,
        max(value) FILTER (WHERE name = 'gld_trans_per_warp') AS gld_trans_per_warp,
        max(value) FILTER (WHERE name = 'l2_hit_rate') AS l2_hit_rate,
        max(value) FILTER (WHERE name = 'comp_inst_per_warp') AS comp_inst_per_warp,
        max(value) FILTER (WHERE name = 'shm_inst_per_warp') AS shm_inst_per_warp,
        max(value) FILTER (WHERE name = 'blocks') AS blocks,
        max(value) FILTER (WHERE name = 'warps_per_block') AS warps_per_block,
        max(value) FILTER (WHERE name = 'achieved_occupancy') AS achieved_occupancy
    FROM metric
    WHERE idx IS NULL
      AND name IN ('gld_trans_per_warp', 'l2_hit_rate', 'comp_inst_per_warp',
                   'shm_inst_per_warp', 'blocks', 'warps_per_block', 'achieved_occupancy')
    GROUP BY run_id
),
launch AS (
    SELECT
        r.*,
        g.max_warps_per_sm,
        coalesce(r.n_sm, g.n_sm) AS sms,
        s.run_id IS NOT NULL AS has_intervals,
        s.l2_accesses, s.l2_hits, s.comp_insts, s.shared_transactions,
        s.warps_per_sm AS sim_warps_per_sm,
        CASE WHEN s.run_id IS NOT NULL THEN CAST(k.spec ->> 'ctas' AS DOUBLE)
             ELSE m.blocks END AS blocks,
        CASE WHEN s.run_id IS NOT NULL THEN CAST(k.spec ->> 'warps_per_cta' AS DOUBLE)
             ELSE m.warps_per_block END AS warps_per_block,
        m.gld_trans_per_warp AS m_gld_trans_per_warp,
        m.l2_hit_rate AS m_l2_hit_rate,
        m.comp_inst_per_warp AS m_comp_inst_per_warp,
        m.shm_inst_per_warp AS m_shm_inst_per_warp,
        m.achieved_occupancy
    FROM run AS r
    JOIN gpu AS g ON g.gpu_id = r.gpu_id
    JOIN kernel AS k ON k.kernel_id = r.kernel_id
    LEFT JOIN simulated AS s ON s.run_id = r.run_id
    LEFT JOIN measured AS m ON m.run_id = r.run_id
    WHERE r.policy = 'fixed'
)
SELECT
    run_id, kernel_id, gpu_id, source, core_mhz, mem_mhz, n_sm, ctas_per_sm,
    interval_instructions, time_ns,
    CASE WHEN has_intervals THEN l2_accesses / (blocks * warps_per_block)
         ELSE m_gld_trans_per_warp END AS gld_trans_per_warp,
    -- a kernel without global transactions gets hit rate 0 (it weighs no transaction; the
    -- model then takes it as compute only, gpudb.wangchu.t_active_no_global)
    CASE WHEN has_intervals THEN coalesce(l2_hits / nullif(l2_accesses, 0), 0.0)
         ELSE coalesce(m_l2_hit_rate, CASE WHEN m_gld_trans_per_warp = 0 THEN 0.0 END)
    END AS l2_hit_rate,
    CASE WHEN has_intervals THEN comp_insts / (blocks * warps_per_block)
         ELSE m_comp_inst_per_warp END AS comp_inst_per_warp,
    CASE WHEN has_intervals THEN shared_transactions / (blocks * warps_per_block)
         ELSE coalesce(m_shm_inst_per_warp, 0.0) END AS shm_inst_per_warp,
    blocks,
    warps_per_block,
    least(CAST(sms AS DOUBLE), blocks) AS active_sms,
    CASE WHEN has_intervals THEN sim_warps_per_sm
         ELSE achieved_occupancy * max_warps_per_sm END AS warps_per_sm
FROM launch;
