"""A teammate's file opened with gpudb.open() is as safe as through the CLI (issue 39; the
trust model of issue 12, tests/store/test_trust.py): the same hostile files
(tests/hostile_files.py), refused with the CLI's very message or kept data-only, with the
same rows as a clean copy, and never a byte of the user's secret file."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hostile_files import (  # noqa: F401  (built, tiny, hostile: fixtures)
    SECRET,
    SHADOWS,
    built,
    hostile,
    not_database_files,
    shadowing,
    tiny,
)

import gpudb
from gpudb.cli import cli


def cli_error(*args) -> str:
    """The CLI's one error line, without its 'Error: '."""
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 1, result.output
    [line] = result.output.strip().splitlines()
    return line.removeprefix("Error: ")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


ACCURACY = ("SELECT predictor, avg(abs(predicted_ns - actual_ns) / actual_ns) AS e "
            "FROM prediction GROUP BY ALL ORDER BY ALL")


@pytest.mark.parametrize("read_only", [True, False])
def test_a_hostile_file_is_data_only_through_the_api(hostile, tiny, read_only):
    before = digest(hostile)
    seen = []
    with gpudb.open(hostile, read_only=read_only) as db, \
            gpudb.open(tiny, read_only=True) as clean:
        for view in ("leak", "leak_csv", "leak_table()"):
            with pytest.raises(gpudb.GpudbError, match="disabled by configuration") as refused:
                db.sql(f"SELECT * FROM {view}").fetchall()
            seen.append(str(refused.value))
        # gpudb's prediction view, faked by the file with perfect predictions, is gpudb's
        assert db.sql_table(ACCURACY) == clean.sql_table(ACCURACY)
        assert db.sql(ACCURACY).df().e.min() > 0
        if read_only:  # a stored query reads the same views (one is enough: ~2 s each)
            mape = db.query("mape_by_predictor", gpu_id="tiny")
            assert mape == clean.query("mape_by_predictor", gpu_id="tiny")
            seen.append(str(mape.rows))
        info = db.info()
        seen += [repr(db), db._repr_html_(), str(info)]
    assert ("view", "leak") in info.foreign and ("table macro", "leak_table") in info.foreign
    assert not any(SECRET in text for text in seen)
    if read_only:
        assert digest(hostile) == before


def test_merging_a_hostile_file_through_the_api_brings_its_runs_only(hostile, tiny, tmp_path):
    with gpudb.open(tmp_path / "target.duckdb") as db:
        report = db.merge(hostile)
        counts = dict(db.tables().rows)
    with gpudb.open(tiny, read_only=True) as clean:
        assert counts == dict(clean.tables().rows)
    assert report.runs_added == 8


@pytest.mark.parametrize("name, macro", SHADOWS, ids=[s[0] for s in SHADOWS])
def test_a_file_replacing_gpudbs_functions_is_refused_with_the_clis_message(tiny, tmp_path,
                                                                            name, macro):
    path = shadowing(tiny, tmp_path, name, macro)
    before = digest(path)
    for read_only, command in ((True, "info"), (False, "materialize")):
        with pytest.raises(gpudb.GpudbError) as refused:
            gpudb.open(path, read_only=read_only)
        assert "defines its own" in str(refused.value) and repr(name) in str(refused.value)
        assert str(refused.value) == cli_error("--db", path, command)
    with gpudb.open(tmp_path / "target.duckdb") as db, pytest.raises(gpudb.GpudbError) as merged:
        db.merge(path)
    assert repr(name) in str(merged.value)
    assert digest(path) == before


def test_a_file_that_is_not_a_gpudb_database_is_refused_saying_what_it_is(tmp_path):
    files = not_database_files(tmp_path)
    listing = sorted(str(p) for p in tmp_path.rglob("*"))
    for label, (path, what) in files.items():
        before = digest(path) if path and os.path.isfile(path) else None
        for read_only, command in ((True, "info"), (False, "init")):
            with pytest.raises(gpudb.GpudbError) as refused:
                gpudb.open(path, read_only=read_only)
            assert what in str(refused.value), (label, str(refused.value))
            assert str(refused.value) == cli_error("--db", path, command), label
        if before is not None:
            assert digest(path) == before, label
        assert sorted(str(p) for p in tmp_path.rglob("*")) == listing, (label, "new file")
