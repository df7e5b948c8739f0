"""DVFS runtime predictors and their registry.

Each predictor is one module here declaring ``PREDICTOR = Predictor(...)``: its name, paper
section, the ``sample`` columns it reads, its numpy formula, what it predicts across, and the
papers' figures for it. Its SQL view is ``schema/views/40_pred_<name>.sql``. The UDF
registration (gpudb.store.udfs), the ``prediction`` view (gpudb.store.db fills its union from here),
accuracy tables, trace replay, the closed loop, the CLI's choices and the benchmarks read the
registry, so adding a predictor is adding its module and its view file. Modules may also
declare ``UDFS``, the SQL functions they contribute; formula-only modules (linear) declare no
predictor, nor do the DVFS controller's energy model and decision step (dvfs_energy,
dvfs_step: pure functions of predictions whose SQL function, guard_replay, the store
registers with the others).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache

import numpy as np


@dataclass(frozen=True)
class Udf:
    """A SQL function gpudb registers on every connection (an Arrow UDF over numpy).

    null_handling: 'default' (DuckDB drops rows with a NULL argument and answers NULL; the
    function must not return NULL) or 'special' (the function sees NULLs, as NaN through
    :func:`as_float64`, and may return NULL itself, for inputs it cannot take)."""
    name: str
    function: Callable
    params: tuple[str, ...]
    returns: str
    doc: str
    null_handling: str = "default"


@dataclass(frozen=True)
class Predictor:
    """One DVFS performance predictor.

    inputs: the ``sample`` view's columns the formula takes, in order, before the base and
    target core MHz; formula(*inputs, base_mhz, target_mhz) returns the predicted time (ns).
    granularity: the samples it predicts ('interval', 'run'); domains: the clock domains and
    resources it predicts across ('core'; 'mem' and 'sm' for Wu et al.'s model). A predictor
    without a formula (a learned model evaluated in SQL) is not replayed by controllers.
    plain_sql: the formula in plain SQL over prediction_input, the reference `gpudb bench`
    times the UDF view against. order: its place in tables (the papers' models first).
    union: whether the ``prediction`` view takes its view's rows as they are (False for Wu et
    al.'s, which 50_prediction.sql adds with the current-model filter).
    needs: what it needs stored before it predicts and the command that stores it ('a model:
    gpudb train wu'), said when it has no predictions; None: only the runs' counters.
    """
    name: str
    title: str
    paper: str
    order: int
    inputs: tuple[str, ...] = ()
    formula: Callable[..., np.ndarray] | None = None
    granularity: tuple[str, ...] = ("interval", "run")
    domains: tuple[str, ...] = ("core",)
    plain_sql: str | None = None
    paper_000_mape_pct: float | None = None
    paper_000_edp_saving_pct: float | None = None
    union: bool = True
    needs: str | None = None

    @property
    def view(self) -> str:
        return f"pred_{self.name}"

    @property
    def replayable(self) -> bool:
        """Whether a DVFS controller can run on it: a formula over one interval's counters."""
        return self.formula is not None and "interval" in self.granularity

    def predict(self, sample: Mapping[str, float | np.ndarray], base_mhz: np.ndarray,
                target_mhz: np.ndarray) -> np.ndarray:
        """Predicted time (ns) at each target core MHz from one sample's columns."""
        if self.formula is None:
            raise ValueError(f"predictor {self.name} has no formula to call")
        n = len(target_mhz)
        args = [np.full(n, float(sample[c])) for c in self.inputs]
        return self.formula(*args, base_mhz, target_mhz)


def as_float64(array) -> np.ndarray:
    """An Arrow UDF argument as a float64 numpy array (DuckDB has already removed NULL rows:
    the NULL-in, NULL-out contract of every predictor)."""
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)


def _modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        yield importlib.import_module(f"{__name__}.{info.name}")


@cache
def registry() -> tuple[Predictor, ...]:
    """Every predictor, in table order."""
    found = [m.PREDICTOR for m in _modules() if hasattr(m, "PREDICTOR")]
    names = [p.name for p in found]
    if len(set(names)) != len(names):
        raise RuntimeError(f"two predictor modules declare one name: {sorted(names)}")
    return tuple(sorted(found, key=lambda p: (p.order, p.name)))


@cache
def udfs() -> tuple[Udf, ...]:
    """Every SQL function the predictor modules contribute."""
    return tuple(u for m in _modules() for u in getattr(m, "UDFS", ()))


def get(name: str) -> Predictor:
    for p in registry():
        if p.name == name:
            return p
    raise ValueError(f"unknown predictor {name!r} (known: {', '.join(names())})")


def names(replayable: bool | None = None) -> tuple[str, ...]:
    """Predictor names in table order; replayable True: those a controller can run on."""
    return tuple(p.name for p in registry()
                 if replayable is None or p.replayable == replayable)
