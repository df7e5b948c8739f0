"""Figures over seeds: the mean of per-seed figures with a 95% confidence interval from
Student's t distribution with n - 1 degrees of freedom (``gpudb evaluate ... --seeds``).

Each seed is one independent repetition of the whole experiment (every run simulated with
that seed), so a figure computed on one seed's runs is one sample; the interval is
mean +- t(0.975, n - 1) * s / sqrt(n), s the sample standard deviation. Pure Python, so the
core install needs no scipy: the t quantile inverts the t CDF, written with the regularised
incomplete beta function (continued fraction, Numerical Recipes 3rd ed. section 6.4).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

CONFIDENCE = 0.95


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Lentz's continued fraction of the incomplete beta function (NR section 6.4)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, dof: int) -> float:
    """P(T <= t) for Student's t with ``dof`` degrees of freedom."""
    tail = 0.5 * incomplete_beta(dof / 2.0, 0.5, dof / (dof + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, dof: int) -> float:
    """The t with P(T <= t) = p (0.5 <= p < 1), by bisection on :func:`t_cdf`."""
    if not 0.5 <= p < 1.0 or dof < 1:
        raise ValueError(f"t_quantile needs 0.5 <= p < 1 and dof >= 1 (got {p}, {dof})")
    low, high = 0.0, 1.0
    while t_cdf(high, dof) < p:
        high *= 2.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        if t_cdf(mid, dof) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-12 * max(1.0, high):
            break
    return 0.5 * (low + high)


def mean_interval(values: Iterable[float | None]) -> tuple[float | None, float | None, int]:
    """(mean, half-width of the 95% interval, n) of the non-missing ``values``: the interval
    is mean +- half-width, Student's t with n - 1 degrees of freedom; half-width None with
    fewer than two values."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return None, None, 0
    mean = sum(xs) / n
    if n < 2:
        return mean, None, n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    return mean, t_quantile(0.5 + CONFIDENCE / 2.0, n - 1) * sd / math.sqrt(n), n
