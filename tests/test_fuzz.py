"""Fuzz: malformed files, mappings and database files through ingest, merge and the read
commands (issue 12, "must show").

Every case comes from its own generator seeded with ``f"{SEED}:{class}:{index}"``, so a failure
names a case that ``python tests/test_fuzz.py CLASS INDEX DIR`` writes out again, whatever ran
before it. For every malformed input the test asserts:

- no traceback: the Python API raises a GpudbError; the CLI exits 1 (2 for a usage error) with
  SystemExit and prints exactly one line, starting "Error: ";
- no hang: each case runs under a timeout (SIGALRM in this process; FIFOs, devices and SQLite
  files in a subprocess with a timeout and a memory cap);
- no partial write: after a refusal the target's row counts (and temporary tables) are
  unchanged, and where the CLI wrote to a file, the file's bytes are unchanged and no new file
  appeared; the read commands change neither the file they read nor its folder;
- every refusal is one line, and an ingest refusal names the data file or the mapping.

Ingest cases (csv, parquet, mapping) go through ``gpudb.sources.tabular.ingest`` on one open
connection, and every CLI_EVERY-th also through ``gpudb ingest`` (CliRunner) against a second
target. Database cases go through ``gpudb info``, ``gpudb query best_setting`` or ``gpudb
merge`` (CliRunner), one command per case in turn. A corrupted copy of a real gpudb file may
still be readable, so for those (``may_succeed``) success is allowed too; every other case must
be refused.

The test runs once per family (FAMILIES: csv, parquet, mapping, expr, size, duckdb,
special), each on its own copies of one pristine file, so that pytest-xdist spreads the 2,004
inputs over its workers (``pytest tests/test_fuzz.py -k duckdb`` runs one family). A family's
counts are printed (run with ``-s``) and written to ``fuzz_counts.json`` in its tmp_path.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import math
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import TABLES, TINY_CSV, TINY_MAPPING

import gpudb
from gpudb.cli import cli
from gpudb.sources.tabular.ingest import ingest
from gpudb.sources.tabular.mapping import load_mapping
from gpudb.store.db import GpudbError

SEED = 12  # the number
COUNTS = {"csv": 450, "parquet": 250, "mapping": 300, "duckdb": 250, "expr": 500, "size": 230}
CONTROLS = 8  # per ingest class: confusers only, which must be accepted (the fuzz is not vacuous)
CLI_EVERY = 8
CASE_TIMEOUT_S = 30
SUBPROCESS_TIMEOUT_S = 60

class Hang(BaseException):
    """A case that did not answer within its timeout (BaseException: no handler swallows it)."""


@contextmanager
def deadline(seconds: float):
    def on_alarm(signum, frame):
        raise Hang(f"no answer within {seconds} s")
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def rng_for(cls: str, index: int) -> random.Random:
    return random.Random(f"{SEED}:{cls}:{index}")


def content(path: Path) -> bytes:
    """A file's bytes, compared whole before and after a case: exact, and a tenth of the
    time of hashing them (the duckdb family compares a 6 MB file 900 times)."""
    return path.read_bytes()


# ---------------------------------------------------------------------------------------------
# The data every ingest case starts from (synthetic numbers, not measurements)

HEADER = ["kernel", "core_mhz", "mem_mhz", "time_ms", "power_w", "dram_util"]
REQUIRED = ["kernel", "core_mhz", "mem_mhz", "time_ms", "power_w"]
NUMERIC = ["core_mhz", "mem_mhz", "time_ms", "power_w"]


def base_rows() -> list[list[str]]:
    rows = []
    for kernel, scale in (("fz-a", 1.0), ("fz-b", 2.5)):
        for core in ("500", "1000"):
            for mem in ("800", "1600"):
                time_ms = 4.0 * scale * 500 / float(core) * (1.1 if mem == "800" else 1.0)
                rows.append([kernel, core, mem, f"{time_ms:.4g}", f"{100 * scale:.4g}",
                             f"{0.1 * scale + float(mem) / 1e4:.3g}"])
    return rows


# Mapping variants of the csv and parquet classes; "units" converts (kHz, s) so that overflow
# and underflow after conversion can be provoked.
MAPPINGS = {
    "tiny": TINY_MAPPING.replace('gpu_id = "tiny"', 'gpu_id = "fz"'),
    "units": TINY_MAPPING.replace('gpu_id = "tiny"', 'gpu_id = "fz"')
    .replace('core_mhz = "core_mhz"', 'core_mhz = { column = "core_mhz", unit = "kHz" }')
    .replace('unit = "ms"', 'unit = "s"'),
}

# Strings DuckDB does not read as a number and Arrow does not read as NULL.
NOT_NUMBERS = ["abc", "1.2.3", "--1", "1e", "e5", "\u221e", "12abc", "$5", "five", "\u00bd",
               "1,5", "0x", "\u0663", "+-2", ".", "-", "1e+", "NaNx", "inf inity", "1 2",
               "'3'", "3'", "\u00a0", "1/2", "#", "\\N", "true"]
NON_FINITE = ["inf", "-inf", "Infinity", "-Infinity", "1e999", "-1e400", "INF", "+inf"]
NULLISH = ["", " ", "   ", "\t", "NA", "N/A", "null", "NULL", "NaN", "nan", "#N/A", "-nan"]
NON_POSITIVE = ["0", "-0", "-1", "-0.0", "-1e-300", "0e0", "0.000", "-5e3", "+0"]
NEGATIVE = ["-1", "-1e-300", "-0.5", "-1e308"]
# Odd column names a file may have besides the mapped ones (never exactly a mapped name).
ODD_NAMES = ['"', 'a"b', "x'y", "Core_MHz", "KERNEL", "TIME_MS", "_gpudb_row", "_c0", "_c1",
             "select", "; DROP TABLE run; --", "\u540d\u524d", "\u00e9", " ", "a,b", "1",
             "NULL", "order", "Power_W ", "x" * 300, "\u0000name"]


def csv_text(header: list[str], rows: list[list[str]], newline: str = "\n") -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator=newline).writerows([header, *rows])
    return out.getvalue()


def add_column(header, rows, name, values):
    header.append(name)
    for row, value in zip(rows, values, strict=True):
        row.append(value)


# ---------------------------------------------------------------------------------------------
# csv: each case one defect that must be refused, plus harmless confusers


def _csv_confusers(rng, header, rows):
    """Harmless oddities: odd extra column names, extra text columns, quoting."""
    for _ in range(rng.choice([0, 0, 1, 2])):
        name = rng.choice(ODD_NAMES).replace("\u0000", "")
        if name in header:
            continue
        if rng.random() < 0.7:
            add_column(header, rows, name, [f"{rng.uniform(0, 1e6):.6g}" for _ in rows])
        else:
            add_column(header, rows, name, [rng.choice(["x", "y z", "a,b", 'q"q']) for _ in rows])


def make_csv(cls_rng: random.Random, directory: Path, index: int, control: bool = False):
    """(label, data path, mapping name) of one malformed (or, for control, valid) CSV."""
    rng = cls_rng
    variant = rng.choice(["tiny", "tiny", "units"])
    header, rows = list(HEADER), [list(r) for r in base_rows()]
    newline = rng.choice(["\n", "\n", "\r\n"])
    bom = rng.random() < 0.1
    _csv_confusers(rng, header, rows)
    label = "control"
    raw: bytes | None = None
    if not control:
        defect = rng.choice([
            "drop_required", "rename_required", "not_a_number", "metric_not_a_number",
            "non_finite", "metric_non_finite", "nullish_required", "non_positive",
            "negative_power", "overflow_after_conversion", "duplicate_setting", "no_rows",
            "empty_file", "ragged", "duplicate_header", "empty_header", "binary", "bad_utf8",
            "nul_in_number", "huge_header_field", "huge_number", "truncated", "semicolons",
            "quoted_newline_header", "blank_kernel"])
        label = defect
        r = rng.randrange(len(rows))
        if defect == "drop_required":
            col = header.index(rng.choice(REQUIRED))
            header.pop(col)
            for row in rows:
                row.pop(col)
        elif defect == "rename_required":
            col = header.index(rng.choice(REQUIRED))
            name = header[col]
            header[col] = rng.choice([name.upper(), name.title(), " " + name, name + " ",
                                      name.replace("e", "\u0435"), name + "\u200b"])
        elif defect == "not_a_number":
            rows[r][header.index(rng.choice(NUMERIC))] = rng.choice(NOT_NUMBERS)
        elif defect == "metric_not_a_number":
            rows[r][header.index("dram_util")] = rng.choice(NOT_NUMBERS)
        elif defect == "non_finite":
            rows[r][header.index(rng.choice(NUMERIC))] = rng.choice(NON_FINITE)
        elif defect == "metric_non_finite":
            rows[r][header.index("dram_util")] = rng.choice(NON_FINITE)
        elif defect == "nullish_required":
            rows[r][header.index(rng.choice(REQUIRED))] = rng.choice(NULLISH)
        elif defect == "non_positive":
            rows[r][header.index(rng.choice(["core_mhz", "mem_mhz", "time_ms"]))] = rng.choice(
                NON_POSITIVE)
        elif defect == "negative_power":
            rows[r][header.index("power_w")] = rng.choice(NEGATIVE)
        elif defect == "overflow_after_conversion":
            if variant == "units":
                if rng.random() < 0.5:
                    rows[r][header.index("time_ms")] = rng.choice(["1e300", "1.7e308"])
                else:
                    rows[r][header.index("core_mhz")] = rng.choice(["5e-324", "1e-323"])
            elif rng.random() < 0.5:
                rows[r][header.index("time_ms")] = rng.choice(["1e303", "1.7e308", "1e308"])
            else:  # power x time overflows the energy
                rows[r][header.index("time_ms")] = rng.choice(["1e300", "1e200"])
                rows[r][header.index("power_w")] = rng.choice(["1e300", "1e200"])
        elif defect == "duplicate_setting":
            copy = list(rows[r])
            how = rng.choice(["same", "time", "spaces", "format"])
            if how == "time":
                copy[header.index("time_ms")] = f"{rng.uniform(0.1, 9):.5g}"
            elif how == "spaces":
                copy[0] = f"  {copy[0]} "
            elif how == "format":
                copy[header.index("core_mhz")] = f"{float(copy[1]):.1f}"
                copy[header.index("mem_mhz")] = f"{float(copy[2]):e}"
            rows.insert(rng.randrange(len(rows) + 1), copy)
        elif defect == "no_rows":
            rows = []
            newline = rng.choice(["\n", "\n\n\n"])
        elif defect == "empty_file":
            raw = rng.choice([b"", b"\n", b"\r\n", b"\xef\xbb\xbf", b" "])
        elif defect == "ragged":
            if rng.random() < 0.5:
                rows[r] = rows[r] + ["extra"] * rng.randint(1, 3)
            else:
                rows[r] = rows[r][:rng.randint(1, len(header) - 1)]
        elif defect == "duplicate_header":
            col = header.index("dram_util")
            header[col] = rng.choice([h for h in header if h != "dram_util"])
        elif defect == "empty_header":
            header[header.index("dram_util")] = ""
        elif defect == "binary":
            raw = rng.randbytes(rng.choice([1, 17, 300, 5000]))
        elif defect == "bad_utf8":
            row = rng.randrange(len(rows) + 1)
            target = header if row == len(rows) else rows[row]
            col = rng.randrange(len(target))
            target[col] = target[col] + "\udcff"  # written as the byte 0xff
        elif defect == "nul_in_number":
            col = header.index(rng.choice(NUMERIC))
            rows[r][col] = rows[r][col][:1] + "\u0000" + rows[r][col][1:]
        elif defect == "huge_header_field":
            header[header.index("dram_util")] = "m" * rng.choice([140_000, 300_000])
        elif defect == "huge_number":
            rows[r][header.index(rng.choice(NUMERIC + ["dram_util"]))] = "9" * rng.choice(
                [400, 5000, 100_000])
        elif defect == "semicolons":
            raw = csv_text(header, rows, newline).replace(",", ";").encode()
        elif defect == "quoted_newline_header":
            header[header.index(rng.choice(REQUIRED))] += "\n"
        elif defect == "blank_kernel":
            rows[r][0] = rng.choice(["", "  ", "\t"])
        if defect == "truncated":
            text = csv_text(header, rows, newline)
            lines = text.split(newline)
            line = rng.randrange(len(rows) + 1)
            start = sum(len(x) + len(newline) for x in lines[:line])
            last_comma = lines[line].rfind(",")
            # keep at least one character of the line and lose its last comma: a short row
            raw = text[:start + 1 + rng.randrange(max(last_comma - 1, 1))].encode()
    if raw is None:
        raw = csv_text(header, rows, newline).encode("utf-8", "surrogateescape")
    if bom and raw:
        raw = b"\xef\xbb\xbf" + raw
    path = directory / f"csv-{index}.csv"
    path.write_bytes(raw)
    return label, path, variant


# ---------------------------------------------------------------------------------------------
# parquet


def _wrong_type_array(rng, n, for_kernel):
    kinds = ["null", "list", "struct", "bad_binary"]
    if not for_kernel:
        kinds += ["bool", "timestamp", "date", "time", "words", "dict_words", "large_bad_binary"]
    kind = rng.choice(kinds)
    if kind == "null":
        return kind, pa.nulls(n)
    if kind == "list":
        return kind, pa.array([[1, 2]] * n)
    if kind == "struct":
        return kind, pa.array([{"a": 1}] * n)
    if kind == "bad_binary":
        return kind, pa.array([b"\xff\xfe" + bytes([i]) for i in range(n)], pa.binary())
    if kind == "large_bad_binary":
        return kind, pa.array([b"\x80" * 3] * n, pa.large_binary())
    if kind == "bool":
        return kind, pa.array([True] * n)
    if kind == "timestamp":
        return kind, pa.array([datetime.datetime(2020, 1, 1, 0, 0, i) for i in range(n)])
    if kind == "date":
        return kind, pa.array([datetime.date(2020, 1, 1 + i) for i in range(n)])
    if kind == "time":
        return kind, pa.array([datetime.time(1, 0, i) for i in range(n)])
    words = [f"w{i}x" for i in range(n)]
    if kind == "words":
        return kind, pa.array(words)
    return kind, pa.array(words).dictionary_encode()


def _numeric_array(rng, values: list[float], integral: bool):
    kind = rng.choice(["float64", "float32", "int64", "int32", "uint32", "decimal", "dict"]
                      if integral else ["float64", "float32", "decimal"])
    if kind == "float64":
        return pa.array(values, pa.float64())
    if kind == "float32":
        return pa.array(values, pa.float32())
    if kind == "int64":
        return pa.array([int(v) for v in values], pa.int64())
    if kind == "int32":
        return pa.array([int(v) for v in values], pa.int32())
    if kind == "uint32":
        return pa.array([int(v) for v in values], pa.uint32())
    if kind == "dict":
        return pa.array([int(v) for v in values], pa.int64()).dictionary_encode()
    import decimal
    return pa.array([decimal.Decimal(f"{v:.4f}") for v in values], pa.decimal128(18, 4))


def make_parquet(rng: random.Random, directory: Path, index: int, control: bool = False):
    variant = rng.choice(["tiny", "tiny", "units"])
    rows = base_rows()
    n = len(rows)
    cols: dict[str, pa.Array] = {
        "kernel": (pa.array([r[0] for r in rows]).dictionary_encode() if rng.random() < 0.3
                   else pa.array([r[0] for r in rows], rng.choice([pa.string(),
                                                                   pa.large_string()]))),
        "core_mhz": _numeric_array(rng, [float(r[1]) for r in rows], True),
        "mem_mhz": _numeric_array(rng, [float(r[2]) for r in rows], True),
        "time_ms": _numeric_array(rng, [float(r[3]) for r in rows], False),
        "power_w": _numeric_array(rng, [float(r[4]) for r in rows], False),
        "dram_util": pa.array([float(r[5]) for r in rows]),
    }
    # confusers: odd names, types that are not metrics, big integers, chunking
    for _ in range(rng.choice([0, 1, 2])):
        name = rng.choice(ODD_NAMES)
        if name in cols:
            continue
        cols[name] = rng.choice([
            lambda: pa.array([rng.uniform(0, 1e6) for _ in range(n)]),
            lambda: pa.array([2**60 + i for i in range(n)], pa.int64()),
            lambda: pa.array([7] * n, pa.uint64()),
            lambda: pa.array([[1.0]] * n),
            lambda: pa.array([{"x": 1}] * n),
            lambda: pa.array([True, False] * (n // 2)),
            lambda: pa.array(["txt"] * n),
            lambda: pa.array(np.linspace(0, 1, n).astype(np.float16)),
        ])()
    label = "control"
    raw: bytes | None = None
    if not control:
        defect = rng.choice([
            "drop_required", "wrong_type", "nan_inf", "metric_nan_inf", "non_positive",
            "negative_power", "uint64_above_int64", "metric_uint64_above_int64",
            "overflow_after_conversion", "duplicate_setting", "null_required",
            "float16_overflow", "no_rows", "no_columns", "empty_name", "duplicate_names",
            "truncated", "garbage", "garbage_with_magic", "csv_named_parquet"])
        label = defect
        r = rng.randrange(n)

        def values_of(name):
            array = cols[name]
            if pa.types.is_dictionary(array.type):
                array = array.dictionary_decode()
            values = array.to_pylist()
            return values if name == "kernel" else [float(v) for v in values]

        def put(name, value, kind):
            values = values_of(name)
            values[r] = value
            cols[name] = pa.array(values, kind)

        if defect == "drop_required":
            del cols[rng.choice(REQUIRED)]
        elif defect == "wrong_type":
            name = rng.choice(REQUIRED)
            kind, cols[name] = _wrong_type_array(rng, n, name == "kernel")
            label = f"wrong_type:{kind}"
        elif defect == "nan_inf":
            put(rng.choice(NUMERIC), rng.choice([math.nan, math.inf, -math.inf]), pa.float64())
        elif defect == "metric_nan_inf":
            put("dram_util", rng.choice([math.nan, math.inf, -math.inf]), pa.float64())
        elif defect == "non_positive":
            put(rng.choice(["core_mhz", "mem_mhz", "time_ms"]),
                rng.choice([0.0, -0.0, -1.0, -1e-300]), pa.float64())
        elif defect == "negative_power":
            put("power_w", rng.choice([-1.0, -1e-300]), pa.float64())
        elif defect == "uint64_above_int64":
            name = rng.choice(["core_mhz", "mem_mhz"])
            cols[name] = pa.array([int(v) for v in values_of(name)], pa.uint64())
            put(name, rng.choice([2**64 - 1, 2**63, 2**63 + 12345]), pa.uint64())
        elif defect == "metric_uint64_above_int64":
            cols["dram_util"] = pa.array(list(range(1, n + 1)), pa.uint64())
            put("dram_util", rng.choice([2**64 - 1, 2**63]), pa.uint64())
        elif defect == "overflow_after_conversion":
            if variant == "units":
                if rng.random() < 0.5:
                    put("time_ms", rng.choice([1e300, 1.7e308]), pa.float64())
                else:
                    put("core_mhz", rng.choice([5e-324, 1e-323]), pa.float64())
            elif rng.random() < 0.5:
                put("time_ms", rng.choice([1e303, 1.7e308]), pa.float64())
            else:
                put("time_ms", 1e300, pa.float64())
                put("power_w", 1e300, pa.float64())
        elif defect == "duplicate_setting":
            table = pa.table(cols)
            table = pa.concat_tables([table, table.slice(r, 1)])
            cols = {c: table.column(c) for c in table.column_names}
        elif defect == "null_required":
            name = rng.choice(REQUIRED)
            put(name, None, pa.string() if name == "kernel" else pa.float64())
        elif defect == "float16_overflow":
            name = rng.choice(["dram_util", "time_ms", "power_w"])
            values = values_of(name)
            values[r] = 1e5  # beyond float16's 65504: inf
            with np.errstate(over="ignore"):
                cols[name] = pa.array(np.array(values, dtype=np.float16))
        elif defect == "no_rows":
            cols = {c: a.slice(0, 0) for c, a in cols.items()}
        elif defect == "no_columns":
            raw_table = pa.table({})
            buf = io.BytesIO()
            pq.write_table(raw_table, buf)
            raw = buf.getvalue()
        elif defect == "empty_name":
            cols[""] = pa.array([1.0] * n)
        elif defect == "duplicate_names":
            name = rng.choice(list(cols))
            table = pa.table(cols)
            table = table.append_column(name, table.column(name))
            buf = io.BytesIO()
            pq.write_table(table, buf)
            raw = buf.getvalue()
        elif defect in ("truncated", "garbage", "garbage_with_magic"):
            buf = io.BytesIO()
            pq.write_table(pa.table(cols), buf)
            good = buf.getvalue()
            if defect == "truncated":
                raw = good[:rng.randrange(len(good))]
            elif defect == "garbage":
                raw = rng.randbytes(rng.choice([0, 4, 100, 5000]))
            else:
                raw = b"PAR1" + rng.randbytes(rng.choice([0, 8, 500])) + good[-8:]
        elif defect == "csv_named_parquet":  # (not tiny.csv itself: that is ingested already)
            raw = csv_text(HEADER, base_rows()).encode()
    if raw is None:
        buf = io.BytesIO()
        pq.write_table(pa.table(cols), buf, row_group_size=rng.choice([None, 2, 3]))
        raw = buf.getvalue()
    path = directory / f"parquet-{index}.parquet"
    path.write_bytes(raw)
    return label, path, variant


# ---------------------------------------------------------------------------------------------
# mapping: a good data file, a mapping with one defect

MAPPING_DATA_HEADER = HEADER + ["l2_util", "argNo"]


def mapping_data() -> str:
    rows = [r + [f"{0.3 + i / 100:.2f}", f"in{i:02d}"] for i, r in enumerate(base_rows())]
    return csv_text(MAPPING_DATA_HEADER, rows)


def base_mapping() -> dict:
    return {
        "description": "fuzz target (synthetic)",
        "gpu": {"gpu_id": "fzm", "name": "fuzz GPU", "n_sm": 2},
        "run": {"suite": "fzm", "experiment": "fuzz-mapping"},
        "metrics": {"text": ["argNo"]},
        "columns": {"kernel": "kernel", "core_mhz": "core_mhz", "mem_mhz": "mem_mhz",
                    "time": {"column": "time_ms", "unit": "ms"},
                    "power": {"column": "power_w", "unit": "W"}},
    }


def toml_key(key: str) -> str:
    bare = key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
    return key if bare else json.dumps(key, ensure_ascii=False)


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) \
            + " }"
    raise TypeError(value)


def toml_text(doc: dict, newline: str = "\n", comments: bool = False) -> str:
    lines = []
    for key, value in doc.items():
        if not isinstance(value, dict):
            lines.append(f"{toml_key(key)} = {toml_value(value)}")
    for key, value in doc.items():
        if isinstance(value, dict):
            lines.append(f"[{toml_key(key)}]" + ("  # section" if comments else ""))
            lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()]
    return newline.join(lines) + newline


DATE = datetime.date(2020, 1, 1)
_TEXT_WRONG = [5, 1.5, True, [1], {"a": 1}, DATE, "", "  ", "a\u0000b"]
_INT_WRONG = [0, -1, 2**31, 2**63 - 1, -(2**63), 1.5, 2.0, "2", True, [2], {"n": 2}, math.inf,
              math.nan, DATE]
_CLOCK_WRONG = [0, 0.0, -0.0, -1, -1e-300, math.inf, -math.inf, math.nan, True, "1000", [1000],
                {}, DATE]


def _measure_wrong(column: str) -> list:
    return [5, [], [column], True, {}, {"column": 5}, {"column": ""}, {"unit": "MHz"},
            {"column": column, "unit": 5}, {"column": column, "unit": "Hz"},
            {"column": column, "unit": ["MHz"]}, {"column": column, "units": "MHz"}, "",
            "nope", {"column": "nope"}, {"column": column + "\u0000"}, DATE]


_NAMES_WRONG = [5, "dram_util", {"a": 1}, [1], [["dram_util"]], True, ["nope"], ["kernel"],
                ["time_ms"], ["dram_util", 2], ["DRAM_UTIL"]]
WRONG = {
    ("description",): [5, 1.5, True, [1], {"a": 1}, DATE, "a\u0000"],
    ("gpu", "gpu_id"): _TEXT_WRONG,
    ("gpu", "name"): _TEXT_WRONG,
    ("gpu", "n_sm"): _INT_WRONG,
    ("gpu", "max_warps_per_sm"): _INT_WRONG,
    ("gpu", "max_ctas_per_sm"): _INT_WRONG,
    ("gpu", "nominal_core_mhz"): _CLOCK_WRONG,
    ("gpu", "nominal_mem_mhz"): _CLOCK_WRONG,
    ("run", "suite"): _TEXT_WRONG,
    ("run", "source"): ["simulated", "", "Measured", 1, ["measured"], True, {}],
    ("run", "policy"): _TEXT_WRONG,
    ("run", "experiment"): _TEXT_WRONG,
    ("columns", "kernel"): [5, [], [1], ["kernel", 2], ["kernel", "kernel"],
                            {"column": "kernel"}, True, "", [""], "nope", ["kernel", "nope"],
                            [["kernel"]], DATE],
    ("columns", "core_mhz"): _measure_wrong("core_mhz"),
    ("columns", "mem_mhz"): _measure_wrong("mem_mhz"),
    ("columns", "time"): _measure_wrong("time_ms"),
    ("columns", "power"): _measure_wrong("power_w"),
    ("metrics", "ignore"): _NAMES_WRONG,
    ("metrics", "text"): _NAMES_WRONG,
    ("metrics", "rename"): [5, [], "x", {"dram_util": ""}, {"": "x"}, {"dram_util": ["x"]},
                            {"dram_util": 1}, {"nope": "x"}, {"dram_util": "x", "l2_util": "x"},
                            {"dram_util": "l2_util"}, {"core_mhz": "x"}, {"kernel": "k"},
                            {"argNo": "arg"}, {"dram_util": "a\u0000"}],
    ("metrics", "prefix"): [5, [], True, {}, 1.5, "a\u0000"],
}


def make_mapping(rng: random.Random, directory: Path, index: int, control: bool = False):
    doc = base_mapping()
    newline = rng.choice(["\n", "\n", "\r\n"])
    comments = rng.random() < 0.3
    if rng.random() < 0.3:
        doc["gpu"].update(max_warps_per_sm=32, nominal_core_mhz=1400.5, nominal_mem_mhz=800)
    if rng.random() < 0.3:
        doc["metrics"]["rename"] = {"dram_util": "dram_active"}
    label = "control"
    raw: bytes | None = None
    if not control:
        defect = rng.choice(["wrong_value"] * 6 + [
            "unknown_key", "unknown_section", "section_not_table", "missing",
            "power_and_energy", "rename_and_ignore", "truncated", "bad_utf8", "nul_byte",
            "deep_nesting", "huge", "binary", "duplicate_key", "empty", "other_format"])
        label = defect
        if defect == "wrong_value":
            path = rng.choice(sorted(WRONG))
            value = rng.choice(WRONG[path])
            section = doc.setdefault(path[0], {}) if len(path) == 2 else doc
            section[path[-1]] = value
            label = f"wrong_value:{'.'.join(path)}={toml_value(value)[:40]}"
        elif defect == "unknown_key":
            section = rng.choice(["gpu", "run", "columns", "metrics"])
            doc[section][rng.choice(["kernal", "Kernel", "n-sm", "core", "unit", "columns",
                                     "gpu_ID", "", "a b", "\u00e9"])] = "x"
        elif defect == "unknown_section":
            doc[rng.choice(["colums", "Columns", "GPU", "metric", "runs", "x"])] = {"a": 1}
        elif defect == "section_not_table":
            doc[rng.choice(["gpu", "run", "columns", "metrics"])] = rng.choice(
                [5, "x", [1, 2], True])
        elif defect == "missing":
            what = rng.choice(["gpu.gpu_id", "gpu.name", "gpu.n_sm", "run.suite",
                               "columns.kernel", "columns.core_mhz", "columns.mem_mhz",
                               "columns.time", "columns.power", "gpu", "run", "columns"])
            if "." in what:
                section, key = what.split(".")
                del doc[section][key]
            else:
                del doc[what]
            label = f"missing:{what}"
        elif defect == "power_and_energy":
            doc["columns"]["energy"] = {"column": "dram_util", "unit": "J"}
        elif defect == "rename_and_ignore":
            doc["metrics"]["rename"] = {"l2_util": "l2"}
            doc["metrics"][rng.choice(["ignore", "text"])] = ["l2_util"]
        elif defect == "truncated":
            text = toml_text(doc, newline, comments)
            raw = text[:rng.randrange(text.rindex("}"))].encode()
        elif defect == "bad_utf8":
            text = toml_text(doc, newline, comments).encode()
            at = rng.randrange(len(text) + 1)
            raw = text[:at] + rng.choice([b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\x80"]) + text[at:]
        elif defect == "nul_byte":
            text = toml_text(doc, newline, comments).encode()
            at = rng.randrange(len(text) + 1)
            raw = text[:at] + b"\x00" + text[at:]
        elif defect == "deep_nesting":
            depth = rng.choice([3, 50, 600, 20000])
            doc["metrics"]["ignore"] = "<nest>"
            raw = toml_text(doc, newline).replace('"<nest>"', "[" * depth + "]" * depth).encode()
        elif defect == "huge":
            doc["description"] = "x" * (1_048_577 + rng.randrange(1000))
        elif defect == "binary":
            raw = rng.randbytes(rng.choice([1, 100, 4096]))
        elif defect == "duplicate_key":
            text = toml_text(doc, newline)
            raw = text.replace('n_sm = 2', 'n_sm = 2' + newline + 'n_sm = 4').encode()
        elif defect == "empty":
            raw = rng.choice([b"", b"\n", b"# only a comment\n", b"[gpu]\n"])
        elif defect == "other_format":
            raw = rng.choice([TINY_CSV.encode(), b"PAR1\x00\x00PAR1",
                              b'{"gpu": {"gpu_id": "x"}}', b"SQLite format 3\x00" + bytes(100)])
    if raw is None:
        raw = toml_text(doc, newline, comments).encode()
    path = directory / f"mapping-{index}.toml"
    path.write_bytes(raw)
    return label, path, None


# ---------------------------------------------------------------------------------------------
# expr: mapping expressions (issue 31: bounded in time and memory before they run)

# Functions whose result grows with a number in the expression, or that read state: refused.
UNBOUNDED_CALLS = [
    "repeat('x', 2000000000)", "length(repeat('ab', 300000000))", "list_sum(range(100000000))",
    "range(1000000000000)", "generate_series(1, 1000000000)", "lpad('x', 2000000000, 'y')",
    "rpad(kernel, 1000000000, 'z')", "replace(replace(kernel, 'f', kernel), 'z', kernel)",
    "string_agg(kernel, ',')", "array_agg(time_ms)", "list_value(time_ms, time_ms)",
    "unnest(range(100000000))", "read_csv('/etc/passwd')", "getenv('HOME')", "random()",
    "setseed(0.5)", "nextval('s')", "current_setting('threads')", "md5(kernel)",
    "regexp_replace(kernel, '.', 'xx', 'g')", "string_split(kernel, '-')", "printf('%s', 1)",
    "format('{}', time_ms)", "list_transform([time_ms], x -> x * 2)", "hash(time_ms)",
    "strftime(now(), '%Y')", "epoch_ms(now())", "sum(time_ms) OVER ()", "concat(kernel, 'x')",
    "to_json(time_ms)", "glob('*')", "query('SELECT 1')", "query_table('run')",
]
QUERIES = [
    "(SELECT count(*) FROM range(1000000000000))", "EXISTS (SELECT 1)",
    "time_ms + (SELECT 1)", "time_ms IN (SELECT 1)", "(WITH t AS (SELECT 1 AS x) SELECT x FROM t)",
    "(FROM range(10) SELECT max(range))", "(VALUES (1))", "(TABLE run)",
]
# Bounded expressions that give the run's time: must be accepted (correct accepts).
ALLOWED_TIMES = [
    "time_ms", "time_ms * 1", "CAST(time_ms AS DOUBLE)", "greatest(time_ms, 0.000001)",
    "abs(time_ms)", "CASE WHEN time_ms > 0 THEN time_ms ELSE 1 END", "round(time_ms, 9)",
    "time_ms /* repeat( in a comment */", "coalesce(time_ms, 1)", "nullif(time_ms, -1)",
    "time_ms::DOUBLE", "try_cast(time_ms AS DOUBLE)", "least(time_ms, 1e9)",
    "time_ms + 0 * length(kernel)", "sqrt(time_ms * time_ms)", "exp(ln(time_ms))",
    "if(time_ms > 0, time_ms, 1)", "time_ms + 0 * strlen('repeat(')",
    "(" * 400 + "time_ms" + ")" * 400,
]
# Expressions refused for what they compute (not for the bound): one line each.
OTHER_WRONG = [
    "sum(time_ms)", "unnest([time_ms, time_ms])", "'x'", "kernel", "1 / 0", "NULL",
    "-time_ms", "0 * time_ms", "time_ms +", "1) FROM data; SELECT (1", "nosuch", "*",
    "time_ms > 1", "[time_ms]", "{'a': time_ms}", "argNo",
]


def _disguised(rng: random.Random, call: str) -> str:
    """``call`` written another way DuckDB still reads as that call."""
    name, rest = call.split("(", 1)
    how = rng.choice(["plain", "upper", "quoted", "comment", "space", "newline", "qualified",
                      "method", "nested", "in_case"])
    if how == "upper":
        return name.upper() + "(" + rest
    if how == "quoted":
        return f'"{name}"(' + rest
    if how == "comment":
        return f"{name} /* x */ (" + rest
    if how == "space":
        return f"{name}  (" + rest
    if how == "newline":
        return f"{name}\n(" + rest
    if how == "qualified":
        return f"main.{name}(" + rest
    if how == "method" and "," in rest and not rest.startswith(("'", "(")):
        first, others = rest.split(",", 1)
        return f"({first}).{name}(" + others.lstrip()
    if how == "nested":
        return f"time_ms + 0 * length(CAST({call} AS VARCHAR))"
    if how == "in_case":
        return f"CASE WHEN time_ms > 0 THEN time_ms ELSE {call} END"
    return call


def make_expr(rng: random.Random, directory: Path, index: int, control: bool = False):
    """(label, mapping, data, expected): a mapping whose [columns] time is an expression over a
    data file of its own (ingest skips a file it has, so each case's data differs)."""
    kind = "allowed" if control else rng.choice(
        ["unbounded"] * 6 + ["query"] * 2 + ["long", "other", "allowed"])
    if kind == "unbounded":
        expr = _disguised(rng, rng.choice(UNBOUNDED_CALLS))
    elif kind == "query":
        expr = rng.choice(QUERIES)
    elif kind == "long":
        expr = "time_ms" + " + 0" * rng.choice([500, 5000, 100_000])
    elif kind == "other":
        expr = rng.choice(OTHER_WRONG)
    else:
        expr = rng.choice(ALLOWED_TIMES)
    doc = base_mapping()
    doc["run"]["experiment"] = "fuzz-expr"
    doc["columns"]["time"] = {"expr": expr, "unit": "ms"}
    tag = f"x{index}{'c' if control else ''}"
    rows = [[f"{tag}-{r[0]}", *r[1:]] for r in (
        row + [f"{0.3 + i / 100:.2f}", f"in{i:02d}"] for i, row in enumerate(base_rows()))]
    data = directory / f"expr-{tag}.csv"
    data.write_text(csv_text(MAPPING_DATA_HEADER, rows))
    mapping = directory / f"expr-{tag}.toml"
    mapping.write_text(toml_text(doc))
    label = f"{kind}:{expr[:60]!r}"
    return label, mapping, data, "accept" if kind == "allowed" else "refuse"


# ---------------------------------------------------------------------------------------------
# size: files measured against ingest's bound on values (rows x columns) before they are read

SIZE_BOUND = 60  # MAX_CELLS while the size class runs: tiny files on either side of it


def make_size(rng: random.Random, directory: Path, index: int):
    """(label, data, expected): a valid CSV or Parquet file of random rows and extra metric
    columns, accepted exactly when rows x columns <= SIZE_BOUND."""
    n_rows = rng.randrange(1, 15)
    extra = rng.randrange(0, 8)
    header = HEADER + [f"m{j}" for j in range(extra)]
    rows = []
    for r in range(n_rows):
        rows.append([f"s{index}-{r}", "500", "800", f"{1 + r % 5}", "100",
                     f"{0.1 + r / 100:.2f}"] + [f"{r + j / 10:.1f}" for j in range(extra)])
    cells = n_rows * len(header)
    if rng.random() < 0.5:
        path = directory / f"size-{index}.csv"
        path.write_text(csv_text(header, rows, rng.choice(["\n", "\r\n"])))
    else:
        path = directory / f"size-{index}.parquet"
        pq.write_table(pa.table({h: [row[i] if i == 0 else float(row[i]) for row in rows]
                                 for i, h in enumerate(header)}), path)
    label = f"{path.suffix[1:]}:{n_rows}x{len(header)}={cells}"
    return label, path, "accept" if cells <= SIZE_BOUND else "refuse"


# ---------------------------------------------------------------------------------------------
# duckdb: files for --db of the read commands and for merge's source

PLAIN_DATABASES = [
    [],
    ["CREATE TABLE run (x INTEGER)"],
    ["CREATE TABLE t AS SELECT range AS i FROM range(1000)"],
    ["CREATE TABLE gpudb_migration (version INTEGER)", "INSERT INTO gpudb_migration VALUES (999)"],
    ["CREATE TABLE gpudb_migration (version VARCHAR)",
     "INSERT INTO gpudb_migration VALUES ('abc')"],
    [("CREATE TABLE gpudb_migration (version INTEGER, name TEXT, applied_at TIMESTAMPTZ, "
      "gpudb_version TEXT)"), "INSERT INTO gpudb_migration VALUES (1, 'x', now(), '0')"],
    ["CREATE VIEW run AS SELECT 1 / 0 AS x"],
    ["CREATE TABLE gpudb_meta (key TEXT, value TEXT)",
     "INSERT INTO gpudb_meta VALUES ('schema_version', 'x')"],
    ["CREATE SCHEMA s", "CREATE TABLE s.run (run_id TEXT)"],
    ["CREATE TABLE metric (run_id TEXT, name TEXT, value DOUBLE)",
     "INSERT INTO metric VALUES ('r', 'm', 'nan'::DOUBLE)"],
]

PSTATE = ("CREATE TABLE pstate (gpu_id TEXT NOT NULL REFERENCES gpu (gpu_id), domain TEXT NOT "
          "NULL CHECK (domain IN ('core', 'mem')), freq_mhz DOUBLE NOT NULL CHECK (freq_mhz > "
          "0), voltage_v DOUBLE {voltage}, PRIMARY KEY (gpu_id, domain, freq_mhz))")

# SQL run with plain DuckDB on a copy of a real gpudb file: (label, statements, may_succeed
# for the read commands, may_succeed for merge).
MUTATIONS = [
    ("drop_run", ["DROP TABLE metric", "DROP TABLE interval", "DROP TABLE run"], False, False),
    ("drop_migrations", ["DROP TABLE gpudb_migration"], False, False),
    ("newer_schema", ["INSERT INTO gpudb_migration VALUES (9999, 'future', now(), '99')"],
     False, False),
    ("meta_garbage", ["UPDATE gpudb_meta SET value = 'garbage'"], True, True),
    ("extra_table", ["CREATE TABLE notes AS SELECT 'x' AS note"], True, True),
    ("nan_time", ["UPDATE run SET time_ns = 'nan'::DOUBLE"], True, False),
    ("inf_energy", ["UPDATE run SET energy_j = 'inf'::DOUBLE"], True, False),
    ("orphan_metric", ["INSERT INTO metric (run_id, name, value) VALUES ('no-run', 'm', 1.0)"],
     True, False),
    # input_hash is nullable, as in an older export: merging runs without it may succeed
    ("run_column_dropped", ["DROP VIEW IF EXISTS run_summary CASCADE",
                            "ALTER TABLE run DROP COLUMN input_hash"], True, True),
    # issue 31: what a teammate's file did to the terminal, to gpudb's functions and to time
    ("escape_names", ['CREATE VIEW "z\x1b[2K\x1b[1Gnothing" AS SELECT 1 AS one',
                      "UPDATE kernel SET category = 'x\x1b]0;title\x07\x9b\u202e'"],
     True, True),
    ("macro_other_schema", ["CREATE SCHEMA other",
                            "CREATE MACRO other.predict_linear(a, b, c, d) AS 0"], False, False),
    ("view_for_table", ["CREATE TABLE rd AS SELECT * FROM run",
                        "CREATE TABLE i2 AS SELECT * FROM interval",
                        "CREATE TABLE m2 AS SELECT * FROM metric", "DROP TABLE metric",
                        "DROP TABLE interval", "DROP TABLE run",
                        "ALTER TABLE i2 RENAME TO interval", "ALTER TABLE m2 RENAME TO metric",
                        "CREATE VIEW run AS SELECT rd.* FROM rd, range(1000000000000)"],
     False, False),
    # issue 31: gpudb's tables defined otherwise than its migrations
    ("generated_column", ["DROP TABLE pstate", PSTATE.format(
        voltage="GENERATED ALWAYS AS (freq_mhz / 1000)")], False, False),
    ("check_changed", ["DROP TABLE pstate", PSTATE.format(voltage="CHECK (voltage_v > -1)")],
     False, False),
    ("check_dropped", ["DROP TABLE pstate", PSTATE.format(voltage="")], False, False),
    ("default_repeat", ["ALTER TABLE experiment ALTER COLUMN description SET DEFAULT "
                        "repeat('x', 2000000000)"], False, False),
    ("own_column_default", ["ALTER TABLE kernel ADD COLUMN stamp TEXT DEFAULT 'theirs'"],
     False, False),
    ("type_changed", ["ALTER TABLE metric ALTER COLUMN value TYPE TEXT"], False, False),
    *[(f"migration_{what}", ["CREATE TABLE m AS SELECT * REPLACE (CAST(version AS TEXT) AS "
                             "version) FROM gpudb_migration", "DROP TABLE gpudb_migration",
                             "ALTER TABLE m RENAME TO gpudb_migration", change], False, False)
      for what, change in (
          ("null_version", "INSERT INTO gpudb_migration VALUES (NULL, 'x', now(), 'y')"),
          ("text_version", "INSERT INTO gpudb_migration VALUES ('one', 'x', now(), 'y')"),
          ("no_version", "ALTER TABLE gpudb_migration DROP COLUMN version"))],
]


@dataclass
class DbCase:
    label: str
    path: Path
    may_succeed_read: bool = False
    may_succeed_merge: bool = False


def make_duckdb(rng: random.Random, directory: Path, index: int, good: Path) -> DbCase:
    """One database input in its own folder (`directory`)."""
    path = directory / "input.duckdb"
    kind = rng.choice(["garbage"] * 3 + ["empty", "text", "other_format", "duck_header"]
                      + ["truncated"] * 3 + ["flipped"] * 2 + ["block"] * 2
                      + ["plain"] * 2 + ["mutated"] * 2 + ["wal_garbage", "export_dir"])
    if index < len(MUTATIONS):  # every mutation at least once, whatever the draw
        kind = "mutated"
    data = good.read_bytes() if kind in ("duck_header", "truncated", "flipped", "block") else b""
    if kind == "garbage":
        path.write_bytes(rng.randbytes(rng.choice([1, 12, 100, 4096, 12288, 300_000])))
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_bytes(rng.choice([TINY_CSV, TINY_MAPPING, '{"run": []}', "hello\n",
                                     "-- SQL\nSELECT 1;\n"]).encode())
    elif kind == "other_format":
        buf = io.BytesIO()
        pq.write_table(pa.table({"run_id": ["a"]}), buf)
        path.write_bytes(rng.choice([buf.getvalue(), b"\x1f\x8b\x08\x00" + bytes(50),
                                     b"PK\x03\x04" + bytes(50), b"ARROW1\x00\x00"]))
    elif kind == "duck_header":
        keep = rng.choice([4096, 8192, 12288, 16384])
        path.write_bytes(data[:keep] + rng.randbytes(rng.choice([0, 4096, len(data) - keep])))
    elif kind == "truncated":
        path.write_bytes(data[:rng.randrange(len(data))])
        return DbCase(kind, path, True, True)
    elif kind == "flipped":
        flipped = bytearray(data)
        for _ in range(rng.randint(1, 20)):
            at = rng.randrange(len(flipped))
            flipped[at] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(flipped))
        return DbCase(kind, path, True, True)
    elif kind == "block":
        at = rng.randrange(len(data))
        size = rng.choice([8, 512, 4096, 65536])
        path.write_bytes(data[:at] + rng.randbytes(min(size, len(data) - at)) + data[at + size:])
        return DbCase(kind, path, True, True)
    elif kind == "plain":
        statements = rng.choice(PLAIN_DATABASES)
        con = duckdb.connect(str(path))
        for statement in statements:
            con.execute(statement)
        con.close()
        return DbCase(f"plain:{'; '.join(statements)[:60] or 'empty'}", path)
    elif kind == "mutated":
        label, statements, read_ok, merge_ok = (MUTATIONS[index] if index < len(MUTATIONS)
                                                else rng.choice(MUTATIONS))
        shutil.copyfile(good, path)
        con = duckdb.connect(str(path))
        for statement in statements:
            try:
                con.execute(statement)
            except duckdb.Error as exc:  # e.g. a CHECK constraint: the case says so
                label += f" ({statement.split()[0]} failed: {str(exc).splitlines()[0][:60]})"
                read_ok = merge_ok = True
        con.close()
        return DbCase(f"mutated:{label}", path, read_ok, merge_ok)
    elif kind == "wal_garbage":
        # DuckDB may skip a WAL it cannot read: success is allowed, writing is not
        shutil.copyfile(good, path)
        (directory / "input.duckdb.wal").write_bytes(rng.randbytes(rng.choice([1, 100, 5000])))
        return DbCase(kind, path, True, True)
    elif kind == "export_dir":
        path = directory / "export"
        path.mkdir()
        for table in rng.sample(["run", "gpudb_migration", "metric", "gpu", "kernel"],
                                rng.randint(1, 5)):
            (path / f"{table}.parquet").write_bytes(rng.choice([
                rng.randbytes(100), b"", TINY_CSV.encode()]))
        return DbCase(kind, path)
    return DbCase(kind, path)


