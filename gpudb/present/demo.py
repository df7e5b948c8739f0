"""``gpudb demo``'s readable report: short tables with our figure and the paper's side by side
and a verdict, the figures written next to the database, and a closing paragraph in plain words.

The tables come from the same functions as ``gpudb evaluate accuracy`` / ``evaluate control``
(gpudb.analysis.evaluate); this module only chooses columns, rounds them and words the comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import duckdb

from gpudb.store.result import Table
from gpudb.analysis.verdict import (  # noqa: F401 - MATCH_*, verdict_rule: demo's names too
    MATCH_POINTS,
    MATCH_SHARE,
    verdict,
    verdict_rule,
)
from gpudb.present.output import Fixed
from gpudb.store.db import first_row, stored_engines

FIGURES_DIR = "gpudb-figures"

def one_decimal(value):
    """Percentages to one decimal (printed as 7.0, and -0.04 as 0.0); other cells unchanged."""
    if isinstance(value, float) and math.isfinite(value):
        return Fixed(round(value, 1) + 0.0, 1)  # + 0.0: no "-0.0"
    return value


def readable(table: Table, rename: dict[str, str] | None = None) -> Table:
    """``table`` without its all-NULL columns, ``*_pct`` columns to one decimal under a
    ``%`` header (``600_mhz_pct`` -> ``600 MHz %``), other names from ``rename``."""
    rename = rename or {}
    keep = [i for i, _ in enumerate(table.columns)
            if any(row[i] is not None for row in table.rows)]
    columns = []
    for i in keep:
        name = table.columns[i]
        if name in rename:
            columns.append(rename[name])
        elif name.endswith("_pct"):
            columns.append(name[:-4].replace("_mhz", " MHz").replace("_", " ") + " %")
        else:
            columns.append(name.replace("_", " "))
    rows = [tuple(one_decimal(row[i]) if table.columns[i].endswith("_pct") else row[i]
                  for i in keep) for row in table.rows]
    return Table(columns, rows)


# The demo's short headers (its tables fit 100 columns; the captions printed above them say
# what each means): the accuracy table's target columns are the target core MHz alone.
ALL_TARGETS = "all"              # MAPE % over every target
PAPER_MAPE = "paper"             # paper 000's MAPE %
EDP = "EDP %"                    # EDP saving %, the papers' controller (or a bound)
PAPER_EDP = "paper"              # paper 000's EDP saving %
GUARDED_EDP = "g EDP %"          # the same controller with gpudb's guard
GUARDED_TIME = "g time %"
GUARDED_VERDICT = "g verdict"


def accuracy_summary(per_predictor: Table) -> Table:
    """Per predictor: MAPE (%) to each target P-state (columns named by the target core MHz),
    over all, paper 000's average and the verdict (the per-kernel table is the mape_by_kernel
    figure)."""
    cols = per_predictor.columns
    targets = [c for c in cols if c.endswith("_mhz_pct")]
    pick = ["predictor", *targets, "mape_pct", "paper_000_pct"]
    at = [cols.index(c) for c in pick]
    rows = []
    for row in per_predictor.rows:
        values = [row[i] for i in at]
        rows.append((*values, verdict(values[-2], values[-1])))
    return readable(Table([*pick, "verdict"], rows),
                    {**{t: t.removesuffix("_mhz_pct") for t in targets},
                     "mape_pct": ALL_TARGETS, "paper_000_pct": PAPER_MAPE})


def savings_summary(control: Table) -> Table:
    """One row per policy: the offline bounds, and each predictor's controller as the paper
    runs it and with gpudb's guard (EDP saving and time change against the highest P-state,
    mean over kernels), paper 000's EDP saving and the verdict on each of the two."""
    cols = control.columns
    get = {name: cols.index(name) for name in cols}
    by_policy: dict[str, dict] = {}
    for row in control.rows:
        policy = row[get["policy"]].removeprefix("replay ")
        entry = by_policy.setdefault(policy, {})
        entry[row[get["guard"]] or "bound"] = row
    out = []
    for policy, entry in by_policy.items():
        def cell(guard, name, entry=entry):
            row = entry.get(guard)
            return None if row is None else row[get[name]]

        paper = next((cell(g, "paper_000_edp_saving_pct") for g in ("paper", "bound")
                      if cell(g, "paper_000_edp_saving_pct") is not None), None)
        if "bound" in entry:
            out.append((policy, cell("bound", "edp_saving_pct"),
                        cell("bound", "time_change_pct"), None, None, paper,
                        verdict(cell("bound", "edp_saving_pct"), paper), None))
        else:
            out.append((policy, cell("paper", "edp_saving_pct"), cell("paper", "time_change_pct"),
                        cell("guarded", "edp_saving_pct"), cell("guarded", "time_change_pct"),
                        paper, verdict(cell("paper", "edp_saving_pct"), paper),
                        verdict(cell("guarded", "edp_saving_pct"), paper)))
    return readable(Table(["policy", "edp_pct", "time_pct", "guarded_edp_pct",
                           "guarded_time_pct", "paper_pct", "verdict", "guarded_verdict"], out),
                    {"edp_pct": EDP, "time_pct": "time %", "guarded_edp_pct": GUARDED_EDP,
                     "guarded_time_pct": GUARDED_TIME, "paper_pct": PAPER_EDP,
                     "verdict": "verdict", "guarded_verdict": GUARDED_VERDICT})


