"""Stored queries: one SQL file per query in queries/, the file name is the query's name.

A file starts with a ``/* description */`` comment and uses ``:name`` parameters. Every
parameter is optional: one not given is NULL, and the query decides what NULL means (e.g.
"all GPUs"). Values arrive as text from the command line; queries cast them explicitly.
A parameter whose line in the description starts with quoted values, as in
``:objective  'edp' (default), 'ed2p', 'energy' or 'energy_perf'``, takes only those: another
value is an error naming them (rather than a query that silently matches nothing).

A line ``Shown first: a, b`` in the description names the columns a terminal too narrow for
every column keeps after those identifying a row (``gpudb query``).

A column per registered predictor (gpudb.predictors, in table order) comes from the views
with one (``prediction_by_predictor``, ``core_scaling_error_by_predictor``, made from the
registry by gpudb.store.db), read with ``COLUMNS('^pred_(\\w+)_ns$') AS '\\1_ns'``: a new
predictor gets its column in every such query without an edit, and no query's text is
edited at run time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from gpudb.store.base import error_line
from gpudb.store.db import GpudbError
from gpudb.store.names import hint, listing, unknown
from gpudb.store.resources import resource_dir

# A :name parameter, not a '::type' cast and not inside a string literal or comment
# (those alternatives are matched first and kept as they are).
_TOKENS = re.compile(r"""('(?:[^']|'')*')|(--[^\n]*)|(/\*.*?\*/)|(::)|:([A-Za-z_][A-Za-z0-9_]*)""",
                     re.S)
_DESCRIPTION = re.compile(r"^\s*/\*(.*?)\*/", re.S)
# A parameter documented with its values: ":name  'a' (default), 'b' or 'c'" (one line).
_VALUE = r"'[^'\n]*'(?:[ \t]*\(default\))?"
_CHOICES = re.compile(
    rf":([A-Za-z_][A-Za-z0-9_]*)[ \t]+({_VALUE}(?:[ \t]*,?[ \t]*(?:or[ \t]+)?{_VALUE})+)")
# "Shown first: a, b, c" in the description: the columns a narrow terminal keeps first
_FIRST = re.compile(r"Shown first:\s*((?:[a-z][a-z0-9_]*\s*,\s*)*[a-z][a-z0-9_]*)")


@dataclass(frozen=True)
class StoredQuery:
    name: str
    path: Path
    sql: str
    description: str
    params: tuple[str, ...]
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    # the columns a terminal too narrow for every column keeps first (its "Shown first:" line)
    first: tuple[str, ...] = ()

    def bind(self, values: dict[str, str | None]) -> tuple[str, dict[str, str | None]]:
        """SQL with $name placeholders, and a value (or NULL) for every parameter."""
        extra = sorted(set(values) - set(self.params))
        if extra:
            raise GpudbError(f"query {self.name} has no parameter {extra[0]!r}"
                             + hint(extra[0], list(self.params), "parameters"))
        for name, value in values.items():
            allowed = self.choices.get(name)
            if value is not None and allowed and value not in allowed:
                raise GpudbError(f"query {self.name}: {name} must be one of "
                                 f"{', '.join(allowed)} (got {value!r})")

        def swap(match: re.Match) -> str:
            return f"${match.group(5)}" if match.group(5) else match.group(0)

        return _TOKENS.sub(swap, self.sql), {p: values.get(p) for p in self.params}


def fetch(con: duckdb.DuckDBPyConnection, sql: str,
          params: dict | None = None) -> tuple[list[str], list[tuple]]:
    """Run ``sql`` (several statements run in order; the last one's rows count) and fetch
    its column names and rows for printing (:func:`relation_rows`)."""
    return relation_rows(con.sql(sql, params=params) if params else con.sql(sql))


