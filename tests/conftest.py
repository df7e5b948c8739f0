"""Shared fixtures: real DuckDB files in tmp_path, never mocks."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

import gpudb

REPO = Path(__file__).resolve().parent.parent

# tests/train/test_wu_model.py's synthetic grid (build_synthetic, add_pstates) is used by tests in
# cli/, present/ and predictors/: its folder on the path lets them import it when run alone
sys.path.insert(0, str(Path(__file__).resolve().parent / "train"))
REAL_DATA = REPO.parent / "shared" / "data" / "real"
MAPPINGS = REPO / "fixtures" / "mappings"
TABLES = ("gpu", "pstate", "kernel", "experiment", "ingest_file", "run", "interval", "metric")

# Slow tests (more than about 5 s on 2 cores), marked slow here in one place so that
# `pytest -m "not slow"` is a quick loop; the README's command (and so CI) runs them all.
# A test is slow when it uses a fixture that simulates and evaluates a database (whichever test
# uses it first pays for it, so all of them are marked) or when its own body is slow. Entries:
# "fixture" (conftest's), "module.fixture" or "module::test" (module names are unique across
# tests/; parameters are ignored). These lists are the one place: no test file marks itself slow
# (tests/test_slow_marks.py checks both).
SLOW_FIXTURES = frozenset({
    "query_db",                       # tiny sweep + closed loop + evaluate + Equalizer
    "test_cli_commands.sim",          # the same through the CLI, control run twice
    "test_demo_report.summary_page",  # query_db evaluated for every objective
    "test_control.sim_db",            # two kernels swept, two controllers, every replay
    "test_seeds.seeded",              # two seeds swept through the CLI
    "test_clone.checked",             # three GTX 1080 Ti kernels cloned, swept and compared
})
SLOW_TESTS = frozenset({
    "test_api_interrupt::test_in_a_jupyter_kernel_the_file_opens_and_interrupt_ends_the_cell",
    "test_cli_commands::test_demo_on_a_two_kernel_suite_sweeps_once_and_prints_both_tables",
    "test_control::test_dynamic_optimal_is_never_worse_and_static_is_the_best_fixed_run",
    "test_dask_sweep::test_local_cluster_stores_the_same_runs_as_the_process_pool",
    "test_dask_sweep::test_a_worker_killed_mid_sweep_loses_no_run_and_duplicates_none",
    "test_docs::test_the_quickstart_runs_as_printed",
    "test_fuzz::test_fuzz_malformed_inputs_are_refused_in_one_line",
    "test_fuzz_round4::test_fuzz_round_four",
    "test_ingest::test_malformed_files_never_write",
    "test_plots::test_kernel_names_from_a_file_are_drawn_as_text",
    "test_sim_behaviour::test_full_suite_behaviour_on_gtx480",
    "test_sweep_signals::test_kill_9_leaves_no_process_and_the_same_command_resumes",
    "test_sweep_signals::test_sigterm_and_sighup_end_the_sweep_and_its_workers_and_keep_"
    "finished_runs",
    "test_trust::test_accuracy_from_a_hostile_file_equals_a_clean_copy",
    "test_trust::test_strings_from_the_file_reach_the_terminal_escaped",
    "test_wangchu_views::test_least_squares_recovers_the_parameters_up_to_a_common_scale",
    "test_wu_model::test_simulated_hd7970_grid_feeds_the_table_ii_features",
})


def is_slow(module: str, test: str, fixtures) -> bool:
    """Whether SLOW_FIXTURES or SLOW_TESTS name the test ``test`` of ``module``."""
    fixtures = set(fixtures)
    return f"{module}::{test}" in SLOW_TESTS or any(
        entry.rpartition(".")[2] in fixtures and entry.rpartition(".")[0] in ("", module)
        for entry in SLOW_FIXTURES)


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = getattr(getattr(item, "module", None), "__name__", "")
        if is_slow(module, getattr(item, "originalname", item.name),
                   getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


# A hand-made measured dataset (synthetic numbers, not measurements): two kernels at a 2x2
# grid; small enough to check every stored query's answer by hand.
TINY_CSV = """kernel,core_mhz,mem_mhz,time_ms,power_w,dram_util
alpha,500,800,4.0,100,0.5
alpha,1000,800,2.0,250,0.6
alpha,500,1600,3.0,120,0.7
alpha,1000,1600,1.5,300,0.8
beta,500,800,10.0,50,0.1
beta,1000,800,5.5,90,0.1
beta,500,1600,10.0,55,0.2
beta,1000,1600,5.0,110,0.2
"""
TINY_MAPPING = """\
description = "tiny hand-made dataset for tests (synthetic)"
[gpu]
gpu_id = "tiny"
name = "tiny test GPU"
n_sm = 2
[run]
suite = "tiny"
experiment = "tiny"
[columns]
kernel = "kernel"
core_mhz = "core_mhz"
mem_mhz = "mem_mhz"
time = { column = "time_ms", unit = "ms" }
power = { column = "power_w", unit = "W" }
"""


# Two synthetic kernels small enough for a sweep in a test (simulator suite format).
TINY_SUITE = """
name = "tiny"
description = "two synthetic kernels for tests"
[[kernel]]
name = "alu"
category = "compute"
description = "synthetic ALU loop"
ctas = 30
warps_per_cta = 4
[[kernel.phase]]
iterations = 20
body = [{op = "alu", n = 4, dep = "prev"}, {op = "alu", n = 2}]
[[kernel]]
name = "mem"
category = "memory"
description = "synthetic streaming loads"
ctas = 30
warps_per_cta = 4
[[kernel.phase]]
iterations = 20
body = [{op = "ld", id = "a", trans = 2}, {op = "alu", dep = "a"}]
"""

# synthetic: a DRAM-streaming phase, then a dependent ALU phase (the control tests' suites)
TWOPHASE_KERNEL = """
[[kernel]]
name = "twophase"
category = "phased"
description = "synthetic: a DRAM-streaming phase, then a dependent ALU phase"
ctas = 30
warps_per_cta = 8
[[kernel.phase]]
iterations = 30
body = [{op = "ld", id = "a", trans = 2, l2_hit = 0.1}, {op = "alu", dep = "a"}]
[[kernel.phase]]
iterations = 15
body = [{op = "alu", n = 4, dep = "prev"}]
"""




# A second measured GPU with tiny's kernel ids on another core grid (600/1200 MHz), so that
# a query or figure pooling GPUs would mix the two.
TINY2_CSV = """kernel,core_mhz,mem_mhz,time_ms,power_w
alpha,600,800,4.0,100
alpha,1200,800,2.5,200
beta,600,800,9.0,50
beta,1200,800,4.0,90
"""


def tiny_pair(folder: Path):
    """A writable connection to folder/two.duckdb holding the measured GPUs tiny (TINY_CSV)
    and tiny2 (TINY2_CSV), ingested with TINY_MAPPING."""
    from gpudb.sources.tabular.ingest import ingest
    from gpudb.sources.tabular.mapping import load_mapping

    con = gpudb.connect(folder / "two.duckdb")
    for gpu, data in (("tiny", TINY_CSV), ("tiny2", TINY2_CSV)):
        (folder / f"{gpu}.csv").write_text(data)
        (folder / f"{gpu}.toml").write_text(
            TINY_MAPPING.replace('gpu_id = "tiny"', f'gpu_id = "{gpu}"'))
        ingest(con, [folder / f"{gpu}.csv"], load_mapping(folder / f"{gpu}.toml"))
    return con


@pytest.fixture(scope="session")
def gtx480():
    """The shipped gtx480 simulator configuration (a frozen GpuConfig, safe to share)."""
    from sim.config import load_gpu

    return load_gpu("gtx480")


@pytest.fixture(scope="session")
def gtx480_64_mshrs(tmp_path_factory):
    """gtx480 as it was before issue 40 (64 MSHRs per SM, where the shipped file now has
    GPGPU-Sim's Fermi 32): the same parsed configuration, so the same run ids, for the tests
    that pin runs computed before that change (the simulator's code did not change)."""
    import re

    from sim.config import fixture_dir, load_gpu

    text = (fixture_dir("gpus") / "gtx480.toml").read_text()
    text, n = re.subn(r"(?m)^mshrs = 32\b.*$", "mshrs = 64", text)
    assert n == 1
    path = tmp_path_factory.mktemp("gpus") / "gtx480.toml"
    path.write_text(text)
    return load_gpu(path)


def reduced(name: str, ctas: int | None = None, scale: float = 1.0):
    """A default-suite kernel with fewer CTAs and/or iterations (same per-iteration program)."""
    import copy

    from sim.config import kernel_from_table, load_suite

    raw = copy.deepcopy(load_suite("default").kernel(name).raw)
    if ctas:
        raw["ctas"] = ctas
    for phase in raw["phase"]:
        phase["iterations"] = max(1, int(phase["iterations"] * scale))
    return kernel_from_table(raw, "default")


def col(result, name: str):
    """One interval column of a simulation result as a float array."""
    import numpy as np

    return np.asarray(result.intervals.column(name).to_pylist(), dtype=float)


def real_file(name: str) -> Path:
    """A file of ../shared/data/real, or skip the test when the folder is absent."""
    path = REAL_DATA / name
    if not path.exists():
        pytest.skip(f"{path} not found: the real datasets live in ../shared/data/real")
    return path


def invoke(*args, input=None):
    """`gpudb ARGS` in this process (CliRunner), every argument as text."""
    from click.testing import CliRunner

    from gpudb.cli import cli

    return CliRunner().invoke(cli, [str(a) for a in args], input=input)


def one_line_error(result) -> str:
    """The one line a refused command printed (exit 1, starting "Error: ")."""
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), lines
    return lines[0]


def row_counts(path) -> dict[str, int]:
    con = gpudb.connect(path, read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in TABLES}
    finally:
        con.close()


@pytest.fixture
def db_path(tmp_path) -> Path:
    """Path of a database file that does not exist yet."""
    return tmp_path / "test.duckdb"


def copy_db(source: Path, target: Path) -> Path:
    """A copy of the closed gpudb file ``source`` at ``target`` (its WAL too, where DuckDB left
    one): the same tables, views and rows as the file it copies."""
    shutil.copyfile(source, target)
    wal, target_wal = (p.with_name(p.name + ".wal") for p in (source, target))
    if wal.exists():
        shutil.copyfile(wal, target_wal)
    else:
        target_wal.unlink(missing_ok=True)
    return target


@pytest.fixture(scope="session")
def empty_db_template(tmp_path_factory) -> Path:
    """One migrated, empty gpudb file, made once per session. Never open it: fresh_db copies
    it. (Creating a file runs every migration and creates every view, about 0.3 s of CPU,
    0.8 s under load, most of it the views; a copy takes milliseconds, and its first open
    checks the views as any open does.)"""
    path = tmp_path_factory.mktemp("template") / "empty.duckdb"
    gpudb.connect(path).close()
    return path


@pytest.fixture
def fresh_db(db_path, empty_db_template) -> Path:
    """A migrated, empty gpudb file (a copy of the session's empty_db_template; it differs
    from a file created here only in gpudb_migration.applied_at)."""
    return copy_db(empty_db_template, db_path)


@pytest.fixture
def tiny_files(tmp_path) -> tuple[Path, Path]:
    """(CSV, mapping) of the tiny hand-made dataset."""
    csv_path = tmp_path / "tiny.csv"
    csv_path.write_text(TINY_CSV)
    mapping_path = tmp_path / "tiny.toml"
    mapping_path.write_text(TINY_MAPPING)
    return csv_path, mapping_path


@pytest.fixture(scope="session")
def tiny_db_template(tmp_path_factory, empty_db_template) -> Path:
    """The tiny dataset ingested once per session into a copy of empty_db_template. Never
    open it: tiny_db copies it."""
    from gpudb.sources.tabular.ingest import ingest
    from gpudb.sources.tabular.mapping import load_mapping

    tmp = tmp_path_factory.mktemp("tiny_template")
    (tmp / "tiny.csv").write_text(TINY_CSV)
    (tmp / "tiny.toml").write_text(TINY_MAPPING)
    path = copy_db(empty_db_template, tmp / "tiny.duckdb")
    con = gpudb.connect(path)
    try:
        ingest(con, [tmp / "tiny.csv"], load_mapping(tmp / "tiny.toml"))
    finally:
        con.close()
    return path


@pytest.fixture
def tiny_db(fresh_db, tiny_files, tiny_db_template) -> Path:
    """A gpudb file holding the tiny dataset, at fresh_db's path, beside tiny_files (a copy of
    the session's tiny_db_template: the same file names, rows and content hashes as ingesting
    tiny_files here; only timestamps differ)."""
    return copy_db(tiny_db_template, fresh_db)


@pytest.fixture
def tiny_suite_path(tmp_path) -> Path:
    """A simulator suite file with two tiny synthetic kernels (suite name 'tiny')."""
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_SUITE)
    return path


