"""The learning in Wu et al.'s model (paper 002): k-means over the training kernels' scaling
values (section III-C) and, per cluster set, a neural network from the base setting's
features to a cluster (section III-D), with scikit-learn (the ``gpudb-dvfs[ml]`` extra).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from gpudb.predictors import wu
from gpudb.store.db import GpudbError
from gpudb.train.wu_data import Data

KMEANS_INITS = 10


MLP_MAX_ITER = 2000


MLP_ALPHA = 1e-4


def sklearn_module():
    try:
        import sklearn
        from sklearn.cluster import KMeans
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPClassifier
        from threadpoolctl import threadpool_limits
    except ImportError:
        raise GpudbError("training a wu model needs scikit-learn: pip install 'gpudb-dvfs[ml]'") \
            from None
    return sklearn.__version__, KMeans, MLPClassifier, ConvergenceWarning, threadpool_limits


@dataclass
class ClusterSet:
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


def _sets(data: Data, quantity: str, train_idx: np.ndarray, base_idx: tuple[int, int, int],
          x: np.ndarray, clusters: int, seed: int, sk) -> tuple[list[ClusterSet], float]:
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
        sets.append(ClusterSet(quantity, kind, n_sm, labels, centroids, inertia, layers))
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


def fit_clusters(data: Data, measured: dict[str, np.ndarray], train: list[str],
         base_idx: tuple[int, int, int], quantities: list[str], clusters: int, seed: int,
         sk) -> tuple[list[ClusterSet], dict[str, float], np.ndarray, np.ndarray]:
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
