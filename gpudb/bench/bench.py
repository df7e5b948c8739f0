"""Benchmarks behind `gpudb bench`: each prints a figure next to a reference measured in the
same run, so the ratio, not the machine, is what is compared."""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from gpudb.predictors import registry
from gpudb.sources.tabular.ingest import ingest
from gpudb.sources.tabular.mapping import load_mapping
from gpudb.store.db import GpudbError, atomic, connect

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
    gpudb_s: list[float]
    duckdb_s: list[float]

    @property
    def ratio(self) -> float:
        """gpudb ingest speed as a fraction of DuckDB's own bulk insert (medians)."""
        return statistics.median(self.duckdb_s) / statistics.median(self.gpudb_s)

    def lines(self) -> list[str]:
        ours, theirs = statistics.median(self.gpudb_s), statistics.median(self.duckdb_s)
        runs = len(self.gpudb_s)
        return [
            f"rows: {self.rows:,} runs + {self.metric_rows:,} metric values; median of {runs} "
            "alternating runs",
            f"gpudb ingest (Parquet file -> validate -> run + metric): {ours:.3f} s, "
            f"{self.rows / ours:,.0f} run rows/s "
            f"(runs: {', '.join(f'{t:.2f}' for t in self.gpudb_s)} s)",
            f"DuckDB INSERT ... SELECT from Arrow tables of the same rows: {theirs:.3f} s, "
            f"{self.rows / theirs:,.0f} run rows/s "
            f"(runs: {', '.join(f'{t:.2f}' for t in self.duckdb_s)} s)",
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


def _gpudb_ingest_once(tmp: Path, data_path: Path, mapping, tag: int):
    ours = connect(tmp / f"gpudb-{tag}.duckdb")
    try:
        start = time.perf_counter()
        ingest(ours, [data_path], mapping)
        seconds = time.perf_counter() - start
        tables = {t: ours.sql(f"SELECT * FROM {t}").to_arrow_table()
                  for t in ("gpu", "kernel", "experiment", "run", "metric")}
    finally:
        ours.close()
    return seconds, tables


def _duckdb_insert_once(tmp: Path, tables: dict, tag: int) -> float:
    theirs = connect(tmp / f"duckdb-{tag}.duckdb")
    try:
        for table in ("gpu", "kernel", "experiment"):
            theirs.register("_ref", tables[table])
            theirs.execute(f"INSERT INTO {table} SELECT * FROM _ref")
            theirs.unregister("_ref")
        theirs.register("_runs", tables["run"])
        theirs.register("_metrics", tables["metric"])
        start = time.perf_counter()
        with atomic(theirs):
            theirs.execute("INSERT INTO run SELECT * FROM _runs")
            theirs.execute("INSERT INTO metric SELECT * FROM _metrics")
        return time.perf_counter() - start
    finally:
        theirs.close()


def bench_ingest(rows: int = 1_000_000, metrics: int = 4, seed: int = 0,
                 repeat: int = 3) -> IngestBench:
    """Time gpudb's ingest of a synthetic Parquet file against DuckDB inserting the very rows
    gpudb produced, from Arrow tables, into a fresh file with the same schema; `repeat`
    alternating runs of each into fresh files, compared by their medians."""
    gpudb_s, duckdb_s = [], []
    with tempfile.TemporaryDirectory(prefix="gpudb-bench-") as tmp:
        tmp = Path(tmp)
        data_path = tmp / "synthetic.parquet"
        pq.write_table(synthetic_measurements(rows, metrics, seed), data_path)
        (tmp / "bench.toml").write_text(_BENCH_MAPPING)
        mapping = load_mapping(tmp / "bench.toml")
        for tag in range(repeat):
            seconds, tables = _gpudb_ingest_once(tmp, data_path, mapping, tag)
            gpudb_s.append(seconds)
            duckdb_s.append(_duckdb_insert_once(tmp, tables, tag))
            for path in tmp.glob(f"*-{tag}.duckdb*"):
                path.unlink()
    return IngestBench(rows, tables["metric"].num_rows, gpudb_s, duckdb_s)


# The predictors' formulas written as plain SQL over prediction_input's columns (each
# predictor module's plain_sql): the reference the UDF-backed views are timed against (same
# rows, same arithmetic, no Python).
_PLAIN_SQL = {p.name: p.plain_sql for p in registry() if p.plain_sql is not None}


# The columns every pred_<name> view has before predicted_ns (gpudb.predictors.Predictor.view_sql);
# bench_predict checks the plain-SQL views give the same sums as the stored ones.
_PRED_COLUMNS = """'{name}' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
    core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
    ctas_per_sm AS base_ctas_per_sm, interval_instructions,
    target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm"""


@dataclass
class PredictBench:
    view_rows: int
    formula_rows: int
    # (threads, seconds with UDFs, seconds with plain SQL) for the whole prediction view and
    # for the predictor formulas alone
    view: list[tuple[int, float, float]]
    formulas: list[tuple[int, float, float]]

    def lines(self) -> list[str]:
        out = [f"prediction view: {self.view_rows:,} rows (every predictor, sample and target, "
               "with the actual-time join)"]
        for threads, udf_s, sql_s in self.view:
            out.append(f"  threads={threads}: with Python UDFs "
                       f"{self.view_rows / udf_s:,.0f} rows/s,"
                       f" with the formulas as plain SQL {self.view_rows / sql_s:,.0f} rows/s, "
                       f"ratio {sql_s / udf_s:.2f}")
        out.append(f"predictor formulas alone: {self.formula_rows:,} predictions over "
                   "prediction_input rows (repeated to at least a million)")
        for threads, udf_s, sql_s in self.formulas:
            out.append(f"  threads={threads}: Python UDFs {self.formula_rows / udf_s:,.0f} rows/s, "
                       f"plain SQL {self.formula_rows / sql_s:,.0f} rows/s, "
                       f"ratio {sql_s / udf_s:.2f}")
        return out


def _best_of(con, sql: str, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = con.execute(sql).fetchall()
        best = min(best, time.perf_counter() - start)
    return best, result


def _time_pair(con, udf_sql: str, plain_sql: str, setup_plain, teardown_plain,
               repeat: int) -> list[tuple[int, float, float]]:
    """Best-of-`repeat` seconds of both forms at the connection's threads and at 1 thread;
    checks they compute the same sums."""
    threads = int(con.execute("SELECT current_setting('threads')").fetchall()[0][0])
    timings = []
    try:
        for setting in sorted({threads, 1}, reverse=True):
            con.execute(f"SET threads = {setting}")
            udf_s, udf_total = _best_of(con, udf_sql, repeat)
            setup_plain()
            try:
                sql_s, sql_total = _best_of(con, plain_sql, repeat)
            finally:
                teardown_plain()
            if not np.allclose(np.array(udf_total[0], dtype=float),
                               np.array(sql_total[0], dtype=float), rtol=1e-9, equal_nan=True):
                raise AssertionError(
                    f"UDF and plain-SQL results differ: {udf_total} vs {sql_total}")
            timings.append((setting, udf_s, sql_s))
    finally:
        con.execute(f"SET threads = {threads}")
    return timings


def bench_predict(con, min_rows: int = 1_000_000, repeat: int = 3) -> PredictBench:
    """Time gpudb's UDF-backed prediction view against the same view with the predictor
    formulas written in plain SQL (temporary pred_* views shadow the stored ones), and the
    formulas alone over prediction_input repeated to `min_rows`; at the connection's thread
    setting and at threads=1."""
    per_copy = con.execute("SELECT count(*) FROM prediction_input").fetchall()[0][0]
    if per_copy == 0:
        raise GpudbError("no fixed-run samples to predict from: ingest or sweep runs first")

    def shadow_with_sql(source: str):
        def setup():
            for name, formula in _PLAIN_SQL.items():
                con.execute(f"CREATE OR REPLACE TEMP VIEW pred_{name} AS SELECT "
                            f"{_PRED_COLUMNS.format(name=name)}, {formula} AS predicted_ns "
                            f"FROM {source}")
        return setup

    def drop_shadows():
        for name in _PLAIN_SQL:
            con.execute(f"DROP VIEW IF EXISTS temp.pred_{name}")

    view_sql = "SELECT count(*), sum(predicted_ns), sum(actual_ns) FROM prediction"
    view_rows = con.execute("SELECT count(*) FROM prediction").fetchall()[0][0]
    view = _time_pair(con, view_sql, view_sql, shadow_with_sql("prediction_input"),
                      drop_shadows, repeat)

    copies = max(1, -(-min_rows // (per_copy * len(_PLAIN_SQL))))
    con.execute("CREATE OR REPLACE TEMP TABLE _bench_input AS SELECT p.* FROM prediction_input "
                f"AS p, range({copies})")
    try:
        udf_union = " UNION ALL ".join(
            f"SELECT predicted_ns FROM pred_{name}" for name in _PLAIN_SQL)
        formulas_sql = f"SELECT count(*), sum(predicted_ns) FROM ({udf_union})"
        con.execute("CREATE OR REPLACE TEMP VIEW prediction_input AS SELECT * FROM _bench_input")
        formulas = _time_pair(con, formulas_sql, formulas_sql, shadow_with_sql("_bench_input"),
                              drop_shadows, repeat)
    finally:
        con.execute("DROP VIEW IF EXISTS temp.prediction_input")
        con.execute("DROP TABLE IF EXISTS _bench_input")
    return PredictBench(view_rows, per_copy * copies * len(_PLAIN_SQL), view, formulas)
