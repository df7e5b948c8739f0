"""The decision step every predictor-driven DVFS controller shares, with or without its guard:
the control layer's name for gpudb.predictors.dvfs_step, where it is implemented (see its
docstring: the papers' controller, gpudb's guard, and why it sits in the lowest layer)."""

from gpudb.predictors.dvfs_step import (
    GUARDED,
    GUARDS,
    PAPER,
    Guard,
    GuardState,
    decide,
    guard_from,
    guard_params,
    replay_steps,
)

__all__ = ["GUARDED", "GUARDS", "PAPER", "Guard", "GuardState", "decide", "guard_from",
           "guard_params", "replay_steps"]
