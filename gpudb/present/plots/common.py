"""What the plots share: a fixed colour per predictor, NULL as NaN, grouped bars and heat
maps drawn the way the papers draw theirs."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpudb.predictors import names as predictor_names

# the offline policies of paper 004 section 4.3, drawn as bounds rather than as controllers
BOUNDS = ("dynamic_optimal", "static_optimal", "perfect_memoryless")
BOUND_STYLE = {"dynamic_optimal": "-", "static_optimal": "--", "perfect_memoryless": ":"}


def on_gpu(gpu_id: str | None, what: str) -> str:
    """A neutral title: what is drawn, on which GPU (no paper figure, no parameter: those go
    into the file's metadata and the caption)."""
    return f"{gpu_id}: {what}" if gpu_id else what[:1].upper() + what[1:]


def number(value) -> float:
    """A query's value as a float for matplotlib: NULL is NaN (a gap, not a zero)."""
    return math.nan if value is None else float(value)


def ordered(found: Iterable[str]) -> list[str]:
    """Predictor names in the registry's table order (the papers' models first), then any
    other name (e.g. 'oracle') alphabetically."""
    found = set(found)
    known = [n for n in predictor_names() if n in found]
    return known + sorted(found - set(known))


def colour(name: str):
    """One colour per predictor in every plot (tab20, by registry order); None for a name
    that is not a predictor."""
    from matplotlib import colormaps

    everything = [*predictor_names(), "oracle"]
    if name not in everything:
        return None
    return colormaps["tab20"](everything.index(name) % 20)


def grouped_bars(ax, groups: Sequence[str], series: dict[str, Sequence[float]],
                 errors: dict[str, tuple[Sequence[float], Sequence[float]]] | None = None,
                 ) -> dict[str, list[float]]:
    """One cluster of bars per group, one bar per series (coloured by predictor where the
    series is one, else by its place); returns each series' bar centres, for markers drawn on
    top. errors: per series, (low, high) values drawn as a range around the bar."""
    width = 0.8 / max(len(series), 1)
    centres = {}
    for k, (name, values) in enumerate(series.items()):
        xs = [g + (k - (len(series) - 1) / 2) * width for g in range(len(groups))]
        centres[name] = xs
        ax.bar(xs, values, width, label=name, color=colour(name) or f"C{k % 10}")
        if errors and name in errors:
            low, high = errors[name]
            ax.vlines(xs, low, high, color="0.2", linewidth=0.8, alpha=0.6)
    many = len(groups) > 6
    ax.set_xticks(range(len(groups)), groups, rotation=45 if many else 0,
                  ha="right" if many else "center", fontsize=8 if many else None,
                  rotation_mode="anchor" if many else "default")
    ax.axhline(0, color="0.3", linewidth=0.6)
    ax.grid(axis="y", alpha=0.3)
    return centres


def heatmap(ax, xs: Sequence[float], ys: Sequence[float], values: Sequence[Sequence[float]],
            xlabel: str, ylabel: str, label: str, cmap: str = "viridis") -> None:
    """A grid of cells (values[i][j] at ys[i], xs[j]) with each cell's value written in it,
    as the heat maps of papers 002 (figures 10-11) and 003 (figures 13-14)."""
    from matplotlib import colormaps

    palette = colormaps[cmap].with_extremes(bad="0.88")  # a setting without runs: light grey
    image = ax.imshow(values, origin="lower", aspect="auto", cmap=palette)
    ax.set_xticks(range(len(xs)), [f"{x:g}" for x in xs])
    ax.set_yticks(range(len(ys)), [f"{y:g}" for y in ys])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    finite = [v for row in values for v in row if not math.isnan(v)]
    middle = (min(finite) + max(finite)) / 2 if finite else 0.0
    if len(xs) * len(ys) <= 100:  # a number per cell while it stays readable
        for i, row in enumerate(values):
            for j, v in enumerate(row):
                if not math.isnan(v):
                    # gid 'cell': left out when the cells are too narrow for it (plots.unclutter)
                    ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=8,
                            color="white" if v < middle else "black", gid="cell")
    ax.figure.colorbar(image, ax=ax, label=label)


def grid(records: Sequence[dict], x: str, y: str, value: str
         ) -> tuple[list[float], list[float], list[list[float]]]:
    """Rows as a heat map: the sorted x and y values and values[i][j] at (ys[i], xs[j]);
    NaN where no row has that pair."""
    xs = sorted({r[x] for r in records})
    ys = sorted({r[y] for r in records})
    at = {(r[y], r[x]): number(r[value]) for r in records}
    return xs, ys, [[at.get((yv, xv), math.nan) for xv in xs] for yv in ys]


