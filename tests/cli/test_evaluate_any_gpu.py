"""Evaluation on any GPU in the database (issue 11, items 2-3): --gpu is a GPU name, never a
path; a measured GPU gets the predictors that apply to whole runs and the static optimal over
its (core, memory) settings. The tiny hand-made dataset (conftest.TINY_CSV) is small enough
to compute every figure by hand; the real measurements check that nothing ends in a
traceback."""

from __future__ import annotations

import csv
import io

import pytest
from click.testing import CliRunner
from conftest import MAPPINGS, csv_table, real_file

from gpudb.cli import cli


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_accuracy_on_a_measured_gpu_groups_targets_by_core_and_memory_clock(tiny_db):
    result = invoke("--db", tiny_db, "evaluate", "accuracy", "--gpu", "tiny", "--format", "csv")
    assert result.exit_code == 0, result.output
    header, row = csv_table(result.output, "by_predictor").splitlines()[:2]
    # from 1000 MHz to 500 at each memory clock, proportional predicts twice the time:
    # alpha 4.0 and 3.0 ms (exact), beta 11.0 ms at 800 (actual 10.0: 10%) and 10.0 at 1600
    assert header.startswith("predictor,500_1600_mhz_pct,500_800_mhz_pct,mape_pct")
    values = dict(zip(header.split(","), row.split(","), strict=True))
    assert values["predictor"] == "proportional"
    assert float(values["500_800_mhz_pct"]) == pytest.approx(5.0)
    assert float(values["500_1600_mhz_pct"]) == pytest.approx(0.0)
    assert float(values["mape_pct"]) == pytest.approx(2.5)
    assert values["n"] == "4"


def test_accuracy_table_says_which_predictors_apply(tiny_db):
    result = invoke("--db", tiny_db, "evaluate", "accuracy", "--gpu", "tiny")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("predictors with predictions on these runs: proportional; "
                                    "none from stall, lead,")
    # each absent predictor with what it needs (it said 'wu needs a model' whatever was absent)
    first = result.output.splitlines()[0]
    assert ("(stall, lead, miss, crit, critbw, crisp, crispl, crisp_gpudb, crispl_gpudb read "
            "per-interval counters, which simulated runs have and measured ones do not; "
            "wangchu needs a calibration: gpudb calibrate (--from-file for a measured GPU); "
            "wangchu_scaled needs a calibration like wangchu; wangchu_fit needs a fit: gpudb "
            "train wangchu; wu needs a model: gpudb train wu)") in first


