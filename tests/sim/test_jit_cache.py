"""The simulator's compiled code lives in a per-user folder keyed by the source's content, so a
fresh install of the same sim (a new virtual environment, as .ci/run makes) loads it instead of
compiling for about a minute (sim/_jit_cache.py)."""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from sim import _jit_cache
from sim import _kernels as K


def test_sim_functions_cache_in_the_user_folder_under_their_source_hash():
    source = Path(K.__file__)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    locator = K.advance._cache._impl._locator
    assert type(locator).__name__ == "SimCacheLocator"
    assert locator.get_cache_path() == str(_jit_cache.cache_root() / f"_kernels-{digest[:16]}")
    # the stamp numba compares before loading is the content, not the file's mtime
    assert locator.get_source_stamp() == digest


def test_functions_outside_sim_keep_numbas_own_locator(tmp_path):
    module = tmp_path / "elsewhere.py"
    module.write_text("from numba import njit\n@njit(cache=True)\ndef f(x):\n    return x + 1\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import elsewhere
        assert elsewhere.f(1) == 2
        locator = elsewhere.f._cache._impl._locator
        assert type(locator).__name__ != "SimCacheLocator"
        assert locator.get_cache_path() == str(tmp_path / "__pycache__")
    finally:
        sys.path.remove(str(tmp_path))


def test_numba_cache_dir_still_wins(tmp_path):
    """NUMBA_CACHE_DIR, where a user sets it, is where the code goes (numba's own rule)."""
    out = subprocess.run(
        [sys.executable, "-c",
         "from sim import _kernels as K; print(K.advance._cache._impl._locator.get_cache_path())"],
        env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}, capture_output=True, text=True,
        check=True)
    assert out.stdout.strip().startswith(str(tmp_path))


def test_compiled_says_whether_a_run_will_compile_first(tmp_path, monkeypatch):
    """The sweep announces the first compile (issue 30 item 2) when compiled() is False."""
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))            # an empty cache: cold
    assert _jit_cache.compiled() is False
    digest = hashlib.sha256(Path(K.__file__).read_bytes()).hexdigest()
    folder = tmp_path / "gpudb-numba" / f"_kernels-{digest[:16]}"
    folder.mkdir(parents=True)
    assert _jit_cache.compiled() is False                           # a folder, no index yet
    (folder / "_kernels.advance-1.py311.nbi").write_bytes(b"")
    assert _jit_cache.compiled() is True
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert _jit_cache.compiled() is None                            # numba's own folder decides