# Paper 004 section 4.3 (energy objective): its best controller realises 65% of the dynamic
# optimal's energy saving and 75% of perfect memoryless's.
PAPER_004_FRACTION = {"dynamic": 0.65, "memoryless": 0.75}


def objectives_summary(tables: dict[str, Table]) -> Table:
    """The bounds and gpudb's guarded controllers under every objective (tables by objective:
    control_table of 'edp', 'ed2p', 'energy', 'energy_perf' in one scope): EDP and ED2P
    saving, energy saving with the energy objective and its fraction of the dynamic optimal's
    and of perfect memoryless's saving (paper 004 section 4.3's definitions, where its 0.65
    and 0.75 apply), and energy within the slowdown bound: its saving, mean and worst
    kernel's slowdown."""
    def rows(objective):
        t = tables[objective]
        at = {c: i for i, c in enumerate(t.columns)}
        return {r[at["policy"]]: {c: r[i] for c, i in at.items()} for r in t.rows
                if r[at["guard"]] in ("", "guarded")}

    edp, ed2p, energy, perf = (rows(o) for o in ("edp", "ed2p", "energy", "energy_perf"))
    out = []
    for policy, e in edp.items():
        def get(table, name, policy=policy):
            return table.get(policy, {}).get(name)

        slowdown = get(perf, "time_change_pct")
        worst = get(perf, "worst_time_change_pct")
        out.append((policy.removeprefix("replay "), e["edp_saving_pct"],
                    get(ed2p, "ed2p_saving_pct"), get(energy, "energy_saving_pct"),
                    _fraction(get(energy, "fraction_of_potential")),
                    _fraction(get(energy, "fraction_of_memoryless")),
                    get(perf, "energy_saving_pct"), slowdown, worst))
    return readable(Table(["policy", "edp_pct", "ed2p_pct", "energy_pct", "of_dynamic",
                           "of_memoryless", "perf_energy_pct", "perf_slowdown_pct",
                           "perf_worst_pct"], out),
                    {"edp_pct": "EDP %", "ed2p_pct": "ED2P %", "energy_pct": "E %",
                     "of_dynamic": "E/dyn", "of_memoryless": "E/mless",
                     "perf_energy_pct": "1% E %", "perf_slowdown_pct": "slow %",
                     "perf_worst_pct": "worst %"})


def _fraction(value):
    """A fraction of a bound to two decimals (a bound itself reads 1.00)."""
    if isinstance(value, float) and math.isfinite(value):
        return Fixed(round(value, 2) + 0.0, 2)
    return value


def kernel_length_line(con: duckdb.DuckDBPyConnection, gpu: str, suite: str,
                       seed: int | None, scope_name: str) -> str:
    """One line: how long the kernels run (intervals at the highest core P-state, min-max and
    median, of how many warp instructions), on which seed, in which energy scope, and, where
    the runs are the sampled engine's, that they are (the figures are then that engine's
    approximation of the reference's)."""
    # first_row reads the result to its end: a result left open by fetchone() makes DuckDB
    # refuse the connection's next query (the report runs its tables after this)
    row = first_row(con.execute("""
        WITH per_kernel AS (
            SELECT c.kernel_id, count(*) AS n, any_value(r.interval_instructions) AS size
            FROM control_interval AS c JOIN run AS r USING (run_id)
            WHERE c.gpu_id = ? AND c.kernel_id LIKE ? || '/%' AND c.seed = ?
              AND c.core_mhz = (SELECT max(core_mhz) FROM control_interval AS t
                                WHERE t.gpu_id = c.gpu_id AND t.kernel_id = c.kernel_id)
            GROUP BY c.kernel_id)
        SELECT count(*), min(n), median(n), max(n), min(size), max(size) FROM per_kernel""",
                      [gpu, suite, seed]))
    kernels, low, mid, high, size, size_hi = row
    if not kernels:
        return ""
    size_text = f"{size:,}" if size == size_hi else f"{size:,}-{size_hi:,}"
    engine = ("; simulated by the sampled engine (faster, approximate: `gpudb bench engine` "
              "measures it against the reference engine)"
              if stored_engines(con) == ["sampled"] else "")
    return (f"{kernels} kernels of {low}-{high} intervals (median {mid:g}) of {size_text} warp "
            f"instructions at the highest P-state; seed {seed} (one seed: "
            f"`gpudb evaluate control --seeds 0,1,2` gives means with 95% intervals); "
            f"energy in {scope_name}{engine}")


