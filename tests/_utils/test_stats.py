"""fme._utils.stats: describe's figures and the quartiles equal NumPy's own, number for number."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fme._utils.stats import describe, median, quartiles

_FLOATS = st.floats(allow_nan=False, width=64)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 300), elements=_FLOATS | st.sampled_from([0.0, 1.0, -2.5])))
def test_quartiles_equal_numpy_quantile(values: np.ndarray) -> None:
    with np.errstate(invalid="ignore"):
        want = np.quantile(values, [0.25, 0.75])
        got = np.array(quartiles(values))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [4, 5, 8, 1001, 100_003])
def test_quartiles_equal_numpy_quantile_with_ties_and_leave_the_input_as_it_was(n: int) -> None:
    rng = np.random.default_rng(n)
    for values in (rng.normal(size=n), rng.integers(0, 3, size=n).astype(float), rng.standard_cauchy(n) * 1e9):
        before = values.copy()
        assert quartiles(values) == tuple(np.quantile(values, [0.25, 0.75]))
        np.testing.assert_array_equal(values, before)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 5000])
def test_describe_equals_numpys_mean_sd_and_quantiles_leaving_nans_out(n: int) -> None:
    rng = np.random.default_rng(n)
    values = rng.normal(size=n) * 1e3 + 7.0
    values[rng.random(n) < 0.1] = np.nan
    before = values.copy()
    d = describe(values)
    kept = before[~np.isnan(before)]
    np.testing.assert_array_equal(values, before)  # the caller's values as they were
    assert d["n"] == kept.size
    if kept.size:
        assert d["mean"] == float(kept.mean())
        assert (d["q25"], d["q75"]) == tuple(np.quantile(kept, [0.25, 0.75]))
    if kept.size >= 2:
        assert d["sd"] == float(kept.std(ddof=1))
    else:
        assert np.isnan(d["sd"])


def test_describe_of_no_values_and_of_opposite_infinities() -> None:
    assert np.isnan(describe(np.array([np.nan, np.nan]))["mean"])
    with np.errstate(invalid="ignore"):
        d = describe(np.array([np.inf, -np.inf, 1.0]))  # a NaN sum without a NaN value: all three kept
    assert d["n"] == 3 and np.isnan(d["mean"])


@settings(max_examples=300, deadline=None)
@given(
    arrays(
        np.float64,
        st.integers(1, 300),
        elements=_FLOATS | st.sampled_from([0.0, 1.0, -2.5, np.inf, -np.inf]) | st.just(np.nan),
    )
)
def test_median_equals_numpy_median(values: np.ndarray) -> None:
    """Odd and even counts, ties, infinities (NaN where NumPy gives NaN: inf + -inf) and NaN values."""
    before = values.copy()
    with np.errstate(invalid="ignore", over="ignore"):
        want = float(np.median(values))
        got = median(values)
    assert got == want or (np.isnan(got) and np.isnan(want))
    np.testing.assert_array_equal(values, before)  # the caller's values as they were


@pytest.mark.parametrize("n", [2, 3, 1_000, 100_004])
def test_median_of_large_samples_with_ties(n: int) -> None:
    rng = np.random.default_rng(n)
    for values in (rng.normal(size=n), rng.integers(0, 3, size=n).astype(float), rng.standard_cauchy(n) * 1e300):
        with np.errstate(over="ignore"):
            assert median(values) == float(np.median(values))
    assert np.isnan(median(np.empty(0)))
