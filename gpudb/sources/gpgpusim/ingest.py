"""Ingest of GPGPU-Sim 3.x / Accel-Sim logs (gpudb.sources.gpgpusim.log) as runs: one per kernel
launch.

Every log (and its power report) is read and checked before anything is written; the first
problem raises :class:`gpudb.sources.gpgpusim.log.LogError` naming the file (and line). All logs of
one call are then written in one transaction by the sources' writer (gpudb.sources.write):
all or nothing.

A launch becomes a run with ``source = 'sim'``, ``policy = 'fixed'``, in an experiment whose
``simulator`` column names the simulator (GPGPU-Sim's banner). The clocks:

- ``core_mhz`` = the first field of ``-gpgpu_clock_domains`` (the SM core clock): GPGPU-Sim
  counts ``gpu_sim_cycle`` in it, so ``time_ns = gpu_sim_cycle * 1000 / core_mhz``;
- ``mem_mhz`` = the fourth field (the DRAM clock, as GPGPU-Sim's option gives it);
- all four fields are also whole-run metrics ``clock_core_mhz``, ``clock_icnt_mhz``,
  ``clock_l2_mhz``, ``clock_dram_mhz``. A study that labels its settings by another clock
  (tue-es/rooflineDVFS labels them by the interconnect clock, twice the core field) finds
  its label in ``clock_icnt_mhz``.

``instructions`` = ``gpu_sim_insn`` (thread instructions); ``energy_j`` = GPUWattch's
``gpu_avg_power`` x ``time_ns``. Kernel: ``<suite>/<app>:<kernel_name>:<kernel_launch_uid>``, so
launch k of a program is one kernel at every setting (the work is the same) and two launches of
one kernel are two kernels. ``<app>`` is the program without the input-size suffix that
GPGPU-Sim's benchmark scripts append (``gesummv__SIZE1_1`` -> ``gesummv``); the suffix
(``SIZE1_1``) goes to the kernel's spec (``input_size``) and description. Where it is needed to
tell inputs apart (logs of one program at two input sizes in one call, or the database holding
the program at another size or under the suffixed name) the kernel keeps it
(:func:`app_names`). GPU: ``gpgpusim-<n>sm`` unless named; its P-states are the clocks seen.
``run_id`` is the MD5 of the launch as simulated (GPU, kernel, clocks, SM count, cycles,
instructions, power as written), so re-ingesting a log, or a copy of it, adds nothing.
Periodic statistics (``-gpgpu_runtime_stat``'s "cycles simulated" lines) become intervals,
cut where GPGPU-Sim printed them (wall-clock driven, not by work: ``interval_instructions`` is
NULL), the last one closing at the launch's end.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from gpudb.sources.gpgpusim.log import (
    Launch,
    LogError,
    PowerEntry,
    SimLog,
    is_sim_log,
    parse_log,
    parse_power_report,
    whole_count,
)
from gpudb.sources.write import Batch, FileRecord, Part, Report, file_sha256, write
from gpudb.store.db import first_row
from gpudb.store.runs import experiment_id

POWER_REPORT_PATTERNS = ("gpgpusim_power_report__*.log", "accelwattch_power_report*.log")
NO_REPORT = "none"  # ingest_file.mapping_sha256 of a log ingested without a power report
# the input-size suffix GPGPU-Sim's benchmark scripts give a program (gesummv__SIZE1_1)
_SIZE = re.compile(r"(?P<app>.+?)__(?P<size>SIZE\w*)")


@dataclass
class LogReport(Report):
    """What ingest-log did with one log (gpudb ingest-log prints it)."""

    power_report: str | None = None
    launches: int = 0
    intervals_added: int = 0
    # counter values read past a 32-bit wrap, and left out (a counter went down: reset)
    counters_unwrapped: int = 0
    counters_left_out: int = 0
    # the program's input-size suffix kept in its kernel names (see app_names), else None
    size_kept: str | None = None


def find_logs(paths: list[str | Path]) -> list[Path]:
    """The logs named: files as given, and under each directory (recursively) every file that
    starts like GPGPU-Sim/Accel-Sim output, power reports aside; in order, without repeats."""
    logs: list[Path] = []
    for item in map(Path, paths):
        if item.is_dir():
            found = sorted(p for p in item.rglob("*") if p.is_file()
                           and not any(p.match(pat) for pat in POWER_REPORT_PATTERNS)
                           and is_sim_log(p))
            if not found:
                raise LogError(f"{item}: no GPGPU-Sim or Accel-Sim log in this directory")
            logs += found
        elif item.exists() and not item.is_file():
            raise LogError(f"{item}: not a regular file")
        else:
            logs.append(item)
    return list(dict.fromkeys(logs))


def _power_report(log: SimLog, given: Path | None) -> Path | None:
    if given is not None:
        return given
    found = sorted({p for pat in POWER_REPORT_PATTERNS for p in log.path.parent.glob(pat)})
    if len(found) > 1:
        raise LogError(f"{log.path}: {len(found)} power reports beside it "
                       f"({', '.join(p.name for p in found)}); name one with --power-report")
    if not found:
        if log.power_enabled:
            raise LogError(f"{log.path}: GPUWattch was on (-power_simulation_enabled 1) but no "
                           "power report (gpgpusim_power_report__*.log) is beside the log; "
                           "name it with --power-report")
        return None
    return found[0]


def _match_power(log: SimLog, report: Path, entries: list[PowerEntry]) -> list[PowerEntry]:
    """The report's entry of each launch, in launch order; every launch needs one and every
    entry a launch (a report of another run, or a truncated log, shows here)."""
    by_key = {(e.kernel_name, e.uid): e for e in entries}
    for launch in log.launches:
        if (launch.kernel_name, launch.uid) not in by_key:
            raise LogError(f"{report}: no entry for launch {launch.uid} ({launch.kernel_name}) "
                           f"of {log.path}: the power report of another run, or truncated?")
    launched = {(lc.kernel_name, lc.uid) for lc in log.launches}
    for e in entries:
        if (e.kernel_name, e.uid) not in launched:
            raise LogError(f"{report}: has launch {e.uid} ({e.kernel_name}), which {log.path} "
                           "lacks: a truncated log, or the power report of another run?")
    return [by_key[(lc.kernel_name, lc.uid)] for lc in log.launches]


def _g(value: float) -> str:
    return format(value, ".12g")


@dataclass
class _Staged:
    log: SimLog
    report: LogReport
    sha256: str
    power_sha256: str
    runs: list[dict]
    intervals: list[dict]
    metrics: list[dict]
    kernels: list[dict]


def split_size(app: str) -> tuple[str, str | None]:
    """(program, input size): ``gesummv__SIZE1_1`` -> (``gesummv``, ``SIZE1_1``); a name
    without the suffix -> (name, None)."""
    m = _SIZE.fullmatch(app)
    return (m["app"], m["size"]) if m else (app, None)


def app_names(con: duckdb.DuckDBPyConnection, parsed: list[SimLog], suite: str
              ) -> dict[str, str]:
    """The name each log's program gets in kernel ids, by its full name (``log.app``).

    The size suffix is dropped where the program stays unambiguous without it; it is kept
    for every size of a program that this call has logs of at two or more input sizes, for
    a program the database holds at another input size (or without a size) under the bare
    name, and for a program the database already holds under the suffixed name (ingested
    before the suffix was dropped, so that a new setting joins the same kernel)."""
    sizes: dict[str, set[str | None]] = {}
    for log in parsed:
        app, size = split_size(log.app)
        sizes.setdefault(app, set()).add(size)
    names = {}
    for full in dict.fromkeys(log.app for log in parsed):
        app, size = split_size(full)
        if size is None:
            names[full] = full
            continue
        as_full, other = first_row(con.execute(
            "SELECT coalesce(bool_or(starts_with(kernel_id, $full)), false), "
            "coalesce(bool_or(starts_with(kernel_id, $bare) AND coalesce(json_extract_string("
            "spec, '$.input_size'), '') <> $size), false) FROM kernel "
            "WHERE starts_with(kernel_id, $full) OR starts_with(kernel_id, $bare)",
            {"full": f"{suite}/{full}:", "bare": f"{suite}/{app}:", "size": size}))
        names[full] = full if (len(sizes[app]) > 1 or as_full or other) else app
    return names


def size_note(reports: list[LogReport]) -> str | None:
    """One line naming the programs whose kernels kept their input-size suffix, or None
    (names from the logs: print it escaped, gpudb.present.output.printable)."""
    kept = sorted({r.size_kept for r in reports if r.size_kept})
    if not kept:
        return None
    return (f"kept the input-size suffix in the kernel names of {', '.join(kept)}: the "
            "program has logs (or stored kernels) of other input sizes, or is stored so")


def _stage(log: SimLog, power: list[PowerEntry] | None, gpu_id: str,
           suite: str, exp_id: str, sha: str, app: str) -> tuple[list[dict], list[dict],
                                                                 list[dict], list[dict]]:
    """Rows of one log's launches; `app` is the program's name in kernel ids (app_names)."""
    clocks = log.clocks
    size = split_size(log.app)[1]
    core, mem = clocks.core_mhz, clocks.dram_mhz
    runs, intervals, metrics, kernels = [], [], [], []
    for i, launch in enumerate(log.launches):
        name = f"{app}:{launch.kernel_name}:{launch.uid}"
        kernel_id = f"{suite}/{name}"
        entry = power[i] if power is not None else None
        time_ns = launch.cycles * 1000.0 / core
        run_id = hashlib.md5("|".join(
            ["sim", gpu_id, kernel_id, "fixed", _g(core), _g(mem), str(log.n_sm),
             str(launch.cycles), str(launch.instructions),
             entry.avg_power_text if entry else ""]).encode()).hexdigest()
        runs.append({
            "run_id": run_id, "experiment_id": exp_id, "source": "sim", "kernel_id": kernel_id,
            "gpu_id": gpu_id, "policy": "fixed", "core_mhz": core, "mem_mhz": mem,
            "n_sm": log.n_sm, "time_ns": time_ns,
            "energy_j": entry.avg_power_w * time_ns * 1e-9 if entry else None,
            "instructions": launch.instructions, "input_hash": sha,
            "_where": f"launch {launch.uid} ({launch.kernel_name}) of {log.path}"})
        kernels.append({
            "kernel_id": kernel_id, "name": name, "suite": suite,
            "description": f"launch {launch.uid} of {launch.kernel_name} in {log.app} "
                           + (f"(input size {size}, " if size else "(") + f"{log.simulator} log)",
            "spec": json.dumps({"app": log.app, "kernel_name": launch.kernel_name,
                                "kernel_launch_uid": launch.uid,
                                **({"input_size": size} if size else {})})})
        values = {"gpu_sim_cycle": launch.cycles, "gpu_sim_insn": launch.instructions,
                  "kernel_launch_uid": launch.uid, "clock_core_mhz": clocks.core_mhz,
                  "clock_icnt_mhz": clocks.icnt_mhz, "clock_l2_mhz": clocks.l2_mhz,
                  "clock_dram_mhz": clocks.dram_mhz, **launch.metrics}
        if entry is not None:
            values["gpu_avg_power_w"] = entry.avg_power_w
            if entry.max_power_w is not None:
                values["gpu_max_power_w"] = entry.max_power_w
            if entry.min_power_w is not None:
                values["gpu_min_power_w"] = entry.min_power_w
            for key, value in entry.average.items():
                # components (ending in P) are W; the rest are activity counts per sample
                values[f"{key}_w" if key.endswith("P") else key] = value
        metrics += [{"run_id": run_id, "name": k, "value": float(v)} for k, v in values.items()]
        intervals += _intervals(launch, run_id, core, mem)
    return runs, intervals, metrics, kernels


def _check_finite(runs: list[dict], intervals: list[dict], metrics: list[dict]) -> None:
    """Every derived quantity finite: time = cycles / clock and energy = power x time
    overflow to inf from finite inputs (a 1e-300 MHz clock, a 1e308 W power), which the
    database would store and merge then refuse."""
    where = {run["run_id"]: run["_where"] for run in runs}
    for run in runs:
        for key in ("time_ns", "energy_j"):
            if run[key] is not None and not math.isfinite(run[key]):
                raise LogError(f"{run['_where']}: {key} = {run[key]} (from the clocks, "
                               "cycles and power) is not a finite number")
    for row in intervals:
        for key in ("start_ns", "time_ns"):
            if not math.isfinite(row[key]):
                raise LogError(f"{where[row['run_id']]}: interval {row['idx']}: {key} = "
                               f"{row[key]} is not a finite number")
    for row in metrics:
        if not math.isfinite(row["value"]):
            raise LogError(f"{where[row['run_id']]}: {row['name']} = {row['value']} (the "
                           "launch's own, from the running totals) is not a finite number")


def _intervals(launch: Launch, run_id: str, core: float, mem: float) -> list[dict]:
    """Interval rows between the launch's periodic samples, the last closing at its end;
    none for a launch without samples."""
    if not launch.samples:
        return []
    rows: list[dict] = []
    start = (0, 0)
    for end in [*launch.samples, (launch.cycles, launch.instructions)]:
        if end[0] == start[0]:
            continue  # a sample at the launch's start or end: no time between
        rows.append({"run_id": run_id, "idx": len(rows), "core_mhz": core, "mem_mhz": mem,
                     "start_ns": start[0] * 1000.0 / core,
                     "time_ns": (end[0] - start[0]) * 1000.0 / core, "switch_ns": 0.0,
                     "cycles": float(end[0] - start[0]), "instructions": end[1] - start[1]})
        start = end
    return rows


@dataclass
class LogsRead:
    """Every log of a call parsed, with its power report's path and entries (None: none),
    before any database is opened (:func:`read_logs`)."""
    logs: list[Path]
    parsed: list[SimLog]
    simulators: list[str]
    power: list[tuple[Path | None, list[PowerEntry] | None]]


def read_logs(paths: list[str | Path], power_report: str | Path | None = None) -> LogsRead:
    """Find, read and check the logs and their power reports (:func:`ingest_logs`'
    arguments). Touches no database: the CLI reads first, so a log that is refused, or a
    command killed while it reads, leaves no new database file behind."""
    logs = find_logs(paths)
    if power_report is not None and len(logs) != 1:
        raise LogError(f"--power-report names the report of one log; {len(logs)} logs given")
    parsed = [parse_log(p) for p in logs]
    simulators = sorted({log.simulator for log in parsed})
    if len(simulators) > 1:
        raise LogError(f"the logs come from {len(simulators)} simulators "
                       f"({'; '.join(simulators)}): ingest each into an experiment of its own")
    power = []
    for log in parsed:
        report_path = _power_report(log, Path(power_report) if power_report else None)
        power.append((report_path, None if report_path is None else
                      _match_power(log, report_path, parse_power_report(report_path))))
    return LogsRead(logs, parsed, simulators, power)


def ingest_logs(con: duckdb.DuckDBPyConnection, paths: list[str | Path],
                power_report: str | Path | None = None, experiment: str | None = None,
                gpu_id: str | None = None, suite: str = "gpgpusim",
                read: LogsRead | None = None) -> list[LogReport]:
    """Read and check every log (files, or directories searched for logs) and its power
    report, then store every launch as a run in one transaction (or nothing).

    power_report: the GPUWattch/AccelWattch report of the one log given (default: the
    ``gpgpusim_power_report__*.log`` beside each log; required when the log says power
    simulation was on). experiment: its name (default: the directory's name when one
    directory is given, else the first log's file stem).
    gpu_id: default ``gpgpusim-<SMs>sm``. Logs already ingested (same SHA-256) are skipped.
    read: what :func:`read_logs` returned for these paths (default: read them here).
    """
    read = read or read_logs(paths, power_report)
    logs, parsed, simulators = read.logs, read.parsed, read.simulators
    # a directory of several programs' logs is one study: named after it, not its first log
    one_dir = len(paths) == 1 and Path(paths[0]).is_dir()
    exp_name = experiment or (Path(paths[0]).resolve().name if one_dir else logs[0].stem)
    exp_id = experiment_id(exp_name)
    stored = first_row(con.execute("SELECT simulator, (SELECT count(*) FROM run WHERE "
                                   "experiment_id = e.experiment_id) FROM experiment AS e "
                                   "WHERE experiment_id = ?", [exp_id]))
    if stored is not None and stored[0] != simulators[0]:
        what = (f"runs of {stored[0]}" if stored[0] else
                "runs of gpudb's simulator or measured data" if stored[1] else "no simulator")
        raise LogError(f"experiment {exp_name!r} holds {what}, not {simulators[0]}: choose "
                       "another --experiment")
    gpus = {log.n_sm for log in parsed}
    if gpu_id is not None and len(gpus) > 1:
        raise LogError(f"--gpu {gpu_id}: the logs simulate GPUs of {sorted(gpus)} SMs")
    apps = app_names(con, parsed, suite)
    staged: list[_Staged] = []
    seen: dict[str, Path] = {}
    settings: dict[tuple, tuple[str, str]] = {}
    reports: list[LogReport] = []
    for log, (report_path, entries) in zip(parsed, read.power, strict=True):
        report = LogReport(str(log.path), launches=len(log.launches),
                           counters_unwrapped=sum(len(lc.unwrapped) for lc in log.launches),
                           counters_left_out=sum(len(lc.left_out) for lc in log.launches))
        reports.append(report)
        sha = report.sha256 = file_sha256(log.path)
        if report_path is not None:
            report.power_report = str(report_path)
        before = first_row(con.execute("SELECT CAST(ingested_at AS DATE) FROM ingest_file "
                                       "WHERE file_sha256 = ?", [sha]))
        if before or sha in seen:
            report.skipped_reason = (f"already ingested on {before[0]}" if before
                                     else f"same content as {seen[sha]}")
            continue
        seen[sha] = log.path
        if split_size(apps[log.app])[1]:
            report.size_kept = split_size(log.app)[0]
        gid = gpu_id or f"gpgpusim-{log.n_sm}sm"
        runs, intervals, metrics, kernels = _stage(log, entries, gid, suite, exp_id, sha,
                                                   apps[log.app])
        _check_finite(runs, intervals, metrics)
        for run in runs:
            key = (run["gpu_id"], run["kernel_id"], run["core_mhz"], run["mem_mhz"])
            first_id, first_where = settings.setdefault(key, (run["run_id"], run["_where"]))
            if first_id != run["run_id"]:
                raise LogError(f"{run['_where']} and {first_where} are the same kernel at "
                               "the same setting with different results: ingest them into "
                               "experiments of their own, or use --suite to tell them apart")
        power_sha = file_sha256(report_path) if report_path is not None else NO_REPORT
        staged.append(_Staged(log, report, sha, power_sha, runs, intervals, metrics, kernels))
    if staged:
        _check_stored_gpus(con, staged, gpu_id)
        now = first_row(con.execute("SELECT CAST(now() AS VARCHAR)"))[0]
        added = write(con, Batch(
            exp_name, f"{simulators[0]} logs ingested with gpudb ingest-log",
            [_part(stage, gpu_id) for stage in staged], simulator=simulators[0], now=now))
        for stage, done in zip(staged, added, strict=True):
            stage.report.record(done, len(stage.runs))
            stage.report.intervals_added = done.intervals
    return reports


def _table(rows: list[dict], drop: tuple[str, ...] = ("_where",)) -> pa.Table:
    return pa.Table.from_pylist([{k: v for k, v in r.items() if k not in drop} for r in rows])


def _check_stored_gpus(con: duckdb.DuckDBPyConnection, staged: list[_Staged],
                       gpu_id: str | None) -> None:
    """A GPU the database holds under a log's gpu_id must have the log's SM count (ingest
    refuses a mapping whose [gpu] differs the same way)."""
    for stage in staged:
        log = stage.log
        gid = gpu_id or f"gpgpusim-{log.n_sm}sm"
        have = first_row(con.execute("SELECT n_sm FROM gpu WHERE gpu_id = ?", [gid]))
        if have is not None and have[0] != log.n_sm:
            raise LogError(f"{log.path}: simulates {log.n_sm} SMs, but GPU {gid!r} in the "
                           f"database has {have[0]}: name another with --gpu")


def _per_sm(value: int | None) -> int | None:
    """A per-SM limit the gpu table's INTEGER column holds (else unknown: NULL)."""
    return value if value and value < 2**31 else None


def _part(stage: _Staged, gpu_id: str | None) -> Part:
    """The rows of one staged log for the writer: the simulated GPU (its configuration as
    the log prints it), its clocks, the launches' kernels, runs, intervals and metrics."""
    log = stage.log
    gid = gpu_id or f"gpgpusim-{log.n_sm}sm"
    threads, _, warp = log.options.get("gpgpu_shader_core_pipeline", "").partition(":")
    ctas = log.options.get("gpgpu_shader_cta", "")
    return Part(
        gpu=pa.Table.from_pylist([{
            "gpu_id": gid, "name": f"{log.simulator} configuration, {log.n_sm} SMs",
            "n_sm": log.n_sm,
            "max_warps_per_sm": _per_sm(whole_count(threads) // whole_count(warp)
                                        if whole_count(threads) and whole_count(warp) else None),
            "max_ctas_per_sm": _per_sm(whole_count(ctas)),
            "config": json.dumps({"simulator": log.simulator, "options": log.options})}]),
        pstates=pa.Table.from_pylist([
            {"gpu_id": gid, "domain": "core", "freq_mhz": log.clocks.core_mhz},
            {"gpu_id": gid, "domain": "mem", "freq_mhz": log.clocks.dram_mhz}]),
        kernels=_table(stage.kernels),
        runs=_table(stage.runs),
        intervals=_table(stage.intervals) if stage.intervals else None,
        metrics=_table(stage.metrics),
        file=FileRecord(stage.sha256, log.path, stage.power_sha256, len(stage.runs)))
