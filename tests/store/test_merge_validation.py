"""Merge refuses what ingest would: hand-made hostile sources (Parquet exports and .duckdb
files) with NaN or infinities, orphan rows, a run_id the target holds with other contents, and
a hard link of the target itself. Every refusal is one line naming the run or file, and the
target is left as it was."""

from __future__ import annotations

import hashlib
import os
import shutil

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import TINY_CSV, TINY_MAPPING, row_counts

import gpudb
from gpudb.cli import cli
from gpudb.sources.tabular.ingest import ingest
from gpudb.sources.tabular.mapping import load_mapping
from gpudb.store.db import GpudbError
from gpudb.store.materialize import materialize
from gpudb.store.transfer import _first_error, export, merge


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Built once: ``source.duckdb`` (the tiny dataset, materialised predictions and one
    control result), its export ``export/``, an empty gpudb file ``empty.duckdb``, and the
    source's run ids and row counts."""
    tmp = tmp_path_factory.mktemp("lab")
    (tmp / "tiny.csv").write_text(TINY_CSV)
    (tmp / "tiny.toml").write_text(TINY_MAPPING)
    source = tmp / "source.duckdb"
    con = gpudb.connect(source)
    ingest(con, [tmp / "tiny.csv"], load_mapping(tmp / "tiny.toml"))
    materialized = materialize(con)
    con.execute("INSERT INTO control_result VALUES ('tiny', 'tiny/alpha', 0, 'static_optimal', "
                "'', '', 'energy', 0, 1, 0, 1.0, 1.0, [500.0], now(), 'run', 0.8)")
    run_ids = [r[0] for r in con.execute("SELECT run_id FROM run ORDER BY run_id").fetchall()]
    export(con, tmp / "export")
    con.close()
    gpudb.connect(tmp / "empty.duckdb").close()
    return {"dir": tmp, "source": source, "export": tmp / "export", "empty": tmp / "empty.duckdb",
            "run_ids": run_ids, "materialized": materialized, "counts": row_counts(source),
            "empty_counts": row_counts(tmp / "empty.duckdb")}


