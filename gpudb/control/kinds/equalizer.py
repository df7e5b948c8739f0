"""Controller kind ``equalizer``: Equalizer (paper 001) in the simulator's closed loop: every
epoch each SM runs Algorithm 1 on its own warp-state counters, sets its own CTA limit through
the 3-epoch hysteresis (pausing CTAs beyond it, section IV-B), and votes for the SM and memory
V/F direction of Table I; the frequency manager moves each domain one level towards the
majority's request (section IV-C).

The decision logic is :mod:`gpudb.control.equalizer`; this module wires it to
:class:`sim.model.Simulation` (epoch mode, per-SM CTA limits, core headroom for the SM "high"
level above gtx480's top P-state). Its :func:`plan` asks gpudb.control.runner for Equalizer's
runs and its static V/F baselines (migration 0008); query ``equalizer_vs_static`` compares them.
The memory V/F domain is the paper's (section V-A): on gtx480 the interconnect, L2, memory
controller and DRAM change their operating point together (``l2_domain = "mem"`` in its
configuration; their dynamic energy at (Vm/Vm0)^2, DRAM background power per memory state).

Variants (Table I and section V's breakdown): ``full`` (numBlocks and both V/F domains),
``cta`` (numBlocks only, V/F at nominal: the gain of CTA control alone) and ``vf`` (V/F only,
every SM at its hardware CTA limit); and gpudb's ``inclined`` (energy mode only): ``full`` with
no V/F action for an unsaturated kernel without one excess warp per sample
(:func:`gpudb.control.equalizer.inclined`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import pyarrow as pa

from gpudb.control.equalizer import (
    EPOCH_CYCLES,
    MODES,
    VF_STEP_FRACTION,
    BlockLimiter,
    EpochCounters,
    VfLevel,
    decide,
    inclined,
    frequency_manager,
    level_mhz,
    vf_request,
)
from gpudb.control.kinds import ControllerKind, Job
from sim.sweep import GivenController

VARIANTS = ("full", "cta", "vf", "inclined")


@dataclass
class EqualizerController:
    """A :class:`sim.model.Controller` running Equalizer on epoch rows (``row['sm_eq']``).

    nominal_core_mhz / nominal_mem_mhz: the normal V/F levels (MHz); w_cta: warps per CTA of
    the kernel; slots: CTAs an SM can hold (the initial numBlocks); mode: 'energy' or
    'performance' (Table I); variant: one of :data:`VARIANTS`. ``trace`` records per epoch the
    SM and memory levels and the per-SM CTA limits decided.
    """

    nominal_core_mhz: float
    nominal_mem_mhz: float
    w_cta: int
    slots: int
    n_sm: int
    mode: str
    variant: str = "full"
    mem_states_mhz: tuple[float, ...] = ()
    sm_level: VfLevel = VfLevel.NORMAL
    mem_level: VfLevel = VfLevel.NORMAL
    trace: list[tuple[int, int, int, tuple[int, ...]]] = field(default_factory=list)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, "
                             f"got {self.variant!r}")
        self.limiters = [BlockLimiter(self.slots) for _ in range(self.n_sm)]
        self.limits = tuple(self.slots for _ in range(self.n_sm))

    @property
    def name(self) -> str:
        # the run's policy (schema/0006): the controller is in columns predictor, objective
        return "closed_loop"

    @property
    def run_key(self) -> str:
        return f"equalizer:{self.mode}:{self.variant}"

    def decide(self, idx: int, row: dict, setting):
        from sim.model import Setting

        requests = []
        for s, (samples, active, waiting, xalu, xmem) in enumerate(row["sm_eq"]):
            if samples < 1:     # a last epoch too short for a sample: keep what is set
                continue
            c = EpochCounters.from_sums(int(samples), active, waiting, xalu, xmem, self.w_cta)
            d = decide(c)
            if self.variant == "inclined":
                d = inclined(d, c)
            if self.variant != "vf":
                self.limiters[s].update(d.block_delta)
            requests.append(vf_request(d, self.mode))
        if self.variant != "cta" and requests:
            self.sm_level, self.mem_level = frequency_manager(self.sm_level, self.mem_level,
                                                              requests)
        self.limits = tuple(lim.num_blocks for lim in self.limiters)
        self.trace.append((idx, int(self.sm_level), int(self.mem_level), self.limits))
        return Setting(level_mhz(self.sm_level, self.nominal_core_mhz),
                       _snap(level_mhz(self.mem_level, self.nominal_mem_mhz),
                             self.mem_states_mhz), setting.ctas_per_sm)

    def decide_sm_limits(self, idx: int, row: dict, limits):
        return None if self.variant == "vf" else self.limits


def _snap(mhz: float, states: tuple[float, ...]) -> float:
    """A level's MHz as the memory P-state it names (nominal x 1.15 may differ from the
    configured 1062.6 in the last bit), else as computed."""
    for state in states:
        if abs(state - mhz) <= 1e-9 * state:
            return state
    return mhz


def simulate_equalizer(gpu, kernel, mode: str, variant: str = "full",
                       epoch_cycles: int = EPOCH_CYCLES, seed: int = 0, n_sm: int | None = None):
    """Run ``kernel`` on ``gpu`` (a sim GpuConfig or name) under Equalizer from the nominal
    setting; returns (SimResult, controller). The core may rise to nominal + 15% (the SM
    "high" level) even where that lies above the GPU's top P-state."""
    from sim.config import load_gpu
    from sim.model import Simulation

    gpu = load_gpu(gpu) if isinstance(gpu, str) else gpu
    top = gpu.core_mhz[-1]
    headroom = max(0.0, gpu.nominal_core_mhz * (1.0 + VF_STEP_FRACTION) / top - 1.0)
    sim = Simulation(gpu, kernel, n_sm=n_sm, seed=seed, epoch_cycles=epoch_cycles,
                     core_headroom=headroom)
    controller = EqualizerController(gpu.nominal_core_mhz, gpu.nominal_mem_mhz,
                                     kernel.warps_per_cta, sim.slots, sim.n_sm, mode, variant,
                                     tuple(gpu.mem_mhz))
    return sim.run(controller), controller


