"""The ``sample`` view's per-interval columns for one interval in Python, from the view's own
SQL (schema/views/20_sample.sql): the one definition of the predictors' inputs, which the
closed loop's controller needs between two intervals, where a query per interval would cost
milliseconds.

DuckDB parses the view (``json_serialize_sql``); the expressions of its ``counters``,
``per_interval`` and ``runs`` CTEs and of its interval branch are turned once into Python
closures that apply the same operations in the same order, so a value is the view's to the
bit. Only what the view uses is understood (column references, numeric constants, + - * /,
greatest, nullif, CAST AS DOUBLE, json_extract of a '$.a.b' path): anything else is an error
when the view is first read, never a silent difference.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import duckdb

from gpudb.store.resources import resource_dir

_HEADER = "CREATE OR REPLACE VIEW sample AS"

Env = Mapping[str, Any]
Expr = Callable[[Env], Any]


def _null_safe(op):
    def apply(a, b):
        if a is None or b is None:
            return None
        return op(a, b)
    return apply


def _divide(a, b):
    # DuckDB: x / 0 is NULL; / is true division, integers included
    if a is None or b is None or b == 0:
        return None
    return a / b


_BINARY = {"+": _null_safe(operator.add), "-": _null_safe(operator.sub),
           "*": _null_safe(operator.mul), "/": _divide}


def _greatest(*values):
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _nullif(a, b):
    return None if a == b else a


def _json_path(document, path):
    if document is None:
        return None
    value = json.loads(document) if isinstance(document, str) else document
    if not path.startswith("$."):
        raise ValueError(f"json path {path!r} is not a $.a.b path")
    for key in path[2:].split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _compile(node: dict) -> Expr:
    """A closure computing one parsed SQL expression over an environment of column values."""
    kind = node["class"]
    if kind == "COLUMN_REF":
        names = node["column_names"]
        if len(names) == 2:     # table.column: the table's own columns only
            table, name = names
            return lambda env: env[table][name]
        [name] = names
        return lambda env: env[name]
    if kind == "CONSTANT":
        literal = node["literal"]
        if literal.get("kind") in ("NUMERIC", "INTEGER", "DECIMAL", "DOUBLE"):
            value = float(literal["text"])
            return lambda env: value
        if literal.get("kind") == "STRING":
            text = literal["text"]
            return lambda env: text
        raise ValueError(f"sample view: constant {literal} not understood")
    if kind == "CAST":
        target = node["type_expr"]["type_name"]
        if target != "DOUBLE" or node["try_cast"]:
            raise ValueError(f"sample view: cast to {target} not understood")
        child = _compile(node["child"])

        def cast(env):
            value = child(env)
            return None if value is None else float(value)
        return cast
    if kind == "FUNCTION":
        name = node["function_name"]
        args = [_compile(a["expression"]) for a in node["arguments"]]
        if name in _BINARY and len(args) == 2:
            op, (left, right) = _BINARY[name], args
            return lambda env: op(left(env), right(env))
        if name == "-" and len(args) == 1:
            return lambda env: None if (v := args[0](env)) is None else -v
        if name == "greatest":
            return lambda env: _greatest(*(a(env) for a in args))
        if name == "nullif":
            return lambda env: _nullif(args[0](env), args[1](env))
        if name == "json_extract" and len(args) == 2:
            return lambda env: _json_path(args[0](env), args[1](env))
        raise ValueError(f"sample view: function {name!r} not understood")
    raise ValueError(f"sample view: expression {kind} not understood")


def _columns(select_list: list[dict]) -> list[tuple[str, Expr]]:
    """(name, closure) per selected expression; ``*`` is left to the caller."""
    out = []
    for node in select_list:
        if node["class"] == "STAR":
            continue
        name = node["alias"] or (node["column_names"][-1] if node["class"] == "COLUMN_REF"
                                 else None)
        if name is None:
            raise ValueError("sample view: a computed column without a name")
        out.append((name, _compile(node)))
    return out


@cache
def _view() -> dict[str, list[tuple[str, Expr]]]:
    sql = resource_dir("schema").joinpath("views", "20_sample.sql").read_text()
    body = sql[sql.index(_HEADER) + len(_HEADER):].rstrip().rstrip(";")
    con = duckdb.connect()
    try:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [body]).fetchone()[0])
    finally:
        con.close()
    if tree.get("error"):
        raise ValueError(f"sample view: {tree.get('error_message')}")
    node = tree["statements"][0]["node"]
    ctes = {c["key"]: c["value"]["query_node"] for c in node["cte_map"]["map"]}
    interval_branch = node["children"][0] if node["type"] == "SET_OPERATION_NODE" else node
    return {"counters": _columns(ctes["counters"]["select_list"]),
            "per_interval": _columns(ctes["per_interval"]["select_list"]),
            "runs": _columns(ctes["runs"]["select_list"]),
            "interval": _columns(interval_branch["select_list"])}


def run_columns(gpu_config: dict, nominal_mem_mhz: float) -> dict[str, Any]:
    """The columns the sample view adds to a run from its GPU (miss_latency_ns): for a GPU
    with configuration ``gpu_config`` (gpu.config) and nominal memory clock (MHz)."""
    gpu = {"g": {"config": gpu_config, "nominal_mem_mhz": nominal_mem_mhz}}
    return {name: expr(gpu) for name, expr in _view()["runs"]}


def sample_columns(interval: Mapping[str, Any], run: Mapping[str, Any]) -> dict[str, Any]:
    """The sample view's columns of one interval (granularity 'interval') that come from its
    counters and its GPU: ``interval`` a row of table interval (a dict), ``run`` what
    :func:`run_columns` gives for its GPU. Columns of the run itself (kernel_id, seed, ...)
    are not the interval's to know: None."""
    view = _view()
    source = {"i": interval}
    counters = {name: expr(source) for name, expr in view["counters"]}
    per_interval = {name: expr(counters) for name, expr in view["per_interval"]}
    env = {"i": per_interval, "r": run}
    out = {}
    for name, expr in view["interval"]:
        try:
            out[name] = expr(env)
        except KeyError:
            out[name] = None
    return out
