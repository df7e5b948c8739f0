"""gpudb bench scale's replication (issue 15 item 3): factor copies of every run as new
kernels, and the timed queries give each copy the original's answer."""

import duckdb
import pytest

from gpudb.bench.bench_scale import _queries, replicate


def rows(path, sql, params=None):
    import gpudb

    con = gpudb.connect(path, read_only=True)
    try:
        return con.execute(sql, params or {}).fetchall()
    finally:
        con.close()


def test_replicated_copies_are_new_kernels_with_the_originals_answers(query_db, tmp_path):
    target = tmp_path / "x3.duckdb"
    runs = replicate(query_db, target, 3)
    src = duckdb.connect(str(query_db), read_only=True)
    try:
        before = {t: src.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
                  for t in ("kernel", "run", "interval", "metric", "gpu", "pstate",
                            "experiment")}
    finally:
        src.close()
    after = {t: rows(target, f"SELECT count(*) FROM {t}")[0][0] for t in before}
    assert runs == after["run"] == 3 * before["run"] > 0
    for t in ("kernel", "interval", "metric"):
        assert after[t] == 3 * before[t], t
    for t in ("gpu", "pstate", "experiment"):
        assert after[t] == before[t], t
    # copy 2 of each run: a new id, the original's kernel with suffix ~2, the same intervals
    pairs = rows(target, """
        SELECT o.run_id, c.run_id, o.kernel_id, c.kernel_id, o.time_ns = c.time_ns
        FROM run AS o JOIN run AS c ON c.run_id = sha256(o.run_id || '~2')""")
    assert len(pairs) == before["run"]
    assert all(c_id != o_id and ck == ok + "~2" and same for o_id, c_id, ok, ck, same in pairs)

    gpu = "gtx480"
    queries = _queries(gpu)
    # best_setting: every copy of a kernel gets the original's rows
    sql, params = queries["best_setting"]
    best = rows(target, f"SELECT * FROM ({sql})", params)
    original = rows(query_db, f"SELECT * FROM ({sql})", params)
    assert len(best) == 3 * len(original) > 0
    # the accuracy query: the same MAPE per predictor and target, from 3x the samples
    sql, params = queries["accuracy (mape_by_predictor)"]
    # (gpu_id, predictor, target core MHz, target memory MHz) -> (MAPE, largest APE, n)
    got = {r[:4]: r[4:] for r in rows(target, sql, params)}
    want = {r[:4]: r[4:] for r in rows(query_db, sql, params)}
    assert got.keys() == want.keys() and want
    for key, (mape, max_ape, n) in want.items():
        assert got[key] == (pytest.approx(mape, rel=1e-9), pytest.approx(max_ape, rel=1e-9),
                            3 * n)
    # the trace replay: each copy of a kernel runs the same clocks as the original
    sql, params = queries["replay crisp_gpudb (edp)"]
    replay_sql = sql.replace("SELECT count(*), sum(time_ns) FROM (", "SELECT kernel_id, "
                             "sum(time_ns) FROM (", 1) + " GROUP BY kernel_id"
    per_kernel = dict(rows(target, replay_sql, params))
    base = dict(rows(query_db, replay_sql, params))
    assert base and len(per_kernel) == 3 * len(base)
    for kernel, time_ns in base.items():
        for k in (1, 2):
            assert per_kernel[f"{kernel}~{k}"] == pytest.approx(time_ns, rel=1e-12)
