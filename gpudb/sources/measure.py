"""Live measurement on an NVIDIA GPU through NVML (``gpudb measure``): a command run at each
(core, memory) clock setting of a grid, each repetition stored as a ``measured`` run.

- Planning (:func:`plan`): every memory clock given, in the order given, and at each every core
  clock, in the order given (the memory clock, slower to switch, changes least often); the
  repetitions of a setting run back to back. Every clock is checked against the GPU's supported
  clocks before anything runs; an unsupported one is refused naming the nearest supported ones.
- Clocks (:func:`apply_setting`): locked clocks (``nvmlDeviceSetGpuLockedClocks`` and
  ``nvmlDeviceSetMemoryLockedClocks``), else application clocks
  (``nvmlDeviceSetApplicationsClocks``); when the driver permits neither the call is refused
  with one line, since a run labelled with clocks the GPU did not run at would mislead every
  predictor. The defaults are restored when the grid ends, fails or is interrupted.
- Energy: the difference of the total-energy counter (``nvmlDeviceGetTotalEnergyConsumption``,
  mJ, Volta and later) around the command, else the power (``nvmlDeviceGetPowerUsage``, mW)
  sampled by a thread and integrated (:func:`integrate_power`). The same thread samples the SM
  and memory clocks and the clock-event (throttle) reasons.
- Warm-up: ``warmup`` unstored runs of the command at each setting before the measured ones.
  Application clocks are a ceiling the GPU boosts to under load, not a lock: on an H200 the
  first run after an idle spell started at the 345 MHz idle clock and averaged 1,718 MHz
  against 1,980 MHz set (7% longer), and the first run after a switch still saw the old clock.
- Clocks seen: a setting whose runs saw the SMs or the memory faster than the clock set, or
  the memory never at the clock set, is refused (:func:`check_clocks`): NVML accepted a memory
  application clock on that H200 that the GPU never applied.
- SMs: NVML reports the SM count only for MIG instances, so :meth:`Nvml.sm_count` asks the CUDA
  driver (``libcuda``, present wherever NVML is) for the device at the same PCI address.
- Storage: each setting's repetitions are written in one transaction when the setting's last
  repetition ends, so Ctrl-C (or SIGTERM, SIGHUP), a failing command or an NVML error keeps the
  settings that completed and nothing of the one under way.

:class:`Nvml` is the only code that talks to NVML (and imports ``pynvml``); the rest takes
any object with its methods, which lets tests run without a GPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import math
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import duckdb
import pyarrow as pa

from gpudb.store.db import GpudbError, atomic, first_row
from gpudb.store.runs import (
    ensure_experiment,
    experiment_id,
    insert_metrics,
    insert_missing,
    insert_runs,
)
from gpudb.store.stop_signals import stop_on_signals

SAMPLE_INTERVAL_S = 0.01  # NVML refreshes power and clocks every 10-100 ms depending on the GPU
PERMISSION_HINT = ("setting clocks usually needs root (run gpudb measure as root, or let users "
                   "change them with `sudo nvidia-smi -acp UNRESTRICTED`) and persistence mode "
                   "(`sudo nvidia-smi -pm 1`)")


class NotPermitted(GpudbError):
    """The driver refused a clock change (no permission, or not supported on this GPU)."""


class MeasureInterrupted(Exception):
    """Ctrl-C (or SIGTERM, SIGHUP) during a measurement; ``settings_stored`` settings were
    written and kept, ``signum`` is the signal (SIGINT for Ctrl-C)."""

    def __init__(self, settings_stored: int, signum: int = signal.SIGINT):
        super().__init__(f"measurement interrupted by {signal.Signals(signum).name} after "
                         f"{settings_stored} settings stored")
        self.settings_stored = settings_stored
        self.signum = int(signum)


class MeasureStopped(GpudbError):
    """An error after ``settings_stored`` settings were written and kept (a failing command,
    clocks the GPU did not hold, an NVML error); the message is the error's."""

    def __init__(self, error: GpudbError, settings_stored: int):
        super().__init__(str(error))
        self.settings_stored = settings_stored


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


