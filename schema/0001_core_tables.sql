-- Core tables of docs/DESIGN.md section 3. Units are in the column names (_ns, _mhz, _v, _j, _w);
-- times are nanoseconds unless a name says cycles. Never edit this file once landed: add a
-- migration instead.

CREATE TABLE gpu (
    gpu_id            TEXT PRIMARY KEY,
    name              TEXT NOT NULL,
    n_sm              INTEGER NOT NULL CHECK (n_sm > 0),
    max_warps_per_sm  INTEGER CHECK (max_warps_per_sm > 0),
    max_ctas_per_sm   INTEGER CHECK (max_ctas_per_sm > 0),
    nominal_core_mhz  DOUBLE CHECK (nominal_core_mhz > 0),
    nominal_mem_mhz   DOUBLE CHECK (nominal_mem_mhz > 0),
    config            JSON
);

-- P-states: the frequencies a domain can run at, with the voltage where it is known.
CREATE TABLE pstate (
    gpu_id     TEXT NOT NULL REFERENCES gpu (gpu_id),
    domain     TEXT NOT NULL CHECK (domain IN ('core', 'mem')),
    freq_mhz   DOUBLE NOT NULL CHECK (freq_mhz > 0),
    voltage_v  DOUBLE CHECK (voltage_v > 0),
    PRIMARY KEY (gpu_id, domain, freq_mhz)
);

-- kernel_id is '<suite>/<name>' so kernels of different suites never collide.
CREATE TABLE kernel (
    kernel_id    TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    suite        TEXT NOT NULL,
    category     TEXT,
    description  TEXT,
    spec         JSON
);

CREATE TABLE experiment (
    experiment_id  TEXT PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE,
    description    TEXT,
    created_at     TIMESTAMPTZ NOT NULL,
    created_by     TEXT,
    host           TEXT,
    gpudb_version  TEXT
);

-- One row per ingested file: where measured runs came from.
CREATE TABLE ingest_file (
    file_sha256     TEXT PRIMARY KEY,
    file_name       TEXT NOT NULL,
    mapping_sha256  TEXT NOT NULL,
    experiment_id   TEXT REFERENCES experiment (experiment_id),
    rows_read       BIGINT NOT NULL CHECK (rows_read >= 0),
    runs_added      BIGINT NOT NULL CHECK (runs_added >= 0),
    metrics_added   BIGINT NOT NULL CHECK (metrics_added >= 0),
    ingested_by     TEXT,
    host            TEXT,
    ingested_at     TIMESTAMPTZ NOT NULL,
    gpudb_version   TEXT NOT NULL
);

-- A run: one kernel executed once, at one setting (policy 'fixed') or under a controller.
-- run_id is a content hash of the run's inputs, so redoing the same run is idempotent.
CREATE TABLE run (
    run_id                 TEXT PRIMARY KEY,
    experiment_id          TEXT NOT NULL REFERENCES experiment (experiment_id),
    source                 TEXT NOT NULL CHECK (source IN ('sim', 'measured')),
    kernel_id              TEXT NOT NULL REFERENCES kernel (kernel_id),
    gpu_id                 TEXT NOT NULL REFERENCES gpu (gpu_id),
    policy                 TEXT NOT NULL DEFAULT 'fixed',
    core_mhz               DOUBLE NOT NULL CHECK (core_mhz > 0),
    mem_mhz                DOUBLE NOT NULL CHECK (mem_mhz > 0),
    n_sm                   INTEGER CHECK (n_sm > 0),
    ctas_per_sm            INTEGER CHECK (ctas_per_sm > 0),
    interval_instructions  BIGINT CHECK (interval_instructions > 0),
    seed                   BIGINT,
    time_ns                DOUBLE NOT NULL CHECK (time_ns > 0),
    energy_j               DOUBLE CHECK (energy_j >= 0),
    instructions           BIGINT CHECK (instructions >= 0),
    created_at             TIMESTAMPTZ NOT NULL,
    input_hash             TEXT
);

