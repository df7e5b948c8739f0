"""What gpudb.api's Database returns beside tables (Info, Ingested), the listings that need
no file (the stored queries, the plots), and the argument handling its methods share."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import duckdb

from gpudb.store.db import GpudbError
from gpudb.store.result import Table


def queries() -> Table:
    """The stored queries, as ``gpudb query --list``: query, parameters (comma-separated),
    description."""
    from gpudb.store.queries import stored_queries

    return Table(["query", "parameters", "description"],
                 [(q.name, ", ".join(q.params), q.description)
                  for q in stored_queries().values()])


def plots() -> Table:
    """The plots, as ``gpudb plot --list``: plot, the paper figure it reproduces, its queries,
    its parameters and description."""
    from gpudb.present import plots as registry

    return Table(["plot", "paper figure", "queries", "parameters", "description"],
                 [(p.name, p.figure, ", ".join(p.queries), ", ".join(registry.parameters(p)),
                   p.description) for p in registry.registry().values()])


@dataclass
class Info:
    """What ``gpudb info`` shows: the file's versions (``meta``: schema_version, written_by,
    gpudb_version, gpudb_schema_version), rows per table, the experiments, the materialized
    predictions' state, the file's own (not gpudb's) objects and the orphans per table."""
    meta: dict
    tables: Table
    experiments: Table
    materialized: str
    foreign: list[tuple[str, str]]
    orphans: dict[str, int]


class Ingested(list):
    """One report per file ingested (gpudb.sources' FileReport or LogReport), with the
    ``summaries`` of the runs they added per GPU (ranges and flags, gpudb.sources.summary)
    and, for logs, a ``note`` (None or one line about the inputs' sizes)."""

    def __init__(self, reports=(), summaries=(), note: str | None = None):
        super().__init__(reports)
        self.summaries = list(summaries)
        self.note = note


EXPERIMENTS = (
    "SELECT e.name AS experiment, count(r.run_id) AS runs, "
    "count(DISTINCT r.kernel_id) AS kernels, string_agg(DISTINCT r.gpu_id, ', ') AS gpus, "
    "min(r.source) AS source, CAST(e.created_at AS DATE) AS created "
    "FROM experiment AS e LEFT JOIN run AS r USING (experiment_id) "
    "GROUP BY e.name, e.created_at ORDER BY e.created_at, e.name")


def fetch(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], list[tuple]]:
    """(column names, rows) of ``sql``."""
    result = con.execute(sql)
    return [d[0] for d in result.description], result.fetchall()


def path_list(files) -> list:
    return [files] if isinstance(files, (str, os.PathLike)) else list(files)


def name_list(value: str | Iterable[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def ingest_summaries(con: duckdb.DuckDBPyConnection, reports) -> list:
    """The sanity summary of the runs the reports' files added (gpudb.sources.summary)."""
    from gpudb.sources.summary import summarize

    return summarize(con, [r.sha256 for r in reports if not r.skipped_reason and r.runs_added])


def text_params(params: dict[str, Any]) -> dict[str, str | None]:
    """Parameters as text, as -p gives them (the queries cast them); None stays NULL."""
    return {k: None if v is None else str(v) for k, v in params.items()}


@contextlib.contextmanager
def sql_errors():
    """DuckDB's error in ad hoc SQL as gpudb sql says it: one line."""
    from gpudb.store.base import error_line

    try:
        yield
    except duckdb.Error as exc:
        raise GpudbError(f"SQL error: {error_line(exc)}") from None


def plot_params(gpu: str | None, params: dict) -> dict[str, str]:
    """A plot's parameters as text (as -p gives them), ``gpu`` as gpu_id."""
    values = {k: str(v) for k, v in params.items() if v is not None}
    if gpu is not None:
        if values.get("gpu_id", gpu) != gpu:
            raise GpudbError(f"gpu {gpu} and gpu_id {values['gpu_id']}: give one")
        values["gpu_id"] = gpu
    return values
