"""Writing staged files as runs and metrics through :mod:`gpudb.store.runs` (ingest's last
step, all files in one transaction): run ids, reference rows, the stored GPU's facts checked,
metrics and model inputs.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpudb.sources.tabular.read import (
    ROW,
    IngestError,
    trim_sql,
    cell_location,
    offending,
    rows_note,
    sql_str,
)
from gpudb.sources.tabular.validate import (
    is_number_type,
    parsed_columns,
    Staged,
    check_repeats,
    number_repeats,
)
from gpudb.sources.tabular.mapping import Derived, Mapping
from gpudb.store.db import atomic, first_row, whoami
from gpudb.store.delete import Selection, delete_parents, delete_rows
from gpudb.store.runs import ensure_experiment, insert_metrics, insert_missing, insert_runs


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


def stage_runs(con, stage: Staged, view: str, exp_id: str, now: str) -> None:
    """Materialise a validated file's run rows, with their run_id and row number, as the
    temporary table stage.runs (readers that need file order sort by _row; the columns
    equal for every run are in stage.constants), and refuse values that unit conversion
    made zero or infinite (1e308 ms is +inf ns) and a kernel measured twice at one setting
    (which need the converted values the table holds)."""
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


def _ensure_reference_rows(con, mapping: Mapping, exp_name: str, now: str) -> None:
    """The GPU and experiment rows the new runs refer to (insert if missing)."""
    gpu = mapping.gpu
    insert_missing(con, "gpu", pa.Table.from_pylist([{
        "gpu_id": gpu["gpu_id"], "name": gpu["name"], "n_sm": gpu["n_sm"],
        "max_warps_per_sm": gpu.get("max_warps_per_sm"),
        "max_ctas_per_sm": gpu.get("max_ctas_per_sm"),
        "nominal_core_mhz": gpu.get("nominal_core_mhz"),
        "nominal_mem_mhz": gpu.get("nominal_mem_mhz")}]))
    ensure_experiment(con, exp_name, mapping.description
                      or f"measured data ingested with {mapping.path.name}", created_at=now)


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


def _metric_rows(con, mapping: Mapping, stage: Staged, view: str,
                 some_present: bool) -> pa.Table:
    """Long-format (run_id, _new, name, value) rows of a staged file's metric columns and
    [inputs] (those not already a metric column); _new: the run was not stored before this
    ingest (`some_present` False: none was).

    Built column-wise in Arrow rather than with SQL UNPIVOT: it costs about a fifth as much at
    a million rows, and the insert then reads Arrow like DuckDB's own bulk path. The names
    stay dictionary-encoded (DuckDB reads them as text).
    """
    new = ("run_id NOT IN (SELECT run_id FROM _gpudb_present)" if some_present else "true")
    ids = con.sql(f"SELECT run_id, {new} AS _new "
                  f"FROM {stage.runs} ORDER BY _row").to_arrow_table()
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
        pa.array([mapping.metric_name(c) for c in stage.metric_columns] + inputs, pa.string()))
    # run ids dictionary-encoded too, each column one chunk: a chunk per metric column made
    # DuckDB's insert pay per chunk (10,000 columns of 4 rows: 4 s for 40,000 values)
    run = pa.array(np.tile(np.arange(rows, dtype=np.int32), count))
    return pa.table({
        "run_id": pa.DictionaryArray.from_arrays(run, ids.column("run_id").combine_chunks()),
        "_new": ids.column("_new").combine_chunks().take(run),
        "name": names,
        "value": pa.concat_arrays([chunk for v in values for chunk in v.chunks]),
    })


def _write_metrics(con, mapping: Mapping, stage: Staged, view: str, some_present: bool) -> int:
    """Insert a staged file's metrics; returns the number of metric rows added.

    Arrow filters copy every string of the table, so they run only where needed: no NULL
    values and only new runs (a first ingest) insert the rows as they are.
    """
    rows = _metric_rows(con, mapping, stage, view, some_present)
    if rows.column("value").null_count:
        rows = rows.filter(pc.is_valid(rows.column("value")))
    is_new = rows.column("_new")
    new_count = pc.sum(is_new).as_py() or 0
    added = 0
    if new_count:
        added += insert_metrics(con, (rows if new_count == rows.num_rows
                                      else rows.filter(is_new)).drop_columns(["_new"]),
                                skip_stored=False)
    if some_present and new_count < rows.num_rows:
        added += insert_metrics(con, rows.filter(pc.invert(is_new)).drop_columns(["_new"]),
                                skip_stored=True)
    return added


def write_staged(con, mapping, staged, exp_id, exp_name, now, version,
           replacing: list[str] | None = None) -> None:
    """Write the staged files in one transaction; ``replacing``: SHA-256s of files ingested
    before whose runs (with everything derived from them) the new ones replace, deleted in
    that same transaction. The GPU, kernel and experiment rows only the replaced runs used
    go afterwards, in a transaction of their own (gpudb.store.delete says why)."""
    user, host = whoami()
    # Row order in run and metric carries no meaning (readers sort), and letting DuckDB
    # insert out of order lets both threads write (DuckDB's advice for bulk loads).
    preserve = first_row(con.execute("SELECT current_setting('preserve_insertion_order')"))[0]
    con.execute("SET preserve_insertion_order = false")
    try:
        touched = _write_all(con, mapping, staged, exp_id, exp_name, now, version, user, host,
                             replacing or [])
    finally:
        con.execute(f"SET preserve_insertion_order = {str(bool(preserve)).lower()}")
    if touched is not None:
        delete_parents(con, Selection(ingests=replacing), touched)


def _write_all(con, mapping, staged, exp_id, exp_name, now, version, user, host,
               replacing: list[str]) -> dict[str, list[str]] | None:
    """The write of :func:`write_staged`; returns what the replaced runs touched (None: nothing
    was replaced)."""
    touched = None
    with atomic(con):
        if replacing:
            earlier = dict(con.execute(
                "SELECT input_hash, count(*) FROM run WHERE list_contains(?, input_hash) "
                "GROUP BY ALL", [replacing]).fetchall())
            for report, stage, _ in staged:
                report.runs_replaced = earlier.get(stage.sha256, 0)
            _, touched = delete_rows(con, Selection(ingests=replacing))
        _ensure_reference_rows(con, mapping, exp_name, now)
        suite = sql_str(mapping.suite)
        for report, stage, view in staged:
            insert_missing(con, "kernel", (
                f"SELECT DISTINCT kernel_id, substr(kernel_id, length({suite}) + 2) AS name, "
                f"{suite} AS suite, 'measured kernel' AS description FROM {stage.runs}"))
            gpu_id = stage.constants["gpu_id"]
            insert_missing(con, "pstate", (
                f"SELECT DISTINCT {gpu_id} AS gpu_id, 'core' AS domain, core_mhz AS freq_mhz "
                f"FROM {stage.runs} UNION SELECT DISTINCT {gpu_id}, 'mem', mem_mhz "
                f"FROM {stage.runs}"))
            # Runs the database already has (usually none) keep their row; only their new
            # metrics are added.
            con.execute("CREATE OR REPLACE TEMP TABLE _gpudb_present AS SELECT run_id FROM "
                        f"{stage.runs} WHERE run_id IN (SELECT run_id FROM run)")
            columns = (f"{stage.constants.get(c, c)} AS {c}" for c in RUN_COLUMNS)
            report.runs_added = insert_runs(
                con, f"SELECT {', '.join(columns)} FROM {stage.runs}").runs
            report.runs_present = report.rows - report.runs_added
            if stage.metric_columns or stage.inputs:
                report.metrics_added = _write_metrics(con, mapping, stage, view,
                                                      report.runs_present > 0)
            con.execute(
                "INSERT INTO ingest_file VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "CAST(? AS TIMESTAMPTZ), ?)",
                [stage.sha256, stage.path.name, mapping.sha256, exp_id, report.rows,
                 report.runs_added, report.metrics_added, user, host, now, version])
        con.execute("DROP TABLE IF EXISTS _gpudb_present")
    return touched
