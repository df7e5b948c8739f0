"""The energy model a DVFS controller decides with (paper 000 section 4, paper 004 section 4.2.3).

From an interval measured at core voltage Vc taking Tc, the energy at a candidate P-state with
voltage V and predicted time T is

    E = E_core_dynamic * (V/Vc)^2            dynamic energy per operation ~ V^2
      + E_core_static * (V/Vc) * T/Tc        static power ~ V (paper 000 section 4, after [50])
      + E_dram_dynamic                       the same DRAM transactions (paper 004 step 4)
      + (E_dram_static + E_other) * T/Tc     background and board power over the new time

The papers differ on the last two terms: paper 004 (section 4.2.3) keeps DRAM dynamic energy
and scales DRAM static and other power by time, as above; paper 000 (section 4) keeps the
power of every non-SM component unchanged, so its DRAM dynamic energy would also scale with
time, and it writes chip dynamic energy as P_dynamic(f) x T(f_c). gpudb uses paper 004's form:
DRAM dynamic energy follows the transactions, which frequency scaling does not change, and
dynamic energy per operation depends on V^2, not on f. The same formula is in
queries/controller_replay.sql (trace replay); tests/control/test_control.py checks they agree.

The decision step that uses it is gpudb.control.guard.
"""

from __future__ import annotations

import numpy as np


def predict_energy(core_dynamic_j, core_static_j, dram_dynamic_j, dram_static_j, other_j,
                   time_ns, voltage_v, predicted_ns, target_voltage_v):
    """Predicted energy (J) of an interval at the target P-state; arguments broadcast."""
    v = np.asarray(target_voltage_v) / voltage_v
    stretch = np.asarray(predicted_ns) / time_ns
    return (core_dynamic_j * v * v + core_static_j * v * stretch + dram_dynamic_j
            + (dram_static_j + other_j) * stretch)


# The objectives a controller minimises: energy x time^exponent per interval or run
# (energy_perf: energy under a bound on time). controller_replay.sql spells the same exponents
# (its `weight`) and the savings queries the same products; tests/control/test_control.py checks the
# replay and this module choose alike. OBJECTIVES is the one list of their names, in the order
# the papers and gpudb's tables give them (the CLI's choices, evaluate control's default).
TIME_EXPONENT = {"edp": 1, "ed2p": 2, "energy": 0, "energy_perf": 0}
OBJECTIVES = tuple(TIME_EXPONENT)


def score(objective: str, time_ns, energy_j) -> np.ndarray:
    """energy x time^exponent of the objective (lower is better), without energy_perf's
    bound; units J x ns^exponent."""
    if objective not in TIME_EXPONENT:
        raise ValueError(f"unknown objective {objective!r} (known: {', '.join(OBJECTIVES)})")
    return np.asarray(energy_j) * np.asarray(time_ns, dtype=float) ** TIME_EXPONENT[objective]


def objective_scores(objective: str, time_ns: np.ndarray, energy_j: np.ndarray,
                     top_time_ns: float, max_loss: float) -> np.ndarray:
    """Score per candidate (lower is better); energy_perf makes settings predicted slower than
    (1 + max_loss) x the highest setting's time infinitely bad."""
    scores = score(objective, time_ns, energy_j)
    if objective == "energy_perf":
        return np.where(np.asarray(time_ns) > (1.0 + max_loss) * top_time_ns, np.inf, scores)
    return scores


def pick(settings_mhz: np.ndarray, scores: np.ndarray) -> float:
    """The setting with the least score; ties go to the highest frequency (as the replay's
    arg_min does), so equal predictions never cost performance."""
    order = np.lexsort((-settings_mhz, scores))
    return float(settings_mhz[order[0]])