def relation_rows(rel: duckdb.DuckDBPyRelation | None) -> tuple[list[str], list[tuple]]:
    """A relation's column names and rows for printing ([], [] for None: a statement without
    a result). A TIMESTAMPTZ value comes as DuckDB's text of it (DuckDB's Python conversion
    of one needs pytz, which gpudb does without)."""
    if rel is None:
        return [], []
    columns = list(rel.columns)
    if any("TIMESTAMP WITH TIME ZONE" in str(t) for t in rel.types):
        exprs = []
        for i, (name, kind) in enumerate(zip(columns, rel.types, strict=True), 1):
            alias = '"' + name.replace('"', '""') + '"'
            zoned = "TIMESTAMP WITH TIME ZONE" in str(kind)
            exprs.append(f"CAST(#{i} AS VARCHAR) AS {alias}" if zoned else f"#{i} AS {alias}")
        rel = rel.project(", ".join(exprs))
    return columns, rel.fetchall()


def _parse(path: Path) -> StoredQuery:
    sql = path.read_text()
    described = _DESCRIPTION.match(sql)
    description = " ".join(described.group(1).split()) if described else ""
    params: list[str] = []
    for match in _TOKENS.finditer(sql):
        if match.group(5) and match.group(5) not in params:
            params.append(match.group(5))
    choices: dict[str, tuple[str, ...]] = {}
    doc = described.group(1) if described else ""
    for match in _CHOICES.finditer(doc[max(doc.find("Parameters:"), 0):]):
        if match.group(1) in params and match.group(1) not in choices:
            choices[match.group(1)] = tuple(re.findall(r"'([^']*)'", match.group(2)))
    first = _FIRST.search(doc)
    shown = tuple(c.strip() for c in first.group(1).split(",")) if first else ()
    return StoredQuery(path.stem, path, sql, description, tuple(params), choices, shown)


# Each file parsed once while it stays as it was (its mtime and size): parsing all of them on
# every get_query took 1.8 s of a warm `gpudb demo` (135 lookups x 22 files).
_PARSED: dict[Path, tuple[tuple[int, int], StoredQuery]] = {}


def _parsed(path: Path) -> StoredQuery:
    st = path.stat()
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _PARSED.get(path)
    if hit is None or hit[0] != stamp:
        hit = _PARSED[path] = (stamp, _parse(path))
    return hit[1]


def stored_queries() -> dict[str, StoredQuery]:
    """Every stored query, by name."""
    return {p.stem: _parsed(p) for p in sorted(resource_dir("queries").glob("*.sql"))}


def get_query(name: str) -> StoredQuery:
    queries = stored_queries()
    if name not in queries:
        raise GpudbError(unknown("stored query", name, list(queries),
                                 see="see `gpudb query --list`", plural="queries"))
    return queries[name]


def run_query(con: duckdb.DuckDBPyConnection, name: str,
              values: dict[str, str | None] | None = None) -> tuple[list[str], list[tuple]]:
    """Run a stored query; returns (column names, rows)."""
    from gpudb.store.db import doing

    sql, params = get_query(name).bind(values or {})
    doing(f"running stored query {name}")
    try:
        return fetch(con, sql, params)
    except duckdb.Error as exc:
        raise GpudbError(f"query {name} failed: {error_line(exc)}") from None


