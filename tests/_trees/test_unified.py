"""The unified (Feldman-Cousins) interval of a noncentral F's noncentrality: its densities against scipy's, the
acceptance regions' probability and ordering, the interval as the set of lambda whose region holds F, coverage
by simulation (at lambda = 0 and above), monotonicity in F, and the equal-tailed fallback's distance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, stats

from fme._trees.joint import EQUAL_TAILED, UNIFIED, heterogeneity_row
from fme._trees.unified import acceptance_region, lambda_best, ncf_logpdf, unified_interval


def _mle(f: float, d1: float, d2: float) -> float:
    """An independent lambda_best: scipy's density maximised by a bounded scalar search."""
    if f <= 1:
        return 0.0
    res = optimize.minimize_scalar(
        lambda lam: -np.log(stats.ncf.pdf(f, d1, d2, lam)),
        bounds=(0.0, 4.0 * d1 * f + 50.0),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return float(res.x)


def _log_r(f: float, lam: float, d1: float, d2: float) -> float:
    """log R(F; lambda) from scipy's density and the independent maximum."""
    best = _mle(f, d1, d2)
    pdf0 = stats.f.pdf(f, d1, d2) if best == 0 else stats.ncf.pdf(f, d1, d2, best)
    return float(np.log(stats.ncf.pdf(f, d1, d2, lam)) - np.log(pdf0))


@pytest.mark.parametrize(
    ("f", "d1", "d2", "lam"), [(1.5, 3, 2000, 20.0), (0.3, 3, 2000, 1.0), (50, 1, 100, 30.0), (5, 10, 1e6, 40.0)]
)
def test_log_density_is_scipys(f, d1, d2, lam):
    assert ncf_logpdf(f, d1, d2, lam)[0] == pytest.approx(np.log(stats.ncf.pdf(f, d1, d2, lam)), rel=1e-9, abs=1e-9)
    # far in the tail scipy's density underflows to 0; the log density stays finite: about -lambda/2 + log of
    # the central density there (the Poisson weight of the first term dominates)
    far = ncf_logpdf(1e-3, d1, d2, 5e3)[0]
    assert stats.ncf.pdf(1e-3, d1, d2, 5e3) == 0.0
    assert far == pytest.approx(-2500.0 + stats.f.logpdf(1e-3, d1, d2), rel=1e-3)


@pytest.mark.parametrize(("f", "d1", "d2"), [(0.7, 3, 200), (1.5, 3, 2000), (6.0, 1, 500), (3.0, 10, 60), (40, 2, 1e5)])
def test_lambda_best_maximises_scipys_density(f, d1, d2):
    best = lambda_best(f, d1, d2)
    assert best == pytest.approx(_mle(f, d1, d2), rel=1e-6, abs=1e-6)
    if f <= 1:
        assert best == 0.0


@pytest.mark.parametrize(
    ("lam", "d1", "d2"), [(0.0, 3, 200), (0.5, 3, 200), (5.0, 3, 200), (30.0, 1, 2000), (80, 10, 60)]
)
def test_acceptance_region_holds_the_level_and_is_ordered_by_the_likelihood_ratio(lam, d1, d2):
    f1, f2 = acceptance_region(lam, d1, d2, 0.95)
    pdf = (lambda x: stats.ncf.pdf(x, d1, d2, lam)) if lam > 0 else (lambda x: stats.f.pdf(x, d1, d2))
    # scipy's density integrated over the region
    mass = integrate.quad(pdf, f1, f2, epsabs=1e-12, epsrel=1e-12, limit=200)[0]
    assert mass == pytest.approx(0.95, abs=1e-6)
    if lam == 0:
        assert f1 == 0.0 and f2 == pytest.approx(stats.f.ppf(0.95, d1, d2), rel=1e-12)
    elif f1 > 0:
        # equal likelihood ratios at both ends, the ratio higher inside than at either end
        assert _log_r(f1, lam, d1, d2) == pytest.approx(_log_r(f2, lam, d1, d2), abs=1e-5)
        inside = 0.5 * (f1 + f2)
        assert _log_r(inside, lam, d1, d2) > _log_r(f2, lam, d1, d2)
    else:
        # the region reaches 0: R at its upper end is no higher than R(0; lambda) = exp(-lambda/2), the least R
        # on [0, mode]
        assert _log_r(f2, lam, d1, d2) <= -lam / 2.0 + 1e-6


@pytest.mark.parametrize(("f", "d1", "d2"), [(0.4, 3, 200), (4.0, 3, 200), (12.0, 1, 2000), (3.5, 10, 60)])
def test_the_interval_is_the_set_of_lambda_whose_region_holds_f(f, d1, d2):
    iv = unified_interval(f, d1, d2, 0.95)
    assert iv.lambda_low <= iv.lambda_best <= iv.lambda_high
    delta = 1e-4
    for lam, holds in ((iv.lambda_high * (1 - delta), True), (iv.lambda_high * (1 + delta), False)):
        lo, hi = acceptance_region(lam, d1, d2, 0.95)
        assert (lo <= f <= hi) is holds
    if iv.lambda_low == 0.0:
        assert f <= stats.f.ppf(0.95, d1, d2)  # 0's region [0, F_crit] holds f
    else:
        assert f > stats.f.ppf(0.95, d1, d2)
        for lam, holds in ((iv.lambda_low * (1 + delta), True), (iv.lambda_low * (1 - delta), False)):
            lo, hi = acceptance_region(lam, d1, d2, 0.95)
            assert (lo <= f <= hi) is holds


def _coverage(lam: float, d1: float, d2: float, draws: np.ndarray) -> float:
    """The share of draws whose interval holds lam. The interval's ends rise with F (tested below), so the draws
    it covers are one run of the sorted draws: its two ends are found by bisection on the intervals themselves,
    and a few draws are checked directly."""
    f = np.sort(draws)

    def covers(i: int) -> bool:
        iv = unified_interval(float(f[i]), d1, d2, 0.95)
        return iv.lambda_low <= lam <= iv.lambda_high

    def first(pred, lo: int, hi: int) -> int:  # the first index in [lo, hi) where pred holds (monotone pred)
        while lo < hi:
            mid = (lo + hi) // 2
            if pred(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    median = len(f) // 2
    assert covers(median)
    start = first(lambda i: covers(i), 0, median)
    stop = first(lambda i: not covers(i), median, len(f))
    for i in np.random.default_rng(3).choice(len(f), 12, replace=False):
        assert covers(int(i)) is bool(start <= i < stop)
    return (stop - start) / len(f)


@pytest.mark.parametrize(("lam", "d1", "d2"), [(0.0, 2, 1000), (0.0, 5, 100), (6.0, 3, 2000), (40.0, 1, 300)])
def test_coverage_by_simulation(lam, d1, d2):
    rng = np.random.default_rng(20261128)
    dist = stats.ncf(d1, d2, lam) if lam > 0 else stats.f(d1, d2)
    draws = dist.rvs(size=4000, random_state=rng)
    cover = _coverage(lam, d1, d2, draws)
    # binomial SD at 0.95 over 4000 draws: 0.0034; 3.5 SDs
    assert abs(cover - 0.95) < 0.012


@settings(max_examples=12, deadline=None)
@given(st.floats(0.05, 30.0), st.floats(1.01, 3.0), st.sampled_from([(1, 500), (3, 2000), (6, 80)]))
def test_interval_rises_with_f(f, factor, dfs):
    d1, d2 = dfs
    a, b = unified_interval(f, d1, d2), unified_interval(f * factor, d1, d2)
    assert a.lambda_low <= b.lambda_low + 1e-9 * (1 + b.lambda_low)
    assert a.lambda_high <= b.lambda_high + 1e-9 * (1 + b.lambda_high)
    assert a.lambda_low <= a.lambda_best <= a.lambda_high
    # the lower bound leaves 0 exactly when the F test rejects at 5 %
    assert (a.lambda_low > 0) == (f > stats.f.ppf(0.95, d1, d2))
    assert a.lambda_high > 0


def test_f_of_zero_has_a_positive_upper_bound():
    iv = unified_interval(0.0, 2, 1000)
    assert iv.lambda_low == 0.0 and 0 < iv.lambda_high < unified_interval(0.5, 2, 1000).lambda_high


def _row(f_value: float, df1: int, df2: int, conf: float = 0.95) -> dict:
    """heterogeneity_row on leaves built to give the statistic f_value with (df1, df2)."""
    import pandas as pd

    n = df1 + df2 + 1
    ss_within = 1.0 / (1.0 + f_value * df1 / df2)
    leaves = pd.DataFrame({"n": [n - df1] + [1] * df1, "sd_fme": [np.sqrt(ss_within / (n - df1 - 1))] + [0.0] * df1})
    root = pd.Series({"n": n, "sd_fme": np.sqrt(1.0 / (n - 1))})
    return heterogeneity_row(leaves, root, conf)


@pytest.mark.parametrize(("f", "d1", "d2"), [(4.0, 3, 2000), (0.3, 2, 500), (60.0, 1, 1000)])
def test_heterogeneity_row_reports_the_unified_share_interval(f, d1, d2):
    r = _row(f, d1, d2)
    n = d1 + d2 + 1
    iv = unified_interval(r["statistic"], d1, d2, 0.95)
    assert r["statistic"] == pytest.approx(f, rel=1e-9) and r["interval"] == UNIFIED and r["note"] == ""
    assert r["share_ci_low"] == pytest.approx(iv.lambda_low / (iv.lambda_low + n), rel=1e-12, abs=1e-15)
    assert r["share_ci_high"] == pytest.approx(iv.lambda_high / (iv.lambda_high + n), rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize(("d1", "d2"), [(1, 2000), (3, 2000), (10, 200)])
def test_equal_tailed_fallback_is_within_1e_4_of_the_unified_interval(d1, d2):
    # just above the fallback's threshold (df1 F = 5e4) the equal-tailed interval is reported: it differs from
    # the unified one at the same F by less than 1e-4 in the share
    f = 5.001e4 / d1
    row, n = _row(f, d1, d2), d1 + d2 + 1
    assert row["interval"] == EQUAL_TAILED and "equal-tailed" in row["note"]
    assert _row(4.999e4 / d1, d1, d2)["interval"] == UNIFIED
    iv = unified_interval(row["statistic"], d1, d2, 0.95)
    assert abs(row["share_ci_low"] - iv.lambda_low / (iv.lambda_low + n)) < 1e-4
    assert abs(row["share_ci_high"] - iv.lambda_high / (iv.lambda_high + n)) < 1e-4