@pytest.fixture(scope="session")
def query_db(tmp_path_factory) -> Path:
    """Measured (the tiny CSV) and simulated runs (the tiny suite at every gtx480 core
    P-state), control results, one closed-loop run and one Equalizer run with its static
    baselines: every stored query has rows here."""
    from gpudb.control.kinds.equalizer import run_equalizer
    from gpudb.control.kinds.predictor import run_closed_loop
    from gpudb.control.results import evaluate
    from gpudb.simulate.sweep import sweep
    from gpudb.sources.tabular.ingest import ingest
    from gpudb.sources.tabular.mapping import load_mapping

    tmp = tmp_path_factory.mktemp("query_db")
    (tmp / "tiny.csv").write_text(TINY_CSV)
    (tmp / "tiny.toml").write_text(TINY_MAPPING)
    (tmp / "suite.toml").write_text(TINY_SUITE)
    db = tmp / "query.duckdb"
    con = gpudb.connect(db)
    ingest(con, [tmp / "tiny.csv"], load_mapping(tmp / "tiny.toml"))
    con.close()
    sweep(db, "gtx480", tmp / "suite.toml", mem_mhz=[924], interval_instructions=1000, jobs=1)
    run_closed_loop(db, "gtx480", tmp / "suite.toml", None, "crisp", "edp",
                    interval_instructions=1000)
    con = gpudb.connect(db)
    evaluate(con, ["crisp", "oracle"], ["edp", "energy"], suite="tiny")
    con.close()
    # Equalizer on one kernel, one mode, with its static baselines (equalizer_vs_static)
    run_equalizer(db, "gtx480", tmp / "suite.toml", ["mem"], modes=("performance",),
                  variants=("full",))
    return db


def csv_table(output: str, name: str) -> str:
    """One named table (header and rows) of a command's --format csv output, where each table
    follows a line '# table: NAME' (gpudb.cli.output_rows)."""
    tables: dict[str, list[str]] = {}
    current = None
    for line in output.splitlines():
        if line.startswith("# table: "):
            current = tables.setdefault(line[len("# table: "):], [])
        elif current is not None:
            current.append(line)
    assert name in tables, f"no table {name!r} in: {sorted(tables)}"
    return "\n".join(tables[name]) + "\n"
