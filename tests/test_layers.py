"""The package's layer contracts, read from the source with ``ast`` (nothing is imported):
every ``import`` in gpudb/ and sim/, at module level or inside a function, checked against
the rules below. A failure names the file, the line, the import and the rule it breaks.

The layers, lowest first (a module may import its own folder and any lower layer):

  sim          the simulator; never imports gpudb
  predictors   formulas and their SQL functions; open no connection
  store        the file: connect, trust, migrations, the runs writer, queries, merge/export
  sources      CSV/Parquet + mappings, GPGPU-Sim logs, NVML       (write through store)
  simulate     the one runner (simulate.runner: skip stored, simulate, store), sweeps of
               sim, local or on Dask                                (write through store)
  train        Wu's model, Wang & Chu's fit and calibration
  control      DVFS controllers, closed loops and their replay; the controller kinds
               (control.kinds) and their runs (control.runner) plan for simulate.runner
  analysis     read-only evaluations; never simulate, never write runs
  present      tables, figures, the report; never simulate, never write runs
  workflows    orchestrations that simulate, then analyse and present
  bench        benchmarks of gpudb itself
  api          gpudb.open() and Database (gpudb/api/), and the package's facade
  cli          the command line; the only importer of click, imported by nothing

The package root counts as the API (its facade, below the CLI), and also wires the layers that contribute
SQL functions to the store's hook (gpudb.store.udfs.provide): it alone may import those
modules (WIRING), the store never does.

Imports under ``if TYPE_CHECKING:`` are annotations only (never run) and are left out; so
is ``from gpudb import __version__``, which the package's ``__init__`` sets before it
imports anything.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from conftest import REPO

# version (gpudb/version.py, __version__) is below every layer: each may read it
RANK = {"version": 0, "predictors": 1, "store": 2, "sources": 3, "simulate": 3, "train": 4,
        "control": 4, "analysis": 5, "present": 6, "workflows": 7, "bench": 7, "api": 8, "cli": 9}
# what the package's facade (gpudb/__init__.py: open, Database, connect, engine, GpudbError,
# tables) is: it exports the API, so a lower layer imports gpudb.store.db, not ``gpudb``
FACADE = "api"
# the modules contributing SQL functions, which the package root imports to wire them
WIRING = ("gpudb.predictors", "gpudb.control.guard")
NEVER_SIMULATE = ("analysis", "present")
SIMULATING = ("gpudb.simulate", "gpudb.store.runs", "sim.model", "sim.sweep")


@dataclass(frozen=True)
class Import:
    source: str   # the importing module, e.g. gpudb.store.db
    path: str     # its file, relative to the repository
    line: int
    target: str   # the imported module, e.g. gpudb.store.trust

    def __str__(self) -> str:
        return f"{self.path}:{self.line} ({self.source}) imports {self.target}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for top in ("gpudb", "sim")
            for p in sorted((REPO / top).rglob("*.py"))}


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


@cache
def _imports() -> tuple[Import, ...]:
    modules = _modules()
    found = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        skip = _type_checking_lines(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        rel = str(path.relative_to(REPO))
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                if base == "gpudb" and [a.name for a in node.names] == ["__version__"]:
                    continue
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            else:
                continue
            found += [Import(name, rel, node.lineno, t) for t in dict.fromkeys(targets)]
    return tuple(found)


def _layer(module: str) -> str | None:
    """The layer of a gpudb module (the facade counts as the API), None outside gpudb."""
    parts = module.split(".")
    if parts[0] != "gpudb":
        return None
    if len(parts) == 1:
        return FACADE
    return parts[1]


def _ours(target: str) -> bool:
    return target.split(".")[0] in ("gpudb", "sim")


def _is(target: str, prefix: str) -> bool:
    return target == prefix or target.startswith(prefix + ".")


def _violations(imports: tuple[Import, ...] | None = None) -> list[str]:
    """What breaks the contracts among ``imports`` (default: every import in gpudb/ and sim/)."""
    modules = _modules()
    broken = []
    for imp in _imports() if imports is None else imports:
        src, dst = _layer(imp.source), _layer(imp.target)
        if imp.source.startswith("sim") and _is(imp.target, "gpudb"):
            broken.append(f"{imp}: sim never imports gpudb")
        if _is(imp.target, "click") and src != "cli":
            broken.append(f"{imp}: only the CLI imports click")
        if src == "workflows" and _is(imp.target, "click"):
            broken.append(f"{imp}: workflows report progress through callbacks, not click")
        if _is(imp.target, "gpudb.cli") and src != "cli":
            broken.append(f"{imp}: nothing imports the CLI")
        if src == "store" and _is(imp.target, "sim"):
            broken.append(f"{imp}: the store imports no simulator")
        if src in NEVER_SIMULATE and any(_is(imp.target, s) for s in SIMULATING):
            broken.append(f"{imp}: {src} never simulates or writes runs")
        if src == "predictors" and _ours(imp.target) and dst != "predictors":
            broken.append(f"{imp}: predictors import only predictors (they open no connection)")
        if imp.source == "gpudb" and imp.target in WIRING:
            continue
        if src and dst and src != dst and RANK[dst] >= RANK[src]:
            broken.append(f"{imp}: {src} (layer {RANK[src]}) imports {dst} (layer {RANK[dst]}),"
                          " not a lower layer")
    for name, path in modules.items() if imports is None else ():
        if _layer(name) != "predictors":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and "connect" in ast.unparse(node.func).split("."):
                broken.append(f"{path.relative_to(REPO)}:{node.lineno}: predictors open no "
                              f"connection ({ast.unparse(node.func)})")
    return broken


def _cycle() -> list[str]:
    """One import circle among gpudb's and sim's modules, as a list of modules, or []."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for imp in _imports():
        if imp.target in modules and imp.target != imp.source:
            graph[imp.source].add(imp.target)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return []


