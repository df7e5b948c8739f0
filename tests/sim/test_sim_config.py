"""GPU and suite fixtures load, carry what the papers specify, and bad files fail clearly."""

import re

import pytest

from sim.config import (
    ConfigError,
    available,
    fixture_dir,
    kernel_from_table,
    load_gpu,
    load_suite,
)
from sim.model import DEFAULT_INTERVAL_INSTRUCTIONS


def test_gtx480_pstates_follow_paper_000():
    g = load_gpu("gtx480")
    assert g.n_sm == 15 and g.max_warps_per_sm == 48 and g.max_ctas_per_sm == 8
    assert g.core_mhz == (100, 200, 300, 400, 500, 600, 700)
    assert g.core_v[0] == 0.55 and g.core_v[-1] == 1.0
    assert list(g.core_v) == sorted(g.core_v)
    assert g.nominal_core_mhz == 700 and g.switch_ns == 100
    # memory at nominal and +-15% (paper 001 section IV-C)
    low, nom, high = g.mem_mhz
    assert low == pytest.approx(0.85 * nom) and high == pytest.approx(1.15 * nom)


def test_gtx980_grid_and_hd7970_cus():
    g = load_gpu("gtx980")
    assert g.n_sm == 16
    assert g.core_mhz == g.mem_mhz == tuple(float(f) for f in range(400, 1001, 100))
    h = load_gpu("hd7970")
    assert h.n_sm == 32 and h.sm_counts == tuple(range(4, 33, 4))
    assert h.core_mhz == tuple(float(f) for f in range(300, 1001, 100))
    assert h.mem_mhz == tuple(float(f) for f in range(475, 1376, 150))


@pytest.mark.parametrize("name", available("gpus"))
def test_every_gpu_parameter_has_a_comment(name):
    text = (fixture_dir("gpus") / f"{name}.toml").read_text()
    for line in text.splitlines():
        key = re.match(r"^\s*([a-z_0-9]+)\s*=", line)
        if key and key.group(1) not in ("name", "description"):
            assert "#" in line, f"{name}.toml: parameter without unit/source comment: {line}"


def test_default_suite_covers_the_classes():
    suite = load_suite("default")
    assert 25 <= len(suite.kernels) <= 30
    categories = {k.category for k in suite.kernels}
    assert {"compute", "memory", "cache", "unsaturated", "store", "two-slope", "shared",
            "phased"} <= categories
    for k in suite.kernels:
        assert "ynthetic" in k.description, k.name
        assert k.warp_instructions >= 2_000_000, k.name
        assert k.warp_instructions // DEFAULT_INTERVAL_INSTRUCTIONS >= 20, k.name


def test_micro_suite_loads():
    names = {k.name for k in load_suite("micro").kernels}
    assert {"pointer_chase", "stream_read", "alu_only"} <= names


def test_suite_by_path(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\n[[kernel]]\nname = "k"\ncategory = "c"\n'
                    'description = "synthetic"\nctas = 1\nwarps_per_cta = 1\n'
                    '[[kernel.phase]]\niterations = 2\nbody = [{op = "alu"}]\n')
    suite = load_suite(path)
    assert suite.name == "mine" and suite.kernel("k").kernel_id == "mine/k"


def _kernel(**phase):
    table = {"name": "k", "category": "c", "description": "d", "ctas": 1, "warps_per_cta": 1,
             "phase": [phase]}
    return kernel_from_table(table)


def test_dependences_resolve_to_indices():
    k = _kernel(iterations=1, body=[{"op": "ld", "id": "a"}, {"op": "alu", "n": 2, "dep": "prev"},
                                    {"op": "alu", "dep": ["a", "b"]}, {"op": "alu", "id": "b"}])
    p = k.program
    assert list(p["dep0"]) == [-1, 0, 1, 0, -1]
    assert list(p["dep1"]) == [-1, -1, -1, 4, -1]
    first_prev = _kernel(iterations=1, body=[{"op": "alu", "dep": "prev"}, {"op": "alu"}])
    assert first_prev.program["dep0"][0] == 1          # loop-carried: last of the body


