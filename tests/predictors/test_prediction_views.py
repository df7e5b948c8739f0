"""The sample, pred_* and prediction views on hand-made runs whose answers are known."""

from __future__ import annotations

import duckdb
import pytest

import gpudb
from gpudb.store.materialize import TABLE, materialize, status


@pytest.fixture
def handmade_db(fresh_db):
    """A simulated-looking kernel at 700 and 350 MHz, two intervals each: hand-made numbers,
    not simulator output. Each interval is paper 000 figure 6 with one unit = 1 us (700
    cycles at 700 MHz): 31 us at 700 MHz, 54 us at 350 MHz."""
    con = gpudb.connect(fresh_db)
    con.execute("""
        INSERT INTO gpu VALUES ('hand', 'hand-made GPU', 1, 48, 8, 700, 924,
            '{"memory": {"l2_latency_ns": 200, "dram_latency_ns": 50,
                         "dram_latency_mem_cycles": 92.4}}');
        INSERT INTO pstate VALUES ('hand', 'core', 350, 0.8), ('hand', 'core', 700, 1.0),
                                  ('hand', 'mem', 924, NULL);
        INSERT INTO kernel VALUES ('hand/k', 'k', 'hand', 'memory', 'hand-made (synthetic)', NULL);
        INSERT INTO experiment VALUES ('e', 'e', NULL, now(), NULL, NULL, NULL, NULL);
        INSERT INTO run (run_id, experiment_id, source, kernel_id, gpu_id, policy, core_mhz,
                         mem_mhz, n_sm, ctas_per_sm, interval_instructions, seed, time_ns,
                         energy_j, instructions, created_at)
        VALUES ('r700', 'e', 'sim', 'hand/k', 'hand', 'fixed', 700, 924, 1, 8, 1000, 0,
                62000, 1.0, 2000, now()),
               ('r350', 'e', 'sim', 'hand/k', 'hand', 'fixed', 350, 924, 1, 8, 1000, 0,
                108000, 1.0, 2000, now());
    """)
    # interval counters in core cycles: figure 6's units x 700 (31 units = 21700 cycles)
    for run_id, mhz, scale in (("r700", 700, 700), ("r350", 350, 350)):
        for idx in (0, 1):
            time_ns = 31000.0 if mhz == 700 else 54000.0
            con.execute(f"""
                INSERT INTO interval (run_id, idx, core_mhz, mem_mhz, ctas_per_sm, start_ns,
                    time_ns, cycles, instructions, stall_cycles, leading_load_cycles,
                    miss_contributors, crit_path_cycles, crisp_lcp_cycles,
                    crisp_load_stall_cycles, crisp_store_stall_cycles, load_outstanding_cycles,
                    load_overlap_compute_cycles, dram_min_ns, prefetch_stall_cycles,
                    core_dynamic_j, core_static_j, dram_dynamic_j, dram_static_j, other_j)
                VALUES ('{run_id}', {idx}, {mhz}, 924, 8, {idx * time_ns}, {time_ns},
                    {time_ns * mhz / 1000}, 1000, {4 * scale}, {18 * scale}, 3, {20 * scale},
                    {20 * scale}, {3 * scale}, {1 * scale}, {24 * scale}, {20 * scale},
                    10000, 0, 0.1, 0.1, 0.1, 0.1, 0.1)""")
    con.close()
    return fresh_db


def test_sample_converts_cycles_to_ns_and_sums_runs(handmade_db):
    con = gpudb.connect(handmade_db, read_only=True)
    row = con.execute("""SELECT t_ns, stall_ns, lead_ns, miss_ns, crit_ns, crisp_lcp_ns,
        crisp_lcp_comp_ns, crisp_store_stall_ns, crispl_lcp_ns, crispl_lcp_comp_ns
        FROM sample WHERE run_id = 'r700' AND sample_idx = 0""").fetchall()[0]
    # 1 unit = 700 cycles at 700 MHz = 1000 ns; MISS latency = 200 + 50 + 92.4 x 1000/924
    assert row == pytest.approx((31000, 4000, 18000, 3 * 350.0, 20000, 20000, 17000, 1000,
                                 24000, 20000))
    whole = con.execute("SELECT t_ns, stall_ns, energy_j FROM sample "
                        "WHERE run_id = 'r700' AND granularity = 'run'").fetchall()[0]
    assert whole == pytest.approx((62000, 8000, 1.0))
    con.close()


def test_prediction_reproduces_figure_6_per_interval(handmade_db):
    con = gpudb.connect(handmade_db, read_only=True)
    rows = dict(con.execute("""SELECT predictor, predicted_ns FROM prediction
        WHERE run_id = 'r700' AND granularity = 'interval' AND sample_idx = 0
          AND target_core_mhz = 350""").fetchall())
    actual = con.execute("""SELECT DISTINCT actual_ns FROM prediction WHERE run_id = 'r700'
        AND granularity = 'interval' AND sample_idx = 0 AND target_core_mhz = 350""").fetchall()
    con.close()
    assert actual == [(54000.0,)]  # interval 0 of the 350 MHz run
    # paper 000 figure 6 at f/2, in us: STALL 58, LEAD 44, CRIT 42, CRISP 54 (= actual)
    assert rows["stall"] == pytest.approx(58000)
    assert rows["lead"] == pytest.approx(44000)
    assert rows["crit"] == pytest.approx(42000)
    assert rows["crisp"] == pytest.approx(54000)
    assert rows["proportional"] == pytest.approx(62000)
    # MISS: 3 contributors x 350 ns = 1050 ns of memory
    assert rows["miss"] == pytest.approx((31000 - 1050) * 2 + 1050)
    # CRISP-L: LCP 24 us with 20 us overlapped: max(24, 40) + max(7, 2 x 6) = 52 us
    assert rows["crispl"] == pytest.approx(52000)
    # CRIT+BW: compute 11 us x 2 + 20 us critical path, above the 10 us DRAM minimum
    assert rows["critbw"] == pytest.approx(42000)


