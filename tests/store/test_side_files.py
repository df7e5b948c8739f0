"""A database's side files are data too (issue 41 item 1): a WAL or spill folder that is a
symbolic link or not a regular file, a --db that is a link to nothing, and an export folder
whose Parquet entries are links or FIFOs are refused in one line before anything is read or
written, and every file outside the paths the user named stays byte-identical.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from conftest import TINY_CSV, TINY_MAPPING, invoke, one_line_error


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A gpudb file with the tiny runs, in a folder of its own (the working directory)."""
    monkeypatch.chdir(tmp_path)
    Path("tiny.csv").write_text(TINY_CSV)
    Path("tiny.toml").write_text(TINY_MAPPING)
    assert invoke("--db", "lab.duckdb", "ingest", "tiny.csv", "--mapping",
                  "tiny.toml").exit_code == 0
    assert not Path("lab.duckdb.wal").exists()
    return Path("lab.duckdb")


def test_a_wal_that_is_a_link_is_never_written_through(lab):
    """Before: `ingest` wrote 24,906 bytes of WAL into the 9-byte file the link named, then
    removed the link."""
    victim = Path("victim.txt")
    victim.write_text("mine, 9\n")
    before, db_before = digest(victim), digest(lab)
    os.symlink(victim.name, "lab.duckdb.wal")
    for args in (("ingest", "tiny.csv", "--mapping", "tiny.toml"),
                 ("sql", "DELETE FROM run"), ("info",)):
        assert one_line_error(invoke("--db", lab, *args)) == (
            "Error: lab.duckdb.wal is a symbolic link: gpudb never writes a WAL file through "
            "one (DuckDB would overwrite what it points to); remove the link")
        assert digest(victim) == before and digest(lab) == db_before
        assert os.path.islink("lab.duckdb.wal")


def test_a_fifo_as_the_wal_is_refused_before_any_read(lab):
    """Before: every command hung on it, --timeout-s 5 too (DuckDB's open blocks)."""
    os.mkfifo("lab.duckdb.wal")
    assert one_line_error(invoke("--db", lab, "--timeout-s", "5", "info")) == (
        "Error: lab.duckdb.wal is a FIFO, not a WAL file: remove it or move it aside")


def test_a_spill_folder_that_is_a_link_is_refused(lab, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, "lab.duckdb.tmp")
    assert "lab.duckdb.tmp is a symbolic link" in one_line_error(invoke("--db", lab, "info"))
    assert list(elsewhere.iterdir()) == []


def test_a_link_to_nothing_as_db_creates_nothing(lab):
    """Before: a failed ingest or sql left an empty gpudb database at the link's target."""
    os.symlink("nowhere.duckdb", "dangling.duckdb")
    for args in (("ingest", "tiny.csv", "--mapping", "tiny.toml"), ("init",),
                 ("sql", "SELECT 1")):
        assert one_line_error(invoke("--db", "dangling.duckdb", *args)) == (
            "Error: dangling.duckdb is a symbolic link to nothing ('nowhere.duckdb'): gpudb "
            "creates a new database only at a path of its own; remove the link or name the "
            "file it should open")
        assert not os.path.lexists("nowhere.duckdb")


def test_a_link_to_a_database_still_opens_it(lab):
    """A link to an existing database is the user's own naming: it opens the database."""
    os.symlink(lab.name, "alias.duckdb")
    result = invoke("--db", "alias.duckdb", "sql", "SELECT count(*) AS n FROM run",
                    "--format", "csv")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["n", "8"]


def test_an_export_with_a_fifo_or_a_link_is_refused_before_any_read(lab, tmp_path):
    """Before: a FIFO among the Parquet files hung merge (--timeout-s 5 too)."""
    assert invoke("--db", lab, "export", "ex").exit_code == 0
    assert invoke("--db", "other.duckdb", "init").exit_code == 0
    other = digest(Path("other.duckdb"))
    os.mkfifo("ex/zz.parquet")
    assert one_line_error(invoke("--db", "other.duckdb", "--timeout-s", "5", "merge", "ex")) == (
        "Error: ex/zz.parquet is a FIFO, not a Parquet file of an export")
    os.unlink("ex/zz.parquet")
    os.symlink(tmp_path / "tiny.csv", "ex/aa.parquet")
    assert one_line_error(invoke("--db", "other.duckdb", "merge", "ex")) == (
        "Error: ex/aa.parquet is a symbolic link: an export's files are read only from its "
        "own folder (copy the file in)")
    assert digest(Path("other.duckdb")) == other