def copy(lab, name, to):
    """A copy of one of the lab's files or directories under ``to``."""
    src = lab[name]
    dst = to / f"{name}-{len(list(to.iterdir()))}{src.suffix}"
    (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    return dst


def edit(directory, table, **columns):
    """Replace columns of an exported table (values: a list, or a function of the table)."""
    path = directory / f"{table}.parquet"
    rows = pq.read_table(path)
    for name, values in columns.items():
        values = values(rows) if callable(values) else values
        i = rows.schema.get_field_index(name)
        field = rows.schema.field(i)
        rows = rows.set_column(i, field, pa.array(values, field.type))
    pq.write_table(rows, path)


def only(run_id, column, value):
    """For :func:`edit`: ``column`` with ``value`` in the rows of run ``run_id``."""
    return lambda rows: [value if r == run_id else v for r, v in
                         zip(rows["run_id"].to_pylist(), rows[column].to_pylist(), strict=True)]


def append(directory, table, rows: list[dict]):
    """Add rows to an exported table (columns they do not name are NULL)."""
    path = directory / f"{table}.parquet"
    # every column nullable: DuckDB's own Parquet writer (older exports) marks a column
    # without NULLs non-nullable
    old = pq.read_table(path)
    schema = pa.schema([f.with_nullable(True) for f in old.schema])
    new = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(pa.concat_tables([old.cast(schema), new]), path)


def interval(run_id, idx, **values):
    row = {"run_id": run_id, "idx": idx, "core_mhz": 500.0, "mem_mhz": 800.0,
           "start_ns": 1000.0 * idx, "time_ns": 1000.0, "switch_ns": 0.0, "cycles": 500.0,
           "instructions": 100}
    row.update(values)
    return row


def refusals(target, sources):
    """Merge each source into ``target`` (one connection); the messages of the refusals."""
    messages = []
    con = gpudb.connect(target)
    try:
        for source in sources:
            with pytest.raises(GpudbError) as refused:
                merge(con, source)
            messages.append(str(refused.value))
    finally:
        con.close()
    for message in messages:
        assert "\n" not in message and "aborted" not in message, message
    return messages


def test_merge_refuses_nan_and_infinities_as_ingest_would(lab, tmp_path):
    """DuckDB's CHECK (time_ns > 0) passes NaN and +inf (NaN sorts above every number), so
    merge imported them; now each is refused naming the run and column."""
    first = lab["run_ids"][0]
    sources = []
    for value in (float("nan"), float("inf"), float("-inf")):
        out = copy(lab, "export", tmp_path)
        edit(out, "run", time_ns=only(first, "time_ns", value))
        sources.append(out)
    out = copy(lab, "export", tmp_path)
    append(out, "interval", [interval(first, 0), interval(first, 1, cycles=float("nan"))])
    sources.append(out)
    # a .duckdb file: NaN passes the file's own CHECK constraints, a metric has none
    hostile = copy(lab, "source", tmp_path)
    con = duckdb.connect(str(hostile))
    con.execute("UPDATE metric SET value = 'inf' WHERE run_id = ?", [first])
    con.close()
    sources.append(hostile)

    target = copy(lab, "empty", tmp_path)
    messages = refusals(target, sources)
    for value, message in zip(("nan", "inf", "-inf"), messages, strict=False):
        assert f"run {first!r}: time_ns = {value}" in message, message
    assert f"interval 1 of run {first!r}: cycles = nan is not a finite number" in messages[3]
    assert f"metric 'dram_util' of run {first!r}: value = inf is not a finite" in messages[4]
    assert all(m.endswith("; nothing merged") for m in messages)
    assert str(sources[0]) in messages[0] and str(hostile) in messages[4]
    assert row_counts(target) == lab["empty_counts"]


def test_merge_refuses_orphan_intervals_and_metrics(lab, tmp_path):
    second = lab["run_ids"][1]
    ghost_intervals = copy(lab, "export", tmp_path)
    append(ghost_intervals, "interval", [interval("ghost", 0), interval("ghost", 1)])
    ghost_metric = copy(lab, "export", tmp_path)
    append(ghost_metric, "metric", [{"run_id": "ghost", "name": "x", "value": 1.0}])
    # metrics of a run the target holds but the source does not: grafted onto that run
    grafted = copy(lab, "export", tmp_path)
    runs = pq.read_table(grafted / "run.parquet")
    pq.write_table(runs.filter(pa.compute.not_equal(runs["run_id"], second)),
                   grafted / "run.parquet")

    target = copy(lab, "empty", tmp_path)
    shutil.copy(lab["source"], target)  # holds every run of the source
    before = row_counts(target)
    messages = refusals(target, [ghost_intervals, ghost_metric, grafted])
    # every orphan counted, the first run named, and the repair (an export: of its database)
    repair = "repair the source: gpudb delete --orphans on the database it was exported from"
    assert "2 interval rows belong to 1 run the source does not hold (orphans, e.g. of run " \
           f"'ghost'); {repair}" in messages[0]
    assert "1 metric rows belong to 1 run the source does not hold (orphans, e.g. of run " \
           "'ghost')" in messages[1]
    assert f"belong to 1 run the source does not hold (orphans, e.g. of run {second!r}); the " \
           "target holds such a run: merge would graft them onto it; repair" in messages[2]
    assert row_counts(target) == before


def test_merge_refuses_a_run_id_the_target_holds_with_other_contents(lab, tmp_path):
    """A source run whose run_id the target holds must be that run: the run row, its
    intervals and its metric values; merge used to keep the target's run and graft the
    source's metrics (and would its intervals) onto it."""
    first = lab["run_ids"][0]
    other_time = copy(lab, "export", tmp_path)
    edit(other_time, "run", time_ns=only(first, "time_ns", 1.0))
    append(other_time, "metric", [{"run_id": first, "name": "new_metric", "value": 2.0}])
    other_metric = copy(lab, "export", tmp_path)
    edit(other_metric, "metric", value=lambda rows: [v + 1 for v in rows["value"].to_pylist()])
    grafted_intervals = copy(lab, "export", tmp_path)
    append(grafted_intervals, "interval", [interval(first, 0)])

    target = copy(lab, "source", tmp_path)
    messages = refusals(target, [other_time, other_metric, grafted_intervals])
    assert f"run {first!r} differs: time_ns 1.0 in the source, " in messages[0]
    assert "the source and the target hold different runs under one run_id" in messages[0]
    assert "metric 'dram_util' of run" in messages[1] and "differs: value" in messages[1]
    assert f"interval 0 of run {first!r} is in the source but not in the target" in messages[2]
    assert row_counts(target) == lab["counts"]
    con = gpudb.connect(target, read_only=True)
    assert con.execute("SELECT count(*) FROM metric WHERE name = 'new_metric'").fetchall() == [(0,)]
    con.close()


def test_merge_still_takes_the_same_runs_again(lab, tmp_path):
    """The same runs (numbers equal to 12 digits, as run_ids hash them; equal intervals) merge
    as before: nothing changes but metrics a stored run lacks, which it gains."""
    first = lab["run_ids"][0]
    again = copy(lab, "export", tmp_path)
    edit(again, "run", time_ns=lambda rows: [v * (1 + 1e-13) for v in rows["time_ns"].to_pylist()])
    append(again, "metric", [{"run_id": first, "name": "new_metric", "value": 2.0}])
    with_intervals = copy(lab, "export", tmp_path)
    append(with_intervals, "interval", [interval(first, 0), interval(first, 1)])

    target = copy(lab, "source", tmp_path)
    con = gpudb.connect(target)
    report = merge(con, again)
    assert (report.runs_added, report.runs_skipped) == (0, 8)
    assert report.rows_added["metric"] == 1
    empty = copy(lab, "empty", tmp_path)
    other = gpudb.connect(empty)
    assert merge(other, with_intervals).rows_added["interval"] == 2
    twice = merge(other, with_intervals)  # equal intervals: accepted, nothing added
    other.close()
    con.close()
    assert (twice.runs_added, twice.rows_added["interval"]) == (0, 0)


def test_merge_refuses_a_hard_link_of_the_target(lab, tmp_path):
    """The into-itself guard compared resolved paths, so a hard link passed it (and the file,
    opened a second time by this process, was not locked against itself)."""
    target = copy(lab, "source", tmp_path)
    link = tmp_path / "link.duckdb"
    os.link(target, link)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    result = CliRunner().invoke(cli, ["--db", str(target), "merge", str(link)])
    assert result.exit_code == 1
    assert result.output == (f"Error: cannot merge a database into itself: {link} is "
                             f"{target}\n")
    assert hashlib.sha256(target.read_bytes()).hexdigest() == digest
    assert refusals(target, [link]) == [
        f"cannot merge a database into itself: {link} is {target}"]
    assert row_counts(target) == lab["counts"]


def test_merge_reports_the_tables_it_does_not_copy(lab, tmp_path):
    target = copy(lab, "empty", tmp_path)
    con = gpudb.connect(target)
    report = merge(con, lab["export"])
    con.close()
    assert report.runs_added == 8
    assert report.not_merged["control_result"] == 1
    assert report.not_merged["prediction_materialized"] == lab["materialized"] > 0
    assert report.not_merged["wu_model"] == 0
    assert "gpudb_migration" not in report.not_merged
    result = CliRunner().invoke(cli, ["--db", str(copy(lab, "empty", tmp_path)), "merge",
                                      str(lab["source"])])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].startswith(f"merged {lab['source']}: 8 runs added, 0 already present")
    assert lines[1].startswith("not merged (computed from runs, or in calibration's case "
                               "measured or fitted for one GPU: recompute them here, or load "
                               "a calibration file with gpudb calibrate --from-file): "
                               "control_result (1 row), prediction_materialized (")
    assert "wu_model" not in lines[1]


