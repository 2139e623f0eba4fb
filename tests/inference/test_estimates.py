"""fme.inference.estimates: one group of equal weights averaged without the averaging matrix (from 50 000 rows),
the same numbers; a table's rows as dicts, as its frame gives them."""

from __future__ import annotations

import numpy as np
import pytest

from fme.inference.estimates import Estimates, RowInference, group_matrix, undefined_where


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
