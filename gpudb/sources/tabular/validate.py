"""Validating a file for ingest before anything is written (:mod:`gpudb.sources.tabular.ingest`):
the mapping's GPU against the database's, the file's names, numbers (finite, positive),
computed columns and model inputs, checked as SQL over the file's Arrow table.
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpudb.sources.tabular.expressions import Expressions
from gpudb.sources.tabular.read import (
    ROW,
    IngestError,
    Lines,
    bad_number,
    blank_sql,
    cell_location,
    SHOWN_ROWS,
    offending,
    rows_note,
)
from gpudb.sources.tabular.mapping import FRACTION_INPUTS, Mapping
from gpudb.store.db import first_row

_INT64_MAX = 2**63 - 1


_INT32_MAX = 2**31 - 1


_COLUMNS_PER_QUERY = 64  # columns checked per validation query


@dataclass
class Staged:
    path: Path
    sha256: str
    table: pa.Table
    metric_columns: list[str]
    # the mapping as this file's table holds it: [columns] constants and expressions are
    # columns of the table (see _computed)
    mapping: Mapping
    lines: Lines  # where each row is in the file
    runs: str = ""  # temporary table of the file's run rows (see convert.convert)
    filtered: int = 0  # rows [rows] where left out
    repeats: dict[str, int] = field(default_factory=dict)  # see convert.check_repeats
    # `run` column -> SQL literal, for the columns equal in every run of the file
    constants: dict[str, str] = field(default_factory=dict)
    # file column name -> its name in the registered view (positional: _c0, _c1, ...)
    sql: dict[str, str] = field(default_factory=dict)
    # [inputs] name -> float64 values in file order (NULL: not stored)
    inputs: dict[str, pa.Array] = field(default_factory=dict)
    # inputs that are a metric column already (same name, same values): written once
    inputs_as_metric: frozenset[str] = frozenset()
    # columns that are not metrics: not all numbers, wholly empty, [metrics] ignore
    text: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def _count_numbers(con: duckdb.DuckDBPyConnection, table: pa.Table, columns: list[str],
                   typed: set[str], view: str) -> list[int]:
    """For each of ``columns`` of ``table`` (positional names), how many values are not a
    finite number (:func:`bad_number`) and how many are not NULL, flat: [bad, present, ...].

    In batches of columns, each over a view of its own: one query over a thousand columns
    takes DuckDB time and memory that grow faster than the columns, and a query over the
    whole file pays for all of its columns (issue 31: 1,000 columns of 4 rows took 2.3 GB
    and 11 s). A batch's text columns are checked stacked into one column, so the number
    pattern is compiled once per batch, not once per column."""
    counts: dict[str, tuple[int, int]] = {}
    for start in range(0, len(columns), _COLUMNS_PER_QUERY):
        batch = columns[start:start + _COLUMNS_PER_QUERY]
        numbers = [c for c in batch if c in typed]
        if numbers:
            con.register(view, table.select(numbers))
            row = first_row(con.execute("SELECT " + ", ".join(
                f"count(*) FILTER (WHERE {bad_number(c, True)}), count({c})"
                for c in numbers) + f" FROM {view}"))
            counts.update({c: (row[2 * i], row[2 * i + 1]) for i, c in enumerate(numbers)})
        text = [c for c in batch if c not in typed]
        if text:
            values = pa.chunked_array([chunk.cast(pa.large_string()) for c in text
                                       for chunk in table.column(c).chunks],
                                      type=pa.large_string())
            which = np.repeat(np.arange(len(text), dtype=np.int32), table.num_rows)
            con.register(view, pa.table({"k": which, "v": values}))
            for k, bad, present in con.execute(
                    f"SELECT k, count(*) FILTER (WHERE {bad_number('v', False)}), count(v) "
                    f"FROM {view} GROUP BY k").fetchall():
                counts[text[k]] = (bad, present)
        con.unregister(view)
    return [n for c in columns for n in counts[c]]


def _check_names(path: Path, mapping: Mapping, names: list[str]) -> None:
    """The file's column names (each once: read_file refuses or numbers repeats) against the
    mapping: every name the mapping lists present, and no empty name that would become a
    metric."""
    missing = [c for c in sorted(mapping.mapped_columns()) if c not in names]
    if missing:
        raise IngestError(f"{path}: column {missing[0]!r} named in {mapping.path} is missing "
                          f"(file has {', '.join(repr(c) for c in names)})")
    for key, listed in (("ignore", mapping.ignore), ("text", mapping.text),
                        ("rename", mapping.rename)):
        for column in sorted(listed):
            if column not in names:
                raise IngestError(f"{mapping.path}: [metrics] {key} names column {column!r}, "
                                  f"which {path} does not have")
    if "" in names and "" not in mapping.ignore:
        raise IngestError(f"{path}: column {names.index('') + 1} has no name; list \"\" in "
                          f"[metrics] ignore of {mapping.path} to leave it out")


# columns that name the GPU a file measured, compared as gpu_column_key() gives them
GPU_COLUMNS = frozenset({"gpu", "gpu_name", "gpu_model", "gpu_type", "device_name"})
# words that vendors and boards put before or around a GPU's name and files may leave out
_BRAND_WORDS = frozenset({"nvidia", "geforce", "tesla", "quadro", "amd", "radeon", "intel"})


def gpu_column_key(column: str) -> str:
    """A column name as compared with GPU_COLUMNS: lower case, '-' and spaces as '_'."""
    return re.sub(r"[\s-]+", "_", column.strip().lower())


def _gpu_words(text: str) -> list[str]:
    """The words of a GPU name, lower case, split at every non-alphanumeric character and
    between letters and digits ('RTX2070S' -> rtx, 2070, s), brand words left out."""
    words = re.findall(r"[a-z]+|[0-9]+", text.lower())
    return [w for w in words if w not in _BRAND_WORDS]


def names_gpu(text: str, gpu: dict) -> bool:
    """Whether a file's GPU name `text` names the mapping's [gpu]: its words contain, one after
    another, all the words of the [gpu] name or of the gpu_id (brand words aside). So
    "Tesla V100-PCIE-32GB" names gpu_id "v100" and "NVIDIA GeForce RTX 2070 SUPER" names
    "GeForce RTX 2070 SUPER", while "GeForce RTX 2070" names neither "GeForce RTX 2070
    SUPER" nor "rtx2070s", and "RTX A1000" does not name "a100" (words, not letters)."""
    have = _gpu_words(text)
    for want in (_gpu_words(gpu["name"]), _gpu_words(gpu["gpu_id"])):
        if want and any(have[i:i + len(want)] == want
                        for i in range(len(have) - len(want) + 1)):
            return True
    return False


