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
scikit-learn (the ``gpudb-dvfs[ml]`` extra) is needed to train, not to predict.

Here: :func:`train_wu` and :func:`train_many`, which put together the data
(:mod:`gpudb.train.wu_data`), the k-means and networks (:mod:`gpudb.train.wu_clusters`) and the
stored model with its validation (:mod:`gpudb.train.wu_storage`).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import duckdb

from gpudb.store.db import GpudbError, first_row
from gpudb.train.wu_clusters import (
    KMEANS_INITS,
    MLP_ALPHA,
    MLP_MAX_ITER,
    fit_clusters,
    sklearn_module,
)
from gpudb.train.wu_data import (  # noqa: F401 - SIM_FEATURES: this module's too
    SIM_FEATURES,
    base_features,
    base_setting,
    eligible_kernels,
    load_grid,
    split_kernels,
    default_features,
    grid_settings,
    training_kernels,
)
from gpudb.train.wu_storage import (  # noqa: F401 - validation_table: this module's too
    store_and_validate,
    model_tables,
    validation_table,
)


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


def train_wu(con: duckdb.DuckDBPyConnection, gpu_id: str,
             base: tuple[int, float, float] | None = None, train_fraction: float = 0.8,
             seed: int = 0, clusters: int = 12, features: list[str] | None = None,
             power: bool = True, suite: str | None = None,
             kernels: list[str] | None = None) -> WuReport:
    """Train, store and validate a paper 002 model for one GPU; returns a :class:`WuReport`.

    base: (SM count, core MHz, memory MHz) of the base setting, a point of the grid; None for
        the highest (most SMs, then highest core and memory MHz).
    train_fraction: share of kernels in the training split (0 < f <= 1), drawn with ``seed``.
    clusters: k-means clusters per cluster set (paper 002 finds 12 enough, section V-B); fewer
        are formed where the training kernels have fewer distinct scaling values.
    features: classifier inputs, names in view ``wu_feature``; None for the data source's
        default (:func:`default_features`).
    power: also model average power (W), when every run has energy_j.
    suite, kernels: train on the kernels of this suite, and of these kernel ids, only (None:
        every kernel); the others stay out of both splits, and pred_wu predicts them as
        kernels it never saw.
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
    sk = sklearn_module()
    selection = training_kernels(con, gpu_id, suite, kernels)
    data = load_grid(con, gpu_id, power, selection)
    base, base_idx = base_setting(data, gpu_id, base)
    # dict.fromkeys: a name given twice would be two inputs fed the same value
    features = (list(dict.fromkeys(features)) if features
                else default_features(con, gpu_id, base, selection))
    measured = base_features(con, gpu_id, base, features)
    excluded, eligible = eligible_kernels(data, measured, gpu_id)
    train, validation = split_kernels(eligible, train_fraction, seed)
    quantities = ["time", "power"] if power else ["time"]
    sets, oracle, low, high = fit_clusters(data, measured, train, base_idx, quantities, clusters,
                                           seed, sk)

    version, *_ = sk
    trainer = (f"scikit-learn {version}: KMeans(n_init={KMEANS_INITS}), MLPClassifier(hidden="
               f"clusters, logistic, lbfgs, alpha={MLP_ALPHA}, max_iter={MLP_MAX_ITER})")
    identity = json.dumps([gpu_id, base, features, clusters, seed, train_fraction, quantities,
                           data.data_sha256, trainer])
    model_id = hashlib.sha256(identity.encode()).hexdigest()[:16]
    from gpudb.version import __version__

    model_row = {
        "model_id": model_id, "gpu_id": gpu_id, "base_n_sm": base[0], "base_core_mhz": base[1],
        "base_mem_mhz": base[2], "features": features, "clusters": clusters, "seed": seed,
        "train_fraction": train_fraction, "quantities": quantities,
        "data_sha256": data.data_sha256, "trainer": trainer,
        "created_at": datetime.now(timezone.utc), "gpudb_version": __version__,
        "oracle_time_mape_pct": oracle["time"], "oracle_power_mape_pct": oracle.get("power"),
    }
    tables = model_tables(model_id, data, sets, train, train + validation, features, low, high)
    errors = store_and_validate(con, model_row, tables, power, started)
    notes = ([] if validation else
             ["no validation kernels (train fraction 1): validation error undefined"])
    if selection is not None:
        others = first_row(con.execute(
            "SELECT count(DISTINCT kernel_id) FROM run WHERE gpu_id = ? AND policy = 'fixed' "
            "AND NOT list_contains(?, kernel_id)", [gpu_id, selection]))[0]
        notes.append(f"{others} other kernel{'s' if others != 1 else ''} of {gpu_id} kept out "
                     "of both splits (--suite/--kernel): pred_wu predicts them as unseen")
    return WuReport(
        model_id=model_id, gpu_id=gpu_id, base=base, clusters=clusters, seed=seed,
        train_fraction=train_fraction, features=features, quantities=quantities,
        train_kernels=train, validation_kernels=validation, excluded=excluded,
        grid=(len(data.cu), len(data.core), len(data.mem)),
        cluster_counts={f"{s.quantity}/{s.kind}" + (f"@{s.n_sm}" if s.n_sm else ""):
                        len(s.centroids) for s in sets},
        oracle_time_mape_pct=oracle["time"], oracle_power_mape_pct=oracle.get("power"),
        seconds=time.perf_counter() - started, notes=notes, **errors)


def train_many(con: duckdb.DuckDBPyConnection, gpu_id: str,
               bases: list[tuple[int, float, float]] | None = None,
               cluster_counts: tuple[int, ...] = (12,), train_fraction: float = 0.8,
               seed: int = 0, features: list[str] | None = None,
               power: bool = True, suite: str | None = None,
               kernels: list[str] | None = None) -> tuple[list[str], list[tuple]]:
    """A model per base setting (None: every setting of the grid, for the heat maps of paper
    002 figures 10-11, see query wu_error_by_base) and per cluster count (figures 13 and 16,
    and 15's oracle), all on the same kernel split (same seed). Returns (columns, rows) with
    each model's validation, training and oracle-classifier MAPE (%) of time and power.
    suite, kernels: as train_wu's."""
    columns = ["base_n_sm", "base_core_mhz", "base_mem_mhz", "clusters", "model_id",
               "val_time_mape_pct", "val_power_mape_pct", "train_time_mape_pct",
               "train_power_mape_pct", "oracle_time_mape_pct", "oracle_power_mape_pct",
               "seconds"]
    rows = []
    if bases is None:
        bases = grid_settings(con, gpu_id, training_kernels(con, gpu_id, suite, kernels))
    for base in bases:
        for clusters in cluster_counts:
            r = train_wu(con, gpu_id, base=base, train_fraction=train_fraction, seed=seed,
                         clusters=clusters, features=features, power=power, suite=suite,
                         kernels=kernels)
            rows.append((*r.base, clusters, r.model_id, r.val_time_mape_pct,
                         r.val_power_mape_pct, r.train_time_mape_pct, r.train_power_mape_pct,
                         r.oracle_time_mape_pct, r.oracle_power_mape_pct, r.seconds))
    return columns, rows
