"""SQLAlchemy declarations of gpudb's core tables (schema/0001_core_tables.sql).

Declared by hand because reflection fails with duckdb-engine; tests/store/test_engine.py checks
that every column here exists in a freshly migrated file with the same name, so the two
cannot drift apart unnoticed.
"""

from __future__ import annotations

from sqlalchemy import (
    ARRAY,
    JSON,
    BigInteger,
    Column,
    DateTime,
    Float,
    Integer,
    MetaData,
    Table,
    Text,
)

metadata = MetaData()

gpu = Table(
    "gpu", metadata,
    Column("gpu_id", Text, primary_key=True),
    Column("name", Text, nullable=False),
    Column("n_sm", Integer, nullable=False),
    Column("max_warps_per_sm", Integer),
    Column("max_ctas_per_sm", Integer),
    Column("nominal_core_mhz", Float),
    Column("nominal_mem_mhz", Float),
    Column("config", JSON),
)

pstate = Table(
    "pstate", metadata,
    Column("gpu_id", Text, primary_key=True),
    Column("domain", Text, primary_key=True),
    Column("freq_mhz", Float, primary_key=True),
    Column("voltage_v", Float),
)

kernel = Table(
    "kernel", metadata,
    Column("kernel_id", Text, primary_key=True),
    Column("name", Text, nullable=False),
    Column("suite", Text, nullable=False),
    Column("category", Text),
    Column("description", Text),
    Column("spec", JSON),
)

experiment = Table(
    "experiment", metadata,
    Column("experiment_id", Text, primary_key=True),
    Column("name", Text, nullable=False),
    Column("description", Text),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("created_by", Text),
    Column("host", Text),
    Column("gpudb_version", Text),
    # another simulator whose logs the runs came from (migration 0009); NULL: gpudb's own
    # simulator, or measured data
    Column("simulator", Text),
)

run = Table(
    "run", metadata,
    Column("run_id", Text, primary_key=True),
    Column("experiment_id", Text, nullable=False),
    Column("source", Text, nullable=False),
    Column("kernel_id", Text, nullable=False),
    Column("gpu_id", Text, nullable=False),
    Column("policy", Text, nullable=False),
    Column("core_mhz", Float, nullable=False),
    Column("mem_mhz", Float, nullable=False),
    Column("n_sm", Integer),
    Column("ctas_per_sm", Integer),
    Column("interval_instructions", BigInteger),
    Column("seed", BigInteger),
    Column("time_ns", Float, nullable=False),
    Column("energy_j", Float),
    Column("instructions", BigInteger),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("input_hash", Text),
    # a closed-loop run's controller (migration 0006); NULL for fixed and measured runs
    Column("predictor", Text),
    Column("objective", Text),
    Column("max_loss_pct", Float),
    Column("guard", Text),
    # Equalizer's runs (migration 0008): epoch length in core cycles, and its mechanisms
    Column("epoch_cycles", BigInteger),
    Column("variant", Text),
    # the simulator engine of a gpudb-simulated run (migration 0014): reference or sampled
    Column("engine", Text),
)

_INTERVAL_DOUBLES = (
    "stall_cycles", "leading_load_cycles", "miss_contributors", "crit_path_cycles",
    "crisp_lcp_cycles", "crisp_load_stall_cycles", "crisp_store_stall_cycles",
    "load_outstanding_cycles", "load_overlap_compute_cycles", "dram_min_ns",
    "prefetch_stall_cycles", "eq_samples", "eq_active_warps", "eq_waiting_warps",
    "eq_xalu_warps", "eq_xmem_warps", "eq_issued_warps", "alu_busy_cycles", "sfu_busy_cycles",
    "mem_unit_busy_cycles", "mem_unit_stall_cycles", "write_unit_stall_cycles",
    "active_warps_avg", "occupancy", "core_dynamic_j", "core_static_j", "dram_dynamic_j",
    "dram_static_j", "other_j",
    "crisp_slot_lcp_cycles", "crisp_slot_load_stall_cycles", "crisp_slot_store_stall_cycles",
    "sm_empty_cycles", "mshr_min_ns", "store_queue_min_ns",
)
_INTERVAL_COUNTS = (
    "alu_insts", "sfu_insts", "gld_insts", "gst_insts", "shared_insts", "barrier_insts",
    "gld_transactions", "gst_transactions", "l1_accesses", "l1_hits", "l2_accesses", "l2_hits",
    "dram_reads", "dram_writes", "shared_transactions", "dp_insts",
)

interval = Table(
    "interval", metadata,
    Column("run_id", Text, primary_key=True),
    Column("idx", Integer, primary_key=True),
    Column("core_mhz", Float, nullable=False),
    Column("mem_mhz", Float, nullable=False),
    Column("ctas_per_sm", Integer),
    Column("start_ns", Float, nullable=False),
    Column("time_ns", Float, nullable=False),
    Column("switch_ns", Float, nullable=False),
    Column("cycles", Float, nullable=False),
    Column("instructions", BigInteger, nullable=False),
    *(Column(name, Float) for name in _INTERVAL_DOUBLES),
    *(Column(name, BigInteger) for name in _INTERVAL_COUNTS),
)

metric = Table(
    "metric", metadata,
    Column("run_id", Text, nullable=False),
    Column("idx", Integer),
    Column("name", Text, nullable=False),
    Column("value", Float),
)

ingest_file = Table(
    "ingest_file", metadata,
    Column("file_sha256", Text, primary_key=True),
    Column("file_name", Text, nullable=False),
    Column("mapping_sha256", Text, nullable=False),
    Column("experiment_id", Text),
    Column("rows_read", BigInteger, nullable=False),
    Column("runs_added", BigInteger, nullable=False),
    Column("metrics_added", BigInteger, nullable=False),
    Column("ingested_by", Text),
    Column("host", Text),
    Column("ingested_at", DateTime(timezone=True), nullable=False),
    Column("gpudb_version", Text, nullable=False),
)

# Wang & Chu's model parameters per GPU (schema/0007_calibration.sql, gpudb/train/calibrate.py).
calibration = Table(
    "calibration", metadata,
    Column("calibration_id", Text, primary_key=True),
    Column("gpu_id", Text, nullable=False),
    Column("method", Text, nullable=False),
    Column("parameter", Text, primary_key=True),
    Column("value", Float, nullable=False),
    Column("unit", Text, nullable=False),
    Column("source_run_ids", ARRAY(Text)),
    Column("fit_residual", Float),
    Column("residual_unit", Text),
    Column("n_points", Integer),
    Column("note", Text),
    Column("created_at", DateTime(timezone=True), nullable=False),
)
