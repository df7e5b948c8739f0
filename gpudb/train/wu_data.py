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


# DCGM's profiling fields under the names files publish them by: dcgmi dmon's short names
# (DRAMA, SMACT, ...) and the field ids (DCGM_FI_PROF_DRAM_ACTIVE, ...), any case, each with
# the dcgm_* name a mapping's rename gives it (fixtures/mappings/v100-profile.toml). A metric
# under one of these names is a default feature like a dcgm_* one, so a file ingested without
# a rename trains without --features.
DCGM_FIELDS = {
    "gract": "dcgm_gr_engine_active", "dcgm_fi_prof_gr_engine_active": "dcgm_gr_engine_active",
    "smact": "dcgm_sm_active", "dcgm_fi_prof_sm_active": "dcgm_sm_active",
    "smocc": "dcgm_sm_occupancy", "dcgm_fi_prof_sm_occupancy": "dcgm_sm_occupancy",
    "tenso": "dcgm_tensor_active", "dcgm_fi_prof_pipe_tensor_active": "dcgm_tensor_active",
    "drama": "dcgm_dram_active", "dcgm_fi_prof_dram_active": "dcgm_dram_active",
    "fp64a": "dcgm_fp64_active", "dcgm_fi_prof_pipe_fp64_active": "dcgm_fp64_active",
    "fp32a": "dcgm_fp32_active", "dcgm_fi_prof_pipe_fp32_active": "dcgm_fp32_active",
    "fp16a": "dcgm_fp16_active", "dcgm_fi_prof_pipe_fp16_active": "dcgm_fp16_active",
    "pcitx": "dcgm_pcie_tx_bytes", "dcgm_fi_prof_pcie_tx_bytes": "dcgm_pcie_tx_bytes",
    "pcirx": "dcgm_pcie_rx_bytes", "dcgm_fi_prof_pcie_rx_bytes": "dcgm_pcie_rx_bytes",
    "nvltx": "dcgm_nvlink_tx_bytes", "dcgm_fi_prof_nvlink_tx_bytes": "dcgm_nvlink_tx_bytes",
    "nvlrx": "dcgm_nvlink_rx_bytes", "dcgm_fi_prof_nvlink_rx_bytes": "dcgm_nvlink_rx_bytes",
}


def dcgm_field(metric: str) -> str | None:
    """The dcgm_* name of a metric named as DCGM publishes a profiling field ('DRAMA',
    'DCGM_FI_PROF_DRAM_ACTIVE'), or the metric's own name if it is a dcgm_* one; else None."""
    if metric.lower() in DCGM_FIELDS:
        return DCGM_FIELDS[metric.lower()]
    return metric if metric.startswith(MEASURED_FEATURE_PREFIX) else None


QUANTITIES = ("time", "power")


@dataclass
class Data:
    """One GPU's fixed runs on a full grid, per kernel: values[q] has shape
    (kernels, n_cu, n_core, n_mem)."""

    kernels: list[str]
    cu: np.ndarray
    core: np.ndarray
    mem: np.ndarray
    values: dict[str, np.ndarray]
    excluded: dict[str, str]
    data_sha256: str


# the runs a model trains on: one GPU's fixed runs, of one suite and some kernels if given
_SELECTED = ("r.gpu_id = $gpu AND r.policy = 'fixed' "
             "AND (CAST($suite AS TEXT) IS NULL OR starts_with(r.kernel_id, $suite || '/')) "
             "AND (CAST($kernels AS TEXT[]) IS NULL "
             "OR list_contains(CAST($kernels AS TEXT[]), r.kernel_id))")


def training_kernels(con: duckdb.DuckDBPyConnection, gpu_id: str, suite: str | None,
                     kernels: list[str] | None) -> list[str] | None:
    """The kernel ids ``suite`` and ``kernels`` select among the GPU's fixed runs (None: no
    selection, every kernel); a selection that names a kernel without fixed runs, or selects
    nothing, is an error naming what the GPU has."""
    if suite is None and not kernels:
        return None
    have = [r[0] for r in con.execute(
        "SELECT DISTINCT kernel_id FROM run WHERE gpu_id = ? AND policy = 'fixed' ORDER BY 1",
        [gpu_id]).fetchall()]
    unknown = sorted(set(kernels or ()) - set(have))
    if unknown:
        raise GpudbError(f"no fixed runs of {', '.join(map(repr, unknown))} on {gpu_id!r} "
                         f"(its kernels: {', '.join(have[:8])}{', ...' if len(have) > 8 else ''})")
    chosen = [k for k in have if (suite is None or k.startswith(suite + "/"))
              and (not kernels or k in kernels)]
    if not chosen:
        suites = sorted({k.split("/", 1)[0] for k in have})
        raise GpudbError(f"no fixed runs of suite {suite!r} on {gpu_id!r}"
                         + (" among the kernels given" if kernels else "")
                         + f" (its suites: {', '.join(map(repr, suites)) or 'none'})")
    return chosen


