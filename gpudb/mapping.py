"""Mapping files: how the columns of a measured CSV/Parquet file become gpudb runs.

A mapping is a TOML file (examples in fixtures/mappings/)::

    [gpu]                         # the GPU row, created if the database lacks it
    gpu_id = "rtx2070s"
    name = "GeForce RTX 2070 SUPER"
    n_sm = 40

    [run]                         # constants for every run of the file
    suite = "cuda-sdk-rodinia"    # kernel_id = '<suite>/<kernel>'
    source = "measured"           # default
    policy = "fixed"              # default

    [columns]                     # which file column holds what, and its unit
    kernel = ["appName", "kernel"]            # joined with ':' into the kernel name
    core_mhz = { column = "coreF", unit = "MHz" }
    mem_mhz = { column = "memF", unit = "MHz" }
    time = { column = "time/ms", unit = "ms" }     # stored as time_ns
    power = { column = "power/W", unit = "W" }     # or energy = {...}; stored as energy_j

    [metrics]                     # every other numeric column becomes a whole-run metric
    ignore = ["", "blocks"]       # columns to drop
    text = ["argNo"]              # columns that are text even where a value looks numeric
    rename = { DRAMA = "dram_active" }
    prefix = ""                   # prepended to metric names not renamed

    [inputs]                      # optional: the inputs of Wang & Chu's model (paper 003)
    blocks = { column = "grid_blocks", unit = "count" }
    l2_hit_rate = { expr = "100 * (1 - dram_reads / l2_reads)", unit = "%" }

``[inputs]`` declares which of the file's columns (or which expression over them) hold the
per-run inputs of Wang & Chu's model (gpudb.wangchu.KernelCounters). Its keys are exactly the
canonical names in :data:`INPUTS`, each with its unit(s)::

    gld_trans_per_warp   transactions/warp   global load + store transactions per warp
    l2_hit_rate          fraction | %        L2 hit rate of those transactions (stored 0..1)
    comp_inst_per_warp   instructions/warp   compute (non-memory) warp instructions per warp
    shm_inst_per_warp    transactions/warp   shared-memory transactions per warp (0 if none)
    blocks               count               thread blocks in the grid
    warps_per_block      count               warps per block
    achieved_occupancy   fraction | %        resident warps per SM / max warps per SM

Each value is ``{ column = "name", unit = "..." }`` or ``{ expr = "<DuckDB SQL expression over
the file's columns>", unit = "..." }`` (a :class:`Derived`). Ingest stores them as whole-run
metrics under the canonical name (see gpudb.ingest for how expressions are evaluated, locked
down, and what happens to values that are not finite). The columns an input reads still become
metrics themselves unless [metrics] ignore lists them. An expression is parsed when the mapping
is loaded (a syntax error is a mapping error); whether its columns exist is checked against
each data file at ingest.

Unknown keys are errors, so a typo cannot silently drop a column; so are values of the wrong
type, empty column names, two columns renamed to one metric name, and (checked against each
data file at ingest) names in ``ignore``, ``text`` and ``rename`` that match no column. Each
error is one line naming the mapping file and the key. A mapping must be a regular file of at
most 1 MiB (a FIFO or a device such as /dev/zero is refused before it is read).
"""

from __future__ import annotations

import datetime
import hashlib
import math
import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from gpudb.db import GpudbError

# unit -> factor to the stored unit (ns, MHz, W, J)
TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
FREQ_UNITS = {"MHz": 1.0, "GHz": 1e3, "kHz": 1e-3}
POWER_UNITS = {"W": 1.0, "mW": 1e-3}
ENERGY_UNITS = {"J": 1.0, "mJ": 1e-3, "uJ": 1e-6}
FRACTION_UNITS = {"fraction": 1.0, "%": 0.01}

# [inputs]: the canonical names of Wang & Chu's model inputs (paper 003, the per-run fields of
# gpudb.wangchu.KernelCounters) -> their units -> factor to the stored unit.
INPUTS = {
    "gld_trans_per_warp": {"transactions/warp": 1.0},
    "l2_hit_rate": FRACTION_UNITS,
    "comp_inst_per_warp": {"instructions/warp": 1.0},
    "shm_inst_per_warp": {"transactions/warp": 1.0},
    "blocks": {"count": 1.0},
    "warps_per_block": {"count": 1.0},
    "achieved_occupancy": FRACTION_UNITS,
}
FRACTION_INPUTS = frozenset(k for k, units in INPUTS.items() if units is FRACTION_UNITS)

