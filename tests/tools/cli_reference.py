"""docs/cli.md, the CLI reference, generated from the commands' own --help.

    python tests/tools/cli_reference.py > docs/cli.md

Every command and group, in the order `gpudb --help` lists them, each with its help text as
click prints it at a fixed width of 100 columns (not the terminal's), so the file is the same
on every machine. tests/test_cli_reference.py regenerates it and fails when the committed file
differs. It lives under tests/ because only the CLI may import click's command objects
(docs/DESIGN.md, layers) and nothing in the package imports the CLI.
"""

from __future__ import annotations

import sys

import click

from gpudb.cli import cli

WIDTH = 100
REGENERATE = "python tests/tools/cli_reference.py > docs/cli.md"


def _commands(ctx: click.Context):
    """(context, command) for ctx's command and, depth first, every visible subcommand."""
    yield ctx
    command = ctx.command
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            yield from _commands(click.Context(sub, info_name=name, parent=ctx,
                                               terminal_width=WIDTH))


def render() -> str:
    """The whole of docs/cli.md."""
    # the group's own context settings (-h beside --help), as `gpudb ... --help` applies them;
    # without them the help option depends on whether a test ran the CLI first (click caches
    # each command's help option)
    root = click.Context(cli, info_name="gpudb", terminal_width=WIDTH, **cli.context_settings)
    contexts = list(_commands(root))
    lines = [
        "# CLI reference",
        "",
        "Generated from every command's `--help` (click, 100 columns wide) by",
        "`tests/tools/cli_reference.py`: do not edit it by hand. To regenerate:",
        "",
        f"    {REGENERATE}",
        "",
        "`tests/test_cli_reference.py` fails while this file differs from the commands. Global",
        "options (`--db`, `--read-only`, `--wide`, `--timeout-s`) go before the command:",
        "`gpudb --db lab.duckdb info`.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for ctx in contexts:
        path = ctx.command_path
        summary = ctx.command.get_short_help_str(limit=WIDTH).replace("|", "\\|")
        anchor = path.replace(" ", "-")
        lines.append(f"| [`{path}`](#{anchor}) | {summary} |")
    for ctx in contexts:
        lines += ["", f"## {ctx.command_path}", "", "```text",
                  ctx.command.get_help(ctx).rstrip("\n"), "```"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
