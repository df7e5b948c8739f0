"""The SQL functions gpudb registers on every connection it opens.

DuckDB keeps a Python UDF in the database instance, shared by every connection to the same
file in one process, and refuses to register a name twice; so :func:`register` adds only the
names ``duckdb_functions()`` does not list yet. Only module-level functions are registered: a
function object that is garbage-collected while DuckDB still holds it crashes the process
(DESIGN.md section 7).

All UDFs are Arrow UDFs computing with numpy: ~10x faster than scalar Python UDFs. DuckDB's
default NULL handling drops rows with a NULL argument before the call and returns NULL for
them, which is the NULL-in, NULL-out contract of every predictor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import duckdb
import numpy as np
import pyarrow as pa

from gpudb.predictors import crisp, crisp_gpudb, critbw, linear, wu


@dataclass(frozen=True)
class Udf:
    name: str
    function: Callable
    params: tuple[str, ...]
    returns: str
    doc: str


def as_float64(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An Arrow argument as a float64 numpy array (DuckDB has already removed NULL rows)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)


def _predict_linear(t_ns, mem_ns, base_mhz, target_mhz):
    return pa.array(linear.predict_linear(as_float64(t_ns), as_float64(mem_ns),
                                          as_float64(base_mhz), as_float64(target_mhz)))


def _predict_crisp(t_ns, lcp_ns, lcp_comp_ns, csp_stall_ns, base_mhz, target_mhz):
    return pa.array(crisp.predict_crisp(*(as_float64(a) for a in (
        t_ns, lcp_ns, lcp_comp_ns, csp_stall_ns, base_mhz, target_mhz))))


def _predict_crisp_gpudb(t_ns, lcp_ns, load_stall_ns, store_stall_ns, memory_min_ns, base_mhz,
                         target_mhz):
    return pa.array(crisp_gpudb.predict_crisp_gpudb(*(as_float64(a) for a in (
        t_ns, lcp_ns, load_stall_ns, store_stall_ns, memory_min_ns, base_mhz, target_mhz))))


def _predict_critbw(t_ns, demand_ns, prefetch_stall_ns, memory_min_ns, base_mhz, target_mhz):
    return pa.array(critbw.predict_critbw(*(as_float64(a) for a in (
        t_ns, demand_ns, prefetch_stall_ns, memory_min_ns, base_mhz, target_mhz))))


UDFS: tuple[Udf, ...] = (
    Udf("predict_linear", _predict_linear, ("DOUBLE",) * 4, "DOUBLE",
        "predict_linear(t_ns, mem_ns, base_mhz, target_mhz): STALL/LEAD/MISS/CRIT runtime (ns)"),
    Udf("predict_crisp", _predict_crisp, ("DOUBLE",) * 6, "DOUBLE",
        "predict_crisp(t_ns, lcp_ns, lcp_comp_ns, csp_stall_ns, base_mhz, target_mhz): "
        "CRISP / CRISP-L runtime (ns)"),
    Udf("predict_crisp_gpudb", _predict_crisp_gpudb, ("DOUBLE",) * 7, "DOUBLE",
        "predict_crisp_gpudb(t_ns, lcp_ns, load_stall_ns, store_stall_ns, memory_min_ns, "
        "base_mhz, target_mhz): gpudb's CRISP / CRISP-L runtime (ns), issue-slot stalls and "
        "an upward form floored by the memory system's least time"),
    Udf("predict_critbw", _predict_critbw, ("DOUBLE",) * 6, "DOUBLE",
        "predict_critbw(t_ns, demand_ns, prefetch_stall_ns, memory_min_ns, base_mhz, "
        "target_mhz): CRIT+BW runtime (ns)"),
    Udf("predict_wu", wu.predict_wu_arrow, ("DOUBLE", "DOUBLE[]", "DOUBLE[]"), "DOUBLE",
        "predict_wu(base_value, up_scaling, down_scaling): paper 002 eq. 1, base time (ns) or "
        "power (W) times the upward steps' scaling values over the downward steps'"),
)


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Register every UDF this database instance does not have yet."""
    names = [udf.name for udf in UDFS]
    present = {row[0] for row in con.execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_name IN "
        "(SELECT unnest(?::TEXT[]))", [names]).fetchall()}
    for udf in UDFS:
        if udf.name not in present:
            con.create_function(udf.name, udf.function, list(udf.params), udf.returns,
                                type="arrow", side_effects=False)
