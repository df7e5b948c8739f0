"""Deleting runs with everything derived from them, and finding rows whose runs are gone.

A run's own rows (intervals, metrics) carry no foreign key (docs/DESIGN.md section 7), and the
tables computed from runs (control results, scaling predictions, materialised predictions, Wu
models, calibrations fitted to runs) name them by id or by (GPU, kernel). So a run deleted on
its own (``gpudb sql "DELETE FROM run ..."``) leaves rows that point at nothing: *orphans*,
which :func:`orphans` counts and merge refuses. :func:`delete_rows` removes a selection of runs
with all of those rows, or the orphans alone.

Two steps, because DuckDB checks a foreign key against committed rows only: a GPU, kernel or
experiment row cannot be deleted in the transaction that deletes the runs referring to it
(DuckDB's documented foreign-key limitation). :func:`delete_rows` (runs and derived rows, the
ingest records of the files deleted, the P-states of GPUs left without anything) runs inside
the caller's transaction, so an ingest can replace a file's runs in the transaction that
writes the new ones; :func:`delete_parents` then removes, in a transaction of its own, the
GPU, kernel and experiment rows nothing refers to any more. Leaving them (a failure between
the two) loses nothing: they are re-added, or deleted by a later ``gpudb delete --orphans``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from gpudb.store.base import GpudbError, atomic, first_row
from gpudb.store.names import unknown

# Tables whose rows are the run's own, by run_id.
_BY_RUN = ("interval", "metric")
# Tables computed from the runs of one (GPU, kernel), named by gpu_id and kernel_id.
_BY_KERNEL = ("control_result", "scaling_prediction", "prediction_materialized")
# A Wu model's rows besides wu_model itself, by model_id (schema/0003_wu_model.sql).
_WU_CHILDREN = ("wu_split", "wu_grid", "wu_feature_bound", "wu_cluster_set", "wu_centroid",
                "wu_assignment", "wu_weight")


@dataclass
class Selection:
    """Which runs to delete: every kind given must match (a run of one of the ``gpus`` AND of
    one of the ``kernels``, ...); values of one kind are alternatives. ``ingests``: file
    SHA-256s as ``ingest_file`` records them (a run's ``input_hash``). ``orphans``: no runs,
    only the rows whose runs are gone (and GPU, kernel, experiment rows nothing uses)."""

    experiments: list[str] = field(default_factory=list)
    ingests: list[str] = field(default_factory=list)
    gpus: list[str] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)
    orphans: bool = False

    def empty(self) -> bool:
        return not (self.experiments or self.ingests or self.gpus or self.kernels
                    or self.orphans)


def _sql_list(values: list[str]) -> str:
    """A list literal of strings (DuckDB takes no parameters in every place used here)."""
    return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def _run_filter(sel: Selection) -> str:
    """SQL over ``run`` (unqualified columns) selecting the runs of ``sel``."""
    parts = []
    if sel.experiments:
        parts.append("experiment_id IN (SELECT experiment_id FROM experiment WHERE "
                     f"list_contains({_sql_list(sel.experiments)}, name))")
    if sel.ingests:
        parts.append(f"list_contains({_sql_list(sel.ingests)}, input_hash)")
    if sel.gpus:
        parts.append(f"list_contains({_sql_list(sel.gpus)}, gpu_id)")
    if sel.kernels:
        parts.append(f"list_contains({_sql_list(sel.kernels)}, kernel_id)")
    return " AND ".join(parts) if parts else "false"


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND NOT temporary").fetchall()}


def _predicates(con: duckdb.DuckDBPyConnection, sel: Selection) -> list[tuple[str, str]]:
    """(table, SQL predicate over the table's rows) of what to delete, in the order to delete
    it: derived rows before the runs they are derived from, since the predicates find them
    through the runs still stored."""
    present = _tables(con)
    if sel.orphans:
        gone_run = "run_id NOT IN (SELECT run_id FROM run)"
        gone_kernel = ("NOT EXISTS (SELECT 1 FROM run AS r WHERE r.gpu_id = t.gpu_id AND "
                       "r.kernel_id = t.kernel_id)")
        gone_source = "(SELECT run_id FROM run)"
        model_doomed = ("EXISTS (SELECT 1 FROM wu_split AS s WHERE s.model_id = m.model_id "
                        "AND NOT EXISTS (SELECT 1 FROM run AS r WHERE r.gpu_id = m.gpu_id "
                        "AND r.kernel_id = s.kernel_id AND r.policy = 'fixed'))")
        # a file none of whose runs is left: its record would refuse the file's next ingest
        ingest_doomed = ("t.runs_added > 0 AND NOT EXISTS (SELECT 1 FROM run AS r "
                         "WHERE r.input_hash = t.file_sha256)")
    else:
        runs = f"(SELECT * FROM run WHERE {_run_filter(sel)})"
        gone_run = f"run_id IN (SELECT run_id FROM {runs})"
        gone_kernel = (f"EXISTS (SELECT 1 FROM {runs} AS r WHERE r.gpu_id = t.gpu_id AND "
                       "r.kernel_id = t.kernel_id)")
        gone_source = f"(SELECT run_id FROM run WHERE NOT ({_run_filter(sel)}))"
        model_doomed = (f"EXISTS (SELECT 1 FROM wu_split AS s JOIN {runs} AS r ON "
                        "r.kernel_id = s.kernel_id WHERE s.model_id = m.model_id AND "
                        "r.gpu_id = m.gpu_id AND r.policy = 'fixed')")
        ingest_doomed = (f"list_contains({_sql_list(sel.ingests)}, t.file_sha256) OR "
                         f"(t.runs_added > 0 AND EXISTS (SELECT 1 FROM {runs} AS r WHERE "
                         "r.input_hash = t.file_sha256) AND NOT EXISTS (SELECT 1 FROM run AS "
                         f"r WHERE r.input_hash = t.file_sha256 AND NOT ({_run_filter(sel)})))")
    out = [(t, gone_run) for t in _BY_RUN]
    out += [(t, gone_kernel) for t in _BY_KERNEL if t in present]
    # a calibration fitted to runs (source_run_ids) goes with any of them
    out.append(("calibration", "calibration_id IN (SELECT calibration_id FROM (SELECT "
                "calibration_id, unnest(source_run_ids) AS rid FROM calibration) "
                f"WHERE rid NOT IN {gone_source})"))
    # a model's rows before the model, found through it and its split (wu_split); the split
    # after the model, found as rows of a model that is gone
    doomed = f"(SELECT model_id FROM wu_model AS m WHERE {model_doomed})"
    child = f"model_id IN {doomed} OR model_id NOT IN (SELECT model_id FROM wu_model)"
    out += [(t, child) for t in _WU_CHILDREN if t != "wu_split"]
    out.append(("wu_model", f"model_id IN {doomed}"))
    out.append(("wu_split", child))
    # the file records before the runs: they are found through them
    out.append(("ingest_file", ingest_doomed))
    if not sel.orphans:
        out.append(("run", _run_filter(sel)))
    return out


def _parent_predicates(sel: Selection, touched: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(table, predicate) of the GPU, kernel and experiment rows nothing refers to any more
    (of those ``touched``, the deleted runs' own; every such row for ``sel.orphans``), and of
    the P-states of those GPUs."""
    def among(column: str, kind: str) -> str:
        return "" if sel.orphans else f" AND list_contains({_sql_list(touched[kind])}, {column})"
    unused_gpu = ("NOT EXISTS (SELECT 1 FROM run AS r WHERE r.gpu_id = g.gpu_id) AND NOT EXISTS "
                  "(SELECT 1 FROM wu_model AS m WHERE m.gpu_id = g.gpu_id) AND NOT EXISTS "
                  "(SELECT 1 FROM calibration AS c WHERE c.gpu_id = g.gpu_id)"
                  + among("g.gpu_id", "gpus"))
    return [
        ("pstate", f"gpu_id IN (SELECT gpu_id FROM gpu AS g WHERE {unused_gpu})"),
        ("gpu", f"gpu_id IN (SELECT gpu_id FROM gpu AS g WHERE {unused_gpu})"),
        ("kernel", "kernel_id NOT IN (SELECT kernel_id FROM run)"
         + among("kernel_id", "kernels")),
        ("experiment", "experiment_id NOT IN (SELECT experiment_id FROM run) AND experiment_id "
         "NOT IN (SELECT experiment_id FROM ingest_file WHERE experiment_id IS NOT NULL)"
         + among("experiment_id", "experiments")),
    ]


def _count(con: duckdb.DuckDBPyConnection, table: str, predicate: str) -> int:
    alias = "m" if table == "wu_model" else "t"
    return first_row(con.execute(
        f"SELECT count(*) FROM {table} AS {alias} WHERE {predicate}"))[0]


def _delete(con: duckdb.DuckDBPyConnection, table: str, predicate: str) -> int:
    alias = "m" if table == "wu_model" else "t"
    return first_row(con.execute(f"DELETE FROM {table} AS {alias} WHERE {predicate}"))[0]


def _touched(con: duckdb.DuckDBPyConnection, sel: Selection) -> dict[str, list[str]]:
    """The GPUs, kernels and experiments of the runs ``sel`` selects."""
    where = _run_filter(sel)
    return {kind: [r[0] for r in con.execute(
        f"SELECT DISTINCT {column} FROM run WHERE {where} ORDER BY 1").fetchall()]
        for kind, column in (("gpus", "gpu_id"), ("kernels", "kernel_id"),
                             ("experiments", "experiment_id"))}


def planned(con: duckdb.DuckDBPyConnection, sel: Selection) -> dict[str, int]:
    """Rows per table that :func:`delete` would delete (tables with none left out), found by
    deleting them in a transaction that is rolled back: the same statements, so the same
    rows. The GPU, kernel and experiment rows are counted, not deleted, after the others."""
    con.execute("BEGIN TRANSACTION")
    try:
        counts, touched = delete_rows(con, sel)
        for table, predicate in _parent_predicates(sel, touched)[1:]:
            counts[table] = _count(con, table, predicate)
    finally:
        con.execute("ROLLBACK")
    return {t: n for t, n in counts.items() if n}


def delete_rows(con: duckdb.DuckDBPyConnection, sel: Selection) -> tuple[dict[str, int],
                                                                       dict[str, list[str]]]:
    """Delete the selected runs and every row derived from them (or, for ``sel.orphans``, the
    rows whose runs are gone), the ingest records of files with no run left, and the P-states
    of GPUs left without runs, models or calibrations, inside the caller's transaction (the
    caller wraps it in :func:`gpudb.store.base.atomic`). Returns rows deleted per table and
    what :func:`delete_parents` takes afterwards (the deleted runs' GPUs, kernels and
    experiments)."""
    touched = _touched(con, sel)
    counts: dict[str, int] = {}
    for table, predicate in _predicates(con, sel):
        counts[table] = counts.get(table, 0) + _delete(con, table, predicate)
    # P-states refer to their GPU: gone in this transaction, so the GPU can go in the next
    pstate, gpu_predicate = _parent_predicates(sel, touched)[0]
    counts[pstate] = _delete(con, pstate, gpu_predicate)
    return counts, touched


def delete_parents(con: duckdb.DuckDBPyConnection, sel: Selection,
                   touched: dict[str, list[str]]) -> dict[str, int]:
    """In a transaction of its own, after :func:`delete_rows` committed: the GPU, kernel and
    experiment rows nothing refers to any more. Returns rows deleted per table."""
    counts = {}
    with atomic(con):
        for table, predicate in _parent_predicates(sel, touched)[1:]:
            counts[table] = _delete(con, table, predicate)
    return counts


def delete(con: duckdb.DuckDBPyConnection, sel: Selection) -> dict[str, int]:
    """:func:`delete_rows` in one transaction, then :func:`delete_parents`; rows deleted per
    table, tables with none left out."""
    with atomic(con):
        counts, touched = delete_rows(con, sel)
    counts.update(delete_parents(con, sel, touched))
    return {t: n for t, n in counts.items() if n}


def orphans(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Rows per table that refer to runs the database no longer holds (intervals, metrics,
    results and models computed from them, records of ingested files none of whose runs is
    left); tables with none left out. ``gpudb delete --orphans`` deletes them."""
    counts: dict[str, int] = {}
    for table, predicate in _predicates(con, Selection(orphans=True)):
        counts[table] = counts.get(table, 0) + _count(con, table, predicate)
    return {t: n for t, n in counts.items() if n}


def resolve(con: duckdb.DuckDBPyConnection, sel: Selection) -> Selection:
    """``sel`` with each name checked against the database (a GpudbError naming the close
    matches otherwise) and each ingest given as a file name or a SHA-256 (a prefix of at
    least 8 hex digits will do) turned into the SHA-256s ``ingest_file`` records."""
    def check(kind: str, given: list[str], known: list[str]) -> None:
        for name in given:
            if name not in known:
                raise GpudbError(unknown(kind, name, known, where=" in the database"))

    check("experiment", sel.experiments,
          [r[0] for r in con.execute("SELECT name FROM experiment ORDER BY 1").fetchall()])
    check("GPU", sel.gpus, [r[0] for r in con.execute(
        "SELECT gpu_id FROM gpu ORDER BY 1").fetchall()])
    check("kernel", sel.kernels, [r[0] for r in con.execute(
        "SELECT kernel_id FROM kernel ORDER BY 1").fetchall()])
    files = con.execute("SELECT file_sha256, file_name FROM ingest_file "
                        "ORDER BY ingested_at, file_name").fetchall()
    shas = []
    for given in sel.ingests:
        hits = [sha for sha, name in files if name == given or
                (len(given) >= 8 and sha.startswith(given.lower()))]
        if not hits:
            check("ingested file", [given], [name for _, name in files])
        if len(hits) > 1:
            raise GpudbError(f"{len(hits)} ingested files match {given!r} (SHA-256 "
                             f"{', '.join(h[:12] for h in hits)}): give one's SHA-256 prefix")
        shas += hits
    return Selection(sel.experiments, shas, sel.gpus, sel.kernels, sel.orphans)
