"""What the plots share: a fixed colour per predictor, NULL as NaN, grouped bars and heat
maps drawn the way the papers draw theirs."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from gpudb.predictors import names as predictor_names

# the offline policies of paper 004 section 4.3, drawn as bounds rather than as controllers
BOUNDS = ("dynamic_optimal", "static_optimal", "perfect_memoryless")
BOUND_STYLE = {"dynamic_optimal": "-", "static_optimal": "--", "perfect_memoryless": ":"}


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
    ax.set_xticks(range(len(groups)), groups, rotation=45 if len(groups) > 6 else 0,
                  ha="right" if len(groups) > 6 else "center")
    ax.axhline(0, color="0.3", linewidth=0.6)
    ax.grid(axis="y", alpha=0.3)
    return centres


def heatmap(ax, xs: Sequence[float], ys: Sequence[float], values: Sequence[Sequence[float]],
            xlabel: str, ylabel: str, label: str, cmap: str = "viridis") -> None:
    """A grid of cells (values[i][j] at ys[i], xs[j]) with each cell's value written in it,
    as the heat maps of papers 002 (figures 10-11) and 003 (figures 13-14)."""
    image = ax.imshow(values, origin="lower", aspect="auto", cmap=cmap)
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
                    ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=8,
                            color="white" if v < middle else "black")
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
    there). Returns every (x, value) pair beyond."""
    low, high = ax.get_ylim()
    beyond = [(x, v) for x, v in zip(xs, values, strict=True)
              if math.isfinite(v) and not low <= v <= high]
    groups: dict[tuple[float, bool], list[float]] = {}
    for x, v in beyond:
        groups.setdefault((x, v > high), []).append(v)
    for (x, above), vs in groups.items():
        edge, marker, va = (high, "^", "top") if above else (low, "v", "bottom")
        farthest = max(vs) if above else min(vs)
        ax.plot(x, edge, marker, color="k", markersize=5, clip_on=False, zorder=5)
        inset = (high - low) * 0.03 * (-1 if above else 1)
        text = fmt.format(farthest) if len(vs) == 1 else f"{len(vs)}: {fmt.format(farthest)}"
        ax.text(x, edge + inset, text, ha="center", va=va, fontsize=fontsize, rotation=90,
                zorder=5, bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none",
                                "alpha": 0.8})
    return beyond


def clip_note(ax, marked: Sequence, what: str = "values") -> str:
    """A line for the title saying the axis is cut and how the cut values are drawn; '' when
    nothing was cut."""
    if not marked:
        return ""
    low, high = ax.get_ylim()
    return (f"\naxis cut at {low:.3g} to {high:.3g}: {len(marked)} {what} beyond it, a triangle "
            "at the edge with the farthest value")
