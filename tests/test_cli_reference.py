"""docs/cli.md is what the commands' --help says today: regenerated and compared, so the
reference cannot drift from the CLI (the hand-kept table it replaces lacked options)."""

from __future__ import annotations

import difflib
import inspect

import click
from conftest import REPO
from tools.cli_reference import REGENERATE, WIDTH, render

from gpudb.cli import cli


def test_docs_cli_md_is_the_generated_reference():
    committed = (REPO / "docs" / "cli.md").read_text()
    generated = render()
    if committed != generated:
        diff = "".join(list(difflib.unified_diff(
            committed.splitlines(True), generated.splitlines(True), "docs/cli.md (committed)",
            "docs/cli.md (from --help)"))[:40])
        raise AssertionError(f"docs/cli.md differs from the commands' --help; run `{REGENERATE}`"
                             f"\n{diff}")


def test_the_reference_has_every_command_and_option_at_a_fixed_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")     # the terminal's width must not change the file
    reference = render()
    assert reference == render() and reference.startswith("# CLI reference\n")

    def walk(command: click.Command, path: str):
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, f"{path} {name}")

    for path, command in walk(cli, "gpudb"):
        section = reference.split(f"\n## {path}\n", 1)[1].split("\n## ", 1)[0]
        assert section.startswith("\n```text\nUsage: " + path), path
        for option in command.params:
            for flag in option.opts:
                if flag.startswith("-"):
                    assert flag in section, f"{path}: {flag}"
    # the drift the hand-kept table had: evaluate accuracy's later options
    accuracy = reference.split("\n## gpudb evaluate accuracy\n", 1)[1].split("\n## ", 1)[0]
    for flag in ("--base-mem-mhz", "--folds", "--format"):
        assert flag in accuracy
    # click wraps at WIDTH, and keeps an example's lines only after a \b line: without it
    # click joins them into one paragraph, as sweep's, sql's and eight more examples were
    for path, command in walk(cli, "gpudb"):
        section = reference.split(f"\n## {path}\n", 1)[1].split("\n## ", 1)[0]
        lines = {line.strip() for line in section.splitlines()}
        assert max(len(line) for line in section.splitlines()) <= WIDTH, path
        for paragraph in inspect.cleandoc(command.help or "").split("\n\n"):
            if paragraph.lstrip("\b\n").startswith("    "):       # an example
                for line in paragraph.lstrip("\b\n").splitlines():
                    assert line.strip() in lines, f"{path}: example line rewrapped: {line}"
