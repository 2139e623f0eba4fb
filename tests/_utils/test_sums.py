"""The any-order sum: non-finite exactly where a value is, its total the row-order one to rounding."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fme._utils.sums import any_order_sum

_moderate = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(0, 300), elements=_moderate), st.data())
def test_a_nan_or_an_infinity_anywhere_makes_the_sum_non_finite(values: np.ndarray, data: st.DataObject) -> None:
    assert math.isfinite(any_order_sum(values))
    if values.size:
        where = data.draw(st.integers(0, values.size - 1))
        bad = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
        spoiled = values.copy()
        spoiled[where] = bad
        assert not math.isfinite(any_order_sum(spoiled))


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(0, 300), elements=_moderate))
def test_the_total_is_the_row_order_sum_to_rounding(values: np.ndarray) -> None:
    """Reassociated additions round differently; the error stays within n ulps of the sum of magnitudes."""
    exact = math.fsum(values.tolist())
    bound = values.size * np.finfo(float).eps * float(np.abs(values).sum())
    assert abs(any_order_sum(values) - exact) <= bound


def test_an_overflowing_total_is_non_finite_and_a_large_array_is_summed_whole() -> None:
    assert any_order_sum(np.full(4, 1e308)) == np.inf
    values = np.arange(1_000_003, dtype=float)  # an odd length: every lane and the tail are added
    assert any_order_sum(values) == float(values.size * (values.size - 1) // 2)
