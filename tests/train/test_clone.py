"""Clones of measured kernels (gpudb.train.clone, `gpudb clone`) and the simulator's check
against a real GPU (`gpudb evaluate simulator`, view sim_scaling, queries sim_scaling_*).

The recipe's fields against a profile whose every value is hand-chosen; the suite file it
writes loads back with its annotations; the knob search against a known function; then the
whole check on three kernels of the shared GTX 1080 Ti file (slow), its query figures
against the runs they come from and the scaling the clones must get right."""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import MAPPINGS, real_file

import gpudb
from gpudb.cli import cli
from gpudb.store.db import GpudbError
from gpudb.store.queries import run_query
from gpudb.train import clone as recipe
from sim.config import load_gpu, load_suite

# 280 CTAs of 4 warps (W = 1,120) of 100 instructions each: per warp 2 global load requests
# of 4 sectors at L1 (gld_transactions counts 8 a request, the Pascal profiler's double count),
# half of them L1 hits; 1 store request of 4 sectors; 45 ALU + 5 SFU + 3 FP64 instructions;
# the other 44 unclassified. L2: 4,480 sectors read, 1,120 of them from DRAM; 4,480 written,
# 2,240 to DRAM.
W = 1120
PROFILE = {
    "blocks": 280, "warps_per_block": 4, "inst_executed": 100 * W, "executed_ipc": 1.0,
    "achieved_occupancy": 0.5, "warp_execution_efficiency": 1.0,
    "gld_transactions": 2 * W * 8, "gld_transactions_per_request": 8.0,
    "tex_cache_transactions": 2 * W * 4, "l2_tex_read_transactions": 2 * W * 2,
    "l2_read_transactions": 2 * W * 2, "dram_read_transactions": W,
    "gst_transactions": 4 * W, "gst_transactions_per_request": 4.0,
    "l2_write_transactions": 4 * W, "dram_write_transactions": 2 * W,
    "inst_fp_32": 32 * 50 * W, "inst_integer": 0, "flop_count_sp_special": 32 * 5 * W,
    "inst_fp_64": 32 * 3 * W, "cf_executed": 0,
}


@pytest.fixture(scope="module")
def gpu():
    return load_gpu("gtx1080ti-sim")


def profile(**changes) -> recipe.Profile:
    return recipe.Profile("mygpu", "mine/app:kern", 1800.0, 5000.0, 1e6,
                          {**PROFILE, **changes})


def test_fields_come_from_the_profile_as_hand_computed(gpu):
    c = recipe.derive(profile(), gpu)
    f = {k: d.value for k, d in c.fields.items()}
    assert (f["ctas"], f["warps_per_cta"], f["W"], f["I"]) == (280, 4, W, 100)
    assert (f["ld"], f["st"], f["sh"], f["tex"]) == (2, 1, 0, 0)
    assert (f["alu"], f["sfu"], f["dp"]) == (45, 5, 3)
    assert f["unclassified"] == pytest.approx(44)
    assert f["ld_trans"] == 4 and f["l1_hit"] == 0.5 and f["l2_hit"] == 0.75
    assert f["st_trans"] == 4 and f["dram_write"] == 0.5
    # one partial wave (280 CTAs fit 28 SMs x 16): every SM gets ceil(280 / 28) slots
    assert f["ctas_per_sm"] == 10 and f["clone_ctas"] == 280 and f["waves"] == 1.0
    assert f["iterations"] == 1
    assert c.name == "app.kern" and c.fp64_unit
    assert "gld_transactions / gld_transactions_per_request / W" in c.fields["ld"].how


def test_occupancy_sets_the_cta_limit_of_a_grid_of_many_waves(gpu):
    ctas = 28 * 16 * 100
    many = recipe.derive(profile(blocks=ctas, inst_executed=100 * ctas * 4), gpu)
    assert many.f("ctas_per_sm") == round(0.5 * 64 / 4)   # 8 of the hardware's 16
    # one iteration of the 100-instruction body; as many waves as 3M instructions allow
    wave = 28 * 8 * 4 * 100
    assert many.f("iterations") == 1 and many.f("waves") == 200
    assert many.f("clone_ctas") == round(recipe.DEFAULT_BUDGET / wave * 28 * 8)