_INDEX = re.compile(r"\s*\d+\s*")  # a device index (nvidia-smi's 'index'), not a name


def _check_file_gpu(path: Path, lines: Lines, mapping: Mapping,
                    raw: pa.Table) -> None:
    """Where the file says which GPU it measured (the [gpu] column of the mapping, or a
    column named like GPU_COLUMNS), every value must name the mapping's GPU
    (names_gpu): a mapping of another GPU would store the file's runs under
    the wrong gpu_id. A column found by its name whose values are all whole numbers is a device
    index, not a name, and is left alone."""
    gpu = mapping.gpu
    named = gpu.get("column")
    if named is not None and named not in raw.column_names:
        raise IngestError(f"{path}: column {named!r} ([gpu] column of {mapping.path}) is "
                          "missing")
    for column in raw.column_names:
        if column != named and (column in mapping.kernel
                                or gpu_column_key(column) not in GPU_COLUMNS):
            continue
        try:
            text = pc.utf8_trim_whitespace(pc.cast(raw.column(column), pa.string()))
        except pa.ArrowException:
            continue  # not text: names nothing
        values = [v for v in pc.unique(text).to_pylist() if v]
        if column != named and all(_INDEX.fullmatch(v) for v in values):
            continue
        others = [value for value in values if not names_gpu(value, gpu)]
        if others:
            rows = np.flatnonzero(pc.fill_null(pc.is_in(text, pa.array(others)), False)) + 1
            row = int(rows[0])
            value = text[row - 1].as_py()
            shown = value if len(value) <= 80 else value[:77] + "..."
            raise IngestError(
                f"{cell_location(path, lines, row, column)}: the file measured {shown!r}, which "
                f"is not the GPU of {mapping.path} ([gpu] {gpu['gpu_id']!r}, "
                f"{gpu['name']!r}): use that GPU's mapping, or a [gpu] naming it"
                + rows_note(lines, rows[:5].tolist(), len(rows)))


