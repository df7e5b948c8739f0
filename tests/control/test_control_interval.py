"""control_interval takes one run family per kernel (issue 11, item 1): interval k must be
the same work at every core P-state, or replay and the offline policies compare different
work. Real files, the tiny synthetic suite swept through the CLI."""

from __future__ import annotations

from click.testing import CliRunner

import gpudb
from gpudb.cli import cli
from gpudb.control.guard import PAPER
from gpudb.control.results import offline, replay

GTX480_CORE_PSTATES = 7


def sweep(db, suite, *args):
    result = CliRunner().invoke(cli, [str(a) for a in (
        "--db", db, "sweep", "--suite", suite, "--mem-mhz", "924", "--jobs", "1", *args)])
    assert result.exit_code == 0, result.output


def control_outcomes(db):
    """(control_interval's rows, the offline policies' and CRISP's replay totals)."""
    con = gpudb.connect(db)
    try:
        rows = con.execute("SELECT kernel_id, core_mhz, idx, time_ns, energy_j "
                           "FROM control_interval ORDER BY ALL").fetchall()
        families = con.execute(
            "SELECT DISTINCT c.kernel_id, r.interval_instructions, r.seed "
            "FROM control_interval AS c JOIN run AS r USING (run_id) ORDER BY ALL").fetchall()
        replay(con, "crisp", "edp")
        replay(con, "oracle", "edp", guard=PAPER)
        replays = con.execute("SELECT kernel_id, policy, time_ns, energy_j, settings "
                              "FROM control_result").fetchall()
        totals = sorted((k, policy, round(t, 3), round(e, 12), tuple(settings))
                        for k, policy, t, e, settings in [
                            *((r.kernel_id, r.policy, r.time_ns, r.energy_j, r.settings)
                              for r in offline(con, "edp")), *replays])
    finally:
        con.close()
    return rows, families, totals


def test_a_partial_second_family_does_not_mix_into_the_first(tmp_path, tiny_suite_path):
    db = tmp_path / "families.duckdb"
    # family A: every P-state, 1000-instruction intervals
    sweep(db, tiny_suite_path, "--interval-instructions", 1000)
    rows_a, families_a, totals_a = control_outcomes(db)
    assert families_a == [("tiny/alu", 1000, 0), ("tiny/mem", 1000, 0)]
    kernels = {r[0] for r in rows_a}
    per_kernel_settings = {k: {r[1] for r in rows_a if r[0] == k} for k in kernels}
    assert all(len(s) == GTX480_CORE_PSTATES for s in per_kernel_settings.values())

    # family B, newer, at two P-states only and with other intervals: before run families,
    # control_interval took B's runs at 700 and 100 MHz (newest first) and A's elsewhere, so
    # interval k at 700 MHz was other work than interval k at 600 MHz
    sweep(db, tiny_suite_path, "--interval-instructions", 1500, "--core-mhz", "700,100")
    rows, families, totals = control_outcomes(db)
    assert families == families_a
    assert rows == rows_a
    assert totals == totals_a


def test_a_complete_newer_family_replaces_the_older_one_whole(tmp_path, tiny_suite_path):
    db = tmp_path / "families.duckdb"
    sweep(db, tiny_suite_path, "--interval-instructions", 1000, "--seed", 1)
    sweep(db, tiny_suite_path, "--interval-instructions", 1500, "--seed", 1)
    rows, families, totals = control_outcomes(db)
    assert families == [("tiny/alu", 1500, 1), ("tiny/mem", 1500, 1)]

    only_b = tmp_path / "only_b.duckdb"
    sweep(only_b, tiny_suite_path, "--interval-instructions", 1500, "--seed", 1)
    assert control_outcomes(only_b) == (rows, families, totals)