@pytest.mark.parametrize("name, error", [
    ("victim.txt/x.duckdb", "Error: cannot open victim.txt/x.duckdb: Not a directory"),
    (os.fsdecode(b"b\xff.duckdb"), "Error: the database path 'b\\udcff.duckdb' is not valid "
                                   "UTF-8, which DuckDB cannot open: rename the file"),
])
def test_odd_database_paths_are_one_line(lab, name, error):
    """Before: tracebacks (a path through a regular file; undecodable bytes: DuckDB's
    std::bad_cast)."""
    Path("victim.txt").write_text("mine\n")
    assert one_line_error(invoke("--db", name, "init")) == error
    assert sorted(os.listdir()) == ["lab.duckdb", "tiny.csv", "tiny.toml", "victim.txt"]


@pytest.mark.parametrize("name", ["a" * 245 + ".duckdb", "é" * 120 + ".duckdb"])
def test_a_long_name_is_built_aside_under_a_short_one(lab, name):
    """A new database is built under a temporary name beside it: for a name of 245 bytes or
    more that name passed the file system's 255 (a traceback); now it is shortened, whole
    characters kept."""
    result = invoke("--db", name, "init")
    assert result.exit_code == 0, result.output
    assert name in os.listdir() and not [n for n in os.listdir() if "gpudb-new" in n]


def test_a_file_cut_short_is_named_damaged(lab):
    """Issue 41 item 6: a file cut near its end was refused with DuckDB's words only ("database
    has been invalidated" on a write)."""
    os.truncate(lab, lab.stat().st_size - 786_432)
    before = digest(lab)
    for args in (("info",), ("ingest", "tiny.csv", "--mapping", "tiny.toml", "--replace")):
        line = one_line_error(invoke("--db", lab, *args))
        assert line.startswith("Error: the database file is damaged (cut short or corrupted); "
                               "what this command had not committed is not written: restore "
                               "it from a copy (DuckDB: "), line
        assert digest(lab) == before


def mounted(folder: Path, options: str):
    """A tmpfs mounted at ``folder`` with ``options``, where this machine allows it."""
    import subprocess

    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        # lazy: detached even where a failed test left a descriptor open in this process
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def read_only_folder(tmp_path):
    """A read-only file system."""
    yield from mounted(tmp_path / "ro", "ro,size=1m")


@pytest.fixture
def full_folder(tmp_path):
    """A file system with no space left (16 KiB, filled)."""
    for folder in mounted(tmp_path / "full", "size=16k"):
        with open(folder / "fill", "wb") as fill:
            try:
                fill.write(b"\0" * 65_536)
            except OSError:
                pass
        yield folder


def test_a_new_file_on_a_read_only_file_system_is_one_line(lab, read_only_folder):
    """Issue 41 item 7: the clean-up of the built-aside temporary raised OSError (EROFS)."""
    target = read_only_folder / "new.duckdb"
    for args in (("init",), ("ingest", "tiny.csv", "--mapping", "tiny.toml")):
        assert one_line_error(invoke("--db", target, *args)) == (
            f"Error: cannot open {target}: IO Error: Cannot open file \"{target}\": Read-only "
            "file system")


def test_figures_reports_and_exports_onto_a_full_disk_are_one_line(lab, full_folder):
    """Issue 41 item 7: a PDF plot onto a full disk was a traceback. Each writes through a
    temporary of its own and leaves nothing behind."""
    for args, target in ((("plot", "mape_by_kernel", "--out"), "x.pdf"),
                         (("plot", "run_by_setting", "--out"), "x.png"),
                         (("report", "--out"), "report"), (("export",), "ex")):
        line = one_line_error(invoke("--db", lab, *args, full_folder / target))
        assert "No space left on device" in line or "no space left on device" in line, line
        assert sorted(os.listdir(full_folder)) == ["fill"], args
        # and no file on it still open (export's Parquet file stayed open after the failure)
        fds = Path("/proc/self/fd")
        assert not [link for link in (os.readlink(f) for f in fds.iterdir() if f.exists())
                    if link.startswith(str(full_folder))], args
