"""Mapping files: how the columns of a measured CSV/Parquet file become gpudb runs.

A mapping is a TOML file (examples in fixtures/mappings/)::

    [gpu]                         # the GPU row, created if the database lacks it
    gpu_id = "rtx2070s"
    name = "GeForce RTX 2070 SUPER"
    n_sm = 40                     # SMs; every run's n_sm unless [columns] n_sm says otherwise
    max_warps_per_sm = 32         # optional, as are max_ctas_per_sm and
    nominal_core_mhz = 1770       # nominal_core_mhz, nominal_mem_mhz (MHz)
    # column = "gpu_name"       # optional: the file's column naming the GPU (checked below)

    [run]                         # constants for every run of the file
    suite = "cuda-sdk-rodinia"    # kernel_id = '<suite>/<kernel>'
    source = "measured"           # default
    policy = "fixed"              # default

    [file]                        # optional: how a CSV file is laid out
    header = ["appName", "coreF", "cycles", "power/W"]  # names of a file without a header
    labels = "kernel"             # lines of one non-numeric field are section labels
    # duplicates = "number"       # a header naming a column twice: "refuse" (default) or
                                  # "number" (the repeats are name.1, name.2, ...)

    [rows]                        # optional: which rows are runs
    where = "argNo = 'input000'"  # a boolean expression over the file's columns
    repeats = "number"            # a kernel measured twice at one setting: "refuse" (default)
                                  # or "number" (label#1, label#2, ... in file order)

    [columns]                     # which file column holds what, and its unit
    kernel = ["appName", "kernel"]            # joined with ':' into the kernel name
    core_mhz = { column = "coreF", unit = "MHz" }  # MHz | GHz | kHz
    mem_mhz = { value = 877, unit = "MHz" }   # a constant: the file held it fixed
    time = { expr = "cycles / coreF", unit = "us" }  # ns | us | ms | s; stored as time_ns
    power = { column = "power/W", unit = "W" }     # W | mW; or energy = {...} in J | mJ | uJ
    # n_sm = "sms"                # optional: SMs in use (count; default [gpu] n_sm)

    [metrics]                     # every other numeric column becomes a whole-run metric
    ignore = ["", "blocks"]       # columns to drop
    text = ["argNo"]              # columns that are text even where a value looks numeric
    rename = { DRAMA = "dram_active" }
    prefix = ""                   # prepended to metric names not renamed

    [inputs]                      # optional: the inputs of Wang & Chu's model (paper 003)
    blocks = { column = "grid_blocks", unit = "count" }
    l2_hit_rate = { expr = "100 * (1 - dram_reads / l2_reads)", unit = "%" }

Each [columns] number (core_mhz, mem_mhz, time, power, energy, n_sm) is one of:

- a column: ``"name"`` or ``{ column = "name", unit = "..." }`` (the unit defaults to MHz, ns,
  W, J, count);
- a constant, ``{ value = <number>, unit = "..." }``, for a quantity the dataset held fixed and
  did not record (e.g. the memory clock of a core-clock sweep): exactly value and unit, the
  value finite and positive (n_sm: a whole number), stored on every run;
- a derived value, ``{ expr = "<DuckDB SQL expression>", unit = "..." }``, evaluated per row
  like an [inputs] expression (below) over the file's own columns only: it cannot name another
  [columns] number (a constant belongs in the expression as a number), and must give a finite
  number on every row. The columns it reads stay metrics unless [metrics] ignore lists them.

``[file]`` describes a CSV that is not one header line plus data: ``header`` names the columns
of a file without a header row (its first line is data); ``labels`` names a column that is
filled from section-label lines, a line holding a single non-numeric field, which is not data
but names the kernel of the data lines after it (so [columns] kernel must list that column;
data before the first label is an error); ``duplicates`` says what to do with a header that
names a column twice: refuse the file (the default, naming the columns), or ``"number"`` them
``name``, ``name.1``, ``name.2``, ... as pandas does, so the mapping can place ``time.1``.
Parquet files take no ``header`` or ``labels``.

``[rows]`` applies to CSV and Parquet alike. ``where`` is a DuckDB SQL expression over the
file's columns, bounded and evaluated like an [inputs] expression, that must give a boolean per
row: the rows where it is true are the file's runs, the others (false or NULL) are left out
and counted in the report (FileReport.filtered); a GPU column (below) is checked on the rows
kept only. ``repeats = "number"`` keeps a kernel label that the file measures more than once at
one setting (core and memory clock, SMs: two sections of one benchmark, two launches of one
kernel): every row of such a label gets ``<label>#<k>``, k counting that label's rows at their
setting in file order from 1, so the label's first section is ``#1`` at every setting; labels
measured once per setting keep their name. The report lists each numbered label
(FileReport.repeats). Without it such a file is refused, naming how many rows repeat a setting
and the first few by line.

``[inputs]`` declares which of the file's columns (or which expression over them) hold the
per-run inputs of Wang & Chu's model (gpudb.predictors.wangchu_model.KernelCounters). Its keys are
exactly the
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
metrics under the canonical name (see gpudb.sources.tabular.ingest for how expressions are
evaluated, locked down, and what happens to values that are not finite). The columns an input
reads still become metrics themselves unless [metrics] ignore lists them. An expression is
parsed when the mapping
is loaded (a syntax error is a mapping error); whether its columns exist is checked against
each data file at ingest.

A file that says which GPU it measured is checked against [gpu]: the column that [gpu]
column names, and any text column called ``gpu``, ``gpu_name``, ``gpu_model``, ``gpu_type`` or
``device_name`` (any case, ``-`` or space for ``_``; not a [columns] kernel column). Every value
of it must name the mapping's GPU (gpudb.sources.tabular.validate.names_gpu: "Tesla
V100-PCIE-32GB" names gpu_id ``v100``, "NVIDIA GeForce RTX 2070 SUPER" the name "GeForce RTX
2070 SUPER", "GeForce RTX 2070" neither), otherwise the ingest stops with one line naming file,
row and value.

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

from gpudb.store.db import GpudbError
from gpudb.store.trust import file_kind

# unit -> factor to the stored unit (ns, MHz, W, J)
TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
FREQ_UNITS = {"MHz": 1.0, "GHz": 1e3, "kHz": 1e-3}
POWER_UNITS = {"W": 1.0, "mW": 1e-3}
ENERGY_UNITS = {"J": 1.0, "mJ": 1e-3, "uJ": 1e-6}
FRACTION_UNITS = {"fraction": 1.0, "%": 0.01}

# [inputs]: the canonical names of Wang & Chu's model inputs (paper 003, the per-run fields of
# gpudb.predictors.wangchu_model.KernelCounters) -> their units -> factor to the stored unit.
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
            "nominal_core_mhz", "nominal_mem_mhz", "column"},
    "run": {"suite", "source", "policy", "experiment"},
    "file": {"header", "labels", "duplicates"},
    "rows": {"where", "repeats"},
    "columns": {"kernel", "core_mhz", "mem_mhz", "time", "power", "energy", "n_sm"},
    "metrics": {"ignore", "text", "rename", "prefix"},
    "inputs": set(INPUTS),
}
_GPU_REQUIRED = ("gpu_id", "name", "n_sm")
# [columns] number key -> (its units, the unit of a column given without one)
_NUMBER_UNITS = {
    "core_mhz": (FREQ_UNITS, "MHz"),
    "mem_mhz": (FREQ_UNITS, "MHz"),
    "time": (TIME_UNITS, "ns"),
    "power": (POWER_UNITS, "W"),
    "energy": (ENERGY_UNITS, "J"),
    "n_sm": ({"count": 1.0}, "count"),
}
MAX_MAPPING_BYTES = 1 << 20
_INT32_MAX = 2**31 - 1


class MappingError(GpudbError):
    """A mapping file that cannot be used; the message names the file and key."""


@dataclass(frozen=True)
class Derived:
    """A number per row of the data file, in ``unit``; ``factor`` converts it to gpudb's unit.
    Exactly one of: ``column``, a column of the file; ``expr``, a DuckDB SQL expression over the
    file's columns; ``value``, a constant (a quantity the file held fixed and did not record;
    [columns] only). ``key`` names it in messages (e.g. "[inputs] blocks", "[columns] time").
    Evaluated by gpudb.sources.tabular.ingest.
    """
    key: str
    unit: str
    factor: float
    column: str | None = None
    expr: str | None = None
    value: float | None = None

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
    core_mhz: Derived
    mem_mhz: Derived
    time: Derived
    power: Derived | None
    energy: Derived | None
    n_sm: Derived | None
    ignore: frozenset[str] = field(default_factory=frozenset)
    text: frozenset[str] = field(default_factory=frozenset)
    rename: dict = field(default_factory=dict)
    prefix: str = ""
    inputs: dict = field(default_factory=dict)  # canonical name -> Derived ([inputs])
    # [file]: the column names of a file without a header row; the column that section-label
    # lines fill; what to do with a header naming a column twice ("refuse" or "number")
    header: tuple[str, ...] | None = None
    labels: str | None = None
    duplicates: str = "refuse"
    # [rows]: the rows that are runs (a boolean DuckDB expression over the file's columns;
    # None: every row); what to do with a kernel measured twice at one setting ("refuse" or
    # "number": label#1, label#2, ... in file order)
    where: str | None = None
    repeats: str = "refuse"

    def measures(self) -> dict[str, Derived]:
        """The [columns] numbers the mapping gives (core_mhz, mem_mhz, time, power or energy,
        n_sm if given), by key."""
        return {key: m for key, m in (("core_mhz", self.core_mhz), ("mem_mhz", self.mem_mhz),
                                      ("time", self.time), ("power", self.power),
                                      ("energy", self.energy), ("n_sm", self.n_sm))
                if m is not None}

    def mapped_columns(self) -> set[str]:
        """File columns consumed by the run row (not metrics); the columns a [columns]
        expression reads stay metrics, like those of [inputs]."""
        return set(self.kernel) | {m.column for m in self.measures().values()
                                   if m.column is not None}

    def metric_name(self, column: str) -> str:
        return self.rename.get(column, self.prefix + column)


def _fail(path: Path, message: str) -> MappingError:
    return MappingError(f"{path}: {message}")


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


def _derived(path: Path, key: str, value, units: dict[str, float], *,
             default_unit: str | None = None) -> Derived:
    """``{ column = "name", unit = "..." }`` or ``{ expr = "<SQL>", unit = "..." }``. With a
    `default_unit` (the [columns] numbers) also ``{ value = <number>, unit = "..." }``, and a
    column may be a bare name or leave out its unit.
    The expression is parsed here (by DuckDB's own parser, as one expression: no statement, no
    list), so a syntax error is a mapping error; its columns are checked at ingest. A constant
    must be a finite number, positive after conversion to gpudb's unit (also checked at ingest
    for the file's values)."""
    constant = default_unit is not None
    forms = ("column", "value", "expr") if constant else ("column", "expr")
    if isinstance(value, str) and constant:
        value = {"column": value}
    if not isinstance(value, dict):
        wanted = ("a column name or {column, unit}, {value, unit} or {expr, unit}" if constant
                  else "{ column = ..., unit = ... } or { expr = ..., unit = ... }")
        raise _fail(path, f"{key} must be {wanted}, not {_toml_type(value)}")
    extra = set(value) - {*forms, "unit"}
    if extra:
        raise _fail(path, f"unknown key {min(extra)!r} in {key}; expected "
                          f"{' or '.join(map(repr, forms))}, and 'unit'")
    if sum(f in value for f in forms) != 1:
        raise _fail(path, f"{key} needs exactly one of {', '.join(map(repr, forms[:-1]))} and "
                          f"{forms[-1]!r}")
    if "unit" not in value and not (constant and "column" in value):
        raise _fail(path, f"{key} needs a 'unit' (one of {', '.join(map(repr, units))})")
    unit = value.get("unit", default_unit)
    if not isinstance(unit, str):
        raise _fail(path, f"{key}: unit must be a string, not {_toml_type(unit)}")
    if unit not in units:
        raise _fail(path, f"{key}: unknown unit {unit!r}; use one of "
                          f"{', '.join(map(repr, units))}")
    if "column" in value:
        return Derived(key, unit, units[unit], column=_column(path, key, value["column"]))
    if "value" in value:
        number = value["value"]
        if (isinstance(number, bool) or not isinstance(number, (int, float))
                or not math.isfinite(number) or not math.isfinite(number * units[unit])
                or number * units[unit] <= 0):
            raise _fail(path, f"{key}: value must be a positive finite number of {unit}, not "
                              f"{_toml_type(number)}")
        return Derived(key, unit, units[unit], value=float(number))
    expr = _text(path, f"{key} expr", value["expr"])
    try:
        duckdb.SQLExpression(expr)
    except duckdb.Error as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _fail(path, f"{key}: expr is not one SQL expression: {detail}") from None
    return Derived(key, unit, units[unit], expr=expr)


