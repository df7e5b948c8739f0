"""The one writer of runs: ``run``, ``interval`` and ``metric`` rows and the ``gpu``, ``pstate``,
``kernel`` and ``experiment`` rows they refer to (docs/DESIGN.md section 2).

Sweeps (gpudb.simulate.sweep), closed-loop control (gpudb.control.runner), the sources
(ingest, ingest-log and measure, through gpudb.sources.write) and merge (gpudb.store.transfer)
all write them through here, so one set of rules holds for every run, whatever produced it:

- a stored run is never changed: a run whose ``run_id`` is stored already is skipped with its
  intervals (``run_id`` is a content hash, so this makes every writer idempotent); a stored
  run can only gain metrics it lacks;
- a referenced row (GPU, P-state, kernel, experiment) is added when its key is missing and
  never replaced;
- rows arrive as Arrow tables or as SQL over the connection and go in with one
  ``INSERT ... SELECT`` each, never row by row (docs/DESIGN.md section 7).

Only :func:`write_run` opens a transaction of its own; a caller writing several things at
once wraps them in :func:`gpudb.store.db.atomic` (DuckDB has no nested transactions).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, NamedTuple, Union

import duckdb
import pyarrow as pa

from gpudb.store.db import GpudbError, atomic, first_row, stored_engines, whoami

if TYPE_CHECKING:  # the simulator is imported only by the code paths that simulate
    from sim.config import GpuConfig, KernelSpec
    from sim.model import SimResult

# Rows to write: an Arrow table, or an SQL query over the connection.
Rows = Union[pa.Table, str]

# Key columns of each table: a row whose key is stored already is not written again.
KEYS = {
    "gpu": ("gpu_id",),
    "pstate": ("gpu_id", "domain", "freq_mhz"),
    "kernel": ("kernel_id",),
    "experiment": ("experiment_id",),
    "ingest_file": ("file_sha256",),
    "run": ("run_id",),
    "interval": ("run_id", "idx"),
    "metric": ("run_id", "idx", "name"),
}

# What a column the rows lack is filled with (NULL when not named here).
_DEFAULTS = {"created_at": "now()"}


class Written(NamedTuple):
    """Rows :func:`insert_runs` added."""

    runs: int
    intervals: int


def experiment_id(name: str) -> str:
    """Experiment key: first 16 hex digits of SHA-256 of its name, equal in every file, so
    merging two databases maps experiments by name."""
    return hashlib.sha256(name.encode()).hexdigest()[:16]


@contextmanager
def _source(con: duckdb.DuckDBPyConnection, rows: Rows, name: str) -> Iterator[str]:
    """``rows`` as something to select from: a registered Arrow table or a subquery."""
    if isinstance(rows, str):
        yield f"({rows})"
        return
    con.register(name, rows)
    try:
        yield name
    except BaseException:
        # A failed statement aborts the transaction, which then refuses even this until the
        # caller's ROLLBACK (that removes the registration too); the failure is what counts.
        with suppress(duckdb.Error):
            con.unregister(name)
        raise
    con.unregister(name)


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [r[0] for r in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND schema_name = 'main' "
        "AND database_name = current_database() ORDER BY column_index", [table]).fetchall()]


def _select(con: duckdb.DuckDBPyConnection, table: str, rows: Rows,
            source: str) -> dict[str, str]:
    """For each column of ``table``, the expression over ``source AS s`` that fills it: the
    column of the same name, else its default. Columns the table lacks are left out."""
    theirs = set(rows.column_names if isinstance(rows, pa.Table) else
                 (d[0] for d in con.execute(f"SELECT * FROM {source} LIMIT 0").description))
    return {c: f"s.{c}" if c in theirs else _DEFAULTS.get(c, "NULL")
            for c in _columns(con, table)}


def _insert(table: str, exprs: dict[str, str], source: str, rest: str = "",
            distinct_on: tuple[str, ...] = ()) -> str:
    distinct = f"DISTINCT ON ({', '.join(exprs[k] for k in distinct_on)}) " if distinct_on else ""
    return (f"INSERT INTO {table} ({', '.join(exprs)}) SELECT {distinct}"
            f"{', '.join(exprs.values())} FROM {source} AS s{rest}")


def insert_missing(con: duckdb.DuckDBPyConnection, table: str, rows: Rows) -> int:
    """Insert the rows whose key (``KEYS[table]``) ``table`` lacks, the first of rows sharing
    a key; returns the rows added. For the parents of runs (and ``ingest_file``, and
    ``metric`` from a merge); runs themselves go through :func:`insert_runs`."""
    keys = KEYS[table]
    with _source(con, rows, f"_gpudb_new_{table}") as src:
        exprs = _select(con, table, rows, src)
        match = " AND ".join(f"t.{k} IS NOT DISTINCT FROM {exprs[k]}" for k in keys)
        return first_row(con.execute(_insert(
            table, exprs, src, f" WHERE NOT EXISTS (SELECT 1 FROM {table} AS t WHERE {match})",
            distinct_on=keys)))[0]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def row_name(table: str, key: dict) -> str:
    """A row named by its key, for messages: "run 'ab12'", "interval 3 of run 'ab12'"."""
    if table == "run":
        return f"run {key['run_id']!r}"
    if table == "interval":
        return f"interval {key['idx']} of run {key['run_id']!r}"
    if table == "metric":
        at = "" if key["idx"] is None else f" (interval {key['idx']})"
        return f"metric {key['name']!r}{at} of run {key['run_id']!r}"
    return f"{table} " + ", ".join(f"{k} {v!r}" for k, v in key.items())


def invalid_row(con: duckdb.DuckDBPyConnection, table: str, rows: Rows) -> str | None:
    """The first of ``rows`` that ``table`` must not hold, as one line naming the row by its
    key (``KEYS[table]``), or None when every row may go in.

    The rules are the table's own, as stored: each value converts to its column's type, NOT
    NULL, the CHECK constraints, and one DuckDB's CHECKs miss: a floating-point value must
    be finite (NaN sorts above every number, so ``CHECK (time_ns > 0)`` passes NaN and
    +inf). These are the rules ingest applies to a file before writing it, so a writer that
    did not produce the rows itself (merge) refuses what ingest would.
    """
    cols = con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? AND "
        "schema_name = 'main' AND database_name = current_database() ORDER BY column_index",
        [table]).fetchall()
    types = dict(cols)
    constraints = con.execute(
        "SELECT constraint_type, expression, constraint_column_names FROM duckdb_constraints() "
        "WHERE table_name = ? AND schema_name = 'main' AND database_name = current_database() "
        "AND constraint_type IN ('CHECK', 'NOT NULL') ORDER BY constraint_index",
        [table]).fetchall()
    with _source(con, rows, f"_gpudb_check_{table}") as src:
        exprs = _select(con, table, rows, src)
        # The rows as the table would get them (p.<column>), beside the values as given
        # (p._gpudb_raw_<i>, for columns the rows have); CHECK expressions name columns bare.
        raw = {c: f"_gpudb_raw_{i}" for i, c in enumerate(exprs) if exprs[c].startswith("s.")}
        rows_sql = ("(SELECT " + ", ".join(
            [f"TRY_CAST({e} AS {types[c]}) AS {_quote(c)}" for c, e in exprs.items()]
            + [f"{exprs[c]} AS {r}" for c, r in raw.items()]) + f" FROM {src} AS s) AS p")
        # (column, what is wrong, predicate over p)
        checks: list[tuple[str, str, str]] = [
            (c, f"is not a {types[c]}", f"p.{r} IS NOT NULL AND p.{_quote(c)} IS NULL")
            for c, r in raw.items()]
        checks += [(c, "is not a finite number", f"NOT isfinite(p.{_quote(c)})")
                   for c, kind in cols if kind in ("DOUBLE", "FLOAT", "REAL")]
        for kind, expression, names in constraints:
            if kind == "NOT NULL":
                checks.append((names[0], "is missing", f"p.{_quote(names[0])} IS NULL"))
            else:
                checks.append((names[0], f"breaks CHECK {expression}", f"NOT {expression}"))
        counts = first_row(con.execute(
            "SELECT " + ", ".join(f"count(*) FILTER (WHERE {pred})" for _, _, pred in checks)
            + f" FROM {rows_sql}"))
        for (column, problem, pred), bad in zip(checks, counts, strict=True):
            if not bad:
                continue
            keys = KEYS.get(table, ())
            shown = f"p.{raw.get(column, _quote(column))}"
            hit = first_row(con.execute(
                "SELECT " + ", ".join(f"p.{_quote(k)}" for k in keys)
                + f", CAST({shown} AS VARCHAR) FROM {rows_sql} WHERE {pred} LIMIT 1"))
            name = row_name(table, dict(zip(keys, hit[:-1], strict=True)))
            value = "" if hit[-1] is None else f" = {hit[-1]}"
            more = f" ({bad - 1} more like it)" if bad > 1 else ""
            return f"{name}: {column}{value} {problem}{more}"
    return None


def insert_runs(con: duckdb.DuckDBPyConnection, runs: Rows,
                intervals: Rows | None = None) -> Written:
    """Insert the runs whose ``run_id`` is not stored yet, with their intervals (interval rows
    of other runs are ignored); a stored run is left as it is. Columns of ``run`` the rows lack
    are NULL, ``created_at`` now(). The gpu, kernel and experiment rows the runs refer to
    must be stored first. Returns the run and interval rows added."""
    with _source(con, runs, "_gpudb_new_run") as src:
        present = first_row(con.execute(
            f"SELECT count(*) FROM {src} AS s WHERE s.run_id IN (SELECT run_id FROM run)"))[0]
        # Usually nothing is stored yet and the rows go in as they are (DuckDB's bulk path).
        new_ids = f"SELECT s.run_id FROM {src} AS s"
        only_new = ""
        if present:
            con.execute("CREATE OR REPLACE TEMP TABLE _gpudb_new_run_ids AS SELECT s.run_id "
                        f"FROM {src} AS s WHERE s.run_id NOT IN (SELECT run_id FROM run)")
            new_ids = "SELECT run_id FROM _gpudb_new_run_ids"
            only_new = f" WHERE s.run_id IN ({new_ids})"
        added = first_row(con.execute(
            _insert("run", _select(con, "run", runs, src), src, only_new)))[0]
        interval_rows = 0
        if intervals is not None and added:
            with _source(con, intervals, "_gpudb_new_interval") as isrc:
                exprs = _select(con, "interval", intervals, isrc)
                interval_rows = first_row(con.execute(_insert(
                    "interval", exprs, isrc, f" WHERE s.run_id IN ({new_ids})")))[0]
        # Not in a finally: after a failed statement the transaction refuses it; the caller's
        # ROLLBACK drops it (or the next call replaces it).
        if present:
            con.execute("DROP TABLE _gpudb_new_run_ids")
    return Written(added, interval_rows)


def insert_metrics(con: duckdb.DuckDBPyConnection, rows: Rows,
                   skip_stored: bool = True) -> int:
    """Insert metric rows (``run_id``, ``name``, ``value``, and ``idx`` where given; NULL is
    the whole run); with ``skip_stored`` only those whose (run_id, idx, name) is not stored
    yet, which a caller that has just added the runs may skip. Returns the rows added."""
    with _source(con, rows, "_gpudb_new_metric") as src:
        exprs = _select(con, "metric", rows, src)
        rest = ""
        if skip_stored:
            rest = (" WHERE NOT EXISTS (SELECT 1 FROM metric AS e WHERE e.run_id = s.run_id "
                    f"AND e.idx IS NOT DISTINCT FROM {exprs['idx']} AND e.name = s.name)")
        return first_row(con.execute(_insert("metric", exprs, src, rest)))[0]


def stored_run_ids(con: duckdb.DuckDBPyConnection, run_ids: Iterable[str]) -> set[str]:
    """Those of ``run_ids`` the database has already."""
    ids = pa.table({"run_id": pa.array(list(run_ids), pa.string())})
    with _source(con, ids, "_gpudb_run_ids") as src:
        return {r[0] for r in con.execute(
            f"SELECT run_id FROM run WHERE run_id IN (SELECT run_id FROM {src})").fetchall()}


def ensure_gpu(con: duckdb.DuckDBPyConnection, gpu: GpuConfig) -> None:
    """The gpu row and P-states of a simulator GPU configuration, unless the GPU is stored."""
    row = pa.Table.from_pylist([{
        "gpu_id": gpu.name, "name": gpu.name, "n_sm": gpu.n_sm,
        "max_warps_per_sm": gpu.max_warps_per_sm, "max_ctas_per_sm": gpu.max_ctas_per_sm,
        "nominal_core_mhz": gpu.nominal_core_mhz, "nominal_mem_mhz": gpu.nominal_mem_mhz,
        "config": json.dumps(gpu.raw)}])
    if not insert_missing(con, "gpu", row):
        return
    rows = ([(gpu.name, "core", f, v) for f, v in zip(gpu.core_mhz, gpu.core_v, strict=True)]
            + [(gpu.name, "mem", f, v) for f, v in zip(gpu.mem_mhz, gpu.mem_v, strict=True)])
    insert_missing(con, "pstate", pa.table({
        "gpu_id": [r[0] for r in rows], "domain": [r[1] for r in rows],
        "freq_mhz": [r[2] for r in rows], "voltage_v": [r[3] for r in rows]}))


def ensure_kernels(con: duckdb.DuckDBPyConnection, kernels: Iterable[KernelSpec]) -> None:
    """The kernel rows of simulator kernel specs that are not stored yet."""
    rows = [{"kernel_id": k.kernel_id, "name": k.name, "suite": k.suite,
             "category": k.category, "description": k.description,
             "spec": json.dumps(k.raw)} for k in kernels]
    if rows:
        insert_missing(con, "kernel", pa.Table.from_pylist(rows))


def ensure_experiment(con: duckdb.DuckDBPyConnection, name: str, description: str,
                      created_at: str | None = None, simulator: str | None = None) -> str:
    """The experiment called ``name`` (added with who, where and which gpudb if missing);
    returns its id. ``created_at``: a timestamp as text, default now. ``simulator``: the
    other simulator whose logs its runs come from (``experiment.simulator``), for a new one."""
    from gpudb.version import __version__

    eid = experiment_id(name)
    user, host = whoami()
    con.execute(
        "INSERT INTO experiment (experiment_id, name, description, created_at, created_by, "
        "host, gpudb_version, simulator) SELECT ?, ?, ?, "
        "coalesce(CAST(? AS TIMESTAMPTZ), now()), ?, ?, ?, ? "
        "WHERE NOT EXISTS (SELECT 1 FROM experiment WHERE experiment_id = ?)",
        [eid, name, description, created_at, user, host, __version__, simulator, eid])
    return eid


def write_run(con: duckdb.DuckDBPyConnection, result: SimResult, eid: str) -> bool:
    """Store one simulated run and its intervals in one transaction (all or nothing), in
    experiment ``eid``; False when the run was stored already."""
    run = pa.Table.from_pylist([dict(result.run, experiment_id=eid)])
    with atomic(con):
        return insert_runs(con, run, result.intervals).runs == 1


def run_engine(con: duckdb.DuckDBPyConnection, requested: str | None) -> str:
    """The engine new simulated runs of this database use: ``requested``, or (None) the engine
    of the runs it holds, else 'reference'. A database holds one engine's runs, so that no
    view or query pairs runs of two engines (their run_ids differ, their rows would not):
    GpudbError when ``requested`` is not the one it holds."""
    held = stored_engines(con)
    if requested is None:
        return held[0] if held else "reference"
    if held and held != [requested]:
        raise GpudbError(
            f"this database holds the {held[0]} engine's simulated runs; the {requested} "
            "engine's go in a database of their own, so that no query pairs runs of two "
            f"engines (use another --db, or --engine {held[0]})")
    return requested


def measured_gpus(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The gpu_ids of the measured runs the database holds (``source = 'measured'``), in
    order."""
    return [r[0] for r in con.execute(
        "SELECT DISTINCT gpu_id FROM run WHERE source = 'measured' ORDER BY 1").fetchall()]
