"""fme._utils.validation: the front doors' checks of data without a model."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fme._utils.validation import check_data


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
