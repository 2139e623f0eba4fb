"""Tests of :mod:`fme.datasets` (the bundled Boston housing data)."""

from __future__ import annotations

import csv
import hashlib
import io
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from fme.datasets import (
    BOSTON_FEATURES,
    BOSTON_SHA256,
    BOSTON_TARGET,
    boston_feature_descriptions,
    load_boston,
)
from fme.exceptions import FMEError, ParameterError

COLUMNS = [
    "crim",
    "zn",
    "indus",
    "chas",
    "nox",
    "rm",
    "age",
    "dis",
    "rad",
    "tax",
    "ptratio",
    "lstat",
    "medv",
]

# Ranges of the paper's table of the Boston data (min, max).
PAPER_RANGES = {
    "crim": (0.00632, 88.9762),
    "zn": (0.0, 100.0),
    "indus": (0.46, 27.74),
    "nox": (0.385, 0.871),
    "rm": (3.561, 8.78),
    "age": (2.9, 100.0),
    "dis": (1.1296, 12.1265),
    "rad": (1.0, 24.0),
    "tax": (187.0, 711.0),
    "ptratio": (12.6, 22.0),
    "lstat": (1.73, 37.97),
    "medv": (5.0, 50.0),
}


def _csv_resource():
    return resources.files("fme").joinpath("data", "boston.csv")


def test_packaged_csv_sha256() -> None:
    digest = hashlib.sha256(_csv_resource().read_bytes()).hexdigest()
    assert digest == BOSTON_SHA256


def test_readme_is_packaged_and_names_checksum() -> None:
    readme = resources.files("fme").joinpath("data", "README.md").read_text(encoding="utf-8")
    assert BOSTON_SHA256 in readme


def test_shape_columns_dtypes() -> None:
    df = load_boston()
    assert isinstance(df, pd.DataFrame)
    assert df.shape == (506, 13)
    assert list(df.columns) == COLUMNS
    assert list(BOSTON_FEATURES) + [BOSTON_TARGET] == COLUMNS
    assert isinstance(df.index, pd.RangeIndex) and df.index[0] == 0 and df.index[-1] == 505
    for col in COLUMNS:
        if col != "chas":
            assert df[col].dtype == np.float64, col
    assert not df.isna().any().any()


def test_chas_is_unordered_integer_categorical() -> None:
    chas = load_boston()["chas"]
    assert isinstance(chas.dtype, pd.CategoricalDtype)
    assert chas.cat.ordered is False
    assert list(chas.cat.categories) == [0, 1]
    assert chas.cat.categories.dtype.kind == "i"
    assert set(chas.unique()) == {0, 1}
    assert chas.value_counts().to_dict() == {0: 471, 1: 35}


@pytest.mark.parametrize("col", sorted(PAPER_RANGES))
def test_ranges_match_paper_table(col: str) -> None:
    df = load_boston()
    lo, hi = PAPER_RANGES[col]
    assert df[col].min() == lo
    assert df[col].max() == hi


def test_medv_censored_at_50() -> None:
    medv = load_boston()["medv"]
    assert (medv == 50).sum() == 16
    assert medv[medv < 50].max() == 48.8


def test_values_equal_file_text_exactly() -> None:
    text = _csv_resource().read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == COLUMNS
    assert len(rows) == 507
    df = load_boston(as_frame=False)
    expected = np.array([[float(x) for x in row] for row in rows[1:]])
    assert np.array_equal(df, expected)


def test_return_X_y() -> None:
    df = load_boston()
    X, y = load_boston(return_X_y=True)
    assert isinstance(X, pd.DataFrame) and isinstance(y, pd.Series)
    assert list(X.columns) == list(BOSTON_FEATURES)
    assert BOSTON_TARGET not in X.columns
    assert y.name == "medv" and y.dtype == np.float64
    pd.testing.assert_frame_equal(X, df.drop(columns="medv"))
    pd.testing.assert_series_equal(y, df["medv"])


def test_as_frame_false() -> None:
    arr = load_boston(as_frame=False)
    assert isinstance(arr, np.ndarray) and arr.shape == (506, 13) and arr.dtype == np.float64
    X, y = load_boston(as_frame=False, return_X_y=True)
    assert X.shape == (506, 12) and y.shape == (506,)
    assert np.array_equal(X, arr[:, :-1]) and np.array_equal(y, arr[:, -1])
    assert set(np.unique(X[:, COLUMNS.index("chas")])) == {0.0, 1.0}


def test_fresh_copy_each_call() -> None:
    first = load_boston()
    reference = load_boston()
    first.loc[0, "crim"] = -1.0
    first.loc[0, "chas"] = 1
    first["medv"] *= 0
    del first["rm"]
    second = load_boston()
    pd.testing.assert_frame_equal(second, reference)
    assert second.loc[0, "crim"] == 0.00632

    X, y = load_boston(return_X_y=True)
    y.iloc[:] = 0.0
    X.iloc[:, 0] = 0.0
    X2, y2 = load_boston(return_X_y=True)
    assert y2.iloc[0] == 24.0 and X2.iloc[0, 0] == 0.00632


@pytest.mark.parametrize(
    "kwargs",
    [{"as_frame": 1}, {"as_frame": None}, {"return_X_y": "yes"}, {"return_X_y": 0}],
)
def test_bad_arguments_raise_parameter_error(kwargs: dict) -> None:
    with pytest.raises(ParameterError) as info:
        load_boston(**kwargs)
    assert isinstance(info.value, FMEError) and isinstance(info.value, ValueError)
    assert next(iter(kwargs)) in str(info.value)


def test_arguments_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        load_boston(True)  # type: ignore[misc]


def test_feature_descriptions() -> None:
    desc = boston_feature_descriptions()
    assert list(desc) == COLUMNS
    for col, value in desc.items():
        assert isinstance(value, tuple) and len(value) == 2, col
        description, unit = value
        assert isinstance(description, str) and description, col
        assert isinstance(unit, str) and unit, col
        assert "$" not in description + unit, col
    assert desc["medv"][1] == "1000 USD"
    desc["rm"] = ("changed", "x")
    assert boston_feature_descriptions()["rm"][0] != "changed"
