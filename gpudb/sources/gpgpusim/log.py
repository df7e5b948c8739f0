"""Parsers of GPGPU-Sim 3.x / Accel-Sim standard output and GPUWattch/AccelWattch power reports.

Pure parsing, no database (gpudb.sources.gpgpusim.ingest stores what these return). Units:

- clocks in MHz, as ``-gpgpu_clock_domains <core>:<icnt>:<l2>:<dram>`` gives them;
- ``cycles``: core-clock cycles (GPGPU-Sim advances ``gpu_sim_cycle`` on ticks of the first
  clock domain), so a launch lasts ``cycles / core_mhz`` microseconds;
- ``instructions``: ``gpu_sim_insn``, *thread* instructions (GPGPU-Sim counts every active
  thread of a warp instruction); warp instructions are the counter ``gpgpu_n_tot_w_icount``;
- power in W (GPUWattch's average over the launch's power samples).

What is per launch and what is not: ``gpu_sim_cycle``, ``gpu_sim_insn`` and ``gpu_ipc`` are the
launch's own; ``gpu_tot_*`` are running totals over the launches so far; and in GPGPU-Sim 3.x
every further counter of the statistics block (``gpgpu_n_load_insn``, cache accesses and
misses, stall counts, ...) is cumulative since the program started (in a log of two launches
of one kernel, launch 2 prints about twice launch 1's counts). :class:`Launch` therefore holds
each counter as this block's value minus the previous block's; ratios (L1D and L2 miss rates)
are recomputed from those differences. Averages and maxima over the program so far
(``averagemflatency``, ``maxmflatency``, ...) cannot be split by launch and are left out.
GPGPU-Sim prints some counters as signed 32-bit integers: past 2^31 - 1 such a running total
reads negative (-2147483648 and up). A count is never negative, so a negative value is read as
the least value above the previous block's that is congruent to it modulo 2^32 (unwrapped),
and so is every later value of a counter once it has passed 2^31. A counter that otherwise
decreases from one block to the next was reset by the simulator; its value for that launch is
unknown and left out. :class:`Launch` names both (``unwrapped``, ``left_out``), and
``gpudb ingest-log`` reports them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gpudb.store.db import GpudbError


class LogError(GpudbError):
    """A log or power report gpudb cannot read; the message names the file (and line)."""


@dataclass(frozen=True)
class Clocks:
    """``-gpgpu_clock_domains``, MHz: SM core, interconnect, L2, DRAM."""

    core_mhz: float
    icnt_mhz: float
    l2_mhz: float
    dram_mhz: float


@dataclass
class Launch:
    """One kernel launch's statistics block."""

    kernel_name: str
    uid: int                 # kernel_launch_uid
    line: int                # 1-based line of its kernel_name
    cycles: int              # gpu_sim_cycle, core-clock cycles of this launch
    instructions: int        # gpu_sim_insn, thread instructions of this launch
    tot_cycles: int          # gpu_tot_sim_cycle, running total including this launch
    tot_instructions: int    # gpu_tot_sim_insn
    # per-launch counters (differenced, see the module docstring) and printed per-launch or
    # running-total values (gpu_ipc, gpu_tot_*), by the names GPGPU-Sim prints
    metrics: dict[str, float] = field(default_factory=dict)
    # periodic statistics ("GPGPU-Sim uArch: cycles simulated: ..."): (cycles, instructions)
    # since the launch began, in order
    samples: list[tuple[int, int]] = field(default_factory=list)
    # counters read past a 32-bit wrap, and counters left out because they went down
    unwrapped: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


_WRAP = 2 ** 32          # a signed 32-bit counter repeats its printed values with this period
_INT32 = (-2 ** 31, 2 ** 31)


