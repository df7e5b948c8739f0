"""Paper 002's scaling values, eq. 1 and classifier export as numpy functions, and the
predict_wu SQL function's numpy core, on hand-made grids."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from gpudb.predictors import wu

# A hand-made 2x2x2 grid of times (ns): t[cu, core, mem] at CU counts (2, 4), core MHz
# (500, 1000), memory MHz (800, 1600). Made-up numbers, not measurements.
T = np.array([[[40.0, 30.0],    # 2 CUs, 500 MHz: 800 / 1600 MHz memory
               [25.0, 15.0]],   # 2 CUs, 1000 MHz
              [[22.0, 16.0],    # 4 CUs, 500 MHz
               [14.0, 8.0]]])   # 4 CUs, 1000 MHz


def test_scaling_values_by_hand():
    # base core index 1 (1000 MHz), memory index 0 (800 MHz)
    s = wu.surfaces(T, base_core=1, base_mem=0)
    # engine scaling (figure 7(c)): per CU count, a row per memory MHz, a column per step
    np.testing.assert_allclose(s.engine, [[[25 / 40], [15 / 30]], [[14 / 22], [8 / 16]]])
    # memory scaling (figure 7(b)): per CU count, a row per engine MHz
    np.testing.assert_allclose(s.memory, [[[30 / 40], [15 / 25]], [[16 / 22], [8 / 14]]])
    # CU scaling (figure 8) at the base engine and memory frequency
    np.testing.assert_allclose(s.cu, [14 / 25])


def test_equation_1_reproduces_every_training_time_from_every_base():
    for base in np.ndindex(T.shape):
        s = wu.surfaces(T, base_core=base[1], base_mem=base[2])
        np.testing.assert_allclose(wu.predict_grid(T[base], s, base), T, rtol=1e-14)


def test_equation_1_path_and_reciprocals():
    s = wu.surfaces(T, base_core=0, base_mem=0)
    # up: 2 CUs -> 4 CUs at (500, 800), then engine 500 -> 1000 at 800 MHz memory, then
    # memory 800 -> 1600 at 1000 MHz engine, all with the 4-CU matrices
    up = 40.0 * (22 / 40) * (14 / 22) * (8 / 14)
    assert wu.predict(40.0, s, (0, 0, 0), (1, 1, 1)) == pytest.approx(up, rel=1e-15)
    # a downward step multiplies by the reciprocal of the upward scaling value
    assert wu.path_product(np.array([0.5, 0.8]), 2, 0) == pytest.approx(1 / 0.4)
    assert wu.path_product(np.array([0.5, 0.8]), 1, 1) == 1.0


def test_degenerate_grid_of_one_cu_count_and_one_memory_clock():
    times = np.array([[[9.0], [6.0], [4.0]]])   # 1 CU count x 3 core x 1 memory
    s = wu.surfaces(times, base_core=2, base_mem=0)
    assert s.cu.shape == (0,) and s.memory.shape == (1, 3, 0)
    np.testing.assert_allclose(wu.freq_vector(s, 0), [6 / 9, 4 / 6])
    np.testing.assert_allclose(wu.predict_grid(4.0, s, (0, 2, 0)), times, rtol=1e-14)


def test_compose_inverts_freq_vector():
    s = wu.surfaces(T, base_core=1, base_mem=1)
    back = wu.compose([wu.freq_vector(s, c) for c in range(2)], s.cu, n_core=2, n_mem=2)
    np.testing.assert_array_equal(back.engine, s.engine)
    np.testing.assert_array_equal(back.memory, s.memory)


def test_normalise_uses_training_bounds_and_zeroes_constant_features():
    low, high = np.array([0.0, 5.0]), np.array([2.0, 5.0])
    got = wu.normalise(np.array([[1.0, 5.0], [3.0, 7.0]]), low, high)
    np.testing.assert_allclose(got, [[0.5, 0.0], [1.5, 0.0]])  # not clipped, as in the paper


def test_scale_by_steps_on_list_columns_with_empty_lists():
    up = pa.array([[0.5, 0.8], [], [2.0], []], pa.list_(pa.float64()))
    down = pa.array([[], [0.25], [0.5, 0.5], []], pa.list_(pa.float64()))
    got = wu.predict_wu_arrow(pa.array([10.0, 10.0, 10.0, 7.0]), up, down)
    np.testing.assert_allclose(got.to_numpy(), [4.0, 40.0, 80.0, 7.0])
    # a slice of a list column (offsets not starting at 0)
    got = wu.predict_wu_arrow(pa.array([10.0, 10.0]), up.slice(1, 2), down.slice(1, 2))
    np.testing.assert_allclose(got.to_numpy(), [40.0, 80.0])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_exported_classifier_chooses_what_sklearn_predicts(n_classes):
    sklearn = pytest.importorskip("sklearn.neural_network")
    rng = np.random.default_rng(1)
    x = rng.random((30, 4))
    labels = np.argmax(x[:, :n_classes], axis=1)
    mlp = sklearn.MLPClassifier(hidden_layer_sizes=(n_classes,), activation="logistic",
                                solver="lbfgs", max_iter=500, random_state=0).fit(x, labels)
    w1, b1, w2, b2 = wu.mlp_layers(mlp.coefs_, mlp.intercepts_, n_classes)
    assert w2.shape == (n_classes, n_classes)
    probe = rng.random((200, 4))
    hidden = 1.0 / (1.0 + np.exp(-(probe @ w1 + b1)))
    np.testing.assert_array_equal(np.argmax(hidden @ w2 + b2, axis=1), mlp.predict(probe))
