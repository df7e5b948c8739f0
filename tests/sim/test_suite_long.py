"""The long suite (paper scale, derived from default) and the rules of derived suites."""

import re

import numpy as np
import pytest

from sim.config import ConfigError, load_gpu, load_suite
from sim.model import DEFAULT_INTERVAL_INSTRUCTIONS

MIN_INTERVALS = 200  # issue 27: paper 004 runs 2,000 intervals, paper 000 ~200-12,500


def test_long_suite_is_default_at_200_intervals_each():
    short, long = load_suite("default"), load_suite("long")
    assert long.name == "long"
    assert [k.name for k in long.kernels] == [k.name for k in short.kernels]
    gpu = load_gpu("gtx480")
    for s, k in zip(short.kernels, long.kernels, strict=True):
        assert k.kernel_id == f"long/{s.name}"
        assert k.category == s.category
        assert "ynthetic" in k.description and k.description.startswith(s.description)
        intervals = k.warp_instructions / DEFAULT_INTERVAL_INSTRUCTIONS
        assert intervals >= MIN_INTERVALS, (k.name, intervals)
        rule = k.raw["derived_from"]
        assert rule["suite"] == "default" and rule["kernel"] == s.name
        # the least whole factor reaching 200 intervals: chosen by the rule, not by a result
        factor = rule.get("ctas_scale") or rule.get("iterations_scale")
        assert (factor - 1) * s.warp_instructions < MIN_INTERVALS * DEFAULT_INTERVAL_INSTRUCTIONS
        assert k.warp_instructions == factor * s.warp_instructions
        assert (k.warps_per_cta, k.footprint_bytes, k.shared_bytes_per_cta) == (
            s.warps_per_cta, s.footprint_bytes, s.shared_bytes_per_cta)
        one_wave = s.ctas <= s.cta_slots(gpu) * gpu.n_sm
        if "iterations_scale" in rule:
            # one-wave grids keep their CTAs (their class is their occupancy) and run each
            # phase longer, the same program in the same order
            assert one_wave and s.category in ("unsaturated", "phased"), s.name
            assert k.ctas == s.ctas
            assert np.array_equal(k.program["ph_iters"], factor * s.program["ph_iters"])
            for key in ("op", "dep0", "dep1", "trans", "pl1", "pl2", "pwr", "ph_start",
                        "ph_len"):
                assert np.array_equal(k.program[key], s.program[key]), (s.name, key)
        else:
            # grids that fill the GPU get more waves of the same CTAs
            assert not one_wave, s.name
            assert k.ctas == factor * s.ctas
            for key in ("op", "dep0", "dep1", "trans", "pl1", "pl2", "pwr", "ph_len", "ph_iters"):
                assert np.array_equal(k.program[key], s.program[key]), (s.name, key)


