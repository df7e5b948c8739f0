-- Classifier inputs per run: every whole-run metric (e.g. the DCGM activities of a measured
-- dataset) and, for runs with intervals (simulated), analogues of paper 002 table II computed
-- from the interval counters summed over the run. Ratios of counts that are 0 are 0 (no
-- stores: 0 stores per store transaction); NULL counters give NULL features.
CREATE OR REPLACE VIEW wu_feature AS
SELECT run_id, name AS feature, avg(value) AS value
FROM metric
WHERE idx IS NULL AND value IS NOT NULL
GROUP BY run_id, name
UNION ALL
SELECT run_id, feature, value
FROM (
    SELECT
        run_id,
        -- instruction mix (VALUInsts, VFetchInsts, VWriteInsts, LDSInsts; SFU for SALUInsts)
        CASE WHEN sum(instructions) = 0 THEN 0.0 ELSE sum(alu_insts) / sum(instructions) END AS wu_alu_inst_frac,
        CASE WHEN sum(instructions) = 0 THEN 0.0 ELSE sum(sfu_insts) / sum(instructions) END AS wu_sfu_inst_frac,
        CASE WHEN sum(instructions) = 0 THEN 0.0 ELSE sum(gld_insts) / sum(instructions) END AS wu_load_inst_frac,
        CASE WHEN sum(instructions) = 0 THEN 0.0 ELSE sum(gst_insts) / sum(instructions) END AS wu_store_inst_frac,
        CASE WHEN sum(instructions) = 0 THEN 0.0 ELSE sum(shared_insts) / sum(instructions) END AS wu_shared_inst_frac,
        -- unit activity, fractions of core cycles (VALUBusy, SALUBusy, MemUnitBusy,
        -- MemUnitStalled, WriteUnitStalled)
        CASE WHEN sum(cycles) = 0 THEN 0.0 ELSE sum(alu_busy_cycles) / sum(cycles) END AS wu_alu_busy,
        CASE WHEN sum(cycles) = 0 THEN 0.0 ELSE sum(sfu_busy_cycles) / sum(cycles) END AS wu_sfu_busy,
        CASE WHEN sum(cycles) = 0 THEN 0.0 ELSE sum(mem_unit_busy_cycles) / sum(cycles) END AS wu_mem_unit_busy,
        CASE WHEN sum(cycles) = 0 THEN 0.0 ELSE sum(mem_unit_stall_cycles) / sum(cycles) END AS wu_mem_unit_stalled,
        CASE WHEN sum(cycles) = 0 THEN 0.0 ELSE sum(write_unit_stall_cycles) / sum(cycles) END AS wu_write_unit_stalled,
        -- CacheHit (L2 hit rate)
        CASE WHEN sum(l2_accesses) = 0 THEN 0.0 ELSE sum(l2_hits) / sum(l2_accesses) END AS wu_l2_hit_rate,
        -- Occupancy, time-weighted
        sum(occupancy * time_ns) / sum(time_ns) AS wu_occupancy,
        -- V_IPC: warp instructions per core cycle (per-SM cycles, GPU-wide instructions)
        CASE WHEN sum(cycles) = 0 THEN 0.0 ELSE sum(instructions) / sum(cycles) END AS wu_ipc,
        -- MemTime: least DRAM time for the run's requests over the run time
        sum(dram_min_ns) / sum(time_ns) AS wu_mem_time,
        -- FetchPerLoadByte, WritePerStoreByte: per transaction (bytes per transaction are fixed)
        CASE WHEN sum(gld_transactions) = 0 THEN 0.0 ELSE sum(gld_insts) / sum(gld_transactions) END AS wu_loads_per_transaction,
        CASE WHEN sum(gst_transactions) = 0 THEN 0.0 ELSE sum(gst_insts) / sum(gst_transactions) END AS wu_stores_per_transaction,
        -- ReadBandwidth, WriteBandwidth: DRAM transactions per ns
        sum(dram_reads) / sum(time_ns) AS wu_read_bandwidth,
        sum(dram_writes) / sum(time_ns) AS wu_write_bandwidth
    FROM interval
    GROUP BY run_id
) UNPIVOT (value FOR feature IN (
    wu_alu_inst_frac, wu_sfu_inst_frac, wu_load_inst_frac, wu_store_inst_frac, wu_shared_inst_frac,
    wu_alu_busy, wu_sfu_busy, wu_mem_unit_busy, wu_mem_unit_stalled, wu_write_unit_stalled,
    wu_l2_hit_rate, wu_occupancy, wu_ipc, wu_mem_time, wu_loads_per_transaction,
    wu_stores_per_transaction, wu_read_bandwidth, wu_write_bandwidth));