# Paper 001 section V's static operating points: the nominal one and each domain 15% up or
# down, as (core scale, memory scale).
STATIC = {"nominal": (1.0, 1.0), "sm_high": (1.15, 1.0), "sm_low": (0.85, 1.0),
          "mem_high": (1.0, 1.15), "mem_low": (1.0, 0.85)}


@dataclass
class _Static:
    """Keeps one static setting for the whole run (policy 'static')."""
    baseline: str

    name = "static"

    @property
    def run_key(self) -> str:
        return f"static:{self.baseline}"

    def decide(self, idx, row, setting):
        return setting


def plan(gpu, kernels: list, modes: tuple[str, ...] = MODES,
         variants: tuple[str, ...] = VARIANTS) -> list[Job]:
    """Each kernel under Equalizer in every mode and variant (epoch runs: policy
    'closed_loop', predictor 'equalizer', objective the mode, variant, epoch_cycles; the mean
    per-SM CTA limit of each epoch as metric 'equalizer_ctas_mean'), and at each static
    operating point of :data:`STATIC` (policy 'static', variant the baseline's name). The
    'cta' variant keeps V/F nominal, where the mode makes no difference, so it runs once, in
    the first mode given; 'inclined' changes only what energy mode throttles, so it runs in
    energy mode only."""
    headroom = max(0.0, gpu.nominal_core_mhz * (1.0 + VF_STEP_FRACTION) / gpu.core_mhz[-1] - 1.0)
    jobs = []
    for spec in kernels:
        for name, (core_scale, mem_scale) in STATIC.items():
            jobs.append(Job(spec, gpu.nominal_core_mhz * core_scale,
                            _snap(gpu.nominal_mem_mhz * mem_scale, tuple(gpu.mem_mhz)),
                            f"static:{name}", GivenController(_Static(name)),
                            {"variant": name}, core_headroom=headroom))
    for spec in kernels:
        for mode in modes:
            for variant in variants:
                if variant == "cta" and mode != modes[0]:
                    continue
                if variant == "inclined" and mode != "energy":
                    continue
                # picklable, so that the controller is made in the worker that simulates
                make = functools.partial(_controller_for, gpu.nominal_core_mhz,
                                         gpu.nominal_mem_mhz, spec.warps_per_cta, mode, variant,
                                         tuple(gpu.mem_mhz))
                jobs.append(Job(spec, gpu.nominal_core_mhz, gpu.nominal_mem_mhz,
                                f"equalizer:{mode}:{variant}", make,
                                {"predictor": "equalizer", "objective": mode,
                                 "variant": variant, "epoch_cycles": EPOCH_CYCLES},
                                epoch_cycles=EPOCH_CYCLES, core_headroom=headroom,
                                metrics=_ctas_mean))
    return jobs


def _controller_for(nominal_core_mhz: float, nominal_mem_mhz: float, w_cta: int, mode: str,
                    variant: str, mem_states_mhz: tuple[float, ...],
                    sim) -> EqualizerController:
    """Equalizer for the Simulation ``sim`` it will run in (its CTA slots and SM count)."""
    return EqualizerController(nominal_core_mhz, nominal_mem_mhz, w_cta, sim.slots, sim.n_sm,
                               mode, variant, mem_states_mhz)


def _ctas_mean(controller: EqualizerController, run_id: str) -> pa.Table:
    """Metric 'equalizer_ctas_mean': the mean per-SM CTA limit of each epoch; the limits
    decided after epoch i govern epoch i + 1."""
    trace = controller.trace
    return pa.table({"run_id": [run_id] * len(trace),
                     "idx": [idx + 1 for idx, *_ in trace],
                     "name": ["equalizer_ctas_mean"] * len(trace),
                     "value": [sum(lim) / len(lim) for *_, lim in trace]})


KIND = ControllerKind(
    "equalizer", "Equalizer and its static V/F baselines", "paper 001 sections IV-V", plan,
    lambda gpu, suite: (f"equalizer-{gpu.name}-{suite.name}",
                        f"Equalizer (paper 001) and its static baselines on {gpu.name}, suite "
                        f"{suite.name}"))


def run_equalizer(db_path, gpu: str, suite: str, kernels: list[str] | None = None,
                  modes: tuple[str, ...] = MODES, variants: tuple[str, ...] = VARIANTS,
                  experiment: str | None = None, progress=None, seed: int = 0) -> int:
    """:func:`gpudb.control.runner.run` with this kind, every run with the simulator's
    ``seed``; returns the runs added."""
    from gpudb.control.runner import run

    rows = run(db_path, KIND.name, gpu, suite, kernels, seed=seed, experiment=experiment,
               progress=progress, modes=modes, variants=variants)
    return sum(r["added"] for r in rows)
