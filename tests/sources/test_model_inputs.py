"""[inputs] of a mapping: Wang & Chu's model inputs (paper 003) stored as whole-run metrics
under canonical names, from columns or DuckDB expressions evaluated with external access off."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import MAPPINGS, real_file, row_counts

import gpudb
from gpudb.sources.tabular.ingest import ingest
from gpudb.sources.tabular.mapping import INPUTS, MappingError, load_mapping
from gpudb.sources.tabular.read import IngestError

INPUT_NAMES = sorted(INPUTS)


def _ingest(db, files, mapping):
    con = gpudb.connect(db)
    try:
        return ingest(con, [str(f) for f in files], load_mapping(mapping))
    finally:
        con.close()


def _inputs(db, where: str = "TRUE") -> dict[tuple[str, float, float], dict[str, float]]:
    """(kernel name, core MHz, mem MHz) -> {input name: value} of the stored inputs."""
    con = gpudb.connect(db, read_only=True)
    try:
        rows = con.execute(
            "SELECT k.name, r.core_mhz, r.mem_mhz, m.name, m.value FROM metric m "
            "JOIN run r USING (run_id) JOIN kernel k USING (kernel_id) "
            f"WHERE m.idx IS NULL AND m.name IN ({', '.join('?' * len(INPUT_NAMES))}) "
            f"AND {where}", INPUT_NAMES).fetchall()
    finally:
        con.close()
    out: dict = {}
    for kernel, core, mem, name, value in rows:
        out.setdefault((kernel, core, mem), {})[name] = value
    return out


# --- the shipped GTX 1080 Ti mapping on the real file --------------------------------------

def test_gtx1080ti_stores_seven_inputs_for_every_run(fresh_db):
    data = real_file("gtx1080ti-train.csv")
    [report] = _ingest(fresh_db, [data], MAPPINGS / "gtx1080ti.toml")
    assert (report.rows, report.runs_added) == (300, 300)
    # every input of every run is stored: no row gives NULL or a non-finite value
    assert report.inputs == {name: 300 for name in INPUTS}
    assert report.inputs_summary().startswith("blocks 300, ")
    inputs = _inputs(fresh_db)
    assert len(inputs) == 300
    assert all(set(v) == set(INPUTS) for v in inputs.values())
    missing = sum(1 for v in inputs.values() if any(v.get(n) is None for n in INPUTS))
    assert missing == 0
    assert all(0 <= v["l2_hit_rate"] <= 1 and 0 < v["achieved_occupancy"] <= 1
               for v in inputs.values())
    con = gpudb.connect(fresh_db, read_only=True)
    try:
        # 45 nvprof metrics + warps (the row number, argNo, blocks and the duplicate
        # l2_tex_write_throughput.1 are not metrics) + 6 inputs (achieved_occupancy is the
        # column's own metric, stored once)
        per_run = con.execute("SELECT DISTINCT count(*) FROM metric GROUP BY run_id").fetchall()
        assert per_run == [(51,)]
        assert con.execute("SELECT count(*) FROM metric WHERE name = 'achieved_occupancy'"
                           ).fetchall() == [(300,)]
        gpu = con.execute("SELECT n_sm, max_warps_per_sm, max_ctas_per_sm, nominal_core_mhz, "
                          "nominal_mem_mhz FROM gpu WHERE gpu_id = 'gtx1080ti'").fetchall()
        assert gpu == [(28, 64, 32, 1800.0, 5000.0)]
        experiment = con.execute("SELECT name FROM experiment").fetchall()
        assert experiment == [("real-gtx1080ti",)]
    finally:
        con.close()


def test_gtx1080ti_inputs_match_hand_computed_rows(fresh_db):
    data = real_file("gtx1080ti-train.csv")
    _ingest(fresh_db, [data], MAPPINGS / "gtx1080ti.toml")
    inputs = _inputs(fresh_db, "r.core_mhz = 1600 AND r.mem_mhz = 4000")

    # Line 2: BlackScholes,1600,4000,input00,BlackScholesGPU,..., blocks "(224000 1 1)
    # (128 1 1)", achieved_occupancy 0.88749, gld_transactions 21504000 (8.0 per request),
    # gst_transactions 7168000 (4.0 per request), dram_read_transactions 10752190,
    # l2_read_transactions 10752415, shared load/store transactions 0,
    # l2_tex_read_transactions 10752000, inst_executed 146048000.
    # W = 224000 blocks x ceil(128 / 32) = 4 warps = 896000 warps.
    w = 224000 * 4
    expected = {
        "blocks": 224000,
        "warps_per_block": 4,
        "gld_trans_per_warp": (10752000 + 7168000) / w,                    # 20
        "l2_hit_rate": 1 - 10752190 / 10752415,                            # 2.09e-5
        "comp_inst_per_warp": (146048000 - 21504000 / 8.0 - 7168000 / 4.0) / w,   # 158
        "shm_inst_per_warp": 0.0,
        "achieved_occupancy": 0.88749,
    }
    assert inputs[("BlackScholes:BlackScholesGPU", 1600.0, 4000.0)] == pytest.approx(
        expected, rel=1e-9, abs=0)

    # Line 142: hotspot,1600,4000,input00,calculate_temp,..., blocks "(64 64 1) (16 16 1)",
    # achieved_occupancy 0.734997, gld_transactions 516128 (7.9375 per request),
    # gst_transactions 32768 (2.0), dram_read_transactions 56773, l2_read_transactions 386363,
    # shared_load_transactions 684544 (0.9759120000000001 per request),
    # shared_store_transactions 244224 (0.9352940000000001), l2_tex_read_transactions 386080,
    # inst_executed 11922176.
    w = 4096 * 8
    expected = {
        "blocks": 4096,
        "warps_per_block": 8,
        "gld_trans_per_warp": (386080 + 32768) / w,
        "l2_hit_rate": 1 - 56773 / 386363,
        "comp_inst_per_warp": (11922176 - 516128 / 7.9375 - 32768 / 2.0
                               - 684544 / 0.9759120000000001
                               - 244224 / 0.9352940000000001) / w,
        "shm_inst_per_warp": (684544 + 244224) / w,
        "achieved_occupancy": 0.734997,
    }
    assert inputs[("hotspot:calculate_temp", 1600.0, 4000.0)] == pytest.approx(
        expected, rel=1e-9, abs=0)

    # Line 122: gaussian,1600,4000,input00,Fan2,..., blocks "(2048 2048 1) (4 4 1)": 16-thread
    # blocks are one (half-full) warp each, though the warps column says 2097152 (threads / 32).
    # achieved_occupancy 0.444352, gld_transactions 80175936 (6.371619 per request),
    # gst_transactions 37304056 (8.893833), dram_read_transactions 12769867,
    # l2_read_transactions 41404668, l2_tex_read_transactions 41403755, no shared memory,
    # inst_executed 209684696.
    w = 2048 * 2048 * 1
    expected = {
        "blocks": 2048 * 2048,
        "warps_per_block": 1,
        "gld_trans_per_warp": (41403755 + 37304056) / w,
        "l2_hit_rate": 1 - 12769867 / 41404668,
        "comp_inst_per_warp": (209684696 - 80175936 / 6.371619 - 37304056 / 8.893833) / w,
        "shm_inst_per_warp": 0.0,
        "achieved_occupancy": 0.444352,
    }
    assert inputs[("gaussian:Fan2", 1600.0, 4000.0)] == pytest.approx(expected, rel=1e-9, abs=0)


def test_gtx1080ti_clamps_l2_hit_rates_of_kernels_that_read_little(fresh_db):
    data = real_file("gtx1080ti-train.csv")
    _ingest(fresh_db, [data], MAPPINGS / "gtx1080ti.toml")
    # quasirandomGenerator at 1800/5000: l2_read_transactions 8092 < dram_read 11304
    inputs = _inputs(fresh_db, "r.core_mhz = 1800 AND r.mem_mhz = 5000")
    assert inputs[("quasirandomGenerator:quasirandomGeneratorKernel", 1800.0, 5000.0)][
        "l2_hit_rate"] == 0.0
    zero = sum(1 for v in _inputs(fresh_db).values() if v["l2_hit_rate"] == 0.0)
    # 10 rows where DRAM reads exceed L2 reads (eigenvalues 1, quasirandomGenerator 3,
    # scalarProd 2, transpose 4) and transpose at 1700/5500, where they are equal
    assert zero == 11


# --- the [inputs] section on small hand-made files -------------------------------------------

CSV = """kernel,core_mhz,mem_mhz,time_ms,power_w,hit_pct,trans,warps,launch,note
alpha,500,800,4.0,100,50,64,32,(2 1 1),x
alpha,1000,800,2.0,250,25,64,32,(2 1 1),y
beta,500,800,10.0,50,100,0,16,(1 1 1),z
beta,1000,800,5.5,90,0,8,16,(1 1 1),w
"""
MAPPING = """\
[gpu]
gpu_id = "tiny"
name = "tiny test GPU"
n_sm = 2
[run]
suite = "tiny"
[columns]
kernel = "kernel"
core_mhz = "core_mhz"
mem_mhz = "mem_mhz"
time = { column = "time_ms", unit = "ms" }
power = { column = "power_w", unit = "W" }
[metrics]
text = ["note"]
"""
INPUTS_TOML = """\
[inputs]
l2_hit_rate = { column = "hit_pct", unit = "%" }
gld_trans_per_warp = { expr = "trans / warps", unit = "transactions/warp" }
blocks = { expr = "CAST(regexp_extract(launch, '\\\\((\\\\d+)', 1) AS INTEGER)", unit = "count" }
"""


def _files(tmp_path, inputs=INPUTS_TOML, csv=CSV, mapping=MAPPING):
    data = tmp_path / "in.csv"
    data.write_text(csv)
    path = tmp_path / "in.toml"
    path.write_text(mapping + inputs)
    return data, path


def test_percent_is_stored_as_a_fraction_and_columns_stay_metrics(fresh_db, tmp_path):
    data, mapping = _files(tmp_path)
    [report] = _ingest(fresh_db, [data], mapping)
    assert report.inputs == {"l2_hit_rate": 4, "gld_trans_per_warp": 4, "blocks": 4}
    inputs = _inputs(fresh_db)
    assert inputs[("alpha", 500.0, 800.0)] == {
        "l2_hit_rate": 0.5, "gld_trans_per_warp": 2.0, "blocks": 2.0}
    assert inputs[("alpha", 1000.0, 800.0)]["l2_hit_rate"] == 0.25
    assert inputs[("beta", 500.0, 800.0)] == {
        "l2_hit_rate": 1.0, "gld_trans_per_warp": 0.0, "blocks": 1.0}
    con = gpudb.connect(fresh_db, read_only=True)
    try:
        names = {r[0] for r in con.execute("SELECT DISTINCT name FROM metric").fetchall()}
    finally:
        con.close()
    # the columns the inputs read are metrics as before (launch and note are text)
    assert names == {"hit_pct", "trans", "warps", "l2_hit_rate", "gld_trans_per_warp",
                     "blocks"}
    # 4 runs x (3 column metrics + 3 inputs)
    assert report.metrics_added == 24


def test_values_that_are_not_finite_are_not_stored(fresh_db, tmp_path):
    # beta has warps 16 and trans 0 or 8; a division by zero gives NaN or inf
    data, mapping = _files(tmp_path, inputs=(
        '[inputs]\ngld_trans_per_warp = { expr = "trans / (warps - 16)", '
        'unit = "transactions/warp" }\n'
        'shm_inst_per_warp = { expr = "CASE WHEN warps > 16 THEN 1 END", '
        'unit = "transactions/warp" }\n'))
    [report] = _ingest(fresh_db, [data], mapping)
    assert report.inputs == {"gld_trans_per_warp": 2, "shm_inst_per_warp": 2}
    assert report.inputs_summary() == ("gld_trans_per_warp 2 (2 not stored), "
                                       "shm_inst_per_warp 2 (2 not stored)")
    inputs = _inputs(fresh_db)
    assert inputs[("alpha", 500.0, 800.0)]["gld_trans_per_warp"] == 4.0
    assert ("beta", 500.0, 800.0) not in inputs and ("beta", 1000.0, 800.0) not in inputs


def test_ignored_columns_are_usable_and_text_columns_are_text(fresh_db, tmp_path):
    data, mapping = _files(tmp_path, mapping=MAPPING.replace(
        'text = ["note"]', 'text = ["note", "warps"]\nignore = ["trans"]'), inputs=(
        '[inputs]\ngld_trans_per_warp = { expr = "trans / CAST(warps AS DOUBLE)", '
        'unit = "transactions/warp" }\n'
        'warps_per_block = { expr = "length(warps)", unit = "count" }\n'))
    _ingest(fresh_db, [data], mapping)
    inputs = _inputs(fresh_db)
    assert inputs[("alpha", 500.0, 800.0)] == {"gld_trans_per_warp": 2.0, "warps_per_block": 2}
    con = gpudb.connect(fresh_db, read_only=True)
    try:
        names = {r[0] for r in con.execute("SELECT DISTINCT name FROM metric").fetchall()}
    finally:
        con.close()
    assert names == {"hit_pct", "gld_trans_per_warp", "warps_per_block"}


def test_parquet_columns_keep_their_types(fresh_db, tmp_path):
    table = pa.table({"kernel": ["a", "b"], "core_mhz": [500, 500], "mem_mhz": [800, 800],
                      "time_ms": [1.0, 2.0], "power_w": [10.0, 20.0],
                      "occ": pa.array([50, 75], pa.int16()),
                      "hit": pa.array([0.25, 0.5], pa.float32())})
    pq.write_table(table, tmp_path / "in.parquet")
    mapping = tmp_path / "in.toml"
    mapping.write_text(MAPPING.replace('text = ["note"]', "") + (
        '[inputs]\nachieved_occupancy = { column = "occ", unit = "%" }\n'
        'l2_hit_rate = { expr = "hit * 2", unit = "fraction" }\n'))
    _ingest(fresh_db, [tmp_path / "in.parquet"], mapping)
    inputs = _inputs(fresh_db)
    assert inputs[("a", 500.0, 800.0)] == {"achieved_occupancy": 0.5, "l2_hit_rate": 0.5}
    assert inputs[("b", 500.0, 800.0)] == {"achieved_occupancy": 0.75, "l2_hit_rate": 1.0}


def test_an_input_that_is_its_own_metric_column_is_stored_once(fresh_db, tmp_path):
    csv = CSV.replace("hit_pct", "l2_hit_rate").replace(",50,64", ",0.5,64").replace(
        ",25,64", ",0.25,64").replace(",100,0", ",1,0")
    data, mapping = _files(tmp_path, csv=csv, inputs=(
        '[inputs]\nl2_hit_rate = { column = "l2_hit_rate", unit = "fraction" }\n'))
    [report] = _ingest(fresh_db, [data], mapping)
    assert report.inputs == {"l2_hit_rate": 4}
    assert report.metrics_added == 4 * 3   # l2_hit_rate, trans, warps
    assert _inputs(fresh_db)[("alpha", 1000.0, 800.0)] == {"l2_hit_rate": 0.25}


# --- one-line errors, nothing written --------------------------------------------------------

@pytest.mark.parametrize("inputs, message", [
    ('[inputs]\nl2_hitrate = { column = "hit_pct", unit = "%" }',
     r"unknown key 'l2_hitrate' in \[inputs\]; expected one of achieved_occupancy, blocks, "),
    ('[inputs]\nl2_hit_rate = { column = "hit_pct", unit = "percent" }',
     r"\[inputs\] l2_hit_rate: unknown unit 'percent'; use one of 'fraction', '%'"),
    ('[inputs]\nblocks = { column = "warps", unit = "transactions/warp" }',
     r"\[inputs\] blocks: unknown unit 'transactions/warp'; use one of 'count'"),
    ('[inputs]\nblocks = { column = "warps" }', r"\[inputs\] blocks needs a 'unit'"),
    ('[inputs]\nblocks = { column = "warps", expr = "warps", unit = "count" }',
     r"\[inputs\] blocks needs exactly one of 'column' and 'expr'"),
    ('[inputs]\nblocks = { unit = "count" }',
     r"\[inputs\] blocks needs exactly one of 'column' and 'expr'"),
    ('[inputs]\nblocks = { column = "warps", unit = "count", scale = 2 }',
     r"unknown key 'scale' in \[inputs\] blocks"),
    ('[inputs]\nblocks = "warps"', r"\[inputs\] blocks must be \{ column = \.\.\., unit"),
    ('[inputs]\nblocks = { column = "", unit = "count" }',
     r"\[inputs\] blocks: the column name is empty"),
    ('[inputs]\nblocks = { expr = "", unit = "count" }', r"\[inputs\] blocks expr must not be"),
    ('[inputs]\nblocks = { expr = 3, unit = "count" }',
     r"\[inputs\] blocks expr must be a string, not the number 3"),
    ('[inputs]\nblocks = { expr = "warps +", unit = "count" }',
     r"\[inputs\] blocks: expr is not one SQL expression: Parser Error"),
    ('[inputs]\nblocks = { expr = "1; DROP TABLE run", unit = "count" }',
     r"\[inputs\] blocks: expr is not one SQL expression"),
    ('[inputs]\nblocks = { expr = "1) FROM data; SELECT (1", unit = "count" }',
     r"\[inputs\] blocks: expr is not one SQL expression"),
    ("inputs = 3\n", r"\[inputs\] must be a table, not the number 3"),
])
def test_wrong_inputs_section_is_one_line(tmp_path, inputs, message):
    if inputs.startswith("[inputs]"):
        _, mapping = _files(tmp_path, inputs=inputs + "\n")
    else:  # a top-level key, before the tables
        _, mapping = _files(tmp_path, inputs="", mapping=inputs + MAPPING)
    with pytest.raises(MappingError, match=message) as err:
        load_mapping(mapping)
    assert str(err.value).startswith(f"{mapping}: ") and "\n" not in str(err.value)


@pytest.mark.parametrize("inputs, message", [
    # a column the file lacks
    ('blocks = { expr = "nblocks * 2", unit = "count" }',
     r"\[inputs\] blocks: expr names column 'nblocks', which .*in\.csv does not have"),
    ('blocks = { column = "nblocks", unit = "count" }',
     r"\[inputs\] blocks: column 'nblocks' is not a column of .*in\.csv"),
    # reading files is refused before anything runs: an expression holds no query (issue
    # 31); the connection's external access stays disabled beneath that
    ("blocks = { expr = \"(SELECT count(*) FROM read_csv('/etc/passwd'))\", unit = \"count\" }",
     r"\[inputs\] blocks: expr holds a query \(SELECT \.\.\.\)"),
    ("blocks = { expr = \"(SELECT count(*) FROM read_text('/etc/passwd'))\", unit = \"count\" }",
     r"\[inputs\] blocks: expr holds a query \(SELECT \.\.\.\)"),
    ("blocks = { expr = \"(SELECT count(*) FROM '/etc/passwd')\", unit = \"count\" }",
     r"\[inputs\] blocks: expr holds a query \(SELECT \.\.\.\)"),
    # ... and so is changing that setting, even through query()
    ("blocks = { expr = \"(SELECT 1 FROM query('SET enable_external_access = true'))\", "
     "unit = \"count\" }", r"\[inputs\] blocks: expr holds a query \(SELECT \.\.\.\)"),
    # not numbers
    ('blocks = { expr = "launch", unit = "count" }',
     r"\[inputs\] blocks: expr gives VARCHAR values over .*in\.csv, not numbers"),
    ('blocks = { column = "note", unit = "count" }',
     r"\[inputs\] blocks: column 'note' gives VARCHAR values"),
    ('blocks = { expr = "warps > 1", unit = "count" }', r"gives BOOLEAN values"),
    ('blocks = { expr = "NULL", unit = "count" }', r'gives "NULL" values'),
    # not one value per row
    ('blocks = { expr = "sum(warps)", unit = "count" }',
     r"\[inputs\] blocks: expr must give one value per row, not aggregate the file"),
    ('blocks = { expr = "*", unit = "count" }',
     r"\[inputs\] blocks: expr gives 11 values per row; it must give one"),
    ('blocks = { expr = "unnest([warps, warps])", unit = "count" }',
     r"\[inputs\] blocks: expr gives 8 rows for the 4 of"),
    # fails while running
    ('blocks = { expr = "CAST(launch AS DOUBLE)", unit = "count" }',
     r"\[inputs\] blocks: expr fails on .*in\.csv: Conversion Error"),
    # out of range after conversion: negative, or a fraction above 1 (a % column as fraction)
    ('blocks = { expr = "warps - 20", unit = "count" }',
     r"\[inputs\] blocks is -4\.0 at line 4 of .*in\.csv: must not be negative"),
    ('l2_hit_rate = { column = "hit_pct", unit = "fraction" }',
     r"\[inputs\] l2_hit_rate is 50\.0 at line 2 of .*: must be a fraction in"),
    ('achieved_occupancy = { expr = "hit_pct * 2", unit = "%" }',
     r"\[inputs\] achieved_occupancy is 2\.0 \(200\.0 %\) at line 4 of"),
    # the name of a metric from a file column
    ('blocks = { expr = "warps", unit = "count" }\n[metrics.rename]\ntrans = "blocks"',
     r"\[inputs\] blocks would be stored under the name of metric 'blocks', which column "
     r"'trans' of .*in\.csv already is"),
])
def test_bad_inputs_at_ingest_are_one_line_and_write_nothing(tiny_db, tmp_path, inputs,
                                                             message):
    mapping_text = MAPPING
    if "[metrics.rename]" in inputs:
        inputs, rename = inputs.split("\n[metrics.rename]\n")
        mapping_text = MAPPING.replace('text = ["note"]', f'text = ["note"]\nrename = {{ '
                                       f'{rename} }}')
    data, mapping = _files(tmp_path, inputs="[inputs]\n" + inputs + "\n", mapping=mapping_text)
    before = row_counts(tiny_db)
    with pytest.raises(IngestError, match=message) as err:
        _ingest(tiny_db, [data], mapping)
    assert "\n" not in str(err.value)
    assert str(err.value).startswith(f"{mapping}: [inputs] ")
    assert row_counts(tiny_db) == before


def test_a_metric_column_named_like_an_input_collides(tiny_db, tmp_path):
    # a file column called blocks is metric 'blocks'; the input blocks computed from another
    # column would overwrite its meaning
    csv = CSV.replace(",warps,", ",blocks,")
    data, mapping = _files(tmp_path, csv=csv, inputs=(
        '[inputs]\nblocks = { expr = "trans", unit = "count" }\n'))
    before = row_counts(tiny_db)
    with pytest.raises(IngestError, match=r"\[inputs\] blocks would be stored under the name "
                                          r"of metric 'blocks', which column 'blocks' of"):
        _ingest(tiny_db, [data], mapping)
    assert row_counts(tiny_db) == before
    # the same column in another unit is a collision too
    data, mapping = _files(tmp_path, csv=csv.replace(",hit_pct,", ",l2_hit_rate,"), inputs=(
        '[inputs]\nl2_hit_rate = { column = "l2_hit_rate", unit = "%" }\n'))
    with pytest.raises(IngestError, match=r"metric 'l2_hit_rate', which column 'l2_hit_rate'"):
        _ingest(tiny_db, [data], mapping)
    assert row_counts(tiny_db) == before


def test_columns_differing_only_in_case_cannot_be_used_in_expressions(tiny_db, tmp_path):
    csv = CSV.replace(",trans,", ",Warps,")
    data, mapping = _files(tmp_path, csv=csv, inputs=(
        '[inputs]\nblocks = { column = "warps", unit = "count" }\n'))
    with pytest.raises(IngestError, match=r"column 'warps' is not a column of .*in\.csv "
                                          r"\(columns 'Warps', 'warps' differ only in case, "
                                          "which SQL does not tell apart, so expressions"):
        _ingest(tiny_db, [data], mapping)
    data, mapping = _files(tmp_path, csv=csv, inputs=(
        '[inputs]\nblocks = { expr = "warps", unit = "count" }\n'))
    with pytest.raises(IngestError, match=r"expr names column 'warps', which .* does not have "
                                          r"\(columns 'Warps', 'warps' differ only in case"):
        _ingest(tiny_db, [data], mapping)