@pytest.mark.parametrize("body, message", [
    ([{"op": "fma"}], "'op' must be one of"),
    ([{"op": "alu", "dep": "nope"}], "unknown label 'nope'"),
    ([{"op": "ld", "l1_hit": 1.5}], "'l1_hit' must be a probability"),
    ([{"op": "alu", "colour": 1}], "unknown field(s) colour"),
    ([{"op": "st", "trans": 64}], "'trans' must be at most 32"),
])
def test_bad_kernels_name_the_field(body, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        _kernel(iterations=1, body=body)


def test_unknown_names_are_clear():
    with pytest.raises(ConfigError, match="no gpu named 'gtx9999'"):
        load_gpu("gtx9999")
    # a near miss names the nearest shipped GPUs first, then every one
    with pytest.raises(ConfigError, match=r"no gpu named 'gtx48' \(did you mean 'gtx480' or "
                                          r"'gtx980'\? known: gtx1080ti-sim, gtx480, gtx980"):
        load_gpu("gtx48")
    with pytest.raises(ConfigError, match="no kernel named"):
        load_suite("default").kernel("nope")


def _grid(ctas=1, warps=1, iterations=1, n=1, **more):
    table = {"name": "k", "category": "c", "description": "d", "ctas": ctas,
             "warps_per_cta": warps, "phase": [{"iterations": iterations,
                                                "body": [{"op": "alu", "n": n}]}], **more}
    return kernel_from_table(table)


@pytest.mark.parametrize("sizes, message", [
    # before: each ran without bound (or until int64 overflowed)
    ({"n": 2**63}, "body expands to more than 128 instructions (max 128; instruction 0 "
                   "repeats 9,223,372,036,854,775,808 times)"),
    ({"ctas": 10**12}, "1,000,000,000,000 CTAs x 1 warps x 1 instructions per warp (so far) "
                       "is more than the 10,000,000,000 warp instructions a run may execute"),
    ({"ctas": 2**63 - 1, "warps": 2**63 - 1}, "is more than the 10,000,000,000"),
    ({"iterations": 10**15}, "1 CTAs x 1 warps x 1,000,000,000,000,000 instructions per warp"),
    ({"footprint_bytes": 2**62}, "'footprint_bytes' must be at most 1,099,511,627,776 bytes"),
    ({"shared_bytes": 2**63 - 1}, "'shared_bytes' must be at most 1,099,511,627,776 bytes"),
])
def test_a_suite_is_bounded_by_what_a_run_can_execute(sizes, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        _grid(**sizes)


def test_the_bound_admits_the_long_suite_with_room():
    from sim.config import MAX_WARP_INSTRUCTIONS

    largest = max(k.warp_instructions for k in load_suite("long").kernels)
    assert largest == 22_118_400 and MAX_WARP_INSTRUCTIONS > 400 * largest
    assert _grid(ctas=10_000, warps=10, iterations=1000, n=100).warp_instructions == 10**10


def test_a_derived_scale_is_bounded_too(tmp_path):
    base = tmp_path / "base.toml"
    base.write_text('name = "base"\n[[kernel]]\nname = "k"\ncategory = "c"\n'
                    'description = "synthetic"\nctas = 4\nwarps_per_cta = 1\n'
                    '[[kernel.phase]]\niterations = 2\nbody = [{op = "alu"}]\n')
    derived = tmp_path / "big.toml"
    derived.write_text(f'name = "big"\nbase = "{base}"\n[[kernel]]\nname = "k"\n'
                       f'ctas_scale = {2**62}\n')
    with pytest.raises(ConfigError, match="warp instructions a run may execute"):
        load_suite(derived)


@pytest.mark.parametrize("content, message", [
    (b'name = "x\xff"\n', "not valid TOML: not UTF-8 at byte 9"),
    (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "not valid TOML: nested too deeply"),
])
def test_an_unreadable_suite_is_one_line(tmp_path, content, message):
    """Issue 41 item 7: tracebacks before (UnicodeDecodeError, RecursionError)."""
    path = tmp_path / "bad.toml"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=re.escape(f"{path}: {message}")):
        load_suite(path)
