"""fme._utils.validation.align_rows: an outcome matched to the rows of its features."""

import numpy as np
import pandas as pd
import pytest

from fme._utils.validation import align_rows
from fme.exceptions import DataError


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
