"""Seeds as a dimension of every evaluation (issue 27, item 2): a database holding runs of
several seeds never pairs one seed's run with another's, each seed's evaluation equals the
same evaluation on a database holding only that seed, and figures over seeds are the mean
with a Student-t 95% interval. Real files: the tiny synthetic suite swept with seeds 0 and 1
at every gtx480 core P-state (2 kernels x 7 P-states x 2 seeds)."""

from __future__ import annotations

import math
import shutil

import pytest
from click.testing import CliRunner
from conftest import csv_table

import gpudb
from gpudb.analysis.evaluate import Table, control_over_seeds, control_table, over_seeds
from gpudb.analysis.stats import mean_interval, t_quantile
from gpudb.cli import cli
from gpudb.control.results import evaluate
from gpudb.present.demo import verdict
from gpudb.store.queries import run_query

# Student's t, 97.5th percentile (two-sided 95%), from printed tables
T_975 = {1: 12.706, 2: 4.303, 4: 2.776}


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """{'both': seeds 0 and 1, 0: seed 0 only, 1: seed 1 only}: the two-seed file swept
    through the CLI, and copies of it with the other seed's runs deleted."""
    tmp = tmp_path_factory.mktemp("seeds")
    from conftest import TINY_SUITE

    (tmp / "tiny.toml").write_text(TINY_SUITE)
    both = tmp / "both.duckdb"
    result = CliRunner().invoke(cli, ["--db", str(both), "sweep", "--suite",
                                      str(tmp / "tiny.toml"), "--mem-mhz", "924",
                                      "--interval-instructions", "1000", "--seed", "0,1",
                                      "--jobs", "1"])
    assert result.exit_code == 0, result.output
    files = {"both": both, "suite": tmp / "tiny.toml"}
    for keep in (0, 1):
        files[keep] = tmp / f"only{keep}.duckdb"
        shutil.copy(both, files[keep])
        con = gpudb.connect(files[keep])
        con.execute("DELETE FROM interval WHERE run_id IN "
                    "(SELECT run_id FROM run WHERE seed <> ?)", [keep])
        con.execute("DELETE FROM run WHERE seed <> ?", [keep])
        con.close()
    for path in (both, files[0], files[1]):
        con = gpudb.connect(path)
        evaluate(con, ["crisp", "oracle"], ["edp"], suite="tiny",
                 seeds=[0, 1] if path == both else [None])
        con.close()
    return files


def test_sweep_takes_a_list_of_seeds(seeded):
    con = gpudb.connect(seeded["both"], read_only=True)
    try:
        per_seed = con.execute("SELECT seed, count(*) FROM run WHERE policy = 'fixed' "
                               "GROUP BY seed ORDER BY seed").fetchall()
        # the seeds matter: some kernel's time at some setting differs between them
        differ = con.execute("""
            SELECT count(*) FROM run AS a JOIN run AS b
              ON a.kernel_id = b.kernel_id AND a.core_mhz = b.core_mhz
             AND a.seed = 0 AND b.seed = 1
            WHERE a.time_ns <> b.time_ns""").fetchall()[0][0]
    finally:
        con.close()
    assert per_seed == [(0, 14), (1, 14)]      # 2 kernels x 7 core P-states, each seed
    assert differ > 0


def test_a_prediction_is_scored_against_a_run_of_its_own_seed(seeded):
    con = gpudb.connect(seeded["both"], read_only=True)
    try:
        rows = con.execute("""
            SELECT p.granularity, p.actual_ns, b.seed, a.time_ns AS same_seed_ns,
                   o.time_ns AS other_seed_ns, p.seed
            FROM prediction AS p
            JOIN run AS b ON b.run_id = p.run_id
            JOIN run AS a ON a.kernel_id = b.kernel_id AND a.seed = b.seed
             AND a.core_mhz = p.target_core_mhz AND a.policy = 'fixed'
            JOIN run AS o ON o.kernel_id = b.kernel_id AND o.seed <> b.seed
             AND o.core_mhz = p.target_core_mhz AND o.policy = 'fixed'
            WHERE p.granularity = 'run' AND p.predictor = 'crisp'""").fetchall()
        interval_pairs = con.execute("""
            SELECT count(*), count(*) FILTER (WHERE p.actual_ns = s.t_ns)
            FROM prediction AS p
            JOIN run AS b ON b.run_id = p.run_id
            JOIN sample AS s ON s.granularity = 'interval' AND s.kernel_id = b.kernel_id
             AND s.seed = b.seed AND s.policy = 'fixed' AND s.core_mhz = p.target_core_mhz
             AND s.sample_idx = p.sample_idx
            WHERE p.granularity = 'interval' AND p.predictor = 'crisp'""").fetchall()[0]
    finally:
        con.close()
    assert len(rows) == 2 * 2 * 7 * 7            # kernels x seeds x bases x targets
    assert all(r[1] == r[3] and r[2] == r[5] for r in rows)
    # a mix (or an average) of the seeds would show: the other seed's run is another time
    assert any(r[3] != r[4] for r in rows)
    assert interval_pairs[0] > 0 and interval_pairs[0] == interval_pairs[1]


