"""Closed-loop controller kinds and their registry.

Each kind is one module here declaring ``KIND = ControllerKind(...)``: its name, the paper it
follows, and ``plan``, which turns a GPU, kernels and the kind's options into the runs to
simulate (:class:`Job`: start setting, the controller, what identifies it in the run_id and
the run's columns, any metrics). :func:`gpudb.control.runner.run` does the rest for every
kind (load, plan, and through the one runner, gpudb.simulate.runner: skip what is stored,
simulate, store), so adding a controller kind is adding its module. The kinds:
``predictor`` (predictor-driven DVFS through the guard's step, papers 000 and 004) and
``equalizer`` (paper 001, with its static baselines).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pyarrow as pa


@dataclass
class Job:
    """One run a controller kind asks for: ``kernel`` (a sim KernelSpec) from ``core_mhz`` /
    ``mem_mhz`` with all SMs and the hardware CTA limit, under the controller ``make(sim)``
    returns (a sim.model.Controller; ``sim`` is the Simulation it will run in, in the process
    that simulates: picklable, e.g. sim.sweep.GivenController or a functools.partial of a
    module's function, for runs in worker processes).

    run_key: what stands for the controller in the run_id (sim.model.run_id's policy);
    columns: the run's columns naming the controller (predictor, objective, variant, ...);
    metrics(controller, run_id): metric rows to store with the run, or None.
    """
    kernel: Any
    core_mhz: float
    mem_mhz: float
    run_key: str
    make: Callable[[Any], Any]
    columns: dict = field(default_factory=dict)
    interval_instructions: int | None = None    # None: the simulator's default
    epoch_cycles: int | None = None
    core_headroom: float = 0.0
    metrics: Callable[[Any, str], pa.Table | None] | None = None


@dataclass(frozen=True)
class ControllerKind:
    """A kind of closed-loop controller.

    plan(gpu, kernels, **options) -> list[Job]: the runs for a sim GpuConfig and KernelSpecs
    (options are the kind's own, e.g. the predictor and objective);
    experiment(gpu, suite) -> (name, description): the experiment its runs are stored in.
    """
    name: str
    title: str
    paper: str
    plan: Callable[..., list[Job]]
    experiment: Callable[[Any, Any], tuple[str, str]]


def _modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        yield importlib.import_module(f"{__name__}.{info.name}")


@cache
def registry() -> tuple[ControllerKind, ...]:
    """Every controller kind, by name."""
    found = [m.KIND for m in _modules() if hasattr(m, "KIND")]
    names = [k.name for k in found]
    if len(set(names)) != len(names):
        raise RuntimeError(f"two controller kind modules declare one name: {sorted(names)}")
    return tuple(sorted(found, key=lambda k: k.name))


def get(name: str) -> ControllerKind:
    for kind in registry():
        if kind.name == name:
            return kind
    raise ValueError(f"unknown controller kind {name!r} (known: {', '.join(names())})")


def names() -> tuple[str, ...]:
    return tuple(k.name for k in registry())
