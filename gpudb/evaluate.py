"""`gpudb evaluate`: the papers' evaluations as tables, on the database's runs.

Accuracy (paper 000 section 5.1, figures 8-9): every predictor from the base core P-state to
every other one, per target and per kernel, next to the figures paper 000 reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from gpudb.db import GpudbError, first_row
from gpudb.predictors import names, registry
from gpudb.queries import run_query

PREDICTORS = names()

# Paper 000 section 5.1 / abstract: average MAPE from 700 MHz to the other P-states, Rodinia on
# a GTX 480 in GPGPU-Sim (section 5.3 for CRISP-L), from the registry; absent: no figure.
PAPER_000_MAPE_PCT = {p.name: p.paper_000_mape_pct for p in registry()
                      if p.paper_000_mape_pct is not None}


@dataclass(frozen=True)
class Scope:
    """What an evaluation covers: a GPU by gpu_id, the kernels of one suite (None: all of the
    GPU's kernels), and whether the GPU is a shipped simulator configuration, whose suite can
    be swept when the database lacks it."""
    gpu: str
    suite: str | None
    simulated: bool


def resolve_scope(con: duckdb.DuckDBPyConnection | None, gpu: str, suite: str | None) -> Scope:
    """A --gpu name and --suite as a Scope. ``gpu`` is a gpu_id in the database or the name of
    a shipped simulator configuration (fixtures/gpus), never a path; ``suite`` for a simulated
    GPU is a shipped suite name or a suite file (default 'default'), for any other a kernel
    suite name (default: every kernel). ``con`` None: no database file yet."""
    from sim.config import ConfigError, available, load_suite

    if "/" in gpu or "\\" in gpu or gpu.endswith(".toml"):
        raise GpudbError(f"--gpu takes a GPU name (a gpu_id in the database or a shipped "
                         f"simulator configuration: {', '.join(available('gpus'))}), not a "
                         f"path: {gpu}")
    if gpu in available("gpus"):
        try:
            name = load_suite(suite or "default").name  # a path names its suite in the file
        except ConfigError as exc:
            raise GpudbError(str(exc)) from None
        return Scope(gpu, name, True)
    known = [] if con is None else [r[0] for r in con.execute(
        "SELECT gpu_id FROM gpu ORDER BY gpu_id").fetchall()]
    if gpu not in known:
        raise GpudbError(f"no GPU {gpu!r}: the database has {', '.join(known) or 'none'}; "
                         f"the simulator ships {', '.join(available('gpus'))}")
    return Scope(gpu, suite, False)


def has_interval_runs(con: duckdb.DuckDBPyConnection, scope: Scope) -> bool:
    """Whether control can be replayed: the scope has kernels in control_interval."""
    return first_row(con.execute(
        "SELECT count(*) FROM control_interval WHERE gpu_id = ? "
        "AND (CAST(? AS TEXT) IS NULL OR kernel_id LIKE ? || '/%')",
        [scope.gpu, scope.suite, scope.suite]))[0] > 0


def missing_sweep(con: duckdb.DuckDBPyConnection, gpu: str, suite: str) -> bool:
    """True when the database has no fixed simulated runs of `suite` on `gpu` with the
    counters this gpudb's predictors read (runs simulated before the issue-slot counters of
    schema/0004 leave them NULL, and a sweep adds current runs beside them)."""
    return first_row(con.execute(
        "SELECT count(*) FROM run AS r WHERE gpu_id = ? AND kernel_id LIKE ? || '/%' "
        "AND policy = 'fixed' AND source = 'sim' AND EXISTS (SELECT 1 FROM interval AS i "
        "WHERE i.run_id = r.run_id AND i.crisp_slot_lcp_cycles IS NOT NULL)",
        [gpu, suite]))[0] == 0


@dataclass
class Table:
    columns: list[str]
    rows: list[tuple]


def predictor_coverage(con: duckdb.DuckDBPyConnection, gpu: str, suite: str | None,
                       granularity: str = "run") -> tuple[list[str], list[str]]:
    """(predictors with at least one scored prediction on the GPU's runs, those without),
    each in table order. The interval-level models read per-interval counters, which
    measured runs lack; Wu et al.'s model needs a model trained for the GPU."""
    scored = {row[0] for row in con.execute(
        "SELECT DISTINCT predictor FROM core_scaling_error WHERE gpu_id = ? "
        "AND is_current IS NOT FALSE AND granularity = ? "
        "AND (CAST(? AS TEXT) IS NULL OR kernel_id LIKE ? || '/%')",
        [gpu, granularity, suite, suite]).fetchall()}
    return ([p for p in PREDICTORS if p in scored], [p for p in PREDICTORS if p not in scored])


def accuracy_tables(con: duckdb.DuckDBPyConnection, gpu: str, suite: str | None,
                    base_mhz: float | None, granularity: str = "run") -> tuple[Table, Table]:
    """(per-predictor MAPE by target setting, with the paper's figure; per-kernel MAPE by
    predictor). A target column is named by its core MHz, and by core and memory MHz where
    the GPU's runs have several memory clocks."""
    params = {"gpu_id": gpu, "suite": suite, "granularity": granularity,
              "base_mhz": None if base_mhz is None else str(base_mhz)}
    columns, rows = run_query(con, "mape_by_predictor", params)
    by = {(r[0], r[1], r[2]): r for r in rows}
    targets = sorted({(r[1], r[2]) for r in rows if r[1] is not None}, reverse=True)
    several_mem = len({mem for _, mem in targets}) > 1
    present = [p for p in PREDICTORS if (p, None, None) in by]
    table_columns = (["predictor"]
                     + [f"{core:g}_{mem:g}_mhz_pct" if several_mem else f"{core:g}_mhz_pct"
                        for core, mem in targets]
                     + ["mape_pct", "max_ape_pct", "n", "paper_000_pct"])
    table_rows = []
    for p in present:
        overall = by[(p, None, None)]
        table_rows.append(tuple([p] + [by[(p, *t)][3] if (p, *t) in by else None
                                       for t in targets]
                                + [overall[3], overall[4], overall[5],
                                   PAPER_000_MAPE_PCT.get(p)]))
    kernel_cols, kernel_rows = run_query(con, "mape_by_kernel", {
        "gpu_id": gpu, "suite": suite, "base_mhz": params["base_mhz"]})
    # the query has a column per registered predictor; the table keeps those that apply here
    keep = [i for i, c in enumerate(kernel_cols)
            if not c.endswith("_pct") or c.removesuffix("_pct") in present]
    return Table(table_columns, table_rows), Table(
        [kernel_cols[i] for i in keep], [tuple(r[i] for i in keep) for r in kernel_rows])


# Paper 000 section 5.2 (figure 11): average EDP saving of the EDP-seeking controller over all
# Rodinia kernels, GTX 480 in GPGPU-Sim; CRISP-L from section 5.3.
PAPER_000_EDP_SAVING_PCT = {p.name: p.paper_000_edp_saving_pct for p in registry()
                            if p.paper_000_edp_saving_pct is not None}


def control_table(con: duckdb.DuckDBPyConnection, gpu: str, suite: str, objective: str,
                  max_loss_pct: float, scope: str = "run") -> Table:
    """Mean savings per policy over the suite's kernels (savings_summary's 'all' rows) in
    energy ``scope`` ('run' or 'chip'), the worst kernel's, each policy's fraction of the
    potential saving (paper 004 section 4.3) against the dynamic optimal as stitched, as run
    in the closed loop, the better of that and static optimal, and perfect memoryless, and,
    in chip scope (the papers'), paper
    000's EDP figure beside the papers' controller. Offline policies first, then each
    predictor's replay under each guard."""
    params = {"gpu_id": gpu, "suite": suite, "objective": objective,
              "max_loss_pct": str(max_loss_pct), "scope": scope}
    columns, rows = run_query(con, "savings_summary", params)
    at = {c: i for i, c in enumerate(columns)}
    fcols, fractions = run_query(con, "fraction_of_potential", params)
    f_at = {c: i for i, c in enumerate(fcols)}
    fraction = {(r[0], r[1], r[2]): tuple(r[f_at[c]] for c in (
        "fraction_realised", "fraction_of_run_bound", "fraction_of_achievable",
        "fraction_of_memoryless"))
        for r in fractions if r[f_at["kernel_id"]] is None}
    order = {p: i for i, p in enumerate((*names(replayable=True), "oracle"))}
    out = []
    for row in rows:
        if row[at["category"]] != "all":
            continue
        policy, predictor, guard = row[at["policy"]], row[at["predictor"]], row[at["guard"]]
        paper = (PAPER_000_EDP_SAVING_PCT.get(predictor)
                 if objective == "edp" and policy == "replay" and guard == "paper"
                 and scope == "chip" else None)
        out.append(((policy == "replay", order.get(predictor, -1), guard != "guarded"),
                    (policy if policy != "replay" else f"replay {predictor}", guard,
                     row[at["time_change_pct"]], row[at["energy_saving_pct"]],
                     row[at["edp_saving_pct"]], row[at["ed2p_saving_pct"]],
                     row[at["worst_edp_saving_pct"]], row[at["worst_time_change_pct"]],
                     row[at["switches"]],
                     *fraction.get((policy, predictor, guard), (None,) * 4), paper)))
    out.sort(key=lambda item: (item[0], item[1][0]))
    return Table(["policy", "guard", "time_change_pct", "energy_saving_pct", "edp_saving_pct",
                  "ed2p_saving_pct", "worst_edp_saving_pct", "worst_time_change_pct",
                  "switches", "fraction_of_potential", "fraction_of_run_bound",
                  "fraction_of_achievable", "fraction_of_memoryless",
                  "paper_000_edp_saving_pct"],
                 [row for _, row in out])


def run_static_table(con: duckdb.DuckDBPyConnection, scope: Scope, objective: str,
                     max_loss_pct: float) -> Table:
    """Static optimal over whole runs (queries/static_optimal_run.sql): the mean over the
    scope's kernels, then each kernel with its chosen setting."""
    columns, rows = run_query(con, "static_optimal_run", {
        "gpu_id": scope.gpu, "suite": scope.suite, "objective": objective,
        "max_loss_pct": str(max_loss_pct)})
    keep = [c for c in columns if c not in ("gpu_id", "objective")]
    at = {c: i for i, c in enumerate(columns)}
    return Table(keep, [tuple(r[at[c]] for c in keep) for r in rows])


# What papers 000 and 004 say of their benchmarks' classes, printed beside workload_class.
PAPER_CLASSES = (
    "paper 000 (18 Rodinia kernels on a GTX 480, section 4 and 5.1): 4 compute-bound "
    "(>= 75% computation cycles: bp, hw, hs, patf), 14 memory-bound; lm: load critical path "
    "0.93 of the time, 34% of it overlapped computation, CRIT 0.88, LEAD 0.80; lcy: 67% of "
    "its load critical path is computation; 3 kernels with noticeable store stalls; CRIT "
    "under-predicts compute-bound kernels (patf) and STALL always over-predicts.",
    "paper 004 (SPEC 2006 on an out-of-order CPU, section 4.4.1): classes by memory intensity "
    "(> 3 last-level misses per 1000 instructions: 13 memory-intensive) and prefetching, not "
    "by shares of time.",
)


def class_tables(con: duckdb.DuckDBPyConnection, gpu: str, suite: str) -> tuple[Table, Table]:
    """(per category and paper 000 class: kernels and the mean and range of the shares;
    per kernel) from the stored query workload_class."""
    columns, rows = run_query(con, "workload_class", {"gpu_id": gpu, "suite": suite})
    at = {c: i for i, c in enumerate(columns)}
    summary_cols = ["category", "paper_000_class", "kernels", "computation_share",
                    "load_outstanding_share", "load_outstanding_min", "load_outstanding_max",
                    "crit_share", "crit_min", "crit_max", "lead_share", "stall_share",
                    "store_stall_share", "slowdown_top_to_low"]
    kernel_cols = ["kernel_id", "category", "paper_000_class", "computation_share",
                   "load_outstanding_share", "crit_share", "lead_share", "stall_share",
                   "store_stall_share", "slowdown_top_to_low"]
    summary = [tuple(r[at[c]] for c in summary_cols) for r in rows if r[at["kernel_id"]] is None]
    kernels = [tuple(r[at[c]] for c in kernel_cols) for r in rows
               if r[at["kernel_id"]] is not None]
    return Table(summary_cols, summary), Table(kernel_cols, kernels)
