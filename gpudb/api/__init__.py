"""gpudb's Python API: ``gpudb.open(path)`` and what a notebook or a script does with the file.

A :class:`Database` holds one DuckDB connection opened by :func:`gpudb.store.db.connect`, as
every command of the CLI is (locked down, refusing a hostile or foreign file with the same
GpudbError), and each method calls the function the command calls, so the CLI is this API
plus options and formatting. Tables come back as :class:`gpudb.store.result.Table` (``.df()``,
``.pl()``, ``.arrow()``), ad hoc SQL as a DuckDB relation. sqlite-utils' ``Database`` is the
model: a small facade over one connection, nothing cached beyond it.

Keyword arguments are named as the CLI's options (units in the names: ``core_mhz``); a
parameter of a stored query takes any value and passes it as text, as ``gpudb query -p``
does. A writable open holds DuckDB's lock on the file until :meth:`Database.close` (or the end
of a ``with`` block): open a file another process writes with ``read_only=True``.
"""

from __future__ import annotations

import contextlib
import functools
import html
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import duckdb

from gpudb.api.common import (  # noqa: F401  (queries, plots, Info, Ingested: the API's too)
    EXPERIMENTS,
    Info,
    Ingested,
    fetch,
    ingest_summaries,
    name_list,
    path_list,
    plot_params,
    plots,
    queries,
    sql_errors,
    text_params,
)
from gpudb.store import db
from gpudb.store.base import refuse_read_only
from gpudb.store.db import GpudbError
from gpudb.store.result import Table, Tables


def open(path: str | os.PathLike | None = None, read_only: bool = False) -> Database:  # noqa: A001
    """Open (creating if needed, unless ``read_only``) the gpudb database at ``path``
    (None: $GPUDB_DB or ./gpudb.duckdb): ``with gpudb.open("lab.duckdb") as db: ...``."""
    return Database(path, read_only=read_only)


def _interruptible(method: Callable) -> Callable:
    """The method run with Ctrl-C (a notebook's "interrupt the kernel", SIGINT) interrupting
    the statement its connections run (:func:`gpudb.store.db.interrupt_on_signals`, as every
    CLI command runs): with the main thread blocked in DuckDB, Python's own handler waits
    for the statement to end, and DuckDB's own check of the signal is late on some operators
    (a cross join of two 1e6-row ranges ran 275 s past it; docs/DESIGN.md section 7).
    Where DuckDB's own check of the signal comes first, it takes the KeyboardInterrupt and
    raises RuntimeError('Query interrupted'): turned back into the KeyboardInterrupt, as the
    CLI does (:func:`gpudb.store.db.interrupted`; the interrupt test failed so once in five
    full runs of the suite)."""

    @functools.wraps(method)
    def run(self: Database, *args, **kwargs):
        if self._watched:
            return method(self, *args, **kwargs)
        self._watched = True
        try:
            with db.interrupt_on_signals(*([self.con] if self.con is not None else [])):
                return method(self, *args, **kwargs)
        except RuntimeError as exc:
            if db.interrupted(exc):
                raise KeyboardInterrupt from None
            raise
        finally:
            self._watched = False

    return run