def _unwrapped(printed: float, before: float) -> float | None:
    """The running total a counter printed as ``printed`` stands for, given the previous
    block's (unwrapped) ``before``; None when it went down and is no 32-bit wrap (a reset)."""
    if printed >= before:
        return printed
    wrapped = printed < 0 or before >= _INT32[1]   # negative, or already past 2^31
    if not (wrapped and printed == int(printed) and _INT32[0] <= printed < _INT32[1]):
        return None
    value = printed + math.ceil((before - printed) / _WRAP) * _WRAP
    return value if value - before < _WRAP else None


@dataclass
class SimLog:
    path: Path
    simulator: str           # e.g. 'GPGPU-Sim 3.2.1 [build 15629]'
    options: dict[str, str]  # the option dump: name (without '-') -> first word of the value
    clocks: Clocks
    n_sm: int                # gpgpu_n_clusters x gpgpu_n_cores_per_cluster
    app: str                 # the simulated program ('self exe links to:'), else the file stem
    power_enabled: bool      # -power_simulation_enabled 1: a power report was written
    launches: list[Launch]


@dataclass
class PowerEntry:
    """One launch of a GPUWattch/AccelWattch power report, W (activity counts unitless)."""

    kernel_name: str
    uid: int
    avg_power_w: float
    avg_power_text: str          # as written, for the run's content hash
    max_power_w: float | None = None
    min_power_w: float | None = None
    # the 'Kernel Average Power Data' lines besides the total: components ending in P (W)
    # and the activity counts the model was fed, by their printed names without the comma
    average: dict[str, float] = field(default_factory=dict)


_BANNER = re.compile(r"\*\*\*\s*GPGPU-Sim Simulator Version\s+(.+?)\s*\*\*\*")
_ACCEL = re.compile(r"Accel-Sim \[build ([^\]]+)\]")
# the banner as a line of its own (a README quoting it is not a log)
_BANNER_LINE = re.compile(r"^[ \t]*\*\*\*\s*GPGPU-Sim Simulator Version", re.M)
_ACCEL_LINE = re.compile(r"^[ \t]*Accel-Sim \[build ", re.M)
_OPTION = re.compile(r"^-(\S+)\s+(\S+)")
_ASSIGN = re.compile(r"^\s*([A-Za-z_][\w\[\]]*)\s*=\s*(\S+)")
_SAMPLE = re.compile(r"GPGPU-Sim uArch: cycles simulated: (\d+)\s+inst\.: (\d+)")
_CACHE = re.compile(r"^Cache L2_bank_\d+:\s+Size")
_ACCESS = re.compile(r"Access = (\d+), Miss = (\d+)")
_TRANSFER = re.compile(r"^kernel '(.+)' transfer to GPU hardware scheduler")
# counters GPGPU-Sim 3.x accumulates over the program (per launch: difference of two blocks)
_COUNTER = re.compile(r"^(gpgpu_n_\w+|gpgpu_stall_shd_mem\[.+\]|gpu_stall_\w+|"
                      r"gpu_reg_bank_conflict_stalls|gpgpu_l2_\w+|total_dl1_(misses|accesses)|"
                      r"icnt_total_pkts_\w+|L1D_total_cache_\w+|L2_total_cache_\w+)$")
# printed as they are: the launch's own, or running totals named as such
_AS_PRINTED = ("gpu_ipc", "gpu_tot_sim_cycle", "gpu_tot_sim_insn", "gpu_tot_ipc",
               "gpu_tot_issued_cta")
_BLOCK_END = "gpgpu_simulation_time"
_INT64_MAX = 2**63 - 1
# the most a log or a power report may hold (GPGPU-Sim's largest logs are a few hundred MB)
MAX_LOG_BYTES = 4 << 30
# characters of one line kept: a line of the statistics is tens of characters, an option's a few
# hundred; the rest of a longer line is skipped unread into memory
MAX_LINE_CHARS = 1 << 16
# lines of a log read before its simulator banner must have been seen
BANNER_LINES = 10_000


