"""sim: a numba, cycle-level abstract model of a Fermi-like GPGPU (DESIGN.md section 4).

Public entry points: :func:`sim.model.simulate` and :class:`sim.model.Simulation` (closed loop),
:func:`sim.sweep.sweep` (into a gpudb database), :mod:`sim.bench`, and the loaders in
:mod:`sim.config`.
"""

# Part of every run_id: bump it whenever a change alters simulated results, so a sweep into an
# existing database re-runs instead of skipping runs made by the older model.
SIM_VERSION = "3"