def test_every_import_keeps_to_its_layer():
    broken = _violations()
    assert not broken, "layer contract broken:\n  " + "\n  ".join(broken)


def test_no_import_circle():
    circle = _cycle()
    assert not circle, "import circle: " + " -> ".join(circle)


def test_the_checks_see_what_they_check():
    """The parser finds the imports it must judge: the facade's store import, a lazy
    import inside a function, and none of the TYPE_CHECKING-only ones."""
    found = {(i.source, i.target) for i in _imports()}
    assert ("gpudb", "gpudb.store.db") in found
    assert ("gpudb", "gpudb.api") in found
    assert ("gpudb", "gpudb.control.guard") in found                    # the wiring
    assert ("gpudb.cli.common", "click") in found
    assert ("gpudb.train.calibrate", "gpudb.simulate.sweep") in found   # inside calibrate()
    assert ("gpudb.store.runs", "sim.model") not in found               # TYPE_CHECKING only
    assert {"gpudb.store", "gpudb.predictors", "gpudb.analysis", "gpudb.present"} <= set(_modules())


def test_the_runner_and_the_controller_kinds_keep_to_their_layers():
    """The one runner is in simulate (3), below every planner of runs; a controller kind and
    its runs' planner are in control (4): the planners import the runner, the runner imports
    no controller, and an import from them into a higher layer breaks the contract."""
    found = {(i.source, i.target) for i in _imports()}
    assert ("gpudb.control.runner", "gpudb.simulate.runner") in found
    assert ("gpudb.control.schedule_run", "gpudb.simulate.runner") in found
    assert ("gpudb.simulate.sweep", "gpudb.simulate.runner") in found
    assert ("gpudb.control.kinds.equalizer", "gpudb.control.kinds") in found
    kinds = sorted(m for m in _modules() if _is(m, "gpudb.control.kinds"))
    assert {"gpudb.control.kinds", "gpudb.control.kinds.predictor",
            "gpudb.control.kinds.equalizer"} <= set(kinds)
    assert {_layer(m) for m in [*kinds, "gpudb.control.runner"]} == {"control"}
    assert _layer("gpudb.simulate.runner") == "simulate"
    # each upward import named as broken, and the downward ones not
    upward = [("gpudb.simulate.runner", "gpudb.control.kinds"),
              ("gpudb.simulate.runner", "gpudb.control.kinds.predictor"),
              ("gpudb.simulate.runner", "gpudb.train.calibrate"),
              ("gpudb.control.runner", "gpudb.analysis.evaluate"),
              ("gpudb.control.kinds", "gpudb.workflows.evaluate"),
              ("gpudb.control.kinds.equalizer", "gpudb.present.demo"),
              ("gpudb.control.kinds.predictor", "gpudb.cli.control")]
    downward = [("gpudb.control.runner", "gpudb.simulate.runner"),
                ("gpudb.control.kinds.predictor", "gpudb.predictors"),
                ("gpudb.simulate.runner", "gpudb.store.runs")]
    for source, target in upward + downward:
        path = source.replace(".", "/") + ".py"
        broken = _violations((Import(source, path, 1, target),))
        assert bool(broken) is ((source, target) in upward), (source, target, broken)
    assert "simulate (layer 3) imports control (layer 4)" in _violations(
        (Import("gpudb.simulate.runner", "gpudb/simulate/runner.py", 1,
                "gpudb.control.kinds"),))[0]


def private_imports(root: Path) -> list[str]:
    """'file: module._name' for each _-prefixed name one gpudb module imports from another."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpudb"):
                found += [f"{path.relative_to(root.parent)}: {node.module}.{a.name}"
                          for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_module_imports_another_modules_private_names(tmp_path):
    """A name another module needs is part of an interface and is named as one (issue 39
    counted 47 such imports; a private name stays private to its module)."""
    assert private_imports(REPO / "gpudb") == []
    # the check sees one when there is one
    (tmp_path / "gpudb").mkdir()
    (tmp_path / "gpudb" / "a.py").write_text("from gpudb.b import _helper, public\n")
    assert private_imports(tmp_path / "gpudb") == ["gpudb/a.py: gpudb.b._helper"]
