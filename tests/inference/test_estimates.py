"""fme.inference.estimates: one group of equal weights averaged without the averaging matrix (from 50 000 rows),
the same numbers; the AME table's sums of one group in two compiled passes, NumPy's numbers to the bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fme.inference.estimates import (
    _KERNEL_ROWS,
    Estimates,
    RowInference,
    _one_group_sums,
    group_matrix,
    one_group_sums,
    undefined_where,
)


@pytest.mark.parametrize("n", [1, 2, 3, 17, 49_999, 50_000, 100_001])
@pytest.mark.parametrize("scale", [1e-6, 1.0, 1e9])
def test_one_group_sample_average_equals_the_averaging_matrix_route(n: int, scale: float) -> None:
    rng = np.random.default_rng(n)
    values = rng.standard_cauchy(n) * scale
    codes = np.zeros(n, dtype=np.int64)
    est = group_matrix(codes, 1) @ values  # the CSR product the averages were computed by
    ss = np.bincount(codes, weights=(values - est[0]) ** 2, minlength=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.where(n >= 2, np.sqrt(ss / (n - 1.0)) / np.sqrt(n), np.nan)
    for got in (RowInference("sample", values).average(), RowInference("sample", values).average(codes, 1)):
        assert got.estimate[0] == est[0]
        np.testing.assert_array_equal(got.se, se)
        np.testing.assert_array_equal(got.df, [max(n - 1.0, 1.0)])


def test_several_groups_and_unused_rows_keep_the_matrix_route() -> None:
    values = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    got = RowInference("sample", values).average(np.array([0, 0, 1, -1, 1]), 2)
    np.testing.assert_array_equal(got.estimate, [1.5, 10.0])
    got = RowInference("sample", values).average(np.array([0, 0, 0, -1, 0]), 1)
    assert got.estimate[0] == 23.0 / 4.0


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
    m = _KERNEL_ROWS + 8 * n + pad
    values = rng.standard_normal(m) * 10.0 ** rng.integers(-5, 5, m) * 10.0**exponent
    got = one_group_sums(values)
    assert got is not None
    assert (got.mean, got.ss, got.total, got.sum_sq) == _numpy_sums(values)


def test_one_group_sums_leave_small_and_nan_sums_to_numpy() -> None:
    assert one_group_sums(np.ones(_KERNEL_ROWS - 1)) is None
    values = np.ones(_KERNEL_ROWS)
    values[7] = np.nan
    assert one_group_sums(values) is None
    values[7] = np.inf
    assert one_group_sums(values).total == np.inf  # an infinite sum is a sum: the same as NumPy's
    values[8] = -np.inf
    assert one_group_sums(values) is None


def _every_method() -> list[Estimates]:
    rng = np.random.default_rng(4)
    est = np.array([1.0, -2.0, 0.5])
    grad = rng.normal(size=(3, 2))
    return [
        Estimates("delta", est, grad=grad, vcov=np.eye(2)),
        Estimates("delta", est, grad=grad, vcov=np.eye(2), df=np.full(3, 12.0)),
        Estimates("bootstrap", est, draws=rng.normal(size=(3, 400)) + est[:, None]),
        Estimates("bootstrap", est, draws=rng.normal(size=(3, 400)) + est[:, None], ci="percentile"),
        Estimates("sample", est, se=np.array([0.1, 0.0, 0.3]), df=np.array([9.0, 1.0, 4.0])),
    ]


@pytest.mark.parametrize("est", _every_method(), ids=lambda e: e.method)
@pytest.mark.parametrize("undefined", [None, np.array([False, True, False]), np.array([True, True, True])])
def test_records_are_the_tables_rows_as_a_frame_gives_them(est: Estimates, undefined: np.ndarray | None) -> None:
    """Every method's records equal ``table.iloc[i].to_dict()`` of its (undefined_where) table: the same keys
    in order, the same numbers (NaN where the table's are) and the same Python types."""
    table = est.table(0.9) if undefined is None else undefined_where(est.table(0.9), undefined)
    got = est.records(0.9, undefined=undefined)
    assert len(got) == len(table)
    for i, row in enumerate(got):
        want = table.iloc[i].to_dict()
        assert list(row) == list(want)
        for key, value in want.items():
            assert type(row[key]) is type(value), key
            assert row[key] == value or (value != value and row[key] != row[key]), key
