"""``gpudb bench engine``: the sampled engine's runs against the reference engine's
(sim.bench.engine_comparison), as a table and a summary per setting (issue 42)."""

from __future__ import annotations

import statistics

from sim.bench import (
    ENERGY_TOLERANCE,
    ENGINE_SETTINGS,
    SHARE_TOLERANCE,
    TIME_TOLERANCE,
    engine_comparison,
)

# the tolerances a row is checked against, as the table's last column names them
_CHECKS = (("time", "time_ok"), ("energy", "energy_ok"), ("shares", "shares_ok"))


def _seed_ok(row: dict) -> bool:
    """Whether the row's run that differs most from the reference's run of its seed is within
    the time tolerance (or the reference's spread over the seeds, as for the means)."""
    return abs(row["seed_time_diff"]) <= max(TIME_TOLERANCE, row["reference_spread"])


def engine_lines(suite: str = "default", kernels: list[str] | None = None,
                 seeds=(0,), jobs: int = 1, show_all: bool = True, progress=None,
                 settings=ENGINE_SETTINGS) -> list[str]:
    """The lines `gpudb bench engine` prints: one per kernel and setting (every one, or with
    ``show_all`` False those outside a tolerance), then one summary per setting and overall.
    ``seed_diff_%``: the seed whose run differs most from the reference's run of that seed
    (no tolerance of the issue's: those are on the means over the seeds)."""
    rows = engine_comparison(suite, kernels, settings, tuple(seeds), jobs=jobs,
                             progress=progress)
    lines = [f"{'gpu':7s} {'core_MHz':>8s} {'kernel':24s} {'ref_time_us':>11s} "
             f"{'time_diff_%':>11s} {'energy_diff_%':>13s} {'ref_spread_%':>12s} "
             f"{'ref_e_spread_%':>14s} {'seed_diff_%':>11s} "
             f"{'share_diff':>10s} {'share':16s} {'speed_x':>7s}  within"]
    for r in rows:
        if not show_all and all(r[ok] for _, ok in _CHECKS):
            continue
        within = "+".join(name for name, ok in _CHECKS if r[ok]) or "none"
        lines.append(
            f"{r['gpu']:7s} {r['core_mhz']:8.0f} {r['kernel'][:24]:24s} "
            f"{r['reference_time_ns'] / 1e3:11.1f} {100 * r['time_diff']:+11.2f} "
            f"{100 * r['energy_diff']:+13.2f} {100 * r['reference_spread']:12.2f} "
            f"{100 * r['reference_energy_spread']:14.2f} {100 * r['seed_time_diff']:+11.2f} "
            f"{r['share_diff']:+10.3f} {r['share_worst']:16s} "
            f"{r['reference_s'] / r['engine_s']:7.2f}  {within}"
            + ("" if r["instructions_equal"] else "  INSTRUCTIONS DIFFER"))
    groups: dict = {}
    for r in rows:
        groups.setdefault(f"{r['gpu']} {r['core_mhz']:.0f}/{r['mem_mhz']:.0f} MHz", []).append(r)
    groups["all settings"] = rows
    lines.append("")
    for name, rs in groups.items():
        speed = sum(r["reference_s"] for r in rs) / sum(r["engine_s"] for r in rs)
        lines.append(
            f"{name}: time within {TIME_TOLERANCE:.0%} (or the seeds' spread) "
            f"{sum(r['time_ok'] for r in rs)} of {len(rs)}, energy within "
            f"{ENERGY_TOLERANCE:.0%} {sum(r['energy_ok'] for r in rs)} of {len(rs)} (or the "
            f"seeds' energy spread: {sum(r['energy_seed_ok'] for r in rs)}), "
            f"interval shares within {SHARE_TOLERANCE} {sum(r['shares_ok'] for r in rs)} of "
            f"{len(rs)}; "
            f"single runs' time within {TIME_TOLERANCE:.0%} (or the seeds' spread) of the "
            f"same seed's in {sum(_seed_ok(r) for r in rs)} of {len(rs)} (largest "
            f"{100 * max((r['seed_time_diff'] for r in rs), key=abs):+.2f}%); "
            f"median time difference {100 * statistics.median(r['time_diff'] for r in rs):+.2f}%"
            f" (median |difference| "
            f"{100 * statistics.median(abs(r['time_diff']) for r in rs):.2f}%); reference "
            f"seconds / sampled seconds {speed:.2f}"
            f"; instruction totals equal in {sum(r['instructions_equal'] for r in rs)} of "
            f"{len(rs)}")
    return lines
