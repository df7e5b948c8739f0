"""One measured repetition (``gpudb measure``): the command run at the clocks set, its energy
from the GPU's counter or from power sampled by a thread and integrated, the clocks the GPU
ran at, and the check that it held the clocks set.
"""

from __future__ import annotations

import math
import shlex
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpudb.sources.nvml.plan import Gpu, Setting
from gpudb.store.db import GpudbError

SAMPLE_INTERVAL_S = 0.01  # NVML refreshes power and clocks every 10-100 ms depending on the GPU


def integrate_power(samples: Sequence[tuple[int, float]], end_ns: int) -> float:
    """Energy (J) of power samples ``(time_ns, mW)``, the first taken at the start, each held
    until the next and the last until ``end_ns``."""
    times = [t for t, _ in samples[1:]] + [end_ns]
    return sum(mw * 1e-3 * (t1 - t0) * 1e-9
               for (t0, mw), t1 in zip(samples, times, strict=True))


@dataclass
class PowerSamples:
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
        self.samples = PowerSamples()
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

    def stop(self) -> PowerSamples:
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
    samples: PowerSamples


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