class Nvml:
    """One GPU through NVML (``nvidia-ml-py``, imported as ``pynvml``): NVML's calls behind the
    methods of :class:`Gpu`, its errors as one-line :class:`GpudbError`s."""

    def __init__(self, index: int = 0):
        try:
            import pynvml
        except ImportError:
            raise GpudbError("gpudb measure needs NVML's Python binding: "
                             "pip install 'gpudb[nvml]'") from None
        self._nv = pynvml
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise GpudbError(f"no NVIDIA GPU: NVML could not be initialised ({exc})") from None
        try:
            count = pynvml.nvmlDeviceGetCount()
            if not 0 <= index < count:
                raise GpudbError(f"no GPU {index}: NVML sees {count} (0 to {count - 1})")
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.name = _text(pynvml.nvmlDeviceGetName(self._handle))
            self.uuid = _text(pynvml.nvmlDeviceGetUUID(self._handle))
            self.driver = _text(pynvml.nvmlSystemGetDriverVersion())
        except BaseException:
            pynvml.nvmlShutdown()
            raise
        self._has_counter: bool | None = None

    def _unsupported(self, exc: Exception) -> bool:
        return getattr(exc, "value", None) == self._nv.NVML_ERROR_NOT_SUPPORTED

    def sm_count(self) -> int | None:
        """SMs: NVML's device attributes (reported for MIG instances only: a whole H200 says
        "Not Supported"), else the CUDA driver's count for the device at the same PCI bus id;
        None where neither answers."""
        try:
            return int(self._nv.nvmlDeviceGetAttributes(self._handle).multiprocessorCount)
        except self._nv.NVMLError:
            pass
        try:
            pci = self._nv.nvmlDeviceGetPciInfo(self._handle)
        except self._nv.NVMLError:
            return None
        return cuda_sm_count([_text(pci.busId), _text(getattr(pci, "busIdLegacy", b""))])

    def supported_clocks(self) -> dict[int, list[int]]:
        """Supported memory clock (MHz) -> the core clocks (MHz) supported with it."""
        nv, h = self._nv, self._handle
        return {int(m): sorted(int(c) for c in nv.nvmlDeviceGetSupportedGraphicsClocks(h, m))
                for m in nv.nvmlDeviceGetSupportedMemoryClocks(h)}

    def default_clocks(self) -> tuple[int | None, int | None]:
        """The default application clocks (core, memory MHz); None where not reported."""
        out = []
        for kind in (self._nv.NVML_CLOCK_GRAPHICS, self._nv.NVML_CLOCK_MEM):
            try:
                out.append(int(self._nv.nvmlDeviceGetDefaultApplicationsClock(self._handle, kind)))
            except self._nv.NVMLError:
                out.append(None)
        return out[0], out[1]

    def _set(self, what: str, call: Callable, *args) -> None:
        try:
            call(self._handle, *args)
        except self._nv.NVMLError as exc:
            if exc.value in (self._nv.NVML_ERROR_NO_PERMISSION, self._nv.NVML_ERROR_NOT_SUPPORTED):
                raise NotPermitted(f"{what}: {exc}") from None
            raise GpudbError(f"{what} on {self.name} failed: {exc}") from None

    def lock_clocks(self, core_mhz: int, mem_mhz: int) -> None:
        self._set("locking the core clock", self._nv.nvmlDeviceSetGpuLockedClocks,
                  core_mhz, core_mhz)
        self._set("locking the memory clock", self._nv.nvmlDeviceSetMemoryLockedClocks,
                  mem_mhz, mem_mhz)

    def set_application_clocks(self, core_mhz: int, mem_mhz: int) -> None:
        self._set("setting application clocks", self._nv.nvmlDeviceSetApplicationsClocks,
                  mem_mhz, core_mhz)

    def reset_clocks(self) -> list[str]:
        """Reset locked and application clocks to the defaults (all three, whatever fails);
        returns what failed, as lines. "Not supported" is no failure: nothing was set there."""
        failed = []
        nv = self._nv
        for what, call in (("locked core clock", nv.nvmlDeviceResetGpuLockedClocks),
                           ("locked memory clock", nv.nvmlDeviceResetMemoryLockedClocks),
                           ("application clocks", nv.nvmlDeviceResetApplicationsClocks)):
            try:
                call(self._handle)
            except nv.NVMLError as exc:
                if not self._unsupported(exc):
                    failed.append(f"resetting the {what}: {exc}")
        return failed

    def energy_mj(self) -> int | None:
        """The total-energy counter (mJ since the driver loaded); None on GPUs without one."""
        if self._has_counter is False:
            return None
        try:
            value = int(self._nv.nvmlDeviceGetTotalEnergyConsumption(self._handle))
        except self._nv.NVMLError as exc:
            if not self._unsupported(exc):
                raise GpudbError(f"reading the energy counter of {self.name}: {exc}") from None
            self._has_counter = False
            return None
        self._has_counter = True
        return value

    def _read(self, what: str, call: Callable, *args) -> int:
        try:
            return int(call(self._handle, *args))
        except self._nv.NVMLError as exc:
            raise GpudbError(f"reading the {what} of {self.name}: {exc}") from None

    def power_mw(self) -> float:
        return float(self._read("power", self._nv.nvmlDeviceGetPowerUsage))

    def clocks_mhz(self) -> tuple[float, float]:
        """The SM and memory clocks now (MHz)."""
        nv = self._nv
        return (float(self._read("SM clock", nv.nvmlDeviceGetClockInfo, nv.NVML_CLOCK_SM)),
                float(self._read("memory clock", nv.nvmlDeviceGetClockInfo, nv.NVML_CLOCK_MEM)))

    def clock_event_reasons(self) -> int:
        """The clock-event (throttle) reasons bitmask now (nvmlClocksEventReason*); drivers
        before 535 have the function under its older name only."""
        nv = self._nv
        try:
            return int(nv.nvmlDeviceGetCurrentClocksEventReasons(self._handle))
        except nv.NVMLError as exc:
            if exc.value != nv.NVML_ERROR_FUNCTION_NOT_FOUND:
                raise GpudbError(f"reading the clock-event reasons of {self.name}: "
                                 f"{exc}") from None
        return self._read("clock-event reasons", nv.nvmlDeviceGetCurrentClocksThrottleReasons)

    def close(self) -> None:
        self._nv.nvmlShutdown()


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16  # cuda.h, CUdevice_attribute


