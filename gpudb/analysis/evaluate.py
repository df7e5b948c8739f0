"""`gpudb evaluate`: the papers' evaluations as tables, on the database's runs.

Accuracy (paper 000 section 5.1, figures 8-9): every predictor from the base core P-state to
every other one, per target and per kernel, next to the figures paper 000 reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from gpudb.predictors import names, registry
from gpudb.store.db import GpudbError, first_row
from gpudb.store.queries import run_query
from gpudb.store.result import Table

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
    if suite is not None and con is not None:
        # a suite is the kernel_ids' prefix; one the GPU has no run of is a typo, not a result
        suites = [r[0] for r in con.execute(
            "SELECT DISTINCT split_part(kernel_id, '/', 1) FROM run WHERE gpu_id = ? "
            "ORDER BY 1", [gpu]).fetchall()]
        if suite not in suites:
            raise GpudbError(f"no runs of suite {suite!r} on {gpu} (its suites: "
                             f"{', '.join(map(repr, suites)) or 'none'})")
    return Scope(gpu, suite, False)


def check_base_mhz(con: duckdb.DuckDBPyConnection, scope: Scope, base_mhz: float | None) -> None:
    """Raise GpudbError unless ``base_mhz`` (None: the default) is a core clock the scope's
    fixed runs were made at: predictions start only from a measured setting."""
    if base_mhz is None:
        return
    clocks = [r[0] for r in con.execute(
        "SELECT DISTINCT core_mhz FROM run WHERE gpu_id = ? AND policy = 'fixed' "
        "AND (CAST(? AS TEXT) IS NULL OR kernel_id LIKE ? || '/%') ORDER BY 1",
        [scope.gpu, scope.suite, scope.suite]).fetchall()]
    if float(base_mhz) not in clocks:
        raise GpudbError(f"no runs of {scope.gpu} at a core clock of {base_mhz:g} MHz to "
                         f"predict from (its core clocks: {', '.join(f'{c:g}' for c in clocks)})")


def default_base_mhz(con: duckdb.DuckDBPyConnection, scope: Scope) -> tuple[float, str] | None:
    """The base core MHz of an accuracy evaluation given no --base-mhz, where it is not the
    GPU's highest core P-state (the stored queries' default), and why: the core clock the GPU's
    current Wu model was trained at, where the scope has fixed runs there, since the model
    predicts from its base only. None: the queries' default."""
    row = first_row(con.execute(
        "SELECT m.base_core_mhz, m.model_id FROM wu_model_current AS m "
        "JOIN gpu_top_core AS t USING (gpu_id) WHERE m.gpu_id = ? "
        "AND m.base_core_mhz <> t.top_core_mhz AND EXISTS (SELECT 1 FROM run AS r "
        "WHERE r.gpu_id = m.gpu_id AND r.policy = 'fixed' AND r.core_mhz = m.base_core_mhz "
        "AND (CAST(? AS TEXT) IS NULL OR starts_with(r.kernel_id, ? || '/')))",
        [scope.gpu, scope.suite, scope.suite]))
    if row is None:
        return None
    return float(row[0]), f"the core clock wu model {row[1]} was trained at"


def wu_base_note(con: duckdb.DuckDBPyConnection, gpu: str, base_mhz: float | None
                 ) -> str | None:
    """Why Wu et al.'s model has no predictions from ``base_mhz`` (None: the GPU's highest core
    P-state) where the GPU has a model trained at another core clock; None otherwise."""
    row = first_row(con.execute(
        "SELECT m.base_core_mhz, m.model_id, t.top_core_mhz FROM wu_model_current AS m "
        "JOIN gpu_top_core AS t USING (gpu_id) WHERE m.gpu_id = ?", [gpu]))
    if row is None:
        return None
    trained, model_id, top = row
    base = top if base_mhz is None else float(base_mhz)
    if base == trained:
        return None
    return (f"wu model {model_id} predicts from the core clock it was trained at, "
            f"{trained:g} MHz, not {base:g} MHz: --base-mhz {trained:g}")


def interval_seeds(con: duckdb.DuckDBPyConnection, scope: Scope) -> list[int]:
    """The seeds of the run families control can be replayed on (view control_interval) in
    the scope, ascending."""
    return [r[0] for r in con.execute(
        "SELECT DISTINCT seed FROM control_interval WHERE gpu_id = ? "
        "AND (CAST(? AS TEXT) IS NULL OR kernel_id LIKE ? || '/%') ORDER BY seed",
        [scope.gpu, scope.suite, scope.suite]).fetchall()]


