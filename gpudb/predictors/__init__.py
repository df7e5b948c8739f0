"""DVFS runtime predictors and their registry.

Each predictor is one module here declaring ``PREDICTOR = Predictor(...)``: its name, paper
section, the ``sample`` columns it reads, its numpy formula and the SQL function computing it,
what it predicts across, and the papers' figures for it. A predictor with a formula gets its
SQL view ``pred_<name>`` made from that declaration (:attr:`Predictor.view_sql`, created by
gpudb.store.db with gpudb's other views); one predicting from elsewhere (Wang & Chu's, Wu et
al.'s) has its view file ``schema/views/4N_pred_<name>.sql``. The views, the ``prediction``
view's union, accuracy tables, trace replay, the closed loop, the CLI's choices and the
benchmarks read the registry, so adding a formula predictor is adding its module. Modules may
also declare ``UDFS``, the SQL functions they contribute (:func:`udfs`, which the package root
hands the store's hook, gpudb.store.udfs); formula-only modules (linear) declare no predictor.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache

import numpy as np


_IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]*$")


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
    sql_function: the SQL function (one of :func:`udfs`) computing ``formula`` in the view
    made from this declaration, called with ``inputs`` and the base and target core MHz.
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
    sql_function: str | None = None
    granularity: tuple[str, ...] = ("interval", "run")
    domains: tuple[str, ...] = ("core",)
    plain_sql: str | None = None
    paper_000_mape_pct: float | None = None
    paper_000_edp_saving_pct: float | None = None
    union: bool = True
    needs: str | None = None

    def __post_init__(self):
        # the name is written into SQL (its view, its columns in the side-by-side views)
        if not _IDENTIFIER.match(self.name):
            raise ValueError(f"predictor name {self.name!r} is not a plain SQL identifier")

    @property
    def view(self) -> str:
        return f"pred_{self.name}"

    @property
    def view_sql(self) -> str | None:
        """The view ``pred_<name>``, made from this declaration (None for a predictor without
        a formula, whose view is a file): ``sql_function`` over each sample of
        prediction_input and target core P-state, with the columns every pred_<name> view
        has (50_prediction.sql unions them)."""
        if self.formula is None:
            return None
        if self.sql_function is None:
            raise ValueError(f"predictor {self.name} has a formula but no sql_function")
        for name in (self.sql_function, *self.inputs):
            if not _IDENTIFIER.match(name):
                raise ValueError(f"predictor {self.name}: {name!r} is not a plain SQL name")
        args = ", ".join((*self.inputs, "core_mhz", "target_core_mhz"))
        return f"""CREATE OR REPLACE VIEW {self.view} AS
SELECT '{self.name}' AS predictor, granularity, run_id, kernel_id, gpu_id, sample_idx,
       core_mhz AS base_core_mhz, mem_mhz AS base_mem_mhz, n_sm AS base_n_sm,
       ctas_per_sm AS base_ctas_per_sm, interval_instructions,
       target_core_mhz, mem_mhz AS target_mem_mhz, n_sm AS target_n_sm,
       {self.sql_function}({args}) AS predicted_ns
FROM prediction_input;
"""

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