def test_control_on_a_measured_gpu_is_the_static_optimal_over_whole_runs(tiny_db):
    result = invoke("--db", tiny_db, "evaluate", "control", "--gpu", "tiny", "--objective",
                    "edp", "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = {r["kernel_id"]: r for r in csv_rows(csv_table(result.output, "edp"))}
    # alpha: the highest setting (1000, 1600) has the least EDP (0.45 J x 1.5 ms); beta: at
    # (1000, 800) 0.495 J x 5.5 ms against 0.55 J x 5.0 ms, 1% less EDP, 10% slower
    assert float(rows["tiny/alpha"]["edp_saving_pct"]) == pytest.approx(0.0)
    assert (rows["tiny/beta"]["core_mhz"], rows["tiny/beta"]["mem_mhz"]) == ("1000.0", "800.0")
    assert float(rows["tiny/beta"]["edp_saving_pct"]) == pytest.approx(1.0)
    assert float(rows["tiny/beta"]["time_change_pct"]) == pytest.approx(10.0)
    assert float(rows[""]["edp_saving_pct"]) == pytest.approx(0.5)
    assert float(rows[""]["worst_time_change_pct"]) == pytest.approx(10.0)


def test_energy_within_a_slowdown_bound_on_whole_runs(tiny_db):
    def mean_energy_saving(bound):
        result = invoke("--db", tiny_db, "evaluate", "control", "--gpu", "tiny", "--objective",
                        "energy_perf", "--max-loss-pct", bound, "--format", "csv")
        assert result.exit_code == 0, result.output
        return float(csv_rows(csv_table(result.output, "energy_perf"))[0]["energy_saving_pct"])

    # within 1% only the highest setting qualifies; within 10% beta runs at (1000, 800):
    # 0.495 J against 0.55, 10% less energy, so 5% on average over the two kernels
    assert mean_energy_saving(1) == pytest.approx(0.0)
    assert mean_energy_saving(10) == pytest.approx(5.0)


@pytest.mark.parametrize("command", [("evaluate", "accuracy"), ("evaluate", "control"),
                                     ("evaluate", "classes"), ("demo",), ("sweep",),
                                     ("control", "--predictor", "crisp"), ("bench", "sim"),
                                     ("train", "wu")])
def test_gpu_is_a_name_and_a_path_is_an_error_that_says_so(tmp_path, command):
    result = invoke("--db", tmp_path / "x.duckdb", *command, "--gpu", "fixtures/gpus/gtx480.toml")
    assert result.exit_code == 2
    assert "takes a GPU name" in result.output and "not a path" in result.output
    assert not (tmp_path / "x.duckdb").exists()


def test_an_unknown_gpu_is_one_line_naming_the_known_ones(tiny_db):
    result = invoke("--db", tiny_db, "demo", "--gpu", "rtx8000")
    assert result.exit_code == 1
    assert result.output == ("Error: no GPU 'rtx8000': the database has tiny; the simulator "
                             "ships gtx1080ti-sim, gtx480, gtx980, hd7970\n")


def test_the_shipped_measurements_evaluate_without_a_traceback(tmp_path):
    db = tmp_path / "lab.duckdb"
    for data, mapping in (("gtx2070s-dvfs-real-Performance-Power.csv", "gtx2070s.toml"),
                          ("v100-dvfs-real-profile.csv", "v100-profile.toml")):
        result = invoke("--db", db, "ingest", real_file(data), "--mapping", MAPPINGS / mapping)
        assert result.exit_code == 0, result.output
    accuracy = invoke("--db", db, "evaluate", "accuracy", "--gpu", "rtx2070s", "--format", "csv")
    assert accuracy.exit_code == 0, accuracy.output
    header = csv_table(accuracy.output, "by_predictor").splitlines()[0].split(",")
    # 4 core clocks below 2080 MHz at each of 4 memory clocks
    assert len([c for c in header if c.endswith("_mhz_pct")]) == 16
    control = invoke("--db", db, "evaluate", "control", "--gpu", "v100", "--objective", "edp",
                     "--format", "csv")
    assert control.exit_code == 0, control.output
    rows = csv_rows(csv_table(control.output, "edp"))
    assert rows[0]["kernel_id"] == "" and rows[0]["kernels"] == "20"
    # the mean is the mean of the kernels' rows, each no worse than the highest setting
    savings = [float(r["edp_saving_pct"]) for r in rows[1:]]
    assert len(savings) == 20 and min(savings) >= 0.0
    assert float(rows[0]["edp_saving_pct"]) == pytest.approx(sum(savings) / 20)


def test_a_clock_or_suite_the_runs_lack_is_one_line_not_empty_tables(tiny_db):
    """--base-mhz 1850 and --suite nosuch printed empty tables and exit 0 (issue 30 item 4)."""
    for args, message in ((("--base-mhz", "1850"), "no runs of tiny at a core clock of 1850 MHz "
                           "to predict from (its core clocks: 500, 1000)"),
                          (("--suite", "nosuch"), "no runs of suite 'nosuch' on tiny (its "
                           "suites: 'tiny')")):
        result = invoke("--db", tiny_db, "evaluate", "accuracy", "--gpu", "tiny", *args)
        assert result.exit_code == 1 and result.output == f"Error: {message}\n"
    ok = invoke("--db", tiny_db, "evaluate", "accuracy", "--gpu", "tiny", "--base-mhz", "500",
                "--suite", "tiny", "--format", "csv")
    assert ok.exit_code == 0 and "proportional" in ok.output


def test_the_folds_caption_says_the_folds_used():
    """--folds 40 on 15 kernels said '(40 folds by kernel)' and used 15 (issue 30)."""
    from gpudb.workflows.evaluate import folds_used

    assert folds_used(40, 15) == "15 folds by kernel, one per kernel: --folds 40 asked for more"
    assert folds_used(5, 15) == "5 folds by kernel"