def load_grid(con: duckdb.DuckDBPyConnection, gpu_id: str, power: bool,
               kernels: list[str] | None = None) -> Data:
    """Average time (ns) and power (W) of every kernel (of ``kernels``, kernel ids, if given)
    at every fixed setting of the GPU; kernels missing a setting of the full grid are
    excluded."""
    if first_row(con.execute("SELECT count(*) FROM gpu WHERE gpu_id = ?", [gpu_id]))[0] == 0:
        raise GpudbError(f"no GPU {gpu_id!r} in the database")
    selected = {"gpu": gpu_id, "suite": None, "kernels": kernels}
    result = con.execute(f"""
        SELECT r.kernel_id, coalesce(r.n_sm, g.n_sm) AS cu, r.core_mhz, r.mem_mhz,
               avg(r.time_ns) AS time_ns,
               avg(r.energy_j / (r.time_ns * 1e-9)) AS power_w,
               bool_and(r.energy_j IS NOT NULL) AS has_energy
        FROM run AS r JOIN gpu AS g ON g.gpu_id = r.gpu_id
        WHERE {_SELECTED}
        GROUP BY ALL
    """, selected)
    rows = result.fetchall()
    table = {d[0]: [row[i] for row in rows] for i, d in enumerate(result.description)}
    if not rows:
        raise GpudbError(f"GPU {gpu_id!r} has no fixed runs to train on")
    ids = con.execute(f"SELECT run_id FROM run AS r WHERE {_SELECTED} ORDER BY run_id",
                      selected).fetchall()
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
    return Data(kernels, cu, core, mem, values, excluded, data_sha256)


def default_features(con: duckdb.DuckDBPyConnection, gpu_id: str,
                     base: tuple[int, float, float], kernels: list[str] | None = None
                     ) -> list[str]:
    """The classifier inputs for a GPU's data: table II analogues for simulated runs (they
    have intervals), the DCGM profiling activities for measured ones: ``dcgm_*`` metrics and
    metrics under DCGM's published names (:data:`DCGM_FIELDS`; where a run has a field under
    both, the ``dcgm_*`` one). ``kernels``: only these kernel ids' base runs (None: all)."""
    n_sm, core, mem = base
    where = ("FROM run AS r JOIN gpu AS g ON g.gpu_id = r.gpu_id WHERE r.gpu_id = ? "
             "AND r.policy = 'fixed' AND coalesce(r.n_sm, g.n_sm) = ? AND r.core_mhz = ? "
             "AND r.mem_mhz = ? AND (CAST(? AS TEXT[]) IS NULL "
             "OR list_contains(CAST(? AS TEXT[]), r.kernel_id))")
    params = [gpu_id, n_sm, core, mem, kernels, kernels]
    simulated = first_row(con.execute(
        f"SELECT count(*) FROM interval WHERE run_id IN (SELECT r.run_id {where})", params))[0]
    if simulated:
        return list(SIM_FEATURES)
    metrics = [row[0] for row in con.execute(
        f"SELECT DISTINCT name FROM metric WHERE idx IS NULL "
        f"AND run_id IN (SELECT r.run_id {where}) ORDER BY name", params).fetchall()]
    fields: dict[str, list[str]] = {}
    for name in metrics:
        if dcgm_field(name) is not None:
            fields.setdefault(dcgm_field(name), []).append(name)
    # one name per field: the dcgm_* one where both are stored, else the published one
    names = sorted(min(found, key=lambda n: not n.startswith(MEASURED_FEATURE_PREFIX))
                   for found in fields.values())
    if not names:
        raise GpudbError(f"no default features for {gpu_id!r}: its base runs have no intervals "
                         f"and no DCGM activities ({MEASURED_FEATURE_PREFIX}* metrics, or "
                         "DCGM's names: DRAMA, SMACT, SMOCC, FP32A, ...); name them with "
                         "--features (gpudb train wu; features= in Python)")
    return names


def base_features(con, gpu_id: str, base: tuple[int, float, float],
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


def split_kernels(kernels: list[str], train_fraction: float,
                  seed: int) -> tuple[list[str], list[str]]:
    """Random kernel split (paper 002 section IV), reproducible for a seed."""
    order = np.random.default_rng(seed).permutation(len(kernels))
    n_train = min(len(kernels), max(1, round(train_fraction * len(kernels))))
    train = sorted(kernels[i] for i in order[:n_train])
    return train, sorted(kernels[i] for i in order[n_train:])


def base_setting(data: Data, gpu_id: str, base: tuple[int, float, float] | None
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


def eligible_kernels(data: Data, measured: dict[str, np.ndarray],
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


def grid_settings(con: duckdb.DuckDBPyConnection, gpu_id: str,
                  kernels: list[str] | None = None) -> list[tuple[int, float, float]]:
    """Every (SM count, core MHz, memory MHz) of a GPU's full grid of fixed runs (of
    ``kernels``, kernel ids, if given)."""
    data = load_grid(con, gpu_id, power=False, kernels=kernels)
    return [(int(c), float(e), float(m)) for c in data.cu for e in data.core for m in data.mem]
