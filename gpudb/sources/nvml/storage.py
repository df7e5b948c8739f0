"""Measurements (``gpudb measure``) as ``measured`` runs for the sources' writer
(gpudb.sources.write): the GPU, kernel and experiment rows they belong to, one run per
repetition with its energy and the clocks seen as metrics.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from gpudb.sources.nvml.plan import Gpu
from gpudb.sources.nvml.sampling import Measurement
from gpudb.sources.write import Batch, Part, write
from gpudb.store.db import GpudbError, first_row
from gpudb.store.runs import experiment_id


def gpu_id_of(name: str) -> str:
    """gpu_id of an NVML device name: "NVIDIA A100-SXM4-40GB" -> "nvidia-a100-sxm4-40gb"."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


@dataclass
class Target:
    """Where the runs go: experiment, GPU row, kernel row."""

    experiment: str
    gpu_id: str
    kernel: str
    suite: str
    n_sm: int


def check_target(con: duckdb.DuckDBPyConnection, target: Target) -> None:
    stored = first_row(con.execute(
        "SELECT simulator, (SELECT count(*) FROM run WHERE experiment_id = e.experiment_id AND "
        "source = 'sim') FROM experiment AS e WHERE experiment_id = ?",
        [experiment_id(target.experiment)]))
    if stored is not None and (stored[0] or stored[1]):
        raise GpudbError(f"experiment {target.experiment!r} holds simulated runs: choose "
                         "another --experiment")
    have = first_row(con.execute("SELECT n_sm FROM gpu WHERE gpu_id = ?", [target.gpu_id]))
    if have is not None and have[0] != target.n_sm:
        raise GpudbError(f"GPU {target.gpu_id!r} in the database has {have[0]} SMs, this one "
                         f"{target.n_sm}: name another with --gpu")


def _run_row(m: Measurement, target: Target, gpu: Gpu, exp_id: str,
             command_hash: str) -> tuple[dict, list[dict]]:
    kernel_id = f"{target.suite}/{target.kernel}"
    s = m.setting
    # A measurement is unique by the GPU and the moment it started, the rest is what it saw.
    run_id = hashlib.md5("|".join(
        ["measured", gpu.uuid, kernel_id, str(s.core_mhz), str(s.mem_mhz), command_hash,
         str(m.started_ns), str(m.time_ns), repr(m.energy_j)]).encode()).hexdigest()
    run = {"run_id": run_id, "experiment_id": exp_id, "source": "measured",
           "kernel_id": kernel_id, "gpu_id": target.gpu_id, "policy": "fixed",
           "core_mhz": float(s.core_mhz), "mem_mhz": float(s.mem_mhz), "n_sm": target.n_sm,
           "time_ns": float(m.time_ns), "energy_j": m.energy_j, "input_hash": command_hash}
    smp = m.samples
    values = {
        "repetition": m.repetition, "samples": len(smp.sm_mhz),
        "observed_sm_mhz_mean": sum(smp.sm_mhz) / len(smp.sm_mhz),
        "observed_sm_mhz_min": min(smp.sm_mhz), "observed_sm_mhz_max": max(smp.sm_mhz),
        "observed_mem_mhz_mean": sum(smp.mem_mhz) / len(smp.mem_mhz),
        "observed_mem_mhz_min": min(smp.mem_mhz),
        "clock_event_reasons": smp.reasons,
        "avg_power_w": m.energy_j / (m.time_ns * 1e-9),
        "energy_from_counter": float(m.energy_from_counter),
        "clocks_locked": float(m.lock_method == "locked")}
    metrics = [{"run_id": run_id, "name": k, "value": float(v)} for k, v in values.items()]
    return run, metrics


def store(con: duckdb.DuckDBPyConnection, measurements: Sequence[Measurement], target: Target,
          gpu: Gpu, command: Sequence[str]) -> int:
    """Write the measurements as runs with their metrics, and the GPU (name, SMs, default
    clocks, its supported clocks as P-states), kernel and experiment rows they need, in one
    transaction. Returns the runs added."""
    exp_id = experiment_id(target.experiment)
    command_hash = hashlib.sha256(json.dumps(list(command)).encode()).hexdigest()
    rows = [_run_row(m, target, gpu, exp_id, command_hash) for m in measurements]
    core, mem = gpu.default_clocks()
    supported = gpu.supported_clocks()
    pstates = sorted({("core", float(c)) for cs in supported.values() for c in cs}
                     | {("mem", float(m)) for m in supported})
    added = write(con, Batch(target.experiment, "measured with gpudb measure (NVML)", [Part(
        gpu=pa.Table.from_pylist([{
            "gpu_id": target.gpu_id, "name": gpu.name, "n_sm": target.n_sm,
            "nominal_core_mhz": core, "nominal_mem_mhz": mem,
            "config": json.dumps({"nvml_name": gpu.name, "uuid": gpu.uuid})}]),
        gpu_pstates=pa.table({
            "gpu_id": [target.gpu_id] * len(pstates), "domain": [d for d, _ in pstates],
            "freq_mhz": [f for _, f in pstates]}),
        kernels=pa.Table.from_pylist([{
            "kernel_id": f"{target.suite}/{target.kernel}", "name": target.kernel,
            "suite": target.suite, "description": f"measured: {shlex.join(command)}",
            "spec": json.dumps({"command": list(command)})}]),
        runs=pa.Table.from_pylist([r for r, _ in rows]),
        metrics=pa.Table.from_pylist([x for _, ms in rows for x in ms]))]))
    return added[0].runs


def kernel_name(command: Sequence[str]) -> str:
    """The default kernel name: the command's file name without its directory."""
    return Path(command[0]).name if command else ""


def sm_count(gpu: Gpu, given: int | None) -> int:
    """SMs: ``given`` (--sms), else NVML's; GpudbError when neither says."""
    if given is not None:
        return given
    found = gpu.sm_count()
    if found is None:
        raise GpudbError(f"NVML does not report {gpu.name}'s SM count: give it with --sms")
    return found


def default_experiment(gpu_id: str) -> str:
    """Default experiment name: 'measured-<gpu_id>', one per GPU model."""
    return f"measured-{gpu_id}"
