"""The simulator against a real GPU (query sim_scaling_curve; `gpudb evaluate simulator`):
one small panel per measured kernel, two rows of them, time and power, each normalised by the
base setting's (t / t_base, P / P_base) against the core clock, one line per memory clock;
measured solid with dots, the kernel's clone simulated dashed. Where the dashed lines lie on
the solid ones the simulator scales as the GPU does. Accel-Sim and AccelWattch draw their
validation as cycles and power against hardware per kernel; for DVFS the scaling is what
matters, so this draws that."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpudb.present.plots import Plot, Result
from gpudb.present.plots.common import number


@dataclass(frozen=True)
class Curves:
    """Per kernel (in order) and memory clock: the core clocks and the measured and simulated
    normalised time and power there; each kernel's split ('train', 'held_out' or None)."""
    gpu_id: str
    sim_gpu_id: str
    kernels: list[str]
    split: dict[str, str | None]
    mems: list[float]
    cores: dict[tuple[str, float], list[float]]
    series: dict[tuple[str, float, str], list[float]]   # (kernel, mem, column) -> values


COLUMNS = ("measured_time_norm", "sim_time_norm", "measured_power_norm", "sim_power_norm")


def sim_scaling_data(results: Mapping[str, Result], params) -> Curves:
    rows = results["sim_scaling_curve"].records()
    gpu_id, sim_gpu_id = rows[0]["gpu_id"], rows[0]["sim_gpu_id"]
    rows = [r for r in rows if (r["gpu_id"], r["sim_gpu_id"]) == (gpu_id, sim_gpu_id)]
    kernels = sorted({r["kernel_id"] for r in rows})
    mems = sorted({float(r["mem_mhz"]) for r in rows})
    cores: dict = {}
    series: dict = {}
    split: dict = {}
    for r in sorted(rows, key=lambda r: (r["kernel_id"], r["mem_mhz"], r["core_mhz"])):
        key = (r["kernel_id"], float(r["mem_mhz"]))
        cores.setdefault(key, []).append(float(r["core_mhz"]))
        for c in COLUMNS:
            series.setdefault((*key, c), []).append(number(r[c]))
        split[r["kernel_id"]] = r["split"]
    return Curves(gpu_id, sim_gpu_id, kernels, split, mems, cores, series)


def short(kernel_id: str) -> str:
    """'suite/app:kernel' as 'app' (the panel title; the kernel_id is in the query)."""
    return kernel_id.split("/", 1)[-1].split(":", 1)[0]


def draw_sim_scaling(figure, data: Curves) -> None:
    n = len(data.kernels)
    cols = min(n, 8)
    blocks = -(-n // cols)                      # rows of kernels, each a time and a power row
    axes = figure.subplots(2 * blocks, cols, squeeze=False, sharex=True)
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    colour = {m: cmap(i / max(len(data.mems) - 1, 1) * 0.85) for i, m in enumerate(data.mems)}
    for k, kernel in enumerate(data.kernels):
        b, c = divmod(k, cols)
        for row, what in ((2 * b, "time"), (2 * b + 1, "power")):
            ax = axes[row][c]
            for m in data.mems:
                xs = data.cores.get((kernel, m))
                if not xs:
                    continue
                ax.plot(xs, data.series[(kernel, m, f"measured_{what}_norm")], "o-",
                        color=colour[m], markersize=2.5, linewidth=1.0,
                        label=f"{m:g} MHz measured")
                ax.plot(xs, data.series[(kernel, m, f"sim_{what}_norm")], "--",
                        color=colour[m], linewidth=1.0, label=f"{m:g} MHz simulated")
            ax.tick_params(labelsize=6)
            ax.grid(alpha=0.3)
            if what == "time":
                mark = {"train": " (train)", "held_out": " (held out)"}.get(
                    data.split.get(kernel) or "", "")
                ax.set_title(short(kernel) + mark, fontsize=7)
            if c == 0:
                ax.set_ylabel(f"{what} / base", fontsize=7)
            if row == 2 * blocks - 1 or k + cols >= n:
                ax.set_xlabel("core MHz", fontsize=7)
    for k in range(n, blocks * cols):
        b, c = divmod(k, cols)
        axes[2 * b][c].set_visible(False)
        axes[2 * b + 1][c].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside right upper", fontsize=7,
                  title="memory clock", title_fontsize=7)
    figure.suptitle(f"{data.gpu_id} measured (solid) against its clones on {data.sim_gpu_id} "
                    "(dashed): time and power normalised by the base setting", fontsize=9)


PLOTS = (
    Plot("sim_scaling", ("sim_scaling_curve",),
         "none (Accel-Sim and AccelWattch validate by scaling too)",
         "measured vs simulated time and power against the core clock, a panel "
         "per kernel (gpudb evaluate simulator)", sim_scaling_data, draw_sim_scaling,
         "gpudb evaluate simulator --gpu GPU", size=(16.0, 9.0)),
)