def test_the_body_is_loads_then_computation_then_stores(gpu):
    c = recipe.derive(profile(shared_load_transactions=2 * W, shared_load_transactions_per_request=1),
                      gpu)
    body = recipe.kernel_table(c)["phase"][0]["body"]
    ops = [i["op"] for i in body]
    first_other = next(k for k, o in enumerate(ops) if o != "ld")
    assert set(ops[:first_other]) == {"ld"} and ops[first_other] == "bar"
    assert ops[-1] == "bar" and ops[-2] == "st" and "st" not in ops[:-2]
    assert ops.count("ld") == 2 and ops.count("dp") == 3 and ops.count("shared") == 2
    load = body[0]
    assert (load["trans"], load["l1_hit"], load["l2_hit"]) == (4, 0.5, 0.75)


def test_knobs_change_the_dependences_and_the_units(gpu):
    c = recipe.derive(profile(), gpu)
    c.dependence, c.fp64_share, c.load_chain = 1, 0.5, 0.0
    body = recipe.kernel_table(c)["phase"][0]["body"]
    ops = [i["op"] for i in body]
    assert ops.count("dp") == 3 + 22 and ops.count("alu") == 45 + 22
    assert all(b["dep"] == f"i{k - 1}" for k, b in enumerate(body) if k > 2 and "dep" in b)
    c.fp64_share, c.load_chain = 0.0, 1.0
    body = recipe.kernel_table(c)["phase"][0]["body"]
    assert body[1]["dep"] == "i0" and "dep" not in body[0]
    no_unit = recipe.derive(profile(), load_gpu("gtx480"))
    assert not no_unit.fp64_unit
    assert "dp" not in [i["op"] for i in recipe.kernel_table(no_unit)["phase"][0]["body"]]


def test_a_profile_without_the_needed_metrics_is_refused_by_name(gpu):
    incomplete = {k: v for k, v in PROFILE.items() if k not in ("executed_ipc", "blocks")}
    with pytest.raises(GpudbError, match="lacks executed_ipc, blocks"):
        recipe.derive(recipe.Profile("g", "s/k", 1, 1, 1, incomplete), gpu)


def test_the_suite_file_loads_back_with_every_field_annotated(gpu, tmp_path):
    c = recipe.derive(profile(), gpu)
    c.dependence, c.base_ipc_sim = 4, 0.97
    text = recipe.suite_text([c], gpu, "gpudb clone --gpu mygpu")
    path = tmp_path / "clones.toml"
    path.write_text(text)
    suite = load_suite(path)
    assert suite.name == "clone-mygpu" and suite.kernels[0].name == "app.kern"
    raw = tomllib.loads(text)["kernel"][0]
    assert raw["clone"]["measured_kernel"] == "mine/app:kern"
    assert raw["clone"]["dependence"] == 4 and raw["ctas_per_sm"] == 10
    for formula in ("inst_executed / W", "1 - dram_read_transactions / l2_read_transactions",
                    "dram_write_transactions / l2_write_transactions"):
        assert formula in text


def test_the_knob_search_finds_the_closest_ladder_value():
    ladder = (1, 2, 4, 8, 16, 32)
    calls = []

    def ipc(d):                       # rises with d, as a clone's IPC does
        calls.append(d)
        return 0.1 * math.sqrt(d)

    assert recipe._closest(ladder, ipc, 0.1 * math.sqrt(7.0), rising=True) == (8, ipc(8))
    assert len(set(calls)) <= 5       # bisection, not the whole ladder
    assert recipe._closest(ladder, ipc, 0.01, rising=True)[0] == 1
    assert recipe._closest(ladder, ipc, 9.0, rising=True)[0] == 32
    falling = recipe._closest((0.0, 0.5, 1.0), lambda q: 2.0 - q, 1.4, rising=False)
    assert falling == (0.5, 1.5)


# --- The check on the shared GTX 1080 Ti file ------------------------------------------------

KERNELS = ("cuda-sdk-rodinia/BlackScholes:BlackScholesGPU",
           "cuda-sdk-rodinia/hotspot:calculate_temp",
           "cuda-sdk-rodinia/transpose:transposeCoalesced")