def check_same_kernels(con: duckdb.DuckDBPyConnection, scope: Scope, seeds: list[int],
                       relation: str = "control_interval") -> None:
    """Raise GpudbError unless every seed has the same kernels in ``relation``
    (control_interval, or run for the fixed runs): a mean over seeds of figures over
    different kernels would compare other suites, not other seeds."""
    where = "policy = 'fixed' AND " if relation == "run" else ""
    rows = con.execute(
        f"SELECT kernel_id, list(DISTINCT seed) FROM {relation} WHERE {where}gpu_id = ? "
        "AND (CAST(? AS TEXT) IS NULL OR kernel_id LIKE ? || '/%') "
        "AND list_contains(?, seed) GROUP BY kernel_id ORDER BY kernel_id",
        [scope.gpu, scope.suite, scope.suite, seeds]).fetchall()
    for seed in seeds:
        lacking = [k for k, have in rows if seed not in have]
        if lacking:
            raise GpudbError(
                f"seed {seed} lacks {'a run family' if relation != 'run' else 'runs'} of "
                f"{len(lacking)} of the {len(rows)} kernels the other seeds have (e.g. "
                f"{lacking[0]!r}): a mean over seeds needs the same kernels in each; sweep "
                f"them with --seed {seed}")


def has_interval_runs(con: duckdb.DuckDBPyConnection, scope: Scope) -> bool:
    """Whether control can be replayed: the scope has kernels in control_interval."""
    return first_row(con.execute(
        "SELECT count(*) FROM control_interval WHERE gpu_id = ? "
        "AND (CAST(? AS TEXT) IS NULL OR kernel_id LIKE ? || '/%')",
        [scope.gpu, scope.suite, scope.suite]))[0] > 0


def missing_sweep(con: duckdb.DuckDBPyConnection, gpu: str, suite: str,
                  seed: int | None = None) -> bool:
    """True when the database has no fixed simulated runs of `suite` on `gpu` (of `seed`;
    None: of any seed) with the counters this gpudb's predictors read (runs simulated
    before the issue-slot counters of schema/0004 leave them NULL, and a sweep adds current
    runs beside them)."""
    return first_row(con.execute(
        "SELECT count(*) FROM run AS r WHERE gpu_id = ? AND kernel_id LIKE ? || '/%' "
        "AND policy = 'fixed' AND source = 'sim' "
        "AND (CAST(? AS BIGINT) IS NULL OR seed = CAST(? AS BIGINT)) "
        "AND EXISTS (SELECT 1 FROM interval AS i "
        "WHERE i.run_id = r.run_id AND i.crisp_slot_lcp_cycles IS NOT NULL)",
        [gpu, suite, seed, seed]))[0] == 0


def interval_column(figure: str) -> str:
    """The name of the column holding ``figure``'s 95% interval half-width:
    edp_saving_pct -> edp_saving_ci95_pct, switches -> switches_ci95."""
    if figure.endswith("_pct"):
        return figure.removesuffix("_pct") + "_ci95_pct"
    return figure + "_ci95"


def over_seeds(per_seed: list[Table], keys: list[str],
               constants: tuple[str, ...] = ()) -> Table:
    """One table from the same table computed on each seed's runs: rows matched by their
    ``keys`` columns (in the first table's order, then rows only later seeds have), each
    other column the mean over the seeds with, after it, the half-width of its 95% interval
    (gpudb.analysis.stats.mean_interval: Student's t with n - 1 degrees of freedom over the per-seed
    figures), and a column ``seeds``: how many seeds the row's figures come from. Columns in
    ``constants`` (the papers' figures) are the same on every seed and are kept as they are.
    With a single table, that table unchanged."""
    from gpudb.analysis.stats import mean_interval

    if len(per_seed) == 1:
        return per_seed[0]
    columns = per_seed[0].columns
    key_at = [columns.index(k) for k in keys]
    rows: dict[tuple, list[tuple]] = {}
    for table in per_seed:
        if table.columns != columns:
            raise GpudbError(f"the seeds' tables differ in their columns ({', '.join(columns)} "
                             f"against {', '.join(table.columns)}): each seed needs runs at "
                             "the same settings")
        for row in table.rows:
            rows.setdefault(tuple(row[i] for i in key_at), []).append(row)
    out_columns: list[str] = []
    for name in columns:
        out_columns.append(name)
        if name not in keys and name not in constants:
            out_columns.append(interval_column(name))
    out_columns.append("seeds")
    out_rows = []
    for group in rows.values():
        row: list = []
        for i, name in enumerate(columns):
            if name in keys or name in constants:
                row.append(group[0][i])
            else:
                mean, half, _ = mean_interval(r[i] for r in group)
                row += [mean, half]
        out_rows.append((*row, len(group)))
    return Table(out_columns, out_rows)


