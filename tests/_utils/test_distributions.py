"""The tail probabilities and quantiles equal scipy.stats' to the bit, at the edges and at random."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from fme._utils.distributions import norm_cdf, norm_ppf, norm_sf, t_cdf, t_ppf, t_sf

_DF = np.array([np.nan, -1.0, 0.0, 1e-300, 0.5, 1.0, 2.5, 30.0, 999_999.0, 1e10, np.inf])
_X = np.array([np.nan, -np.inf, -40.0, -1.0, -0.0, 0.0, 1e-300, 1.0, 40.0, 1e300, np.inf])
_Q = np.array([np.nan, -0.1, 0.0, 1e-300, 0.025, 0.5, 0.975, 1.0 - 1e-16, 1.0, 1.1])


def _same(got: object, want: object) -> None:
    assert type(got) is type(want)
    np.testing.assert_array_equal(got, want)  # NaN where scipy's is NaN


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_every_edge_is_scipy_stats_own() -> None:
    d, x = np.meshgrid(_DF, _X)
    _same(t_sf(x, d), stats.t.sf(x, d))
    _same(t_cdf(x, d), stats.t.cdf(x, d))
    d, q = np.meshgrid(_DF, _Q)
    _same(t_ppf(q, d), stats.t.ppf(q, d))
    _same(norm_sf(_X), stats.norm.sf(_X))
    _same(norm_cdf(_X), stats.norm.cdf(_X))
    _same(norm_ppf(_Q), stats.norm.ppf(_Q))
    for df in (1.0, 7.0, np.inf):  # one number in, one NumPy float out, as scipy gives
        _same(t_ppf(0.0, df), stats.t.ppf(0.0, df))
        _same(t_ppf(0.975, df), stats.t.ppf(0.975, df))
        _same(t_sf(2.0, df), stats.t.sf(2.0, df))
    _same(norm_ppf(0.975), stats.norm.ppf(0.975))
    _same(norm_sf(1.96), stats.norm.sf(1.96))


@settings(max_examples=300, deadline=None)
@given(
    st.floats(-1e3, 1e3, allow_nan=False),
    st.floats(0.0, 1.0),
    st.one_of(st.floats(1e-3, 1e7), st.integers(1, 10**7).map(float)),
)
def test_random_arguments_are_scipy_stats_own(x: float, q: float, df: float) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _same(t_sf(np.array([x, -x]), df), stats.t.sf(np.array([x, -x]), df))
        _same(t_cdf(np.array([x, -x]), df), stats.t.cdf(np.array([x, -x]), df))
        _same(norm_cdf(x), stats.norm.cdf(x))
        _same(t_ppf(np.array([q, 1.0 - q]), np.array([df, df])), stats.t.ppf(np.array([q, 1.0 - q]), df))
        _same(norm_sf(x), stats.norm.sf(x))
        _same(norm_ppf(q), stats.norm.ppf(q))