def test_a_gpu_measured_without_a_profile_is_refused_naming_what_it_lacks(tmp_path):
    # the shared V100 file: DCGM activities only, no instruction counts or launch geometry
    data = real_file("v100-dvfs-real-profile.csv")
    db = tmp_path / "v.duckdb"
    runner = CliRunner()
    got = runner.invoke(cli, ["--db", str(db), "ingest", str(data), "--mapping",
                              str(MAPPINGS / "v100-profile.toml")])
    assert got.exit_code == 0, got.output
    got = runner.invoke(cli, ["--db", str(db), "clone", "--gpu", "v100", "-o",
                              str(tmp_path / "c.toml")])
    assert got.exit_code == 1 and got.output.count("\n") == 1
    assert ("v100's measured runs lack what a clone is built from: inst_executed, "
            "executed_ipc, achieved_occupancy, blocks, warps_per_block (they have 7 metrics: "
            "dcgm_dram_active") in got.output
    assert not (tmp_path / "c.toml").exists()


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    data = real_file("gtx1080ti-train.csv")
    tmp = tmp_path_factory.mktemp("simcheck")
    db = tmp / "lab.duckdb"
    runner = CliRunner()
    got = runner.invoke(cli, ["--db", str(db), "ingest", str(data), "--mapping",
                              str(MAPPINGS / "gtx1080ti.toml")])
    assert got.exit_code == 0, got.output
    args = ["--db", str(db), "evaluate", "simulator", "--gpu", "gtx1080ti", "--jobs", "2",
            "--format", "json"]
    for k in KERNELS:
        args += ["--kernel", k]
    got = runner.invoke(cli, args)
    assert got.exit_code == 0, got.output
    return db, got.output


def test_the_check_compares_every_measured_setting(checked):
    db, _ = checked
    con = gpudb.connect(db, read_only=True)
    try:
        rows = con.execute("SELECT kernel_id, count(*), count(*) FILTER (WHERE is_base), "
                           "max(abs(sim_time_norm - 1)) FILTER (WHERE is_base) "
                           "FROM sim_scaling GROUP BY ALL ORDER BY 1").fetchall()
        splits = dict(con.execute("SELECT kernel_id, any_value(split) FROM sim_scaling "
                                  "GROUP BY ALL").fetchall())
        wcf = con.execute("SELECT count(DISTINCT kernel_id), min(fitted_on) "
                          "FROM scaling_prediction").fetchone()
    finally:
        con.close()
    assert [r[0] for r in rows] == sorted(KERNELS)
    assert all(r[1:] == (20, 1, 0.0) for r in rows)
    # the configuration was fitted on hotspot and transpose, not BlackScholes
    assert splits == {KERNELS[0]: "held_out", KERNELS[1]: "train", KERNELS[2]: "train"}
    assert wcf == (3, "cuda-sdk-rodinia/hotspot:calculate_temp, "
                      "cuda-sdk-rodinia/transpose:transposeCoalesced")


def test_the_query_figures_are_those_of_the_curves(checked):
    db, _ = checked
    con = gpudb.connect(db, read_only=True)
    try:
        cols, rows = run_query(con, "sim_scaling_error", {})
        errors = {r[cols.index("kernel_id")]: dict(zip(cols, r, strict=True)) for r in rows}
        cols, rows = run_query(con, "sim_scaling_curve", {})
        curves = [dict(zip(cols, r, strict=True)) for r in rows]
    finally:
        con.close()
    for kernel, e in errors.items():
        mine = [c for c in curves if c["kernel_id"] == kernel and not c["is_base"]]
        sim = np.mean([abs(c["sim_time_norm"] - c["measured_time_norm"])
                       / c["measured_time_norm"] for c in mine]) * 100
        prop = np.mean([abs(1800 / c["core_mhz"] - c["measured_time_norm"])
                        / c["measured_time_norm"] for c in mine]) * 100
        assert e["sim_time_mape_pct"] == pytest.approx(sim)
        assert e["prop_time_mape_pct"] == pytest.approx(prop)
        at = {(c["core_mhz"], c["mem_mhz"]): c for c in curves if c["kernel_id"] == kernel}
        assert e["core_sens"] == pytest.approx(at[(1600.0, 5000.0)]["measured_time_norm"])
        assert e["sim_mem_sens"] == pytest.approx(at[(1800.0, 4000.0)]["sim_time_norm"])
        best = min(c["measured_time_norm"] ** 2 * c["measured_power_norm"] for c in at.values())
        choice = min(at.values(), key=lambda c: c["sim_time_norm"] ** 2 * c["sim_power_norm"])
        regret = (choice["measured_time_norm"] ** 2 * choice["measured_power_norm"] / best - 1)
        assert e["sim_edp_regret_pct"] == pytest.approx(regret * 100)


