"""A trained Wu et al. model as rows of the tables of ``schema/0003_wu_model.sql`` (numbers,
never pickled objects), and its validation: the MAPE of view ``pred_wu``'s predictions on the
stored rows against the runs, per kernel and per side of the split (paper 002 section V-A).
"""

from __future__ import annotations

import time

import duckdb
import numpy as np
import pyarrow as pa

from gpudb.store.db import GpudbError, atomic, first_row
from gpudb.train.wu_clusters import ClusterSet
from gpudb.train.wu_data import Data


def model_tables(model_id: str, data: Data, sets: list[ClusterSet], train: list[str],
            kernel_ids: list[str], features: list[str], low: np.ndarray,
            high: np.ndarray) -> dict[str, pa.Table]:
    """The child rows of a model as Arrow tables, by table name."""
    grid = {"axis": [], "position": [], "value": []}
    for axis, values in (("cu", data.cu), ("core", data.core), ("mem", data.mem)):
        grid["axis"] += [axis] * len(values)
        grid["position"] += list(range(len(values)))
        grid["value"] += [float(v) for v in values]

    centroid = {c: [] for c in ("quantity", "set_kind", "set_n_sm", "cluster", "axis",
                                "fixed_mhz", "from_value", "to_value", "scale")}
    assignment = {c: [] for c in ("quantity", "set_kind", "set_n_sm", "kernel_id", "cluster")}
    weight = {c: [] for c in ("quantity", "set_kind", "set_n_sm", "layer", "src", "dst",
                              "weight")}
    cluster_set = {c: [] for c in ("quantity", "set_kind", "set_n_sm", "n_clusters", "inertia")}
    n_core, n_mem = len(data.core), len(data.mem)

    def steps(kind):
        """(axis, fixed MHz, from, to) of each entry of a centroid vector, in vector order."""
        if kind == "cu":
            return [("cu", None, float(data.cu[k]), float(data.cu[k + 1]))
                    for k in range(len(data.cu) - 1)]
        engine = [("core", float(data.mem[m]), float(data.core[j]), float(data.core[j + 1]))
                  for m in range(n_mem) for j in range(n_core - 1)]
        memory = [("mem", float(data.core[e]), float(data.mem[i]), float(data.mem[i + 1]))
                  for e in range(n_core) for i in range(n_mem - 1)]
        return engine + memory

    for s in sets:
        key = (s.quantity, s.kind, s.n_sm)
        for name, value in zip(("quantity", "set_kind", "set_n_sm"), key, strict=True):
            cluster_set[name].append(value)
        cluster_set["n_clusters"].append(len(s.centroids))
        cluster_set["inertia"].append(s.inertia)
        layout = steps(s.kind)
        for k, vector in enumerate(s.centroids):
            for (axis, fixed, lo, hi), scale in zip(layout, vector, strict=True):
                for name, value in zip(("quantity", "set_kind", "set_n_sm", "cluster", "axis",
                                        "fixed_mhz", "from_value", "to_value", "scale"),
                                       (*key, k, axis, fixed, lo, hi, float(scale)),
                                       strict=True):
                    centroid[name].append(value)
        for kernel, label in zip(train, s.labels, strict=True):
            for name, value in zip(assignment, (*key, kernel, int(label)), strict=True):
                assignment[name].append(value)
        if s.layers is not None:
            w1, b1, w2, b2 = s.layers
            for layer, w, b in ((1, w1, b1), (2, w2, b2)):
                src = np.concatenate([np.full(w.shape[1], -1),
                                      np.repeat(np.arange(w.shape[0]), w.shape[1])])
                dst = np.tile(np.arange(w.shape[1]), w.shape[0] + 1)
                values = np.concatenate([b, w.ravel()])
                n = len(values)
                weight["quantity"] += [s.quantity] * n
                weight["set_kind"] += [s.kind] * n
                weight["set_n_sm"] += [s.n_sm] * n
                weight["layer"] += [layer] * n
                weight["src"] += src.tolist()
                weight["dst"] += dst.tolist()
                weight["weight"] += values.tolist()

    def table(columns: dict) -> pa.Table:
        n = len(next(iter(columns.values())))
        return pa.table({"model_id": [model_id] * n, **columns})

    split_train = set(train)
    return {
        "wu_split": table({"kernel_id": kernel_ids,
                           "in_training": [k in split_train for k in kernel_ids]}),
        "wu_grid": table(grid),
        "wu_feature_bound": table({"position": list(range(len(features))),
                                   "feature": list(features),
                                   "min_value": low.tolist(), "max_value": high.tolist()}),
        "wu_cluster_set": table(cluster_set),
        "wu_centroid": table(centroid),
        "wu_assignment": table(assignment),
        "wu_weight": table(weight),
    }


_MODEL_TABLES = ("wu_split", "wu_grid", "wu_feature_bound", "wu_cluster_set", "wu_centroid",
                 "wu_assignment", "wu_weight")


