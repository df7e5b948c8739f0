#!/usr/bin/env bash
# The real-GPU check of gpudb measure quoted in the README ("Live measurement"): build the two
# synthetic CUDA programs, measure each at three core clocks (the highest supported, ~70% and
# ~50% of it) at the highest memory clock, 3 repetitions after 1 warm-up run, and print the
# per-setting means and best_setting. Needs nvcc, root (to set clocks) and gpudb[nvml].
# Usage: docs/measure_check/run.sh [DB]   (default: measure_check.duckdb)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
db=${1:-measure_check.duckdb}
nvcc -O3 -o /tmp/gpudb_measure_work "$here/work.cu"
read -r cores mem < <(python3 - <<'PY'
import pynvml as nv
nv.nvmlInit()
h = nv.nvmlDeviceGetHandleByIndex(0)
mem = max(nv.nvmlDeviceGetSupportedMemoryClocks(h))
cores = sorted(nv.nvmlDeviceGetSupportedGraphicsClocks(h, mem))
pick = [cores[-1]] + [min(cores, key=lambda c: abs(c - cores[-1] * f)) for f in (0.7, 0.5)]
print(",".join(map(str, pick)), mem)
PY
)
for mode in compute memory; do
    name=$([ "$mode" = compute ] && echo fma_loop || echo stream_copy)
    gpudb --db "$db" measure --core-mhz "$cores" --mem-mhz "$mem" --repeat 3 --warmup 1 \
        --kernel "$name" --suite device_check -- /tmp/gpudb_measure_work "$mode"
done
gpudb --db "$db" sql "SELECT kernel_id, core_mhz, mem_mhz, count(*) AS runs,
    round(avg(time_ns) / 1e6, 1) AS time_ms, round(avg(energy_j), 1) AS energy_j
    FROM run WHERE kernel_id LIKE 'device_check/%' GROUP BY ALL ORDER BY 1, 2 DESC"
gpudb --db "$db" query best_setting
