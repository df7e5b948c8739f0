"""gpudb's version: one module of its own, so that every layer (the store writes it into each file's
gpudb_meta) reads it without importing the package root, which sits above them (it wires the layers
and exports the API)."""

__version__ = "0.3.0"