def _normalise(path: Path, lines: Lines, table: pa.Table, required: set[str]
               ) -> pa.Table:
    """Columns as types the SQL checks handle: numbers (int, float) and text. Dictionaries
    are decoded, decimals and half floats widened, other types (booleans, dates, binary)
    taken as text; a column that cannot be text is an error where the mapping needs it and
    not a metric otherwise. Unsigned 64-bit values above the int64 range (often a wrapped -1
    meaning 'not available') are refused."""
    names, columns = [], []
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type
        try:
            if pa.types.is_dictionary(kind):
                column = column.cast(kind.value_type)
                kind = column.type
            if pa.types.is_decimal(kind) or pa.types.is_float16(kind):
                column = pc.cast(column, pa.float64(), safe=False)
            elif pa.types.is_uint64(kind):
                over = np.flatnonzero(pc.fill_null(pc.greater(
                    column, pa.scalar(_INT64_MAX, pa.uint64())), False)) + 1
                if len(over):
                    row = int(over[0])
                    raise IngestError(f"{cell_location(path, lines, row, name)}: "
                                      f"{column[row - 1].as_py()} is beyond the int64 range"
                                      + rows_note(lines, over[:5].tolist(), len(over)))
            elif not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                      or pa.types.is_string(kind) or pa.types.is_large_string(kind)
                      or pa.types.is_null(kind)):
                column = column.cast(pa.string())
        except pa.ArrowException:
            if name in required:
                raise IngestError(f"{path}: column {name!r} holds {kind} values, which are "
                                  "neither numbers nor text") from None
            continue  # not a metric
        names.append(name)
        columns.append(column)
    return pa.table(columns, names=names)


