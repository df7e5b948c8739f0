"""Planning a measurement (``gpudb measure``): what the measurement needs of a GPU
(:class:`Gpu`), the grid of clock settings checked against the GPU's supported clocks before
anything runs (:func:`plan`), and setting each one: locked clocks, else application clocks
(:func:`apply_setting`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from gpudb.store.db import GpudbError

PERMISSION_HINT = ("setting clocks usually needs root (run gpudb measure as root, or let users "
                   "change them with `sudo nvidia-smi -acp UNRESTRICTED`) and persistence mode "
                   "(`sudo nvidia-smi -pm 1`)")


class NotPermitted(GpudbError):
    """The driver refused a clock change (no permission, or not supported on this GPU)."""


class Gpu(Protocol):
    """What the measurement needs of a GPU; :class:`Nvml` is the real one."""

    name: str
    uuid: str

    def sm_count(self) -> int | None: ...
    def supported_clocks(self) -> dict[int, list[int]]: ...
    def default_clocks(self) -> tuple[int | None, int | None]: ...
    def lock_clocks(self, core_mhz: int, mem_mhz: int) -> None: ...
    def set_application_clocks(self, core_mhz: int, mem_mhz: int) -> None: ...
    def reset_clocks(self) -> list[str]: ...
    def energy_mj(self) -> int | None: ...
    def power_mw(self) -> float: ...
    def clocks_mhz(self) -> tuple[float, float]: ...
    def clock_event_reasons(self) -> int: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class Setting:
    core_mhz: int
    mem_mhz: int


def _nearest(value: int, supported: Sequence[int]) -> str:
    """The supported values either side of ``value`` (sorted ``supported``), as text."""
    i = bisect_left(supported, value)
    return ", ".join(str(v) for v in supported[max(i - 1, 0):i + 1])


def plan(core_mhz: Sequence[int], mem_mhz: Sequence[int],
         supported: dict[int, list[int]], gpu_name: str) -> list[Setting]:
    """The settings to measure: memory clocks outer, core clocks inner, each in the order
    given. Raises GpudbError for a clock given twice or one the GPU does not support (MHz,
    as NVML lists them), naming the nearest supported ones."""
    for option, values in (("--core-mhz", core_mhz), ("--mem-mhz", mem_mhz)):
        if not values:
            raise GpudbError(f"{option} lists no clock")
        twice = sorted({v for v in values if list(values).count(v) > 1})
        if twice:
            raise GpudbError(f"{option} lists {', '.join(map(str, twice))} more than once")
    mems = sorted(supported)
    for mem in mem_mhz:
        if mem not in supported:
            raise GpudbError(f"{gpu_name} does not support a memory clock of {mem} MHz; the "
                             f"nearest it supports: {_nearest(mem, mems)} MHz")
        for core in core_mhz:
            if core not in supported[mem]:
                raise GpudbError(
                    f"{gpu_name} does not support a core clock of {core} MHz with memory at "
                    f"{mem} MHz; the nearest it supports: {_nearest(core, supported[mem])} MHz")
    return [Setting(core, mem) for mem in mem_mhz for core in core_mhz]


def apply_setting(gpu: Gpu, setting: Setting) -> str:
    """Set the GPU's clocks: locked clocks, else application clocks. Returns the method,
    'locked' or 'application'; raises NotPermitted, one line, when neither is permitted."""
    try:
        gpu.lock_clocks(setting.core_mhz, setting.mem_mhz)
        return "locked"
    except NotPermitted as locked:
        # a core clock locked before the memory clock was refused must not stay locked
        gpu.reset_clocks()
        try:
            gpu.set_application_clocks(setting.core_mhz, setting.mem_mhz)
        except NotPermitted as application:
            raise NotPermitted(f"{gpu.name} does not let gpudb set its clocks ({locked}; "
                               f"{application}): {PERMISSION_HINT}") from None
        return "application"
