"""`gpudb plot`: the stored analyses as figures, drawn with matplotlib (extra ``gpudb-dvfs[plot]``).

Every module of this package may declare ``PLOTS``, a tuple of :class:`Plot`: the stored
queries a plot reads (run through gpudb.store.queries, like `gpudb query`), the paper figure it
reproduces, a ``data`` function turning the queries' rows into the arrays handed to matplotlib
(what the tests check against the rows), and a ``draw`` function. The registry below finds them
all, as gpudb.predictors finds predictors, so a new plot is one new module.

Figures are drawn on a bare :class:`matplotlib.figure.Figure` with the Agg canvas (no pyplot,
no screen, no global state) and written to a temporary file that replaces ``--out`` only when
complete: a failed plot leaves no half-written file.

A figure shows one GPU: clock grids of two GPUs never share an axis, so where the plot's rows
cover several GPUs and none was chosen (``-p gpu_id``, the CLI's ``--gpu``), drawing stops with
one line naming them. Titles are neutral (what is drawn, on which GPU); the paper figure a plot
reproduces and the command that drew it go into the file's metadata, and notes (an axis cut,
shortened names, means over different kernels) into a short caption under the axes.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import shlex
import tempfile
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import duckdb

from gpudb.store.db import GpudbError
from gpudb.store.names import unknown

SUFFIXES = (".png", ".svg", ".pdf")
FORMATS = tuple(s[1:] for s in SUFFIXES)
# the caption under the axes, points: small, as a paper's figure notes
CAPTION_FONTSIZE = 7.0
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
    # the default size (inches) for this data, where it grows with it (many kernels); None:
    # always ``size``. A size the user gives is kept as given.
    fit: Callable[[Any, tuple[float, float]], tuple[float, float]] | None = None


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
    """The plot named ``name``; an unknown name is one line suggesting the closest names."""
    plots = registry()
    if name not in plots:
        raise GpudbError(unknown("plot", name, list(plots), see="`gpudb plot --list`"))
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
    parameter's value (options and defaults filled in, and ``gpu_id`` the one GPU drawn). An
    unknown parameter, a value outside an option's choices, or rows of several GPUs with no
    ``gpu_id`` chosen is an error naming what is allowed."""
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

    def run(name: str) -> Result:
        query = get_query(name)
        columns, rows = run_query(con, name, {p: values[p] for p in query.params if p in values})
        # every string from the file drawn escaped (gpudb.present.output.printable), like a
        # table cell
        return Result(columns, [tuple(printable(v) if isinstance(v, str) else v for v in row)
                                for row in rows])

    if values.get("gpu_id") is None and "gpu_id" in accepted:
        values["gpu_id"] = one_gpu(con, plot, run)
    results = {name: run(name) for name in plot.queries}
    if not results[plot.queries[0]].rows:
        raise GpudbError(f"plot {plot.name}: query {plot.queries[0]} has no rows with these "
                         f"parameters ({plot.empty})")
    return results, values


def one_gpu(con: duckdb.DuckDBPyConnection, plot: Plot,
            run: Callable[[str], Result]) -> str | None:
    """The one GPU the plot's first query has rows of (its gpu_id column; None when it has
    none); a file of one GPU needs no query. Rows of several GPUs are a GpudbError naming
    them, since their clock grids and kernels would share one axis."""
    held = [r[0] for r in con.execute(
        "SELECT DISTINCT gpu_id FROM run ORDER BY gpu_id").fetchall()]
    if len(held) <= 1:
        return held[0] if held else None
    pooled = run(plot.queries[0])
    at = pooled.columns.index("gpu_id")  # every plot's first query leads with it
    found = sorted({row[at] for row in pooled.rows if row[at] is not None})
    if len(found) > 1:
        from gpudb.present.output import printable

        names = ", ".join(printable(g) for g in found)
        raise GpudbError(f"plot {plot.name}: this file has rows of {len(found)} GPUs for it "
                         f"({names}); draw one with --gpu GPU (e.g. --gpu {printable(found[0])})")
    return found[0] if found else None


