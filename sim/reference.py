"""Pure-Python execution of the simulator's jitted kernels, for tiny cases.

Every ``@njit`` function of :mod:`sim._kernels` is rebuilt from its Python source
(``py_func``) in a namespace where its callees are the Python versions too, so the whole model
runs without numba. Tests compare it with the jitted model bit for bit (a check on what numba
compiles: integer widths, float rounding, wrap-around of the random streams), and
``gpudb bench sim`` reports the jitted model's speed-up over it.
"""

from __future__ import annotations

import types
from functools import cache

import numpy as np
from numba.core.registry import CPUDispatcher

from sim import _kernels


class _Quiet:
    """Call wrapper: uint64 arithmetic of the random streams wraps silently, as in numba."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, *args):
        with np.errstate(over="ignore"):
            return self._fn(*args)


@cache
def kernels() -> types.SimpleNamespace:
    """The public kernels of sim._kernels (initial_fill, advance, switch_setting) in Python."""
    namespace = dict(vars(_kernels))
    plain = {}
    for name, obj in vars(_kernels).items():
        if isinstance(obj, CPUDispatcher):
            fn = obj.py_func
            plain[name] = types.FunctionType(fn.__code__, namespace, name, fn.__defaults__,
                                             fn.__closure__)
    namespace.update(plain)
    return types.SimpleNamespace(
        **{k: getattr(_kernels, k) for k in dir(_kernels) if k.isupper()},
        initial_fill=_Quiet(plain["initial_fill"]), advance=_Quiet(plain["advance"]),
        switch_setting=_Quiet(plain["switch_setting"]))