def resolve_names(con: duckdb.DuckDBPyConnection,
                  values: dict[str, str | None]) -> dict[str, str | None]:
    """A user's query parameters with the names checked against the file: a ``kernel_id`` may
    be the bare kernel name when one suite has it (``twoslope_lm`` for
    ``default/twoslope_lm``, as ``gpudb control --kernel`` takes it); a ``kernel_id``,
    ``gpu_id`` or ``suite`` the database does not hold, or a ``predictor`` gpudb does not
    have, is a GpudbError naming the close matches (else those there are), instead of an
    empty answer that reads like a result."""
    out = dict(values)
    kernel = values.get("kernel_id")
    if kernel is not None:
        out["kernel_id"] = resolve_kernel(con, kernel)
    gpu = values.get("gpu_id")
    if gpu is not None and not con.execute("SELECT 1 FROM gpu WHERE gpu_id = ?",
                                           [gpu]).fetchall():
        names = [r[0] for r in con.execute("SELECT gpu_id FROM gpu ORDER BY 1").fetchall()]
        raise GpudbError(unknown("gpu_id", gpu, names, " in this database"))
    suite = values.get("suite")
    # the queries take a suite as the kernel_ids' prefix ('default' for default/...)
    if suite is not None and not con.execute(
            "SELECT 1 FROM kernel WHERE starts_with(kernel_id, ? || '/') LIMIT 1",
            [suite]).fetchall():
        names = [r[0] for r in con.execute(
            "SELECT DISTINCT split_part(kernel_id, '/', 1) FROM kernel ORDER BY 1").fetchall()]
        raise GpudbError(unknown("suite", suite, names, " in this database"))
    predictor = values.get("predictor")
    if predictor is not None:
        from gpudb.predictors import names as predictor_names

        # 'oracle': the replays' actual outcomes; a suffixed name such as wangchu_fit_cv
        # (a cross-validated variant in the grid tables) belongs to its predictor; the
        # predictor columns of runs and results also name schedules ('dynamic_optimal')
        stored = [r[0] for r in con.execute(
            "SELECT predictor FROM run WHERE predictor IS NOT NULL UNION "
            "SELECT predictor FROM control_result WHERE predictor <> '' "
            "UNION SELECT predictor FROM scaling_prediction ORDER BY 1").fetchall()]
        known = [*predictor_names(), "oracle", *(n for n in stored if n not in predictor_names())]
        if not any(predictor == n or predictor.startswith(f"{n}_") for n in known):
            raise GpudbError(unknown("predictor", predictor, known))
    _check_values(con, values)
    return out


# Parameters of the stored queries that take a number: (whole number, smallest, strict). A value
# outside its domain (NaN, -inf, a negative seed, text) answered an empty or default table that
# read like a result (issue 41 item 6).
_NUMBERS = {"seed": (True, 0, False), "clusters": (True, 1, False),
            "min_dwell": (True, 1, False), "max_down_steps": (True, 0, False),
            "max_loss_pct": (False, 0, False), "hysteresis_pct": (False, 0, False),
            "base_mhz": (False, 0, True), "base_mem_mhz": (False, 0, True),
            "core_mhz": (False, 0, True), "mem_mhz": (False, 0, True)}
# Parameters whose values the query's description does not list in the form bind() reads
_WORDS = {"kernels": ("all", "each"), "split": ("validation", "training")}
# Numbers that must be among the database's: {parameter: SQL of the values there}
_PRESENT = {
    "seed": "SELECT seed FROM run WHERE seed IS NOT NULL UNION SELECT seed FROM wu_model",
    "clusters": "SELECT clusters FROM wu_model",
    "base_mhz": "SELECT DISTINCT core_mhz FROM run",
    "core_mhz": "SELECT DISTINCT core_mhz FROM run",
    "base_mem_mhz": "SELECT DISTINCT mem_mhz FROM run",
    "mem_mhz": "SELECT DISTINCT mem_mhz FROM run",
}


def _check_values(con: duckdb.DuckDBPyConnection, values: dict[str, str | None]) -> None:
    """Refuse, in one line, a numeric parameter outside its domain or absent from the
    database, and a word outside its choices."""
    import math

    for name, value in values.items():
        if value is None:
            continue
        if name in _WORDS and value not in _WORDS[name]:
            raise GpudbError(f"{name} must be one of {', '.join(_WORDS[name])} (got {value!r})")
        if name not in _NUMBERS:
            continue
        whole, least, strict = _NUMBERS[name]
        # written as SQL reads a number: Python's int() and float() also take '1_0' and '١'
        plain = re.fullmatch(r"[+-]?[0-9]+" if whole else
                             r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?",
                             value.strip()) and len(value) <= 400
        number = (int(value) if whole else float(value)) if plain else None
        if number is None or not math.isfinite(number) or number < least or (
                strict and number == least):
            kind = "a whole number" if whole else "a finite number"
            raise GpudbError(f"{name} must be {kind} {'>' if strict else '>='} {least} "
                             f"(got {value!r})")
        if name in _PRESENT:
            there = sorted(r[0] for r in con.execute(_PRESENT[name]).fetchall())
            if number not in there:
                shown = [f"{v:g}" if isinstance(v, float) else str(v) for v in there]
                raise GpudbError(f"no {name} {value} in this database ("
                                 + (f"there: {listing(shown)})" if shown else "it holds none)"))