def cuda_sm_count(bus_ids: Sequence[str], library: str = "libcuda.so.1") -> int | None:
    """SM count of the CUDA device at the first of ``bus_ids`` (PCI addresses as NVML writes
    them, e.g. "00000000:18:00.0") that the CUDA driver API finds, through ``library``; None
    where the library, the driver or the device is missing. Only cuInit runs: no context is
    made, so no GPU memory is taken."""
    try:
        cuda = ctypes.CDLL(library)
    except OSError:
        return None
    if cuda.cuInit(0) != 0:
        return None
    device, count = ctypes.c_int(), ctypes.c_int()
    for bus_id in bus_ids:
        if (bus_id and cuda.cuDeviceGetByPCIBusId(ctypes.byref(device), bus_id.encode()) == 0
                and cuda.cuDeviceGetAttribute(ctypes.byref(count),
                                              CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                              device) == 0):
            return int(count.value)
    return None


def open_gpu(index: int = 0) -> Gpu:
    """GPU ``index`` through NVML (the CLI calls this; tests replace it with a fake GPU)."""
    return Nvml(index)


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


def integrate_power(samples: Sequence[tuple[int, float]], end_ns: int) -> float:
    """Energy (J) of power samples ``(time_ns, mW)``, the first taken at the start, each held
    until the next and the last until ``end_ns``."""
    times = [t for t, _ in samples[1:]] + [end_ns]
    return sum(mw * 1e-3 * (t1 - t0) * 1e-9
               for (t0, mw), t1 in zip(samples, times, strict=True))


@dataclass
class _Samples:
    """What the sampling thread saw: power (time_ns, mW) when sampling it, clocks (MHz) and
    the OR of the clock-event reasons."""

    power: list[tuple[int, float]] = field(default_factory=list)
    sm_mhz: list[float] = field(default_factory=list)
    mem_mhz: list[float] = field(default_factory=list)
    reasons: int = 0
    error: BaseException | None = None


