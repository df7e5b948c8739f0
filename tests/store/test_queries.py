"""Stored queries: each runs on a fixture database; best_setting matches a hand computation."""

from __future__ import annotations

import csv
from collections import defaultdict

import pytest
from conftest import MAPPINGS, real_file

import gpudb
from gpudb import predictors
from gpudb.predictors import Predictor, names
from gpudb.sources.tabular.ingest import ingest
from gpudb.sources.tabular.mapping import load_mapping
from gpudb.store.db import GpudbError
from gpudb.predictors.linear import proportional
from gpudb.store.queries import get_query, run_query, stored_queries


# rows only after `gpudb evaluate simulator` on a measured GPU with profiles, which query_db
# has not: tests/train/test_clone.py checks their rows against the runs
ELSEWHERE = ("sim_scaling_curve", "sim_scaling_error", "sim_scaling_summary")


@pytest.mark.parametrize("name", sorted(stored_queries()))
def test_every_stored_query_runs_and_is_documented(query_db, name):
    query = stored_queries()[name]
    assert query.description, f"{name}.sql needs a leading /* description */"
    con = gpudb.connect(query_db, read_only=True)
    columns, rows = run_query(con, name)
    con.close()
    assert columns and (rows == [] if name in ELSEWHERE else rows)


def test_parameters_are_parsed_and_unknown_ones_refused():
    query = get_query("best_setting")
    assert query.params == ("gpu_id",)
    sql, values = query.bind({"gpu_id": "v100"})
    body = sql.split("*/", 1)[1]  # the description comment keeps its ':gpu_id'
    assert "$gpu_id" in body and ":gpu_id" not in body
    assert values == {"gpu_id": "v100"}
    with pytest.raises(GpudbError, match="no parameter 'gpu'"):
        query.bind({"gpu": "v100"})
    with pytest.raises(GpudbError, match="no stored query 'nope'"):
        get_query("nope")


def test_a_parameter_documented_with_values_takes_only_those(query_db):
    from gpudb.control.energy import OBJECTIVES
    from gpudb.control.guard import GUARDS

    queries = stored_queries()
    for name in ("savings", "savings_summary", "clock_trace", "fraction_of_potential",
                 "static_optimal_run", "controller_replay", "replay_vs_closed_loop"):
        assert set(queries[name].choices["objective"]) == set(OBJECTIVES), name
    for name in ("savings", "savings_summary", "clock_trace", "fraction_of_potential",
                 "controller_replay", "replay_vs_closed_loop"):
        assert set(queries[name].choices["guard"]) == set(GUARDS), name
    # the {predictor} queries keep their columns and get their value lists
    assert queries["mape_by_kernel"].choices == {"granularity": ("run", "interval")}
    assert "{predictor}" not in queries["mape_by_kernel"].sql
    assert queries["wu_error_by_base"].choices == {"split": ("validation", "training")}
    # free-form parameters take anything
    assert "predictor" not in queries["controller_replay"].choices
    assert "gpu_id" not in queries["savings"].choices
    with pytest.raises(GpudbError) as refused:
        get_query("savings").bind({"objective": "x"})
    assert str(refused.value) == ("query savings: objective must be one of edp, ed2p, energy, "
                                  "energy_perf (got 'x')")
    with pytest.raises(GpudbError, match="granularity must be one of run, interval"):
        get_query("mape_by_kernel").bind({"granularity": "Run"})
    con = gpudb.connect(query_db, read_only=True)
    try:
        _, rows = run_query(con, "savings", {"objective": "energy", "guard": "guarded"})
        assert rows and {r[6] for r in rows} == {"energy"}
    finally:
        con.close()


def test_a_failing_query_says_why_in_gpudbs_words(query_db):
    con = gpudb.connect(query_db, read_only=True)
    try:
        with pytest.raises(GpudbError) as failed:
            run_query(con, "mape_by_kernel", {"model_id": "nope"})
    finally:
        con.close()
    assert str(failed.value) == ("query mape_by_kernel failed: no wu model 'nope' "
                                 "(see table wu_model)")


def test_no_stored_query_is_edited_as_text():
    # a column per predictor comes from the views that have one, not from query text
    # written once per predictor at run time (issue 39)
    for query in stored_queries().values():
        assert "{predictor}" not in query.sql, query.name
        assert query.sql == query.path.read_text(), query.name


