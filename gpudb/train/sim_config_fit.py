"""The calibrated values of a simulator configuration that models a measured GPU
(fixtures/gpus/gtx1080ti-sim.toml), fitted on its training kernels (``gpudb evaluate
simulator --fit``; docs/simulator.md, "Validation against real GPUs").

- Sustained DRAM bandwidth: the highest DRAM throughput a training kernel reaches at the base
  setting ((dram_read + dram_write transactions) x 32 B / time), as channel bytes per memory
  cycle. A streaming kernel runs at the DRAM's sustained rate; none runs faster.
- Power: the measured power of the training kernels at every setting against the simulator's
  energy model (sim/model.py ``Simulation._energy``) fed with their clones' event counts,
  scaled to the kernel's instructions, over the measured time:

      P = sum_e E_e n_e v^2 / t  +  E_l2 n_l2 / t  +  E_dram n_dram / t  +  S v  +  C(mem)

  e over warp instructions, ALU, SFU and FP64 warp instructions, L1 accesses and shared
  transactions; v the core voltage relative to the base, V = 1 + beta (f / f_base - 1) (the
  measured file has no voltages); S static power; C(mem) the constant power at each memory
  clock (DRAM background and the rest of the board). Non-negative least squares (scipy's
  ``nnls``) of the relative error, for each beta of a grid, the best kept. The constant
  splits as other_w = the least C(mem) and background_w = C(mem) - other_w.
"""

from __future__ import annotations

import duckdb
import numpy as np

from gpudb.store.db import GpudbError

EVENTS = ("instructions", "alu_insts", "sfu_insts", "dp_insts", "l1_accesses",
          "shared_transactions")
NJ = ("inst_nj", "alu_nj", "sfu_nj", "dp_nj", "l1_nj", "shared_nj", "l2_nj", "dram_nj")
BETAS = tuple(np.round(np.arange(-0.5, 1.51, 0.1), 2))


def sustained_bandwidth(con: duckdb.DuckDBPyConnection, gpu: str, kernels: list[str],
                        core_mhz: float, mem_mhz: float) -> tuple[float, str]:
    """(GB/s, kernel): the highest DRAM throughput among ``kernels`` measured at the base."""
    row = con.execute("""
        SELECT r.kernel_id, (sum(m.value) FILTER (WHERE m.name IN ('dram_read_transactions',
                                                                  'dram_write_transactions'))
                             * 32 / any_value(r.time_ns)) AS gb_s
        FROM run AS r JOIN metric AS m ON m.run_id = r.run_id AND m.idx IS NULL
        WHERE r.gpu_id = ? AND r.source = 'measured' AND r.core_mhz = ? AND r.mem_mhz = ?
          AND list_contains(?, r.kernel_id)
        GROUP BY r.run_id, r.kernel_id ORDER BY gb_s DESC NULLS LAST LIMIT 1""",
                      [gpu, core_mhz, mem_mhz, kernels]).fetchone()
    if row is None or row[1] is None:
        raise GpudbError(f"no DRAM transaction metrics of {gpu}'s training kernels")
    return float(row[1]), row[0]


def power_rows(con: duckdb.DuckDBPyConnection, gpu: str, sim_gpu: str) -> dict:
    """Per measured kernel: the settings, its measured time (ns) and power (W), and its
    clone's event counts per simulated instruction times the kernel's instructions."""
    rows = con.execute(f"""
        WITH link AS (
            SELECT k.kernel_id AS clone_kernel_id,
                   json_extract_string(k.spec, '$.clone.measured_kernel') AS kernel_id,
                   CAST(json_extract(k.spec, '$.clone.instructions') AS DOUBLE) AS n
            FROM kernel AS k
            WHERE json_extract_string(k.spec, '$.clone.measured_gpu') = $gpu),
        counts AS (
            SELECT r.kernel_id AS clone_kernel_id, r.core_mhz, r.mem_mhz,
                   {', '.join(f'avg(i.{e} / r.instructions) AS {e}' for e in EVENTS)},
                   avg(i.l2_accesses / r.instructions) AS l2,
                   avg((i.dram_reads + i.dram_writes) / r.instructions) AS dram
            FROM run AS r
            JOIN (SELECT run_id, {', '.join(f'sum({e}) AS {e}' for e in EVENTS)},
                         sum(l2_accesses) AS l2_accesses, sum(dram_reads) AS dram_reads,
                         sum(dram_writes) AS dram_writes
                  FROM interval GROUP BY run_id) AS i USING (run_id)
            WHERE r.gpu_id = $sim AND r.source = 'sim' AND r.policy = 'fixed'
            GROUP BY ALL)
        SELECT l.kernel_id, c.core_mhz, c.mem_mhz, avg(m.time_ns),
               avg(m.energy_j / m.time_ns * 1e9),
               {', '.join(f'any_value(c.{e} * l.n)' for e in EVENTS)},
               any_value(c.l2 * l.n), any_value(c.dram * l.n)
        FROM link AS l JOIN counts AS c USING (clone_kernel_id)
        JOIN run AS m ON m.gpu_id = $gpu AND m.kernel_id = l.kernel_id AND m.source = 'measured'
                     AND m.policy = 'fixed' AND m.core_mhz = c.core_mhz AND m.mem_mhz = c.mem_mhz
        GROUP BY l.kernel_id, c.core_mhz, c.mem_mhz
        ORDER BY ALL""", {"gpu": gpu, "sim": sim_gpu}).fetchall()
    out: dict[str, dict] = {}
    for kernel, core, mem, t, p, *n in rows:
        k = out.setdefault(kernel, {"core": [], "mem": [], "t": [], "p": [], "n": []})
        k["core"].append(core)
        k["mem"].append(mem)
        k["t"].append(t)
        k["p"].append(p)
        k["n"].append(n)
    return {k: {f: np.asarray(v, float) for f, v in d.items()} for k, d in out.items()}


