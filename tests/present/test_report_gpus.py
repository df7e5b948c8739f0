"""gpudb report per GPU: a section per GPU, measured GPUs first, a measured GPU's opening with
its summary (runs and clock grid, best setting per kernel, predictor accuracy), on a small file
of two measured GPUs that share kernel ids on different grids and one hand-made simulated GPU
whose id sorts first (synthetic numbers throughout)."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from conftest import tiny_pair

import gpudb
from gpudb.cli import cli

pytest.importorskip("matplotlib", reason="the report's figures need gpudb-dvfs[plot] (matplotlib)")

# tiny2: tiny's kernel ids at 600 and 1200 MHz core, 800 MHz memory


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """(the file, the report page written with `gpudb report FOLDER`, the command's output)."""
    tmp = tmp_path_factory.mktemp("report_gpus")
    path = tmp / "two.duckdb"
    con = tiny_pair(tmp)
    # a simulated GPU named to sort before the measured ones: one fixed run, no intervals
    con.execute("""
        INSERT INTO gpu VALUES ('aa', 'hand-made GPU', 1, 48, 8, 800, 924, '{}');
        INSERT INTO experiment VALUES ('e', 'e', NULL, now(), NULL, NULL, NULL, NULL);
        INSERT INTO kernel VALUES ('aa/k', 'k', 'aa', 'compute', 'hand-made (synthetic)', NULL);
        INSERT INTO run (run_id, experiment_id, source, kernel_id, gpu_id, policy, core_mhz,
            mem_mhz, n_sm, ctas_per_sm, interval_instructions, seed, time_ns, energy_j,
            instructions, created_at)
        VALUES ('aa-k', 'e', 'sim', 'aa/k', 'aa', 'fixed', 800, 924, 1, 8, 100, 0, 20, 20,
                200, now())""")
    con.close()
    result = CliRunner().invoke(cli, ["--db", str(path), "report", str(tmp / "out")])
    assert result.exit_code == 0, result.output
    page = tmp / "out" / "report.html"
    assert result.output == f"wrote {page}\n"
    return path, page.read_text()


def section(page: str, heading: str) -> str:
    """The page from <h2>heading</h2> to the next <h2>."""
    start = page.index(f"<h2>{heading}</h2>")
    return page[start:page.index("<h2>", start + 4)]


def cells(html_part: str, first: str) -> list[str]:
    """The cells of the row whose first cell is ``first``."""
    row = html_part[html_part.index(f"<tr><td>{first}</td>"):]
    return re.findall(r"<td[^>]*>([^<]*)</td>", row[:row.index("</tr>")])


def test_a_section_per_gpu_measured_first_each_opening_with_its_summary(made):
    _, page = made
    assert re.findall(r"<h2>([^<]*)</h2>", page) == [
        "tiny, tiny test GPU (measured)", "tiny2, tiny test GPU (measured)",
        "aa, hand-made GPU (simulated)", "Database"]
    for gpu in ("tiny", "tiny2"):
        part = section(page, f"{gpu}, tiny test GPU (measured)")
        assert re.findall(r"<h3>([^<]*)</h3>", part) == ["Summary", "Figures", "Tables"]
        # every figure and table command of the section names its GPU
        commands = re.findall(r"<code>(gpudb (?:plot|query) [^<]*)</code>", part)
        assert commands and all(f"-p gpu_id {gpu}" in c for c in commands)
    # the simulated GPU has no measured summary
    assert "<h3>Summary</h3>" not in section(page, "aa, hand-made GPU (simulated)")


def test_the_measured_summary_holds_the_grid_best_settings_and_accuracy_of_its_gpu(made):
    _, page = made
    tiny = section(page, "tiny, tiny test GPU (measured)")
    tiny = tiny[:tiny.index("<h3>Figures</h3>")]
    assert ("<p>8 fixed runs of 2 kernels at 4 settings; core 500, 1000 MHz, memory 800, "
            "1600 MHz.</p>") in tiny
    # (kernel, settings, nominal, least energy, saving %, slowdown %, least EDP, saving %,
    # slowdown %): alpha at 500/1600 takes 3.0 ms at 120 W, 0.36 J against 0.45 J at the top
    # (1.5 ms, 300 W); beta at 1000/800 0.495 J in 5.5 ms against 0.55 J in 5.0 ms: EDP
    # 2.7225 against 2.75 mJ s, 1% less
    assert cells(tiny, "tiny/alpha") == ["tiny/alpha", "4", "1000/1600", "500/1600", "20.0",
                                         "100.0", "1000/1600", "0.0", "0.0"]
    assert cells(tiny, "tiny/beta") == ["tiny/beta", "4", "1000/1600", "1000/800", "10.0",
                                        "10.0", "1000/800", "1.0", "10.0"]
    assert "the least-energy settings save 15.0% energy and the least-EDP ones 0.5% EDP" in tiny
    # proportional from 1000 MHz: only beta at 800 MHz memory misses (+10%): 2.5% over 4
    assert cells(tiny, "proportional") == ["proportional", "2.5", "10.0", "4"]
    assert "No predictions from the highest core clock on this GPU: stall, " in tiny
    tiny2 = section(page, "tiny2, tiny test GPU (measured)")
    tiny2 = tiny2[:tiny2.index("<h3>Figures</h3>")]
    assert ("<p>4 fixed runs of 2 kernels at 2 settings; core 600, 1200 MHz, memory 800 "
            "MHz.</p>") in tiny2
    # alpha at 600 MHz: 0.4 J in 4.0 ms against 0.5 J in 2.5 ms; beta gains nothing
    assert cells(tiny2, "tiny/alpha") == ["tiny/alpha", "2", "1200/800", "600/800", "20.0",
                                          "60.0", "1200/800", "0.0", "0.0"]
    assert cells(tiny2, "tiny/beta")[3:5] == ["1200/800", "0.0"]
    # 2.5 -> 5.0 ms (actual 4.0: 25%), 4.0 -> 8.0 (9.0: 11.1%), 2 predictions: tiny's own
    assert cells(tiny2, "proportional") == ["proportional", "18.1", "25.0", "2"]
    assert "1000" not in tiny2 and "1600" not in tiny2     # nothing of tiny's grid


def test_the_folder_is_an_argument_or_out_once(made, tmp_path):
    path, _ = made
    runner = CliRunner()
    result = runner.invoke(cli, ["--db", str(path), "report", str(tmp_path / "a"),
                                 "--out", str(tmp_path / "b")])
    assert result.exit_code == 2
    assert re.fullmatch(r"Error: give the folder once: FOLDER or --out, not both \(see \S+ "
                        r"report --help\)\n", result.output)
    result = runner.invoke(cli, ["--db", str(path), "report"])
    assert result.exit_code == 2
    assert re.fullmatch(r"Error: missing the folder for report.html: gpudb report FOLDER "
                        r"\(see \S+ report --help\)\n", result.output)
    assert list(tmp_path.iterdir()) == []
