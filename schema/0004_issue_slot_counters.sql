-- gpudb's issue-slot variant of CRISP's counters (README "Where gpudb differs from the papers"),
-- per-SM core cycles averaged over SMs like the counters of 0001. Paper 000 section 3.5 counts
-- a one-issue cycle of the dual-issue SM as computation when an arithmetic hazard exists and
-- as a whole stall otherwise; here each cycle is issue slots, the used ones computation and the
-- unused ones classified by rules A-D, so a one-issue cycle is half computation. A cycle in
-- which an SM has no resident CTA is empty (sm_empty_cycles) and in no class: the tail of a
-- kernel, when some SMs have run out of work, is neither computation nor memory.
-- The simulator fills them; runs written before this migration, and measured runs, leave them
-- NULL.
ALTER TABLE interval ADD COLUMN crisp_slot_lcp_cycles DOUBLE;        -- adjusted load critical path, load-stall slots added
ALTER TABLE interval ADD COLUMN crisp_slot_load_stall_cycles DOUBLE; -- unused slots classified load stall (rule B)
ALTER TABLE interval ADD COLUMN crisp_slot_store_stall_cycles DOUBLE;-- unused slots classified store stall (rule C)
ALTER TABLE interval ADD COLUMN sm_empty_cycles DOUBLE;              -- cycles with no resident CTA
-- Least time (ns) the busiest SM's miss buffers (MSHRs) and store queue need for the interval's
-- requests: the entry-time they hold (issue to data return or write acknowledgement) over the
-- entries, Little's law. Like dram_min_ns they bound the interval from below at any core
-- clock; crisp_gpudb's upward prediction is floored by the largest of the three.
ALTER TABLE interval ADD COLUMN mshr_min_ns DOUBLE;
ALTER TABLE interval ADD COLUMN store_queue_min_ns DOUBLE;