class Database:
    """A gpudb database file opened for Python; see the module's docstring."""

    def __init__(self, path: str | os.PathLike | None = None, read_only: bool = False):
        self.path = str(path) if path is not None else db.default_path()
        self.read_only = read_only
        self._watched = False   # inside an _interruptible method (they call each other)
        self.con: duckdb.DuckDBPyConnection | None = db.connect(self.path, read_only=read_only)

    # -- the connection ---------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (and release the file's lock); later calls fail."""
        if self.con is not None:
            self.con.close()
            self.con = None

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _open(self) -> duckdb.DuckDBPyConnection:
        if self.con is None:
            raise GpudbError(f"{self.path} is closed: gpudb.open it again")
        return self.con

    @contextlib.contextmanager
    def _released(self):
        """The connection closed for a workflow that opens the file itself (read-only where
        it only reads: DuckDB takes one read_only setting per file and process), and opened
        again after it; a relation from :meth:`sql` made before does not outlive it."""
        self._open()
        self.close()
        try:
            yield
        finally:
            self.con = db.connect(self.path, read_only=self.read_only)

    def _writable(self, what: str) -> duckdb.DuckDBPyConnection:
        refuse_read_only(self.read_only, what)
        return self._open()

    # -- reading ----------------------------------------------------------------------------

    @_interruptible
    def query(self, name: str, params: dict[str, Any] | None = None, **more: Any) -> Table:
        """Stored query ``name`` (``gpudb query --list``; :meth:`queries`) with its parameters
        (``gpu_id="v100"``, or ``params={...}``; a kernel_id may be the bare kernel name). An
        unknown query, parameter, GPU, kernel, suite or predictor is a GpudbError naming the
        close matches, as ``gpudb query`` says it."""
        from gpudb.store.queries import get_query, resolve_names, run_query

        get_query(name)  # an unknown name before the parameters are looked at
        con = self._open()
        values = resolve_names(con, text_params({**(params or {}), **more}))
        return Table(*run_query(con, name, values))

    @_interruptible
    def sql(self, text: str,
            params: Sequence | dict | None = None) -> duckdb.DuckDBPyRelation | None:
        """Ad hoc SQL as for ``gpudb sql``: gpudb's SQL functions and views, the stored queries
        it calls as table macros (``FROM best_setting(gpu_id := 'v100')``); ``params`` fills
        ``?`` or ``$name`` placeholders. Returns DuckDB's relation of the last statement
        (``.df()``, ``.pl()``, ``.to_arrow_table()``, ``.fetchall()``; DuckDB 2's ``.arrow()``
        is a stream holding the connection until read whole). A SELECT's relation runs when
        fetched, outside gpudb's Ctrl-C watcher: :meth:`sql_table` fetches under it."""
        from gpudb.store.queries import register_macros

        con = self._open()
        with sql_errors():
            register_macros(con, text)
            statements = con.extract_statements(text)
            if any(s.type == duckdb.StatementType.TRANSACTION for s in statements):
                raise GpudbError("the SQL runs in one transaction of gpudb's (all statements or "
                                 "none): leave out BEGIN, COMMIT and ROLLBACK")
            db.doing("running the SQL given")
            if self.read_only or (len(statements) == 1
                                  and statements[0].type == duckdb.StatementType.SELECT):
                return con.sql(text, params=params) if params else con.sql(text)
            # Statements that may write run in one transaction, checked before it commits as
            # the trust model checks a teammate's file: a failure rolls back every statement
            # (a DELETE before a failing SELECT stayed done), and nothing is committed that
            # would make gpudb refuse the file (CREATE MACRO abs locked gpudb out of it).
            # The last statement's rows are read inside it (issue 41 item 3).
            with db.atomic(con):
                last = con.sql(text, params=params) if params else con.sql(text)
                rows = None if last is None else last.to_arrow_table()
                self._refuse_unusable(con)
            return None if rows is None else con.from_arrow(rows)

    def _refuse_unusable(self, con: duckdb.DuckDBPyConnection) -> None:
        """Raise (so the transaction rolls back) when the file, as the SQL left it, is one
        gpudb's connect would refuse."""
        from gpudb.store import trust

        target = str(self.path)
        try:
            trust.refuse_shadowing(con, target)
            trust.refuse_views_for_tables(con, target)
            trust.refuse_triggers(con, target)
            applied = db.applied_migrations(con, target)
            if applied:
                trust.refuse_altered_tables(con, target, applied)
        except GpudbError as exc:
            reason = str(exc).split("; refusing", 1)[0]
            raise GpudbError(f"rolled back, nothing written: {reason}, and gpudb would refuse "
                             "the file") from None

    @_interruptible
    def sql_table(self, text: str, params: Sequence | dict | None = None) -> Table:
        """:meth:`sql` fetched whole, as ``gpudb sql`` prints it (a TIMESTAMPTZ as text)."""
        from gpudb.store.queries import relation_rows

        relation = self.sql(text, params)
        with sql_errors():
            return Table(*relation_rows(relation))

    def queries(self) -> Table:
        """The stored queries (:func:`queries`)."""
        return queries()

    def plots(self) -> Table:
        """The plots (:func:`plots`)."""
        return plots()

    @_interruptible
    def tables(self) -> Table:
        """Rows per gpudb table (``gpudb info``'s table)."""
        from gpudb.store.transfer import TABLES

        con = self._open()
        rows = []
        for t in TABLES:
            db.doing(f"counting the rows of table {t}")
            rows.append((t, db.first_row(con.execute(f"SELECT count(*) FROM {t}"))[0]))
        return Table(["table", "rows"], rows)

    @_interruptible
    def info(self) -> Info:
        """Everything ``gpudb info`` shows (:class:`Info`)."""
        from gpudb.store.foreign import foreign_objects
        from gpudb.store.materialize import status

        con = self._open()
        meta = self.versions()
        counts = self.tables()
        db.doing("listing the experiments")
        experiments = Table(*fetch(con, EXPERIMENTS))
        materialized = status(con)
        foreign = foreign_objects(con)
        return Info(meta, counts, experiments, materialized, foreign, self.check())

    @_interruptible
    def versions(self) -> dict:
        """The file's schema version and the gpudb that last wrote it, and this gpudb's:
        schema_version, written_by, gpudb_version, gpudb_schema_version."""
        return db.file_info(self._open())

    @_interruptible
    def check(self) -> dict[str, int]:
        """Rows per table that refer to runs the file no longer holds (``gpudb check``;
        empty: none). ``delete(orphans=True)`` deletes them."""
        from gpudb.store.delete import orphans

        db.doing("looking for rows whose runs are gone")
        return orphans(self._open())

    @_interruptible
    def gpus(self) -> Table:
        """Per GPU, its measured and simulated runs."""
        return Table(*fetch(self._open(),
                             "SELECT gpu_id, count(*) FILTER (WHERE source = 'measured') AS "
                             "measured, count(*) FILTER (WHERE source = 'sim') AS simulated "
                             "FROM run GROUP BY gpu_id ORDER BY gpu_id"))

    # -- bringing runs in -------------------------------------------------------------------

    @_interruptible
    def ingest(self, files: str | os.PathLike | Iterable[str | os.PathLike], mapping,
               experiment: str | None = None, suite: str | None = None, replace: bool = False,
               progress: Callable[[str], None] | None = None) -> Ingested:
        """Measured CSV/Parquet ``files`` through ``mapping`` (a mapping file's path, as
        fixtures/mappings/, or a loaded gpudb.sources.tabular.mapping.Mapping), all or nothing, as
        ``gpudb ingest``: one report per file and the summaries per GPU with their flags."""
        from gpudb.sources.tabular.ingest import ingest
        from gpudb.sources.tabular.mapping import Mapping, load_mapping

        con = self._writable("gpudb ingest")
        mapping = mapping if isinstance(mapping, Mapping) else load_mapping(mapping)
        reports = ingest(con, path_list(files), mapping, experiment, progress=progress,
                         suite=suite, replace=replace)
        return Ingested(reports, ingest_summaries(con, reports))

    @_interruptible
    def ingest_log(self, paths: str | os.PathLike | Iterable[str | os.PathLike],
                   power_report: str | os.PathLike | None = None,
                   experiment: str | None = None, gpu: str | None = None,
                   suite: str = "gpgpusim", read=None) -> Ingested:
        """GPGPU-Sim / Accel-Sim logs (files or folders of them), as ``gpudb ingest-log``;
        ``read``: gpudb.sources.gpgpusim.ingest.read_logs of the same paths, read already."""
        from gpudb.sources.gpgpusim.ingest import ingest_logs, size_note

        con = self._writable("gpudb ingest-log")
        reports = ingest_logs(con, path_list(paths), power_report, experiment, gpu, suite,
                              read=read)
        return Ingested(reports, ingest_summaries(con, reports), size_note(reports))

    @_interruptible
    def merge(self, source: str | os.PathLike):
        """The runs of another gpudb file or Parquet export that this one lacks, as ``gpudb
        merge`` (the source opened read-only and locked down, checked whole first); returns
        gpudb.store.transfer.MergeReport."""
        from gpudb.store.transfer import merge, same_file

        if same_file(source, self.path):
            raise GpudbError(f"cannot merge a database into itself: {source} is {self.path}")
        return merge(self._writable("gpudb merge"), source)

    @_interruptible
    def delete(self, experiment: str | Iterable[str] = (), ingest: str | Iterable[str] = (),
               gpu: str | Iterable[str] = (), kernel: str | Iterable[str] = (),
               orphans: bool = False, dry_run: bool = False) -> dict[str, int]:
        """Delete the runs selected (each option a name or several; given together a run
        matches each) with every row derived from them, or with ``orphans`` the rows whose
        runs are gone, as ``gpudb delete``; returns rows per table (``dry_run``: would be)."""
        from gpudb.store import delete as deleting

        sel = deleting.Selection(name_list(experiment), name_list(ingest), name_list(gpu),
                                 name_list(kernel), orphans)
        if sel.empty():
            raise GpudbError("say which runs: experiment, ingest, gpu, kernel or orphans")
        if orphans and (sel.experiments or sel.ingests or sel.gpus or sel.kernels):
            raise GpudbError("orphans selects no runs: give it alone")
        con = self._writable("gpudb delete")
        sel = deleting.resolve(con, sel)
        db.doing("finding the rows to delete")
        return deleting.planned(con, sel) if dry_run else deleting.delete(con, sel)

    @_interruptible
    def export(self, directory: str | os.PathLike) -> dict[str, int]:
        """Every table to ``directory``/<table>.parquet (a new folder); rows per table."""
        from gpudb.store.transfer import export

        return export(self._open(), directory)

    @_interruptible
    def materialize(self) -> int:
        """The prediction view into the plain table prediction_materialized; rows written."""
        from gpudb.store.materialize import materialize

        db.doing("materializing the predictions")
        return materialize(self._writable("gpudb materialize"))

    @_interruptible
    def sweep(self, gpu: str, suite: str = "default", kernels: list[str] | None = None,
              core_mhz: list[float] | None = None, mem_mhz: list[float] | None = None,
              sms: list[int] | None = None, ctas: list[int] | None = None,
              interval_instructions: int | None = None, seeds: int | list[int] = 0,
              jobs: int | None = None, scheduler: str | None = None,
              experiment: str | None = None,
              progress: Callable[[int, int, int], None] | None = None,
              engine: str | None = None) -> dict:
        """Simulate ``suite`` on ``gpu`` (a shipped name or a GPU TOML path) at every setting
        of the grid (default: every P-state) the file lacks, once per seed, as ``gpudb
        sweep`` (``jobs`` processes, default this machine's CPUs; ``scheduler`` a Dask
        one; ``engine`` 'reference' or 'sampled', default the file's, else the reference;
        a file holds one engine's runs). Returns {experiment_id, runs_added, runs_skipped,
        instructions, seconds}; Ctrl-C raises gpudb.simulate.runner.RunsInterrupted, the
        finished runs kept."""
        from gpudb.simulate.sweep import sweep

        self._writable("gpudb sweep")
        # the simulation's length is gpudb's, not the file's: outside a time bound
        with db.unbounded():
            return sweep(self.path, gpu, suite, kernels=kernels, core_mhz=core_mhz,
                         mem_mhz=mem_mhz, sms=sms, ctas=ctas,
                         interval_instructions=interval_instructions, seed=seeds,
                         jobs=jobs or os.cpu_count() or 1, experiment=experiment,
                         scheduler=scheduler, progress=progress, engine=engine)

    # -- evaluating (gpudb.workflows.evaluate) ----------------------------------------------

    @_interruptible
    def evaluate_accuracy(self, **options) -> Tables:
        """``gpudb evaluate accuracy``: each predictor's error on ``gpu`` (``suite``, ...:
        gpudb.workflows.evaluate.accuracy's options), paper 000 Tables 3-4's layout."""
        from gpudb.workflows import evaluate

        with self._released():
            return evaluate.accuracy(self.path, read_only=self.read_only, **options)

    @_interruptible
    def evaluate_control(self, **options) -> Tables:
        """``gpudb evaluate control``: the DVFS controllers' savings against the best static
        setting and the dynamic optimal (gpudb.workflows.evaluate.control's options)."""
        from gpudb.workflows import evaluate

        with self._released():
            return evaluate.control(self.path, read_only=self.read_only, **options)

    @_interruptible
    def evaluate_equalizer(self, **options) -> Tables:
        """``gpudb evaluate equalizer``: Equalizer's modes against the papers' (paper 001;
        gpudb.workflows.evaluate.equalizer's options)."""
        from gpudb.workflows import evaluate

        with self._released():
            return evaluate.equalizer(self.path, read_only=self.read_only, **options)

    # -- figures ----------------------------------------------------------------------------

    @_interruptible
    def plot(self, name: str, gpu: str | None = None, size: tuple[float, float] | None = None,
             title: str | None = None, params: dict[str, Any] | None = None, **more: Any):
        """The matplotlib Figure ``gpudb plot name`` draws (not saved: ``fig.savefig``), of
        one GPU (``gpu``; needed where the plot has rows of several); ``params`` are the
        plot's and its queries' (``gpudb plot --list``); ``size`` (width, height) inches."""
        from gpudb.present import plots

        return plots.draw(self._open(), name, plot_params(gpu, {**(params or {}), **more}),
                          size=size, title=title).figure

    @_interruptible
    def save_plot(self, name: str, out: str | os.PathLike, gpu: str | None = None,
                  dpi: int = 100, size: tuple[float, float] | None = None,
                  title: str | None = None, fmt: str | None = None,
                  params: dict[str, Any] | None = None, **more: Any) -> Path:
        """:meth:`plot` written to ``out`` (.png, .svg or .pdf) as ``gpudb plot --out`` writes
        it (metadata, atomic replace); returns the path."""
        from gpudb.present import plots

        plots.check_out(out, fmt)
        return plots.render(self._open(), name, plot_params(gpu, {**(params or {}), **more}),
                            out, dpi=dpi, size=size, title=title, fmt=fmt)

    @_interruptible
    def report(self, folder: str | os.PathLike) -> Path:
        """``gpudb report``: report.html in ``folder``, per GPU; returns its path."""
        from gpudb.present.report import build

        return build(self._open(), self.path, folder)

    # -- in a notebook ----------------------------------------------------------------------

    @_interruptible
    def __repr__(self) -> str:
        if self.con is None:
            return f"<gpudb.Database {self.path!r} (closed)>"
        gpus = "; ".join(f"{g} {m} measured, {s} simulated" for g, m, s in self.gpus().rows)
        tables = ", ".join(f"{t} {n}" for t, n in self.tables().rows if n)
        return (f"<gpudb.Database {self.path!r}{' read-only' if self.read_only else ''}: "
                f"runs: {gpus or 'none'}; rows: {tables or 'none'}>")

    @_interruptible
    def _repr_html_(self) -> str:
        head = (f"<p><b>gpudb database</b> <code>{html.escape(self.path)}</code>"
                f"{' (read-only)' if self.read_only else ''}</p>")
        if self.con is None:
            return head + "<p>closed</p>"
        gpus = self.gpus()
        return (head + (gpus._repr_html_() if gpus.rows else "<p>no runs yet</p>")
                + Table(["table", "rows"], [r for r in self.tables().rows if r[1]])._repr_html_())