def _column_list(path: Path, key: str, value, must: str) -> tuple[str, ...]:
    """A non-empty TOML list of distinct column names."""
    if not isinstance(value, list) or not value:
        raise _fail(path, f"{key} {must}, not "
                          f"{'an empty list' if value == [] else _toml_type(value)}")
    names = tuple(_column(path, f"{key}[{i}]", v) for i, v in enumerate(value))
    if len(set(names)) != len(names):
        raise _fail(path, f"{key} lists {next(n for n in names if names.count(n) > 1)!r} twice")
    return names


def _file_section(path: Path, section: dict, kernel: tuple[str, ...]
                  ) -> tuple[tuple[str, ...] | None, str | None, str]:
    """[file]: (header, labels, duplicates), checked."""
    header = section.get("header")
    if header is not None:
        header = _column_list(path, "[file] header", header,
                              "must be the list of the file's column names")
    labels = section.get("labels")
    if labels is not None:
        labels = _column(path, "[file] labels", labels)
        if labels not in kernel:
            raise _fail(path, f"[file] labels puts the labels in column {labels!r}, which "
                              "[columns] kernel must name (a label names the kernel of the "
                              "lines that follow it)")
        if header is not None and labels in header:
            raise _fail(path, f"[file] labels names {labels!r}, which [file] header also "
                              "lists; the labels fill a column of their own")
    duplicates = section.get("duplicates", "refuse")
    if duplicates not in ("refuse", "number"):
        raise _fail(path, "[file] duplicates must be 'refuse' or 'number', not "
                          f"{_toml_type(duplicates)}")
    return header, labels, duplicates


