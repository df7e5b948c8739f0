"""Our figure against a paper's: the verdict rule of ``gpudb demo`` and ``gpudb evaluate``
('matches', 'above paper', 'below paper'), stated in their output."""

from __future__ import annotations

import math

# |ours - paper| within max(MATCH_POINTS, MATCH_SHARE x |paper|) reads as "matches": a paper's
# average over its own benchmarks is not a target to the decimal, and a verdict rule that
# moved with the figures would be no rule. Stated in the demo's output.
MATCH_POINTS = 1.0
MATCH_SHARE = 0.25


def verdict(ours: float | None, paper: float | None, half_width: float | None = None) -> str:
    """'matches', 'above paper' or 'below paper' (ours against the paper's figure, both in
    percent); '' when either is missing. ``half_width``: ours is a mean over seeds with the
    95% interval ours +- half_width, and a paper figure inside that interval matches too."""
    if ours is None or paper is None or math.isnan(ours):
        return ""
    ours, paper = float(ours), float(paper)   # a paper's figure in SQL may be a DECIMAL
    if abs(ours - paper) <= max(MATCH_POINTS, MATCH_SHARE * abs(paper)):
        return "matches"
    if half_width is not None and abs(ours - paper) <= half_width:
        return "matches"
    return "above paper" if ours > paper else "below paper"


def verdict_rule(seeds: int = 1) -> str:
    rule = (f"verdict: 'matches' when ours is within {MATCH_POINTS:g} point or "
            f"{MATCH_SHARE:.0%} of the paper's figure")
    if seeds > 1:
        rule += (f", or the paper's figure lies in the 95% interval of our mean over {seeds} "
                 "seeds")
    return rule + ", else above or below it"
