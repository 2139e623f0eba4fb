"""fme._utils.validation: the front doors' checks of data without a model, and data frames of other libraries
read or refused with the way in."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme._utils.validation import align_rows, check_data, check_random_state, seed_of
from fme.exceptions import DataError


def test_checked_data_is_fmes_own_frame_with_the_callers_values():
    """Past the front door no function holds the caller's frame: a change to the checked frame leaves it as it was."""
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "x"]}, index=[10, 11, 12])
    checked = check_data(X)
    assert checked is not X
    pd.testing.assert_frame_equal(checked, X)
    checked["a"] = 0.0
    checked.loc[11, "b"] = "z"
    np.testing.assert_array_equal(X["a"].to_numpy(), [1.0, 2.0, 3.0])
    assert X.loc[11, "b"] == "y"


def test_pandas_objects_pair_by_label_and_arrays_by_position():
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0]}, index=["p", "q", "r"])
    y = pd.Series([30.0, 10.0, 20.0], index=["r", "p", "q"])
    out = align_rows(X, y)
    assert out.index.tolist() == ["p", "q", "r"] and out.tolist() == [10.0, 20.0, 30.0]
    same = pd.Series([1.0, 2.0, 3.0], index=X.index)
    assert align_rows(X, same) is same
    arr = np.array([5.0, 6.0, 7.0])
    assert align_rows(X, arr) is arr
    assert align_rows(X.to_numpy(), y) is y


def test_mismatches_name_both_objects():
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0]}, index=["p", "q", "r"])
    with pytest.raises(DataError, match=r"only in `Xt`: \['r'\], only in `yt`: \['s'\]"):
        align_rows(X, pd.Series([1.0, 2.0, 3.0], index=["p", "q", "s"]), "Xt", "yt")
    with pytest.raises(DataError, match=r"`y` has 2 values but `X` has 3 rows"):
        align_rows(X, np.zeros(2))
    with pytest.raises(DataError, match=r"index labels of `X` and `y` differ"):
        align_rows(X, pd.Series([1.0, 2.0], index=["p", "q"]))
    with pytest.raises(DataError, match=r"the index of `y` has duplicate labels \(e.g. \['p'\]\)"):
        align_rows(X, pd.Series([1.0, 2.0, 3.0], index=["p", "p", "q"]))
    with pytest.raises(DataError, match="array-like"):
        align_rows(X, 3.0)


def _polars_like(name: str, module: str) -> object:
    """An instance of a stand-in class named as polars names it (polars itself need not be installed)."""
    cls = type(name, (), {"__module__": module})
    return cls()


def _lazy_frame() -> object:
    try:
        import polars as pl
    except ImportError:
        return _polars_like("LazyFrame", "polars.lazyframe.frame")
    return pl.LazyFrame({"x": [1.0, 2.0, 3.0]})


def test_polars_lazy_frame_is_told_to_collect():
    lazy = _lazy_frame()
    with pytest.raises(DataError, match=r"LazyFrame.*data\.collect\(\)") as info:
        check_data(lazy)
    assert "numpy" not in str(info.value) and "pd.DataFrame(X" not in str(info.value)


def test_polars_lazy_frame_is_refused_by_the_front_doors():
    with pytest.raises(DataError, match=r"reference\.collect\(\)"):
        check_data(_lazy_frame(), name="reference")
    with pytest.raises(DataError, match=r"data\.collect\(\)"):
        fme.fme(lambda d: d["x"], _lazy_frame(), {"x": 1.0})


def test_polars_object_without_a_protocol_is_told_to_convert():
    with pytest.raises(DataError, match=r"polars DataFrame.*data\.to_pandas\(\)"):
        check_data(_polars_like("DataFrame", "polars.dataframe.frame"))


def test_polars_data_frame_is_read():
    pl = pytest.importorskip("polars")
    frame = check_data(pl.DataFrame({"x": [1.0, 2.0, 3.0]}))
    pd.testing.assert_frame_equal(frame, pd.DataFrame({"x": [1.0, 2.0, 3.0]}))


def test_other_objects_still_told_to_wrap_arrays():
    with pytest.raises(DataError, match=r"pd\.DataFrame\(X"):
        check_data([[1.0, 2.0]])
    with pytest.raises(DataError, match="numpy array"):
        check_data(np.ones((2, 2)))


def test_no_random_state_is_fmes_default_seed_and_a_generator_is_used_as_given() -> None:
    """None is seed 0, as seed_of takes it (the same inputs, the same outputs); an int seeds; a Generator is
    used as it is, so a caller who wants fresh draws passes one."""
    assert check_random_state(None).random() == np.random.default_rng(seed_of(None)).random()
    assert check_random_state(7).random() == np.random.default_rng(7).random()
    gen = np.random.default_rng(11)
    assert check_random_state(gen) is gen