_SECTIONS = {
    "description": None,
    "gpu": {"gpu_id", "name", "n_sm", "max_warps_per_sm", "max_ctas_per_sm",
            "nominal_core_mhz", "nominal_mem_mhz"},
    "run": {"suite", "source", "policy", "experiment"},
    "columns": {"kernel", "core_mhz", "mem_mhz", "time", "power", "energy", "n_sm"},
    "metrics": {"ignore", "text", "rename", "prefix"},
    "inputs": set(INPUTS),
}
_GPU_REQUIRED = ("gpu_id", "name", "n_sm")
MAX_MAPPING_BYTES = 1 << 20
_INT32_MAX = 2**31 - 1


class MappingError(GpudbError):
    """A mapping file that cannot be used; the message names the file and key."""


@dataclass(frozen=True)
class Measure:
    """One mapped numeric column: its name in the file and the factor to gpudb's unit."""
    column: str
    unit: str
    factor: float


@dataclass(frozen=True)
class Derived:
    """A number per row of the data file: one column (``column``) or a DuckDB SQL expression
    over the file's columns (``expr``), in ``unit``; ``factor`` converts it to gpudb's unit.
    ``key`` names it in messages (e.g. "[inputs] blocks"). Evaluated by gpudb.ingest.

    Used by [inputs] today; built so that a [columns] value could later be computed too
    (e.g. ``time = { expr = "cycles / core_mhz", unit = "us" }``).
    """
    key: str
    unit: str
    factor: float
    column: str | None = None
    expr: str | None = None

    @property
    def sql(self) -> str:
        """The value as an SQL expression over the file's columns (a column quoted as an
        identifier, so any name works)."""
        if self.column is not None:
            return '"' + self.column.replace('"', '""') + '"'
        return self.expr


@dataclass(frozen=True)
class Mapping:
    path: Path
    sha256: str
    description: str
    gpu: dict
    suite: str
    source: str
    policy: str
    experiment: str | None
    kernel: tuple[str, ...]
    core_mhz: Measure
    mem_mhz: Measure
    time: Measure
    power: Measure | None
    energy: Measure | None
    n_sm: Measure | None
    ignore: frozenset[str] = field(default_factory=frozenset)
    text: frozenset[str] = field(default_factory=frozenset)
    rename: dict = field(default_factory=dict)
    prefix: str = ""
    inputs: dict = field(default_factory=dict)  # canonical name -> Derived ([inputs])

    def mapped_columns(self) -> set[str]:
        """File columns consumed by the run row (not metrics)."""
        measures = [self.core_mhz, self.mem_mhz, self.time, self.power, self.energy, self.n_sm]
        return set(self.kernel) | {m.column for m in measures if m is not None}

    def metric_name(self, column: str) -> str:
        return self.rename.get(column, self.prefix + column)


def _fail(path: Path, message: str) -> MappingError:
    return MappingError(f"{path}: {message}")


def file_kind(mode: int) -> str:
    """What a non-regular file is, for error messages."""
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def _read_mapping_bytes(path: Path) -> bytes:
    """The bytes of a regular file of at most MAX_MAPPING_BYTES. Opened without blocking
    and checked on the open descriptor, so a FIFO cannot hang and /dev/zero cannot fill
    memory."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise MappingError(f"cannot read mapping {path}: "
                           f"{getattr(exc, 'strerror', None) or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _fail(path, f"is {file_kind(info.st_mode)}, not a mapping file (TOML)")
        too_big = _fail(path, f"larger than {MAX_MAPPING_BYTES // (1 << 20)} MiB; a mapping is "
                              "a short TOML file")
        if info.st_size > MAX_MAPPING_BYTES:
            raise too_big
        chunks, size = [], 0
        while size <= MAX_MAPPING_BYTES:
            block = os.read(fd, MAX_MAPPING_BYTES + 1 - size)
            if not block:
                break
            chunks.append(block)
            size += len(block)
        if size > MAX_MAPPING_BYTES:
            raise too_big
        return b"".join(chunks)
    except OSError as exc:
        raise MappingError(f"cannot read mapping {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _toml_type(value) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, (datetime.date, datetime.time)):
        return "a date/time"
    return type(value).__name__


def _text(path: Path, key: str, value, *, empty_ok: bool = False) -> str:
    """A string value of the mapping: not another type, not empty (unless empty_ok), no NUL."""
    if not isinstance(value, str):
        raise _fail(path, f"{key} must be a string, not {_toml_type(value)}")
    if not empty_ok and not value.strip():
        raise _fail(path, f"{key} must not be empty")
    if "\x00" in value:
        raise _fail(path, f"{key} must not contain a NUL character")
    return value


def _column(path: Path, key: str, value) -> str:
    """A column name of the data file: a non-empty string."""
    if isinstance(value, str) and value == "":
        raise _fail(path, f"{key}: the column name is empty")
    return _text(path, key, value, empty_ok=True)


def _names(path: Path, key: str, value) -> frozenset[str]:
    """A list of column names ([metrics] ignore and text)."""
    if not isinstance(value, list):
        raise _fail(path, f"{key} must be a list of column names, not {_toml_type(value)}")
    return frozenset(_text(path, f"{key}[{i}]", v, empty_ok=True) for i, v in enumerate(value))


def _positive_int(path: Path, key: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _INT32_MAX:
        raise _fail(path, f"{key} must be a positive integer, not {_toml_type(value)}")
    return value


def _clock(path: Path, key: str, value) -> float:
    """A clock in MHz: positive and finite. 0 is an error, not 'unknown' (leave the key
    out for that)."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value <= 0):
        raise _fail(path, f"{key} must be a positive number of MHz, not {_toml_type(value)} "
                          "(leave the key out if it is unknown)")
    return float(value)


