"""Converting a validated file (:mod:`gpudb.sources.tabular.validate`) to the rows the writer
stores (:mod:`gpudb.sources.write`): its runs in gpudb's units with their run ids, as a
temporary table over which the kernel, P-state and run rows are SQL; the values unit conversion
made zero or infinite and a kernel measured twice at one setting refused (they need the
converted values); its metrics and model inputs as long-format Arrow rows.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpudb.sources.tabular.mapping import Derived, Mapping
from gpudb.sources.tabular.read import (
    ROW,
    SHOWN_ROWS,
    IngestError,
    cell_location,
    offending,
    rows_note,
    sql_str,
    trim_sql,
)
from gpudb.sources.tabular.validate import Staged, is_number_type
from gpudb.sources.write import FileRecord, Part
from gpudb.store.db import first_row


def _num(measure: Derived, sql: dict[str, str]) -> str:
    return f"(TRY_CAST({sql[measure.column]} AS DOUBLE) * {measure.factor!r})"


def _kernel_expr(mapping: Mapping, sql: dict[str, str]) -> str:
    parts = ", ".join(trim_sql(sql[c]) for c in mapping.kernel)
    return f"concat_ws(':', {parts})"


def _g(column: str) -> str:
    """A number as 12 significant digits: the same measurement exported twice with different
    float formatting (1 ulp apart) must hash to the same run_id. A whole number below 10^12
    (clocks in MHz, often times) has those digits and no more, exactly its integer's: that
    costs less than format."""
    return (f"CASE WHEN {column} >= 1 AND {column} < 1e12 AND {column} = trunc({column}) "
            f"THEN CAST(CAST({column} AS BIGINT) AS VARCHAR) "
            f"ELSE format('{{:.12g}}', {column}) END")


def _run_constants(mapping: Mapping, exp_id: str, sha: str, created: str) -> dict[str, str]:
    """SQL literals of the `run` columns that are the same for every run of a file: the
    insert adds them, so the staged table does not hold a million copies of each."""
    return {"experiment_id": sql_str(exp_id),
            "source": sql_str(mapping.source),
            "gpu_id": sql_str(str(mapping.gpu["gpu_id"])),
            "policy": sql_str(mapping.policy),
            "ctas_per_sm": "CAST(NULL AS INTEGER)",
            "interval_instructions": "CAST(NULL AS BIGINT)",
            "seed": "CAST(NULL AS BIGINT)",
            "instructions": "CAST(NULL AS BIGINT)",
            "created_at": f"CAST({sql_str(created)} AS TIMESTAMPTZ)",
            "input_hash": sql_str(sha)}


def _run_rows(mapping: Mapping, sql: dict[str, str], view: str) -> str:
    """SQL turning a staged file into the `run` columns that vary from run to run (without
    run_id; the others are _run_constants), plus its row number and the power or energy as
    measured (_measured, for the hash)."""
    kernel_id = f"{sql_str(mapping.suite + '/')} || {_kernel_expr(mapping, sql)}"
    n_sm = (f"CAST({_num(mapping.n_sm, sql)} AS INTEGER)" if mapping.n_sm is not None
            else str(int(mapping.gpu["n_sm"])))
    time_ns = _num(mapping.time, sql)
    energy = (_num(mapping.energy, sql) if mapping.energy is not None
              else f"({_num(mapping.power, sql)} * {time_ns} * 1e-9)")
    # The hash takes the power or energy as measured, not the derived energy: a product of
    # two rounded numbers can fall either side of a rounding boundary.
    measured = _num(mapping.energy if mapping.energy is not None else mapping.power, sql)
    return f"""
        SELECT {ROW} AS _row,
               {kernel_id} AS kernel_id,
               {_num(mapping.core_mhz, sql)} AS core_mhz,
               {_num(mapping.mem_mhz, sql)} AS mem_mhz,
               {n_sm} AS n_sm,
               {time_ns} AS time_ns,
               {energy} AS energy_j,
               {measured} AS _measured
        FROM {view}"""


def convert(con: duckdb.DuckDBPyConnection, stage: Staged, view: str, exp_id: str,
            now: str) -> Part:
    """The rows of a validated file (registered as ``view``) for the writer. Its run rows,
    with their run_id and row number, are materialised as the temporary table stage.runs
    (readers that need file order sort by _row; the columns equal for every run are in
    stage.constants), which the part's SQL reads until it is written; the values unit
    conversion made zero or infinite (1e308 ms is +inf ns) and a kernel measured twice at
    one setting are refused here, naming file, line and column."""
    mapping = stage.mapping
    const = stage.constants = _run_constants(mapping, exp_id, stage.sha256, now)
    rows = _run_rows(mapping, stage.sql, view)
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE {stage.runs} AS
        SELECT md5(concat_ws('|', {const['source']}, {const['gpu_id']}, kernel_id,
                             {const['policy']}, {_g('core_mhz')}, {_g('mem_mhz')}, n_sm,
                             {_g('time_ns')}, {_g('_measured')}))
                   AS run_id, * EXCLUDE (_measured)
        FROM ({number_repeats(rows, mapping)})""")
    _check_converted(con, stage, view)
    stage.repeats = check_repeats(con, stage)
    suite, gpu_id = sql_str(mapping.suite), const["gpu_id"]
    columns = (f"{const.get(c, c)} AS {c}" for c in RUN_COLUMNS)
    return Part(
        runs=f"SELECT {', '.join(columns)} FROM {stage.runs}",
        kernels=(f"SELECT DISTINCT kernel_id, substr(kernel_id, length({suite}) + 2) AS name, "
                 f"{suite} AS suite, 'measured kernel' AS description FROM {stage.runs}"),
        gpu=_gpu_row(mapping),
        pstates=(f"SELECT DISTINCT {gpu_id} AS gpu_id, 'core' AS domain, core_mhz AS freq_mhz "
                 f"FROM {stage.runs} UNION SELECT DISTINCT {gpu_id}, 'mem', mem_mhz "
                 f"FROM {stage.runs}"),
        metrics=((lambda: _metric_rows(con, stage, view))
                 if stage.metric_columns or stage.inputs else None),
        file=FileRecord(stage.sha256, stage.path, mapping.sha256, stage.table.num_rows))


