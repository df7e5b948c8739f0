"""gpudb report: one self-contained HTML page; every image a PNG that a real browser loads,
every table with rows (Debian's chromium, headless; skipped where it is not installed)."""

import base64
import shutil
import subprocess
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

from gpudb.cli import cli

pytest.importorskip("matplotlib", reason="the report's figures need gpudb-dvfs[plot] (matplotlib)")


class Page(HTMLParser):
    """Images (their src) and tables (their body row counts) of a page."""

    def __init__(self):
        super().__init__()
        self.images, self.tables, self.links = [], [], []
        self._in_body = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        elif tag in ("link", "script") or (tag == "a" and "href" in attrs):
            self.links.append(attrs)
        elif tag == "tbody":
            self.tables.append(0)
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.tables[-1] += 1

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_body = False


@pytest.fixture(scope="module")
def page(query_db, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report"
    result = CliRunner().invoke(cli, ["--db", str(query_db), "report", "--out", str(out)])
    assert result.exit_code == 0, result.output
    path = out / "report.html"
    assert result.output == f"wrote {path}\n"
    return path


def test_the_page_is_self_contained_with_a_png_per_plot_and_rows_in_every_table(page):
    from gpudb.present import plots

    parsed = Page()
    parsed.feed(page.read_text())
    assert parsed.links == []                      # nothing fetched from elsewhere
    # gtx480's section: every plot drawn but Wu's (no model trained in query_db), the
    # simulator's validation (no clones evaluated against a measured GPU there) and the
    # (core, memory) heat map (swept at one memory clock, below its highest), which the page
    # lists; the measured GPU tiny's section (first) draws the heat map
    text = page.read_text()
    gtx480 = text[text.index("<h2>gtx480 (simulated)</h2>"):text.index("<h2>Database</h2>")]
    assert gtx480.count("<img ") == len(plots.registry()) - 3
    assert "<li>error_by_setting: query error_by_setting has no rows for this GPU" in gtx480
    tiny = text[:text.index("<h2>gtx480 (simulated)</h2>")]
    assert "<img alt=\"error_by_setting\"" in tiny
    assert "<li>wu_error_by_base: plot wu_error_by_base: no wu model" in gtx480
    assert "<li>sim_scaling: plot sim_scaling: query sim_scaling_curve has no rows" in gtx480
    assert text.index("<h2>tiny, tiny test GPU (measured)</h2>") < text.index(
        "<h2>gtx480 (simulated)</h2>")
    for src in parsed.images:
        prefix = "data:image/png;base64,"
        assert src.startswith(prefix)
        assert base64.b64decode(src[len(prefix):])[:8] == b"\x89PNG\r\n\x1a\n"
    # info (rows per table, experiments) and the stored analyses that have rows
    assert len(parsed.tables) >= 2 + 5 and all(rows > 0 for rows in parsed.tables)
    assert list(page.parent.iterdir()) == [page]   # no temporary file left beside it


CHECK = """<pre id="check"></pre><script>
window.addEventListener("load", () => {
  const images = [...document.images];
  const loaded = images.filter(i => i.complete && i.naturalWidth > 0).length;
  const tables = [...document.querySelectorAll("table")];
  const full = tables.filter(t => t.tBodies[0] && t.tBodies[0].rows.length > 0).length;
  document.getElementById("check").textContent =
    `images ${loaded}/${images.length} tables ${full}/${tables.length}`;
});
</script></body>"""


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="no browser: Debian's chromium package is not installed "
                           "(apt-get install chromium)")
def test_a_real_browser_loads_every_image_and_every_table_has_rows(page, tmp_path):
    # the page plus a script that reports what the browser loaded, read from the DOM it dumps
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", CHECK))
    dom = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
         "--virtual-time-budget=10000", probe.as_uri()],
        capture_output=True, text=True, timeout=120, check=True).stdout
    check = dom[dom.index('<pre id="check">') + len('<pre id="check">'):]
    check = check[:check.index("</pre>")]
    parsed = Page()
    parsed.feed(page.read_text())
    n_images, n_tables = len(parsed.images), len(parsed.tables)
    assert check == f"images {n_images}/{n_images} tables {n_tables}/{n_tables}"


def test_out_naming_a_file_is_one_error_line_and_writes_nothing(query_db, tmp_path):
    target = tmp_path / "taken"
    target.write_text("a file")
    result = CliRunner().invoke(cli, ["--db", str(query_db), "report", "--out", str(target)])
    assert result.exit_code != 0
    assert result.output == f"Error: {target} is a file, not a folder\n"
    assert target.read_text() == "a file" and sorted(tmp_path.iterdir()) == [target]