def _measure(path: Path, key: str, value, units: dict[str, float], default_unit: str) -> Measure:
    where = f"[columns] {key}"
    if isinstance(value, str):
        value = {"column": value}
    if not isinstance(value, dict):
        raise _fail(path, f"{where} must be a column name or {{column, unit}}, "
                          f"not {_toml_type(value)}")
    extra = set(value) - {"column", "unit"}
    if extra:
        raise _fail(path, f"unknown key {min(extra)!r} in {where}; "
                          "expected 'column' and 'unit'")
    if "column" not in value:
        raise _fail(path, f"{where} needs a 'column' name")
    column = _column(path, where, value["column"])
    unit = value.get("unit", default_unit)
    if not isinstance(unit, str):
        raise _fail(path, f"{where}: unit must be a string, not {_toml_type(unit)}")
    if unit not in units:
        raise _fail(path, f"{where}: unknown unit {unit!r}; use one of {sorted(units)}")
    return Measure(column, unit, units[unit])


def _derived(path: Path, key: str, value, units: dict[str, float]) -> Derived:
    """``{ column = "name", unit = "..." }`` or ``{ expr = "<SQL>", unit = "..." }``. The
    expression is parsed here (by DuckDB's own parser, as one expression: no statement, no
    list), so a syntax error is a mapping error; its columns are checked at ingest."""
    if not isinstance(value, dict):
        raise _fail(path, f"{key} must be {{ column = ..., unit = ... }} or "
                          f"{{ expr = ..., unit = ... }}, not {_toml_type(value)}")
    extra = set(value) - {"column", "expr", "unit"}
    if extra:
        raise _fail(path, f"unknown key {min(extra)!r} in {key}; expected 'column' or 'expr', "
                          "and 'unit'")
    if ("column" in value) == ("expr" in value):
        raise _fail(path, f"{key} needs exactly one of 'column' and 'expr'")
    if "unit" not in value:
        raise _fail(path, f"{key} needs a 'unit' (one of {', '.join(map(repr, units))})")
    unit = value["unit"]
    if not isinstance(unit, str):
        raise _fail(path, f"{key}: unit must be a string, not {_toml_type(unit)}")
    if unit not in units:
        raise _fail(path, f"{key}: unknown unit {unit!r}; use one of "
                          f"{', '.join(map(repr, units))}")
    if "column" in value:
        return Derived(key, unit, units[unit], column=_column(path, key, value["column"]))
    expr = _text(path, f"{key} expr", value["expr"])
    try:
        duckdb.SQLExpression(expr)
    except duckdb.Error as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _fail(path, f"{key}: expr is not one SQL expression: {detail}") from None
    return Derived(key, unit, units[unit], expr=expr)


