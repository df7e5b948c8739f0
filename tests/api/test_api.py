"""gpudb.open(): the Python API gives what the CLI prints, from the same functions (issue 39).

On the tiny hand-made dataset (conftest.TINY_CSV: two kernels, two core and two memory clocks)
the values are checked by hand: beta's least-EDP setting is (1000, 800) MHz, 5.5 ms x 90 W =
0.495 J, EDP 2.7225e-3 J s against the highest setting's 5.0 ms x 110 W = 0.55 J, 2.75e-3 J s:
a saving of 1.0 %.
"""

from __future__ import annotations

import csv
import hashlib
import io

import pytest
from click.testing import CliRunner
from conftest import TINY_CSV, TINY_MAPPING, tiny_pair

import gpudb
from gpudb.cli import cli
from gpudb.present.output import format_rows
from gpudb.store.result import Table


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("name, params", [
    ("best_setting", {}),
    ("best_setting", {"gpu_id": "tiny"}),
    ("mape_by_predictor", {"gpu_id": "tiny"}),
    ("error_by_target", {}),
])
def test_query_rows_are_the_clis(tiny_db, name, params):
    cli_args = [a for k, v in params.items() for a in ("-p", k, v)]
    printed = invoke("--db", tiny_db, "query", name, *cli_args, "--format", "csv")
    assert printed.exit_code == 0, printed.output
    with gpudb.open(tiny_db, read_only=True) as db:
        table = db.query(name, **params)
    assert isinstance(table, Table) and table.rows
    # the same rows through the CLI's own formatter: the same columns, values and order
    assert format_rows(table.columns, table.rows, "csv") == printed.output
    assert csv_rows(printed.output)[0] == table.columns


def test_hand_computed_values_and_dtypes(tiny_db):
    with gpudb.open(tiny_db, read_only=True) as db:
        best = db.query("best_setting", gpu_id="tiny")
        df = best.df()
        pl = best.pl()
    assert list(df.columns) == best.columns and len(df) == 2
    beta = df.set_index("kernel_id").loc["tiny/beta"]
    assert (beta.edp_core_mhz, beta.edp_mem_mhz) == (1000, 800)
    assert beta.edp_saving_pct == pytest.approx(1.0)
    assert beta.base_energy_j == pytest.approx(0.55)
    import pandas as pd

    assert pd.api.types.is_string_dtype(df["kernel_id"])
    assert str(df["edp_saving_pct"].dtype) == "float64"
    assert pl.schema["kernel_id"].is_(__import__("polars").Utf8)
    assert pl.schema["edp_saving_pct"].is_float()
    assert pl.filter(pl["kernel_id"] == "tiny/beta")["edp_saving_pct"].to_list() == pytest.approx([1.0])


def test_sql_is_a_relation_with_gpudbs_functions_and_the_stored_queries(tiny_db):
    with gpudb.open(tiny_db, read_only=True) as db:
        per_kernel = db.sql("SELECT kernel_id, count(*) AS runs, sum(energy_j) AS energy_j "
                            "FROM run GROUP BY ALL ORDER BY ALL").df()
        # eq. 2 of paper 000: t(f) = T_mem + (t - T_mem) * f_base / f
        linear = db.sql("SELECT predict_linear(31, 20, 2, 1) AS t").fetchall()
        macro = db.sql("SELECT edp_saving_pct FROM best_setting(gpu_id := 'tiny') "
                       "WHERE kernel_id = $k", params={"k": "tiny/beta"}).fetchall()
        # DuckDB 2's .arrow() is a stream that holds the connection until read whole
        arrow = db.sql("SELECT 1 AS one").arrow().read_all()
        db.sql("CREATE TEMP TABLE x (a INT); INSERT INTO x VALUES (3)")
        assert db.sql("SELECT a FROM x").fetchall() == [(3,)]
        with pytest.raises(gpudb.GpudbError, match="^SQL error: .*nope"):
            db.sql("SELECT * FROM nope")
    assert per_kernel.kernel_id.tolist() == ["tiny/alpha", "tiny/beta"]
    assert per_kernel.runs.tolist() == [4, 4]
    # alpha: 4 ms x 100 W + 2 x 250 + 3 x 120 + 1.5 x 300 = 0.4 + 0.5 + 0.36 + 0.45 J
    assert per_kernel.energy_j.tolist() == pytest.approx([1.71, 0.5 + 0.495 + 0.55 + 0.55])
    assert linear[0][0] == pytest.approx(20 + (31 - 20) * 2 / 1)
    assert macro == [(pytest.approx(1.0),)]
    assert arrow.column("one").to_pylist() == [1]


def test_unknown_names_are_the_clis_errors(tiny_db):
    with gpudb.open(tiny_db, read_only=True) as db:
        with pytest.raises(gpudb.GpudbError) as name:
            db.query("best_settings")
        with pytest.raises(gpudb.GpudbError) as param:
            db.query("best_setting", gpu="tiny")
        with pytest.raises(gpudb.GpudbError) as gpu:
            db.query("best_setting", gpu_id="tinny")
    assert "best_setting" in str(name.value) and "gpu_id" in str(param.value)
    assert "'tiny'" in str(gpu.value)
    for error, args in ((name, ("query", "best_settings")),
                        (param, ("query", "best_setting", "-p", "gpu", "tiny")),
                        (gpu, ("query", "best_setting", "-p", "gpu_id", "tinny"))):
        assert invoke("--db", tiny_db, *args).output == f"Error: {error.value}\n"


