"""``gpudb bench scale``: how the main queries' cost grows with the number of runs.

The database's runs are replicated ``factor`` times into a temporary file as new kernels
(``<kernel_id>~<k>``) with new run ids (sha256 of the old id and the copy number), so every
query sees ``factor`` times as many kernels, runs, intervals and metrics, the shape a growing
lab database has (more kernels and GPUs, not more copies of one run). Then the prediction view,
the accuracy query behind ``evaluate accuracy``, one controller's trace replay and
``best_setting`` are timed on it. Each factor runs in a fresh process, so its peak resident
memory is its own. Time per run that stays flat as the factor grows means linear cost.
"""

from __future__ import annotations

import multiprocessing
import resource
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import duckdb

# Tables whose rows are copied once per factor, remapping these key columns; the GPU-level
# tables are copied once; results tables (control_result, calibration, Wu's model) are not
# copied, since the queries timed here do not read them.
REPLICATED = {"kernel": ("kernel_id",), "run": ("run_id", "kernel_id"),
              "interval": ("run_id",), "metric": ("run_id",)}
COPIED_ONCE = ("gpu", "pstate", "experiment")


def _remap(column: str) -> str:
    if column == "run_id":
        return "CASE WHEN k = 0 THEN run_id ELSE sha256(run_id || '~' || k) END"
    return "CASE WHEN k = 0 THEN kernel_id ELSE kernel_id || '~' || k END"


def replicate(source: Path, target: Path, factor: int) -> int:
    """Create ``target`` (a new gpudb file) holding ``factor`` copies of ``source``'s runs;
    returns the number of runs written."""
    from gpudb.store.db import connect

    connect(target).close()                   # the schema, views and functions
    con = duckdb.connect(str(target))
    try:
        con.execute(f"ATTACH '{source}' AS src (READ_ONLY)")
        con.execute("BEGIN")
        for table in COPIED_ONCE:
            con.execute(f"INSERT INTO main.{table} BY NAME SELECT * FROM src.{table}")
        for table, keys in REPLICATED.items():
            replace = ", ".join(f"{_remap(c)} AS {c}" for c in keys)
            if table == "kernel":
                replace += ", CASE WHEN k = 0 THEN name ELSE name || '~' || k END AS name"
            con.execute(f"INSERT INTO main.{table} BY NAME SELECT t.* REPLACE ({replace}) "
                        f"FROM src.{table} AS t, range({int(factor)}) AS r(k)")
        con.execute("COMMIT")
        return con.execute("SELECT count(*) FROM main.run").fetchall()[0][0]
    finally:
        con.close()


def _queries(gpu_id: str) -> dict[str, str]:
    from gpudb.control.guard import GUARDED, guard_params
    from gpudb.store.queries import get_query

    def stored(name: str, params: dict) -> str:
        sql, bound = get_query(name).bind(params)
        return sql.rstrip().rstrip(";"), bound

    replay = stored("controller_replay", {"predictor": "crisp_gpudb", "objective": "edp",
                                          "gpu_id": gpu_id, **guard_params(GUARDED)})
    return {
        "prediction view": ("SELECT count(*), sum(predicted_ns) FROM prediction", {}),
        "accuracy (mape_by_predictor)": stored("mape_by_predictor", {"gpu_id": gpu_id}),
        "replay crisp_gpudb (edp)": (f"SELECT count(*), sum(time_ns) FROM ({replay[0]})",
                                     replay[1]),
        "best_setting": stored("best_setting", {"gpu_id": gpu_id}),
    }


def _measure(source: str, factor: int, gpu_id: str, folder: str) -> dict:
    """In a fresh process: replicate, then time each query once (and, on a GPU run at several
    memory clocks, evaluate accuracy's grid tables); peak RSS of this process."""
    from gpudb.analysis.evaluate_grid import default_base, grid_tables, has_grid
    from gpudb.store.db import connect

    target = Path(folder) / f"scale-{factor}.duckdb"
    start = time.perf_counter()
    runs = replicate(Path(source), target, factor)
    build_s = time.perf_counter() - start
    con = connect(target, read_only=True)
    seconds = {}
    try:
        for name, (sql, params) in _queries(gpu_id).items():
            start = time.perf_counter()
            con.execute(sql, params).fetchall()
            seconds[name] = time.perf_counter() - start
        if has_grid(con, gpu_id):
            # evaluate accuracy's core x memory tables, Python included: per kernel they once
            # scanned every error, a cost that grew with the square of the kernels
            start = time.perf_counter()
            grid_tables(con, gpu_id, None, default_base(con, gpu_id))
            seconds["accuracy grid tables (evaluate accuracy)"] = time.perf_counter() - start
    finally:
        con.close()
        target.unlink(missing_ok=True)
    return {"factor": factor, "runs": runs, "build_s": build_s, "seconds": seconds,
            "peak_mib": own_peak_mib()}


def own_peak_mib() -> float:
    """This process's peak resident memory, MiB: Linux's VmHWM, which exec resets. Not
    getrusage's ru_maxrss, which Linux carries from the parent across the vfork and exec that
    start a spawned worker, so it reported the parent's peak wherever that was larger."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    # elsewhere: ru_maxrss is in bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024.0 ** 2 if sys.platform
                                                                    == "darwin" else 1024.0)


@dataclass
class ScaleBench:
    rows: list[dict]

    def lines(self) -> list[str]:
        base = self.rows[0]
        out = []
        for row in self.rows:
            out.append(f"factor {row['factor']}: {row['runs']:,} runs (built in "
                       f"{row['build_s']:.1f} s), peak memory {row['peak_mib']:,.0f} MiB")
            for name, s in row["seconds"].items():
                per_run = s / row["runs"] * 1e3
                ratio = per_run / (base["seconds"][name] / base["runs"] * 1e3)
                out.append(f"  {name}: {s:.2f} s, {per_run:.3f} ms per run, "
                           f"{ratio:.2f}x factor {base['factor']}'s time per run")
        return out


def bench_scale(source: Path, factors: list[int], gpu_id: str | None = None) -> ScaleBench:
    """Time the queries at each replication factor (in increasing order) of ``source``'s runs.
    ``gpu_id``: the GPU whose runs the queries read (default: the one with most fixed runs)."""
    from gpudb.store.db import GpudbError

    con = duckdb.connect(str(source), read_only=True)
    try:
        found = con.execute("SELECT gpu_id FROM run WHERE policy = 'fixed' GROUP BY gpu_id "
                            "ORDER BY count(*) DESC, gpu_id LIMIT 1").fetchall()
    finally:
        con.close()
    if not found:
        raise GpudbError(f"{source} has no fixed runs to replicate: run gpudb demo or a sweep")
    gpu_id = gpu_id or found[0][0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpudb-scale-") as folder:
        for factor in sorted(set(factors)):
            # a fresh process per factor: its peak memory is that factor's alone
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
                rows.append(pool.submit(_measure, str(source), factor, gpu_id, folder).result())
    return ScaleBench(rows)
