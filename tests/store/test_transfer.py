"""Export to Parquet and merge from another database or export."""

from __future__ import annotations

import duckdb
import pytest
from conftest import row_counts

import gpudb
from gpudb.store.db import GpudbError
from gpudb.store.transfer import export, merge


def test_merge_twice_adds_nothing_the_second_time(tiny_db, tmp_path):
    mine = tmp_path / "mine.duckdb"
    gpudb.connect(mine).close()
    con = gpudb.connect(mine)
    first = merge(con, tiny_db)
    second = merge(con, tiny_db)
    con.close()
    assert (first.runs_added, first.runs_skipped) == (8, 0)
    assert first.rows_added["kernel"] == 2 and first.rows_added["ingest_file"] == 1
    assert (second.runs_added, second.runs_skipped) == (0, 8)
    assert sum(second.rows_added.values()) == 0
    assert row_counts(mine) == row_counts(tiny_db)


def test_export_then_merge_round_trips(tiny_db, tmp_path):
    con = gpudb.connect(tiny_db, read_only=True)
    counts = export(con, tmp_path / "out")
    con.close()
    assert counts["run"] == 8 and counts["metric"] == 8
    assert (tmp_path / "out" / "run.parquet").exists()
    with pytest.raises(GpudbError, match="already exists"):
        con = gpudb.connect(tiny_db, read_only=True)
        try:
            export(con, tmp_path / "out")
        finally:
            con.close()
    other = tmp_path / "other.duckdb"
    con = gpudb.connect(other)
    report = merge(con, tmp_path / "out")
    con.close()
    assert report.runs_added == 8
    assert row_counts(other) == row_counts(tiny_db)


def test_merge_refuses_non_database_and_leaves_target_alone(tiny_db, tmp_path):
    before = row_counts(tiny_db)
    junk = tmp_path / "junk.duckdb"
    junk.write_bytes(b"\x00garbage" * 100)
    con = gpudb.connect(tiny_db)
    with pytest.raises(GpudbError, match="is not a DuckDB database"):
        merge(con, junk)
    with pytest.raises(GpudbError, match="not a gpudb export"):
        merge(con, tmp_path)
    con.close()
    assert row_counts(tiny_db) == before


def test_merge_source_views_cannot_read_files(tiny_db, tmp_path):
    teammate = tmp_path / "teammate.duckdb"
    gpudb.connect(teammate).close()
    con = duckdb.connect(str(teammate))  # a plain client writes the view (gpudb could not)
    con.execute("CREATE VIEW leak AS SELECT * FROM read_text('/etc/hostname')")
    con.close()
    con = gpudb.connect(tiny_db)
    merge(con, teammate)  # opened locked down: fine, the view is never needed
    con.close()
    source = gpudb.connect(teammate, read_only=True)
    with pytest.raises(Exception, match="disabled"):
        source.execute("SELECT * FROM leak").fetchall()
    source.close()


def test_merge_of_an_export_before_migration_6_moves_controllers_into_columns(tiny_db, tmp_path):
    """An export taken before migration 0006 stored closed-loop runs with the controller in
    the policy string; merging it gives them policy 'closed_loop' and the columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    con = gpudb.connect(tiny_db, read_only=True)
    export(con, tmp_path / "out")
    con.close()
    runs = pq.read_table(tmp_path / "out" / "run.parquet")
    runs = runs.drop_columns(["predictor", "objective", "max_loss_pct", "guard", "engine"])
    policies = ["crisp/edp", "crisp_gpudb/energy_perf@2.5%/guarded", "lead/ed2p/h0.5"]
    policies += ["fixed"] * (runs.num_rows - len(policies))
    runs = runs.set_column(runs.schema.get_field_index("policy"), "policy",
                           pa.array(policies))
    runs = runs.set_column(runs.schema.get_field_index("source"), "source",
                           pa.array(["sim"] * runs.num_rows))
    pq.write_table(runs, tmp_path / "out" / "run.parquet")
    versions = pq.read_table(tmp_path / "out" / "gpudb_migration.parquet")
    pq.write_table(versions.filter(pa.compute.less(versions["version"], 6)),
                   tmp_path / "out" / "gpudb_migration.parquet")

    other = tmp_path / "other.duckdb"
    con = gpudb.connect(other)
    assert merge(con, tmp_path / "out").runs_added == 8
    got = con.execute("SELECT policy, predictor, objective, max_loss_pct, guard FROM run "
                      "WHERE policy <> 'fixed' ORDER BY predictor").fetchall()
    con.close()
    assert got == [("closed_loop", "crisp", "edp", None, "paper"),
                   ("closed_loop", "crisp_gpudb", "energy_perf", 2.5, "guarded"),
                   ("closed_loop", "lead", "ed2p", None, "h0.5")]
    # and migration 0014 names their engine: gpudb's simulated runs are the cycle engine's
    con = gpudb.connect(other, read_only=True)
    assert con.execute("SELECT DISTINCT engine FROM run").fetchall() == [("reference",)]
    con.close()


def test_export_into_a_directory_whose_name_has_a_quote_writes_only_there(tiny_db, tmp_path,
                                                                          monkeypatch):
    """The name was pasted into COPY ... TO '<path>': `out' (FORMAT csv) --` wrote every
    table as CSV over one file `.out` beside it and left the directory empty. Tables now
    stream to Parquet in Arrow batches (here of 3 rows, so a table is several row groups)."""
    import pyarrow.parquet as pq

    monkeypatch.setattr("gpudb.store.transfer._EXPORT_BATCH_ROWS", 3)
    parent = tmp_path / "exports"
    parent.mkdir()
    out = parent / "out' (FORMAT csv) --"
    con = gpudb.connect(tiny_db, read_only=True)
    counts = export(con, out)
    con.close()
    assert [p.name for p in parent.iterdir()] == [out.name]
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{t}.parquet" for t in counts)
    metric = pq.ParquetFile(out / "metric.parquet")
    assert metric.metadata.num_rows == counts["metric"] == 8
    assert metric.metadata.num_row_groups == 3
    assert pq.read_schema(out / "run.parquet").field("created_at").type.tz == "UTC"
    other = tmp_path / "other.duckdb"
    con = gpudb.connect(other)
    assert merge(con, out).runs_added == 8
    con.close()


def test_export_where_it_cannot_write_is_one_line_and_leaves_nothing(tiny_db, tmp_path,
                                                                     monkeypatch):
    from click.testing import CliRunner

    import gpudb.store.transfer
    from gpudb.cli import cli

    for where in ("/proc/gpudb-export", tmp_path / "missing" / "out"):
        result = CliRunner().invoke(cli, ["--db", str(tiny_db), "export", str(where)])
        assert result.exit_code == 1
        assert result.output.startswith(f"Error: cannot export to {where}: ")
        assert result.output.count("\n") == 1, result.output
    assert not (tmp_path / "missing").exists()

    # a write that fails half-way (a full disk): the staging directory goes, nothing stays
    write = gpudb.store.transfer._write_parquet
    calls = []

    def full_disk(con, query, path):
        calls.append(path)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return write(con, query, path)

    monkeypatch.setattr(gpudb.store.transfer, "_write_parquet", full_disk)
    parent = tmp_path / "exports"
    parent.mkdir()
    con = gpudb.connect(tiny_db, read_only=True)
    with pytest.raises(GpudbError, match=r"cannot export to .*out: no space left on device$"):
        export(con, parent / "out")
    con.close()
    assert list(parent.iterdir()) == []
