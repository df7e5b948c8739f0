"""The expression sandbox of ingest: a mapping's [inputs] and [columns] expressions evaluated
over a file's columns on a separate in-memory DuckDB connection with external access off and
its configuration locked (see :mod:`gpudb.sources.tabular.ingest`, "Model inputs").
"""

from __future__ import annotations

import os
import re
import threading
from collections import Counter
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpudb.sources.tabular.read import ROW, IngestError, bad_number
from gpudb.sources.tabular.mapping import Derived, Mapping
from gpudb.store.db import first_row

# Bounds of a mapping expression (issue 31): DuckDB's memory limit and interrupt do not reach
# inside one scalar function (repeat('x', 2000000000) took 29 s and 3.9 GB to interrupt,
# list_sum(range(1e8)) 59 s and 7 GB), so what an expression may call is bounded up front:
# functions whose result grows with the data they are given, not with a number in the
# expression; no query (a scalar subquery can scan range(1e12)); at most this many
# characters. The evaluation itself is interrupted after EXPR_TIME_BOUND_S.
EXPR_MAX_CHARS = 2_000


EXPR_TIME_BOUND_S = 60.0


EXPR_FUNCTIONS = frozenset({
    "abs", "sqrt", "cbrt", "ln", "log", "log2", "log10", "exp", "pow", "power", "round",
    "floor", "ceil", "ceiling", "trunc", "sign", "mod", "least", "greatest", "coalesce",
    "nullif", "ifnull", "if", "isnan", "isinf", "isfinite", "sin", "cos", "tan", "length",
    "strlen", "lower", "upper", "trim", "ltrim", "rtrim", "substr", "substring",
    "regexp_extract", "regexp_matches", "contains", "starts_with", "ends_with", "strpos",
    "instr", "split_part", "cast", "try_cast",
    # the shipped gtx1080ti mapping parses "(gx gy gz) (bx by bz)": a list no longer than
    # its text, its product, a match, and error() to stop on a malformed text
    "regexp_full_match", "regexp_extract_all", "list_product", "error",
    # aggregates and unnest: refused when evaluated, with the reason (one value per row)
    "sum", "avg", "mean", "count", "min", "max", "unnest"})


# Keywords followed by "(" that are no function call: casts and types with parameters.
_EXPR_TYPE_WORDS = frozenset({"cast", "try_cast", "decimal", "numeric", "varchar", "char"})


_EXPR_QUERY_WORDS = frozenset({"select", "from", "with", "values", "table", "pivot",
                               "unpivot", "summarize", "describe", "show"})


def expression_problem(sql: str) -> str | None:
    """Why the mapping expression ``sql`` may not be evaluated (see EXPR_FUNCTIONS), or None.
    Read from DuckDB's own tokens, so a comment or a string cannot hide a call."""
    if len(sql) > EXPR_MAX_CHARS:
        return f"expr is {len(sql):,} characters long; at most {EXPR_MAX_CHARS:,}"
    try:
        tokens = [(p, t) for p, t in duckdb.tokenize(sql)]
    except duckdb.Error as exc:
        return f"expr is not one SQL expression: {_first_line(exc)}"
    spans = [(p, tokens[i + 1][0] if i + 1 < len(tokens) else len(sql), t)
             for i, (p, t) in enumerate(tokens)]
    words = [(sql[a:b].strip(), t) for a, b, t in spans
             if t != duckdb.token_type.comment]
    for i, (text, kind) in enumerate(words):
        if kind not in (duckdb.token_type.keyword, duckdb.token_type.identifier):
            continue
        name = (text[1:-1].replace('""', '"') if text.startswith('"') else text).lower()
        if kind == duckdb.token_type.keyword and name in _EXPR_QUERY_WORDS:
            return f"expr holds a query ({text} ...): it must be an expression over the row"
        calls = i + 1 < len(words) and words[i + 1][0].startswith("(")
        if not calls or (kind == duckdb.token_type.keyword and name in _EXPR_TYPE_WORDS):
            continue
        if name not in EXPR_FUNCTIONS:
            return (f"expr calls {text}(), which a mapping expression may not (it may call "
                    f"{', '.join(sorted(EXPR_FUNCTIONS - {'unnest', 'count'}))})")
    return None


_NUMERIC_SQL = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE"}


_MISSING_COLUMN = re.compile(r'Referenced column "((?:[^"]|"")*)" not found')