def folder_state(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): (content(p) if p.is_file() else "dir")
            for p in sorted(directory.rglob("*"))}


# ---------------------------------------------------------------------------------------------
# running cases


@dataclass
class Outcome:
    status: str  # refused, accepted, traceback, hang, not_one_line, control_characters
    text: str


def api_ingest(con, data: Path, mapping: Path) -> Outcome:
    """One ingest through the Python API; after a traceback or a hang, whatever transaction
    it left open is rolled back, so the next case starts from a clean connection."""
    try:
        with deadline(CASE_TIMEOUT_S):
            ingest(con, [str(data)], load_mapping(mapping), experiment="fuzz")
    except GpudbError as exc:
        return Outcome("refused", str(exc))
    except Hang as exc:
        outcome = Outcome("hang", str(exc))
    except Exception:  # noqa: BLE001 - any other exception is the traceback being counted
        outcome = Outcome("traceback", traceback.format_exc(limit=-4))
    else:
        return Outcome("accepted", "")
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass
    return outcome


def control_characters(text: str) -> bool:
    """C0/C1 controls (but line breaks and tabs), DEL or bidi overrides in CLI output."""
    return any((ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f
               or 0x202a <= ord(c) <= 0x202e for c in text)


def cli_run(args: list[str]) -> Outcome:
    try:
        with deadline(CASE_TIMEOUT_S):
            result = CliRunner().invoke(cli, args)
    except Hang as exc:
        return Outcome("hang", str(exc))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return Outcome("traceback", "".join(traceback.format_exception(
            result.exception, limit=-4)))
    lines = result.output.strip().splitlines()
    if control_characters(result.output):  # issue 31: a file wrote to the terminal
        return Outcome("control_characters", repr(result.output[-600:]))
    if result.exit_code == 0:
        return Outcome("accepted", result.output[-300:])
    if len(lines) == 1 and lines[0].startswith("Error: ") and result.exit_code in (1, 2):
        return Outcome("refused", lines[0])
    return Outcome("not_one_line", f"exit {result.exit_code}: {result.output[-600:]!r}")


def subprocess_cli(args: list[str]) -> Outcome:
    """`python -m gpudb.cli ARGS` under a timeout and a 6 GiB address-space cap."""
    def cap():
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
    try:
        proc = subprocess.run([sys.executable, "-m", "gpudb.cli", *args], check=False,
                              capture_output=True,
                              text=True, timeout=SUBPROCESS_TIMEOUT_S, preexec_fn=cap,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Outcome("hang", f"no answer within {SUBPROCESS_TIMEOUT_S} s")
    if "Traceback" in proc.stderr:
        return Outcome("traceback", proc.stderr[-1500:])
    if control_characters(proc.stdout + proc.stderr):
        return Outcome("control_characters", repr((proc.stdout + proc.stderr)[-600:]))
    if proc.returncode == 0:
        return Outcome("accepted", proc.stdout[-300:])
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    if proc.returncode in (1, 2) and len(lines) == 1 and lines[0].startswith("Error: "):
        return Outcome("refused", lines[0])
    output = (proc.stdout + proc.stderr)[-600:]
    return Outcome("not_one_line", f"exit {proc.returncode}: {output!r}")


# Rows per table and temporary tables and views, as one statement: DuckDB 2.0.1 spends about
# 0.6 ms on any statement, and the state is read twice per case (10 statements took 12 ms, this
# one 5.5 ms; a select of scalar subqueries costs several times more).
STATE_SQL = " UNION ALL ".join(
    [f"SELECT {i} AS i, count(*) AS n FROM {t}" for i, t in enumerate(TABLES)]
    + [f"SELECT {len(TABLES)}, count(*) FROM duckdb_tables() WHERE temporary",
       f"SELECT {len(TABLES) + 1}, count(*) FROM duckdb_views() WHERE temporary AND NOT internal"])


def db_state(con) -> tuple:
    """Rows per table (TABLES' order), then temporary tables and views."""
    return tuple(n for _, n in sorted(con.execute(STATE_SQL).fetchall()))


def file_state(path: Path) -> tuple:
    return content(path), sorted(p.name for p in path.parent.iterdir())


class Fuzz:
    """Runs cases and keeps counts and failures."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.counts: dict[str, int] = {}
        self.invocations: dict[str, int] = {}
        self.outcomes: dict[str, dict[str, int]] = {}
        self.failures: list[dict] = []
        self.seconds: dict[str, float] = {}
        self.allowed_successes: dict[str, int] = {}  # by kind: corrupted files still readable

    def record(self, cls: str, index: int, label: str, via: str, outcome: Outcome,
               may_succeed: bool = False, names: tuple[str, ...] = (), changed: str = "",
               wrote_input: bool = False, must_accept: bool = False):
        self.invocations[cls] = self.invocations.get(cls, 0) + 1
        tally = self.outcomes.setdefault(cls, {})
        tally[outcome.status] = tally.get(outcome.status, 0) + 1
        problem = ""
        if outcome.status == "accepted" and may_succeed:
            kind = f"{cls} {via} {label.split(':')[0]}"
            self.allowed_successes[kind] = self.allowed_successes.get(kind, 0) + 1
        if outcome.status == "accepted" and not may_succeed:
            problem = "accepted a malformed input"
        elif outcome.status == "refused" and must_accept:
            problem = "refused a valid input"
        elif outcome.status in ("traceback", "hang", "not_one_line", "control_characters"):
            problem = outcome.status
        elif outcome.status == "refused" and ("\n" in outcome.text or not outcome.text.strip()):
            problem = "refusal is not one line"
        elif outcome.status == "refused" and names and not any(n in outcome.text for n in names):
            problem = "refusal names neither the file nor the mapping"
        if changed and (outcome.status != "accepted"):
            problem = problem or f"partial write: {changed}"
        if wrote_input:
            problem = problem or "changed the input file or its folder"
        if problem:
            self.failures.append({"class": cls, "index": index, "seed": f"{SEED}:{cls}:{index}",
                                  "label": label, "via": via, "problem": problem,
                                  "detail": outcome.text[-1500:]})


def make_ingest_case(cls: str, index: int, directory: Path, control: bool = False):
    rng = rng_for(cls + (":control" if control else ""), index)
    maker = {"csv": make_csv, "parquet": make_parquet, "mapping": make_mapping}[cls]
    return maker(rng, directory, index, control)


def make_duckdb_case(index: int, directory: Path, good: Path) -> DbCase:
    folder = directory / f"db-{index}"
    folder.mkdir(parents=True, exist_ok=True)
    return make_duckdb(rng_for("duckdb", index), folder, index, good)


DB_COMMANDS = (["info"], ["query", "best_setting"], ["merge"])


def run_duckdb_case(fuzz: Fuzz, index: int, case: DbCase, target: Path, pristine: Path):
    command = DB_COMMANDS[index % len(DB_COMMANDS)]
    before_input = folder_state(case.path.parent)
    if command == ["merge"]:
        before = file_state(target)
        outcome = cli_run(["--db", str(target), "merge", str(case.path)])
        changed = "" if file_state(target) == before else f"target {target.name}"
        may_succeed = case.may_succeed_merge
        if outcome.status == "accepted" and changed:
            shutil.copyfile(pristine, target)  # an allowed merge: the next case starts clean
    else:
        outcome = cli_run(["--db", str(case.path), *command])
        changed = ""
        may_succeed = case.may_succeed_read
    fuzz.record("duckdb", index, case.label, " ".join(command), outcome, may_succeed,
                changed=changed, wrote_input=folder_state(case.path.parent) != before_input)


def special_cases(tmp: Path, target: Path, mapping: Path, data: Path) -> list[tuple]:
    """(label, args, in_subprocess): FIFOs, devices, directories, SQLite and sockets."""
    fifo_csv = tmp / "fifo.csv"
    fifo_parquet = tmp / "fifo.parquet"
    fifo_toml = tmp / "fifo.toml"
    fifo_db = tmp / "fifo.duckdb"
    for fifo in (fifo_csv, fifo_parquet, fifo_toml, fifo_db):
        os.mkfifo(fifo)
    zero_link = tmp / "zero.toml"
    zero_link.symlink_to("/dev/zero")
    fifo_link = tmp / "fifo-link.csv"
    fifo_link.symlink_to(fifo_csv)
    sock = tmp / "sock.csv"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    sqlite_file = tmp / "lite.duckdb"
    lite = sqlite3.connect(sqlite_file)
    lite.execute("CREATE TABLE run (x)")
    lite.commit()
    lite.close()
    db = ["--db", str(target)]
    return [
        ("data FIFO .csv", [*db, "ingest", str(fifo_csv), "--mapping", str(mapping)], True),
        ("data FIFO .parquet", [*db, "ingest", str(fifo_parquet), "--mapping", str(mapping)],
         True),
        ("data symlink to FIFO", [*db, "ingest", str(fifo_link), "--mapping", str(mapping)],
         True),
        ("data /dev/zero", [*db, "ingest", "/dev/zero", "--mapping", str(mapping)], True),
        ("data /dev/urandom", [*db, "ingest", "/dev/urandom", "--mapping", str(mapping)], True),
        ("data socket", [*db, "ingest", str(sock), "--mapping", str(mapping)], True),
        ("mapping FIFO", [*db, "ingest", str(data), "--mapping", str(fifo_toml)], True),
        ("mapping /dev/zero", [*db, "ingest", str(data), "--mapping", "/dev/zero"], True),
        ("mapping symlink to /dev/zero", [*db, "ingest", str(data), "--mapping",
                                          str(zero_link)], True),
        ("mapping /dev/urandom", [*db, "ingest", str(data), "--mapping", "/dev/urandom"], True),
        ("mapping missing", [*db, "ingest", str(data), "--mapping", str(tmp / "nope.toml")],
         False),
        ("data missing", [*db, "ingest", str(tmp / "nope.csv"), "--mapping", str(mapping)],
         False),
        ("mapping a directory", [*db, "ingest", str(data), "--mapping", str(tmp)], False),
        ("data a directory", [*db, "ingest", str(tmp), "--mapping", str(mapping)], False),
        ("info --db FIFO", ["--db", str(fifo_db), "info"], True),
        ("info --db /dev/zero", ["--db", "/dev/zero", "info"], True),
        ("query --db SQLite file", ["--db", str(sqlite_file), "query", "best_setting"], True),
        ("merge source FIFO", [*db, "merge", str(fifo_db)], True),
        ("merge source /dev/zero", [*db, "merge", "/dev/zero"], True),
        ("merge source SQLite file", [*db, "merge", str(sqlite_file)], True),
        # issue 31: calibration files and simulator logs are regular files too
        ("calibration FIFO", [*db, "calibrate", "--gpu", "tiny", "--from-file",
                              str(fifo_toml)], True),
        ("calibration /dev/zero", [*db, "calibrate", "--gpu", "tiny", "--from-file",
                                   "/dev/zero"], True),
        ("log FIFO", [*db, "ingest-log", str(fifo_csv)], True),
        ("log /dev/zero", [*db, "ingest-log", "/dev/zero"], True),
    ]


def build_targets(tmp: Path) -> dict[str, Path]:
    """A real gpudb file with the tiny dataset, and copies of it: api (held open by the test),
    cli (the CLI's ingest and merge target), good (source of corrupted copies), pristine."""
    base = tmp / "base"
    base.mkdir()
    (base / "tiny.csv").write_text(TINY_CSV)
    (base / "tiny.toml").write_text(TINY_MAPPING)
    pristine = base / "pristine.duckdb"
    con = gpudb.connect(pristine)
    ingest(con, [base / "tiny.csv"], load_mapping(base / "tiny.toml"))
    con.execute("CHECKPOINT")
    con.close()
    paths = {"pristine": pristine}
    for name in ("api", "cli", "good", "scratch"):
        folder = tmp / name
        folder.mkdir()
        paths[name] = folder / f"{name}.duckdb"
        shutil.copyfile(pristine, paths[name])
    return paths


def write_mappings(directory: Path) -> dict[str, Path]:
    paths = {}
    for name, text in MAPPINGS.items():
        paths[name] = directory / f"{name}.toml"
        paths[name].write_text(text)
    return paths


def run_bounded_classes(fuzz: Fuzz, inputs: Path, targets: dict[str, Path], wanted,
                        classes=("expr", "size")) -> None:
    """The expr and size classes (issue 31), in this process on the api target: a valid case
    must be accepted and write its runs, any other refused in one line writing nothing. (Their
    kernels are named after the case, x{index}-... and s{index}-..., so an accepted case's runs
    do not depend on which cases ran before it.)"""
    import gpudb.sources.tabular.read as ingest_module  # where the bound is read

    api = gpudb.connect(targets["api"])
    bound = ingest_module.MAX_CELLS
    state = db_state(api)
    try:
        for cls in classes:
            start = time.perf_counter()
            folder = inputs / cls
            folder.mkdir()
            ingest_module.MAX_CELLS = SIZE_BOUND if cls == "size" else bound
            for index in range(COUNTS[cls]):
                if not wanted(cls, index):
                    continue
                rng = rng_for(cls, index)
                if cls == "expr":
                    label, mapping, data, expected = make_expr(rng, folder, index)
                else:
                    label, data, expected = make_size(rng, folder, index)
                    mapping = inputs / "tiny.toml"
                outcome = api_ingest(api, data, mapping)
                # the state after one case is the next one's before: one count per case
                before, after = state, db_state(api)
                state = after
                fuzz.counts[cls] = fuzz.counts.get(cls, 0) + 1
                wrote = after != before
                fuzz.record(cls, index, label, "api", outcome, names=(str(data), str(mapping)),
                            may_succeed=expected == "accept",
                            must_accept=expected == "accept",
                            changed="" if not wrote else f"{before} -> {after}")
                if expected == "accept" and outcome.status == "accepted" and not wrote:
                    fuzz.failures.append({"class": cls, "index": index, "label": label,
                                          "seed": f"{SEED}:{cls}:{index}", "via": "api",
                                          "problem": "accepted without writing its runs",
                                          "detail": ""})
            fuzz.seconds[cls] = round(time.perf_counter() - start, 1)
    finally:
        ingest_module.MAX_CELLS = bound
        api.close()


INGEST_CLASSES = ("csv", "parquet", "mapping")
# One test per family (each on targets of its own, copied from one pristine file), so that
# pytest-xdist spreads the fuzz over the workers. A family's cases do not depend on another
# family's: ingest cases must all be refused (nothing written), expr and size name their
# kernels after the case, and an allowed merge of a duckdb case restores the CLI target.
FAMILIES = (*INGEST_CLASSES, "expr", "size", "duckdb", "special")


def run_fuzz(tmp: Path, only: set[tuple[str, int]] | None = None,
             families=FAMILIES) -> Fuzz:
    """Every case of ``families`` (or only those in `only`, without the controls)."""
    def wanted(cls: str, index: int) -> bool:
        return only is None or (cls, index) in only

    fuzz = Fuzz(tmp)
    targets = build_targets(tmp)
    inputs = tmp / "inputs"
    inputs.mkdir()
    mappings = write_mappings(inputs)
    good_data = inputs / "mapping-data.csv"
    good_data.write_text(mapping_data())
    base_mapping_path = inputs / "base-mapping.toml"
    base_mapping_path.write_text(toml_text(base_mapping()))
    ingest_classes = [cls for cls in INGEST_CLASSES if cls in families]

    # Controls: the generators' bases and confusers alone are accepted.
    (inputs / "control").mkdir()
    scratch = gpudb.connect(targets["scratch"])
    try:
        for cls in ingest_classes:
            for index in range(CONTROLS if only is None else 0):
                label, path, variant = make_ingest_case(cls, index, inputs / "control",
                                                        control=True)
                data, mapping = ((good_data, path) if cls == "mapping"
                                 else (path, mappings[variant]))
                outcome = api_ingest(scratch, data, mapping)
                if outcome.status != "accepted":
                    fuzz.failures.append({"class": cls, "index": index, "label": "control",
                                          "seed": f"{SEED}:{cls}:control:{index}",
                                          "via": "api", "problem": "control refused",
                                          "detail": outcome.text})
    finally:
        scratch.close()

    api = gpudb.connect(targets["api"])
    cli_target = targets["cli"]
    try:
        for cls in ingest_classes:
            start = time.perf_counter()
            folder = inputs / cls
            folder.mkdir()
            for index in range(COUNTS[cls]):
                if not wanted(cls, index):
                    continue
                label, path, variant = make_ingest_case(cls, index, folder)
                data, mapping = ((good_data, path) if cls == "mapping"
                                 else (path, mappings[variant]))
                names = (str(data), str(mapping))
                before = db_state(api)
                outcome = api_ingest(api, data, mapping)
                after = db_state(api)
                fuzz.counts[cls] = fuzz.counts.get(cls, 0) + 1
                fuzz.record(cls, index, label, "api", outcome, names=names,
                            changed="" if after == before else f"{before} -> {after}")
                if index % CLI_EVERY == 0:
                    before_file = file_state(cli_target)
                    outcome = cli_run(["--db", str(cli_target), "ingest", str(data),
                                       "--mapping", str(mapping), "--experiment", "fuzz"])
                    after_file = file_state(cli_target)
                    fuzz.record(cls, index, label, "cli", outcome, names=names,
                                changed="" if after_file == before_file else "target file")
            fuzz.seconds[cls] = round(time.perf_counter() - start, 1)
    finally:
        api.close()

    bounded = [cls for cls in ("expr", "size") if cls in families]
    if bounded:
        run_bounded_classes(fuzz, inputs, targets, wanted, bounded)

    if "duckdb" in families:
        start = time.perf_counter()
        folder = inputs / "duckdb"
        for index in range(COUNTS["duckdb"]):
            if not wanted("duckdb", index):
                continue
            case = make_duckdb_case(index, folder, targets["good"])
            fuzz.counts["duckdb"] = fuzz.counts.get("duckdb", 0) + 1
            failures = len(fuzz.failures)
            run_duckdb_case(fuzz, index, case, cli_target, targets["pristine"])
            if len(fuzz.failures) == failures:  # keep only the inputs of failed cases (6 MB each)
                shutil.rmtree(folder / f"db-{index}")
        fuzz.seconds["duckdb"] = round(time.perf_counter() - start, 1)

    if "special" in families:
        start = time.perf_counter()
        special = tmp / "special"
        special.mkdir()
        for index, (label, args, isolated) in enumerate(
                special_cases(special, cli_target, mappings["tiny"], good_data)):
            if not wanted("special", index):
                continue
            before_file = file_state(cli_target)
            outcome = subprocess_cli(args) if isolated else cli_run(args)
            after_file = file_state(cli_target)
            fuzz.counts["special"] = fuzz.counts.get("special", 0) + 1
            fuzz.record("special", index, label, "subprocess" if isolated else "cli", outcome,
                        changed="" if after_file == before_file else "target file")
        fuzz.seconds["special"] = round(time.perf_counter() - start, 1)
    return fuzz


def special_count(tmp: Path) -> int:
    """How many special cases there are (their files made in ``tmp``)."""
    tmp.mkdir(exist_ok=True)
    return len(special_cases(tmp, tmp / "target.duckdb", tmp / "tiny.toml", tmp / "data.csv"))


def test_the_families_together_feed_at_least_2000_inputs(tmp_path):
    assert sum(COUNTS.values()) + special_count(tmp_path) >= 2000


@pytest.mark.parametrize("family", FAMILIES)
def test_fuzz_malformed_inputs_are_refused_in_one_line(tmp_path, family):
    start = time.perf_counter()
    fuzz = run_fuzz(tmp_path, families=(family,))
    report = {"seed": SEED, "inputs": fuzz.counts, "total": sum(fuzz.counts.values()),
              "invocations": fuzz.invocations, "outcomes": fuzz.outcomes,
              "allowed_successes": fuzz.allowed_successes,
              "seconds": {**fuzz.seconds, "total": round(time.perf_counter() - start, 1)},
              "failures": fuzz.failures}
    problems = [f["problem"] for f in fuzz.failures]
    report["totals"] = {
        "inputs": report["total"],
        "invocations": sum(fuzz.invocations.values()),
        "clean refusals": sum(t.get("refused", 0) for t in fuzz.outcomes.values()),
        "correct accepts": sum(t.get("accepted", 0) for t in fuzz.outcomes.values())
        - problems.count("accepted a malformed input"),
        "wrong accepts": problems.count("accepted a malformed input"),
        "wrong refusals": problems.count("refused a valid input"),
        "tracebacks": problems.count("traceback"),
        "hangs": problems.count("hang"),
        "partial writes": sum(p.startswith("partial write") for p in problems),
        "other failures": sum(p not in ("accepted a malformed input", "refused a valid input",
                                        "traceback", "hang") and not p.startswith("partial write")
                              for p in problems)}
    (tmp_path / "fuzz_counts.json").write_text(json.dumps(report, indent=1))
    print("\nfuzz:", json.dumps({k: v for k, v in report.items() if k != "failures"}))
    print("fuzz totals:", json.dumps(report["totals"]))
    for failure in fuzz.failures:
        print("FAIL", json.dumps(failure))
    expected = (special_count(tmp_path / "count") if family == "special" else COUNTS[family])
    assert fuzz.counts == {family: expected}
    assert not fuzz.failures, f"{len(fuzz.failures)} failures, first: {fuzz.failures[0]}"


# ---------------------------------------------------------------------------------------------
# one case by hand: python tests/test_fuzz.py CLASS INDEX DIR

if __name__ == "__main__":
    cls, index, out = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    if cls == "duckdb":
        targets = build_targets(out)
        case = make_duckdb_case(index, out, targets["good"])
        print(case.label, case.path, "command:", " ".join(DB_COMMANDS[index % 3]),
              "merge target:", targets["cli"])
    else:
        write_mappings(out)
        (out / "mapping-data.csv").write_text(mapping_data())
        print(make_ingest_case(cls, index, out))
