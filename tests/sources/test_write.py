"""The sources' one writer (gpudb.sources.write): a Batch written in one transaction, a run
stored before keeping its row and gaining only the metrics it lacks, a GPU's own P-states
written only with a new GPU, and nothing at all when a row is refused."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from gpudb.sources.write import Batch, FileRecord, Part, write
from gpudb.store.db import connect
from gpudb.store.runs import experiment_id


def _part(run_ids: list[str], metrics: list[tuple[str, str, float]], sha: str | None = None,
          tmp_path=None, time_ns: float = 1000.0) -> Part:
    return Part(
        gpu=pa.Table.from_pylist([{"gpu_id": "g", "name": "G", "n_sm": 2}]),
        gpu_pstates=pa.table({"gpu_id": ["g"], "domain": ["core"], "freq_mhz": [700.0]}),
        pstates=pa.table({"gpu_id": ["g", "g"], "domain": ["core", "mem"],
                          "freq_mhz": [500.0, 800.0]}),
        kernels=pa.Table.from_pylist([{"kernel_id": "s/k", "name": "k", "suite": "s"}]),
        runs=pa.Table.from_pylist([{
            "run_id": r, "experiment_id": experiment_id("exp"), "source": "measured", "kernel_id": "s/k",
            "gpu_id": "g", "policy": "fixed", "core_mhz": 500.0, "mem_mhz": 800.0, "n_sm": 2,
            "time_ns": time_ns, "energy_j": 1e-3, "input_hash": sha} for r in run_ids]),
        metrics=pa.Table.from_pylist([{"run_id": r, "name": n, "value": v}
                                      for r, n, v in metrics]),
        file=FileRecord(sha, tmp_path / "f.csv", "m", len(run_ids)) if sha else None)


def test_a_batch_is_written_once_and_a_stored_run_gains_only_its_missing_metrics(
        fresh_db, tmp_path):
    with connect(fresh_db) as con:
        first = write(con, Batch("exp", "d", [
            _part(["a", "b"], [("a", "x", 1.0), ("b", "x", 2.0)], "sha1", tmp_path)]))
        assert [(d.runs, d.metrics) for d in first] == [(2, 2)]
        # run b is stored: it keeps its row and its x, and gains y; run c is new
        second = write(con, Batch("exp", "d", [
            _part(["b", "c"], [("b", "x", 9.0), ("b", "y", 3.0), ("c", "x", 4.0)], "sha2",
                  tmp_path, time_ns=5.0)]))
        assert [(d.runs, d.metrics) for d in second] == [(1, 2)]
        assert con.execute("SELECT run_id, name, value FROM metric ORDER BY ALL").fetchall() == [
            ("a", "x", 1.0), ("b", "x", 2.0), ("b", "y", 3.0), ("c", "x", 4.0)]
        assert con.execute("SELECT run_id, time_ns FROM run ORDER BY run_id").fetchall() == [
            ("a", 1000.0), ("b", 1000.0), ("c", 5.0)]
        # the GPU's own P-state (700 MHz) came with the new GPU; the clocks seen every time
        assert con.execute("SELECT domain, freq_mhz FROM pstate ORDER BY ALL").fetchall() == [
            ("core", 500.0), ("core", 700.0), ("mem", 800.0)]
        assert con.execute("SELECT file_sha256, runs_added, metrics_added FROM ingest_file "
                           "ORDER BY 1").fetchall() == [("sha1", 2, 2), ("sha2", 1, 2)]
        assert con.execute("SELECT name, description FROM experiment").fetchall() == [
            ("exp", "d")]


def test_a_refused_row_writes_nothing(fresh_db, tmp_path):
    with connect(fresh_db) as con:
        before = con.execute("SELECT (SELECT count(*) FROM gpu), (SELECT count(*) FROM run), "
                             "(SELECT count(*) FROM experiment)").fetchall()
        with pytest.raises(duckdb.Error):  # time_ns must be positive
            write(con, Batch("exp", "d", [
                _part(["a"], [("a", "x", 1.0)]),
                _part(["b"], [("b", "x", 1.0)], time_ns=-1.0)]))
        assert con.execute("SELECT (SELECT count(*) FROM gpu), (SELECT count(*) FROM run), "
                           "(SELECT count(*) FROM experiment)").fetchall() == before