def _rows_section(path: Path, section: dict) -> tuple[str | None, str]:
    """[rows]: (where, repeats), checked; the expression parsed as one SQL expression (its
    bounds and columns are checked at ingest, like the other expressions')."""
    where = section.get("where")
    if where is not None:
        where = _text(path, "[rows] where", where)
        try:
            duckdb.SQLExpression(where)
        except duckdb.Error as exc:
            detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise _fail(path, f"[rows] where is not one SQL expression: {detail}") from None
    repeats = section.get("repeats", "refuse")
    if repeats not in ("refuse", "number"):
        raise _fail(path, "[rows] repeats must be 'refuse' or 'number', not "
                          f"{_toml_type(repeats)}")
    return where, repeats


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
    if "column" in gpu:
        _column(path, "[gpu] column", gpu["column"])

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
    kernel = _column_list(path, "[columns] kernel", [kernel] if isinstance(kernel, str) else kernel,
                          "must be a column name or a list of them")
    measures = {key: _derived(path, f"[columns] {key}", columns[key], units,
                              default_unit=default) if key in columns else None
                for key, (units, default) in _NUMBER_UNITS.items()}
    n_sm = measures["n_sm"]
    if n_sm is not None and n_sm.value is not None and (n_sm.value % 1
                                                         or n_sm.value > _INT32_MAX):
        raise _fail(path, f"[columns] n_sm: value must be a whole number of SMs, not "
                          f"{_toml_type(columns['n_sm']['value'])}")
    mapped = {k: "[columns] kernel" for k in kernel}
    mapped.update({m.column: f"[columns] {key}" for key, m in measures.items()
                   if m is not None and m.column is not None})

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
    header, labels, duplicates = _file_section(path, doc.get("file", {}), kernel)
    where, repeats = _rows_section(path, doc.get("rows", {}))
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
        header=header,
        labels=labels,
        duplicates=duplicates,
        where=where,
        repeats=repeats,
    )