def _named(rows: list[tuple], kind: str) -> str:
    return ", ".join(f"{r[0]} ({r[1]:.1f}% against {r[2]:g}%)" for r in rows if r[3] == kind)


def _compared(table: Table, ours: str, paper: str, verdict_column: str = "verdict") -> list[tuple]:
    """(name, our figure, the paper's, verdict) of the rows with a paper figure."""
    if paper not in table.columns or verdict_column not in table.columns:
        return []
    at = [table.columns.index(c) for c in (ours, paper, verdict_column)]
    return [(r[0], *(r[i] for i in at)) for r in table.rows if r[at[1]] is not None]


def _never_moved(savings: Table) -> list[str]:
    """Controllers whose guarded runs saved nothing and changed no time: they stayed at the
    highest P-state (proportional predicts every clock costs; the guard refuses stall's
    moves), so a paper's 0% is no agreement to report."""
    cols = savings.columns
    if GUARDED_EDP not in cols or GUARDED_TIME not in cols:
        return []
    edp, time = cols.index(GUARDED_EDP), cols.index(GUARDED_TIME)
    return [r[0] for r in savings.rows if r[edp] == 0 and r[time] == 0 and r[0] != "oracle"]


def closing_paragraph(accuracy: Table, savings: Table) -> str:
    """Where gpudb agrees with the papers and where it does not, in words, from the two
    summary tables (their verdict columns)."""
    acc = _compared(accuracy, ALL_TARGETS, PAPER_MAPE)
    sav = _compared(savings, EDP, PAPER_EDP)
    s_cols = savings.columns
    sentences = [
        (acc, "matches", "Prediction error agrees with paper 000 for {}."),
        (acc, "above paper", "It is higher than the paper reports for {}."),
        (acc, "below paper", "It is lower for {}."),
        (sav, "matches", "EDP savings agree for {}."),
        (sav, "below paper", "The papers' own controllers, run as the papers give them, save "
                             "less EDP than paper 000 reports: {}."),
        (sav, "above paper", "They save more for {}.")]
    parts = [text.format(_named(rows, kind)) for rows, kind, text in sentences
             if _named(rows, kind)]
    # gpudb's guarded controllers beside the same figures (the oracle is a bound); one that
    # never left the highest P-state (no time change, no saving) agrees with a 0% trivially
    still = _never_moved(savings)
    guarded_rows = [r for r in _compared(savings, GUARDED_EDP, PAPER_EDP, GUARDED_VERDICT)
                    if r[0] != "oracle" and r[0] not in still]
    if still:
        parts.append(f"With gpudb's guard {', '.join(still)} never "
                     f"move{'s' if len(still) == 1 else ''} the clock (0.0% EDP saving).")
    for kind, text in (("matches", "With gpudb's guard, EDP savings agree for {}."),
                       ("below paper", "With gpudb's guard they are below the paper for {}."),
                       ("above paper", "With gpudb's guard they are above it for {}.")):
        if _named(guarded_rows, kind):
            parts.append(text.format(_named(guarded_rows, kind)))
    # the oracle predicts each interval's time exactly: a bound, not a controller to pick
    guarded = [r for r in savings.rows if GUARDED_EDP in s_cols
               and r[s_cols.index(GUARDED_EDP)] is not None and r[0] != "oracle"]
    if guarded:
        best = max(guarded, key=lambda r: r[s_cols.index(GUARDED_EDP)])
        parts.append(f"With gpudb's guard the best controller is {best[0]} "
                     f"({best[s_cols.index(GUARDED_EDP)]:.1f}% EDP saving).")
    parts.append("The kernels are synthetic, not the papers' benchmarks; README.md, \"Where "
                 "gpudb differs from the papers\", measures the cause of each difference.")
    return " ".join(parts)