def _check_converted(con, stage: Staged, view: str) -> None:
    """Refuse a value that is positive and finite as written but not after conversion to
    gpudb's unit (an overflow to inf, an underflow to 0), naming file, row and column."""
    mapping = stage.mapping
    checks = [("core_mhz", mapping.core_mhz, "MHz", "> 0"),
              ("mem_mhz", mapping.mem_mhz, "MHz", "> 0"),
              ("time_ns", mapping.time, "ns", "> 0"),
              ("energy_j", mapping.energy or mapping.power, "J", ">= 0")]
    first_bad = first_row(con.execute("SELECT " + ", ".join(
        f"min(_row) FILTER (WHERE NOT (isfinite({c}) AND {c} {test}))"
        for c, _, _, test in checks) + f" FROM {stage.runs}"))
    for (stored, measure, unit, test), row in zip(checks, first_bad, strict=True):
        if row is None:
            continue
        rows, total = offending(con, stage.runs,
                                f"NOT (isfinite({stored}) AND {stored} {test})", row="_row")
        more = rows_note(stage.lines, rows, total)
        converted, value, time = first_row(con.execute(
            f"SELECT r.{stored}, v.{stage.sql[measure.column]}::VARCHAR, "
            f"v.{stage.sql[mapping.time.column]}::VARCHAR FROM {stage.runs} AS r "
            f"JOIN {view} AS v ON v.{ROW} = r._row WHERE r._row = ?", [row]))
        where = cell_location(stage.path, stage.lines, row, measure.column)
        if stored == "energy_j" and mapping.energy is None:
            raise IngestError(f"{where}: {value!r} {measure.unit} for {time!r} "
                              f"{mapping.time.unit} is {converted!r} J of energy, not a finite "
                              "number" + more)
        raise IngestError(f"{where}: {value!r} {measure.unit} is {converted!r} {unit} after "
                          "unit conversion, not a positive finite number" + more)


