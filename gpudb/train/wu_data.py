"""The data Wu et al.'s model (paper 002) is trained on: one GPU's fixed runs over the full grid
of (SM count, core MHz, memory MHz), the classifier's features at the base setting, the
kernels eligible for training and their random split (section IV), and the base setting as
the command line gives it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import duckdb
import numpy as np

from gpudb.store.db import GpudbError, first_row

# Classifier inputs for simulated runs, computed by view wu_feature from interval counters:
# analogues of paper 002 table II (see schema/views/41_wu_feature.sql for each one's definition).
SIM_FEATURES = (
    "wu_alu_inst_frac", "wu_sfu_inst_frac", "wu_load_inst_frac", "wu_store_inst_frac",
    "wu_shared_inst_frac", "wu_alu_busy", "wu_sfu_busy", "wu_mem_unit_busy",
    "wu_mem_unit_stalled", "wu_write_unit_stalled", "wu_l2_hit_rate", "wu_occupancy", "wu_ipc",
    "wu_mem_time", "wu_loads_per_transaction", "wu_stores_per_transaction",
    "wu_read_bandwidth", "wu_write_bandwidth",
)


# Measured runs: the DCGM profiling activities of an ingested dataset (metric names dcgm_*).
MEASURED_FEATURE_PREFIX = "dcgm_"


QUANTITIES = ("time", "power")


@dataclass
class _Data:
    """One GPU's fixed runs on a full grid, per kernel: values[q] has shape
    (kernels, n_cu, n_core, n_mem)."""

    kernels: list[str]
    cu: np.ndarray
    core: np.ndarray
    mem: np.ndarray
    values: dict[str, np.ndarray]
    excluded: dict[str, str]
    data_sha256: str


def _load_grid(con: duckdb.DuckDBPyConnection, gpu_id: str, power: bool) -> _Data:
    """Average time (ns) and power (W) of every kernel at every fixed setting of the GPU;
    kernels missing a setting of the full grid are excluded."""
    if first_row(con.execute("SELECT count(*) FROM gpu WHERE gpu_id = ?", [gpu_id]))[0] == 0:
        raise GpudbError(f"no GPU {gpu_id!r} in the database")
    result = con.execute("""
        SELECT r.kernel_id, coalesce(r.n_sm, g.n_sm) AS cu, r.core_mhz, r.mem_mhz,
               avg(r.time_ns) AS time_ns,
               avg(r.energy_j / (r.time_ns * 1e-9)) AS power_w,
               bool_and(r.energy_j IS NOT NULL) AS has_energy
        FROM run AS r JOIN gpu AS g ON g.gpu_id = r.gpu_id
        WHERE r.gpu_id = ? AND r.policy = 'fixed'
        GROUP BY ALL
    """, [gpu_id])
    rows = result.fetchall()
    table = {d[0]: [row[i] for row in rows] for i, d in enumerate(result.description)}
    if not rows:
        raise GpudbError(f"GPU {gpu_id!r} has no fixed runs to train on")
    ids = con.execute("SELECT run_id FROM run WHERE gpu_id = ? AND policy = 'fixed' "
                      "ORDER BY run_id", [gpu_id]).fetchall()
    data_sha256 = hashlib.sha256("\n".join(r[0] for r in ids).encode()).hexdigest()

    cu, core, mem = (np.unique(np.asarray(table[c], dtype=np.float64))
                     for c in ("cu", "core_mhz", "mem_mhz"))
    if len(cu) * len(core) * len(mem) < 2:
        raise GpudbError(f"GPU {gpu_id!r} has fixed runs at one setting only: nothing to scale")
    kernels = sorted(set(table["kernel_id"]))
    k_index = {k: i for i, k in enumerate(kernels)}
    shape = (len(kernels), len(cu), len(core), len(mem))
    values = {q: np.full(shape, np.nan) for q in QUANTITIES}
    for row in range(len(table["kernel_id"])):
        at = (k_index[table["kernel_id"][row]], np.searchsorted(cu, table["cu"][row]),
              np.searchsorted(core, table["core_mhz"][row]),
              np.searchsorted(mem, table["mem_mhz"][row]))
        values["time"][at] = table["time_ns"][row]
        if table["has_energy"][row]:
            values["power"][at] = table["power_w"][row]

    excluded = {}
    settings = shape[1] * shape[2] * shape[3]
    for i, kernel in enumerate(kernels):
        have = int(np.isfinite(values["time"][i]).sum())
        if have < settings:
            excluded[kernel] = f"runs at {have} of the grid's {settings} settings"
    if len(excluded) == len(kernels):
        raise GpudbError(f"no kernel of GPU {gpu_id!r} has fixed runs at all {settings} settings "
                         f"of its grid ({len(cu)} SM counts x {len(core)} core x {len(mem)} "
                         "memory MHz)")
    if power:
        no_energy = [k for i, k in enumerate(kernels)
                     if k not in excluded and not np.isfinite(values["power"][i]).all()]
        if len(no_energy) + len(excluded) == len(kernels):
            raise GpudbError(f"no kernel of GPU {gpu_id!r} has energy_j at every setting: "
                             "train without power")
        excluded.update({k: "a run without energy_j (needed for power)" for k in no_energy})
    return _Data(kernels, cu, core, mem, values, excluded, data_sha256)


def default_features(con: duckdb.DuckDBPyConnection, gpu_id: str,
                     base: tuple[int, float, float]) -> list[str]:
    """The classifier inputs for a GPU's data: table II analogues for simulated runs (they
    have intervals), the ``dcgm_*`` metrics for measured ones."""
    n_sm, core, mem = base
    where = ("FROM run AS r JOIN gpu AS g ON g.gpu_id = r.gpu_id WHERE r.gpu_id = ? "
             "AND r.policy = 'fixed' AND coalesce(r.n_sm, g.n_sm) = ? AND r.core_mhz = ? "
             "AND r.mem_mhz = ?")
    params = [gpu_id, n_sm, core, mem]
    simulated = first_row(con.execute(
        f"SELECT count(*) FROM interval WHERE run_id IN (SELECT r.run_id {where})", params))[0]
    if simulated:
        return list(SIM_FEATURES)
    names = [row[0] for row in con.execute(
        f"SELECT DISTINCT name FROM metric WHERE idx IS NULL AND starts_with(name, ?) "
        f"AND run_id IN (SELECT r.run_id {where}) ORDER BY name",
        [MEASURED_FEATURE_PREFIX, *params]).fetchall()]
    if not names:
        raise GpudbError(f"no default features for {gpu_id!r}: its base runs have no intervals "
                         f"and no {MEASURED_FEATURE_PREFIX}* metrics; name them with --features "
                         "(gpudb train wu; features= in Python)")
    return names


def _base_features(con, gpu_id: str, base: tuple[int, float, float],
                   features: list[str]) -> dict[str, np.ndarray]:
    """kernel -> feature vector (order of ``features``) at the base setting, averaged over
    repeated base runs; kernels missing a feature are left out."""
    rows = con.execute("""
        SELECT r.kernel_id, f.feature, avg(f.value)
        FROM run AS r
        JOIN gpu AS g ON g.gpu_id = r.gpu_id
        JOIN wu_feature AS f ON f.run_id = r.run_id
        WHERE r.gpu_id = ? AND r.policy = 'fixed' AND coalesce(r.n_sm, g.n_sm) = ?
          AND r.core_mhz = ? AND r.mem_mhz = ? AND list_contains(?::TEXT[], f.feature)
        GROUP BY ALL
    """, [gpu_id, *base, features]).fetchall()
    position = {name: i for i, name in enumerate(features)}
    found: dict[str, np.ndarray] = {}
    for kernel, name, value in rows:
        found.setdefault(kernel, np.full(len(features), np.nan))[position[name]] = value
    seen = {name for _, name, _ in rows}
    missing = [name for name in features if name not in seen]
    if missing:
        raise GpudbError(f"feature {missing[0]!r} is not measured for any base run of "
                         f"{gpu_id!r} (see view wu_feature)")
    return {k: v for k, v in found.items() if np.isfinite(v).all()}


def _split(kernels: list[str], train_fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """Random kernel split (paper 002 section IV), reproducible for a seed."""
    order = np.random.default_rng(seed).permutation(len(kernels))
    n_train = min(len(kernels), max(1, round(train_fraction * len(kernels))))
    train = sorted(kernels[i] for i in order[:n_train])
    return train, sorted(kernels[i] for i in order[n_train:])


def _base_setting(data: _Data, gpu_id: str, base: tuple[int, float, float] | None
                  ) -> tuple[tuple[int, float, float], tuple[int, int, int]]:
    """The base setting (None: the grid's highest) and its (cu, core, mem) index on the grid."""
    if base is None:
        base = (int(data.cu[-1]), float(data.core[-1]), float(data.mem[-1]))
    base = (int(base[0]), float(base[1]), float(base[2]))
    try:
        base_idx = (int(np.flatnonzero(data.cu == base[0])[0]),
                    int(np.flatnonzero(data.core == base[1])[0]),
                    int(np.flatnonzero(data.mem == base[2])[0]))
    except IndexError:
        raise GpudbError(f"base setting {base} (SMs, core MHz, memory MHz) is not on the grid of "
                         f"{gpu_id!r}: SMs {data.cu.astype(int).tolist()}, core "
                         f"{data.core.tolist()}, memory {data.mem.tolist()}") from None
    return base, base_idx


def _eligible(data: _Data, measured: dict[str, np.ndarray],
              gpu_id: str) -> tuple[dict[str, str], list[str]]:
    """(kernel -> why it is left out, the kernels left to split): a kernel needs the full grid
    of runs (and energy, for power) and every feature at the base setting."""
    excluded = dict(data.excluded)
    for kernel in data.kernels:
        if kernel not in excluded and kernel not in measured:
            excluded[kernel] = "a feature is missing at the base setting"
    eligible = [k for k in data.kernels if k not in excluded]
    if not eligible:
        raise GpudbError(f"no kernel of {gpu_id!r} has both a full grid and every feature")
    return excluded, eligible


def grid_settings(con: duckdb.DuckDBPyConnection, gpu_id: str) -> list[tuple[int, float, float]]:
    """Every (SM count, core MHz, memory MHz) of a GPU's full grid of fixed runs."""
    data = _load_grid(con, gpu_id, power=False)
    return [(int(c), float(e), float(m)) for c in data.cu for e in data.core for m in data.mem]