def _close(value):
    """A float to 12 significant digits, anything else as it is."""
    return float(f"{value:.12g}") if isinstance(value, float) else value


def _results(path, seed):
    con = gpudb.connect(path, read_only=True)
    try:
        return con.execute(
            "SELECT * EXCLUDE (created_at) FROM control_result WHERE seed = ? "
            "ORDER BY ALL", [seed]).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("seed", [0, 1])
def test_each_seeds_evaluation_equals_that_seed_alone(seeded, seed):
    both, alone = _results(seeded["both"], seed), _results(seeded[seed], seed)
    # 2 kernels x (3 offline + 2 predictors x 2 guards) x 2 energy scopes (run, chip)
    assert len(both) == 2 * 7 * 2
    assert both == alone
    con_both = gpudb.connect(seeded["both"], read_only=True)
    con_alone = gpudb.connect(seeded[seed], read_only=True)
    try:
        for query, params in (("savings", {"objective": "edp"}),
                              ("savings_summary", {"objective": "edp"}),
                              ("fraction_of_potential", {"objective": "edp"}),
                              ("mape_by_predictor", {}), ("mape_by_kernel", {}),
                              ("workload_class", {}), ("clock_trace", {"guard": "guarded"})):
            cols_both, rows_both = run_query(con_both, query, {**params, "seed": str(seed)})
            cols_alone, rows_alone = run_query(con_alone, query, params)
            assert cols_both == cols_alone and len(rows_both) == len(rows_alone) > 0, query
            for x, y in zip(rows_both, rows_alone, strict=True):
                # sums over another number of rows may round in another order
                assert [_close(v) for v in x] == [_close(v) for v in y], query
        assert (con_both.execute("SELECT * EXCLUDE (seed) FROM control_baseline WHERE seed = ? "
                                 "ORDER BY ALL", [seed]).fetchall()
                == con_alone.execute("SELECT * EXCLUDE (seed) FROM control_baseline "
                                     "ORDER BY ALL").fetchall())
    finally:
        con_both.close()
        con_alone.close()


def test_the_interval_is_students_t_over_the_per_seed_figures():
    assert t_quantile(0.975, 1) == pytest.approx(T_975[1], abs=5e-4)
    assert t_quantile(0.975, 2) == pytest.approx(T_975[2], abs=5e-4)
    assert t_quantile(0.975, 4) == pytest.approx(T_975[4], abs=5e-4)
    # 10 and 14: mean 12, s = sqrt(8), half-width t(1) * s / sqrt(2) = 12.706 * 2
    mean, half, n = mean_interval([10.0, 14.0])
    assert (mean, n) == (12.0, 2) and half == pytest.approx(25.412, abs=2e-3)
    # 1, 2, 3: mean 2, s = 1, half-width 4.303 / sqrt(3)
    assert mean_interval([1.0, 2.0, 3.0, None])[:2] == pytest.approx((2.0, 2.4843), abs=2e-4)
    assert mean_interval([7.0]) == (7.0, None, 1)

    tables = [Table(["policy", "edp_saving_pct", "switches", "paper_pct"],
                    [("a", 10.0, 2, 10.7), ("b", 1.0, 0, None)]),
              Table(["policy", "edp_saving_pct", "switches", "paper_pct"],
                    [("a", 14.0, 4, 10.7)])]
    out = over_seeds(tables, ["policy"], ("paper_pct",))
    assert out.columns == ["policy", "edp_saving_pct", "edp_saving_ci95_pct", "switches",
                           "switches_ci95", "paper_pct", "seeds"]
    a, b = out.rows
    assert a[:2] == ("a", 12.0) and a[2] == pytest.approx(25.412, abs=2e-3)
    assert a[3] == 3.0 and a[4] == pytest.approx(12.706 * 1.0, abs=1e-3) and a[5:] == (10.7, 2)
    assert b == ("b", 1.0, None, 0.0, None, None, 1)     # one seed: no interval
    assert over_seeds(tables[:1], ["policy"]) is tables[0]


