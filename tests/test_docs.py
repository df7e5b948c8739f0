"""The README documents every CLI command, and its two set-up commands are the ones CI runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

import gpudb
from gpudb.cli import cli
from gpudb.store.queries import get_query


def test_every_command_is_in_the_readme():
    readme = (REPO / "README.md").read_text()
    for name, command in cli.commands.items():
        assert f"gpudb {name}" in readme, f"README.md never shows `gpudb {name}`"
        for sub in getattr(command, "commands", {}):
            assert f"gpudb {name} {sub}" in readme, f"README.md never shows `gpudb {name} {sub}`"


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    marked = re.findall(r"<!-- (main|test)-command -->\n```(?:bash|sh)?\n(.+?)\n```", readme)
    assert {kind for kind, _ in marked} == {"main", "test"}
    assert "README.md" in (REPO / ".ci" / "run").read_text()  # .ci/run extracts it from here


@pytest.mark.slow
def test_the_quickstart_runs_as_printed(tmp_path):
    """README's Quickstart, every line as printed (its `source .venv/bin/activate` aside: the
    test's own environment is on PATH), in an empty folder: no file from elsewhere needed."""
    readme = (REPO / "README.md").read_text()
    start = readme.index("```bash\n", readme.index("## Quickstart")) + len("```bash\n")
    script = readme[start:readme.index("\n```", start)]
    assert script.startswith("source .venv/bin/activate\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-e", "-c", script.split("\n", 1)[1]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    con = gpudb.connect(tmp_path / "mine.duckdb", read_only=True)   # the merge's target
    try:
        runs = dict(con.execute("SELECT gpu_id, count(*) FROM run GROUP BY ALL").fetchall())
        sql, params = get_query("best_setting").bind({"gpu_id": "mygpu"})
        best = con.execute("SELECT energy_core_mhz, energy_saving_pct FROM ("
                           + sql.rstrip().rstrip(";") + ")", params).fetchall()
    finally:
        con.close()
    # the micro suite at 700 and 300 MHz, and the two made-up runs; at 500 MHz saxpy takes
    # 4 ms at 100 W (0.4 J) against 2 ms at 250 W (0.5 J): 20% less energy
    assert runs["mygpu"] == 2 and runs["gtx480"] % 2 == 0 and runs["gtx480"] >= 26
    assert best == [(500.0, pytest.approx(20.0))]
    assert "mine/saxpy" in done.stdout and "exported 20 tables" in done.stdout