def test_tables_info_and_queries_are_what_info_shows(tiny_db):
    with gpudb.open(tiny_db, read_only=True) as db:
        counts = dict(db.tables().rows)
        info = db.info()
        listing = db.queries()
    assert counts["run"] == 8 and counts["metric"] == 8 and counts["gpu"] == 1
    assert info.experiments.rows[0][:5] == ("tiny", 8, 2, "tiny", "measured")
    assert info.orphans == {} and info.foreign == []
    printed = dict(csv_rows(invoke("--db", tiny_db, "info", "--format", "csv").output)[1:])
    assert {k[5:]: int(v) for k, v in printed.items() if k.startswith("rows.")} == counts
    assert "best_setting" in [r[0] for r in listing.rows]
    assert listing.columns == ["query", "parameters", "description"]


def test_ingest_merge_delete_and_read_only(tmp_path, tiny_files):
    csv_path, mapping = tiny_files
    path = tmp_path / "new.duckdb"
    with gpudb.open(path) as db:
        [report] = db.ingest(csv_path, mapping)
        again = db.ingest([csv_path], mapping)
        summary = db.ingest(csv_path, mapping).summaries
        assert (report.runs_added, report.metrics_added) == (8, 8)
        assert again[0].skipped_reason and summary == []
        assert db.check() == {}
        assert db.delete(gpu="tiny", dry_run=True)["run"] == 8
    other = tmp_path / "other.duckdb"
    with gpudb.open(other) as db:
        merged = db.merge(path)
        assert merged.runs_added == 8
        assert db.delete(kernel=["tiny/alpha"])["run"] == 4
        assert dict(db.tables().rows)["run"] == 4
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with gpudb.open(path, read_only=True) as db:
        with pytest.raises(gpudb.GpudbError, match="read-only"):
            db.ingest(csv_path, mapping)
        with pytest.raises(gpudb.GpudbError, match="read-only"):
            db.sweep("gtx480")
        assert dict(db.tables().rows)["run"] == 8
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    db.close()
    with pytest.raises(gpudb.GpudbError, match="closed"):
        db.tables()


def test_plot_is_the_figure_of_the_gpu_and_refuses_two_as_the_cli(tmp_path):
    pytest.importorskip("matplotlib")
    tiny_pair(tmp_path).close()
    path = tmp_path / "two.duckdb"
    with gpudb.open(path, read_only=True) as db:
        figure = db.plot("mape_by_kernel", gpu="tiny2")
        with pytest.raises(gpudb.GpudbError) as refused:
            db.plot("mape_by_kernel")
    from matplotlib.figure import Figure

    assert isinstance(figure, Figure)
    [ax] = [a for a in figure.axes if a.get_title()]
    assert ax.get_title().startswith("tiny2:")
    assert {t.get_text() for t in ax.get_xticklabels()} == {"alpha", "beta", "mean"}
    assert "tiny, tiny2" in str(refused.value)
    cli_line = invoke("--db", path, "plot", "mape_by_kernel", "--out", tmp_path / "f.png").output
    assert cli_line == f"Error: {refused.value}\n"


def test_repr_escapes_what_the_file_holds(tmp_path):
    hostile = "<script>alert(1)</script>"
    (tmp_path / "x.csv").write_text(TINY_CSV.replace("alpha", hostile))
    (tmp_path / "x.toml").write_text(TINY_MAPPING.replace('gpu_id = "tiny"',
                                                          'gpu_id = "<b>gpu</b>"'))
    with gpudb.open(tmp_path / "x.duckdb") as db:
        db.ingest(tmp_path / "x.csv", tmp_path / "x.toml")
        page = db._repr_html_()
        text = repr(db)
        table = db.query("best_setting")._repr_html_()
    assert "<b>gpu</b>" not in page and "&lt;b&gt;gpu&lt;/b&gt;" in page
    assert "<tr><td>&lt;b&gt;gpu&lt;/b&gt;</td><td>8</td><td>0</td></tr>" in page
    assert "<script>" not in table and "&lt;script&gt;alert(1)&lt;/script&gt;" in table
    assert "runs: <b>gpu</b> 8 measured, 0 simulated" in text and "run 8" in text


def test_evaluate_accuracy_forwards_to_the_workflow(tiny_db):
    from gpudb.workflows import evaluate

    if not hasattr(evaluate, "accuracy"):
        pytest.skip("gpudb.workflows.evaluate.accuracy not on this branch (issue 39, 'evaluate')")
    with gpudb.open(tiny_db, read_only=True) as db:
        tables = db.evaluate_accuracy(gpu="tiny")
    printed = invoke("--db", tiny_db, "evaluate", "accuracy", "--gpu", "tiny", "--format", "csv")
    # every table the CLI prints, row for row (the CLI prints 'proportional,0.0,5.0,2.5,10.0,4')
    assert "proportional,0.0,5.0,2.5,10.0,4" in printed.output
    for table in tables.values():
        assert format_rows(table.columns, table.rows, "csv") in printed.output


def test_a_writable_api_open_beside_a_sweep(tmp_path, tiny_suite_path):
    """The sweep writes through its own connection of this process while the Database holds
    one: the runs are seen at once, and a second sweep skips them."""
    with gpudb.open(tmp_path / "s.duckdb") as db:
        first = db.sweep("gtx480", str(tiny_suite_path), core_mhz=[700], mem_mhz=[924],
                         interval_instructions=1000, jobs=1)
        again = db.sweep("gtx480", str(tiny_suite_path), core_mhz=[700], mem_mhz=[924],
                         interval_instructions=1000, jobs=1)
        gpus = db.gpus().rows
    assert (first["runs_added"], again["runs_added"], again["runs_skipped"]) == (2, 0, 2)
    assert gpus == [("gtx480", 0, 2)]
