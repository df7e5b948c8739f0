"""Query parameters outside their domain are refused in one line (issue 41 item 6): before, a
NaN bound, an absent seed or clock, or a word the query does not know answered an empty or
default table that read like a result."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpudb.cli import cli


@pytest.mark.parametrize("query, param, value, error", [
    ("savings", "seed", "99", "no seed 99 in this database (there: '0')"),
    ("savings", "seed", "-1", "seed must be a whole number >= 0 (got '-1')"),
    ("savings", "seed", "0.5", "seed must be a whole number >= 0 (got '0.5')"),
    ("savings", "max_loss_pct", "nan", "max_loss_pct must be a finite number >= 0 (got 'nan')"),
    ("savings", "max_loss_pct", "-inf", "max_loss_pct must be a finite number >= 0 "
                                        "(got '-inf')"),
    ("mape_by_predictor", "base_mhz", "12345", "no base_mhz 12345 in this database (there: "
     "'100', '200', '300', '400', '500', '595', '600', '700', ... (10 in all))"),
    ("mape_by_predictor", "base_mhz", "0", "base_mhz must be a finite number > 0 (got '0')"),
    ("equalizer_vs_static", "kernels", "every", "kernels must be one of all, each "
                                                "(got 'every')"),
    ("wu_error_by_base", "clusters", "7", "no clusters 7 in this database (it holds none)"),
    ("controller_replay", "predictor", "crsp", "no predictor 'crsp'; did you mean 'crisp' or "
                                               "'crispl'?"),
])
def test_a_value_outside_its_domain_is_one_line(query_db, query, param, value, error):
    result = CliRunner().invoke(cli, ["--db", str(query_db), "query", query, "-p", param,
                                      value])
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines() == [f"Error: {error}"]


def test_a_value_inside_its_domain_answers(query_db):
    result = CliRunner().invoke(cli, ["--db", str(query_db), "query", "savings", "-p",
                                      "seed", "0", "-p", "max_loss_pct", "1", "--format",
                                      "csv"])
    assert result.exit_code == 0, result.output
    assert len(result.output.splitlines()) > 1
