"""Wu et al.'s model on a measured file as published (issue 38): DCGM's own column names as
default features, apps kept out of training with --suite, and evaluate accuracy from the base
the model was trained at."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import gpudb
from gpudb.analysis.evaluate import predictor_coverage, wu_base_note
from gpudb.cli import cli
from gpudb.sources.tabular.ingest import ingest
from gpudb.sources.tabular.mapping import load_mapping

pytest.importorskip("sklearn", reason="training needs the gpudb-dvfs[ml] extra (scikit-learn)")

from gpudb.train.wu_data import dcgm_field  # noqa: E402

# kernel -> (compute share, memory share): time 10 x (compute x 1500 / core + memory) ms,
# power 100 + 50 x compute x core / 1500 W
BENCH = {"k1": (0.9, 0.2), "k2": (0.2, 0.9), "k3": (0.5, 0.5), "k4": (0.8, 0.3),
         "k5": (0.3, 0.7), "k6": (0.6, 0.4)}
APPS = {"a1": (0.7, 0.3), "a2": (0.1, 0.95)}
MAPPING = """\
[gpu]
gpu_id = "rtx8000"
name = "Quadro RTX 8000"
n_sm = 72
[run]
suite = "bench"
[columns]
kernel = "bench"
core_mhz = "core"
mem_mhz = "mem"
time = { column = "time_ms", unit = "ms" }
power = { column = "power_w", unit = "W" }
"""


def _csv(path, kernels):
    """The kernels at 1000 and 1500 MHz with DCGM's activities under the names dcgmi prints."""
    lines = ["bench,core,mem,time_ms,power_w,DRAMA,SMACT,FP32A"]
    for name, (compute, memory) in kernels.items():
        for core in (1000, 1500):
            lines.append(f"{name},{core},5000,{10 * (compute * 1500 / core + memory):.4f},"
                         f"{100 + 50 * compute * core / 1500:.3f},{memory},{compute},"
                         f"{compute / 2}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def published_db(fresh_db, tmp_path):
    """Benchmarks (suite bench) and two apps (suite apps), measured with DCGM columns."""
    (tmp_path / "m.toml").write_text(MAPPING)
    mapping = load_mapping(tmp_path / "m.toml")
    con = gpudb.connect(fresh_db)
    try:
        ingest(con, [_csv(tmp_path / "bench.csv", BENCH)], mapping)
        ingest(con, [_csv(tmp_path / "apps.csv", APPS)], mapping, suite="apps")
    finally:
        con.close()
    return fresh_db


def _gpudb(db, *args):
    return CliRunner().invoke(cli, ["--db", str(db), *args])


def test_dcgm_names_train_wu_on_one_suite_and_accuracy_starts_at_its_base(published_db):
    result = _gpudb(published_db, "train", "wu", "--gpu", "rtx8000", "--suite", "bench",
                    "--base", "72,1000,5000", "--clusters", "2", "--format", "table")
    assert result.exit_code == 0, result.output
    assert ("note: 2 other kernels of rtx8000 kept out of both splits (--suite/--kernel): "
            "pred_wu predicts them as unseen") in result.output.splitlines()
    con = gpudb.connect(published_db, read_only=True)
    try:
        # no --features: DCGM's names were recognised
        assert con.execute("SELECT features, base_core_mhz FROM wu_model").fetchall() == [
            (["DRAMA", "FP32A", "SMACT"], 1000.0)]
        assert con.execute("SELECT kernel_id FROM wu_split ORDER BY 1").fetchall() == [
            (f"bench/{k}",) for k in sorted(BENCH)]
    finally:
        con.close()
    split = {line.split()[0]: line.split()[1] for line in result.output.splitlines()
             if line.startswith(("bench/", "apps/"))}
    assert split["apps/a1"] == split["apps/a2"] == "unseen"
    assert sorted(split.values()).count("training") == 5  # 0.8 of 6 kernels

    # no --base-mhz: the base the model was trained at (the highest, 1500 MHz, has no wu rows)
    result = _gpudb(published_db, "evaluate", "accuracy", "--gpu", "rtx8000")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    model_id = lines[0].split()[8]
    assert lines[0] == (f"base 1000 MHz: the core clock wu model {model_id} was trained at "
                        "(--base-mhz for another)")
    table = [line.split() for line in lines if line.startswith(("proportional ", "wu "))]
    # wu scored on the kernels outside its training split: 1 validation kernel and 2 apps
    assert [(row[0], row[-1]) for row in table] == [("proportional", "8"), ("wu", "3")]

    # another base: wu listed among those without rows, saying why (the command's line ends
    # with wu_base_note; called here, a second evaluation would double the test's time)
    con = gpudb.connect(published_db, read_only=True)
    try:
        applies, absent = predictor_coverage(con, "rtx8000", None, "run", 1500.0)
        assert applies == ["proportional"] and absent[-1] == "wu"
        assert wu_base_note(con, "rtx8000", 1500.0) == (
            f"wu model {model_id} predicts from the core clock it was trained at, 1000 MHz, "
            "not 1500 MHz: --base-mhz 1000")
        assert wu_base_note(con, "rtx8000", 1000.0) is None
    finally:
        con.close()


@pytest.mark.parametrize("args, message", [
    (["--suite", "nope"], "Error: no fixed runs of suite 'nope' on 'rtx8000' (its suites: "
                          "'apps', 'bench')"),
    (["--kernel", "bench/zz"], "Error: no fixed runs of 'bench/zz' on 'rtx8000' (its kernels: "
                               "apps/a1, apps/a2, bench/k1, bench/k2, bench/k3, bench/k4, "
                               "bench/k5, bench/k6)"),
    (["--suite", "apps", "--kernel", "bench/k1"],
     "Error: no fixed runs of suite 'apps' on 'rtx8000' among the kernels given (its suites: "
     "'apps', 'bench')"),
])
def test_a_selection_without_runs_is_one_line(published_db, args, message):
    result = _gpudb(published_db, "train", "wu", "--gpu", "rtx8000", *args)
    assert (result.exit_code, result.output.splitlines()) == (1, [message])


def test_dcgm_published_names_map_to_the_dcgm_metrics():
    assert dcgm_field("DRAMA") == dcgm_field("dcgm_fi_prof_dram_active") == "dcgm_dram_active"
    assert dcgm_field("smocc") == "dcgm_sm_occupancy"
    assert dcgm_field("PCITX") == "dcgm_pcie_tx_bytes"
    assert dcgm_field("dcgm_custom") == "dcgm_custom"
    assert dcgm_field("dram_util") is None
