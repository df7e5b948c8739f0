"""Training Wu et al.'s machine-learning performance and power model (paper 002, HPCA 2015)
on a gpudb database, storing it there, and reporting its validation error.

:func:`train_wu` reads the ``fixed`` runs of one GPU over a grid of (SM/CU count, core MHz,
memory MHz), splits the kernels at random into training and validation sets (section IV: 80%
and 20%), turns each training kernel's times and average powers into scaling values (section
III-B, :mod:`gpudb.predictors.wu`), clusters them with k-means once per CU count and once for
CU scaling (section III-C), and trains one neural network per cluster set that maps min-max
normalised counter features measured at the base setting to a cluster (section III-D). Power is
modelled the same way from the runs' average power (section V-C).

The model is stored as numbers in the tables of ``schema/0003_wu_model.sql`` (centroids,
normalisation bounds, the networks' weights), never as pickled objects, so opening a file from
elsewhere never runs code from it; the ``pred_wu`` view evaluates it in plain SQL for every base
run, including kernels added after training. Several models (seeds, bases, cluster counts) stay
stored side by side under their ids; view ``prediction`` takes each GPU's latest.
scikit-learn (the ``gpudb[ml]`` extra) is needed to train, not to predict.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone

import duckdb
import numpy as np
import pyarrow as pa

from gpudb.predictors import wu
from gpudb.store.db import GpudbError, atomic, first_row

# Classifier inputs for simulated runs, computed by view wu_feature from interval counters:
# analogues of paper 002 table II (see schema/views/41_wu_feature.sql for each one's definition).
SIM_FEATURES = (
    "wu_alu_inst_frac", "wu_sfu_inst_frac", "wu_load_inst_frac", "wu_store_inst_frac",
    "wu_shared_inst_frac", "wu_alu_busy", "wu_sfu_busy", "wu_mem_unit_busy",
    "wu_mem_unit_stalled", "wu_write_unit_stalled", "wu_l2_hit_rate", "wu_occupancy", "wu_ipc",
    "wu_mem_time", "wu_loads_per_transaction", "wu_stores_per_transaction",
    "wu_read_bandwidth", "wu_write_bandwidth",
)
# Measured runs: the DCGM profiling activities of an ingested dataset (metric names dcgm_*).
MEASURED_FEATURE_PREFIX = "dcgm_"

KMEANS_INITS = 10
MLP_MAX_ITER = 2000
MLP_ALPHA = 1e-4
QUANTITIES = ("time", "power")


@dataclass
class WuReport:
    """What :func:`train_wu` did. Errors are mean absolute percentage errors (%) over kernels x
    target settings, the base setting excluded (paper 002 section V-A); None where there is
    nothing to average (no validation kernels, no power)."""

    model_id: str
    gpu_id: str
    base: tuple[int, float, float]          # (n_sm, core MHz, mem MHz)
    clusters: int
    seed: int
    train_fraction: float
    features: list[str]
    quantities: list[str]
    train_kernels: list[str]
    validation_kernels: list[str]
    excluded: dict[str, str]                # kernel -> why it was left out
    grid: tuple[int, int, int]              # settings per axis: (cu, core, mem)
    cluster_counts: dict[str, int]          # "time/freq@80" -> clusters formed
    val_time_mape_pct: float | None
    val_power_mape_pct: float | None
    train_time_mape_pct: float | None
    train_power_mape_pct: float | None
    oracle_time_mape_pct: float | None
    oracle_power_mape_pct: float | None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """A few lines for the command line."""
        def pct(value):
            return "-" if value is None else f"{value:.1f}%"

        n_sm, core, mem = self.base
        lines = [
            f"wu model {self.model_id} for {self.gpu_id}: base {n_sm} SMs, {core:g} MHz core, "
            f"{mem:g} MHz memory; grid {self.grid[0]} x {self.grid[1]} x {self.grid[2]} "
            f"(SMs x core x memory)",
            f"split: {len(self.train_kernels)} training / {len(self.validation_kernels)} "
            f"validation kernels (train fraction {self.train_fraction:g}, seed {self.seed}); "
            f"clusters {self.clusters}; {len(self.features)} features",
            f"validation MAPE: time {pct(self.val_time_mape_pct)}, power "
            f"{pct(self.val_power_mape_pct)} (paper 002: 15% and 10%)",
            f"training MAPE: time {pct(self.train_time_mape_pct)}, power "
            f"{pct(self.train_power_mape_pct)}; oracle classifier: time "
            f"{pct(self.oracle_time_mape_pct)}, power {pct(self.oracle_power_mape_pct)}",
            f"trained in {self.seconds:.2f} s",
        ]
        lines += [f"note: {note}" for note in self.notes]
        lines += [f"excluded {kernel}: {why}" for kernel, why in sorted(self.excluded.items())]
        return "\n".join(lines)


@dataclass
class _Data:
    """One GPU's fixed runs on a full grid, per kernel: values[q] has shape
    (kernels, n_cu, n_core, n_mem)."""

    kernels: list[str]
    cu: np.ndarray
    core: np.ndarray
    mem: np.ndarray
    values: dict[str, np.ndarray]
    excluded: dict[str, str]
    data_sha256: str


def _sklearn():
    try:
        import sklearn
        from sklearn.cluster import KMeans
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPClassifier
        from threadpoolctl import threadpool_limits
    except ImportError:
        raise GpudbError("training a wu model needs scikit-learn: pip install 'gpudb[ml]'") \
            from None
    return sklearn.__version__, KMeans, MLPClassifier, ConvergenceWarning, threadpool_limits


def _load_grid(con: duckdb.DuckDBPyConnection, gpu_id: str, power: bool) -> _Data:
    """Average time (ns) and power (W) of every kernel at every fixed setting of the GPU;
    kernels missing a setting of the full grid are excluded."""
    if first_row(con.execute("SELECT count(*) FROM gpu WHERE gpu_id = ?", [gpu_id]))[0] == 0:
        raise GpudbError(f"no GPU {gpu_id!r} in the database")
    result = con.execute("""
        SELECT r.kernel_id, coalesce(r.n_sm, g.n_sm) AS cu, r.core_mhz, r.mem_mhz,
               avg(r.time_ns) AS time_ns,
               avg(r.energy_j / (r.time_ns * 1e-9)) AS power_w,
               bool_and(r.energy_j IS NOT NULL) AS has_energy
        FROM run AS r JOIN gpu AS g ON g.gpu_id = r.gpu_id
        WHERE r.gpu_id = ? AND r.policy = 'fixed'
        GROUP BY ALL
    """, [gpu_id])
    rows = result.fetchall()
    table = {d[0]: [row[i] for row in rows] for i, d in enumerate(result.description)}
    if not rows:
        raise GpudbError(f"GPU {gpu_id!r} has no fixed runs to train on")
    ids = con.execute("SELECT run_id FROM run WHERE gpu_id = ? AND policy = 'fixed' "
                      "ORDER BY run_id", [gpu_id]).fetchall()
    data_sha256 = hashlib.sha256("\n".join(r[0] for r in ids).encode()).hexdigest()

    cu, core, mem = (np.unique(np.asarray(table[c], dtype=np.float64))
                     for c in ("cu", "core_mhz", "mem_mhz"))
    if len(cu) * len(core) * len(mem) < 2:
        raise GpudbError(f"GPU {gpu_id!r} has fixed runs at one setting only: nothing to scale")
    kernels = sorted(set(table["kernel_id"]))
    k_index = {k: i for i, k in enumerate(kernels)}
    shape = (len(kernels), len(cu), len(core), len(mem))
    values = {q: np.full(shape, np.nan) for q in QUANTITIES}
    for row in range(len(table["kernel_id"])):
        at = (k_index[table["kernel_id"][row]], np.searchsorted(cu, table["cu"][row]),
              np.searchsorted(core, table["core_mhz"][row]),
              np.searchsorted(mem, table["mem_mhz"][row]))
        values["time"][at] = table["time_ns"][row]
        if table["has_energy"][row]:
            values["power"][at] = table["power_w"][row]

    excluded = {}
    settings = shape[1] * shape[2] * shape[3]
    for i, kernel in enumerate(kernels):
        have = int(np.isfinite(values["time"][i]).sum())
        if have < settings:
            excluded[kernel] = f"runs at {have} of the grid's {settings} settings"
    if len(excluded) == len(kernels):
        raise GpudbError(f"no kernel of GPU {gpu_id!r} has fixed runs at all {settings} settings "
                         f"of its grid ({len(cu)} SM counts x {len(core)} core x {len(mem)} "
                         "memory MHz)")
    if power:
        no_energy = [k for i, k in enumerate(kernels)
                     if k not in excluded and not np.isfinite(values["power"][i]).all()]
        if len(no_energy) + len(excluded) == len(kernels):
            raise GpudbError(f"no kernel of GPU {gpu_id!r} has energy_j at every setting: "
                             "train without power")
        excluded.update({k: "a run without energy_j (needed for power)" for k in no_energy})
    return _Data(kernels, cu, core, mem, values, excluded, data_sha256)


def default_features(con: duckdb.DuckDBPyConnection, gpu_id: str,
                     base: tuple[int, float, float]) -> list[str]:
    """The classifier inputs for a GPU's data: table II analogues for simulated runs (they
    have intervals), the ``dcgm_*`` metrics for measured ones."""
    n_sm, core, mem = base
    where = ("FROM run AS r JOIN gpu AS g ON g.gpu_id = r.gpu_id WHERE r.gpu_id = ? "
             "AND r.policy = 'fixed' AND coalesce(r.n_sm, g.n_sm) = ? AND r.core_mhz = ? "
             "AND r.mem_mhz = ?")
    params = [gpu_id, n_sm, core, mem]
    simulated = first_row(con.execute(
        f"SELECT count(*) FROM interval WHERE run_id IN (SELECT r.run_id {where})", params))[0]
    if simulated:
        return list(SIM_FEATURES)
    names = [row[0] for row in con.execute(
        f"SELECT DISTINCT name FROM metric WHERE idx IS NULL AND starts_with(name, ?) "
        f"AND run_id IN (SELECT r.run_id {where}) ORDER BY name",
        [MEASURED_FEATURE_PREFIX, *params]).fetchall()]
    if not names:
        raise GpudbError(f"no default features for {gpu_id!r}: its base runs have no intervals "
                         f"and no {MEASURED_FEATURE_PREFIX}* metrics; name them with --features "
                         "(gpudb train wu; features= in Python)")
    return names


def _base_features(con, gpu_id: str, base: tuple[int, float, float],
                   features: list[str]) -> dict[str, np.ndarray]:
    """kernel -> feature vector (order of ``features``) at the base setting, averaged over
    repeated base runs; kernels missing a feature are left out."""
    rows = con.execute("""
        SELECT r.kernel_id, f.feature, avg(f.value)
        FROM run AS r
        JOIN gpu AS g ON g.gpu_id = r.gpu_id
        JOIN wu_feature AS f ON f.run_id = r.run_id
        WHERE r.gpu_id = ? AND r.policy = 'fixed' AND coalesce(r.n_sm, g.n_sm) = ?
          AND r.core_mhz = ? AND r.mem_mhz = ? AND list_contains(?::TEXT[], f.feature)
        GROUP BY ALL
    """, [gpu_id, *base, features]).fetchall()
    position = {name: i for i, name in enumerate(features)}
    found: dict[str, np.ndarray] = {}
    for kernel, name, value in rows:
        found.setdefault(kernel, np.full(len(features), np.nan))[position[name]] = value
    seen = {name for _, name, _ in rows}
    missing = [name for name in features if name not in seen]
    if missing:
        raise GpudbError(f"feature {missing[0]!r} is not measured for any base run of "
                         f"{gpu_id!r} (see view wu_feature)")
    return {k: v for k, v in found.items() if np.isfinite(v).all()}


def _split(kernels: list[str], train_fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """Random kernel split (paper 002 section IV), reproducible for a seed."""
    order = np.random.default_rng(seed).permutation(len(kernels))
    n_train = min(len(kernels), max(1, round(train_fraction * len(kernels))))
    train = sorted(kernels[i] for i in order[:n_train])
    return train, sorted(kernels[i] for i in order[n_train:])


@dataclass
class _ClusterSet:
    quantity: str
    kind: str                    # 'freq' or 'cu'
    n_sm: int | None             # CU count of a 'freq' set
    labels: np.ndarray           # per training kernel, 0 .. k-1
    centroids: np.ndarray        # (k, vector length)
    inertia: float
    layers: tuple | None         # (W1, b1, W2, b2); None for a set of one cluster


def _cluster(vectors: np.ndarray, clusters: int, seed: int, kmeans_cls) -> tuple:
    """k-means labels (0 .. k-1, every one used), centroids and inertia (paper 002 III-C);
    k is at most the number of distinct vectors."""
    k = min(clusters, len(np.unique(vectors, axis=0)))
    if k == 1:
        centroid = vectors.mean(axis=0, keepdims=True)
        return np.zeros(len(vectors), dtype=np.int64), centroid, float(
            ((vectors - centroid) ** 2).sum())
    fit = kmeans_cls(n_clusters=k, n_init=KMEANS_INITS, random_state=seed).fit(vectors)
    used, labels = np.unique(fit.labels_, return_inverse=True)
    return labels.astype(np.int64), fit.cluster_centers_[used], float(fit.inertia_)


def _classifier(x: np.ndarray, labels: np.ndarray, seed: int, mlp_cls, warning_cls) -> tuple:
    """One network per cluster set (paper 002 section III-D, figure 9): linear inputs, one
    sigmoid hidden layer with as many units as clusters, one output per cluster."""
    k = int(labels.max()) + 1
    mlp = mlp_cls(hidden_layer_sizes=(k,), activation="logistic", solver="lbfgs",
                  alpha=MLP_ALPHA, max_iter=MLP_MAX_ITER, random_state=seed)
    with warnings.catch_warnings():
        # lbfgs stopping at max_iter on a tiny training set is expected, not a fault.
        warnings.simplefilter("ignore", warning_cls)
        mlp.fit(x, labels)
    return wu.mlp_layers(mlp.coefs_, mlp.intercepts_, k)


def _sets(data: _Data, quantity: str, train_idx: np.ndarray, base_idx: tuple[int, int, int],
          x: np.ndarray, clusters: int, seed: int, sk) -> tuple[list[_ClusterSet], float]:
    """Cluster sets and classifiers of one quantity, and the oracle classifier's training MAPE
    (%): each training kernel predicted with the centroids of its own k-means clusters
    (paper 002 section V-B2)."""
    _, kmeans_cls, mlp_cls, warning_cls, _ = sk
    _, e0, m0 = base_idx
    grids = data.values[quantity][train_idx]
    kernel_surfaces = [wu.surfaces(g, e0, m0) for g in grids]
    n_cu, n_core, n_mem = grids.shape[1:]
    sets = []
    chosen_freq = [[np.zeros(0)] * n_cu for _ in kernel_surfaces]
    chosen_cu = [np.zeros(0) for _ in kernel_surfaces]

    def add(kind, n_sm, vectors):
        labels, centroids, inertia = _cluster(vectors, clusters, seed, kmeans_cls)
        layers = (_classifier(x, labels, seed, mlp_cls, warning_cls)
                  if len(centroids) > 1 else None)
        sets.append(_ClusterSet(quantity, kind, n_sm, labels, centroids, inertia, layers))
        return centroids[labels]

    if n_core * n_mem > 1:
        for c in range(n_cu):
            vectors = np.stack([wu.freq_vector(s, c) for s in kernel_surfaces])
            for i, centroid in enumerate(add("freq", int(data.cu[c]), vectors)):
                chosen_freq[i][c] = centroid
    if n_cu > 1:
        vectors = np.stack([s.cu for s in kernel_surfaces])
        chosen_cu = list(add("cu", None, vectors))

    errors = []
    for i, g in enumerate(grids):
        surface = wu.compose(chosen_freq[i], chosen_cu[i], n_core, n_mem)
        predicted = wu.predict_grid(g[base_idx], surface, base_idx)
        off_base = np.ones(g.shape, dtype=bool)
        off_base[base_idx] = False
        errors.append(np.abs(predicted - g)[off_base] / g[off_base])
    return sets, 100.0 * float(np.mean(errors))


def _tables(model_id: str, data: _Data, sets: list[_ClusterSet], train: list[str],
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
    bool_or(p.in_training) AS in_training,
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
    """Per kernel of a stored model: split side, number of targets, and the MAPE and largest
    error (%) of predicted time and power from the base setting to every other setting."""
    rows = _kernel_errors(con, model_id)
    if not rows and first_row(con.execute(
            "SELECT count(*) FROM wu_model WHERE model_id = ?", [model_id]))[0] == 0:
        raise GpudbError(f"no wu model {model_id!r}")

    def pct(total, count):
        return None if total is None or not count else 100.0 * total / count

    columns = ["kernel_id", "split", "targets", "time_mape_pct", "time_max_err_pct",
               "power_mape_pct", "power_max_err_pct"]
    return columns, [
        (k, "training" if t else "validation", n, pct(ts, n),
         None if tm is None else 100.0 * tm, pct(ps, pn), None if pm is None else 100.0 * pm)
        for k, t, n, ts, tm, pn, ps, pm in rows
    ]


def train_wu(con: duckdb.DuckDBPyConnection, gpu_id: str,
             base: tuple[int, float, float] | None = None, train_fraction: float = 0.8,
             seed: int = 0, clusters: int = 12, features: list[str] | None = None,
             power: bool = True) -> WuReport:
    """Train, store and validate a paper 002 model for one GPU; returns a :class:`WuReport`.

    base: (SM count, core MHz, memory MHz) of the base setting, a point of the grid; None for
        the highest (most SMs, then highest core and memory MHz).
    train_fraction: share of kernels in the training split (0 < f <= 1), drawn with ``seed``.
    clusters: k-means clusters per cluster set (paper 002 finds 12 enough, section V-B); fewer
        are formed where the training kernels have fewer distinct scaling values.
    features: classifier inputs, names in view ``wu_feature``; None for the data source's
        default (:func:`default_features`).
    power: also model average power (W), when every run has energy_j.
    The model id is a hash of all of these and of the runs trained on: training the same thing
    again replaces the stored model with an identical one, with a new created_at. Models with
    other ids stay stored beside it; the latest per GPU (view ``wu_model_current``) is the one
    view ``prediction`` and the accuracy queries use unless given ``-p model_id``.
    """
    started = time.perf_counter()
    if not 0 < train_fraction <= 1:
        raise GpudbError(f"train fraction must be in (0, 1], got {train_fraction}")
    if clusters < 1:
        raise GpudbError(f"clusters must be at least 1, got {clusters}")
    sk = _sklearn()
    data = _load_grid(con, gpu_id, power)
    base, base_idx = _base_setting(data, gpu_id, base)
    # dict.fromkeys: a name given twice would be two inputs fed the same value
    features = (list(dict.fromkeys(features)) if features
                else default_features(con, gpu_id, base))
    measured = _base_features(con, gpu_id, base, features)
    excluded, eligible = _eligible(data, measured, gpu_id)
    train, validation = _split(eligible, train_fraction, seed)
    quantities = ["time", "power"] if power else ["time"]
    sets, oracle, low, high = _fit(data, measured, train, base_idx, quantities, clusters, seed,
                                   sk)

    version, *_ = sk
    trainer = (f"scikit-learn {version}: KMeans(n_init={KMEANS_INITS}), MLPClassifier(hidden="
               f"clusters, logistic, lbfgs, alpha={MLP_ALPHA}, max_iter={MLP_MAX_ITER})")
    identity = json.dumps([gpu_id, base, features, clusters, seed, train_fraction, quantities,
                           data.data_sha256, trainer])
    model_id = hashlib.sha256(identity.encode()).hexdigest()[:16]
    from gpudb import __version__

    model_row = {
        "model_id": model_id, "gpu_id": gpu_id, "base_n_sm": base[0], "base_core_mhz": base[1],
        "base_mem_mhz": base[2], "features": features, "clusters": clusters, "seed": seed,
        "train_fraction": train_fraction, "quantities": quantities,
        "data_sha256": data.data_sha256, "trainer": trainer,
        "created_at": datetime.now(timezone.utc), "gpudb_version": __version__,
        "oracle_time_mape_pct": oracle["time"], "oracle_power_mape_pct": oracle.get("power"),
    }
    tables = _tables(model_id, data, sets, train, train + validation, features, low, high)
    errors = _store_and_validate(con, model_row, tables, power, started)
    notes = ([] if validation else
             ["no validation kernels (train fraction 1): validation error undefined"])
    return WuReport(
        model_id=model_id, gpu_id=gpu_id, base=base, clusters=clusters, seed=seed,
        train_fraction=train_fraction, features=features, quantities=quantities,
        train_kernels=train, validation_kernels=validation, excluded=excluded,
        grid=(len(data.cu), len(data.core), len(data.mem)),
        cluster_counts={f"{s.quantity}/{s.kind}" + (f"@{s.n_sm}" if s.n_sm else ""):
                        len(s.centroids) for s in sets},
        oracle_time_mape_pct=oracle["time"], oracle_power_mape_pct=oracle.get("power"),
        seconds=time.perf_counter() - started, notes=notes, **errors)


def _base_setting(data: _Data, gpu_id: str, base: tuple[int, float, float] | None
                  ) -> tuple[tuple[int, float, float], tuple[int, int, int]]:
    """The base setting (None: the grid's highest) and its (cu, core, mem) index on the grid."""
    if base is None:
        base = (int(data.cu[-1]), float(data.core[-1]), float(data.mem[-1]))
    base = (int(base[0]), float(base[1]), float(base[2]))
    try:
        base_idx = (int(np.flatnonzero(data.cu == base[0])[0]),
                    int(np.flatnonzero(data.core == base[1])[0]),
                    int(np.flatnonzero(data.mem == base[2])[0]))
    except IndexError:
        raise GpudbError(f"base setting {base} (SMs, core MHz, memory MHz) is not on the grid of "
                         f"{gpu_id!r}: SMs {data.cu.astype(int).tolist()}, core "
                         f"{data.core.tolist()}, memory {data.mem.tolist()}") from None
    return base, base_idx


def _eligible(data: _Data, measured: dict[str, np.ndarray],
              gpu_id: str) -> tuple[dict[str, str], list[str]]:
    """(kernel -> why it is left out, the kernels left to split): a kernel needs the full grid
    of runs (and energy, for power) and every feature at the base setting."""
    excluded = dict(data.excluded)
    for kernel in data.kernels:
        if kernel not in excluded and kernel not in measured:
            excluded[kernel] = "a feature is missing at the base setting"
    eligible = [k for k in data.kernels if k not in excluded]
    if not eligible:
        raise GpudbError(f"no kernel of {gpu_id!r} has both a full grid and every feature")
    return excluded, eligible


def _fit(data: _Data, measured: dict[str, np.ndarray], train: list[str],
         base_idx: tuple[int, int, int], quantities: list[str], clusters: int, seed: int,
         sk) -> tuple[list[_ClusterSet], dict[str, float], np.ndarray, np.ndarray]:
    """Fit the model on the training kernels: (cluster sets with their networks, oracle
    classifier's training MAPE (%) per quantity, and the features' min-max normalisation
    bounds, low and high)."""
    x_raw = np.stack([measured[k] for k in train])
    low, high = x_raw.min(axis=0), x_raw.max(axis=0)
    x = wu.normalise(x_raw, low, high)
    index = {k: i for i, k in enumerate(data.kernels)}
    train_idx = np.array([index[k] for k in train])
    sets, oracle = [], {}
    # The problems are tiny: BLAS/OpenMP threads cost far more than they save (15x slower
    # with 2 threads on a 2-core machine).
    with sk[-1](limits=1):
        for quantity in quantities:
            quantity_sets, oracle[quantity] = _sets(data, quantity, train_idx, base_idx, x,
                                                    clusters, seed, sk)
            sets += quantity_sets
    return sets, oracle, low, high


def _store_and_validate(con, model_row: dict, tables: dict[str, pa.Table], power: bool,
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


def parse_base(text: str | None) -> tuple[int, float, float] | None:
    """A base setting from the command line: 'SMS,CORE_MHZ,MEM_MHZ' (e.g. '32,1000,1375');
    None or '' for the default (the highest setting)."""
    if not text:
        return None
    parts = text.split(",")
    try:
        if len(parts) != 3:
            raise ValueError
        return int(parts[0]), float(parts[1]), float(parts[2])
    except ValueError:
        raise GpudbError(f"base {text!r}: want SMS,CORE_MHZ,MEM_MHZ, e.g. 32,1000,1375") \
            from None


def grid_settings(con: duckdb.DuckDBPyConnection, gpu_id: str) -> list[tuple[int, float, float]]:
    """Every (SM count, core MHz, memory MHz) of a GPU's full grid of fixed runs."""
    data = _load_grid(con, gpu_id, power=False)
    return [(int(c), float(e), float(m)) for c in data.cu for e in data.core for m in data.mem]


def train_many(con: duckdb.DuckDBPyConnection, gpu_id: str,
               bases: list[tuple[int, float, float]] | None = None,
               cluster_counts: tuple[int, ...] = (12,), train_fraction: float = 0.8,
               seed: int = 0, features: list[str] | None = None,
               power: bool = True) -> tuple[list[str], list[tuple]]:
    """A model per base setting (None: every setting of the grid, for the heat maps of paper
    002 figures 10-11, see query wu_error_by_base) and per cluster count (figures 13 and 16,
    and 15's oracle), all on the same kernel split (same seed). Returns (columns, rows) with
    each model's validation, training and oracle-classifier MAPE (%) of time and power."""
    columns = ["base_n_sm", "base_core_mhz", "base_mem_mhz", "clusters", "model_id",
               "val_time_mape_pct", "val_power_mape_pct", "train_time_mape_pct",
               "train_power_mape_pct", "oracle_time_mape_pct", "oracle_power_mape_pct",
               "seconds"]
    rows = []
    for base in bases if bases is not None else grid_settings(con, gpu_id):
        for clusters in cluster_counts:
            r = train_wu(con, gpu_id, base=base, train_fraction=train_fraction, seed=seed,
                         clusters=clusters, features=features, power=power)
            rows.append((*r.base, clusters, r.model_id, r.val_time_mape_pct,
                         r.val_power_mape_pct, r.train_time_mape_pct, r.train_power_mape_pct,
                         r.oracle_time_mape_pct, r.oracle_power_mape_pct, r.seconds))
    return columns, rows