RUN_COLUMNS = ("run_id", "experiment_id", "source", "kernel_id", "gpu_id", "policy", "core_mhz",
               "mem_mhz", "n_sm", "ctas_per_sm", "interval_instructions", "seed", "time_ns",
               "energy_j", "instructions", "created_at", "input_hash")


def _gpu_row(mapping: Mapping) -> pa.Table:
    """The GPU row the runs refer to (the writer inserts it if missing)."""
    gpu = mapping.gpu
    return pa.Table.from_pylist([{
        "gpu_id": gpu["gpu_id"], "name": gpu["name"], "n_sm": gpu["n_sm"],
        "max_warps_per_sm": gpu.get("max_warps_per_sm"),
        "max_ctas_per_sm": gpu.get("max_ctas_per_sm"),
        "nominal_core_mhz": gpu.get("nominal_core_mhz"),
        "nominal_mem_mhz": gpu.get("nominal_mem_mhz")}])


def _metric_rows(con: duckdb.DuckDBPyConnection, stage: Staged, view: str) -> pa.Table:
    """Long-format (run_id, name, value) rows of a staged file's metric columns and [inputs]
    (those not already a metric column), without the NULL values (not stored: that run has
    no such metric).

    Built column-wise in Arrow rather than with SQL UNPIVOT: it costs about a fifth as much at
    a million rows, and the insert then reads Arrow like DuckDB's own bulk path. The names
    stay dictionary-encoded (DuckDB reads them as text). Arrow filters copy every string of
    the table, so the NULL values are filtered out only where there are some.
    """
    ids = con.sql(f"SELECT run_id FROM {stage.runs} ORDER BY _row").to_arrow_table()
    text = [c for c in stage.metric_columns if not is_number_type(stage.table.schema.field(c))]
    parsed = parsed_columns(con, stage.table, text, f"{view}_text")
    # integers beyond 2**53 lose their last digits as DOUBLE (metric.value), like in SQL
    values = [pc.cast(parsed[c] if c in parsed else stage.table.column(c),
                      pa.float64(), safe=False) for c in stage.metric_columns]
    inputs = [n for n in stage.inputs if n not in stage.inputs_as_metric]
    values += [pa.chunked_array([stage.inputs[n]]) for n in inputs]
    rows, count = stage.table.num_rows, len(values)
    names = pa.DictionaryArray.from_arrays(
        pa.array(np.repeat(np.arange(count, dtype=np.int32), rows)),
        pa.array([stage.mapping.metric_name(c) for c in stage.metric_columns] + inputs,
                 pa.string()))
    # run ids dictionary-encoded too, each column one chunk: a chunk per metric column made
    # DuckDB's insert pay per chunk (10,000 columns of 4 rows: 4 s for 40,000 values)
    run = pa.array(np.tile(np.arange(rows, dtype=np.int32), count))
    table = pa.table({
        "run_id": pa.DictionaryArray.from_arrays(run, ids.column("run_id").combine_chunks()),
        "name": names,
        "value": pa.concat_arrays([chunk for v in values for chunk in v.chunks]),
    })
    if table.column("value").null_count:
        table = table.filter(pc.is_valid(table.column("value")))
    return table