def matplotlib_canvas():
    """matplotlib's Figure and Agg canvas, or the one line saying how to install them."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise GpudbError(INSTALL_HINT) from None
    return Figure, FigureCanvasAgg


def check_out(out: str | os.PathLike, fmt: str | None = None) -> Path:
    """The output path, if its suffix names a format (or ``fmt`` does, for a path without a
    suffix, which gets it) and its folder exists."""
    path = Path(out)
    if fmt is not None and not path.suffix:
        path = path.with_name(f"{path.name}.{fmt}")
    if path.suffix.lower() not in SUFFIXES:
        raise GpudbError(f"--out must end in {', '.join(SUFFIXES)} (the format): {out}")
    if fmt is not None and path.suffix.lower() != f".{fmt}":
        raise GpudbError(f"--format {fmt} but --out {out} ends in {path.suffix}: "
                         "give one format")
    if not path.parent.is_dir():
        raise GpudbError(f"no folder {path.parent} for --out {out}")
    return path


def command_line(name: str, params: Mapping[str, str], out: str | os.PathLike | None = None
                 ) -> str:
    """The `gpudb plot` line that draws a figure again (escaped: kernel names come from
    files), for the file's metadata. ``out`` by its file name only: a figure shared with a
    paper's co-authors carries no folder of the machine that drew it, and the same command
    run elsewhere writes the same bytes."""
    from gpudb.present.output import printable

    words = [f"gpudb plot {name}",
             *(f"-p {k} {shlex.quote(str(v))}" for k, v in params.items())]
    if out is not None:
        words.append(f"--out {shlex.quote(Path(out).name)}")
    return printable(" ".join(words))


def add_note(figure, note: str) -> None:
    """A note for the figure's caption (an axis cut, shortened names): kept with the figure
    and written under the axes when it is saved, never in a title."""
    if note:
        figure._gpudb_notes = [*getattr(figure, "_gpudb_notes", []), note]


def notes(figure) -> list[str]:
    """The notes the plot's drawing left for the caption, in order."""
    return list(getattr(figure, "_gpudb_notes", []))


@dataclass(frozen=True)
class Drawn:
    """A figure drawn and not yet saved: the matplotlib Figure, the plot's data (what the
    axes show), every parameter's value, its title and caption."""
    figure: Any
    data: Any
    values: dict[str, str | None]
    title: str
    caption: str


def draw(con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, str],
         size: tuple[float, float] | None = None, title: str | None = None) -> Drawn:
    """Draw plot ``name`` from the database on a new Figure: ``size`` (width, height, inches;
    default the plot's, grown with its data where the plot says so), ``title`` instead of the
    plot's own. Labels that would overlap are thinned (every second tick label, cell values
    left out), with a note in the caption."""
    plot = get(name)
    Figure, FigureCanvasAgg = matplotlib_canvas()  # before the queries: a missing extra fails fast
    import matplotlib
    results, values = fetch_results(con, plot, params)
    data = plot.data(results, values)
    if size is None:
        size = plot.fit(data, plot.size) if plot.fit else plot.size
    # kernel names, categories and policies come from the file: shown as the characters they
    # hold, so "$" starts no mathtext ("$\frac{$" would stop matplotlib); tick labels are
    # made while saving, so the setting holds until then (render keeps it)
    with matplotlib.rc_context({"text.parse_math": False}):
        figure = Figure(figsize=size, layout="constrained")
        FigureCanvasAgg(figure)
        plot.draw(figure, data)
        shown = _set_title(figure, title)
        unclutter(figure)
        caption = "; ".join(notes(figure))
        if caption:
            _caption(figure, caption)
    return Drawn(figure, data, values, shown, caption)


def _set_title(figure, title: str | None) -> str:
    """The figure's title: ``title`` where given (the one titled panel's, else above every
    panel), else the plot's own (its suptitle, or its one titled panel's)."""
    titled = [ax for ax in figure.axes if ax.get_title()]
    if title is not None:
        if len(titled) == 1 and not figure.get_suptitle():
            titled[0].set_title(title)
        else:
            figure.suptitle(title)
        return title
    if figure.get_suptitle():
        return figure.get_suptitle()
    return titled[0].get_title() if titled else ""


def _label_geometry(labels, renderer) -> list[tuple[float, float, float]]:
    """Each tick label's (left, right, tick position) in pixels, in the labels' order: measured
    once, so that trying every k-th label (unclutter) measures no label again (2,700 kernels'
    labels were measured 27,000 times, 11 s of a 44-s figure)."""
    return [(box.x0, box.x1, t.get_transform().transform(t.get_position())[0])
            for t, box in ((t, t.get_window_extent(renderer)) for t in labels)]


