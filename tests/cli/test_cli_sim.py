"""gpudb sweep, evaluate accuracy and bench sim through click's CliRunner on real files."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from conftest import csv_table

from gpudb.cli import cli


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_sweep_then_resume_then_evaluate(tmp_path, tiny_suite_path):
    db = tmp_path / "sim.duckdb"
    args = ("--db", db, "sweep", "--suite", tiny_suite_path, "--core-mhz", "700,300",
            "--mem-mhz", "924", "--interval-instructions", 500, "--jobs", 1)
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    assert "4 runs simulated, 0 already in" in first.output
    # stderr is not a terminal here: no bar, but a progress line (at least the last one)
    assert re.search(r"^simulating: 4/4 runs, [\d.]+ M warp instr/s, \d+ s$", first.stderr,
                     re.M), first.stderr
    again = invoke(*args)
    assert "0 runs simulated, 4 already in" in again.output
    result = invoke("--db", db, "evaluate", "accuracy", "--suite", tiny_suite_path, "--no-sweep",
                    "--format", "csv")
    assert result.exit_code == 0, result.output
    lines = csv_table(result.output, "by_predictor").splitlines()
    assert lines[0].startswith("predictor,300_mhz_pct,mape_pct")
    rows = {line.split(",")[0]: line.split(",") for line in lines[1:]}
    # the ALU kernel scales exactly as 1/f, so proportional is exact for it; over the two
    # kernels every predictor has a figure, and the paper's column is filled for CRISP
    assert set(rows) == {"proportional", "stall", "lead", "miss", "crit", "critbw", "crisp",
                         "crispl", "crisp_gpudb", "crispl_gpudb"}
    assert rows["crisp"][-1] == "4.0"


def test_evaluate_without_runs_says_which_sweep_to_run(tmp_path, tiny_suite_path):
    db = tmp_path / "empty.duckdb"
    assert invoke("--db", db, "init").exit_code == 0
    result = invoke("--db", db, "evaluate", "accuracy", "--suite", tiny_suite_path, "--no-sweep")
    assert result.exit_code == 1
    assert f"run: gpudb --db {db} sweep --gpu gtx480 --suite {tiny_suite_path}" in result.output


def test_sweep_bad_input_is_one_line(tmp_path):
    for args, message in ((("--gpu", "nope"), "no gpu named 'nope'"),
                          (("--kernel", "nope", "--mem-mhz", "924"), "no kernel named 'nope'"),
                          (("--core-mhz", "fast"), "'fast' is not a number"),
                          # the whole grid is checked before anything is simulated or written
                          (("--core-mhz", "700,0"), "core_mhz 0 outside gtx480's 100-700 MHz"),
                          (("--mem-mhz", "1"), "mem_mhz 1 outside gtx480's 785.4-1062.6 MHz"),
                          (("--sms", "99"), "gtx480 supports SM counts [15], not 99"),
                          (("--ctas", "2,0"), "'--ctas': 0 is not in 1..2,147,483,647")):
        result = invoke("--db", tmp_path / "x.duckdb", "sweep", *args)
        assert result.exit_code != 0
        last = result.output.strip().splitlines()[-1]
        assert last.startswith("Error: ") and message in last
        assert not (tmp_path / "x.duckdb").exists()


def test_bench_sim_prints_speeds_and_jit_ratio():
    result = invoke("bench", "sim", "--repeat", "2")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    cases = ("compute", "memory", "store")
    per_engine = [f"sim_speed{{tag}}_{c}" for c in cases] + [
        f"sim_work{{tag}}_{c}" for c in cases] + ["sim_speed{tag}_memory_vs_compute"]
    assert [line.split(":")[0] for line in lines] == (
        [m.format(tag="") for m in per_engine] + [m.format(tag="_sampled") for m in per_engine]
        + [f"sampled_vs_reference_{c}" for c in cases]
        + [f"sampled_vs_reference_{c}_paired" for c in cases] + ["jit_vs_python"])
    best, work = {}, {}
    for line in lines:
        # "sim_speed_memory: 4.91 M warp instructions/s (reference engine, default/mem_stream,
        # 2304000 instructions; best of 2, 4.80-4.91 M)": the best is the top of the range
        m = re.match(r"(sim_speed\w*_(?:compute|memory|store)): ([\d.,]+) M .*; best of 2, "
                     r"([\d.,]+)-([\d.,]+) M\)$", line)
        if m:
            value, low, high = (float(g.replace(",", "")) for g in m.groups()[1:])
            assert low <= high == value
            best[m.group(1)] = value
        # "sim_work_memory: 1.863 SM-cycles processed per warp instruction (0.961 of them
        # issuing; 32.7% of 13,129,125 SM-cycles, the rest skipped as idle or copied; 109 ns
        # per processed SM-cycle)"
        m = re.match(r"sim_work(\w*)_(\w+): ([\d.]+) SM-cycles processed per warp instruction "
                     r"\(([\d.]+) of them issuing; ([\d.]+)% of ([\d,]+) SM-cycles, the rest "
                     r"skipped as idle or copied; (\d+) ns per processed SM-cycle\)$", line)
        if m:
            work[m.group(1) or "_reference", m.group(2)] = [
                float(g.replace(",", "")) for g in m.groups()[2:]]
    assert len(best) == 6 and len(work) == 6
    for (engine, case), (processed, issuing, share, sm_cycles, ns) in work.items():
        assert issuing <= processed and 0 < share <= 100 and sm_cycles > 0 and ns > 0
        if engine == "_reference":
            # a cycle issues at most issue_width = 2 instructions on the gtx480, and it is
            # processed if it issues
            assert 0.5 <= issuing, case
    # compute_ilp issues two ALU instructions in nearly every cycle, none skipped; in
    # mem_stream three of four instructions are memory ones, and the LSU takes one new
    # instruction a cycle, so at least 0.75 issuing cycles per instruction
    assert work["_reference", "compute"][0] == pytest.approx(0.5, abs=0.01)
    assert work["_reference", "compute"][2] > 99
    assert work["_reference", "memory"][1] >= 0.75
    # the sampled engine copies most of mem_stream: far fewer SM-cycles processed
    assert work["_sampled", "memory"][0] < 0.5 * work["_reference", "memory"][0]
    values = {line.split(":")[0]: float(line.split()[1].replace(",", "")) for line in lines}
    for tag in ("", "_sampled"):
        assert values[f"sim_speed{tag}_memory_vs_compute"] == pytest.approx(
            best[f"sim_speed{tag}_memory"] / best[f"sim_speed{tag}_compute"], abs=0.002)
    for case in cases:
        assert values[f"sampled_vs_reference_{case}"] == pytest.approx(
            best[f"sim_speed_sampled_{case}"] / best[f"sim_speed_{case}"], rel=0.01)
        # "sampled_vs_reference_memory_paired: 4.929 x the reference engine's speed (median
        # of 2 back-to-back pairs, 3.870-4.940)": the median lies in the pairs' range (the
        # range printed to as many decimals as the value: at two, 4.969 fell below "4.97")
        line = next(x for x in lines if x.startswith(f"sampled_vs_reference_{case}_paired:"))
        m = re.search(r": ([\d.]+) x .*\(median of 2 back-to-back pairs, ([\d.]+)-([\d.]+)\)$",
                      line)
        value, low, high = (float(g) for g in m.groups())
        # within half a unit of the value's printed last digit (one decimal from 10 up)
        half = 0.0005 if value < 10 else 0.05
        assert low - half <= value <= high + half
