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

Unknown keys are errors, so a typo cannot silently drop a column.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from gpudb.db import GpudbError

# unit -> factor to the stored unit (ns, MHz, W, J)
TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
FREQ_UNITS = {"MHz": 1.0, "GHz": 1e3, "kHz": 1e-3}
POWER_UNITS = {"W": 1.0, "mW": 1e-3}
ENERGY_UNITS = {"J": 1.0, "mJ": 1e-3, "uJ": 1e-6}

_SECTIONS = {
    "description": None,
    "gpu": {"gpu_id", "name", "n_sm", "max_warps_per_sm", "max_ctas_per_sm",
            "nominal_core_mhz", "nominal_mem_mhz"},
    "run": {"suite", "source", "policy", "experiment"},
    "columns": {"kernel", "core_mhz", "mem_mhz", "time", "power", "energy", "n_sm"},
    "metrics": {"ignore", "text", "rename", "prefix"},
}
_GPU_REQUIRED = ("gpu_id", "name", "n_sm")


class MappingError(GpudbError):
    """A mapping file that cannot be used; the message names the file and key."""


@dataclass(frozen=True)
class Measure:
    """One mapped numeric column: its name in the file and the factor to gpudb's unit."""
    column: str
    unit: str
    factor: float


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

    def mapped_columns(self) -> set[str]:
        """File columns consumed by the run row (not metrics)."""
        measures = [self.core_mhz, self.mem_mhz, self.time, self.power, self.energy, self.n_sm]
        return set(self.kernel) | {m.column for m in measures if m is not None}

    def metric_name(self, column: str) -> str:
        return self.rename.get(column, self.prefix + column)


def _fail(path: Path, message: str) -> MappingError:
    return MappingError(f"{path}: {message}")


def _measure(path: Path, key: str, value, units: dict[str, float], default_unit: str) -> Measure:
    if isinstance(value, str):
        value = {"column": value}
    if not isinstance(value, dict):
        raise _fail(path, f"[columns] {key} must be a column name or {{column, unit}}")
    extra = set(value) - {"column", "unit"}
    if extra:
        raise _fail(path, f"unknown key {sorted(extra)[0]!r} in [columns] {key}; "
                          "expected 'column' and 'unit'")
    if not isinstance(value.get("column"), str):
        raise _fail(path, f"[columns] {key} needs a 'column' name")
    unit = value.get("unit", default_unit)
    if unit not in units:
        raise _fail(path, f"[columns] {key}: unknown unit {unit!r}; use one of {sorted(units)}")
    return Measure(value["column"], unit, units[unit])


def load_mapping(path: str | Path) -> Mapping:
    """Read and check a mapping file; raises MappingError naming the file and the bad key."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MappingError(f"cannot read mapping {path}: {exc.strerror}") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _fail(path, f"not valid TOML: {exc}") from None

    for section, value in doc.items():
        if section not in _SECTIONS:
            raise _fail(path, f"unknown section [{section}]; expected one of "
                              f"{', '.join(sorted(_SECTIONS))}")
        allowed = _SECTIONS[section]
        if allowed is None:
            continue
        if not isinstance(value, dict):
            raise _fail(path, f"[{section}] must be a table")
        for key in value:
            if key not in allowed:
                raise _fail(path, f"unknown key {key!r} in [{section}]; expected one of "
                                  f"{', '.join(sorted(allowed))}")

    gpu = dict(doc.get("gpu", {}))
    for key in _GPU_REQUIRED:
        if key not in gpu:
            raise _fail(path, f"[gpu] needs {key!r}")
    if not isinstance(gpu["n_sm"], int) or gpu["n_sm"] <= 0:
        raise _fail(path, "[gpu] n_sm must be a positive integer")

    run = doc.get("run", {})
    if "suite" not in run:
        raise _fail(path, "[run] needs 'suite' (kernel ids are '<suite>/<kernel>')")
    source = run.get("source", "measured")
    if source not in ("measured", "sim"):
        raise _fail(path, f"[run] source must be 'measured' or 'sim', not {source!r}")

    columns = doc.get("columns", {})
    for key in ("kernel", "core_mhz", "mem_mhz", "time"):
        if key not in columns:
            raise _fail(path, f"[columns] needs {key!r}")
    if ("power" in columns) == ("energy" in columns):
        raise _fail(path, "[columns] needs exactly one of 'power' and 'energy'")
    kernel = columns["kernel"]
    kernel = (kernel,) if isinstance(kernel, str) else tuple(kernel)
    if not kernel or not all(isinstance(k, str) for k in kernel):
        raise _fail(path, "[columns] kernel must be a column name or a list of them")

    metrics = doc.get("metrics", {})
    rename = metrics.get("rename", {})
    if not isinstance(rename, dict) or not all(isinstance(v, str) for v in rename.values()):
        raise _fail(path, "[metrics] rename must map column names to metric names")
    return Mapping(
        path=path,
        sha256=hashlib.sha256(raw).hexdigest(),
        description=str(doc.get("description", "")),
        gpu=gpu,
        suite=str(run["suite"]),
        source=source,
        policy=str(run.get("policy", "fixed")),
        experiment=run.get("experiment"),
        kernel=kernel,
        core_mhz=_measure(path, "core_mhz", columns["core_mhz"], FREQ_UNITS, "MHz"),
        mem_mhz=_measure(path, "mem_mhz", columns["mem_mhz"], FREQ_UNITS, "MHz"),
        time=_measure(path, "time", columns["time"], TIME_UNITS, "ns"),
        power=(_measure(path, "power", columns["power"], POWER_UNITS, "W")
               if "power" in columns else None),
        energy=(_measure(path, "energy", columns["energy"], ENERGY_UNITS, "J")
                if "energy" in columns else None),
        n_sm=(_measure(path, "n_sm", columns["n_sm"], {"count": 1.0}, "count")
              if "n_sm" in columns else None),
        ignore=frozenset(metrics.get("ignore", ())),
        text=frozenset(metrics.get("text", ())),
        rename=rename,
        prefix=str(metrics.get("prefix", "")),
    )