-- Per-interval counters. Intervals are cut by work (every interval_instructions warp
-- instructions GPU-wide), so interval idx covers the same work at every setting.
-- No foreign key to run: intervals are only written together with their run, in one
-- transaction, and a key check on millions of rows would dominate sweep time.
CREATE TABLE interval (
    run_id        TEXT NOT NULL,
    idx           INTEGER NOT NULL CHECK (idx >= 0),
    core_mhz      DOUBLE NOT NULL CHECK (core_mhz > 0),
    mem_mhz       DOUBLE NOT NULL CHECK (mem_mhz > 0),
    ctas_per_sm   INTEGER CHECK (ctas_per_sm > 0),
    start_ns      DOUBLE NOT NULL CHECK (start_ns >= 0),
    time_ns       DOUBLE NOT NULL CHECK (time_ns > 0),
    switch_ns     DOUBLE NOT NULL DEFAULT 0 CHECK (switch_ns >= 0),
    cycles        DOUBLE NOT NULL CHECK (cycles >= 0),
    instructions  BIGINT NOT NULL CHECK (instructions >= 0),
    -- prior models, counted from the L1 miss (paper 000 section 2.2), core cycles averaged over SMs
    stall_cycles              DOUBLE,
    leading_load_cycles       DOUBLE,
    miss_contributors         DOUBLE,
    crit_path_cycles          DOUBLE,
    -- CRISP (paper 000 sections 3.5-3.6) and CRISP-L (section 5.3)
    crisp_lcp_cycles              DOUBLE,
    crisp_load_stall_cycles       DOUBLE,
    crisp_store_stall_cycles      DOUBLE,
    load_outstanding_cycles       DOUBLE,
    load_overlap_compute_cycles   DOUBLE,
    -- CRIT+BW (paper 004 section 3.2)
    dram_min_ns            DOUBLE,
    prefetch_stall_cycles  DOUBLE,
    -- Equalizer warp states, summed over 128-cycle samples (paper 001 section IV-A)
    eq_samples        DOUBLE,
    eq_active_warps   DOUBLE,
    eq_waiting_warps  DOUBLE,
    eq_xalu_warps     DOUBLE,
    eq_xmem_warps     DOUBLE,
    eq_issued_warps   DOUBLE,
    -- activity: instruction mix (warp instructions)
    alu_insts      BIGINT,
    sfu_insts      BIGINT,
    gld_insts      BIGINT,
    gst_insts      BIGINT,
    shared_insts   BIGINT,
    barrier_insts  BIGINT,
    -- activity: memory hierarchy (transactions)
    gld_transactions     BIGINT,
    gst_transactions     BIGINT,
    l1_accesses          BIGINT,
    l1_hits              BIGINT,
    l2_accesses          BIGINT,
    l2_hits              BIGINT,
    dram_reads           BIGINT,
    dram_writes          BIGINT,
    shared_transactions  BIGINT,
    -- activity: unit utilisation (core cycles averaged over SMs) and occupancy
    alu_busy_cycles          DOUBLE,
    sfu_busy_cycles          DOUBLE,
    mem_unit_busy_cycles     DOUBLE,
    mem_unit_stall_cycles    DOUBLE,
    write_unit_stall_cycles  DOUBLE,
    active_warps_avg         DOUBLE,
    occupancy                DOUBLE CHECK (occupancy BETWEEN 0 AND 1),
    -- energy (paper 000 section 4 power model; docs/DESIGN.md section 4)
    core_dynamic_j  DOUBLE CHECK (core_dynamic_j >= 0),
    core_static_j   DOUBLE CHECK (core_static_j >= 0),
    dram_dynamic_j  DOUBLE CHECK (dram_dynamic_j >= 0),
    dram_static_j   DOUBLE CHECK (dram_static_j >= 0),
    other_j         DOUBLE CHECK (other_j >= 0),
    PRIMARY KEY (run_id, idx)
);

-- Any further counter: idx NULL means the whole run (e.g. a profiler metric of a measured run).
-- No key: a UNIQUE over a NULL-able idx would not catch duplicates anyway; writers de-duplicate
-- on (run_id, idx, name).
CREATE TABLE metric (
    run_id  TEXT NOT NULL,
    idx     INTEGER CHECK (idx >= 0),
    name    TEXT NOT NULL,
    value   DOUBLE
);