def test_a_failure_inside_the_transaction_shows_its_cause(lab, tmp_path):
    """A source whose experiment has another id under a name the target holds fails inside
    the transaction: the message is DuckDB's cause, and nothing is written."""
    clash = copy(lab, "export", tmp_path)
    for table in ("experiment", "run", "ingest_file"):
        edit(clash, table, experiment_id=lambda rows: ["not-the-hash"] * rows.num_rows)
    target = copy(lab, "source", tmp_path)
    [message] = refusals(target, [clash])
    assert message.startswith(f"merge of {clash} failed: Constraint Error: Duplicate key")
    assert row_counts(target) == lab["counts"]


def test_first_error_is_the_cause_not_the_aborted_transaction():
    try:
        try:
            raise duckdb.ConstraintException("Constraint Error: the cause")
        except duckdb.Error:
            raise duckdb.TransactionException(
                "TransactionContext Error: Current transaction is aborted (please ROLLBACK)"
            ) from None
    except duckdb.Error as exc:
        assert str(_first_error(exc)) == "Constraint Error: the cause"


def test_a_migration_table_of_another_shape_is_one_line(lab, tmp_path):
    """Issue 31: a gpudb_migration with a NULL or text version, without its version column
    or with no row made every command (a file) or merge (an export) a traceback."""
    exports = []
    for rows in ([{"version": "one", "name": "init", "applied_at": None, "gpudb_version": "x"}],
                 [{"name": "init"}], []):
        out = copy(lab, "export", tmp_path)
        pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(
            [(k, pa.string()) for k in (rows[0] if rows else {"version": 0})])),
            out / "gpudb_migration.parquet")
        exports.append(out)
    target = copy(lab, "empty", tmp_path)
    messages = refusals(target, exports)
    assert messages[0] == (f"{exports[0]}/gpudb_migration.parquet records version 'one', not a "
                           "migration number: not a gpudb database this gpudb can use")
    assert messages[1].endswith("gpudb_migration.parquet has no version column: not a gpudb "
                                "database this gpudb can use")
    assert messages[2].endswith("gpudb_migration.parquet records no migration: not a gpudb "
                                "export")
    assert row_counts(target) == lab["empty_counts"]
    for change in ("INSERT INTO gpudb_migration VALUES (NULL, 'x', now(), 'y')",
                   "INSERT INTO gpudb_migration VALUES ('2x', 'x', now(), 'y')",
                   "ALTER TABLE gpudb_migration DROP COLUMN version"):
        path = copy(lab, "source", tmp_path)
        con = duckdb.connect(str(path))  # the table without its key, as a hostile file has it
        con.execute("CREATE TABLE m AS SELECT * REPLACE (CAST(version AS TEXT) AS version) "
                    "FROM gpudb_migration; DROP TABLE gpudb_migration; "
                    "ALTER TABLE m RENAME TO gpudb_migration")
        con.execute(change)
        con.close()
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        for args in (("info",), ("query", "mape_by_predictor"), ("init",)):
            result = CliRunner().invoke(cli, ["--db", str(path), *args])
            assert result.exit_code == 1, result.output
            assert result.output.startswith(f"Error: {path}: table gpudb_migration "), \
                result.output
            assert len(result.output.splitlines()) == 1
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before
        merged = refusals(target, [path])[0]
        assert "gpudb_migration" in merged and "not a gpudb database" in merged, merged