def validate_file(con: duckdb.DuckDBPyConnection, path: Path, raw: pa.Table, lines: Lines,
                  mapping: Mapping, view: str) -> Staged:
    """Validate one file as read (:func:`gpudb.sources.tabular.read.read_file`); register it
    as `view` (the columns gpudb reads, under positional names, see Staged.sql) with a
    1-based row column."""
    if raw.num_rows == 0:
        raise IngestError(f"{path}: no data rows")
    _check_names(path, mapping, raw.column_names)
    filtered = 0
    if mapping.where is not None:
        with Expressions(path, mapping, raw) as exprs:
            keep = exprs.condition("[rows] where", mapping.where)
        filtered = int((~keep).sum())
        if filtered == raw.num_rows:
            raise IngestError(f"{mapping.path}: [rows] where keeps none of the "
                              f"{raw.num_rows:,} rows of {path}")
        if filtered:
            raw, lines = raw.filter(pa.array(keep)), lines.kept(keep)
    _check_file_gpu(path, lines, mapping, raw)
    mapping, full = _computed(path, lines, mapping, raw)
    mapped = mapping.mapped_columns()
    candidates = {c for c in raw.column_names if c not in mapped
                  and c not in mapping.ignore and c not in mapping.text}
    table = _normalise(path, lines, full.select([c for c in full.column_names
                                                  if c in mapped or c in candidates]), mapped)
    sql = {c: f"_c{i}" for i, c in enumerate(table.column_names)}
    positional = table.rename_columns(list(sql.values()))
    # The view holds the mapped columns only: every query pays for each column of the table
    # it reads from, so one over all 10,000 columns of a wide file took seconds; the metric
    # columns are checked and cast in batches of their own (_count_numbers here, and
    # convert's metric rows).
    con.register(view, positional.select([sql[c] for c in table.column_names if c in mapped])
                 .append_column(ROW, pa.array(np.arange(1, table.num_rows + 1,
                                                        dtype=np.int64))))

    numeric = [m.column for m in mapping.measures().values()]
    typed = {f.name for f in table.schema if is_number_type(f)}
    required = mapping.kernel + tuple(numeric)
    # One scan finds the first empty cell of every required column.
    def is_empty(c: str) -> str:
        return f"({sql[c]} IS NULL" + ("" if c in typed else f" OR {blank_sql(sql[c])}") + ")"

    empty = first_row(con.execute("SELECT " + ", ".join(
        f"min({ROW}) FILTER (WHERE {is_empty(c)})" for c in required) + f" FROM {view}"))
    for column, row in zip(required, empty, strict=True):
        if row is not None:
            rows, total = offending(con, view, is_empty(column))
            raise IngestError(f"{cell_location(path, lines, row, column)} is empty"
                              + rows_note(lines, rows, total))

    # Every candidate metric column: numeric in Parquet, or text that parses everywhere.
    to_check = numeric + [c for c in table.column_names if c in candidates]
    counts = _count_numbers(con, positional, [sql[c] for c in to_check],
                            {sql[c] for c in typed}, f"{view}_columns")
    metric_columns, empty_columns = [], []
    for i, column in enumerate(to_check):
        bad, present = counts[2 * i], counts[2 * i + 1]
        is_required = i < len(numeric)
        if not is_required and present == 0:
            empty_columns.append(column)
            continue
        if not is_required and bad == present and column not in typed:
            continue  # wholly non-numeric: text, not a metric
        if bad:
            one = f"{view}_bad"
            con.register(one, pa.table({"v": table.column(column), ROW: pa.array(
                np.arange(1, table.num_rows + 1, dtype=np.int64))}))
            try:
                rows, _ = offending(con, one, bad_number('v', column in typed))
                value = first_row(con.execute(f"SELECT v::VARCHAR FROM {one} WHERE {ROW} = ?",
                                              [rows[0]]))[0]
            finally:
                con.unregister(one)
            raise IngestError(f"{cell_location(path, lines, rows[0], column)}: {value!r} is not a "
                              "finite number" + rows_note(lines, rows, bad))
        if not is_required:
            metric_columns.append(column)
    by_name: dict[str, str] = {}
    for column in metric_columns:
        name = mapping.metric_name(column)
        if name in by_name:
            raise IngestError(f"{path}: columns {by_name[name]!r} and {column!r} would both be "
                              f"metric {name!r} ([metrics] rename/prefix of {mapping.path})")
        by_name[name] = column
    inputs, as_metric = _stage_inputs(path, lines, mapping, raw, by_name)

    positive = [mapping.core_mhz, mapping.mem_mhz, mapping.time]
    if mapping.n_sm is not None:
        positive.append(mapping.n_sm)
    checks = [(m.column, "> 0", "must be positive") for m in positive]
    checks += [(m.column, ">= 0", "must not be negative")
               for m in (mapping.power, mapping.energy) if m is not None]
    first_bad = first_row(con.execute("SELECT " + ", ".join(
        f"min({ROW}) FILTER (WHERE NOT (TRY_CAST({sql[c]} AS DOUBLE) {test}))"
        for c, test, _ in checks) + f" FROM {view}"))
    for (column, test, message), row in zip(checks, first_bad, strict=True):
        if row is not None:
            value = first_row(con.execute(
                f"SELECT {sql[column]}::VARCHAR FROM {view} WHERE {ROW} = ?", [row]))[0]
            rows, total = offending(con, view,
                                    f"NOT (TRY_CAST({sql[column]} AS DOUBLE) {test})")
            raise IngestError(f"{cell_location(path, lines, row, column)}: {value!r} {message}"
                              + rows_note(lines, rows, total))
    if mapping.n_sm is not None:
        n_sm = f"TRY_CAST({sql[mapping.n_sm.column]} AS DOUBLE)"
        rows, total = offending(con, view, f"{n_sm} % 1 <> 0 OR {n_sm} > {_INT32_MAX}")
        if rows:
            value = first_row(con.execute(f"SELECT {sql[mapping.n_sm.column]}::VARCHAR FROM "
                                          f"{view} WHERE {ROW} = ?", [rows[0]]))[0]
            raise IngestError(f"{cell_location(path, lines, rows[0], mapping.n_sm.column)}: "
                              f"{value!r} is not a whole number of SMs"
                              + rows_note(lines, rows, total))

    kept = set(metric_columns) | set(empty_columns)  # sets: 10,000 columns ask each
    return Staged(path, "", table, metric_columns, mapping, lines, sql=sql, inputs=inputs,
                   inputs_as_metric=as_metric,
                   text=[c for c in raw.column_names if c in mapping.text or (
                       c in candidates and c not in kept)],
                   empty=empty_columns,
                   ignored=[c for c in raw.column_names if c in mapping.ignore],
                   filtered=filtered)