@pytest.mark.parametrize("name, fixed, suffix", [
    ("mape_by_kernel", ["gpu_id", "kernel_id", "category"], "_pct"),
    ("prediction_curve", ["gpu_id", "kernel_id", "base_mem_mhz", "target_core_mhz", "actual_ns"],
     "_ns"),
])
def test_a_column_per_registered_predictor_and_one_more_for_a_new_one(query_db, monkeypatch,
                                                                      name, fixed, suffix):
    con = gpudb.connect(query_db, read_only=True)
    columns, rows = run_query(con, name)
    # the names users' scripts read (proportional_pct, ..., wu_pct), in the registry's order
    assert columns == fixed + [f"{p}{suffix}" for p in names()]
    assert "crisp" + suffix in columns and "wu" + suffix in columns
    assert any(r[columns.index("crisp" + suffix)] is not None for r in rows)
    # a predictor registered at runtime gets its view and its column without an edit to
    # the query: here the proportional formula under another name, so the same numbers
    con.close()
    extra = Predictor(name="extra", title="a new predictor", paper="none", order=10_000,
                      inputs=("t_ns",), formula=proportional, sql_function="predict_proportional")
    registered = predictors.registry()
    monkeypatch.setattr(predictors, "registry", lambda: (*registered, extra))
    con = gpudb.connect(query_db, read_only=True)
    try:
        again, extra_rows = run_query(con, name)
    finally:
        con.close()
    assert again == columns + ["extra" + suffix]
    assert [r[:-1] for r in extra_rows] == rows
    same = columns.index("proportional" + suffix)
    assert [r[-1] for r in extra_rows] == [r[same] for r in rows]
    assert any(r[-1] is not None for r in extra_rows)


def test_best_setting_on_tiny_data_by_hand(tiny_db):
    # alpha: energies (J) at (core, mem): (500,800) 0.4, (1000,800) 0.5, (500,1600) 0.36,
    # (1000,1600) 0.45; base (1000,1600). Least energy (500,1600): saving 1 - 0.36/0.45 = 20%.
    # EDP (J*ms): 1.6, 1.0, 1.08, 0.675 -> base is best: 0 %.
    con = gpudb.connect(tiny_db, read_only=True)
    columns, rows = run_query(con, "best_setting", {"gpu_id": "tiny"})
    con.close()
    alpha = dict(zip(columns, rows[0], strict=True))
    assert alpha["kernel_id"] == "tiny/alpha"
    assert (alpha["base_core_mhz"], alpha["base_mem_mhz"]) == (1000, 1600)
    assert (alpha["energy_core_mhz"], alpha["energy_mem_mhz"]) == (500, 1600)
    assert alpha["energy_saving_pct"] == pytest.approx(20.0)
    assert alpha["energy_slowdown_pct"] == pytest.approx(100.0)
    assert (alpha["edp_core_mhz"], alpha["edp_mem_mhz"]) == (1000, 1600)
    assert alpha["edp_saving_pct"] == pytest.approx(0.0)
    # beta: energies 0.5, 0.495, 0.55, 0.55; EDP 5.0, 2.7225, 5.5, 2.75 -> (1000, 800)
    beta = dict(zip(columns, rows[1], strict=True))
    assert (beta["energy_core_mhz"], beta["energy_mem_mhz"]) == (1000, 800)
    assert beta["energy_saving_pct"] == pytest.approx(100 * (1 - 0.495 / 0.55))
    assert (beta["edp_core_mhz"], beta["edp_mem_mhz"]) == (1000, 800)
    assert beta["edp_saving_pct"] == pytest.approx(100 * (1 - 2.7225 / 2.75))
    # ED2P (J*ms^2): 50, 0.495*5.5^2 = 14.97, 55, 0.55*5^2 = 13.75 -> the base setting again
    assert (beta["ed2p_core_mhz"], beta["ed2p_mem_mhz"]) == (1000, 1600)
    assert beta["ed2p_saving_pct"] == pytest.approx(0.0)


def test_best_setting_matches_independent_computation_on_rtx2070s(fresh_db):
    data = real_file("gtx2070s-dvfs-real-Performance-Power.csv")
    con = gpudb.connect(fresh_db)
    ingest(con, [data], load_mapping(MAPPINGS / "gtx2070s.toml"))
    columns, rows = run_query(con, "best_setting", {"gpu_id": "rtx2070s"})
    con.close()
    got = {r[columns.index("kernel_id")]: dict(zip(columns, r, strict=True)) for r in rows}

    # The same answer from the CSV with plain Python: seconds, joules, no SQL.
    runs = defaultdict(dict)
    with open(data, newline="") as handle:
        for rec in csv.DictReader(handle):
            t_s = float(rec["time/ms"]) * 1e-3
            setting = (float(rec["coreF"]), float(rec["memF"]))
            runs[f"cuda-sdk-rodinia/{rec['appName']}:{rec['kernel']}"][setting] = (
                t_s, float(rec["power/W"]) * t_s)
    assert set(got) == set(runs)
    for kernel, settings in runs.items():
        base = max(settings)  # highest core MHz, then highest memory MHz
        t0, e0 = settings[base]
        for objective, weight in (("energy", 0), ("edp", 1), ("ed2p", 2)):
            def cost(s, w=weight, settings=settings):
                t, e = settings[s]
                return e * t ** w
            # ties go to the higher setting, as the query documents
            best = min(settings, key=lambda s: (cost(s), -s[0], -s[1]))
            row = got[kernel]
            assert (row[f"{objective}_core_mhz"], row[f"{objective}_mem_mhz"]) == best, (
                kernel, objective)
            assert row[f"{objective}_saving_pct"] == pytest.approx(
                100 * (1 - cost(best) / (e0 * t0 ** weight)), rel=1e-9, abs=1e-9)
            assert row[f"{objective}_slowdown_pct"] == pytest.approx(
                100 * (settings[best][0] / t0 - 1), rel=1e-9, abs=1e-9)
