"""Wu et al.'s machine-learning performance and power model: paper 002 (Wu, Greathouse,
Lyashevsky, Jayasena, Chiou, HPCA 2015), the pure numpy pieces.

A kernel's time (or average power) over a grid of hardware settings (CU count, engine MHz,
memory MHz) is summarised by *scaling values*, ratios of the value at one grid point to the value
at the next (section III-B):

- engine scaling ``e[c, m, j] = t[c, j+1, m] / t[c, j, m]``: one matrix per CU count ``c``, a row
  per memory frequency ``m``, a column per engine step ``j`` (figure 7(c));
- memory scaling ``m[c, e, i] = t[c, e, i+1] / t[c, e, i]``: a row per engine frequency ``e``,
  a column per memory step ``i`` (figure 7(b));
- CU scaling ``u[k] = t[k+1, e0, m0] / t[k, e0, m0]`` at the base engine and memory frequency
  ``(e0, m0)`` (figure 8).

A target value is the base value times the scaling values along a path from the base setting
to the target (equation 1), a step downwards using the reciprocal of the upward value. The path
applies CU scaling first (section III-B, "always applied before any engine or memory frequency
scaling values"), then the engine steps at the base memory frequency (the ``e_{0,j}`` row of
eq. 1), then the memory steps at the target engine frequency, both with the matrices of the
target CU count. On a kernel's own scaling values the products telescope, so the training
values are reproduced exactly (up to rounding).

Clustering (section III-C) groups training kernels by their scaling values, once per CU count
(engine and memory values concatenated) and once by CU scaling; a centroid is a representative
set of scaling values of the same shape. A neural network per cluster set (section III-D) maps
min-max normalised counter features measured at the base setting to a cluster. Training lives
in :mod:`gpudb.train.wu_model`; the stored model is evaluated in SQL by the ``pred_wu`` view.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from gpudb.predictors import Predictor, Udf


def step_ratios(values: np.ndarray, axis: int) -> np.ndarray:
    """Scaling values along one axis of a grid (paper 002 section III-B): the value at each
    grid point over the value at the point below it; one fewer entry along ``axis``."""
    moved = np.moveaxis(np.asarray(values, dtype=np.float64), axis, -1)
    return np.moveaxis(moved[..., 1:] / moved[..., :-1], -1, axis)


@dataclass(frozen=True)
class Surfaces:
    """The scaling values of one kernel (or one set of centroids) over a grid.

    engine: shape (n_cu, n_mem, n_core - 1), figure 7(c) per CU count;
    memory: shape (n_cu, n_core, n_mem - 1), figure 7(b) per CU count;
    cu: shape (n_cu - 1,), figure 8, at the base engine and memory frequency.
    All are dimensionless ratios (value at the higher setting / value at the lower one).
    """

    engine: np.ndarray
    memory: np.ndarray
    cu: np.ndarray


def surfaces(values: np.ndarray, base_core: int, base_mem: int) -> Surfaces:
    """Scaling values of a grid of times (ns) or powers (W) of shape (n_cu, n_core, n_mem);
    ``base_core``/``base_mem`` index the base engine and memory frequency, where the CU
    scaling values are taken (paper 002 section III-B, figures 7-8)."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 3:
        raise ValueError(f"want a (n_cu, n_core, n_mem) grid, got shape {values.shape}")
    return Surfaces(
        engine=np.swapaxes(step_ratios(values, 1), 1, 2),
        memory=step_ratios(values, 2),
        cu=step_ratios(values[:, base_core, base_mem], 0),
    )


def path_product(steps: np.ndarray, start: int, stop: int) -> float:
    """Product of the scaling values met going from grid position ``start`` to ``stop`` along
    one axis; ``steps[k]`` scales position k to k + 1. Downward paths use the reciprocals
    (paper 002 eq. 1 and the text after it)."""
    if stop >= start:
        return float(np.prod(steps[start:stop]))
    return 1.0 / float(np.prod(steps[stop:start]))


def predict(base_value: float, s: Surfaces, base: tuple[int, int, int],
            target: tuple[int, int, int]) -> float:
    """Value at grid position ``target`` = (cu, core, mem) from ``base_value`` measured at
    ``base``: paper 002 eq. 1, CU scaling first, then engine steps at the base memory
    frequency, then memory steps at the target engine frequency (target CU count's matrices).
    Units are those of ``base_value`` (ns or W)."""
    cu0, e0, m0 = base
    cu1, e1, m1 = target
    value = base_value * path_product(s.cu, cu0, cu1)
    value *= path_product(s.engine[cu1, m0], e0, e1)
    return value * path_product(s.memory[cu1, e1], m0, m1)


def predict_grid(base_value: float, s: Surfaces, base: tuple[int, int, int]) -> np.ndarray:
    """:func:`predict` to every grid position: an array of shape (n_cu, n_core, n_mem)."""
    shape = (s.cu.shape[0] + 1, s.memory.shape[1], s.engine.shape[1])
    out = np.empty(shape)
    for target in np.ndindex(shape):
        out[target] = predict(base_value, s, base, target)
    return out


def freq_vector(s: Surfaces, cu: int) -> np.ndarray:
    """Clustering features of the cluster set of CU index ``cu``: its engine and memory
    scaling values concatenated (paper 002 section III-C)."""
    return np.concatenate([s.engine[cu].ravel(), s.memory[cu].ravel()])