def predictor_coverage(con: duckdb.DuckDBPyConnection, gpu: str, suite: str | None,
                       granularity: str = "run", base_mhz: float | None = None
                       ) -> tuple[list[str], list[str]]:
    """(predictors with at least one scored prediction on the GPU's runs from the base core
    MHz, those without), each in table order; ``base_mhz`` None: the GPU's highest core
    P-state, the queries' default. The interval-level models read per-interval counters,
    which measured runs lack; Wu et al.'s model needs a model trained for the GPU, and
    predicts from the setting it was trained at only."""
    scored = {row[0] for row in con.execute(
        "SELECT DISTINCT predictor FROM core_scaling_error WHERE gpu_id = ? "
        "AND is_current IS NOT FALSE AND granularity = ? "
        "AND base_core_mhz = coalesce(CAST(? AS DOUBLE), top_core_mhz) "
        "AND (CAST(? AS TEXT) IS NULL OR kernel_id LIKE ? || '/%')",
        [gpu, granularity, base_mhz, suite, suite]).fetchall()}
    return ([p for p in PREDICTORS if p in scored], [p for p in PREDICTORS if p not in scored])


def accuracy_tables(con: duckdb.DuckDBPyConnection, gpu: str, suite: str | None,
                    base_mhz: float | None, granularity: str = "run",
                    seed: int | None = None) -> tuple[Table, Table]:
    """(per-predictor MAPE by target setting, with the paper's figure; per-kernel MAPE by
    predictor), on one seed's runs (None: every seed's, each prediction against a run of its
    own seed). A target column is named by its core MHz, and by core and memory MHz where
    the GPU's runs have several memory clocks."""
    params = {"gpu_id": gpu, "suite": suite, "granularity": granularity,
              "base_mhz": None if base_mhz is None else str(base_mhz),
              "seed": None if seed is None else str(seed)}
    columns, found = run_query(con, "mape_by_predictor", params)
    # read by name: the query leads with gpu_id, one GPU here
    rows = [(r["predictor"], r["target_core_mhz"], r["target_mem_mhz"], r["mape_pct"],
             r["max_ape_pct"], r["n"]) for r in (dict(zip(columns, x, strict=True))
                                                  for x in found)]
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
        "gpu_id": gpu, "suite": suite, "base_mhz": params["base_mhz"], "seed": params["seed"]})
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
                  max_loss_pct: float, scope: str = "run", seed: int | None = None) -> Table:
    """Mean savings per policy over the suite's kernels (savings_summary's 'all' rows) in
    energy ``scope`` ('run' or 'chip'), the worst kernel's, each policy's fraction of the
    potential saving (paper 004 section 4.3) against the dynamic optimal as stitched, as run
    in the closed loop, the better of that and static optimal, and perfect memoryless, and,
    in chip scope (the papers'), paper 000's EDP figure beside the papers' controller.
    Offline policies first, then each predictor's replay under each guard. On one seed's
    results (None: every seed's, pooled)."""
    params = {"gpu_id": gpu, "suite": suite, "objective": objective,
              "max_loss_pct": str(max_loss_pct), "scope": scope,
              "seed": None if seed is None else str(seed)}
    columns, rows = run_query(con, "savings_summary", params)
    at = {c: i for i, c in enumerate(columns)}
    fcols, fractions = run_query(con, "fraction_of_potential", params)
    f_at = {c: i for i, c in enumerate(fcols)}
    fraction = {(r[f_at["policy"]], r[f_at["predictor"]], r[f_at["guard"]]):
                tuple(r[f_at[c]] for c in ("fraction_realised", "fraction_of_run_bound",
                                           "fraction_of_achievable", "fraction_of_memoryless"))
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
                   "store_stall_share", "slowdown_top_to_low", "intervals"]
    summary = [tuple(r[at[c]] for c in summary_cols) for r in rows if r[at["kernel_id"]] is None]
    kernels = [tuple(r[at[c]] for c in kernel_cols) for r in rows
               if r[at["kernel_id"]] is not None]
    return Table(summary_cols, summary), Table(kernel_cols, kernels)


