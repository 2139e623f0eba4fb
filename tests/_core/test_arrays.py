"""ArrayData (fme._core.arrays): an array of the array API standard validated at the front door, its
exclusions tested in its own namespace, and the host copies (fme._utils.arrays)."""

from __future__ import annotations

import array_api_strict
import numpy as np
import pandas as pd
import pytest

from fme._core.arrays import array_exclusions, check_array_data
from fme._core.exclusions import value_exclusions
from fme._utils.arrays import is_array, library_name, to_host
from fme.exceptions import DataError, ParameterError
from fme.steps import Step

NAMES = ["a", "b"]


def test_an_array_is_recognised_and_a_frame_is_not():
    assert is_array(np.ones((2, 2))) and is_array(array_api_strict.ones((2, 2)))
    assert not is_array(pd.DataFrame({"a": [1.0]})) and not is_array([[1.0]]) and not is_array(pd.Series([1.0]))


@pytest.mark.parametrize("make", [np.asarray, array_api_strict.asarray])
def test_array_data_keeps_the_array_its_names_and_namespace(make):
    X = make(np.arange(6.0).reshape(3, 2))
    data = check_array_data(X, ("a", "b"))
    assert data.values is X and data.feature_names == ("a", "b") and data.n == 3 and data.column("b") == 1
    pd.testing.assert_frame_equal(data.host_frame(), pd.DataFrame(np.arange(6.0).reshape(3, 2), columns=NAMES))
    pd.testing.assert_frame_equal(data.host_frame(["b"]), pd.DataFrame({"b": [1.0, 3.0, 5.0]}))
    assert list(data.empty_frame().columns) == NAMES and len(data.empty_frame()) == 0
    assert library_name(X) == ("numpy" if isinstance(X, np.ndarray) else "array_api_strict")


def test_a_numpy_array_reaches_the_host_without_a_copy():
    X = np.arange(6.0).reshape(3, 2)
    assert np.shares_memory(check_array_data(X, NAMES).host_frame().to_numpy(), X)
    strict = array_api_strict.asarray(X)
    np.testing.assert_array_equal(to_host(strict), X)


def test_integer_and_boolean_arrays_become_float64_in_their_namespace():
    X = array_api_strict.asarray(np.array([[1, 2], [3, 4]]))
    data = check_array_data(X, NAMES)
    assert data.values.dtype == array_api_strict.float64 and isinstance(data.values, type(X))
    np.testing.assert_array_equal(to_host(data.values), [[1.0, 2.0], [3.0, 4.0]])


@pytest.mark.parametrize(
    "X, names, error, match",
    [
        (np.ones((3, 2)), None, DataError, r"numpy array of shape \(3, 2\) without feature_names: pass a pandas"),
        (np.ones((3, 2)), ["a"], DataError, "names 1 column but `data` has 2"),
        (np.ones((3, 2)), ["a", "a"], ParameterError, "distinct column labels"),
        (np.ones((3, 2)), "ab", ParameterError, "distinct column labels"),
        (np.ones(3), ["a"], DataError, r"shape \(3,\); pass a 2-D array"),
        (np.ones((0, 2)), NAMES, DataError, "at least one row"),
        (np.ones((2, 2), dtype=complex), NAMES, DataError, "dtype complex128"),
    ],
)
def test_bad_arrays_are_refused(X, names, error, match):
    with pytest.raises(error, match=match):
        check_array_data(X, names)


@pytest.mark.parametrize("make", [np.asarray, array_api_strict.asarray])
def test_exclusions_are_the_dataframe_routes(make):
    X = np.array([[np.nan, 1.0], [2.0, np.inf], [np.inf, np.nan], [1.0, 2.0]])
    steps = (Step("a", "numeric", 1.0), Step("b", "numeric", 2.0))
    code, notes = array_exclusions(check_array_data(make(X), NAMES), steps)
    want_code, want_notes = value_exclusions(pd.DataFrame(X, columns=NAMES), steps)
    np.testing.assert_array_equal(code, want_code)
    np.testing.assert_array_equal(code, [1, 1, 1, 0])
    assert [(list(p), pt, r) for p, pt, r in notes] == [(list(p), pt, r) for p, pt, r in want_notes]


def test_feature_names_may_be_an_array_of_labels():
    # an estimator's feature_names_in_ is a NumPy array of labels
    data = check_array_data(np.ones((3, 2)), np.array(NAMES, dtype=object))
    assert data.feature_names == tuple(NAMES)
    assert check_array_data(np.ones((3, 2)), pd.Index(NAMES)).feature_names == tuple(NAMES)
    with pytest.raises(ParameterError, match="distinct column labels"):
        check_array_data(np.ones((3, 2)), np.array([["a", "b"]]))