# Tukey's far-out fences: a value more than FENCE_IQR interquartile ranges outside the middle
# half of the values is an outlier, which the axis leaves out (and the figure writes beside it)
# so the paper's markers and the useful predictors' few percent stay readable.
FENCE_IQR = 3.0


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default) of sorted values."""
    at = q * (len(sorted_values) - 1)
    low = math.floor(at)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (at - low)


def robust_limits(values: Iterable[float], include: Iterable[float] = (0.0,),
                  pad: float = 0.08) -> tuple[float, float]:
    """Axis limits that hold every finite value inside Tukey's far-out fences (quartiles -+
    FENCE_IQR x IQR) and every ``include`` value (zero, a bound, a paper's figure), padded by
    ``pad`` of the span. Values outside are cut: draw them with :func:`mark_clipped`."""
    finite = sorted(v for v in values if v is not None and math.isfinite(v))
    kept = [v for v in include if v is not None and math.isfinite(v)]
    if finite:
        q1, q3 = _quantile(finite, 0.25), _quantile(finite, 0.75)
        spread = FENCE_IQR * (q3 - q1)
        kept += [v for v in finite if q1 - spread <= v <= q3 + spread]
    if not kept:
        return -1.0, 1.0
    low, high = min(kept), max(kept)
    margin = pad * (high - low) or 1.0
    return low - margin, high + margin


def mark_clipped(ax, xs: Sequence[float], values: Sequence[float], fmt: str = "{:.0f}",
                 fontsize: float = 7) -> list[tuple[float, float]]:
    """For the values beyond the axis' y limits: at each x and edge a triangle pointing out
    and the farthest value written beside it (preceded by 'n:' where n values lie beyond
    there). Labels too close to stay apart are laid out when the figure is drawn
    (:class:`_EdgeLabels`): two or three neighbours are staggered, a longer run of them
    becomes one label at its middle, 'n: farthest' over the run. Returns every (x, value)
    pair beyond."""
    low, high = ax.get_ylim()
    beyond = [(x, v) for x, v in zip(xs, values, strict=True)
              if math.isfinite(v) and not low <= v <= high]
    groups: dict[tuple[float, bool], list[float]] = {}
    for x, v in beyond:
        groups.setdefault((x, v > high), []).append(v)
    labels = _EdgeLabels.of(ax, fmt, fontsize)
    for (x, above), vs in groups.items():
        edge, marker = (high, "^") if above else (low, "v")
        ax.plot(x, edge, marker, color="k", markersize=5, clip_on=False, zorder=5)
        labels.add(x, above, vs)
    return beyond


class _EdgeLabels:
    """The cut values written at an axis' edges, placed when the figure is drawn, in pixels:
    only then does the layout (constrained, a legend beside) fix how far apart the bars are.
    Along each edge, labels closer than a label's width form a run: a run of one is written
    at its x; of two to MAX_STAGGER whose every other label clears the next but one, staggered
    (every second label moved inwards past the first's length); a longer or tighter run is one
    label at its middle, 'n: farthest' counting the run's values. Nothing overlaps."""

    MAX_STAGGER = 4
    GAP_PX = 2.0

    def __init__(self, ax, fmt: str, fontsize: float):
        from matplotlib.artist import Artist

        self.ax, self.fmt, self.fontsize = ax, fmt, fontsize
        self.marks: list[tuple[float, bool, list[float]]] = []
        owner = self

        class Drawn(Artist):
            def draw(self, renderer):
                for text in owner._texts(renderer):
                    text.draw(renderer)

        self.artist = Drawn()
        self.artist.set_zorder(5)
        ax.add_artist(self.artist)

    @classmethod
    def of(cls, ax, fmt: str, fontsize: float) -> _EdgeLabels:
        """The axis' labels (one set per axis, so that every series' are laid out together)."""
        labels = getattr(ax, "_gpudb_edge_labels", None)
        if labels is None:
            labels = cls(ax, fmt, fontsize)
            ax._gpudb_edge_labels = labels
        return labels

    def add(self, x: float, above: bool, values: list[float]) -> None:
        self.marks.append((x, above, values))

    def _label(self, values: list[float], above: bool) -> str:
        farthest = max(values) if above else min(values)
        return (self.fmt.format(farthest) if len(values) == 1
                else f"{len(values)}: {self.fmt.format(farthest)}")

    def _text(self, renderer, x_px: float, above: bool, inset_px: float, label: str):
        from matplotlib.text import Text
        from matplotlib.transforms import IdentityTransform

        box = self.ax.get_window_extent(renderer)
        y_px = box.y1 - inset_px if above else box.y0 + inset_px
        text = Text(x_px, y_px, label, ha="center", va="top" if above else "bottom",
                    rotation=90, fontsize=self.fontsize, clip_on=False,
                    transform=IdentityTransform(),
                    bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none",
                          "alpha": 0.8})
        text.set_figure(self.ax.figure)
        return text

    def _texts(self, renderer) -> list:
        """The labels' Text artists in display coordinates for this drawing."""
        inset = self.ax.get_window_extent(renderer).height * 0.03
        to_px = self.ax.transData.transform
        out = []
        for above in (True, False):
            marks = sorted(((to_px((x, 0))[0], vs) for x, a, vs in self.marks if a == above),
                           key=lambda m: m[0])
            if not marks:
                continue
            texts = [self._text(renderer, px, above, inset, self._label(vs, above))
                     for px, vs in marks]
            extents = [t.get_window_extent(renderer) for t in texts]
            width = max(e.width for e in extents) + self.GAP_PX
            runs, run = [], [0]
            for i in range(1, len(marks)):
                if marks[i][0] - marks[i - 1][0] < width:
                    run.append(i)
                else:
                    runs.append(run)
                    run = [i]
            runs.append(run)
            for run in runs:
                xs = [marks[i][0] for i in run]
                if len(run) == 1:
                    out.append(texts[run[0]])
                elif (len(run) <= self.MAX_STAGGER
                      and all(b - a >= width for a, b in zip(xs, xs[2:], strict=False))):
                    # every second label moved inwards past the longest of the first ones
                    step = max(extents[i].height for i in run[::2]) + self.GAP_PX
                    for k, i in enumerate(run):
                        out.append(self._text(renderer, xs[k], above,
                                              inset + (step if k % 2 else 0),
                                              texts[i].get_text()))
                else:
                    values = [v for i in run for v in marks[i][1]]
                    out.append(self._text(renderer, (xs[0] + xs[-1]) / 2, above, inset,
                                          f"{len(values)}: " + self.fmt.format(
                                              max(values) if above else min(values))))
        return out


def clip_note(ax, marked: Sequence, what: str = "values") -> str:
    """A caption note saying the axis is cut and how the cut values are drawn; '' when
    nothing was cut."""
    if not marked:
        return ""
    low, high = ax.get_ylim()
    return (f"axis cut at {low:.3g} to {high:.3g}: {len(marked)} {what} beyond it, each a "
            "triangle at the edge with the farthest value")


# a kernel label on an axis: at most this many characters (the rest in the figure's key)
LABEL_CHARS = 18
ELLIPSIS = "\u2026"


@dataclass(frozen=True)
class Labels:
    """Axis labels for names (kernel ids): ``labels`` in the names' order, the ``prefix``
    every name shared and that the labels leave out ('' if none), and ``key``: each label
    that shows less than the name after the prefix, with that name."""
    labels: list[str]
    prefix: str
    key: dict[str, str]


def short_labels(names: Sequence[str], width: int = LABEL_CHARS) -> Labels:
    """Short, distinct labels for kernel ids ('suite/app:kernel'): the suite every id shares
    dropped, then the app where the apps tell the kernels apart, then a name longer than
    ``width`` cut in the middle ('BlackSch…lesGPU', its start and end being the distinctive
    parts of the names seen). Where cutting would make two labels alike, they keep their
    names."""
    names = list(names)
    heads = {n.split("/", 1)[0] for n in names}
    prefix = (f"{heads.pop()}/" if names and len(heads) == 1
              and all("/" in n for n in names) else "")
    rest = [n[len(prefix):] for n in names]
    apps = [r.split(":", 1)[0] for r in rest]
    labels = apps if len(set(apps)) == len(set(rest)) else list(rest)

    def cut(label: str) -> str:
        if len(label) <= width:
            return label
        tail = width // 3
        return label[:width - 1 - tail] + ELLIPSIS + label[-tail:]

    cuts = [cut(label) for label in labels]
    seen: dict[str, int] = {}
    for c in cuts:
        seen[c] = seen.get(c, 0) + 1
    labels = [c if seen[c] == 1 else r for c, r in zip(cuts, rest, strict=True)]
    key = {label: r for label, r in zip(labels, rest, strict=True) if label != r}
    return Labels(labels, prefix, key)


# the key's print, points, and the share of the figure's width it may take
KEY_FONTSIZE = 6.0
KEY_WIDTH_SHARE = 0.4


def name_key(ax, labels: Labels, what: str = "kernels") -> str:
    """Draw ``labels.key`` (label: full name) as a small legend outside the axes on the right,
    below the axis' other legend, where it fits the figure (its lines within the height, its
    longest within KEY_WIDTH_SHARE of the width); returns the caption note: the prefix left
    out, and where the key did not fit, that the names were shortened."""
    from matplotlib.lines import Line2D

    notes = [f"{what}: {labels.prefix}<label>"] if labels.prefix else []
    entries = [f"{s}: {f}" for s, f in labels.key.items()]
    width_in, height_in = ax.figure.get_size_inches()
    line_in = KEY_FONTSIZE * 1.3 / 72
    fits = ((len(entries) + 1) * line_in <= 0.85 * height_in
            and max((len(e) for e in entries), default=0) * KEY_FONTSIZE * 0.55 / 72
            <= KEY_WIDTH_SHARE * width_in)
    if entries and fits:
        first = ax.get_legend()
        ax.legend([Line2D([], [], linestyle="none")] * len(entries), entries,
                  fontsize=KEY_FONTSIZE, loc="lower left", bbox_to_anchor=(1.0, 0.0),
                  handlelength=0, handletextpad=0, title=f"{what} (shortened)",
                  title_fontsize=KEY_FONTSIZE, frameon=False, alignment="left")
        if first is not None:
            ax.add_artist(first)  # the predictors' legend stays beside the key
    elif entries:
        notes.append(f"{len(entries)} {what} names shortened (a larger --size shows their "
                     "key; gpudb query lists them)")
    return "; ".join(notes)
