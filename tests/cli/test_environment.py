"""The command line's environment, refused in one line before any command runs (issue 41
item 7): before, each was a traceback."""

from __future__ import annotations

import os
import subprocess
import sys


def gpudb(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "gpudb.cli", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, **(env or {})}, timeout=120)


def test_numba_threads_below_one(tmp_path):
    done = gpudb("--db", str(tmp_path / "x.duckdb"), "info", env={"NUMBA_NUM_THREADS": "0"})
    assert (done.returncode, done.stdout, done.stderr) == (
        1, "", "Error: NUMBA_NUM_THREADS='0' is not a number of threads >= 1, which numba needs "
               "to load: unset it or give one\n")


def test_a_deleted_working_directory(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    script = ("import os, runpy, sys\n"
              f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
              "sys.argv = ['gpudb', '--db', 'lab.duckdb', 'info']\n"
              "runpy.run_module('gpudb.cli', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (
        1, "", "Error: the working directory no longer exists (deleted while this shell was in "
               "it): cd to a folder that exists\n")
