"""The energy model a DVFS controller decides with: the control layer's name for
gpudb.predictors.dvfs_energy, where it is implemented (paper 000 section 4, paper 004 section
4.2.3)."""

from gpudb.predictors.dvfs_energy import (
    OBJECTIVES,
    TIME_EXPONENT,
    objective_scores,
    pick,
    predict_energy,
    score,
)

__all__ = ["OBJECTIVES", "TIME_EXPONENT", "objective_scores", "pick", "predict_energy", "score"]
