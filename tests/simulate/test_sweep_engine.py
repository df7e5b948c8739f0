"""A database holds one simulator engine's runs (run.engine, migration 0014): `gpudb sweep
--engine` writes it, a sweep without --engine keeps to the file's engine, and another engine's
runs are refused in one line with nothing written, by sweep and by merge alike."""

import duckdb

import gpudb
from gpudb.store.transfer import merge
from conftest import invoke, one_line_error, row_counts


def _engines(path):
    con = gpudb.connect(path, read_only=True)
    try:
        return con.execute("SELECT engine, source, count(*) FROM run GROUP BY ALL "
                           "ORDER BY ALL").fetchall()
    finally:
        con.close()


def test_one_engine_per_database(tmp_path, tiny_suite_path):
    db = tmp_path / "sampled.duckdb"
    base = ("--db", db, "sweep", "--gpu", "gtx480", "--suite", tiny_suite_path,
            "--core-mhz", "700,300", "--mem-mhz", "924", "--jobs", "1")
    result = invoke(*base, "--engine", "sampled")
    assert result.exit_code == 0, result.output
    assert _engines(db) == [("sampled", "sim", 4)]
    before = row_counts(db)
    line = one_line_error(invoke(*base, "--engine", "reference"))
    assert "holds the sampled engine's simulated runs" in line and "--engine sampled" in line
    assert row_counts(db) == before
    # without --engine a sweep keeps to the file's engine: the same runs, none simulated
    result = invoke(*base)
    assert result.exit_code == 0, result.output
    assert "0 runs simulated, 4 already" in result.output
    # a reference database cannot be merged into it either, and nothing is merged
    other = tmp_path / "reference.duckdb"
    assert invoke("--db", other, "sweep", "--gpu", "gtx480", "--suite", tiny_suite_path,
                  "--core-mhz", "700", "--mem-mhz", "924", "--jobs", "1").exit_code == 0
    assert _engines(other) == [("reference", "sim", 2)]
    line = one_line_error(invoke("--db", db, "merge", other))
    assert "two simulator engines (reference and sampled)" in line
    assert row_counts(db) == before
    # the same kernels' instructions, engine for engine
    con = duckdb.connect(str(db), read_only=True)
    con.execute(f"ATTACH '{other}' AS ref (READ_ONLY)")
    pairs = con.execute("SELECT s.instructions, r.instructions FROM run AS s JOIN ref.run AS r "
                        "USING (kernel_id, core_mhz)").fetchall()
    con.close()
    assert len(pairs) == 2 and all(a == b for a, b in pairs)


def test_migration_14_names_the_reference_engine_of_older_runs(tiny_db, tiny_suite_path):
    """Runs simulated before engines existed are the cycle engine's; measured runs have
    none."""
    assert invoke("--db", tiny_db, "sweep", "--gpu", "gtx480", "--suite", tiny_suite_path,
                  "--core-mhz", "700", "--mem-mhz", "924", "--jobs", "1").exit_code == 0
    con = duckdb.connect(str(tiny_db))
    con.execute("ALTER TABLE run DROP COLUMN engine")
    con.execute("DELETE FROM gpudb_migration WHERE version = 14")
    con.close()
    gpudb.connect(tiny_db).close()      # migrates the file
    assert _engines(tiny_db) == [("reference", "sim", 2), (None, "measured", 8)]