def test_a_source_of_more_rows_than_merge_holds_is_refused_before_it_is_read(lab, tmp_path,
                                                                            monkeypatch):
    """Issue 31: merge read a source's tables whole (a 9 MB export of 600 M metric rows
    reached 8.3 GB). A source of more than MERGE_MAX_ROWS rows is refused from its row counts
    (Parquet metadata, count(*)), before any table is read; at the bound it merges."""
    import gpudb.store.transfer as transfer

    export_dir = copy(lab, "export", tmp_path)
    rows = {t: pq.read_metadata(export_dir / f"{t}.parquet").num_rows
            for t in transfer.TABLES if (export_dir / f"{t}.parquet").exists()}
    total = sum(rows.values())
    assert total == sum(lab["counts"][t] for t in rows)  # the export holds the source's rows
    monkeypatch.setattr(transfer, "MERGE_MAX_ROWS", total - 1)
    target = copy(lab, "empty", tmp_path)
    for source in (export_dir, lab["source"]):
        [message] = refusals(target, [source])
        biggest = max(rows, key=rows.get)  # the first of the largest tables, in merge order
        assert message == (f"{source} holds {total:,} rows ({rows[biggest]:,} in {biggest}), more "
                           f"than the {total - 1:,} merge reads from one source (it checks them "
                           "in memory): merge part of it (export a smaller database)")
    assert row_counts(target) == lab["empty_counts"]
    monkeypatch.setattr(transfer, "MERGE_MAX_ROWS", total)
    con = gpudb.connect(target)
    try:
        assert merge(con, export_dir).runs_added == len(lab["run_ids"])
    finally:
        con.close()
