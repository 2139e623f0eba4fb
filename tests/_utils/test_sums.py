"""The any-order sums: non-finite exactly where a value is, their totals the row-order ones to rounding, and the
differences written beside them NumPy's to the bit."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fme._utils.sums import any_order_sum, difference_sum

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


_operand = st.one_of(_moderate, _moderate, _moderate, st.sampled_from([np.nan, np.inf, -np.inf]))


@settings(max_examples=300, deadline=None)
@given(arrays(np.float64, 60, elements=_operand), arrays(np.float64, 60, elements=_operand))
def test_difference_sum_writes_numpys_differences_and_is_finite_only_when_they_all_are(
    a: np.ndarray, b: np.ndarray
) -> None:
    """Every difference is NumPy's (NaN where NumPy's is); the sum is non-finite when an operand is, and otherwise
    the row-order sum to rounding."""
    out = np.empty(a.size)
    total = difference_sum(a, b, out)
    with np.errstate(invalid="ignore"):
        want = a - b
    np.testing.assert_array_equal(out, want)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        assert not math.isfinite(total)
    else:
        bound = want.size * np.finfo(float).eps * float(np.abs(want).sum())
        assert abs(total - math.fsum(want.tolist())) <= bound


def test_a_difference_that_overflows_makes_the_sum_non_finite() -> None:
    out = np.empty(3)
    assert difference_sum(np.array([1.0, 1.7e308, 0.0]), np.array([0.0, -1.7e308, 0.0]), out) == np.inf
    assert out.tolist() == [1.0, np.inf, 0.0]
