"""docs/python.md runs as printed: each ```python block, in order, in one namespace, in a
temporary folder holding the fixtures it reads, prints exactly the ```text block after it
(issue 39: the notebook example cannot drift from the API)."""

from __future__ import annotations

import contextlib
import io
import re
import shutil

import pytest
from conftest import REPO

DOC = REPO / "docs" / "python.md"
BLOCK = re.compile(r"```python\n(.*?)```\s*\n```text\n(.*?)```", re.S)
INPUTS = ("fixtures/measured/tiny.csv", "fixtures/mappings/tiny.toml")


def examples() -> list[tuple[str, str]]:
    """(code, printed) of each python block of the doc and the text block right after it."""
    return BLOCK.findall(DOC.read_text())


def run_blocks(blocks, folder, skip=lambda code: False) -> list[tuple[str, str, str]]:
    """Run each block in ``folder``; (code, printed as documented, printed now) per block
    run (``skip(code)``: left out)."""
    for name in INPUTS:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, folder / name)
    namespace: dict = {"__name__": "__doc__"}
    done = []
    with contextlib.chdir(folder):
        for code, printed in blocks:
            if skip(code):
                continue
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, str(DOC), "exec"), namespace)
            done.append((code, printed, out.getvalue()))
    return done


def test_the_doc_has_the_notebook_example():
    code = "".join(c for c, _ in examples())
    for step in ("gpudb.open(", ".ingest(", ".query(", ".df()", ".sql(", "evaluate_accuracy(",
                 ".plot("):
        assert step in code, step


def test_python_md_runs_as_printed(tmp_path):
    pytest.importorskip("pandas")
    pytest.importorskip("polars")
    pytest.importorskip("matplotlib")
    from gpudb.workflows import evaluate

    # the evaluate block needs gpudb.workflows.evaluate.accuracy (issue 39, branch evaluate)
    missing = not hasattr(evaluate, "accuracy")
    done = run_blocks(examples(), tmp_path,
                      skip=lambda code: missing and "evaluate_" in code)
    for code, printed, now in done:
        assert now == printed, f"docs/python.md block:\n{code}\nprinted:\n{now}"
    assert (tmp_path / "mape_by_kernel.png").stat().st_size > 0
    if missing:
        pytest.skip("the evaluate block was not run: gpudb.workflows.evaluate.accuracy is "
                    "not on this branch")
