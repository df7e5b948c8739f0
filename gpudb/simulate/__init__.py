"""Sweeps: the simulator (sim) run over a suite and a GPU's settings, locally or on Dask, each
run stored through gpudb.store.runs."""