# a number as GPGPU-Sim prints one: ASCII digits, an optional fraction and exponent (Python's
# float() also takes '4_6554', '١٢' and 'infinity'; issue 41 item 6)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# the digits of the largest count stored (a BIGINT): a longer run of digits is not a count
_COUNT_DIGITS = 19
# the highest clock a domain may have, MHz: 10 GHz, past any GPU's
MAX_CLOCK_MHZ = 10_000.0
# the most SMs a log may configure (n_sm is an INTEGER; the largest GPUs have a few hundred)
MAX_SMS = 65_536


def _number(text: str) -> float | None:
    """A finite number written as GPGPU-Sim writes one, else None."""
    if len(text) > 400 or not _DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def whole_count(text: str) -> int | None:
    """A count of ASCII digits that a BIGINT holds, else None (int() takes a superscript or
    Arabic-Indic digit, and raised on 5,000 digits: tracebacks)."""
    if not (0 < len(text) <= _COUNT_DIGITS and text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value <= _INT64_MAX else None


def _read_lines(path: Path, what: str) -> Iterator[str]:
    """The lines of a regular file (a FIFO would hang the read, /dev/zero never end), one at
    a time, each cut at MAX_LINE_CHARS: memory follows what the parser keeps, not the file (a
    100 MB log of blank lines took 1.16 GB as a list of lines; issue 41 item 4). A UTF-8
    byte order mark at the start is dropped (a power report starting with one read as having
    no entry for launch 1)."""
    from gpudb.store.trust import open_regular

    try:
        fd = open_regular(path, MAX_LOG_BYTES, what)
    except GpudbError as exc:
        raise LogError(str(exc)) from None
    try:
        with open(fd, encoding="utf-8-sig", errors="replace", newline=None) as text:
            while line := text.readline(MAX_LINE_CHARS):
                if not line.endswith("\n") and len(line) == MAX_LINE_CHARS:
                    while (rest := text.readline(MAX_LINE_CHARS)) and not rest.endswith("\n"):
                        pass
                yield line.rstrip("\n")
    except OSError as exc:
        raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None


def is_sim_log(path: Path) -> bool:
    """Whether a file starts like GPGPU-Sim/Accel-Sim standard output (its first 16 KB)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16384).decode("utf-8", errors="replace")
    except OSError:
        return False
    return bool(_BANNER_LINE.search(head) or _ACCEL_LINE.search(head))


def _clocks(path: Path, options: dict[str, str]) -> Clocks:
    text = options.get("gpgpu_clock_domains")
    if text is None:
        raise LogError(f"{path}: no -gpgpu_clock_domains option: not GPGPU-Sim 3.x/Accel-Sim "
                       "output with its option dump")
    parts = [_number(p) for p in text.split(":")]
    if len(parts) != 4 or any(p is None or not 0 < p <= MAX_CLOCK_MHZ for p in parts):
        raise LogError(f"{path}: -gpgpu_clock_domains {text!r} is not four clocks "
                       f"<core>:<icnt>:<l2>:<dram> in MHz, each above 0 and at most "
                       f"{MAX_CLOCK_MHZ:,.0f}")
    return Clocks(*parts)


def _count(path: Path, options: dict[str, str], name: str) -> int:
    text = options.get(name)
    value = None if text is None else whole_count(text)
    if value is None or not 0 < value <= MAX_SMS:
        raise LogError(f"{path}: option -{name} is {'missing' if text is None else ascii(text)},"
                       f" not a whole number in 1..{MAX_SMS:,}")
    return value


def parse_log(path: str | Path) -> SimLog:
    """Read a GPGPU-Sim 3.x / Accel-Sim standard output file. Raises :class:`LogError` for a
    file without the option dump or clock domains, without a complete launch, or cut off
    inside a launch's statistics block or while a launch was simulated."""
    path = Path(path)
    lines = _read_lines(path, "a GPGPU-Sim or Accel-Sim log")
    simulator = None
    accel = None
    options: dict[str, str] = {}
    app = None
    launches: list[Launch] = []
    pending: list[tuple[int, int]] = []    # periodic samples before the next block
    block: dict | None = None
    raw_prev: dict[str, float] = {}        # previous block's cumulative counters
    last_transfer: tuple[int, str] | None = None
    last_end = 0
    for number, line in enumerate(lines, 1):
        if number > BANNER_LINES and simulator is None and accel is None:
            # both print their banner in a log's first lines (line 3 of the shared logs):
            # a file without one is refused now, not after reading it all
            raise LogError(f"{path}: not GPGPU-Sim or Accel-Sim output (no simulator banner "
                           f"in its first {BANNER_LINES:,} lines)")
        if block is None:
            if simulator is None and (m := _BANNER.search(line)):
                simulator = "GPGPU-Sim " + " ".join(m.group(1).split())
            elif accel is None and (m := _ACCEL.search(line)):
                accel = m.group(1)
            elif not launches and (m := _OPTION.match(line)):
                name, value = m.group(1), m.group(2)
                if options.get(name, value) != value and name[:1].isalpha():
                    raise LogError(f"{path}: line {number}: option -{name} is given twice, "
                                   f"{ascii(options[name])} and {ascii(value)}: which one "
                                   "the simulator ran with is not known")
                options.setdefault(name, value)
            elif app is None and line.startswith("self exe links to:"):
                app = Path(line.split(":", 1)[1].strip()).name or None
            elif m := _SAMPLE.search(line):
                sample = (whole_count(m.group(1)), whole_count(m.group(2)))
                if None in sample:
                    raise LogError(f"{path}: line {number}: periodic statistics with a count "
                                   "that is not a whole number a BIGINT holds")
                pending.append(sample)
            elif m := _TRANSFER.match(line):
                last_transfer = (number, m.group(1))
            elif line.startswith("kernel_name ="):
                block = {"kernel_name": line.split("=", 1)[1].strip(), "line": number,
                         "values": {}, "cache": None, "l2": [0, 0], "warps": {}}
            continue
        if line.startswith("kernel_name ="):
            break  # a block that never ended: reported below
        if line.startswith(_BLOCK_END):
            launches.append(_launch(path, block, raw_prev, pending))
            raw_prev = block["raw"]
            pending = []
            block = None
            last_end = number
            continue
        if _CACHE.match(line):
            block["cache"] = True
            continue
        if block["cache"] and (m := _ACCESS.search(line)):
            access, miss = whole_count(m.group(1)), whole_count(m.group(2))
            if access is None or miss is None:
                raise LogError(f"{path}: line {number}: an L2 bank's Access/Miss count is not a "
                               "whole number a BIGINT holds")
            block["l2"][0] += access
            block["l2"][1] += miss
            block["cache"] = None
            continue
        if line.startswith("Stall:") and "W0_Idle:" in line:
            for item in line.split():
                name, _, value = item.partition(":")
                if whole_count(value) is not None:
                    block["warps"][f"warp_occupancy[{name}]"] = float(value)
            continue
        if m := _ASSIGN.match(line):
            value = _number(m.group(2))
            if value is not None:
                block["values"].setdefault(m.group(1), value)
    if block is not None:
        what = block["values"].get("kernel_launch_uid")
        uid = f"launch {int(what)} " if what is not None else "a launch "
        raise LogError(f"{path}: line {block['line']}: {uid}of {block['kernel_name']} is cut off "
                       f"before the end of its statistics block (no {_BLOCK_END} line): "
                       "a truncated log?")
    if simulator is None and accel is None:
        raise LogError(f"{path}: not GPGPU-Sim or Accel-Sim output (no simulator banner)")
    if not launches:
        raise LogError(f"{path}: no complete kernel launch (no statistics block with "
                       "kernel_name, gpu_sim_cycle and gpu_sim_insn)")
    if last_transfer and last_transfer[0] > last_end:
        raise LogError(f"{path}: line {last_transfer[0]}: kernel {last_transfer[1]} was launched "
                       "but the log ends before its statistics block: a truncated log?")
    _check_totals(path, launches)
    if accel is not None:
        simulator = f"Accel-Sim [build {accel}]" + (f" ({simulator})" if simulator else "")
    clocks = _clocks(path, options)
    n_sm = (_count(path, options, "gpgpu_n_clusters")
            * _count(path, options, "gpgpu_n_cores_per_cluster"))
    return SimLog(path=path, simulator=simulator, options=options, clocks=clocks, n_sm=n_sm,
                  app=app or path.stem,
                  power_enabled=options.get("power_simulation_enabled") == "1",
                  launches=launches)


def _launch(path: Path, block: dict, raw_prev: dict[str, float],
            pending: list[tuple[int, int]]) -> Launch:
    values = block["values"]
    where = f"{path}: line {block['line']}: launch of {block['kernel_name']}"
    need = ("kernel_launch_uid", "gpu_sim_cycle", "gpu_sim_insn", "gpu_tot_sim_cycle",
            "gpu_tot_sim_insn")
    for name in need:
        value = values.get(name)
        if value is None or value < 0 or value != int(value):
            raise LogError(f"{where}: {name} is {'missing' if value is None else value}, "
                           "not a whole number")
        if value > _INT64_MAX:  # stored as BIGINT
            raise LogError(f"{where}: {name} is {value:.6g}, more than a 64-bit count holds "
                           f"({_INT64_MAX})")
    cycles = int(values["gpu_sim_cycle"])
    if cycles <= 0:
        raise LogError(f"{where}: gpu_sim_cycle is {cycles}: a launch takes at least one cycle")
    launch = Launch(kernel_name=block["kernel_name"], uid=int(values["kernel_launch_uid"]),
                    line=block["line"], cycles=cycles,
                    instructions=int(values["gpu_sim_insn"]),
                    tot_cycles=int(values["gpu_tot_sim_cycle"]),
                    tot_instructions=int(values["gpu_tot_sim_insn"]))
    if launch.tot_cycles < cycles or launch.tot_instructions < launch.instructions:
        raise LogError(f"{where}: the running totals gpu_tot_sim_cycle/gpu_tot_sim_insn are "
                       "below the launch's own gpu_sim_cycle/gpu_sim_insn")
    for name in _AS_PRINTED:
        if name in values:
            if values[name] < 0:
                raise LogError(f"{where}: {name} is {values[name]:g}: a rate or a count is not "
                               "negative")
            launch.metrics[name] = values[name]
    raw = {n: v for n, v in values.items() if _COUNTER.match(n) and "rate" not in n}
    raw.update(block["warps"])
    # the L2 banks' "Access = A, Miss = M" lines, summed (their ratio is printed as
    # "L2 Cache Total Miss Rate")
    if block["l2"] != [0, 0]:
        raw["l2_cache_total_accesses"] = float(block["l2"][0])
        raw["l2_cache_total_misses"] = float(block["l2"][1])
    block["raw"] = raw
    for name, printed in raw.items():
        before = raw_prev.get(name, 0.0)
        value = _unwrapped(printed, before)
        if value is None:
            launch.left_out.append(name)
            continue   # the next launch is differenced from the value printed here
        if value != printed:
            launch.unwrapped.append(name)
            raw[name] = value
        launch.metrics[name] = value - before
    for rate, misses, accesses in (
            ("total_dl1_miss_rate", "total_dl1_misses", "total_dl1_accesses"),
            ("l2_cache_total_miss_rate", "l2_cache_total_misses", "l2_cache_total_accesses")):
        if launch.metrics.get(accesses):
            launch.metrics[rate] = launch.metrics.get(misses, math.nan) / launch.metrics[accesses]
            if not math.isfinite(launch.metrics[rate]):
                del launch.metrics[rate]
    # periodic samples print totals over the program (cycles) and over the program (insts)
    base_cycles = launch.tot_cycles - launch.cycles
    base_insts = launch.tot_instructions - launch.instructions
    last = (0, 0)
    for total_cycles, total_insts in pending:
        sample = (total_cycles - base_cycles, total_insts - base_insts)
        if not (last[0] <= sample[0] <= cycles and last[1] <= sample[1] <= launch.instructions):
            raise LogError(f"{where}: periodic statistics at cycle {total_cycles}, instruction "
                           f"{total_insts} fall outside the launch (cycles {base_cycles}-"
                           f"{launch.tot_cycles}) or go backwards")
        launch.samples.append(sample)
        last = sample
    return launch


def _check_totals(path: Path, launches: list[Launch]) -> None:
    """Each launch's running totals are the previous ones plus its own cycles and
    instructions: a block missing between two others (or launches read out of order) shows."""
    for before, launch in zip(launches, launches[1:], strict=False):
        if (launch.tot_cycles - before.tot_cycles != launch.cycles
                or launch.tot_instructions - before.tot_instructions != launch.instructions):
            raise LogError(
                f"{path}: line {launch.line}: launch {launch.uid}'s running totals "
                f"(gpu_tot_sim_cycle {launch.tot_cycles}, gpu_tot_sim_insn "
                f"{launch.tot_instructions}) are not launch {before.uid}'s plus its own "
                f"gpu_sim_cycle {launch.cycles} and gpu_sim_insn {launch.instructions}")


_POWER_KEY = re.compile(r"^\s*(\w+?),?\s*=\s*(\S+)\s*$")


def parse_power_report(path: str | Path) -> list[PowerEntry]:
    """Read a GPUWattch (``gpgpusim_power_report__*.log``) or AccelWattch power report: one
    entry per launch, in order. Raises :class:`LogError` for a report without entries or
    cut off inside one (an entry ends with its minimum-power section)."""
    path = Path(path)
    entries: list[PowerEntry] = []
    current: dict | None = None

    def close() -> None:
        if current is None:
            return
        if current.get("avg") is None or current.get("min") is None:
            raise LogError(f"{path}: line {current['line']}: the entry of launch "
                           f"{current.get('uid', '?')} ({current['name']}) is cut off before "
                           "its average and minimum power: a truncated power report?")
        if current.get("uid") is None:
            raise LogError(f"{path}: line {current['line']}: entry without kernel_launch_uid")
        entries.append(PowerEntry(current["name"], current["uid"], current["avg"],
                                  current["avg_text"], current.get("max"), current["min"],
                                  current["average"]))

    lines = _read_lines(path, "a GPUWattch/AccelWattch power report")
    seen: dict[int, int] = {}   # launch uid -> line of its entry
    for number, line in enumerate(lines, 1):
        if line.startswith("kernel_name ="):
            close()
            current = {"name": line.split("=", 1)[1].strip(), "line": number, "average": {}}
            continue
        if current is None or not (m := _POWER_KEY.match(line)):
            continue
        key, text = m.group(1), m.group(2)
        if key == "kernel_launch_uid":
            current["uid"] = whole_count(text)
            if current["uid"] is not None and current["uid"] in seen:
                raise LogError(f"{path}: line {number}: a second entry for launch "
                               f"{current['uid']} (the first at line {seen[current['uid']]}): "
                               "which one belongs to the launch is not known")
            if current["uid"] is not None:
                seen[current["uid"]] = current["line"]
            continue
        value = _number(text)
        if value is None:
            raise LogError(f"{path}: line {number}: {key} = {ascii(text)} is not a finite "
                           "number")
        if value < 0:
            raise LogError(f"{path}: line {number}: {key} = {text} is negative: a power or an "
                           "activity count is not")
        if key in ("gpu_avg_power", "kernel_avg_power"):
            current["avg"], current["avg_text"] = value, text
        elif key in ("gpu_max_power", "kernel_max_power"):
            current["max"] = value
        elif key in ("gpu_min_power", "kernel_min_power"):
            current["min"] = value
        elif key.startswith("gpu_avg_") and current.get("max") is None:
            current["average"][key] = value
    close()
    if not entries:
        raise LogError(f"{path}: no kernel entries (kernel_name, kernel_launch_uid, "
                       "gpu_avg_power): not a GPUWattch power report")
    return entries