def _design(rows: dict, beta: float, base_core: float, mems: list[float],
            time_ns: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    v = 1.0 + beta * (rows["core"] / base_core - 1.0)
    t = (rows["t"] if time_ns is None else time_ns) * 1e-9
    n = rows["n"]
    dyn = n[:, :len(EVENTS)] * (v * v)[:, None] * 1e-9 / t[:, None]
    flat = n[:, len(EVENTS):] * 1e-9 / t[:, None]            # L2 and DRAM: not core-voltage
    const = np.stack([(rows["mem"] == m).astype(float) for m in mems], axis=1)
    return np.hstack([dyn, flat, v[:, None], const]), rows["p"]


def fit_power(rows: dict, kernels: list[str], base_core: float,
              base_mem: float) -> dict:
    """The power parameters fitted on ``kernels`` (see the module docstring)."""
    try:
        from scipy.optimize import nnls
    except ImportError:
        raise GpudbError("fitting power parameters needs scipy: pip install "
                         "'gpudb-dvfs[ml]'") from None
    use = [k for k in kernels if k in rows]
    if not use:
        raise GpudbError("no training kernel has both measured and simulated runs")
    mems = sorted({float(m) for k in use for m in rows[k]["mem"]})
    best = None
    for beta in BETAS:
        xs, ys = zip(*(_design(rows[k], beta, base_core, mems) for k in use))
        x, y = np.vstack(xs), np.concatenate(ys)
        coef, _ = nnls(x / y[:, None], np.ones_like(y))
        err = np.mean([normalised_power_mape(rows[k], coef, beta, base_core, base_mem, mems)
                       for k in use])
        if best is None or err < best[0]:
            best = (err, beta, coef)
    err, beta, coef = best
    const = coef[len(NJ) + 1:]
    other = float(const.min())
    return {"beta": float(beta), "nj": dict(zip(NJ, coef[:len(NJ)].tolist(), strict=True)),
            "core_static_w": float(coef[len(NJ)]), "other_w": other,
            "background_w": dict(zip(mems, (const - other).tolist(), strict=True)),
            "mems": mems, "coef": coef, "train_mape_pct": float(err), "kernels": use}


def normalised_power_mape(rows: dict, coef: np.ndarray, beta: float, base_core: float,
                          base_mem: float, mems: list[float],
                          time_ns: np.ndarray | None = None) -> float:
    """Mean absolute % error of P / P_base over the settings other than the base."""
    x, y = _design(rows, beta, base_core, mems, time_ns)
    p = x @ coef
    b = np.flatnonzero((rows["core"] == base_core) & (rows["mem"] == base_mem))
    if len(b) != 1:
        return float("nan")
    pn, yn = p / p[b[0]], y / y[b[0]]
    keep = np.arange(len(y)) != b[0]
    return float(np.mean(np.abs(pn[keep] - yn[keep]) / yn[keep]) * 100.0)


def toml_lines(fit: dict, bandwidth: tuple[float, str], cores: list[float],
               base_core: float, channels: int, base_mem: float) -> list[str]:
    """The fitted values as lines for the configuration's [memory], [core], [mem], [power]."""
    gb_s, kernel = bandwidth
    out = [f"channel_bytes_per_mem_cycle = {gb_s / (channels * base_mem * 1e6) * 1e9:.3f}"
           f"  # {kernel}: {gb_s:.1f} GB/s at the base"]
    volts = [round(1.0 + fit["beta"] * (c / base_core - 1.0), 4) for c in cores]
    out.append(f"voltage_v = {volts}  # relative to the base, slope beta {fit['beta']:g}")
    out.append(f"background_w = {[round(fit['background_w'][m], 3) for m in fit['mems']]}")
    for k, v in fit["nj"].items():
        out.append(f"{k} = {v:.4g}")
    out.append(f"core_static_w = {fit['core_static_w']:.4g}")
    out.append(f"other_w = {fit['other_w']:.4g}")
    return out
