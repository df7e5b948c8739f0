"""The docs describe every CLI command, their links resolve inside the repository, and the
README's two set-up commands are the ones CI runs; its Quickstart runs as printed."""

from __future__ import annotations

import importlib
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


def test_every_command_is_described_in_docs_commands_md():
    """docs/cli.md lists every option (generated); docs/commands.md says what each command is
    for, one row each, so a new command needs its row."""
    commands_md = (REPO / "docs" / "commands.md").read_text()
    described = re.findall(r"^\| `(gpudb [a-z -]+)` \|", commands_md, re.MULTILINE)
    expected = []
    for name, command in cli.commands.items():
        subs = getattr(command, "commands", {})
        expected += [f"gpudb {name} {sub}" for sub in subs] if subs else [f"gpudb {name}"]
    assert sorted(described) == sorted(expected)


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_link_in_the_readme_and_docs_resolves_inside_the_repository():
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    checked = 0
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+://", target):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            assert file.is_relative_to(REPO) and file.exists(), f"{page.name}: {target}"
            if anchor:
                headings = re.findall(r"^#+ (.+)$", file.read_text(), re.MULTILINE)
                assert anchor in {_slug(h) for h in headings}, f"{page.name}: {target}"
            checked += 1
    assert checked > 20


def test_every_module_and_file_the_docs_name_exists():
    """A `gpudb.x.y` or `sim.x` the README or docs/ name imports and has that attribute, and a
    `gpudb/...`, `schema/...` (etc.) path exists, so a moved module or file fails here."""
    pages = [REPO / "README.md", *(p for p in sorted((REPO / "docs").glob("*.md"))
                                   if p.name != "cli.md")]
    named = 0
    for page in pages:
        text = page.read_text()
        for dotted in re.findall(r"`((?:gpudb|sim)(?:\.[A-Za-z_]\w*)+)(?:\(\))?`", text):
            if dotted.endswith(".duckdb"):
                continue
            parts = dotted.split(".")
            for i in range(len(parts), 0, -1):
                try:
                    obj = importlib.import_module(".".join(parts[:i]))
                    break
                except ImportError:
                    continue
            for attr in parts[i:]:
                assert hasattr(obj, attr), f"{page.name}: `{dotted}` does not exist"
                obj = getattr(obj, attr)
            named += 1
        for path in re.findall(r"`((?:gpudb|sim|schema|queries|fixtures|tests|docs)/[^`\s*<]*)`",
                               text):
            assert (REPO / path).exists(), f"{page.name}: `{path}` does not exist"
            named += 1
    assert named > 50


def test_the_codes_pointers_name_sections_that_exist():
    """The code, SQL and fixtures point into the docs by section: `docs/DESIGN.md section N`
    and README sections by title ("Where gpudb differs from the papers", which the demo prints,
    "Files from elsewhere"); each must be a heading there."""
    design_md = (REPO / "docs" / "DESIGN.md").read_text()
    design = set(re.findall(r"^## (\d+)\. ", design_md, re.MULTILINE))
    readme = set(re.findall(r"^#+ (.+)$", (REPO / "README.md").read_text(), re.MULTILINE))
    files = [REPO / "pyproject.toml",
             *(p for folder in ("gpudb", "sim", "schema", "queries", "fixtures")
               for p in (REPO / folder).rglob("*") if p.suffix in {".py", ".sql", ".toml"})]
    sections = titles = 0
    for file in files:
        # a pointer may run over a line break, a comment marker or a string's quotes
        text = re.sub(r'"?\s*\n\s*(?:#|--)?\s*"?', " ", file.read_text()).replace('\\"', '"')
        for number in re.findall(r"DESIGN\.md,? section (\d+)", text):
            assert number in design, f"{file.relative_to(REPO)}: DESIGN.md section {number}"
            sections += 1
        for title in re.findall(r'README(?:\.md)?,? "([^"]+)"', text) + re.findall(
                r'"([^"]+)" in README', text):
            title = " ".join(title.split())
            assert title in readme, f'{file.relative_to(REPO)}: README "{title}"'
            titles += 1
    assert sections >= 15 and titles >= 6


def test_nothing_points_outside_the_repository():
    """No file of the project names a folder beside the checkout or a DESIGN.md other than
    docs/DESIGN.md (the code's section pointers name docs/DESIGN.md)."""
    files = [REPO / "README.md", REPO / "pyproject.toml",
             *(p for folder in ("gpudb", "sim", "schema", "queries", "docs", "fixtures")
               for p in (REPO / folder).rglob("*") if p.suffix in {".py", ".sql", ".md", ".toml"})]
    for file in files:
        text = file.read_text()
        assert "../shared" not in text and "shared/papers" not in text, file
        for m in re.finditer(r"[\w./]*DESIGN\.md", text):
            name = m.group(0)
            ok = name == "docs/DESIGN.md" or (file.parent.name == "docs" and name == "DESIGN.md")
            assert ok, f"{file.relative_to(REPO)}: {name}"


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    marked = re.findall(r"<!-- (main|test)-command -->\n```(?:bash|sh)?\n(.+?)\n```", readme)
    assert {kind for kind, _ in marked} == {"main", "test"}
    assert "README.md" in (REPO / ".ci" / "run").read_text()  # .ci/run extracts it from here


def test_the_quickstart_runs_as_printed(tmp_path):
    """README's Quickstart, every line as printed (its `source .venv/bin/activate` aside: the
    test's own environment is on PATH), in an empty folder: no file from elsewhere needed."""
    readme = (REPO / "README.md").read_text()
    start = readme.index("```bash\n", readme.index("## Quickstart")) + len("```bash\n")
    script = readme[start:readme.index("\n```", start)]
    assert script.startswith("source .venv/bin/activate\n")
    # COLUMNS left out: a test worker inherits one (pytest-xdist), and the Quickstart's
    # output here goes to a pipe, printed whole
    env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"},
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
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
    assert "mine/saxpy" in done.stdout and "exported 21 tables" in done.stdout