def _write(tmp_path, text, name="derived.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


BASE = """name = "base"
[[kernel]]
name = "a"
category = "compute"
description = "synthetic a"
ctas = 4
warps_per_cta = 2
[[kernel.phase]]
iterations = 3
body = [{op = "alu", n = 2, dep = "prev"}]
[[kernel.phase]]
iterations = 1
body = [{op = "ld", id = "x"}, {op = "alu", dep = "x"}]
[[kernel]]
name = "b"
category = "memory"
description = "synthetic b"
ctas = 2
warps_per_cta = 1
[[kernel.phase]]
iterations = 5
body = [{op = "ld", trans = 2}]
"""


def test_derived_suite_by_path(tmp_path):
    _write(tmp_path, BASE, "base.toml")
    path = _write(tmp_path, 'name = "big"\nbase = "base.toml"\n'
                            '[[kernel]]\nname = "b"\nctas_scale = 3\n'
                            '[[kernel]]\nname = "a"\niterations_scale = 2\n')
    suite = load_suite(path)
    a, b = suite.kernels                           # in the base's order
    assert (a.kernel_id, b.kernel_id) == ("big/a", "big/b")
    assert a.ctas == 4 and a.warp_instructions == 2 * 4 * 2 * (3 * 2 + 1 * 2)
    assert list(a.program["ph_iters"]) == [6, 2]
    assert b.ctas == 6 and b.warp_instructions == 3 * 2 * 5
    assert b.description == ("synthetic b Derived for suite 'big' from base/b: 3x the CTAs (6), "
                             "i.e. more waves of the same CTAs.")
    assert a.raw["derived_from"] == {"suite": "base", "kernel": "a", "iterations_scale": 2}
    assert a.description == ("synthetic a Derived for suite 'big' from base/a: each phase's "
                             "loop 2x as long, in the same order.")


@pytest.mark.parametrize("rules, message", [
    ('[[kernel]]\nname = "a"\niterations_scale = 2\n', "base kernel(s) b of 'base' have no rule"),
    ('[[kernel]]\nname = "a"\niterations_scale = 2\n[[kernel]]\nname = "b"\niterations_scale = 2\n'
     '[[kernel]]\nname = "c"\niterations_scale = 2\n',
     "kernel 'c': no such kernel in base suite 'base'"),
    ('[[kernel]]\nname = "a"\niterations_scale = 2\n[[kernel]]\nname = "a"\niterations_scale = 3\n',
     "kernel 'a': listed twice"),
    ('[[kernel]]\nname = "a"\niterations_scale = 2\nctas_scale = 2\n'
     '[[kernel]]\nname = "b"\niterations_scale = 1\n',
     "kernel 'a': needs exactly one of ctas_scale, iterations_scale, got 2"),
    ('[[kernel]]\nname = "a"\n[[kernel]]\nname = "b"\niterations_scale = 1\n',
     "kernel 'a': needs exactly one of ctas_scale, iterations_scale, got 0"),
    ('[[kernel]]\nname = "a"\niterations_scale = 1.5\n'
     '[[kernel]]\nname = "b"\niterations_scale = 1\n',
     "'iterations_scale' must be a whole number"),
    ('[[kernel]]\nname = "a"\nctas_scale = 0\n[[kernel]]\nname = "b"\niterations_scale = 1\n',
     "'ctas_scale' must be > 0"),
    ('[[kernel]]\nname = "a"\niterations_scale = 2\nctas = 9\n'
     '[[kernel]]\nname = "b"\niterations_scale = 1\n',
     "kernel 'a': unknown field(s) ctas"),
    ('', "no [[kernel]] tables (one per kernel of base 'base'"),
])
def test_bad_derivations_name_the_kernel_and_rule(tmp_path, rules, message):
    _write(tmp_path, BASE, "base.toml")
    path = _write(tmp_path, f'name = "big"\nbase = "base.toml"\n{rules}')
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_suite(path)


def test_bad_bases_are_clear(tmp_path):
    with pytest.raises(ConfigError, match="no suite named 'nosuch'"):
        load_suite(_write(tmp_path, 'base = "nosuch"\n'))
    # a derived suite's base must list its kernels (no chains)
    with pytest.raises(ConfigError, match="is itself derived"):
        load_suite(_write(tmp_path, 'base = "long"\n'))
    with pytest.raises(ConfigError, match="'base' must be a suite name or a path"):
        load_suite(_write(tmp_path, 'base = 3\n'))


def test_derived_kernels_run_factor_times_the_instructions(tmp_path):
    """A derived kernel executes factor x its base's instructions: longer phase loops, or
    more CTAs (small kernels, one run each)."""
    from sim.model import simulate

    _write(tmp_path, BASE, "base.toml")
    path = _write(tmp_path, 'name = "big"\nbase = "base.toml"\n'
                            '[[kernel]]\nname = "a"\niterations_scale = 3\n'
                            '[[kernel]]\nname = "b"\nctas_scale = 4\n')
    gpu = load_gpu("gtx480")
    base, big = load_suite(tmp_path / "base.toml"), load_suite(path)
    for k0, k1, factor in ((base.kernel("a"), big.kernel("a"), 3),
                           (base.kernel("b"), big.kernel("b"), 4)):
        r0 = simulate(gpu, k0, interval_instructions=10)
        r1 = simulate(gpu, k1, interval_instructions=10)
        assert r0.run["instructions"] == k0.warp_instructions
        assert r1.run["instructions"] == factor * k0.warp_instructions
