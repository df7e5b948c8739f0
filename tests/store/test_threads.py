"""Several threads of one process opening one file (issue 41 item 2): each connects, or gets
gpudb's one-line error; never a raw DuckDB exception, never a file removed that another
thread created or wrote."""

from __future__ import annotations

import threading

import pytest

import gpudb


def in_threads(path, n: int) -> list[str]:
    """n threads each connect to ``path``, create table t if missing and insert its number;
    returns the errors they met."""
    errors: list[str] = []
    start = threading.Barrier(n)

    def work(i: int) -> None:
        try:
            start.wait()
            con = gpudb.connect(path)
            try:
                con.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
                con.execute("INSERT INTO t VALUES (?)", [i])
            finally:
                con.close()
        except Exception as exc:  # noqa: BLE001 - every error is the finding
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def rows(path) -> list[int]:
    con = gpudb.connect(path, read_only=True)
    try:
        return sorted(x for (x,) in con.execute("SELECT x FROM t").fetchall())
    finally:
        con.close()


@pytest.mark.parametrize("trial", range(4))
def test_threads_on_a_new_file_keep_every_write(tmp_path, trial):
    """Before: the thread that lost the race to register gpudb's functions raised
    CatalogException ("predict_crisp already exists") and deleted the file the other had
    created; the other's committed write went to an unlinked file (9 of 9 trials)."""
    path = tmp_path / f"new{trial}.duckdb"
    assert in_threads(path, 2) == []
    assert rows(path) == [0, 1]


def test_threads_on_an_existing_file_all_connect(tmp_path):
    """Before: 3 of 4 threads raised a raw CatalogException."""
    path = tmp_path / "lab.duckdb"
    gpudb.connect(path).close()
    for round_ in range(3):
        assert in_threads(path, 4) == []
        assert rows(path) == sorted(list(range(4)) * (round_ + 1))


def test_every_udf_is_there_on_a_first_and_a_second_connection(tmp_path):
    """A new database instance gets every UDF registered without asking the catalog; a second
    connection to it in the same process (DuckDB shares UDFs per instance and refuses a name
    twice) gets the ones it lacks, here none: both answer with every gpudb function."""
    from gpudb.store import udfs
    names = sorted(udf.name for udf in udfs.functions())
    db = tmp_path / "lab.duckdb"
    first = gpudb.connect(db)
    second = gpudb.connect(db)
    try:
        for con in (first, second):
            got = sorted(r[0] for r in con.execute(
                "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_name IN "
                "(SELECT unnest(?::TEXT[]))", [names]).fetchall())
            assert got == names
        # and they compute: the same call on both connections
        a = first.execute("SELECT predict_proportional(2.0, 500.0, 1000.0)").fetchone()
        b = second.execute("SELECT predict_proportional(2.0, 500.0, 1000.0)").fetchone()
        assert a == b == (1.0,)          # t x f / f_target: 2 ns x 500 / 1000
    finally:
        second.close()
        first.close()