class _Sampler:
    """Samples the GPU every ``interval_s`` in a thread, from a first sample taken in
    :meth:`start` (the caller's start time) until :meth:`stop`."""

    def __init__(self, gpu: Gpu, power: bool, interval_s: float):
        self._gpu, self._power, self._interval = gpu, power, interval_s
        self._stop = threading.Event()
        self.samples = _Samples()
        self._thread = threading.Thread(target=self._loop, name="gpudb-measure-sampler",
                                        daemon=True)

    def _sample(self) -> None:
        s = self.samples
        if self._power:
            s.power.append((time.perf_counter_ns(), self._gpu.power_mw()))
        sm, mem = self._gpu.clocks_mhz()
        s.sm_mhz.append(sm)
        s.mem_mhz.append(mem)
        s.reasons |= self._gpu.clock_event_reasons()

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self._interval):
                self._sample()
        except BaseException as exc:  # reported by stop(), in the measuring thread
            self.samples.error = exc

    def start(self) -> None:
        self._sample()
        self._thread.start()

    def stop(self) -> _Samples:
        self._stop.set()
        self._thread.join()
        if self.samples.error is not None:
            raise self.samples.error
        return self.samples


@dataclass
class Measurement:
    """One repetition: wall time (ns) of the command, energy (J) and how it was found."""

    setting: Setting
    repetition: int
    started_ns: int  # wall-clock time (ns since the epoch) the command started
    time_ns: int
    energy_j: float
    energy_from_counter: bool
    lock_method: str
    samples: _Samples


def run_once(gpu: Gpu, command: Sequence[str], setting: Setting, repetition: int,
             lock_method: str, interval_s: float = SAMPLE_INTERVAL_S) -> Measurement:
    """Run ``command`` once at the clocks already set and measure it (``repetition`` -1: a
    warm-up run, so named in errors). Raises GpudbError when it cannot start or exits
    non-zero; an exception (Ctrl-C) while it runs ends it."""
    before = gpu.energy_mj()
    sampler = _Sampler(gpu, power=before is None, interval_s=interval_s)
    started = time.time_ns()
    sampler.start()
    start = sampler.samples.power[0][0] if before is None else time.perf_counter_ns()
    try:
        proc = subprocess.Popen(list(command))
    except OSError as exc:
        sampler.stop()
        raise GpudbError(f"cannot run {command[0]}: {exc.strerror or exc}") from None
    try:
        status = proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        sampler.stop()
        raise
    end = time.perf_counter_ns()
    after = gpu.energy_mj() if before is not None else None
    samples = sampler.stop()
    if status != 0:
        which = "warm-up run" if repetition < 0 else f"repetition {repetition + 1}"
        raise GpudbError(f"{shlex.join(command)} exited with status {status} at core "
                         f"{setting.core_mhz} MHz, memory {setting.mem_mhz} MHz ({which}); "
                         "this setting is not stored")
    if before is None:
        energy = integrate_power(samples.power, end)
    else:
        energy = (after - before) * 1e-3
    # derived quantities checked before anything is stored: a counter that went back (reset,
    # wrapped) or a power reading out of range gives an energy no run can hold
    if not (math.isfinite(energy) and energy >= 0 and end > start
            and math.isfinite(energy / ((end - start) * 1e-9))):
        which = "warm-up run" if repetition < 0 else f"repetition {repetition + 1}"
        source = ("the energy counter" if before is not None
                  else "the power samples")
        raise GpudbError(f"{source} gave {energy!r} J over {end - start} ns at core "
                         f"{setting.core_mhz} MHz, memory {setting.mem_mhz} MHz ({which}), "
                         "not a finite energy >= 0 over a positive time; this setting is not "
                         "stored")
    return Measurement(setting, repetition, started, end - start, energy, before is not None,
                       lock_method, samples)


CLOCK_TOLERANCE = 0.01  # relative: NVML reads clocks in whole MHz


def check_clocks(setting: Setting, measurements: Sequence[Measurement]) -> None:
    """Refuse a setting whose runs would carry a wrong label: at some sample the GPU ran its
    SMs or its memory faster than the clock set, or its memory never reached the clock set.
    A clock below the one set at some samples is throttling or an idle dip between runs
    (which the first sample, taken before the command starts, can catch); the clock-event
    reasons record it. NVML can accept clocks the GPU does not apply: an H200 took
    application clocks with memory at 2201 MHz and ran at 3201 MHz."""
    sm = max(v for m in measurements for v in m.samples.sm_mhz)
    mem = max(v for m in measurements for v in m.samples.mem_mhz)
    wrong = []
    if sm > setting.core_mhz * (1 + CLOCK_TOLERANCE):
        wrong.append(f"SMs at up to {sm:.0f} MHz")
    if mem > setting.mem_mhz * (1 + CLOCK_TOLERANCE):
        wrong.append(f"memory at up to {mem:.0f} MHz")
    elif mem < setting.mem_mhz * (1 - CLOCK_TOLERANCE):
        wrong.append(f"memory at no more than {mem:.0f} MHz")
    if wrong:
        raise GpudbError(f"at core {setting.core_mhz} MHz, memory {setting.mem_mhz} MHz the GPU "
                         f"ran with {' and '.join(wrong)}: NVML accepted the clocks but the GPU "
                         "did not hold them (a --warmup run lets a new clock settle); this "
                         "setting is not stored")


