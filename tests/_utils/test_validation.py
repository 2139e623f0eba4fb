"""Tests of fme._utils.validation: data frames of other libraries are read or refused with the way in."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme._utils.validation import check_data
from fme.exceptions import DataError


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