def compose(engine_vectors: list[np.ndarray], cu_vector: np.ndarray, n_core: int,
            n_mem: int) -> Surfaces:
    """Surfaces assembled from one chosen centroid per cluster set: ``engine_vectors[c]`` is
    the :func:`freq_vector` layout of CU index c, ``cu_vector`` the CU scaling values."""
    n_engine = n_mem * (n_core - 1)
    engine = np.stack([v[:n_engine].reshape(n_mem, n_core - 1) for v in engine_vectors])
    memory = np.stack([v[n_engine:].reshape(n_core, n_mem - 1) for v in engine_vectors])
    return Surfaces(engine=engine, memory=memory, cu=np.asarray(cu_vector, dtype=np.float64))


def normalise(features: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Min-max normalisation with the training set's bounds (paper 002 section III-D); a
    feature constant over the training set carries no information and maps to 0. Values of
    new kernels may fall outside [0, 1], as in the paper, which does not clip them."""
    span = high - low
    safe = np.where(span > 0, span, 1.0)
    return np.where(span > 0, (features - low) / safe, 0.0)


def mlp_layers(coefs: list[np.ndarray], intercepts: list[np.ndarray],
               n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A one-hidden-layer classifier's weights as (W1, b1, W2, b2) whose output column k
    scores cluster k; the chosen cluster is the arg-max of ``sigmoid(x @ W1 + b1) @ W2 + b2``
    (paper 002 section III-D, figure 9).

    ``coefs``/``intercepts`` are scikit-learn's ``MLPClassifier`` attributes, trained on
    labels 0 .. n_classes - 1. The paper's sigmoid output units and scikit-learn's softmax are
    both monotonic in the pre-activation, so the arg-max picks the same cluster. With two
    classes scikit-learn has one logistic output unit that picks class 1 when its
    pre-activation is positive; it becomes two columns, class 0 scored 0.
    """
    (w1, w2), (b1, b2) = coefs, intercepts
    w1, b1 = np.asarray(w1, dtype=np.float64), np.asarray(b1, dtype=np.float64)
    if n_classes == 2 and w2.shape[1] == 1:
        w2 = np.hstack([np.zeros_like(w2), w2])
        b2 = np.concatenate([[0.0], b2])
    if w2.shape[1] != n_classes:
        raise ValueError(f"classifier has {w2.shape[1]} outputs for {n_classes} clusters")
    return w1, b1, np.asarray(w2, dtype=np.float64), np.asarray(b2, dtype=np.float64)


def _segment_product(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Product of each list of a flattened list column (offsets start at 0); empty lists
    give 1."""
    out = np.ones(len(offsets) - 1)
    starts = offsets[:-1]
    filled = offsets[1:] > starts
    if filled.any():
        # reduceat over the starts of non-empty lists only: each runs to the next start,
        # which is its own end because the lists skipped in between are empty.
        out[filled] = np.multiply.reduceat(values[:offsets[-1]], starts[filled])
    return out


def scale_by_steps(base_value: np.ndarray, up_values: np.ndarray, up_offsets: np.ndarray,
                   down_values: np.ndarray, down_offsets: np.ndarray) -> np.ndarray:
    """Paper 002 eq. 1 row by row: base value times the product of the upward steps' scaling
    values over the product of the downward steps' (their reciprocals). Lists are given
    flattened with offsets (n + 1 of them, starting at 0)."""
    return (base_value * _segment_product(up_values, up_offsets)
            / _segment_product(down_values, down_offsets))


def _flat(lists: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    offsets = lists.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    values = lists.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
    return values, offsets - offsets[0]


def predict_wu_arrow(base_value: pa.Array, up_scaling: pa.Array,
                     down_scaling: pa.Array) -> pa.Array:
    """SQL ``predict_wu(base_value, up_scaling DOUBLE[], down_scaling DOUBLE[])``: eq. 1 of
    paper 002 on a path's scaling values (units of ``base_value``: ns for time, W for power).

    An Arrow UDF; DuckDB drops rows with a NULL argument before the call (NULL in, NULL out).
    NULL elements inside a list are not allowed (a scaling value is never NULL).
    """
    if isinstance(base_value, pa.ChunkedArray):
        base_value = base_value.combine_chunks()
    base = base_value.to_numpy(zero_copy_only=False).astype(np.float64)
    return pa.array(scale_by_steps(base, *_flat(up_scaling), *_flat(down_scaling)))


UDFS = (Udf("predict_wu", predict_wu_arrow, ("DOUBLE", "DOUBLE[]", "DOUBLE[]"), "DOUBLE",
            "predict_wu(base_value, up_scaling, down_scaling): paper 002 eq. 1, base time (ns) or "
            "power (W) times the upward steps' scaling values over the downward steps'"),)

# A learned model evaluated in SQL (schema/views/45_pred_wu.sql) from the models that
# gpudb.train.wu_model stores: whole runs, across SM count, core and memory clock; no formula a
# controller could call between intervals.
PREDICTOR = Predictor(
    name="wu", title="Wu et al.", paper="paper 002 eq. 1, sections III-B to III-D", order=100,
    granularity=("run",), domains=("sm", "core", "mem"), union=False,
    needs="a model: gpudb train wu")
