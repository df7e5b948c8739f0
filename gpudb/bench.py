"""Benchmarks behind `gpudb bench`: each prints a figure next to a reference measured in the
same run, so the ratio, not the machine, is what is compared."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpudb.db import connect
from gpudb.ingest import ingest
from gpudb.mapping import load_mapping

_BENCH_MAPPING = """\
description = "gpudb bench ingest: synthetic rows, not measurements"
[gpu]
gpu_id = "bench-gpu"
name = "synthetic GPU for gpudb bench"
n_sm = 16
[run]
suite = "bench"
experiment = "bench-ingest"
[columns]
kernel = "kernel"
core_mhz = "core_mhz"
mem_mhz = "mem_mhz"
time = { column = "time_ms", unit = "ms" }
power = { column = "power_w", unit = "W" }
"""


@dataclass
class IngestBench:
    rows: int
    metric_rows: int
    gpudb_s: float
    duckdb_s: float

    @property
    def ratio(self) -> float:
        """gpudb ingest speed as a fraction of DuckDB's own bulk insert of the same rows."""
        return self.duckdb_s / self.gpudb_s

    def lines(self) -> list[str]:
        return [
            f"rows: {self.rows:,} runs + {self.metric_rows:,} metric values",
            f"gpudb ingest (Parquet file -> validate -> run + metric): {self.gpudb_s:.3f} s, "
            f"{self.rows / self.gpudb_s:,.0f} run rows/s",
            f"DuckDB INSERT ... SELECT from Arrow tables of the same rows: {self.duckdb_s:.3f} s, "
            f"{self.rows / self.duckdb_s:,.0f} run rows/s",
            f"ratio gpudb / DuckDB: {self.ratio:.2f}",
        ]


def synthetic_measurements(rows: int, metrics: int, seed: int = 0) -> pa.Table:
    """A synthetic measured dataset: `rows` distinct (kernel, core MHz, memory MHz) settings
    with random times, powers and `metrics` metric columns. Synthetic, for benchmarking only."""
    rng = np.random.default_rng(seed)
    settings_per_kernel = 1000
    index = np.arange(rows)
    columns = {
        "kernel": pa.array(np.char.add("k", (index // settings_per_kernel).astype(str))),
        "core_mhz": 100.0 + 10.0 * (index % settings_per_kernel // 10),
        "mem_mhz": 500.0 + 50.0 * (index % 10),
        "time_ms": rng.uniform(0.01, 100.0, rows),
        "power_w": rng.uniform(20.0, 300.0, rows),
    }
    for m in range(metrics):
        columns[f"metric_{m}"] = rng.random(rows)
    return pa.table(columns)


def bench_ingest(rows: int = 1_000_000, metrics: int = 4, seed: int = 0) -> IngestBench:
    """Time gpudb's ingest of a synthetic Parquet file against DuckDB inserting the very rows
    gpudb produced, from Arrow tables, into a fresh file with the same schema."""
    with tempfile.TemporaryDirectory(prefix="gpudb-bench-") as tmp:
        tmp = Path(tmp)
        data_path = tmp / "synthetic.parquet"
        pq.write_table(synthetic_measurements(rows, metrics, seed), data_path)
        (tmp / "bench.toml").write_text(_BENCH_MAPPING)
        mapping = load_mapping(tmp / "bench.toml")

        ours = connect(tmp / "gpudb.duckdb")
        start = time.perf_counter()
        ingest(ours, [data_path], mapping)
        gpudb_s = time.perf_counter() - start
        run_rows = ours.sql("SELECT * FROM run").to_arrow_table()
        metric_rows = ours.sql("SELECT * FROM metric").to_arrow_table()
        reference = {t: ours.sql(f"SELECT * FROM {t}").to_arrow_table()
                     for t in ("gpu", "kernel", "experiment")}
        ours.close()

        theirs = connect(tmp / "duckdb.duckdb")
        for table, data in reference.items():
            theirs.register("_ref", data)
            theirs.execute(f"INSERT INTO {table} SELECT * FROM _ref")
            theirs.unregister("_ref")
        theirs.register("_runs", run_rows)
        theirs.register("_metrics", metric_rows)
        start = time.perf_counter()
        theirs.execute("BEGIN TRANSACTION")
        theirs.execute("INSERT INTO run SELECT * FROM _runs")
        theirs.execute("INSERT INTO metric SELECT * FROM _metrics")
        theirs.execute("COMMIT")
        duckdb_s = time.perf_counter() - start
        theirs.close()
    return IngestBench(rows, metric_rows.num_rows, gpudb_s, duckdb_s)
