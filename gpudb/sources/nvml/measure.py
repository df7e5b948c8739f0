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

Here: the NVML adapter, the CUDA SM count and :func:`measure`, which runs the grid; planning
and clocks are in :mod:`gpudb.sources.nvml.plan`, one repetition and its sampling in
:mod:`gpudb.sources.nvml.sampling`, storage in :mod:`gpudb.sources.nvml.storage`.
"""

from __future__ import annotations

import ctypes
import shutil
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import duckdb

# the parts, by concern; their names are this module's too (tests and the CLI use m.NAME)
from gpudb.sources.nvml.plan import (  # noqa: F401
    PERMISSION_HINT,
    Gpu,
    NotPermitted,
    Setting,
    apply_setting,
    plan,
)
from gpudb.sources.nvml.sampling import (  # noqa: F401
    CLOCK_TOLERANCE,
    SAMPLE_INTERVAL_S,
    Measurement,
    PowerSamples,
    check_clocks,
    integrate_power,
    run_once,
)
from gpudb.sources.nvml.storage import (  # noqa: F401
    Target,
    check_target,
    default_experiment,
    gpu_id_of,
    kernel_name,
    sm_count,
    store,
)
from gpudb.store.db import GpudbError
from gpudb.store.stop_signals import stop_on_signals


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


class Nvml:
    """One GPU through NVML (``nvidia-ml-py``, imported as ``pynvml``): NVML's calls behind the
    methods of :class:`Gpu`, its errors as one-line :class:`GpudbError`s."""

    def __init__(self, index: int = 0):
        try:
            import pynvml
        except ImportError:
            raise GpudbError("gpudb measure needs NVML's Python binding: "
                             "pip install 'gpudb-dvfs[nvml]'") from None
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
    check_target(con, target)
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