def test_the_clones_scale_as_the_gpu_does_with_each_clock(checked):
    """The measured classes: BlackScholes streams (t at 4000 MHz memory = 1.25 t_base, the
    clock ratio; core clock nothing), hotspot computes (t at 1600 MHz core = 1.125 t_base),
    transpose is memory-bound. Its clone lands within 0.03 of each sensitivity and 2.5% of
    the normalised time, where time proportional to the core clock is off by 12% on the
    memory-bound ones."""
    db, _ = checked
    con = gpudb.connect(db, read_only=True)
    try:
        cols, rows = run_query(con, "sim_scaling_error", {})
    finally:
        con.close()
    got = {r[cols.index("kernel_id")]: dict(zip(cols, r, strict=True)) for r in rows}
    assert {k: got[k]["class"] for k in KERNELS} == {
        KERNELS[0]: "memory-bound", KERNELS[1]: "core-bound", KERNELS[2]: "memory-bound"}
    for e in got.values():
        assert abs(e["sim_core_sens"] - e["core_sens"]) <= 0.03
        assert abs(e["sim_mem_sens"] - e["mem_sens"]) <= 0.03
        assert e["sim_time_mape_pct"] < 2.5
    assert got[KERNELS[0]]["prop_time_mape_pct"] > 12


def test_the_summary_aggregates_the_kernel_rows(checked):
    db, _ = checked
    con = gpudb.connect(db, read_only=True)
    try:
        cols, rows = run_query(con, "sim_scaling_error", {})
        kernels = [dict(zip(cols, r, strict=True)) for r in rows]
        cols, rows = run_query(con, "sim_scaling_summary", {})
        summary = [dict(zip(cols, r, strict=True)) for r in rows]
    finally:
        con.close()
    every = [s for s in summary if s["split"] == "all" and s["class"] == "all"]
    assert len(every) == 1 and every[0]["kernels"] == len(kernels) == len(KERNELS)
    assert every[0]["sim_time_mape_pct"] == pytest.approx(
        np.mean([k["sim_time_mape_pct"] for k in kernels]))
    assert every[0]["sim_worst_pct"] == pytest.approx(max(k["sim_time_mape_pct"] for k in kernels))
    assert every[0]["core_sens_ok"] == sum(abs(k["sim_core_sens"] - k["core_sens"]) <= 0.03
                                           for k in kernels)
    # one row per (split, class) present, whose kernel counts add up to the whole
    assert sum(s["kernels"] for s in summary if s["split"] != "all" and s["class"] != "all") \
        == len(KERNELS)


def test_the_check_prints_its_tables_and_refuses_read_only(checked, tmp_path):
    db, output = checked
    assert '"sim_scaling_summary"' in output and '"sim_scaling_error"' in output
    got = CliRunner().invoke(cli, ["--db", str(db), "--read-only", "evaluate", "simulator",
                                   "--gpu", "gtx1080ti"])
    assert got.exit_code != 0 and "drop --read-only" in got.output
    got = CliRunner().invoke(cli, ["--db", str(db), "evaluate", "simulator", "--gpu",
                                   "gtx480"])
    assert got.exit_code != 0 and "no measured runs of 'gtx480'" in got.output


def test_the_figure_draws_each_kernels_curves(checked, tmp_path):
    from gpudb.present import plots
    from gpudb.present.plots.sim_scaling import sim_scaling_data

    db, _ = checked
    con = gpudb.connect(db, read_only=True)
    try:
        cols, rows = run_query(con, "sim_scaling_curve", {})
        data = sim_scaling_data({"sim_scaling_curve": plots.Result(cols, rows)}, {})
        out = tmp_path / "sim.png"
        plots.render(con, "sim_scaling", {}, out)
    finally:
        con.close()
    assert data.kernels == sorted(KERNELS) and data.mems == [4000.0, 4500.0, 5000.0, 5500.0]
    k = KERNELS[0]
    assert data.cores[(k, 5000.0)] == [1600.0, 1700.0, 1800.0, 1900.0, 2000.0]
    at_base = data.series[(k, 5000.0, "sim_time_norm")][2]
    assert at_base == 1.0 and data.split[k] == "held_out"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_evaluate_simulator_passes_its_engine_to_the_sweep(checked):
    """`--engine sampled` on the fixture's database, which holds the reference's runs of the
    clones: refused in one error line before anything is simulated or written (a database
    holds one engine's runs), as `gpudb sweep --engine sampled` is."""
    db, _ = checked
    before = db.read_bytes()
    got = CliRunner().invoke(cli, ["--db", str(db), "evaluate", "simulator", "--gpu",
                                   "gtx1080ti", "--kernel", KERNELS[2], "--engine", "sampled"])
    # (the notice above it names the clones' file, as every check from a stored suite does)
    notice, error = got.output.splitlines()
    assert got.exit_code == 1 and notice.startswith("clones from "), got.output
    assert error.startswith("Error: this database holds the reference engine's simulated "
                            "runs; the sampled engine's go in a database of their own")
    assert db.read_bytes() == before