def resolve_kernel(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """The kernel_id a user means: the id itself, or the one id ending in '/<name>'."""
    if con.execute("SELECT 1 FROM kernel WHERE kernel_id = ?", [name]).fetchall():
        return name
    matches = [r[0] for r in con.execute(
        "SELECT kernel_id FROM kernel WHERE ends_with(kernel_id, '/' || ?) ORDER BY 1",
        [name]).fetchall()]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise GpudbError(f"kernel {name!r} is in several suites: {listing(matches)} "
                         "(give the kernel_id)")
    known = [r[0] for r in con.execute("SELECT kernel_id FROM kernel ORDER BY 1").fetchall()]
    raise GpudbError(unknown("kernel", name, known, " in this database", plural="kernel_ids"))


# -- the stored queries as table macros of every connection -------------------------------

def _literal(param: str) -> str:
    """SQL (inside a macro) writing the value of macro parameter ``param`` as a SQL literal:
    text in quotes with its quotes doubled, NULL as NULL. The stored queries take every value
    as text and cast it, as when `gpudb query -p` passes it."""
    return (f"coalesce('''' || replace(CAST({param} AS VARCHAR), '''', '''''') || '''', "
            "'NULL')")


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def macro_sql(query: StoredQuery) -> str:
    """``CREATE OR REPLACE TEMP MACRO <name>(<param> := NULL, ...) AS TABLE ...``: the stored
    query as a table macro, each parameter named as in the query and NULL (the query's
    default) when not given. The body runs the query's text through DuckDB's query()
    function with the parameters written in as quoted literals by one format() call: a
    macro's parameters take priority over columns of the same name, so the query's own SQL
    (which reads columns named gpu_id, kernel_id, ... like its parameters) cannot be the
    macro's body itself. (Each parameter is quoted once: an expression per occurrence made
    registering every query 130 ms.)"""
    text = query.sql.strip().rstrip(";")
    template: list[str] = []
    start = 0
    for match in _TOKENS.finditer(text):
        if match.group(5):
            # format()'s braces in the query's own text doubled, as format() reads them
            template += [text[start:match.start()].replace("{", "{{").replace("}", "}}"),
                         f"{{{query.params.index(match.group(5))}}}"]
            start = match.end()
    template.append(text[start:].replace("{", "{{").replace("}", "}}"))
    params = ", ".join(f"{p} := NULL" for p in query.params)
    values = "".join(f", {_literal(p)}" for p in query.params)
    return (f"CREATE OR REPLACE TEMP MACRO {query.name}({params}) AS TABLE "
            f"FROM query(format({_quoted(''.join(template))}{values}))")


_MACROS: dict[tuple, dict[str, str]] = {}


def register_macros(con: duckdb.DuckDBPyConnection, statement: str | None = None) -> list[str]:
    """The stored queries as TEMP table macros of this connection, so that ad hoc SQL can
    read them (``SELECT * FROM best_setting(gpu_id := 'v100')``); with ``statement``, only
    those it calls (a query's name followed by '('). Returns their names.

    TEMP: nothing is written to the file (a read-only open stays byte-identical) and other
    clients opening it see no macro; TEMP comes first in DuckDB's search path, so a macro of
    the same name stored in a file does not answer. Registered where ad hoc SQL runs
    (`gpudb sql`), not by every connect: DuckDB parses each query's text as its macro is
    created, 60-160 ms for all of them per connection on a loaded 2-core machine, where an
    open takes about 0.5 s. The statements are built once per set of query files and
    predictors."""
    from gpudb.predictors import names

    paths = sorted(resource_dir("queries").glob("*.sql"))
    key = (tuple((p.name, p.stat().st_mtime_ns) for p in paths), names())
    if key not in _MACROS:
        _MACROS.clear()
        _MACROS[key] = {q.name: macro_sql(q) for q in stored_queries().values()}
    macros = _MACROS[key]
    wanted = list(macros) if statement is None else [
        name for name in macros if re.search(rf"\b{name}\s*\(", statement, re.IGNORECASE)]
    for name in wanted:
        con.execute(macros[name])
    return wanted
