"""fme.levels.table: the learner- and data-level tables carry their covariance to fme.hypotheses."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import fme
from fme.levels.table import level_table


def _table(df):
    labels = pd.DataFrame({"feature": ["a", "b"], "step": ["1", "2"], "level": [None, None], "reference": [None, None]})
    V = np.array([[0.04, 0.01], [0.01, 0.09]])
    return level_table(
        labels,
        np.array([1.0, 0.5]),
        V,
        df=df,
        conf_level=0.9,
        inference="learner (test)",
        covers="training sets",
        extra={"repeats": 10, "n_train": [80, 80]},
    )


@pytest.mark.parametrize("df", [None, 9.0])
def test_intervals_from_the_covariance(df):
    t = _table(df)
    assert isinstance(t, fme.EstimatesTable)
    np.testing.assert_allclose(t["std_error"], [0.2, 0.3], rtol=1e-15)
    q = stats.norm.ppf(0.95) if df is None else stats.t.ppf(0.95, df)
    np.testing.assert_allclose(t["conf_low"], [1.0 - q * 0.2, 0.5 - q * 0.3], rtol=1e-14)
    assert list(t["inference"]) == ["learner (test)"] * 2 and list(t["covers"]) == ["training sets"] * 2
    assert list(t["repeats"]) == [10, 10] and list(t["n_train"]) == [80, 80]
    assert list(t.columns[:5]) == ["feature", "step", "level", "reference", "ame"]


def test_hypotheses_use_the_joint_covariance():
    t = _table(9.0)
    h = fme.hypotheses(t, "b1 - b2 = 0")
    se = np.sqrt(0.04 + 0.09 - 2 * 0.01)
    # hypotheses differentiates the equation numerically: exact up to its step's rounding
    np.testing.assert_allclose(h["std_error"], [se], rtol=1e-9)
    np.testing.assert_allclose(h["p_value"], [2 * stats.t.sf(0.5 / se, 9)], rtol=1e-8)


def test_hypotheses_keep_the_tables_labels_of_what_the_interval_covers():
    h = fme.hypotheses(_table(9.0), "b1 - b2 = 0")
    assert h["inference"].iloc[0] == "learner (test)" and h["covers"].iloc[0] == "training sets"