def load_mapping(path: str | Path) -> Mapping:
    """Read and check a mapping file; raises MappingError naming the file and the bad key."""
    path = Path(path)
    raw = _read_mapping_bytes(path)
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _fail(path, f"not valid TOML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise _fail(path, "not valid TOML for a mapping: arrays or tables nested too deeply"
                    ) from None

    for section, value in doc.items():
        if section not in _SECTIONS:
            raise _fail(path, f"unknown section [{section}]; expected one of "
                              f"{', '.join(sorted(_SECTIONS))}")
        allowed = _SECTIONS[section]
        if allowed is None:
            continue
        if not isinstance(value, dict):
            raise _fail(path, f"[{section}] must be a table, not {_toml_type(value)}")
        for key in value:
            if key not in allowed:
                raise _fail(path, f"unknown key {key!r} in [{section}]; expected one of "
                                  f"{', '.join(sorted(allowed))}")

    gpu = dict(doc.get("gpu", {}))
    for key in _GPU_REQUIRED:
        if key not in gpu:
            raise _fail(path, f"[gpu] needs {key!r}")
    _text(path, "[gpu] gpu_id", gpu["gpu_id"])
    _text(path, "[gpu] name", gpu["name"])
    _positive_int(path, "[gpu] n_sm", gpu["n_sm"])
    for key in ("max_warps_per_sm", "max_ctas_per_sm"):
        if key in gpu:
            _positive_int(path, f"[gpu] {key}", gpu[key])
    for key in ("nominal_core_mhz", "nominal_mem_mhz"):
        if key in gpu:
            gpu[key] = _clock(path, f"[gpu] {key}", gpu[key])

    run = doc.get("run", {})
    if "suite" not in run:
        raise _fail(path, "[run] needs 'suite' (kernel ids are '<suite>/<kernel>')")
    suite = _text(path, "[run] suite", run["suite"])
    source = run.get("source", "measured")
    if source not in ("measured", "sim"):
        raise _fail(path, f"[run] source must be 'measured' or 'sim', not {_toml_type(source)}")
    policy = _text(path, "[run] policy", run.get("policy", "fixed"))
    experiment = run.get("experiment")
    if experiment is not None:
        experiment = _text(path, "[run] experiment", experiment)
    description = _text(path, "description", doc.get("description", ""), empty_ok=True)

    columns = doc.get("columns", {})
    for key in ("kernel", "core_mhz", "mem_mhz", "time"):
        if key not in columns:
            raise _fail(path, f"[columns] needs {key!r}")
    if ("power" in columns) == ("energy" in columns):
        raise _fail(path, "[columns] needs exactly one of 'power' and 'energy'")
    kernel = columns["kernel"]
    if isinstance(kernel, str):
        kernel = [kernel]
    if not isinstance(kernel, list) or not kernel:
        raise _fail(path, "[columns] kernel must be a column name or a list of them, not "
                          f"{'an empty list' if kernel == [] else _toml_type(kernel)}")
    kernel = tuple(_column(path, f"[columns] kernel[{i}]", k) for i, k in enumerate(kernel))
    if len(set(kernel)) != len(kernel):
        raise _fail(path, "[columns] kernel lists "
                          f"{next(k for k in kernel if kernel.count(k) > 1)!r} twice")
    measures = {
        "core_mhz": _measure(path, "core_mhz", columns["core_mhz"], FREQ_UNITS, "MHz"),
        "mem_mhz": _measure(path, "mem_mhz", columns["mem_mhz"], FREQ_UNITS, "MHz"),
        "time": _measure(path, "time", columns["time"], TIME_UNITS, "ns"),
        "power": (_measure(path, "power", columns["power"], POWER_UNITS, "W")
                  if "power" in columns else None),
        "energy": (_measure(path, "energy", columns["energy"], ENERGY_UNITS, "J")
                   if "energy" in columns else None),
        "n_sm": (_measure(path, "n_sm", columns["n_sm"], {"count": 1.0}, "count")
                 if "n_sm" in columns else None),
    }
    mapped = {k: "[columns] kernel" for k in kernel}
    mapped.update({m.column: f"[columns] {key}" for key, m in measures.items() if m is not None})

    metrics = doc.get("metrics", {})
    ignore = _names(path, "[metrics] ignore", metrics.get("ignore", []))
    text = _names(path, "[metrics] text", metrics.get("text", []))
    rename = metrics.get("rename", {})
    if not isinstance(rename, dict):
        raise _fail(path, "[metrics] rename must map column names to metric names, not "
                          f"{_toml_type(rename)}")
    for column, name in rename.items():
        _column(path, f"[metrics] rename {column!r}", column)
        _text(path, f"[metrics] rename {column!r}", name)
    prefix = _text(path, "[metrics] prefix", metrics.get("prefix", ""), empty_ok=True)
    # A name in ignore/text/rename that is a mapped column would silently do nothing.
    for key, names in (("ignore", ignore), ("text", text), ("rename", rename)):
        for column in sorted(names):
            if column in mapped:
                raise _fail(path, f"[metrics] {key} names {column!r}, which is "
                                  f"{mapped[column]}, not a metric")
    for column in sorted(rename):
        if column in ignore or column in text:
            raise _fail(path, f"[metrics] rename names {column!r}, which [metrics] "
                              f"{'ignore' if column in ignore else 'text'} also lists")
    by_name: dict[str, str] = {}
    for column, name in rename.items():
        if name in by_name:
            raise _fail(path, f"[metrics] rename gives columns {by_name[name]!r} and "
                              f"{column!r} one metric name {name!r}")
        by_name[name] = column
    inputs = {name: _derived(path, f"[inputs] {name}", value, INPUTS[name])
              for name, value in doc.get("inputs", {}).items()}
    return Mapping(
        path=path,
        sha256=hashlib.sha256(raw).hexdigest(),
        description=description,
        gpu=gpu,
        suite=suite,
        source=source,
        policy=policy,
        experiment=experiment,
        kernel=kernel,
        core_mhz=measures["core_mhz"],
        mem_mhz=measures["mem_mhz"],
        time=measures["time"],
        power=measures["power"],
        energy=measures["energy"],
        n_sm=measures["n_sm"],
        ignore=ignore,
        text=text,
        rename=dict(rename),
        prefix=prefix,
        inputs=inputs,
    )