def parsed_columns(con: duckdb.DuckDBPyConnection, table: pa.Table, text: list[str], view: str
            ) -> dict[str, pa.ChunkedArray]:
    """The text columns ``text`` of ``table`` (validated numbers) as DOUBLE by DuckDB's CAST,
    in file order: stacked into one column per batch, so a wide file costs one cast of few
    columns per batch, not a query over all its columns (10,000 columns: 6.4 of the 36 s
    of an ingest under load)."""
    parsed: dict[str, pa.ChunkedArray] = {}
    rows = table.num_rows
    batch_columns = max(1, 1_000_000 // max(rows, 1))  # about a million values a query
    for start in range(0, len(text), batch_columns):
        batch = text[start:start + batch_columns]
        values = pa.chunked_array([chunk.cast(pa.large_string()) for c in batch
                                   for chunk in table.column(c).chunks],
                                  type=pa.large_string())
        # ordered by position: ingest writes with preserve_insertion_order off
        con.register(view, pa.table({"v": values, "i": np.arange(len(values), dtype=np.int64)}))
        try:
            cast = con.sql(f"SELECT CAST(v AS DOUBLE) AS v FROM {view} ORDER BY i"
                           ).to_arrow_table()
        finally:
            con.unregister(view)
        column = cast.column("v").combine_chunks()
        parsed.update({c: pa.chunked_array([column.slice(i * rows, rows)])
                       for i, c in enumerate(batch)})
    return parsed


_SETTING = "kernel_id, core_mhz, mem_mhz, n_sm"


def number_repeats(rows: str, mapping: Mapping) -> str:
    """SQL: the run rows ``rows`` (with kernel_id and _row, the 1-based row) with, where the
    mapping says ``[rows] repeats = "number"``, every row of a kernel measured more than once
    at some setting labelled ``kernel_id#k``, k counting that kernel's rows at the row's
    setting in file order from 1. Column _label keeps the kernel_id as read and _copies the
    rows of its (kernel, setting)."""
    if mapping.repeats != "number":
        return f"SELECT *, kernel_id AS _label, 1 AS _copies FROM ({rows})"
    return f"""
        SELECT * EXCLUDE (kernel_id, _copy),
               CASE WHEN max(_copies) OVER (PARTITION BY _label) > 1
                    THEN _label || '#' || _copy ELSE _label END AS kernel_id
        FROM (SELECT *, kernel_id AS _label,
                     row_number() OVER (PARTITION BY {_SETTING} ORDER BY _row) AS _copy,
                     count(*) OVER (PARTITION BY {_SETTING}) AS _copies
              FROM ({rows}))"""


def check_repeats(con: duckdb.DuckDBPyConnection, stage: Staged) -> dict[str, int]:
    """Refuse a file whose staged runs (stage.runs) measure one kernel twice at one setting,
    naming every such row by count and the first few by line; else the labels numbered by
    number_repeats (kernel name -> most rows at one setting)."""
    mapping = stage.mapping
    # Equal settings hash equal (the values are positive and finite by now, so equal means
    # bitwise equal): the grouping by the columns themselves, which names the rows, runs
    # only when two hashes meet.
    if first_row(con.execute(f"SELECT count(DISTINCT hash({_SETTING})) < count(*) "
                             f"FROM {stage.runs}"))[0]:
        twice = (f"(SELECT _row, count(*) OVER (PARTITION BY {_SETTING}) AS n, kernel_id "
                 f"FROM {stage.runs})")
        rows, total = offending(con, twice, "n > 1", row="_row")
        if rows:
            kernel, first = first_row(con.execute(
                f"SELECT kernel_id, list(_row ORDER BY _row) FROM {stage.runs} "
                f"WHERE ({_SETTING}) = (SELECT ({_SETTING}) FROM {stage.runs} "
                "WHERE _row = ?) GROUP BY kernel_id", [rows[0]]))
            kernels = first_row(con.execute(f"SELECT count(DISTINCT kernel_id) FROM {twice} "
                                            "WHERE n > 1"))[0]
            at = f"{stage.lines.word}s " + ", ".join(
                str(stage.lines.numbers[r - 1]) for r in first[:SHOWN_ROWS])
            name = kernel.split("/", 1)[1]
            hint = ("" if mapping.repeats == "number" else
                    f"; to keep them as {name}#1, {name}#2, ... (file order), set [rows] "
                    f"repeats = \"number\" in {mapping.path}")
            raise IngestError(
                f"{stage.path}: kernel {name!r} is measured {len(first)} times at one setting "
                f"(columns {', '.join(mapping.kernel)}, {mapping.core_mhz.column}, "
                f"{mapping.mem_mhz.column}): {at}; {total:,} rows of {kernels:,} "
                f"kernel{'s' if kernels > 1 else ''} repeat a setting"
                f"{rows_note(stage.lines, rows, total) if total > len(first) else ''}{hint}")
    return {label.split("/", 1)[1]: n for label, n in con.execute(
        f"SELECT _label, max(_copies) FROM {stage.runs} WHERE _label <> kernel_id "
        "GROUP BY _label ORDER BY _label").fetchall()}