def _store(con, model_row: dict, tables: dict[str, pa.Table]) -> None:
    """Replace any model with this id by the new one's rows (caller holds the transaction)."""
    model_id = model_row["model_id"]
    for name in _MODEL_TABLES + ("wu_model",):
        con.execute(f"DELETE FROM {name} WHERE model_id = ?", [model_id])
    columns = ", ".join(model_row)
    marks = ", ".join("?" for _ in model_row)
    con.execute(f"INSERT INTO wu_model ({columns}) VALUES ({marks})", list(model_row.values()))
    for name in _MODEL_TABLES:
        con.register("_gpudb_wu_rows", tables[name])
        try:
            con.execute(f"INSERT INTO {name} BY NAME SELECT * FROM _gpudb_wu_rows")
        finally:
            con.unregister("_gpudb_wu_rows")


_ERRORS = """
WITH actual AS (
    SELECT gpu_id, kernel_id, n_sm, core_mhz, mem_mhz,
           avg(time_ns) AS time_ns, avg(energy_j / (time_ns * 1e-9)) AS power_w
    FROM run
    WHERE policy = 'fixed' AND gpu_id = (SELECT gpu_id FROM wu_model WHERE model_id = $model_id)
    GROUP BY ALL
)
SELECT
    p.kernel_id,
    -- NULL: a kernel in neither split (kept out by train wu --suite/--kernel, or added later)
    CASE WHEN p.kernel_id IN (SELECT kernel_id FROM wu_split WHERE model_id = $model_id)
         THEN bool_or(p.in_training) END AS in_training,
    count(p.predicted_ns) AS targets,
    sum(abs(p.predicted_ns - a.time_ns) / a.time_ns) AS time_err_sum,
    max(abs(p.predicted_ns - a.time_ns) / a.time_ns) AS time_err_max,
    count(p.predicted_power_w) AS power_targets,
    sum(abs(p.predicted_power_w - a.power_w) / a.power_w) AS power_err_sum,
    max(abs(p.predicted_power_w - a.power_w) / a.power_w) AS power_err_max
FROM pred_wu AS p
JOIN actual AS a
  ON a.gpu_id = p.gpu_id AND a.kernel_id = p.kernel_id AND a.n_sm IS NOT DISTINCT FROM p.target_n_sm
 AND a.core_mhz = p.target_core_mhz AND a.mem_mhz = p.target_mem_mhz
WHERE p.model_id = $model_id
  AND NOT (p.target_n_sm IS NOT DISTINCT FROM p.base_n_sm AND p.target_core_mhz = p.base_core_mhz
           AND p.target_mem_mhz = p.base_mem_mhz)
GROUP BY p.kernel_id
ORDER BY in_training, p.kernel_id
"""


def _kernel_errors(con, model_id: str) -> list[tuple]:
    return con.execute(_ERRORS, {"model_id": model_id}).fetchall()


def _mape(rows: list[tuple], in_training: bool, power: bool) -> float | None:
    """Pooled MAPE (%) over every (kernel, target) of one side of the split."""
    total = sum((r[6] if power else r[3]) or 0.0 for r in rows if r[1] == in_training)
    count = sum(r[5] if power else r[2] for r in rows if r[1] == in_training)
    return 100.0 * total / count if count else None


def validation_table(con: duckdb.DuckDBPyConnection,
                     model_id: str) -> tuple[list[str], list[tuple]]:
    """Per kernel of a stored model: split side ('unseen' for a kernel in neither split),
    number of targets, and the MAPE and largest error (%) of predicted time and power from the
    base setting to every other setting."""
    rows = _kernel_errors(con, model_id)
    if not rows and first_row(con.execute(
            "SELECT count(*) FROM wu_model WHERE model_id = ?", [model_id]))[0] == 0:
        raise GpudbError(f"no wu model {model_id!r}")

    def pct(total, count):
        return None if total is None or not count else 100.0 * total / count

    columns = ["kernel_id", "split", "targets", "time_mape_pct", "time_max_err_pct",
               "power_mape_pct", "power_max_err_pct"]
    return columns, [
        (k, "unseen" if t is None else "training" if t else "validation", n, pct(ts, n),
         None if tm is None else 100.0 * tm, pct(ps, pn), None if pm is None else 100.0 * pm)
        for k, t, n, ts, tm, pn, ps, pm in rows
    ]


def store_and_validate(con, model_row: dict, tables: dict[str, pa.Table], power: bool,
                        started: float) -> dict[str, float | None]:
    """Store the model, then measure its training and validation MAPE (%) with view pred_wu on
    the stored rows and record them with the training time, in one transaction. Returns the
    four errors by WuReport field name."""
    model_id = model_row["model_id"]
    with atomic(con):
        _store(con, model_row, tables)
        rows = _kernel_errors(con, model_id)
        errors = {
            "val_time_mape_pct": _mape(rows, False, False),
            "val_power_mape_pct": _mape(rows, False, True) if power else None,
            "train_time_mape_pct": _mape(rows, True, False),
            "train_power_mape_pct": _mape(rows, True, True) if power else None,
        }
        seconds = time.perf_counter() - started
        con.execute("UPDATE wu_model SET val_time_mape_pct = ?, val_power_mape_pct = ?, "
                    "train_time_mape_pct = ?, train_power_mape_pct = ?, train_seconds = ? "
                    "WHERE model_id = ?", [*errors.values(), seconds, model_id])
    return errors
