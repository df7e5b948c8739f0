"""The sanity summary printed after every ingest: per GPU, what the files just ingested hold
(clock grid, time, power and energy ranges) and flags for values a GPU cannot have, so that a
unit declared wrongly in a mapping shows at once rather than as energies 1000x too small in
every later table.

The flags (each a line saying what was seen and what it suggests):

- board power outside 5-1,000 W (power = energy / time of each run): no GPU board draws less
  than a few watts running a kernel, none more than about a kilowatt; a time or energy unit
  off by 1000 puts power far outside;
- a median run time under 10 µs: a kernel launch alone costs a few microseconds, and an
  average power needs a run far longer than that to be measured, so a file of such runs
  almost always holds seconds declared as milliseconds (or ms as µs);
- energy that disagrees with time x power, where a run has both (its energy or power as a
  run column and the other as a metric whose name says power or energy): a median ratio
  outside 0.5-2;
- time that grows with the core clock for most kernels (time at the highest core clock longer
  than at the lowest by more than 5%, at one memory clock and SM count): the column mapped as
  time holds something else (a rate, a frequency).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

POWER_RANGE_W = (5.0, 1000.0)
SHORTEST_MEDIAN_NS = 10_000.0      # 10 µs
RATIO_RANGE = (0.5, 2.0)           # energy / (time x power) that still agrees
WRONG_WAY_SLACK = 1.05             # time at the highest core clock / at the lowest


@dataclass
class GpuSummary:
    """What one GPU's newly ingested runs hold. Units in the names; ranges (min, max), None
    where no run has the value."""

    gpu_id: str
    runs: int
    kernels: int
    core_mhz: list[float]
    mem_mhz: list[float]
    time_ns: tuple[float, float]
    power_w: tuple[float, float] | None
    energy_j: tuple[float, float] | None
    flags: list[str] = field(default_factory=list)

    def line(self) -> str:
        """'tiny: 8 runs, 2 kernels; core 500-1000 MHz (2 clocks), ...' (one line)."""
        parts = [f"{self.gpu_id}: {self.runs} runs, {self.kernels} kernels",
                 f"core {_clocks(self.core_mhz)}", f"memory {_clocks(self.mem_mhz)}",
                 f"time {_span(self.time_ns, _time)}"]
        if self.power_w is not None:
            parts.append(f"power {_span(self.power_w, lambda w: f'{w:.3g} W')}")
        if self.energy_j is not None:
            parts.append(f"energy {_span(self.energy_j, _energy)}")
        return parts[0] + "; " + ", ".join(parts[1:])


def _clocks(values: list[float]) -> str:
    shown = [f"{v:g}" for v in values]
    if len(values) <= 4:
        return ", ".join(shown) + " MHz"
    return f"{shown[0]}-{shown[-1]} MHz ({len(values)} clocks)"


def _span(pair: tuple[float, float], fmt) -> str:
    low, high = pair
    return fmt(low) if low == high else f"{fmt(low)} - {fmt(high)}"


def _time(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def _energy(j: float) -> str:
    for unit, scale in (("J", 1.0), ("mJ", 1e-3), ("µJ", 1e-6)):
        if j >= scale:
            return f"{j / scale:.3g} {unit}"
    return f"{j * 1e9:.3g} nJ"


def summarize(con: duckdb.DuckDBPyConnection, file_sha256s: list[str]) -> list[GpuSummary]:
    """Per GPU, the runs the files of ``file_sha256s`` added (a run's ``input_hash``), in
    gpu_id order, with their flags."""
    if not file_sha256s:
        return []
    runs = ("(SELECT *, energy_j / (time_ns * 1e-9) AS power_w FROM run "
            "WHERE list_contains($shas, input_hash))")
    rows = con.execute(
        f"SELECT gpu_id, count(*), count(DISTINCT kernel_id), "
        "list_sort(list_distinct(list(core_mhz))), list_sort(list_distinct(list(mem_mhz))), "
        "min(time_ns), max(time_ns), min(power_w), max(power_w), min(energy_j), max(energy_j), "
        f"count(*) FILTER (WHERE power_w < {POWER_RANGE_W[0]} OR power_w > {POWER_RANGE_W[1]}),"
        " median(time_ns) "
        f"FROM {runs} GROUP BY gpu_id ORDER BY gpu_id", {"shas": file_sha256s}).fetchall()
    out = []
    for (gpu, n, kernels, core, mem, t0, t1, p0, p1, e0, e1, off_power, median_ns) in rows:
        s = GpuSummary(gpu, n, kernels, core, mem, (t0, t1),
                       None if p0 is None else (p0, p1), None if e0 is None else (e0, e1))
        if off_power:
            s.flags.append(f"{off_power} of {n} runs draw a power outside "
                           f"{POWER_RANGE_W[0]:g}-{POWER_RANGE_W[1]:,.0f} W (energy / time: "
                           f"{_span(s.power_w, lambda w: f'{w:.3g} W')}): is the time or "
                           "energy unit of the mapping right?")
        if median_ns < SHORTEST_MEDIAN_NS:
            s.flags.append(f"median run time {_time(median_ns)}, shorter than a kernel launch "
                           "and far too short to measure power over: a time unit 1000x too "
                           "small (ms declared for a seconds column)?")
        s.flags += _disagreements(con, runs, gpu, file_sha256s)
        wrong, groups = _wrong_way(con, runs, gpu, file_sha256s)
        if groups and wrong * 2 > groups:
            s.flags.append(f"time grows with the core clock for {wrong} of {groups} kernels "
                           f"(by more than {WRONG_WAY_SLACK - 1:.0%} from the lowest to the "
                           "highest core clock): is the column mapped as time a time?")
        out.append(s)
    return out


def _disagreements(con, runs: str, gpu: str, shas: list[str]) -> list[str]:
    """Flags for metrics named as a power (W, or mW where the name says so) or an energy (J,
    mJ, uJ) whose median ratio to the run's own is outside RATIO_RANGE."""
    # the run's value the metric should equal, and the metric's scale to W or J
    expected = ("CASE WHEN m.kind = 'power' THEN r.power_w ELSE r.energy_j END")
    rows = con.execute(f"""
        WITH m AS (
            SELECT run_id, name, value,
                   CASE WHEN lower(name) LIKE '%power%' THEN 'power' ELSE 'energy' END AS kind,
                   CASE WHEN regexp_matches(lower(name), '(^|[^a-z])(mw|mj)([^a-z]|$)') THEN 1e-3
                        WHEN regexp_matches(lower(name), '(^|[^a-z])(uw|uj|µj)([^a-z]|$)')
                        THEN 1e-6 ELSE 1.0 END AS scale
            FROM metric WHERE idx IS NULL AND (lower(name) LIKE '%power%'
                                               OR lower(name) LIKE '%energy%')
                -- an average or total, not a bound, an extreme or a flag about it
                AND NOT regexp_matches(lower(name),
                                       'max|min|peak|limit|cap|idle|from|effic|per_'))
        SELECT m.name, count(*), median({expected} / (m.value * m.scale))
        FROM m JOIN {runs} AS r USING (run_id)
        WHERE r.gpu_id = $gpu AND m.value > 0 AND {expected} > 0
        GROUP BY m.name ORDER BY m.name""", {"shas": shas, "gpu": gpu}).fetchall()
    return [f"the run's {'power' if 'power' in name.lower() else 'energy'} is {ratio:.3g}x "
            f"metric {name!r} (median over {n} runs): is the time, power or energy unit of "
            "the mapping right?"
            for name, n, ratio in rows if not RATIO_RANGE[0] <= ratio <= RATIO_RANGE[1]]


def _wrong_way(con, runs: str, gpu: str, shas: list[str]) -> tuple[int, int]:
    """(kernels whose time at the highest core clock exceeds that at the lowest by more than
    WRONG_WAY_SLACK, kernels measured at two core clocks or more), each kernel at its first
    memory clock and SM count with several core clocks."""
    return con.execute(f"""
        WITH g AS (
            SELECT kernel_id, mem_mhz, n_sm, arg_min(time_ns, core_mhz) AS slow_clock_ns,
                   arg_max(time_ns, core_mhz) AS fast_clock_ns
            FROM {runs} WHERE gpu_id = $gpu AND policy = 'fixed'
            GROUP BY ALL HAVING count(DISTINCT core_mhz) > 1),
        k AS (SELECT kernel_id, arg_min(fast_clock_ns > {WRONG_WAY_SLACK} * slow_clock_ns,
                                        (mem_mhz, n_sm)) AS wrong
              FROM g GROUP BY kernel_id)
        SELECT count(*) FILTER (WHERE wrong), count(*) FROM k""",
        {"shas": shas, "gpu": gpu}).fetchall()[0]
