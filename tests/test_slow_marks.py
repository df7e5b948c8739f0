"""conftest's lists of slow tests and fixtures name tests and fixtures that exist (read from
the source with ``ast``), so a rename cannot silently unmark a slow test; the hook marks what
the lists say; and no test file marks itself slow, so the lists are the one place."""

from __future__ import annotations

import ast

import pytest
from conftest import REPO, SLOW_FIXTURES, SLOW_TESTS, is_slow

TESTS = REPO / "tests"


def definitions() -> dict[str, tuple[set[str], set[str]]]:
    """{module: (test function names, fixture names)} of every file under tests/."""
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        tests, fixtures = set(), set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef):
                if node.name.startswith("test_"):
                    tests.add(node.name)
                decorators = [ast.unparse(d) for d in node.decorator_list]
                if any(d.startswith("pytest.fixture") for d in decorators):
                    fixtures.add(node.name)
        found[path.stem] = (tests, fixtures)
    return found


def test_no_test_file_marks_itself_slow():
    # a decorator or a module's pytestmark beside the lists would make two places to look
    marked = []
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text()
        if "slow" not in text:  # parsing every file costs a second
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Attribute) and ast.unparse(node) == "pytest.mark.slow":
                if path.name != "conftest.py":
                    marked.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert marked == []


def test_module_names_are_unique_across_the_test_folders():
    # pytest imports each test file by its basename (no __init__.py): two alike would clash
    stems = [p.stem for p in TESTS.rglob("test_*.py")]
    assert len(stems) == len(set(stems))


def test_every_listed_slow_test_and_fixture_exists():
    found = definitions()
    for entry in SLOW_TESTS:
        module, _, test = entry.partition("::")
        assert module in found and test in found[module][0], entry
    for entry in SLOW_FIXTURES:
        module, _, fixture = entry.rpartition(".")
        assert fixture in found[module or "conftest"][1], entry


@pytest.mark.parametrize("module, test, fixtures, slow", [
    ("test_x", "test_a", ["tmp_path", "query_db"], True),        # a conftest fixture
    ("test_cli_commands", "test_a", ["sim"], True),              # the module's own fixture
    ("test_other", "test_a", ["sim"], False),                    # same name elsewhere
    ("test_docs", "test_the_quickstart_runs_as_printed", [], True),
    ("test_docs", "test_other", ["tmp_path"], False),
])
def test_the_hook_marks_what_the_lists_name(module, test, fixtures, slow):
    assert is_slow(module, test, fixtures) is slow