class Expressions:
    """Evaluates :class:`gpudb.sources.tabular.mapping.Derived` values (a column or a DuckDB SQL
    expression) over one data file, on its own in-memory DuckDB connection with external access
    disabled and the configuration locked (module docstring). Use as a context manager.

    The file's columns form the table ``data`` under their own names (a column is DOUBLE when
    every non-empty cell is a finite number or it is numeric in Parquet, else as read);
    `evaluate` returns one float64 per row in file order, converted by the unit factor, NULL
    where the value is NULL or not finite. Errors name the mapping key and the file.
    """

    def __init__(self, path: Path, mapping: Mapping, table: pa.Table):
        self.path, self.mapping, self.rows = path, mapping, table.num_rows
        names = table.column_names
        lower = Counter(n.lower() for n in names)
        usable = [i for i, n in enumerate(names) if n and lower[n.lower()] == 1]
        self.columns = {names[i] for i in usable}
        self.left_out = [n for n in names if n not in self.columns]
        self.row = ROW
        while self.row.lower() in lower:
            self.row += "_"
        config = {"enable_external_access": False, "autoinstall_known_extensions": False,
                  "autoload_known_extensions": False, "lock_configuration": True}
        if os.environ.get("GPUDB_MEMORY_LIMIT"):
            config["memory_limit"] = os.environ["GPUDB_MEMORY_LIMIT"]
        self.con = duckdb.connect(":memory:", config=config)
        try:
            self._register(table, usable)
        except BaseException:
            self.con.close()
            raise

    def _register(self, table: pa.Table, usable: list[int]) -> None:
        names = table.column_names
        self.con.register("_gpudb_file", pa.table(
            [table.column(i) for i in usable]
            + [pa.array(np.arange(1, table.num_rows + 1, dtype=np.int64))],
            names=[f"_c{i}" for i in usable] + [ROW]))
        text = [i for i in usable if names[i] not in self.mapping.text and (
            pa.types.is_string(table.field(i).type)
            or pa.types.is_large_string(table.field(i).type))]
        bad = first_row(self.con.execute("SELECT " + ", ".join(
            f"count(*) FILTER (WHERE {bad_number(f'_c{i}', False)})" for i in text)
            + " FROM _gpudb_file")) if text else []
        numbers = {i for i, n in zip(text, bad, strict=True) if n == 0}
        select = [(f"TRY_CAST(_c{i} AS DOUBLE)" if i in numbers else f"_c{i}")
                  + f" AS {_ident(names[i])}" for i in usable]
        select.append(f"{ROW} AS {_ident(self.row)}")
        self.con.execute(f"CREATE TEMP VIEW data AS SELECT {', '.join(select)} FROM _gpudb_file")

    def __enter__(self) -> Expressions:
        return self

    def __exit__(self, *exc) -> None:
        self.con.close()

    def _why(self, column: str) -> str:
        clash = [n for n in self.left_out if n.lower() == column.lower()]
        if len(clash) > 1:
            return (f" (columns {', '.join(map(repr, clash))} differ only in case, which SQL "
                    "does not tell apart, so expressions cannot use them)")
        return ""

    def evaluate(self, derived: Derived) -> pa.Array:
        values = pc.cast(self._values(derived, boolean=False), pa.float64(), safe=False)
        if derived.factor != 1.0:
            values = pc.multiply(values, derived.factor)
        values = pc.if_else(pc.is_finite(values), values, pa.scalar(None, pa.float64()))
        return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values

    def condition(self, key: str, expr: str) -> np.ndarray:
        """Which rows the boolean SQL expression ``expr`` is true for (false or NULL: not), in
        file order; ``key`` names it in messages ("[rows] where")."""
        values = self._values(Derived(key, "", 1.0, expr=expr), boolean=True)
        return np.asarray(pc.fill_null(values, False), dtype=bool)

    def _values(self, derived: Derived, boolean: bool) -> pa.ChunkedArray:
        """The expression's (or column's) values, one per row in file order, as DuckDB gives
        them: numbers, or with ``boolean`` booleans."""
        where = f"{self.mapping.path}: {derived.key}"
        what = f"column {derived.column!r}" if derived.column is not None else "expr"
        if derived.column is not None and derived.column not in self.columns:
            raise IngestError(f"{where}: {what} is not a column of {self.path}"
                              f"{self._why(derived.column)}")
        problem = expression_problem(derived.expr) if derived.expr is not None else None
        if problem:
            raise IngestError(f"{where}: {problem}")
        try:
            rel = self.con.table("data").select(
                duckdb.SQLExpression(derived.sql).alias("v"),
                duckdb.ColumnExpression(self.row)).order(self.row)
        except duckdb.Error as exc:
            raise IngestError(self._explain(where, exc)) from None
        if len(rel.columns) != 2:
            raise IngestError(f"{where}: expr gives {len(rel.columns) - 1} values per row; "
                              "it must give one number")
        kind = str(rel.types[0])
        if boolean:
            if kind != "BOOLEAN":
                raise IngestError(f"{where}: {what} gives {kind} values over {self.path}, not "
                                  "true or false (compare, e.g. \"argNo = 'input000'\")")
        elif kind not in _NUMERIC_SQL and not kind.startswith("DECIMAL"):
            raise IngestError(f"{where}: {what} gives {kind} values over {self.path}, "
                              "not numbers")
        timer = threading.Timer(EXPR_TIME_BOUND_S, self.con.interrupt)
        timer.daemon = True
        timer.start()
        try:
            result = rel.to_arrow_table()
        except duckdb.InterruptException:
            if timer.is_alive():
                raise KeyboardInterrupt from None  # Ctrl-C, not the bound
            raise IngestError(f"{where}: {what} ran over {EXPR_TIME_BOUND_S:g} s over "
                              f"{self.path}, the time bound of a mapping expression") from None
        except duckdb.Error as exc:
            raise IngestError(f"{where}: {what} fails on {self.path}: "
                              f"{_first_line(exc)}") from None
        finally:
            timer.cancel()
            # the timer's thread holds this connection: joined, it never closes it at exit
            # (gpudb.store.db._TimeBound.release)
            timer.join()
        if result.num_rows != self.rows:
            raise IngestError(f"{where}: expr gives {result.num_rows} rows for the "
                              f"{self.rows} of {self.path}; it must give one value per row")
        return result.column(0)

    def _explain(self, where: str, exc: duckdb.Error) -> str:
        line = _first_line(exc)
        missing = _MISSING_COLUMN.search(line)
        if missing:
            column = missing.group(1).replace('""', '"')
            return (f"{where}: expr names column {column!r}, which {self.path} does not have"
                    f"{self._why(column)}")
        if isinstance(exc, duckdb.BinderException) and self.row in line and "GROUP BY" in line:
            return (f"{where}: expr must give one value per row, not aggregate the file "
                    "(sum, avg, count, ...)")
        return f"{where}: cannot evaluate expr over {self.path}: {line}"


def _ident(name: str) -> str:
    """Quote an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
