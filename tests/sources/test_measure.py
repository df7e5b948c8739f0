"""gpudb measure: grid planning, storage, clock fallback and restore-on-error with a fake GPU
(the commands run for real, as subprocesses, into real database files); one test on a real
GPU through NVML, skipped where there is none."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import types

import pytest
from click.testing import CliRunner
from conftest import copy_db

from gpudb.cli import cli
from gpudb.sources.nvml import measure as m
from gpudb.store.db import GpudbError, connect

SLEEP_S = 0.05
SLEEP = [sys.executable, "-c", f"import time; time.sleep({SLEEP_S})"]
SUPPORTED = {1215: [705, 1005, 1200, 1380, 1410], 877: [705, 1005, 1380]}
COUNTER_STEP_MJ = 1500  # the fake's energy counter advances this much per read
POWER_MW = 100_000.0


class FakeGpu:
    """A GPU as gpudb.sources.nvml.measure.Nvml presents it, without NVML: records the clock
    calls, and reports the clocks set as the clocks seen, a power-cap reason above 1380 MHz."""

    name = "Fake GPU 80GB"
    uuid = "GPU-00000000-fake"

    def __init__(self, counter=True, lock=True, application=True, restore=True, sms=108):
        self.counter, self.lock, self.application = counter, lock, application
        self.restore, self.sms = restore, sms
        self.calls: list[tuple] = []
        self.clocks = (1410.0, 1215.0)
        self.mj = 10_000
        self.closed = False

    def sm_count(self):
        return self.sms

    def supported_clocks(self):
        return SUPPORTED

    def default_clocks(self):
        return 1410, 1215

    def lock_clocks(self, core_mhz, mem_mhz):
        self.calls.append(("lock", core_mhz, mem_mhz))
        if not self.lock:
            raise m.NotPermitted("locking the core clock: Insufficient Permissions")
        self.clocks = (float(core_mhz), float(mem_mhz))

    def set_application_clocks(self, core_mhz, mem_mhz):
        self.calls.append(("application", core_mhz, mem_mhz))
        if not self.application:
            raise m.NotPermitted("setting application clocks: Insufficient Permissions")
        self.clocks = (float(core_mhz), float(mem_mhz))

    def reset_clocks(self):
        self.calls.append(("reset",))
        self.clocks = (1410.0, 1215.0)
        return [] if self.restore else ["resetting the locked core clock: Unknown Error"]

    def energy_mj(self):
        if not self.counter:
            return None
        self.mj += COUNTER_STEP_MJ
        return self.mj

    def power_mw(self):
        return POWER_MW

    def clocks_mhz(self):
        return self.clocks

    def clock_event_reasons(self):
        return 0x4 if self.clocks[0] > 1380 else 0

    def close(self):
        self.closed = True


def target(**kw):
    return m.Target(**{"experiment": "m", "gpu_id": "fake-gpu", "kernel": "sleep",
                       "suite": "measured", "n_sm": 108, **kw})


@pytest.fixture
def con(tmp_path, empty_db_template):
    """An open connection to a migrated, empty file (a copy of the session's template)."""
    con = connect(copy_db(empty_db_template, tmp_path / "m.duckdb"))
    yield con
    con.close()


def runs(con):
    return con.execute("SELECT core_mhz, mem_mhz, time_ns, energy_j, source, n_sm, kernel_id, "
                       "gpu_id FROM run ORDER BY created_at, core_mhz").fetchall()


def metrics(con, name):
    return [r[0] for r in con.execute(
        "SELECT m.value FROM metric AS m JOIN run USING (run_id) WHERE m.name = ? "
        "ORDER BY run.created_at, run.core_mhz", [name]).fetchall()]


def counting(script_tail: str, tmp_path) -> list[str]:
    """A command that appends a line to a file each time it runs, then runs ``script_tail``
    with ``n`` the number of the invocation (1, 2, ...)."""
    log = tmp_path / "invocations"
    return [sys.executable, "-c",
            f"import os, signal, sys, time\nwith open({str(log)!r}, 'a') as f: f.write('x')\n"
            f"n = len(open({str(log)!r}).read())\n{script_tail}"]


# --- planning ----------------------------------------------------------------------------

def test_plan_orders_memory_outer_core_inner_as_given():
    settings = m.plan([1380, 705], [877, 1215], SUPPORTED, "Fake")
    assert [(s.core_mhz, s.mem_mhz) for s in settings] == [
        (1380, 877), (705, 877), (1380, 1215), (705, 1215)]


@pytest.mark.parametrize("core, mem, message", [
    ([1400], [1215], "Fake does not support a core clock of 1400 MHz with memory at 1215 MHz; "
                     "the nearest it supports: 1380, 1410 MHz"),
    ([1200], [877], "Fake does not support a core clock of 1200 MHz with memory at 877 MHz; "
                    "the nearest it supports: 1005, 1380 MHz"),
    ([2000], [1215], "the nearest it supports: 1410 MHz"),
    ([705], [900], "Fake does not support a memory clock of 900 MHz; the nearest it "
                   "supports: 877, 1215 MHz"),
    ([705, 705], [877], "--core-mhz lists 705 more than once"),
    ([], [877], "--core-mhz lists no clock"),
])
def test_plan_refuses_unsupported_clocks_naming_the_nearest(core, mem, message):
    with pytest.raises(GpudbError) as exc:
        m.plan(core, mem, SUPPORTED, "Fake")
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_integrate_power_holds_each_sample_until_the_next():
    # 1 W for 1 s, then 2 W for 2 s (mW, ns)
    assert m.integrate_power([(0, 1000.0), (10**9, 2000.0)], 3 * 10**9) == pytest.approx(5.0)


# --- storage -----------------------------------------------------------------------------

def test_each_repetition_is_a_measured_run_with_counter_energy(con):
    gpu = FakeGpu()
    settings = m.plan([1410, 705], [1215], SUPPORTED, gpu.name)
    seen = []
    added = m.measure(con, gpu, SLEEP, settings, 2, target(),
                      progress=lambda s, done: seen.append((s, len(done))))
    assert added == 4 and seen == [(settings[0], 2), (settings[1], 2)]
    stored = runs(con)
    assert [(r[0], r[1]) for r in stored] == [(1410, 1215)] * 2 + [(705, 1215)] * 2
    for _, _, time_ns, energy_j, source, n_sm, kernel_id, gpu_id in stored:
        assert time_ns >= SLEEP_S * 1e9  # the command's real wall time
        assert energy_j == pytest.approx(COUNTER_STEP_MJ / 1000)  # counter difference, mJ -> J
        assert (source, n_sm, kernel_id, gpu_id) == ("measured", 108, "measured/sleep",
                                                     "fake-gpu")
    assert metrics(con, "observed_sm_mhz_mean") == [1410, 1410, 705, 705]
    assert metrics(con, "observed_mem_mhz_mean") == [1215] * 4
    assert metrics(con, "clock_event_reasons") == [4, 4, 0, 0]
    assert metrics(con, "energy_from_counter") == [1] * 4
    assert metrics(con, "clocks_locked") == [1] * 4
    assert metrics(con, "repetition") == [0, 1, 0, 1]
    assert con.execute("SELECT name, n_sm, nominal_core_mhz, nominal_mem_mhz FROM gpu"
                       ).fetchall() == [("Fake GPU 80GB", 108, 1410, 1215)]
    assert con.execute("SELECT domain, count(*) FROM pstate GROUP BY ALL ORDER BY 1"
                       ).fetchall() == [("core", 5), ("mem", 2)]
    assert con.execute("SELECT description FROM kernel").fetchall() == [
        (f"measured: {' '.join(SLEEP[:2])} 'import time; time.sleep({SLEEP_S})'",)]
    assert gpu.calls == [("lock", 1410, 1215), ("lock", 705, 1215), ("reset",)]


def test_without_an_energy_counter_sampled_power_is_integrated(con):
    gpu = FakeGpu(counter=False)
    m.measure(con, gpu, SLEEP, m.plan([1005], [877], SUPPORTED, gpu.name), 1, target(),
              interval_s=0.005)
    [(_, _, time_ns, energy_j, *_)] = runs(con)
    assert time_ns >= SLEEP_S * 1e9
    assert energy_j == pytest.approx(POWER_MW / 1000 * time_ns * 1e-9, rel=1e-9)
    assert metrics(con, "energy_from_counter") == [0]
    assert metrics(con, "samples")[0] >= 2  # the thread sampled while the command ran


def test_measuring_again_adds_new_runs_to_the_same_rows(con):
    gpu = FakeGpu()
    settings = m.plan([1005], [877], SUPPORTED, gpu.name)
    m.measure(con, gpu, SLEEP, settings, 1, target())
    m.measure(con, gpu, SLEEP, settings, 1, target())
    assert con.execute("SELECT (SELECT count(*) FROM run), (SELECT count(*) FROM gpu), "
                       "(SELECT count(*) FROM kernel), (SELECT count(*) FROM experiment)"
                       ).fetchall() == [(2, 1, 1, 1)]


def test_a_gpu_stored_with_other_sms_or_a_simulated_experiment_is_refused(con):
    gpu = FakeGpu()
    settings = m.plan([1005], [877], SUPPORTED, gpu.name)
    m.measure(con, gpu, SLEEP, settings, 1, target())
    with pytest.raises(GpudbError, match="'fake-gpu' in the database has 108 SMs, this one 80"):
        m.measure(con, gpu, SLEEP, settings, 1, target(n_sm=80))
    con.execute("UPDATE experiment SET simulator = 'GPGPU-Sim 3.2.1'")
    with pytest.raises(GpudbError, match="experiment 'm' holds simulated runs"):
        m.measure(con, gpu, SLEEP, settings, 1, target())
    assert len(runs(con)) == 1 and gpu.calls[-1] == ("reset",)


# --- clocks not permitted ----------------------------------------------------------------

def test_locking_not_permitted_falls_back_to_application_clocks(con):
    gpu = FakeGpu(lock=False)
    m.measure(con, gpu, SLEEP, m.plan([1005], [877], SUPPORTED, gpu.name), 1, target())
    assert gpu.calls == [("lock", 1005, 877), ("reset",), ("application", 1005, 877),
                         ("reset",)]
    assert metrics(con, "clocks_locked") == [0]
    assert metrics(con, "observed_sm_mhz_mean") == [1005]


def test_no_clock_control_permitted_is_refused_in_one_line_before_running(con, tmp_path):
    gpu = FakeGpu(lock=False, application=False)
    command = counting("", tmp_path)
    with pytest.raises(m.NotPermitted) as exc:
        m.measure(con, gpu, command, m.plan([1005], [877], SUPPORTED, gpu.name), 1, target())
    message = str(exc.value)
    assert "\n" not in message
    assert message.startswith("Fake GPU 80GB does not let gpudb set its clocks (locking the "
                              "core clock: Insufficient Permissions; setting application "
                              "clocks: Insufficient Permissions): setting clocks usually "
                              "needs root")
    assert not (tmp_path / "invocations").exists()  # the command never ran
    assert runs(con) == [] and gpu.calls[-1] == ("reset",)


def test_a_command_that_cannot_run_is_refused_before_the_clocks_change(con):
    gpu = FakeGpu()
    with pytest.raises(GpudbError, match="cannot run no-such-app: no such executable file"):
        m.measure(con, gpu, ["no-such-app"], m.plan([705], [877], SUPPORTED, gpu.name), 1,
                  target())
    assert gpu.calls == [] and runs(con) == []


# --- restore on error --------------------------------------------------------------------

GRID = ([1380, 705], [1215])  # two settings; with --repeat 2 invocation 3 is the second's first


def test_a_failing_command_restores_the_clocks_and_keeps_the_completed_settings(con, tmp_path):
    gpu = FakeGpu()
    command = counting("sys.exit(3 if n == 4 else 0)", tmp_path)
    with pytest.raises(GpudbError) as exc:
        m.measure(con, gpu, command, m.plan(*GRID, SUPPORTED, gpu.name), 2, target())
    assert "exited with status 3 at core 705 MHz, memory 1215 MHz (repetition 2); this " \
           "setting is not stored" in str(exc.value)
    assert [(r[0], r[1]) for r in runs(con)] == [(1380, 1215)] * 2  # not 705's first run
    assert gpu.calls == [("lock", 1380, 1215), ("lock", 705, 1215), ("reset",)]
    assert gpu.clocks == (1410.0, 1215.0)


class BackwardCounterGpu(FakeGpu):
    """A GPU whose energy counter goes back at the second setting (a reset or wrap)."""

    reads_at_705 = 0

    def energy_mj(self):
        value = super().energy_mj()
        if self.clocks[0] == 705:
            self.reads_at_705 += 1
            if self.reads_at_705 == 2:  # the read after the command: below the one before
                return value - 10**6
        return value


def test_an_energy_no_run_can_hold_is_refused_and_the_completed_settings_kept(con):
    """Issue 31 item 4: the counter difference is checked before it is stored (a negative
    energy used to reach the database's CHECK, or the average power a division by 0)."""
    gpu = BackwardCounterGpu()
    with pytest.raises(GpudbError) as exc:
        m.measure(con, gpu, SLEEP, m.plan(*GRID, SUPPORTED, gpu.name), 1, target())
    assert "the energy counter gave -" in str(exc.value)
    assert "J over" in str(exc.value) and str(exc.value).endswith(
        "ns at core 705 MHz, memory 1215 MHz (repetition 1), not a finite energy >= 0 over a "
        "positive time; this setting is not stored")
    assert [(r[0], r[1]) for r in runs(con)] == [(1380, 1215)]
    assert gpu.clocks == (1410.0, 1215.0)


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C raising KeyboardInterrupt, as in a terminal: a shell starts a background job
    (e.g. a CI run under nohup ... &) with SIGINT ignored, and Python keeps it ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_mid_grid_restores_the_clocks_and_keeps_the_completed_settings(
        con, tmp_path, signum, ctrl_c_raises):
    gpu = FakeGpu()
    # the third run signals gpudb (its parent) as Ctrl-C in a terminal would, and waits to
    # be ended
    command = counting(f"if n == 3:\n    os.kill(os.getppid(), {int(signum)})\n"
                       "    time.sleep(30)", tmp_path)
    with pytest.raises(m.MeasureInterrupted) as exc:
        m.measure(con, gpu, command, m.plan(*GRID, SUPPORTED, gpu.name), 2, target())
    assert exc.value.signum == signum and exc.value.settings_stored == 1
    assert [(r[0], r[1]) for r in runs(con)] == [(1380, 1215)] * 2
    assert gpu.calls[-1] == ("reset",) and gpu.clocks == (1410.0, 1215.0)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers put back


def test_an_error_setting_the_clocks_restores_them(con):
    class Failing(FakeGpu):
        def lock_clocks(self, core_mhz, mem_mhz):
            super().lock_clocks(core_mhz, mem_mhz)
            if core_mhz == 705:
                raise GpudbError("locking the memory clock on Fake GPU 80GB failed: GPU is lost")

    gpu = Failing()
    with pytest.raises(GpudbError, match="GPU is lost"):
        m.measure(con, gpu, SLEEP, m.plan(*GRID, SUPPORTED, gpu.name), 1, target())
    assert len(runs(con)) == 1 and gpu.calls[-1] == ("reset",)


def test_a_failed_restore_is_reported_with_the_command_that_does_it(con):
    gpu = FakeGpu(restore=False)
    warnings = []
    m.measure(con, gpu, SLEEP, m.plan([705], [877], SUPPORTED, gpu.name), 1, target(),
              warn=warnings.append)
    assert warnings == ["could not restore Fake GPU 80GB's default clocks (resetting the "
                        "locked core clock: Unknown Error): run `sudo nvidia-smi -rgc -rmc -rac`"]


# --- the NVML adapter, on a fake binding ---------------------------------------------------

def fake_pynvml(fail: dict[str, int]):
    """A stand-in for the ``pynvml`` module of a Volta-like GPU: functions named in ``fail``
    raise NVMLError with that code; calls are recorded in ``module.calls``."""
    nv = types.ModuleType("pynvml")
    nv.NVML_ERROR_NOT_SUPPORTED, nv.NVML_ERROR_NO_PERMISSION = 3, 4
    nv.NVML_ERROR_DRIVER_NOT_LOADED, nv.NVML_ERROR_FUNCTION_NOT_FOUND = 9, 13
    nv.NVML_CLOCK_GRAPHICS, nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM = 0, 1, 2
    words = {3: "Not Supported", 4: "Insufficient Permissions", 9: "Driver Not Loaded",
             13: "Function Not Found"}

    class NVMLError(Exception):
        def __init__(self, value):
            super().__init__(value)
            self.value = value

        def __str__(self):
            return words[self.value]

    nv.NVMLError = NVMLError
    nv.calls = []
    answers = {
        "nvmlInit": None, "nvmlShutdown": None, "nvmlDeviceGetCount": 1,
        "nvmlDeviceGetHandleByIndex": "handle", "nvmlDeviceGetName": b"Tesla V100-SXM2-16GB",
        "nvmlDeviceGetUUID": "GPU-1234", "nvmlSystemGetDriverVersion": "470.57",
        "nvmlDeviceGetAttributes": types.SimpleNamespace(multiprocessorCount=80),
        "nvmlDeviceGetPciInfo": types.SimpleNamespace(busId=b"00000000:18:00.0",
                                                      busIdLegacy=b"0000:18:00.0"),
        "nvmlDeviceGetSupportedMemoryClocks": [877],
        "nvmlDeviceGetSupportedGraphicsClocks": [1530, 1380, 135],
        "nvmlDeviceGetDefaultApplicationsClock": 1312, "nvmlDeviceSetGpuLockedClocks": None,
        "nvmlDeviceSetMemoryLockedClocks": None, "nvmlDeviceSetApplicationsClocks": None,
        "nvmlDeviceResetGpuLockedClocks": None, "nvmlDeviceResetMemoryLockedClocks": None,
        "nvmlDeviceResetApplicationsClocks": None, "nvmlDeviceGetTotalEnergyConsumption": 7,
        "nvmlDeviceGetPowerUsage": 50_000, "nvmlDeviceGetClockInfo": 1380,
        "nvmlDeviceGetCurrentClocksEventReasons": 1,
        "nvmlDeviceGetCurrentClocksThrottleReasons": 4}

    def function(name, answer):
        def call(*args):
            nv.calls.append((name, *args))
            if name in fail:
                raise NVMLError(fail[name])
            return answer
        return call

    for name, answer in answers.items():
        setattr(nv, name, function(name, answer))
    return nv


@pytest.fixture
def binding(monkeypatch):
    def install(**fail):
        nv = fake_pynvml(fail)
        monkeypatch.setitem(sys.modules, "pynvml", nv)
        return nv
    return install


def test_nvml_adapter_on_a_volta_like_gpu(binding, monkeypatch):
    asked = []
    monkeypatch.setattr(m, "cuda_sm_count", lambda bus_ids: asked.append(bus_ids))  # no driver
    nv = binding(nvmlDeviceSetMemoryLockedClocks=3, nvmlDeviceResetMemoryLockedClocks=3,
                 nvmlDeviceGetTotalEnergyConsumption=3, nvmlDeviceGetAttributes=3,
                 nvmlDeviceGetCurrentClocksEventReasons=13)
    gpu = m.Nvml(0)
    assert (gpu.name, gpu.uuid) == ("Tesla V100-SXM2-16GB", "GPU-1234")
    assert gpu.supported_clocks() == {877: [135, 1380, 1530]}
    assert gpu.default_clocks() == (1312, 1312)
    assert gpu.sm_count() is None and m.sm_count(gpu, 80) == 80
    assert asked[0] == ["00000000:18:00.0", "0000:18:00.0"]  # the CUDA driver was asked
    with pytest.raises(GpudbError, match="NVML does not report Tesla V100-SXM2-16GB's SM "
                                         "count: give it with --sms"):
        m.sm_count(gpu, None)
    # no memory-clock locking before Ampere: the locked core clock is reset, application
    # clocks set instead (memory first in NVML's argument order)
    nv.calls.clear()
    assert m.apply_setting(gpu, m.Setting(1380, 877)) == "application"
    assert [c[0] for c in nv.calls] == [
        "nvmlDeviceSetGpuLockedClocks", "nvmlDeviceSetMemoryLockedClocks",
        "nvmlDeviceResetGpuLockedClocks", "nvmlDeviceResetMemoryLockedClocks",
        "nvmlDeviceResetApplicationsClocks", "nvmlDeviceSetApplicationsClocks"]
    assert nv.calls[0][1:] == ("handle", 1380, 1380) and nv.calls[-1][1:] == ("handle", 877, 1380)
    assert gpu.reset_clocks() == []  # "not supported" there: nothing was locked
    assert gpu.energy_mj() is None and gpu.power_mw() == 50_000.0
    assert gpu.clocks_mhz() == (1380.0, 1380.0)
    assert gpu.clock_event_reasons() == 4  # through the pre-535 name
    gpu.close()
    assert nv.calls[-1] == ("nvmlShutdown",)


def test_sm_count_from_the_cuda_driver_where_nvml_has_none(binding, monkeypatch):
    # NVML answers the device attributes for MIG instances only (an H200 says Not Supported)
    monkeypatch.setattr(m, "cuda_sm_count", lambda bus_ids: 132)
    binding(nvmlDeviceGetAttributes=3)
    assert m.sm_count(m.Nvml(0), None) == 132
    binding()
    assert m.sm_count(m.Nvml(0), None) == 80  # NVML's own answer first


FAKE_LIBCUDA = r"""
#include <string.h>
/* The three CUDA driver calls cuda_sm_count makes, for one device (ordinal 3, 132 SMs) that
   this "driver" finds only under the short form of its PCI address. */
int cuInit(unsigned flags) { return flags; }
int cuDeviceGetByPCIBusId(int *dev, const char *bus_id) {
    if (strcmp(bus_id, "0000:18:00.0") != 0) return 101;  /* CUDA_ERROR_INVALID_DEVICE */
    *dev = 3;
    return 0;
}
int cuDeviceGetAttribute(int *value, int attribute, int dev) {
    if (attribute != 16 || dev != 3) return 1;            /* CUDA_ERROR_INVALID_VALUE */
    *value = 132;
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler for a stand-in libcuda")
def test_cuda_sm_count_through_a_stand_in_driver_library(tmp_path):
    (tmp_path / "cuda.c").write_text(FAKE_LIBCUDA)
    lib = tmp_path / "libcuda.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "cuda.c")],
                   check=True)
    # NVML's long form is not found, the legacy form is: the second address answers
    assert m.cuda_sm_count(["00000000:18:00.0", "0000:18:00.0"], library=str(lib)) == 132
    assert m.cuda_sm_count(["0000:99:00.0", ""], library=str(lib)) is None
    assert m.cuda_sm_count(["0000:18:00.0"], library=str(tmp_path / "missing.so")) is None


def test_warm_up_runs_come_first_at_each_setting_and_are_not_stored(con, tmp_path):
    command = counting("", tmp_path)
    gpu = FakeGpu()
    seen = []
    added = m.measure(con, gpu, command, m.plan([705, 1005], [877], SUPPORTED, gpu.name), 2,
                      target(), progress=lambda setting, done: seen.append(len(done)),
                      warmup=3)
    # 2 settings x (3 warm-up + 2 measured) runs of the command; only the measured stored
    assert (tmp_path / "invocations").read_text() == "x" * 10
    assert added == 2 * 2 and seen == [2, 2]
    assert sorted(metrics(con, "repetition")) == [0, 0, 1, 1]


def test_a_failing_warm_up_run_is_named_and_stores_nothing(con):
    gpu = FakeGpu()
    with pytest.raises(GpudbError, match=r"exited with status 3 at core 705 MHz, memory 877 MHz "
                                         r"\(warm-up run\); this setting is not stored"):
        m.measure(con, gpu, [sys.executable, "-c", "raise SystemExit(3)"],
                  m.plan([705], [877], SUPPORTED, gpu.name), 1, target(), warmup=1)
    assert con.execute("SELECT count(*) FROM run").fetchone()[0] == 0
    assert gpu.calls[-1] == ("reset",)


class StuckMemoryGpu(FakeGpu):
    """Takes application clocks but keeps its memory at 1215 MHz, as an H200 kept 3201 MHz
    when given 2201."""

    def set_application_clocks(self, core_mhz, mem_mhz):
        super().set_application_clocks(core_mhz, mem_mhz)
        self.clocks = (float(core_mhz), 1215.0)


def test_clocks_the_gpu_did_not_apply_are_refused_and_not_stored(con):
    gpu = StuckMemoryGpu(lock=False)
    with pytest.raises(m.MeasureStopped, match=r"^at core 705 MHz, memory 877 MHz the GPU ran with "
                                         r"memory at up to 1215 MHz: NVML accepted the clocks but "
                                         r"the GPU did not hold them .*; this setting is not "
                                         r"stored$") as stopped:
        m.measure(con, gpu, SLEEP, m.plan([705], [1215, 877], SUPPORTED, gpu.name), 2,
                  target())
    assert stopped.value.settings_stored == 1
    assert [(r[0], r[1]) for r in runs(con)] == [(705.0, 1215.0)] * 2  # the first setting kept
    assert gpu.calls[-1] == ("reset",)


def test_check_clocks_allows_throttling_but_not_a_faster_clock():
    def seen(sm, mem):
        return m.Measurement(m.Setting(1380, 877), 0, 0, 1, 1.0, True, "locked",
                             m.PowerSamples(sm_mhz=sm, mem_mhz=mem))

    ok = m.Setting(1380, 877)
    m.check_clocks(ok, [seen([1380, 1200, 1005], [877, 877])])  # throttled
    m.check_clocks(ok, [seen([1390], [880])])  # within 1%
    m.check_clocks(ok, [seen([300, 1380], [405, 877])])  # idle before the command started
    with pytest.raises(GpudbError, match="ran with SMs at up to 1410 MHz and memory at up to "
                                         "1215 MHz:"):
        m.check_clocks(ok, [seen([1380], [877]), seen([1410], [1215, 405])])
    with pytest.raises(GpudbError, match="ran with memory at no more than 810 MHz:"):
        m.check_clocks(ok, [seen([1380], [405, 810])])


def test_nvml_adapter_errors_are_one_line(binding):
    binding(nvmlInit=9)
    with pytest.raises(GpudbError, match=r"^no NVIDIA GPU: NVML could not be initialised "
                                         r"\(Driver Not Loaded\)$"):
        m.Nvml(0)
    binding()
    with pytest.raises(GpudbError, match=r"^no GPU 1: NVML sees 1 \(0 to 0\)$"):
        m.Nvml(1)
    binding(nvmlDeviceSetGpuLockedClocks=4, nvmlDeviceSetApplicationsClocks=4,
            nvmlDeviceResetApplicationsClocks=4)
    gpu = m.Nvml(0)
    with pytest.raises(m.NotPermitted, match=r"^Tesla V100-SXM2-16GB does not let gpudb set its "
                                             r"clocks \(locking the core clock: Insufficient "
                                             r"Permissions; setting application clocks: "
                                             r"Insufficient Permissions\): setting clocks "
                                             r"usually needs root"):
        m.apply_setting(gpu, m.Setting(1380, 877))
    assert gpu.reset_clocks() == ["resetting the application clocks: Insufficient Permissions"]
    assert gpu.energy_mj() == 7


# --- command line ------------------------------------------------------------------------

@pytest.fixture
def fake_gpu(monkeypatch):
    gpu = FakeGpu()
    monkeypatch.setattr(m, "open_gpu", lambda index: gpu)
    return gpu


def invoke(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), "measure", *map(str, args)],
                              prog_name="gpudb")


def test_cli_measures_the_grid_and_prints_a_line_per_setting(tmp_path, fake_gpu):
    db = tmp_path / "cli.duckdb"
    result = invoke(db, "--core-mhz", "1410,705", "--mem-mhz", "1215", "--repeat", "2",
                    "--", *SLEEP)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("core 1410 MHz, memory 1215 MHz (locked clocks): 2 runs, ")
    assert lines[0].endswith("1.500 J (energy counter); seen: SM 1410 MHz, memory 1215 MHz, "
                             "clock-event reasons 0x4")
    assert lines[1].endswith("seen: SM 705 MHz, memory 1215 MHz")
    assert lines[2] == f"4 runs added to experiment 'measured-fake-gpu-80gb' of {db}"
    con = connect(db, read_only=True)
    try:
        assert con.execute("SELECT DISTINCT gpu_id, kernel_id FROM run").fetchall() == [
            ("fake-gpu-80gb", f"measured/{os.path.basename(sys.executable)}")]
    finally:
        con.close()
    assert fake_gpu.closed and fake_gpu.calls[-1] == ("reset",)


@pytest.mark.parametrize("args, start", [
    (("--core-mhz", "1400", "--mem-mhz", "1215", "--", *SLEEP),
     "Error: Fake GPU 80GB does not support a core clock of 1400 MHz"),
    (("--core-mhz", "1380", "--mem-mhz", "1215", "--", "/nonexistent/app"),
     "Error: cannot run /nonexistent/app: no such executable file"),
    (("--core-mhz", "1380", "--mem-mhz", "1215"), "Error: missing argument '-- COMMAND"),
    (("--core-mhz", "13x0", "--mem-mhz", "1215", "--", "true"),
     "Error: invalid value for '--core-mhz': '13x0' is not a number"),
])
def test_cli_bad_input_is_one_line_and_writes_nothing(tmp_path, fake_gpu, args, start):
    db = tmp_path / "cli.duckdb"
    result = invoke(db, *args)
    assert result.exit_code in (1, 2)
    assert result.output.count("\n") == 1 and result.output.startswith(start), result.output
    assert not db.exists()


def test_cli_keeps_a_new_file_with_the_settings_measured_before_a_refused_one(tmp_path,
                                                                             monkeypatch):
    gpu = StuckMemoryGpu(lock=False)
    monkeypatch.setattr(m, "open_gpu", lambda index: gpu)
    db = tmp_path / "new.duckdb"
    result = invoke(db, "--core-mhz", "705", "--mem-mhz", "1215,877", "--", *SLEEP)
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        "Error: at core 705 MHz, memory 877 MHz the GPU ran with memory at up to 1215 MHz: NVML "
        "accepted the clocks but the GPU did not hold them (a --warmup run lets a new clock "
        f"settle); this setting is not stored (1 settings before it stored and kept in {db})")
    con = connect(db)
    try:
        assert [(r[0], r[1]) for r in runs(con)] == [(705.0, 1215.0)]
    finally:
        con.close()


def test_cli_interrupted_says_what_it_kept_and_exits_130(tmp_path, fake_gpu, ctrl_c_raises):
    # one warm-up run (the CLI's default) and one measured run per setting: the fourth
    # invocation is the second setting's measured run
    command = counting("if n == 4:\n    os.kill(os.getppid(), signal.SIGINT)\n"
                       "    time.sleep(30)", tmp_path)
    result = invoke(tmp_path / "cli.duckdb", "--core-mhz", "1380,705", "--mem-mhz", "1215",
                    "--", *command)
    assert result.exit_code == 130
    assert result.output.splitlines()[-1] == ("interrupted (SIGINT): 1 settings stored and "
                                              "kept; clocks restored")
    assert fake_gpu.calls[-1] == ("reset",) and fake_gpu.closed


def test_cli_without_nvml_binding_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    result = invoke(tmp_path / "x.duckdb", "--core-mhz", "1", "--mem-mhz", "1", "--", "true")
    assert result.exit_code == 1
    assert result.output == ("Error: gpudb measure needs NVML's Python binding: "
                             "pip install 'gpudb-dvfs[nvml]'\n")


# --- a real GPU --------------------------------------------------------------------------

def _no_gpu() -> str | None:
    """Why NVML cannot measure here, or None when it can."""
    try:
        m.Nvml(0).close()
    except GpudbError as exc:
        return str(exc)
    return None


NO_GPU = _no_gpu()


@pytest.mark.gpu
@pytest.mark.skipif(NO_GPU is not None, reason=str(NO_GPU))
def test_measure_on_the_real_gpu(con):
    gpu = m.Nvml(0)
    try:
        core, mem = gpu.default_clocks()
        supported = gpu.supported_clocks()
        mem = mem if mem in supported else max(supported)
        core = core if core in supported[mem] else max(supported[mem])
        tgt = target(gpu_id=m.gpu_id_of(gpu.name), n_sm=m.sm_count(gpu, None))
        try:
            m.measure(con, gpu, [sys.executable, "-c", "import time; time.sleep(0.3)"],
                      m.plan([core], [mem], supported, gpu.name), 1, tgt, warmup=1)
        except m.NotPermitted as exc:
            pytest.skip(str(exc))
    finally:
        gpu.close()
    [(c, mm, time_ns, energy_j, source, *_)] = runs(con)
    assert (c, mm, source) == (core, mem, "measured")
    assert time_ns >= 0.3e9 and energy_j > 0
    assert metrics(con, "observed_sm_mhz_mean")[0] > 0