def demo_figures(gpu: str, suite: str, kernel_id: str | None) -> list[tuple[str, dict]]:
    """The plots the demo draws: (plot name, its parameters), each exactly what `gpudb plot
    NAME` with those -p draws (figure_stem names the file after them). The savings figure
    shows gpudb's guarded controllers (savings_summary_guarded.png; the papers' unguarded
    ones are in the table and `gpudb plot savings_summary`); the clock trace crisp_gpudb's
    controller as the papers give it, unguarded. Control is in paper 000's energy scope: the
    chip's, no board power (the plots' default)."""
    scope = {"gpu_id": gpu, "suite": suite}
    figures = [("error_by_target", scope), ("mape_by_kernel", scope),
               ("savings_summary", {**scope, "objective": "edp", "guard": "guarded",
                                    "scope": "chip"})]
    if kernel_id:
        figures.append(("clock_trace", {"gpu_id": gpu, "kernel_id": kernel_id,
                                        "predictor": "crisp_gpudb", "guard": "paper",
                                        "scope": "chip"}))
    return figures


def demo_kernel(con: duckdb.DuckDBPyConnection, suite: str) -> str | None:
    """The kernel of the demo's clock trace: a two-slope kernel shows the controllers apart
    best; else the suite's first."""
    rows = con.execute("SELECT kernel_id FROM kernel WHERE suite = ? "
                       "ORDER BY kernel_id <> ?, kernel_id LIMIT 1",
                       [suite, f"{suite}/twoslope_lm"]).fetchall()
    return rows[0][0] if rows else None


def figure_stem(name: str, params: dict) -> str:
    """The file name (without suffix) of a demo figure: the plot's name, the clock trace's
    kernel, and the guard where it is not the plot's default, so that a file of one name
    always holds one drawing."""
    from gpudb.present import plots

    stem = name
    if name == "clock_trace":
        stem += f"_{params['kernel_id']}"
    guard = params.get("guard")
    if guard and guard != plots.get(name).defaults.get("guard"):
        stem += f"_{guard}"
    return stem.replace("/", "_")


def redraw_command(name: str, params: dict, out: str, width: int) -> str:
    """The `gpudb plot` command that draws demo figure (name, params) again into ``out``: a
    -p for each parameter the plot does not default to that value, shell-quoted, wrapped
    with ``\\`` continuations (the later lines indented 2) into lines of at most ``width``
    characters where no single token is longer."""
    import shlex

    from gpudb.present import plots

    defaults = plots.get(name).defaults
    words = [f"gpudb plot {name}",
             *(f"-p {k} {shlex.quote(str(v))}" for k, v in params.items()
               if defaults.get(k) != str(v)),
             f"--out {shlex.quote(out)}"]
    lines = [words[0]]
    for word in words[1:]:
        room = width - 2 - (2 if len(lines) > 1 else 0)  # ' \\' and the indent
        if len(lines[-1]) + 1 + len(word) <= room or not lines[-1].strip():
            lines[-1] += " " + word
        else:
            lines.append(word)
    return " \\\n  ".join(lines)


def write_figures(con: duckdb.DuckDBPyConnection, folder: Path,
                  figures: list[tuple[str, dict]]) -> list[Path]:
    """Render ``figures`` as PNGs into ``folder`` (made if missing); returns their paths.
    Raises GpudbError (the install hint) without matplotlib, before making the folder."""
    from gpudb.present import plots

    plots.matplotlib_canvas()
    folder.mkdir(exist_ok=True)
    out = []
    for name, params in figures:
        path = folder / f"{figure_stem(name, params)}.png"
        # the metadata's command is the one the demo prints under the figure (on one line),
        # so the printed command run again writes the same file
        command = redraw_command(name, params, path.name, width=10**6)
        out.append(plots.render(con, name, {k: str(v) for k, v in params.items()}, path,
                                command=command))
    return out


@dataclass(frozen=True)
class Summary:
    """The demo's summary of one GPU and suite: the kernel-length line, the three tables
    (accuracy_summary, savings_summary, objectives_summary, chip energy) and the closing
    paragraph, as `gpudb demo` prints them."""
    gpu: str
    suite: str
    seed: int | None
    length: str
    accuracy: Table
    savings: Table
    objectives: Table
    paragraph: str


def summary(con: duckdb.DuckDBPyConnection, gpu: str, suite: str,
            seed: int | None) -> Summary:
    """The demo's tables and paragraph from what the database holds (the stored predictions
    and control results of one seed: nothing is simulated or replayed here)."""
    from gpudb.analysis.evaluate import accuracy_tables, control_table
    from gpudb.control.energy import OBJECTIVES

    per_predictor, _ = accuracy_tables(con, gpu, suite, None, "run", seed)
    by_objective = {o: control_table(con, gpu, suite, o, 1.0, "chip", seed) for o in OBJECTIVES}
    accuracy = accuracy_summary(per_predictor)
    savings = savings_summary(by_objective["edp"])
    return Summary(gpu, suite, seed,
                   kernel_length_line(con, gpu, suite, seed,
                                      "chip scope (no board power, papers 000 and 004's)"),
                   accuracy, savings, objectives_summary(by_objective),
                   closing_paragraph(accuracy, savings))
