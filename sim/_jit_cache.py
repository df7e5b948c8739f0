"""Where numba keeps the simulator's compiled code: a per-user folder keyed by the source's
content, so a fresh install of the same sim finds the code an earlier install compiled.

numba's default (its in-tree locator) writes next to the source, in ``site-packages/sim/
__pycache__`` of the virtual environment. A fresh environment (``.ci/run`` makes one per run, a
user reinstalling does too) starts with an empty cache and compiles the simulator again, which
takes about a minute of CPU. This locator puts the cache in ``$XDG_CACHE_HOME/gpudb-numba`` (else
``~/.cache/gpudb-numba``), in a folder named after the module and a hash of its source, so two
installs of the same source share it and two versions never overwrite each other's entries
(numba also checks a content stamp of the source before it loads an entry). ``NUMBA_CACHE_DIR``,
where set, still wins: numba's own locator for it comes first. Where the folder cannot be
written, numba falls back to its in-tree cache.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_SIM_DIR = Path(__file__).resolve().parent


def cache_root() -> Path:
    """The per-user folder holding the simulator's compiled code."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpudb-numba"


def compiled(module: str = "_kernels") -> bool | None:
    """Whether sim's ``module`` has compiled code in the per-user cache (numba's index files),
    so that a run starts without compiling; None where numba's ``NUMBA_CACHE_DIR`` decides."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    digest = hashlib.sha256((_SIM_DIR / f"{module}.py").read_bytes()).hexdigest()
    folder = cache_root() / f"{module}-{digest[:16]}"
    return folder.is_dir() and any(folder.glob("*.nbi"))


def _install() -> None:
    try:
        from numba.core import caching
        mixin, base = caching._SourceFileBackedLocatorMixin, caching._CacheLocator
    except (ImportError, AttributeError):  # another numba layout: keep numba's default
        return

    class SimCacheLocator(mixin, base):
        """numba cache locator for sim's modules (only): cache_root()/<module>-<source hash>."""

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._digest = hashlib.sha256(Path(py_file).read_bytes()).hexdigest()
            self._cache_path = str(cache_root() / f"{Path(py_file).stem}-{self._digest[:16]}")

        def get_cache_path(self):
            return self._cache_path

        def get_source_stamp(self):
            # the content, not the file's mtime (which older numba stamps with): a reinstall
            # writes the same source with a new mtime
            return self._digest

        @classmethod
        def from_function(cls, py_func, py_file):
            if Path(py_file).resolve().parent != _SIM_DIR:
                return None
            return super().from_function(py_func, py_file)

    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if not isinstance(classes, list):  # another numba layout: keep numba's default
        return
    if not any(c.__name__ == "SimCacheLocator" for c in classes):
        # after NUMBA_CACHE_DIR's locator, before the in-tree one
        classes.insert(1, SimCacheLocator)


_install()