def _overlapping(labels, geometry) -> bool:
    """Whether neighbouring tick labels overlap: level ones when their boxes meet, rotated
    ones when the ticks lie closer, across the slant, than a line of their text is high.
    ``geometry``: the labels' (_label_geometry)."""
    import math

    angle = math.radians(labels[0].get_rotation() % 180)
    if abs(math.sin(angle)) < 0.1:
        boxes = sorted((left, right) for left, right, _ in geometry)
        return any(a[1] > b[0] for a, b in zip(boxes, boxes[1:], strict=False))
    line = labels[0].get_fontsize() * 1.2 * labels[0].figure.dpi / 72
    # where each tick is (a rotated label's box moves with its length)
    ticks = sorted(tick for *_, tick in geometry)
    return any((b - a) * abs(math.sin(angle)) < line
               for a, b in zip(ticks, ticks[1:], strict=False))


def unclutter(figure) -> None:
    """Laid out once at the figure's size: x tick labels that overlap are thinned to every
    k-th, and cell values (texts with gid 'cell') wider than their cell are left out, each
    with a note; nothing overlapping is left."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for ax in figure.axes:
        labels = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        geometry = _label_geometry(labels, renderer) if len(labels) > 2 else []
        if geometry and _overlapping(labels, geometry):
            for step in range(2, len(labels)):
                if not _overlapping(labels[::step], geometry[::step]):
                    break
            for k, label in enumerate(labels):
                label.set_visible(k % step == 0)
            add_note(figure, f"every {_ordinal(step)} x label shown")
        cells = [t for t in ax.texts if t.get_gid() == "cell"]
        if cells:
            width = ax.get_window_extent(renderer).width / max(len(ax.get_xticks()), 1)
            if any(t.get_window_extent(renderer).width > 0.95 * width for t in cells):
                for t in cells:
                    t.remove()
                add_note(figure, "cell values left out (too narrow at this size)")


def _ordinal(n: int) -> str:
    return {2: "second", 3: "third"}.get(n, f"{n}th")


def _caption(figure, text: str) -> None:
    """``text`` under the axes, wrapped to the figure's width, in small print; the
    constrained layout makes room for it (a figure's supxlabel)."""
    chars = max(int(figure.get_figwidth() * 72 / (CAPTION_FONTSIZE * 0.55)), 40)
    figure.supxlabel("\n".join(textwrap.wrap(text, chars)), fontsize=CAPTION_FONTSIZE,
                     x=0.01, ha="left", color="0.25")


def metadata(fmt: str, plot: Plot, title: str, caption: str, command: str) -> dict[str, str]:
    """The file's metadata (matplotlib's savefig keys per format): the title, the command
    that drew it, the paper figure it reproduces and the caption, and gpudb as creator."""
    from gpudb.version import __version__

    about = f"{plot.figure}: {plot.description}"
    creator = f"gpudb {__version__} (gpudb plot {plot.name})"
    if fmt == "pdf":
        return {"Title": title, "Subject": command, "Keywords": about, "Creator": creator}
    if fmt == "svg":
        return {"Title": title, "Description": f"{command}\n{caption}".strip(),
                "Source": about, "Creator": creator}
    return {"Title": title, "Description": command, "Source": about, "Comment": caption,
            "Software": creator}


def render(con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, str],
           out: str | os.PathLike, dpi: int = 100, size: tuple[float, float] | None = None,
           title: str | None = None, fmt: str | None = None,
           command: str | None = None) -> Path:
    """Draw plot ``name`` from the database into ``out`` (.png, .svg or .pdf, or ``fmt`` for
    a path without a suffix) at ``dpi`` (dots per inch, PNG), ``size`` (inches) and
    ``title``; returns the path written. ``command``: the line that drew it, for the file's
    metadata (default: the `gpudb plot` line of these parameters)."""
    path = check_out(out, fmt)
    drawn = draw(con, name, params, size=size, title=title)  # the install hint first
    import matplotlib

    fmt = path.suffix[1:].lower()
    command = command or command_line(name, params, out)
    # beside the target (one file system, so the replace is atomic), a new file of our own
    # (mkstemp: never through a link planted at a predictable name), with the usual mode
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.",
                                   suffix=f".tmp{path.suffix}")
        with os.fdopen(fd, "wb") as handle, matplotlib.rc_context({"text.parse_math": False}):
            drawn.figure.savefig(handle, dpi=dpi, format=fmt,
                                 metadata=metadata(fmt, get(name), drawn.title, drawn.caption,
                                                   command))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:  # a folder not writable, a full disk
        raise GpudbError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.remove(tmp)
    return path
