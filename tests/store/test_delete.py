"""gpudb.store.delete: a selection of runs goes with every row derived from them, the rows of
other runs stay, and a dry run counts exactly what the delete removes; real files."""

from __future__ import annotations

import gpudb
from gpudb.store.delete import Selection, delete, orphans, planned


def add_derived(con) -> tuple[str, str]:
    """A control result, a scaling prediction, a calibration and a Wu model (one grid row)
    on kernel tiny/alpha, and a scaling prediction on tiny/beta, by hand."""
    alpha, beta = (con.execute("SELECT min(run_id) FROM run WHERE kernel_id = ?", [k])
                   .fetchall()[0][0] for k in ("tiny/alpha", "tiny/beta"))
    con.execute("INSERT INTO control_result VALUES ('tiny', 'tiny/alpha', 0, 'static_optimal', "
                "'', '', 'edp', 0, 1, 0, 1e6, 1.0, [500.0], now(), 'run', NULL)")
    for kernel in ("tiny/alpha", "tiny/beta"):
        con.execute("INSERT INTO scaling_prediction VALUES ('tiny', ?, 'wangchu_fit', 1000, "
                    "800, 500, 800, 4e6, 'leave-one-out', now())", [kernel])
    for parameter in ("l2_lat", "sh_lat"):
        con.execute("INSERT INTO calibration VALUES ('c1', 'tiny', 'least_squares', ?, 1.0, "
                    "'core cycles', [?], NULL, NULL, 1, NULL, now())", [parameter, alpha])
    con.execute("INSERT INTO wu_model (model_id, gpu_id, base_n_sm, base_core_mhz, "
                "base_mem_mhz, features, clusters, seed, train_fraction, quantities, "
                "data_sha256, trainer, created_at, gpudb_version) VALUES ('m1', 'tiny', 2, "
                "1000, 800, ['x'], 1, 0, 0.8, ['time'], 'd', 't', now(), 'v')")
    con.execute("INSERT INTO wu_split VALUES ('m1', 'tiny/alpha', true), "
                "('m1', 'tiny/beta', false)")
    con.execute("INSERT INTO wu_grid VALUES ('m1', 'core', 0, 500)")
    return alpha, beta


def counts(con) -> dict[str, int]:
    tables = ("run", "metric", "control_result", "scaling_prediction", "calibration",
              "wu_model", "wu_split", "wu_grid", "kernel", "gpu", "pstate", "experiment",
              "ingest_file")
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in tables}


def test_a_kernel_goes_with_everything_derived_from_its_runs(tiny_db):
    con = gpudb.connect(tiny_db)
    try:
        add_derived(con)
        before = counts(con)
        sel = Selection(kernels=["tiny/alpha"])
        expected = {"run": 4, "metric": 4, "control_result": 1, "scaling_prediction": 1,
                    "calibration": 2, "wu_model": 1, "wu_split": 2, "wu_grid": 1, "kernel": 1}
        assert planned(con, sel) == expected
        assert counts(con) == before            # the dry run rolled back
        assert delete(con, sel) == expected
        after = counts(con)
        assert after == {t: n - expected.get(t, 0) for t, n in before.items()}
        # beta's runs and its own scaling prediction stay, and nothing points at alpha
        assert con.execute("SELECT DISTINCT kernel_id FROM scaling_prediction").fetchall() == \
            [("tiny/beta",)]
        assert orphans(con) == {}
    finally:
        con.close()


def test_deleting_runs_with_sql_leaves_orphans_that_delete_orphans_removes(tiny_db):
    con = gpudb.connect(tiny_db)
    try:
        add_derived(con)
        con.execute("DELETE FROM run WHERE kernel_id = 'tiny/alpha'")
        found = {"metric": 4, "control_result": 1, "scaling_prediction": 1, "calibration": 2,
                 "wu_model": 1, "wu_split": 2, "wu_grid": 1}
        assert orphans(con) == found
        # the kernel row nothing refers to any more goes too
        assert delete(con, Selection(orphans=True)) == {**found, "kernel": 1}
        assert orphans(con) == {}
        # then the GPU's remaining runs: its GPU, P-states, experiment and file record go
        assert delete(con, Selection(gpus=["tiny"])) == {
            "run": 4, "metric": 4, "scaling_prediction": 1, "ingest_file": 1, "pstate": 4,
            "gpu": 1, "kernel": 1, "experiment": 1}
        assert set(counts(con).values()) == {0}
    finally:
        con.close()