@contextmanager
def _no_interrupts() -> Iterator[None]:
    """Ctrl-C held back during the block (the restore of the clocks), delivered after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def gpu_id_of(name: str) -> str:
    """gpu_id of an NVML device name: "NVIDIA A100-SXM4-40GB" -> "nvidia-a100-sxm4-40gb"."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


@dataclass
class Target:
    """Where the runs go: experiment, GPU row, kernel row."""

    experiment: str
    gpu_id: str
    kernel: str
    suite: str
    n_sm: int


def _check_target(con: duckdb.DuckDBPyConnection, target: Target) -> None:
    stored = first_row(con.execute(
        "SELECT simulator, (SELECT count(*) FROM run WHERE experiment_id = e.experiment_id AND "
        "source = 'sim') FROM experiment AS e WHERE experiment_id = ?",
        [experiment_id(target.experiment)]))
    if stored is not None and (stored[0] or stored[1]):
        raise GpudbError(f"experiment {target.experiment!r} holds simulated runs: choose "
                         "another --experiment")
    have = first_row(con.execute("SELECT n_sm FROM gpu WHERE gpu_id = ?", [target.gpu_id]))
    if have is not None and have[0] != target.n_sm:
        raise GpudbError(f"GPU {target.gpu_id!r} in the database has {have[0]} SMs, this one "
                         f"{target.n_sm}: name another with --gpu")


def _run_row(m: Measurement, target: Target, gpu: Gpu, exp_id: str,
             command_hash: str) -> tuple[dict, list[dict]]:
    kernel_id = f"{target.suite}/{target.kernel}"
    s = m.setting
    # A measurement is unique by the GPU and the moment it started, the rest is what it saw.
    run_id = hashlib.md5("|".join(
        ["measured", gpu.uuid, kernel_id, str(s.core_mhz), str(s.mem_mhz), command_hash,
         str(m.started_ns), str(m.time_ns), repr(m.energy_j)]).encode()).hexdigest()
    run = {"run_id": run_id, "experiment_id": exp_id, "source": "measured",
           "kernel_id": kernel_id, "gpu_id": target.gpu_id, "policy": "fixed",
           "core_mhz": float(s.core_mhz), "mem_mhz": float(s.mem_mhz), "n_sm": target.n_sm,
           "time_ns": float(m.time_ns), "energy_j": m.energy_j, "input_hash": command_hash}
    smp = m.samples
    values = {
        "repetition": m.repetition, "samples": len(smp.sm_mhz),
        "observed_sm_mhz_mean": sum(smp.sm_mhz) / len(smp.sm_mhz),
        "observed_sm_mhz_min": min(smp.sm_mhz), "observed_sm_mhz_max": max(smp.sm_mhz),
        "observed_mem_mhz_mean": sum(smp.mem_mhz) / len(smp.mem_mhz),
        "observed_mem_mhz_min": min(smp.mem_mhz),
        "clock_event_reasons": smp.reasons,
        "avg_power_w": m.energy_j / (m.time_ns * 1e-9),
        "energy_from_counter": float(m.energy_from_counter),
        "clocks_locked": float(m.lock_method == "locked")}
    metrics = [{"run_id": run_id, "name": k, "value": float(v)} for k, v in values.items()]
    return run, metrics