def test_predictions_at_the_base_setting_equal_the_measured_time(handmade_db, tiny_db):
    for path in (handmade_db, tiny_db):
        con = gpudb.connect(path, read_only=True)
        off = con.execute("""SELECT count(*) FROM prediction
            WHERE target_core_mhz = base_core_mhz AND predicted_ns IS NOT NULL
              AND abs(predicted_ns - actual_ns) > 1e-9 * actual_ns""").fetchall()[0][0]
        checked = con.execute("""SELECT count(*) FROM prediction
            WHERE target_core_mhz = base_core_mhz AND predicted_ns IS NOT NULL""").fetchall()
        con.close()
        assert off == 0 and checked[0][0] > 0


def test_measured_runs_get_proportional_predictions_only(tiny_db):
    con = gpudb.connect(tiny_db, read_only=True)
    rows = con.execute("""SELECT predictor, count(predicted_ns), count(actual_ns)
        FROM prediction GROUP BY predictor ORDER BY predictor""").fetchall()
    con.close()
    counts = {p: (n_pred, n_act) for p, n_pred, n_act in rows}
    assert counts["proportional"] == (16, 16)  # 8 runs x 2 core P-states
    assert all(counts[p][0] == 0 for p in counts if p != "proportional")


def test_materialized_table_is_readable_without_gpudb_and_goes_stale(tiny_db, tiny_files,
                                                                       tmp_path):
    con = gpudb.connect(tiny_db)
    rows = materialize(con)
    assert status(con) == "current"
    con.close()
    plain = duckdb.connect(str(tiny_db), read_only=True)  # no gpudb UDFs registered
    # 8 measured runs x 2 core P-states x 10 analytic predictors (NULL where no counters)
    assert plain.execute(f"SELECT count(*) FROM {TABLE}").fetchall()[0][0] == rows == 160
    with pytest.raises(duckdb.Error):
        plain.execute("SELECT count(*) FROM prediction").fetchall()
    plain.close()
    from gpudb.sources.tabular.ingest import ingest
    from gpudb.sources.tabular.mapping import load_mapping
    other = tmp_path / "more.csv"
    other.write_text(tiny_files[0].read_text().replace("alpha", "gamma"))
    con = gpudb.connect(tiny_db)
    ingest(con, [other], load_mapping(tiny_files[1]))
    assert status(con).startswith("stale: run")
    con.close()


def test_core_scaling_error_holds_every_wu_model_and_marks_each_gpus_latest(fresh_db):
    pytest.importorskip("sklearn", reason="training needs the gpudb-dvfs[ml] extra (scikit-learn)")
    from test_wu_model import add_pstates, build_synthetic

    from gpudb.train.wu_model import train_wu

    build_synthetic(fresh_db)
    con = gpudb.connect(fresh_db)
    add_pstates(con)
    first = train_wu(con, "toy", seed=1, clusters=2, train_fraction=0.5)
    second = train_wu(con, "toy", seed=2, clusters=2, train_fraction=0.5)
    kinds = {(p, m, c) for p, m, c in con.execute(
        "SELECT DISTINCT predictor, model_id, is_current FROM core_scaling_error").fetchall()}
    # the analytic predictors have no model (here only proportional has its inputs)
    assert kinds == {("proportional", None, None), ("wu", first.model_id, False),
                     ("wu", second.model_id, True)}
    for model in (first, second):  # each model's kernels outside its training split
        kernels = con.execute("SELECT DISTINCT kernel_id FROM core_scaling_error "
                              "WHERE model_id = ?", [model.model_id]).fetchall()
        assert sorted(k for (k,) in kernels) == sorted(model.validation_kernels)
    # the current model's rows are view prediction's Wu rows that core scaling scores
    columns = "run_id, target_core_mhz, predicted_ns, actual_ns"
    current = con.execute(f"SELECT {columns} FROM core_scaling_error WHERE predictor = 'wu' "
                          "AND is_current ORDER BY ALL").fetchall()
    expected = con.execute(f"""SELECT {columns} FROM prediction WHERE predictor = 'wu'
        AND NOT in_training AND target_core_mhz <> base_core_mhz
        AND target_mem_mhz = base_mem_mhz AND target_n_sm IS NOT DISTINCT FROM base_n_sm
        AND predicted_ns IS NOT NULL AND actual_ns IS NOT NULL ORDER BY ALL""").fetchall()
    con.close()
    assert current == expected and len(current) == 3
