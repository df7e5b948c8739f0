"""`gpudb sql` on SQL that starts with a comment (issue 38: click took '-- note' for an
option and answered "no such option")."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpudb.cli import cli


@pytest.mark.parametrize("args, stdin", [
    (["-- the answer\nSELECT 42 AS answer"], None),
    (["--format", "csv", "--answer\nSELECT 42 AS answer"], None),       # no space after --
    (["-- the answer\nSELECT 42 AS answer", "--format", "csv"], None),  # options after it
    (["--format", "csv", "--", "-- the answer\nSELECT 42 AS answer"], None),  # after --
    ([], "-- the answer\nSELECT 42 AS answer\n"),                       # standard input
    (["/* the answer */ SELECT 42 AS answer"], None),
])
def test_sql_may_start_with_a_comment(fresh_db, args, stdin):
    format_given = "--format" in args
    result = CliRunner().invoke(cli, ["--db", str(fresh_db), "sql", *args,
                                      *([] if format_given else ["--format", "csv"])],
                                input=stdin)
    assert (result.exit_code, result.output) == (0, "answer\n42\n")


def test_an_unknown_option_is_still_refused(fresh_db):
    result = CliRunner().invoke(cli, ["--db", str(fresh_db), "sql", "--fromat", "SELECT 1"])
    assert result.exit_code == 2
    assert "no such option '--fromat'" in result.output
