"""A sweep is bounded before anything runs (issue 41 item 4): runs per sweep, seeds, interval
sizes and worker processes, each refused (or capped) in one line with the bound."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner
from conftest import one_line_error

from gpudb.cli import cli
from sim.config import ConfigError, load_gpu, load_suite
from sim.sweep import MAX_SWEEP_RUNS, plan, worker_count


def test_a_grid_larger_than_a_sweep_may_plan_is_refused_before_it_is_expanded(tiny_suite_path):
    gpu, suite = load_gpu("gtx480"), load_suite(tiny_suite_path)
    cores = [100 + i * 0.001 for i in range(MAX_SWEEP_RUNS)]  # 2 kernels x 100,000 clocks
    with pytest.raises(ConfigError, match=r"^the sweep has 200,000 runs, more than the "
                                          r"100,000 one sweep may plan"):
        plan(gpu, suite, core_mhz=cores, mem_mhz=[924])
    assert len(plan(gpu, suite, core_mhz=cores[:10], mem_mhz=[924])) == 20


def test_seeds_multiply_the_runs(tmp_path, tiny_suite_path):
    per_seed = len(plan(load_gpu("gtx480"), load_suite(tiny_suite_path)))
    assert per_seed == 42  # 2 kernels x 7 core x 3 memory clocks
    seeds = ",".join(str(s) for s in range(MAX_SWEEP_RUNS // per_seed + 1))
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "s.duckdb"), "sweep", "--suite",
                                      str(tiny_suite_path), "--seed", seeds])
    assert one_line_error(result) == ("Error: the sweep has 100,002 runs, more than the 100,000 "
                                      "one sweep may plan: sweep fewer kernels, settings or "
                                      "seeds at a time")
    assert not (tmp_path / "s.duckdb").exists()


@pytest.mark.parametrize("option, value, error", [
    ("--seed", str(2**63), "Error: invalid value for '--seed': seeds are integers in "
                           "0..9,223,372,036,854,775,807 (a BIGINT), got "
                           "9,223,372,036,854,775,808 (see cli sweep --help)"),
    ("--interval-instructions", str(10**23), "Error: interval_instructions must be in "
     "1..10,000,000,000 (warp instructions), got 100,000,000,000,000,000,000,000"),
])
def test_out_of_range_numbers_are_one_line(tmp_path, tiny_suite_path, option, value, error):
    """Before: tracebacks (int64 overflow in the simulator or the run table)."""
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "s.duckdb"), "sweep", "--suite",
                                      str(tiny_suite_path), option, value])
    assert result.exit_code in (1, 2) and result.output.strip().splitlines() == [error]
    assert not (tmp_path / "s.duckdb").exists()


def test_workers_are_capped_by_the_runs_and_the_cpus():
    """Before: `--jobs 100000` on 4 runs started 100,000 processes (load 62 on 2 cores)."""
    cpus = len(os.sched_getaffinity(0))
    assert worker_count(100_000, 4) == min(4, cpus)
    assert worker_count(10**22, 10**6) == cpus
    assert worker_count(3, 1) == 1 and worker_count(1, 50) == 1
