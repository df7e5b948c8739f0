"""`gpudb plot`: the stored analyses as figures, drawn with matplotlib (extra ``gpudb-dvfs[plot]``).

Every module of this package may declare ``PLOTS``, a tuple of :class:`Plot`: the stored
queries a plot reads (run through gpudb.store.queries, like `gpudb query`), the paper figure it
reproduces, a ``data`` function turning the queries' rows into the arrays handed to matplotlib
(what the tests check against the rows), and a ``draw`` function. The registry below finds them
all, as gpudb.predictors finds predictors, so a new plot is one new module.

Figures are drawn on a bare :class:`matplotlib.figure.Figure` with the Agg canvas (no pyplot,
no screen, no global state) and written to a temporary file that replaces ``--out`` only when
complete: a failed plot leaves no half-written file.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import duckdb

from gpudb.store.db import GpudbError

SUFFIXES = (".png", ".svg", ".pdf")
INSTALL_HINT = "plotting needs matplotlib: pip install 'gpudb-dvfs[plot]'"


@dataclass(frozen=True)
class Result:
    """One stored query's result: its column names and rows, as `gpudb query` prints them."""
    columns: list[str]
    rows: list[tuple]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


@dataclass(frozen=True)
class Plot:
    """One figure. queries: the stored queries it reads, the first the one it is named after;
    each gets the -p parameters it declares. options: the plot's own parameters (not the
    queries'), each with its allowed values, the first the default. defaults: query
    parameters the plot sets unless given (e.g. the papers' unguarded controller). data(results
    by query name, parameters) returns what draw(figure, data) draws. empty: what to run when
    the query has no rows."""
    name: str
    queries: tuple[str, ...]
    figure: str
    description: str
    data: Callable[[Mapping[str, Result], Mapping[str, str | None]], Any]
    draw: Callable[[Any, Any], None]
    empty: str
    options: dict[str, tuple[str, ...]] = field(default_factory=dict)
    defaults: dict[str, str] = field(default_factory=dict)
    size: tuple[float, float] = (9.0, 5.0)


def _modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        yield importlib.import_module(f"{__name__}.{info.name}")


@cache
def registry() -> dict[str, Plot]:
    """Every plot, by name, in module order."""
    plots: dict[str, Plot] = {}
    for module in _modules():
        for plot in getattr(module, "PLOTS", ()):
            if plot.name in plots:
                raise RuntimeError(f"two plots are named {plot.name!r}")
            plots[plot.name] = plot
    return plots


def get(name: str) -> Plot:
    plots = registry()
    if name not in plots:
        raise GpudbError(f"no plot {name!r} (see `gpudb plot --list`)")
    return plots[name]


def parameters(plot: Plot) -> list[str]:
    """The -p names a plot takes: its options, then its queries' parameters."""
    from gpudb.store.queries import get_query

    names = list(plot.options)
    for query in plot.queries:
        names += [p for p in get_query(query).params if p not in names]
    return names


def fetch_results(con: duckdb.DuckDBPyConnection, plot: Plot,
                  params: Mapping[str, str]) -> tuple[dict[str, Result], dict[str, str | None]]:
    """Run the plot's queries with the parameters they take; returns the results and every
    parameter's value (options and defaults filled in). An unknown parameter or a value
    outside an option's choices is an error naming what is allowed."""
    from gpudb.present.output import printable
    from gpudb.store.queries import get_query, resolve_names, run_query

    accepted = parameters(plot)
    unknown = [p for p in params if p not in accepted]
    if unknown:
        raise GpudbError(f"plot {plot.name} has no parameter {unknown[0]!r} "
                         f"(parameters: {', '.join(accepted) or 'none'})")
    values: dict[str, str | None] = {**plot.defaults, **resolve_names(con, params)}
    for option, allowed in plot.options.items():
        value = values.setdefault(option, allowed[0])
        if value not in allowed:
            raise GpudbError(f"plot {plot.name}: {option} must be one of "
                             f"{', '.join(allowed)} (got {value!r})")
    results = {}
    for name in plot.queries:
        query = get_query(name)
        columns, rows = run_query(con, name, {p: values[p] for p in query.params if p in values})
        # every string from the file drawn escaped (gpudb.present.output.printable), like a table
        # cell
        results[name] = Result(columns, [tuple(printable(v) if isinstance(v, str) else v
                                               for v in row) for row in rows])
    if not results[plot.queries[0]].rows:
        raise GpudbError(f"plot {plot.name}: query {plot.queries[0]} has no rows with these "
                         f"parameters ({plot.empty})")
    return results, values


def matplotlib_canvas():
    """matplotlib's Figure and Agg canvas, or the one line saying how to install them."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise GpudbError(INSTALL_HINT) from None
    return Figure, FigureCanvasAgg


def check_out(out: str | os.PathLike) -> Path:
    """The output path, if its suffix names a format and its folder exists."""
    path = Path(out)
    if path.suffix.lower() not in SUFFIXES:
        raise GpudbError(f"--out must end in {', '.join(SUFFIXES)} (the format): {out}")
    if not path.parent.is_dir():
        raise GpudbError(f"no folder {path.parent} for --out {out}")
    return path


def render(con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, str],
           out: str | os.PathLike, dpi: int = 100) -> Path:
    """Draw plot ``name`` from the database into ``out`` (.png, .svg or .pdf); returns it."""
    path = check_out(out)
    plot = get(name)
    Figure, FigureCanvasAgg = matplotlib_canvas()  # before the queries: a missing extra fails fast
    import matplotlib
    results, values = fetch_results(con, plot, params)
    data = plot.data(results, values)
    # kernel names, categories and policies come from the file: shown as the characters they
    # hold, so "$" starts no mathtext ("$\frac{$" would stop matplotlib); tick labels are
    # made while saving, so the setting holds until then
    with matplotlib.rc_context({"text.parse_math": False}):
        figure = Figure(figsize=plot.size, layout="constrained")
        FigureCanvasAgg(figure)
        plot.draw(figure, data)
        # beside the target (one file system, so the replace is atomic), with the usual mode
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
        try:
            figure.savefig(tmp, dpi=dpi, format=path.suffix[1:].lower())
            os.replace(tmp, path)
        except OSError as exc:  # a folder not writable, a full disk
            raise GpudbError(f"cannot write {path}: {exc.strerror or exc}") from None
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return path
