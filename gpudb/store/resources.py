"""Where gpudb's SQL files and shipped ingest mappings live, installed or in a source checkout.

A wheel carries the top-level ``schema/``, ``queries/`` and ``fixtures/mappings`` folders as
``gpudb/_data/...`` (see pyproject.toml); an editable install or a plain checkout has them
beside the package. Both are found through :mod:`importlib.resources`. The simulator's GPU and
suite fixtures are sim's own (:func:`sim.config.fixture_dir`).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def resource_dir(name: str) -> Path:
    """Directory of a shipped resource: 'schema', 'queries' or 'fixtures/mappings'."""
    package = files("gpudb")
    bundled = package / "_data" / name
    if bundled.is_dir():
        return Path(str(bundled))
    checkout = Path(str(package)).parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"gpudb resource folder {name!r} not found (broken installation?)")
