"""The predictor registry (issue 11, item 5) and one view per file (item 9): every predictor
module's declaration matches its view, made from the declaration for a formula predictor
(issue 39), so adding a predictor is adding its module, and this file's tests cover it
without an edit."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gpudb
from gpudb.predictors import get, names, registry, udfs
from gpudb.store.db import view_definitions, view_files
from gpudb.store.udfs import functions

VIEW = re.compile(r"CREATE OR REPLACE VIEW (\w+) AS", re.I)


def test_one_view_per_file_named_after_it():
    for path in view_files():
        views = VIEW.findall(path.read_text())
        assert len(views) == 1, f"{path.name} defines {views}"
        assert path.stem.split("_", 1)[1] == views[0], path.name


def test_every_registered_predictor_has_its_view_and_every_pred_view_a_module():
    declared = {p.view for p in registry()}
    views = {VIEW.findall(sql)[0] for key, sql in view_definitions()
             if key.split("_", 1)[1].startswith("pred_")}
    assert declared == views
    assert len({p.order for p in registry()}) == len(registry())
    # a formula predictor's view is made from its declaration, never a file as well
    files = {path.name for path in view_files()}
    made = {p.name for p in registry() if p.view_sql}
    assert made == {"proportional", "stall", "lead", "miss", "crit", "critbw", "crisp",
                    "crispl", "crisp_gpudb", "crispl_gpudb"}
    assert not {f"40_pred_{name}.sql" for name in made} & files


def test_a_predictor_view_is_its_sql_function_over_its_declared_inputs():
    crit = get("crit")
    assert ("predict_linear(t_ns, crit_ns, core_mhz, target_core_mhz) AS predicted_ns"
            in crit.view_sql)
    assert crit.view_sql.startswith("CREATE OR REPLACE VIEW pred_crit AS\nSELECT 'crit' AS")
    # each names a registered SQL function taking its inputs and the two clocks
    arity = {u.name: len(u.params) for u in udfs()}
    for p in registry():
        if p.view_sql:
            assert arity[p.sql_function] == len(p.inputs) + 2, p.name
    # the union view 50_prediction.sql reads: every predictor's view but Wu et al.'s
    union = dict(view_definitions())["49_analytic_prediction.sql"]
    assert union.count("SELECT * FROM pred_") == len(registry()) - 1
    assert "pred_wu" not in union


def test_registry_names_and_udfs():
    assert names()[:2] == ("proportional", "stall") and names()[-1] == "wu"
    assert "wu" not in names(replayable=True) and "crisp" in names(replayable=True)
    assert {u.name for u in udfs()} == {"predict_linear", "predict_crisp", "predict_critbw",
                                        "predict_crisp_gpudb", "predict_wu", "wangchu_time_ns",
                                        "wangchu_regime", "predict_proportional"}
    # every connection gets the predictors' and the control layer's, through the one hook
    assert {u.name for u in functions()} == {u.name for u in udfs()} | {"guard_replay"}
    with pytest.raises(ValueError, match="unknown predictor 'nope'"):
        get("nope")


@pytest.mark.parametrize("name", names(replayable=True))
def test_view_computes_the_modules_formula_on_the_sample_columns(query_db, name):
    # the same numbers from SQL (the pred_<name> view over prediction_input) and from the
    # module's formula on the columns it declares, which is what the closed loop calls
    predictor = get(name)
    con = gpudb.connect(query_db, read_only=True)
    try:
        rows = con.execute(
            f"SELECT {', '.join(predictor.inputs)}, i.core_mhz, i.target_core_mhz, "
            f"p.predicted_ns FROM prediction_input AS i JOIN {predictor.view} AS p "
            "ON p.run_id = i.run_id AND p.sample_idx IS NOT DISTINCT FROM i.sample_idx "
            "AND p.granularity = i.granularity AND p.target_core_mhz = i.target_core_mhz "
            "WHERE p.predicted_ns IS NOT NULL").fetchall()
    finally:
        con.close()
    assert len(rows) > 100
    for row in rows:
        sample = dict(zip(predictor.inputs, row[:len(predictor.inputs)], strict=True))
        base, target, expected = row[len(predictor.inputs):]
        got = predictor.predict(sample, np.array([base]), np.array([target]))[0]
        assert got == pytest.approx(expected, rel=1e-12)


def test_any_layer_adds_sql_functions_through_the_one_hook(monkeypatch, tmp_path):
    # the store walks its providers on every connect: a provider added later (as a higher
    # layer adds its own when imported) has its function on the next connection; a name two
    # providers declare is refused rather than silently dropped
    from gpudb.store import udfs as hook

    monkeypatch.setattr(hook, "_PROVIDERS", list(hook._PROVIDERS))
    hook.provide(_twice_provider)
    hook.provide(_twice_provider)  # once only
    assert [u.name for u in functions()].count("gpudb_test_twice") == 1
    con = gpudb.connect(tmp_path / "hook.duckdb")
    try:
        assert con.execute("SELECT gpudb_test_twice(21.0)").fetchone()[0] == 42.0
        assert {r[0] for r in con.execute(
            "SELECT function_name FROM duckdb_functions() WHERE function_name IN "
            "('guard_replay', 'predict_proportional')").fetchall()} == {
                "guard_replay", "predict_proportional"}
    finally:
        con.close()
    hook.provide(_clashing_provider)
    with pytest.raises(RuntimeError, match="two layers declare the SQL function predict_linear"):
        functions()


def _twice(x):
    import pyarrow as pa

    return pa.array(np.asarray(x.to_numpy(zero_copy_only=False), dtype=float) * 2)


def _twice_provider():
    from gpudb.predictors import Udf

    return (Udf("gpudb_test_twice", _twice, ("DOUBLE",), "DOUBLE", "doubles"),)


def _clashing_provider():
    from gpudb.predictors import Udf

    return (Udf("predict_linear", _twice, ("DOUBLE",), "DOUBLE", "a clash"),)
