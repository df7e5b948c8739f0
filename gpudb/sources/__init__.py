"""Data sources that become runs, one subpackage per format: :mod:`gpudb.sources.tabular`
(CSV/Parquet files with their mappings), :mod:`gpudb.sources.gpgpusim` (GPGPU-Sim / Accel-Sim
logs), :mod:`gpudb.sources.nvml` (live NVML measurement).

Each reads and checks its whole input before anything is written, then hands the rows it
gives to the one writer, :mod:`gpudb.sources.write` (a Batch: the experiment and, per file,
log or grid of measurements, a Part of GPU, P-state, kernel, run, interval and metric rows),
and states in its report what the writer added. :mod:`gpudb.sources.summary` is the sanity
summary printed after ingest and ingest-log."""