def with_verdict(table: Table, ours: str, paper: str, name: str = "verdict") -> Table:
    """``table`` with a column ``name`` (analysis.verdict) of ``ours`` against ``paper``,
    counting a paper figure inside ours' 95% interval (column interval_column(ours)) as a
    match; unchanged when no row has a paper figure."""
    from gpudb.analysis.verdict import verdict

    at = {c: i for i, c in enumerate(table.columns)}
    if paper not in at or all(r[at[paper]] is None for r in table.rows):
        return table
    half = at.get(interval_column(ours))
    return Table([*table.columns, name],
                 [(*r, verdict(r[at[ours]], r[at[paper]], None if half is None else r[half])
                   or None) for r in table.rows])


def control_over_seeds(con: duckdb.DuckDBPyConnection, gpu: str, suite: str, objective: str,
                       max_loss_pct: float, seeds: list[int], scope: str = "run") -> Table:
    """control_table on each seed's results in energy ``scope``, as the mean over the seeds
    with 95% intervals (over_seeds) and, with several seeds, the verdict on paper 000's EDP
    figure."""
    table = over_seeds([control_table(con, gpu, suite, objective, max_loss_pct, scope, seed)
                        for seed in seeds], ["policy", "guard"], ("paper_000_edp_saving_pct",))
    return with_verdict(table, "edp_saving_pct", "paper_000_edp_saving_pct") \
        if len(seeds) > 1 else table


def accuracy_over_seeds(con: duckdb.DuckDBPyConnection, gpu: str, suite: str | None,
                        base_mhz: float | None, granularity: str,
                        seeds: list[int]) -> tuple[Table, Table]:
    """accuracy_tables on each seed's runs, as the mean over the seeds with 95% intervals
    (over_seeds) and, with several seeds, the verdict on paper 000's MAPE."""
    per_seed = [accuracy_tables(con, gpu, suite, base_mhz, granularity, seed) for seed in seeds]
    per_predictor = over_seeds([p for p, _ in per_seed], ["predictor"], ("paper_000_pct",))
    per_kernel = over_seeds([k for _, k in per_seed], ["gpu_id", "kernel_id", "category"])
    if len(seeds) > 1:
        per_predictor = with_verdict(per_predictor, "mape_pct", "paper_000_pct")
    return per_predictor, per_kernel


def equalizer_over_seeds(tables: list[Table]) -> Table:
    """equalizer_vs_static's rows of each seed as the mean over the seeds with 95% intervals
    (over_seeds) and, with several seeds, verdicts on paper 001's speedup and on its energy
    change, set against our chip energy (the paper's GPUWattch scope has no board power)."""
    keys = ["gpu_id", "policy", "category", "kernel_id"]
    counts = [{tuple(r[t.columns.index(k)] for k in keys): r[t.columns.index("kernels")]
               for r in t.rows} for t in tables]
    if any(c != counts[0] for c in counts[1:]):
        raise GpudbError("the seeds' Equalizer runs cover other kernels: a mean over seeds "
                         "needs the same kernels in each (run evaluate equalizer with --run)")
    table = over_seeds(tables, keys,
                       ("kernels", "paper_001_speedup_pct", "paper_001_energy_change_pct"))
    if len(tables) < 2:
        return table
    table = with_verdict(table, "speedup_pct", "paper_001_speedup_pct", "speedup_verdict")
    return with_verdict(table, "chip_energy_change_pct", "paper_001_energy_change_pct",
                        "energy_verdict")


def length_line(con: duckdb.DuckDBPyConnection, gpu: str, suite: str) -> str | None:
    """One line: how long the suite's kernels run at the highest core P-state, in intervals
    (min, median, max) of how many warp instructions (query workload_class); None if no
    kernel has per-interval counters there."""
    columns, rows = run_query(con, "workload_class", {"gpu_id": gpu, "suite": suite})
    at = {c: i for i, c in enumerate(columns)}
    rows = [r for r in rows if r[at["kernel_id"]] is not None]
    if not rows:
        return None
    counts = sorted(int(r[at["intervals"]]) for r in rows)
    sizes = sorted({int(r[at["interval_instructions"]]) for r in rows})
    mid = len(counts) // 2
    median = counts[mid] if len(counts) % 2 else (counts[mid - 1] + counts[mid]) / 2
    return (f"kernel length at the highest core P-state: {counts[0]}-{counts[-1]} intervals "
            f"(median {median:g}) of {' or '.join(f'{n:,}' for n in sizes)} warp instructions, "
            f"{len(counts)} kernels")
