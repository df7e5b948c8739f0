"""The README documents every CLI command, and its two set-up commands are the ones CI runs."""

from __future__ import annotations

import re

from conftest import REPO

from gpudb.cli import cli


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
