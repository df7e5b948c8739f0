"""Stored query cta_sweep (paper 001's cache-sensitive test) against the runs it reads."""

from __future__ import annotations

import pytest

import gpudb
from gpudb.simulate.sweep import sweep
from gpudb.store.queries import run_query

# A synthetic kernel whose per-warp working set (4 KB) fits L1 (32 KB on gtx480) at two CTAs
# of 4 warps per SM and thrashes it at eight: the simulator scales the hit rate by
# L1 / (active CTAs x warps per CTA x footprint) when that is below 1.
SUITE = """
name = "ctatiny"
description = "a synthetic L1-thrashing kernel for tests"
[[kernel]]
name = "thrash"
category = "cache"
description = "synthetic: re-reads a 4 KB per-warp working set"
ctas = 240
warps_per_cta = 4
footprint_bytes = 4096
[[kernel.phase]]
iterations = 12
body = [{op = "ld", id = "a", trans = 1, l1_hit = 1.0, l2_hit = 0.0},
        {op = "alu", dep = "a"}, {op = "alu", dep = "prev"}]
"""


def test_cta_sweep_against_the_runs(tmp_path):
    (tmp_path / "s.toml").write_text(SUITE)
    db = tmp_path / "c.duckdb"
    sweep(db, "gtx480", tmp_path / "s.toml", core_mhz=[700], mem_mhz=[924], ctas=[1, 2, 8],
          interval_instructions=2000, jobs=1)
    con = gpudb.connect(db, read_only=True)
    columns, rows = run_query(con, "cta_sweep", {"suite": "ctatiny"})
    runs = dict(con.execute("""
        SELECT r.ctas_per_sm, (r.time_ns, sum(i.l1_hits) / sum(i.l1_accesses))
        FROM run AS r JOIN interval AS i USING (run_id)
        GROUP BY r.ctas_per_sm, r.time_ns""").fetchall())
    con.close()
    at = {c: i for i, c in enumerate(columns)}
    rows = {r[at["ctas_per_sm"]]: r for r in rows}
    assert sorted(rows) == sorted(runs) == [1, 2, 8]
    time = {c: t for c, (t, _) in runs.items()}
    best = min(time, key=lambda c: (time[c], -c))
    for c, r in rows.items():
        assert r[at["time_vs_max_ctas"]] == pytest.approx(time[c] / time[8])
        assert r[at["l1_hit_rate"]] == pytest.approx(runs[c][1])
        assert (r[at["max_ctas"]], r[at["best_ctas"]], r[at["limits_run"]]) == (8, best, 3)
        assert r[at["best_speedup"]] == pytest.approx(time[8] / time[best])
    # the working set fits at one and two CTAs (every load hits) and thrashes at eight
    assert runs[1][1] == runs[2][1] == 1.0 and runs[8][1] < 0.5
    assert rows[8][at["peaks_at_fewer_ctas"]] == (best < 8)