def _computed(path: Path, lines: Lines, mapping: Mapping, raw: pa.Table
              ) -> tuple[Mapping, pa.Table]:
    """The [columns] numbers the mapping gives as a constant or an expression, added to the
    file's table as columns named by their key ("[columns] time"), in the mapping's unit; and
    the mapping reading them from there, so that they are checked, converted and hashed like
    any column. An expression sees only the file's own columns (not another [columns] number)
    and must give a finite number on every row: a run without its time or clock cannot be
    stored, so unlike [inputs] a NULL stops the ingest."""
    computed = {key: m for key, m in mapping.measures().items() if m.column is None}
    if not computed:
        return mapping, raw
    table = raw
    evaluates = any(m.expr is not None for m in computed.values())
    with Expressions(path, mapping, raw) if evaluates else nullcontext() as exprs:
        for m in computed.values():
            if m.key in raw.column_names:
                raise IngestError(f"{path}: has a column named {m.key!r}, the name ingest "
                                  f"gives the value of {m.key} of {mapping.path}")
            if m.value is not None:
                values = pa.array(np.full(raw.num_rows, m.value))
            else:
                values = exprs.evaluate(replace(m, factor=1.0))
                rows = np.flatnonzero(pc.is_null(values)) + 1
                if len(rows):
                    raise IngestError(f"{mapping.path}: {m.key} expr gives no finite number "
                                      f"at {lines.at(int(rows[0]))} of {path}"
                                      + rows_note(lines, rows[:5].tolist(), len(rows)))
            table = table.append_column(m.key, values)
    return replace(mapping, **{key: replace(m, column=m.key, expr=None, value=None)
                               for key, m in computed.items()}), table


def _stage_inputs(path: Path, lines: Lines, mapping: Mapping, raw: pa.Table,
                  metrics: dict[str, str]
                  ) -> tuple[dict[str, pa.Array], frozenset[str]]:
    """Evaluate the mapping's [inputs] over the file (see the module docstring): their values
    in file order, and the inputs that are the file's metric column of the same name.
    `metrics` maps the file's metric names to their columns."""
    if not mapping.inputs:
        return {}, frozenset()
    as_metric = set()
    for name, derived in mapping.inputs.items():
        column = metrics.get(name)
        if column is None:
            continue
        if derived.column == column and derived.factor == 1.0:
            as_metric.add(name)
            continue
        raise IngestError(f"{mapping.path}: [inputs] {name} would be stored under the name of "
                          f"metric {name!r}, which column {column!r} of {path} already is; "
                          "rename the column ([metrics] rename) or ignore it")
    values = {}
    with Expressions(path, mapping, raw) as exprs:
        for name, derived in mapping.inputs.items():
            values[name] = exprs.evaluate(derived)
    for name, array in values.items():
        bad = pc.less(array, 0.0)
        reason = "must not be negative"
        if name in FRACTION_INPUTS:
            bad = pc.or_(bad, pc.greater(array, 1.0))
            reason = "must be a fraction in [0, 1]"
        rows = np.flatnonzero(pc.fill_null(bad, False)) + 1
        if len(rows):
            derived, value = mapping.inputs[name], array[int(rows[0]) - 1].as_py()
            unit = ("" if derived.factor == 1.0
                    else f" ({value / derived.factor!r} {derived.unit})")
            raise IngestError(f"{mapping.path}: [inputs] {name} is {value!r}{unit} at "
                              f"{lines.at(int(rows[0]))} of {path}: {reason}"
                              + rows_note(lines, rows[:5].tolist(), len(rows)))
    return values, frozenset(as_metric)


def is_number_type(field: pa.Field) -> bool:
    return (pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
            or pa.types.is_decimal(field.type))


# the [gpu] keys that describe the GPU itself: a mapping that names a stored gpu_id must agree
_GPU_FACTS = ("name", "n_sm", "max_warps_per_sm", "max_ctas_per_sm", "nominal_core_mhz",
              "nominal_mem_mhz")


def check_stored_gpu(con: duckdb.DuckDBPyConnection, mapping: Mapping) -> None:
    """A mapping's [gpu] naming a GPU the database holds must say what the database says of
    it (ingest-log refuses a log whose SM count differs the same way): otherwise one gpu_id
    would hold runs of two GPUs, e.g. of 40 SMs and of 2."""
    gpu = mapping.gpu
    stored = con.execute(f"SELECT {', '.join(_GPU_FACTS)} FROM gpu WHERE gpu_id = ?",
                         [gpu["gpu_id"]]).fetchall()
    if not stored:
        return
    for key, have in zip(_GPU_FACTS, stored[0], strict=True):
        given = gpu.get(key)
        if given is not None and have is not None and given != have:
            raise IngestError(f"{mapping.path}: [gpu] {key} = {given!r}, but GPU "
                              f"{gpu['gpu_id']!r} in the database has {key} = {have!r}: "
                              "name another gpu_id, or the GPU as stored")