def test_a_paper_figure_inside_the_interval_matches():
    # paper 000's 10.7%: the fixed rule allows max(1 point, 25% of 10.7) = 2.675 points
    assert verdict(5.0, 10.7) == "below paper"
    assert verdict(5.0, 10.7, 5.6) == "below paper"   # 10.7 outside 5.0 +- 5.6
    assert verdict(5.0, 10.7, 5.8) == "matches"
    assert verdict(8.1, 10.7, None) == "matches"       # the rule alone, as before
    assert verdict(14.0, 10.7, 0.5) == "above paper"


def _check_over_seeds(header, rows, per_seed):
    """Every row of the table over seeds 0 and 1 against the hand computation from the
    per-seed tables: the mean, and t(0.975, 1) x s / sqrt(2)."""
    at = {c: i for i, c in enumerate(header)}
    for row in rows:
        key = (row[at["policy"]], row[at["guard"]] or "")
        figures = [next(r[4] for r in t.rows if (r[0], r[1] or "") == key) for t in per_seed]
        mean = sum(figures) / 2
        sd = math.sqrt(sum((f - mean) ** 2 for f in figures))  # n - 1 = 1
        assert float(row[at["edp_saving_pct"]]) == pytest.approx(mean, rel=1e-9, abs=1e-12)
        assert float(row[at["edp_saving_ci95_pct"]]) == pytest.approx(
            T_975[1] * sd / math.sqrt(2), rel=1e-4, abs=1e-9)
        assert int(row[at["seeds"]]) == 2
    assert len(rows) == len(per_seed[0].rows) > 5


def test_control_over_seeds_is_the_mean_with_its_interval(seeded):
    con = gpudb.connect(seeded["both"], read_only=True)
    try:
        # chip scope: the papers', where paper 000's figure and so the verdict stand
        per_seed = [control_table(con, "gtx480", "tiny", "edp", 1.0, "chip", seed)
                    for seed in (0, 1)]
        table = control_over_seeds(con, "gtx480", "tiny", "edp", 1.0, [0, 1], "chip")
        single = control_over_seeds(con, "gtx480", "tiny", "edp", 1.0, [1], "chip")
    finally:
        con.close()
    assert per_seed[0].rows != per_seed[1].rows        # the seeds give other figures
    assert "verdict" in table.columns
    _check_over_seeds(table.columns, table.rows, per_seed)
    assert single == per_seed[1]                       # one seed: the table as before


def test_seeds_must_be_integers_from_zero(tmp_path):
    for bad, message in (("0,x", "'x' is not a number"), ("-1", "seeds are integers in 0..9,223,372,036,854,775,807 (a BIGINT), got -1")):
        result = CliRunner().invoke(cli, ["--db", str(tmp_path / "x.duckdb"), "evaluate",
                                          "control", "--seeds", bad])
        assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "x.duckdb").exists()


def test_evaluate_control_reports_the_mean_over_seeds_with_its_interval(seeded):
    result = CliRunner().invoke(cli, ["--db", str(seeded["both"]), "evaluate", "control",
                                      "--gpu", "gtx480", "--suite", str(seeded["suite"]),
                                      "--no-sweep", "--objective", "edp", "--seeds", "0,1",
                                      "--scope", "chip", "--format", "csv"])
    assert result.exit_code == 0, result.output
    lines = [line.split(",")
             for line in csv_table(result.stdout, "edp_chip").strip().splitlines()]
    con = gpudb.connect(seeded["both"], read_only=True)
    try:
        per_seed = [control_table(con, "gtx480", "tiny", "edp", 1.0, "chip", seed)
                    for seed in (0, 1)]
    finally:
        con.close()
    _check_over_seeds(lines[0], lines[1:], per_seed)


