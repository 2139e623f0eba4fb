"""fme.inference.estimates: one group of equal weights averaged without the averaging matrix (from 50 000 rows),
the same numbers."""

from __future__ import annotations

import numpy as np
import pytest

from fme.inference.estimates import RowInference, group_matrix


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
