"""Data sources that become runs: CSV/Parquet files with their mappings, GPGPU-Sim logs, live
NVML measurement."""
