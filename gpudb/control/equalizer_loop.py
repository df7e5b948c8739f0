"""Equalizer (paper 001) in the simulator's closed loop: every epoch each SM runs Algorithm 1 on
its own warp-state counters, sets its own CTA limit through the 3-epoch hysteresis (pausing
CTAs beyond it, section IV-B), and votes for the SM and memory V/F direction of Table I; the
frequency manager moves each domain one level towards the majority's request (section IV-C).

The decision logic is :mod:`gpudb.control.equalizer`; this module wires it to
:class:`sim.model.Simulation` (epoch mode, per-SM CTA limits, core headroom for the SM "high"
level above gtx480's top P-state). Nothing here is written to a database yet (issue 14 goes
on: storage of epoch runs, the memory domain's power, the static baselines and the stored
comparison).

Variants (Table I and section V's breakdown): ``full`` (numBlocks and both V/F domains),
``cta`` (numBlocks only, V/F at nominal: the gain of CTA control alone) and ``vf`` (V/F only,
every SM at its hardware CTA limit).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpudb.control.equalizer import (
    EPOCH_CYCLES,
    MODES,
    VF_STEP_FRACTION,
    BlockLimiter,
    EpochCounters,
    VfLevel,
    decide,
    frequency_manager,
    level_mhz,
    vf_request,
)

VARIANTS = ("full", "cta", "vf")


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
        return "equalizer"

    @property
    def run_key(self) -> str:
        return f"equalizer:{self.mode}:{self.variant}"

    def decide(self, idx: int, row: dict, setting):
        from sim.model import Setting

        requests = []
        for s, (samples, active, waiting, xalu, xmem) in enumerate(row["sm_eq"]):
            if samples < 1:     # a last epoch too short for a sample: keep what is set
                continue
            d = decide(EpochCounters.from_sums(int(samples), active, waiting, xalu, xmem,
                                               self.w_cta))
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