def store(con: duckdb.DuckDBPyConnection, measurements: Sequence[Measurement], target: Target,
          gpu: Gpu, command: Sequence[str]) -> int:
    """Write the measurements as runs with their metrics, and the GPU (name, SMs, default
    clocks, its supported clocks as P-states), kernel and experiment rows they need, in one
    transaction. Returns the runs added."""
    exp_id = experiment_id(target.experiment)
    command_hash = hashlib.sha256(json.dumps(list(command)).encode()).hexdigest()
    rows = [_run_row(m, target, gpu, exp_id, command_hash) for m in measurements]
    core, mem = gpu.default_clocks()
    supported = gpu.supported_clocks()
    with atomic(con):
        ensure_experiment(con, target.experiment, "measured with gpudb measure (NVML)")
        if insert_missing(con, "gpu", pa.Table.from_pylist([{
                "gpu_id": target.gpu_id, "name": gpu.name, "n_sm": target.n_sm,
                "nominal_core_mhz": core, "nominal_mem_mhz": mem,
                "config": json.dumps({"nvml_name": gpu.name, "uuid": gpu.uuid})}])):
            pstates = sorted({("core", float(c)) for cs in supported.values() for c in cs}
                             | {("mem", float(m)) for m in supported})
            insert_missing(con, "pstate", pa.table({
                "gpu_id": [target.gpu_id] * len(pstates), "domain": [d for d, _ in pstates],
                "freq_mhz": [f for _, f in pstates]}))
        insert_missing(con, "kernel", pa.Table.from_pylist([{
            "kernel_id": f"{target.suite}/{target.kernel}", "name": target.kernel,
            "suite": target.suite, "description": f"measured: {shlex.join(command)}",
            "spec": json.dumps({"command": list(command)})}]))
        added = insert_runs(con, pa.Table.from_pylist([r for r, _ in rows])).runs
        insert_metrics(con, pa.Table.from_pylist([x for _, ms in rows for x in ms]),
                       skip_stored=False)
    return added


def measure(con: duckdb.DuckDBPyConnection, gpu: Gpu, command: Sequence[str],
            settings: Sequence[Setting], repeat: int, target: Target,
            progress: Callable[[Setting, list[Measurement]], None] | None = None,
            warn: Callable[[str], None] | None = None,
            interval_s: float = SAMPLE_INTERVAL_S, warmup: int = 0) -> int:
    """Measure ``command`` ``repeat`` times at each setting, after ``warmup`` runs there that
    are not stored (the clocks settle under load; module docstring), checking the clocks seen
    (:func:`check_clocks`) and storing each setting's runs
    when its last repetition ends (:func:`store`), and restore the GPU's default clocks at the
    end, on an error and on Ctrl-C (SIGTERM, SIGHUP), which raise MeasureInterrupted. A
    restore that fails is passed to ``warn`` with the command that does it by hand. An error
    after some settings were stored raises MeasureStopped, which counts them.
    ``progress(setting, measurements)`` follows each stored setting. Returns the runs added."""
    if not command:
        raise GpudbError("no command to measure: give it after --, e.g. -- ./app --size 4096")
    if shutil.which(command[0]) is None:  # refused before the clocks change
        raise GpudbError(f"cannot run {command[0]}: no such executable file")
    _check_target(con, target)
    stored = added = 0
    changed = False
    try:
        with stop_on_signals():
            for setting in settings:
                changed = True
                method = apply_setting(gpu, setting)
                for _ in range(warmup):
                    run_once(gpu, command, setting, -1, method, interval_s)
                done = [run_once(gpu, command, setting, i, method, interval_s)
                        for i in range(repeat)]
                check_clocks(setting, done)
                added += store(con, done, target, gpu, command)
                stored += 1
                if progress is not None:
                    progress(setting, done)
    except KeyboardInterrupt as stop:
        raise MeasureInterrupted(stored, getattr(stop, "signum", signal.SIGINT)) from None
    except GpudbError as error:
        if stored:
            raise MeasureStopped(error, stored) from None
        raise
    finally:
        if changed:
            with _no_interrupts():
                failed = gpu.reset_clocks()
            if failed and warn is not None:
                warn(f"could not restore {gpu.name}'s default clocks ({'; '.join(failed)}): "
                     "run `sudo nvidia-smi -rgc -rmc -rac`")
    return added


def kernel_name(command: Sequence[str]) -> str:
    """The default kernel name: the command's file name without its directory."""
    return Path(command[0]).name if command else ""


def sm_count(gpu: Gpu, given: int | None) -> int:
    """SMs: ``given`` (--sms), else NVML's; GpudbError when neither says."""
    if given is not None:
        return given
    found = gpu.sm_count()
    if found is None:
        raise GpudbError(f"NVML does not report {gpu.name}'s SM count: give it with --sms")
    return found


def default_experiment(gpu_id: str) -> str:
    """Default experiment name: 'measured-<gpu_id>', one per GPU model."""
    return f"measured-{gpu_id}"
