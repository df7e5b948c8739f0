"""sim: a numba, cycle-level abstract model of a Fermi-like GPGPU (docs/DESIGN.md section 4).

A pure library that never imports gpudb: configs in, Arrow runs and intervals out. Public entry
points: the loaders in :mod:`sim.config`, :func:`sim.model.simulate` and
:class:`sim.model.Simulation` (closed loop), :func:`sim.sweep.plan` and
:func:`sim.sweep.simulate_tasks` (a sweep, in worker processes), and :mod:`sim.bench`. Storing
runs is gpudb's business (gpudb.simulate.runner, gpudb.store.runs).
"""

# Part of every run_id: bump it whenever a change alters simulated results, so a sweep into an
# existing database re-runs instead of skipping runs made by the older model.
SIM_VERSION = "5"
# The engines a run can be simulated by: the cycle engine (sim.model.Simulation, sim/_kernels.py)
# and the sampled engine over it (sim.sampled). A run's engine is part of its identity: a
# sampled run's id also covers SAMPLED_VERSION, a reference run's id is what it was before.
ENGINES = ("reference", "sampled")
# Bump it whenever a change to sim/sampled.py alters sampled results.
SAMPLED_VERSION = "7"