def test_control_results_from_before_seeds_become_seed_0(db_path):
    """A file at migration 0009 with a control result: connect() migrates it, the result
    keeps its values with seed 0, and the same result of seed 1 can sit beside it."""
    import duckdb

    from gpudb.store.db import BOOTSTRAP, _migrate, migrations

    con = duckdb.connect(str(db_path))
    con.execute(BOOTSTRAP)
    _migrate(con, [m for m in migrations() if m.version <= 9])
    row = ("gtx480", "default/x", "replay", "crisp", "guarded", "edp", 1.0, 3, 1, 2.5e6,
           0.25, [700.0, 600.0, 600.0])
    con.execute("INSERT INTO control_result VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())",
                list(row))
    con.close()
    con = gpudb.connect(db_path)
    try:
        assert con.execute("SELECT gpu_id, kernel_id, policy, predictor, guard, objective, "
                           "max_loss_pct, intervals, switches, time_ns, energy_j, settings, "
                           "seed FROM control_result").fetchall() == [(*row, 0)]
        con.execute("INSERT INTO control_result BY NAME SELECT * REPLACE (1 AS seed) "
                    "FROM control_result")
        assert con.execute("SELECT seed FROM control_result ORDER BY seed").fetchall() == [
            (0,), (1,)]
    finally:
        con.close()


def test_a_mean_over_seeds_needs_the_same_kernels_in_each(seeded, tmp_path):
    from gpudb.analysis.evaluate import Scope, check_same_kernels
    from gpudb.store.db import GpudbError

    path = tmp_path / "uneven.duckdb"
    shutil.copy(seeded["both"], path)
    con = gpudb.connect(path)
    try:
        scope = Scope("gtx480", "tiny", True)
        check_same_kernels(con, scope, [0, 1])
        # seed 1 loses tiny/mem's run at 300 MHz: no complete run family of it any more
        con.execute("DELETE FROM interval WHERE run_id IN (SELECT run_id FROM run WHERE "
                    "seed = 1 AND kernel_id = 'tiny/mem' AND core_mhz = 300)")
        con.execute("DELETE FROM run WHERE seed = 1 AND kernel_id = 'tiny/mem' "
                    "AND core_mhz = 300")
        with pytest.raises(GpudbError, match="seed 1 lacks a run family of 1 of the 2 "
                                             "kernels .*'tiny/mem'"):
            check_same_kernels(con, scope, [0, 1])
        check_same_kernels(con, scope, [0])
    finally:
        con.close()


def test_equalizer_verdicts_use_the_interval_and_chip_energy():
    from gpudb.analysis.evaluate import equalizer_over_seeds

    columns = ["gpu_id", "policy", "category", "kernel_id", "kernels", "speedup_pct",
               "energy_change_pct", "chip_energy_change_pct", "paper_001_speedup_pct",
               "paper_001_energy_change_pct"]
    tables = [Table(columns, [("g", "equalizer performance", "all", None, 4, s, e, c, 22.0, 6.0)])
              for s, e, c in ((10.0, 9.0, 2.0), (14.0, 9.0, 4.0))]
    out = equalizer_over_seeds(tables)
    row = dict(zip(out.columns, out.rows[0], strict=True))
    # speedup 12 +- 25.4 holds 22; chip energy 3 +- 12.7 holds 6 (board-inclusive 9 is not used)
    assert row["speedup_pct"] == 12.0 and row["speedup_ci95_pct"] == pytest.approx(25.412, 1e-4)
    assert (row["speedup_verdict"], row["energy_verdict"], row["kernels"]) == (
        "matches", "matches", 4)
    narrow = [Table(columns, [("g", "equalizer performance", "all", None, 4, s, 9.0, c, 22.0,
                               6.0)]) for s, c in ((10.0, 0.0), (10.2, 0.2))]
    row = dict(zip(out.columns, equalizer_over_seeds(narrow).rows[0], strict=True))
    assert (row["speedup_verdict"], row["energy_verdict"]) == ("below paper", "below paper")
    uneven = [tables[0], Table(columns, [(*tables[1].rows[0][:4], 3, *tables[1].rows[0][5:])])]
    with pytest.raises(Exception, match="cover other kernels"):
        equalizer_over_seeds(uneven)
