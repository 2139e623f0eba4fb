"""fme.inference.one_group: an AME table's sums of one group in two compiled passes, NumPy's numbers and the
averaging route's to the bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fme.inference.estimates import KERNEL_ROWS, RowInference, _one_group_sums
from fme.inference.one_group import one_group_sums, selecting_quartiles


def _numpy_sums(values: np.ndarray) -> tuple[float, float, float, float]:
    """What the AME table's row computed before: the averaging route's row-order sums and NumPy's."""
    n = values.size
    mean, ss = _one_group_sums(values, 1.0 / n)
    with np.errstate(over="ignore"):  # a huge scale overflows the squares: inf, the same in both
        total = np.add.reduce(values)
        dev = np.subtract(values, float(total) / n)
        return mean, ss, float(total), float(np.add.reduce(dev * dev))


@pytest.mark.parametrize("n", [50_000, 50_007, 65_536, 65_543, 100_001, 262_147])
@pytest.mark.parametrize("scale", [1e-300, 1e-6, 1.0, 1e150])
def test_one_group_sums_are_numpys_and_the_averages_to_the_bit(n: int, scale: float) -> None:
    rng = np.random.default_rng(n)
    values = rng.standard_cauchy(n) * scale + rng.uniform(-3, 3) * scale
    got = one_group_sums(values)
    assert got is not None
    assert (got.mean, got.ss, got.total, got.sum_sq) == _numpy_sums(values)
    assert got.quartiles == tuple(np.quantile(values, [0.25, 0.75])) and got.count == n
    want = RowInference("sample", values).average()
    est = got.estimates()
    np.testing.assert_array_equal(est.estimate, want.estimate)
    np.testing.assert_array_equal(est.se, want.se)
    np.testing.assert_array_equal(est.df, want.df)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 3000),
    pad=st.integers(0, 7),
    seed=st.integers(0, 2**32 - 1),
    exponent=st.integers(-200, 200),
)
def test_pairwise_pass_is_numpys_add_reduce(n: int, pad: int, seed: int, exponent: int) -> None:
    # every block length and tail (n mod 8, halves at multiples of 8) at the kernel's threshold and above it
    rng = np.random.default_rng(seed)
    m = KERNEL_ROWS + 8 * n + pad
    values = rng.standard_normal(m) * 10.0 ** rng.integers(-5, 5, m) * 10.0**exponent
    got = one_group_sums(values)
    assert got is not None
    assert (got.mean, got.ss, got.total, got.sum_sq) == _numpy_sums(values)


def test_one_group_sums_leave_small_and_nan_sums_to_numpy() -> None:
    assert one_group_sums(np.ones(KERNEL_ROWS - 1)) is None
    values = np.ones(KERNEL_ROWS)
    values[7] = np.nan
    assert one_group_sums(values) is None
    values[7] = np.inf
    assert one_group_sums(values).total == np.inf  # an infinite sum is a sum: the same as NumPy's
    values[8] = -np.inf
    assert one_group_sums(values) is None


def test_a_selection_started_early_gives_the_same_quartiles() -> None:
    values = np.random.default_rng(9).normal(size=KERNEL_ROWS + 3)
    early = selecting_quartiles(values)
    assert early is not None and selecting_quartiles(values[:10]) is None
    got = one_group_sums(values, early)
    assert got is not None and got.quartiles == tuple(np.quantile(values, [0.25, 0.75]))
