"""predict_linear (paper 000 eq. 2) as numpy and as the SQL function."""

from __future__ import annotations

import numpy as np
import pytest

import gpudb
from gpudb.predictors.linear import predict_linear


def test_numpy_formula_by_hand():
    # 10 ns at 700 MHz of which 4 ns memory: at 350 MHz the 6 ns of compute double.
    got = predict_linear(np.array([10.0, 10.0]), np.array([4.0, 0.0]),
                         np.array([700.0, 700.0]), np.array([350.0, 1400.0]))
    np.testing.assert_allclose(got, [16.0, 5.0])


def test_paper_000_figure_1_stall_example_through_sql(db_path):
    # Paper 000 section 2, figure 1: 33 units at f, of which the core stalls 18 (cycles 1-7 and
    # 15-25); the true time at f/2 is 46. STALL takes T_memory = 18 stall units and predicts
    # (33 - 18) * 2 + 18 = 48: an overprediction, as the paper says of STALL.
    con = gpudb.connect(db_path)
    assert con.execute("SELECT predict_linear(33, 18, 2, 1)").fetchall() == [(48.0,)]
    # at the base frequency every model predicts the measured time
    assert con.execute("SELECT predict_linear(31, 18, 700, 700)").fetchall() == [(31.0,)]
    con.close()


def test_null_in_null_out(db_path):
    con = gpudb.connect(db_path)
    rows = con.execute(
        "SELECT predict_linear(t, m, 700, 350) FROM (VALUES (10.0, 4.0), (NULL, 4.0), "
        "(10.0, NULL), (12.0, 0.0)) AS v(t, m)").fetchall()
    con.close()
    assert rows == [(16.0,), (None,), (None,), (24.0,)]


def test_vectorised_over_many_rows(db_path):
    con = gpudb.connect(db_path)
    total = con.execute("SELECT sum(predict_linear(i::DOUBLE, 0, 2, 1)) FROM range(100000) t(i)"
                        ).fetchall()[0][0]
    con.close()
    assert total == pytest.approx(2 * sum(range(100000)))
