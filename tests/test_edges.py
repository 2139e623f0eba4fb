"""Issue 23, edges of the front doors: name clashes, what an interval covers, missing by values, other frames.

Data shipped with scikit-learn (diabetes) and statsmodels (spector); no downloads.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression

import fme
from fme.exceptions import FMEError, NameClashError
from fme.margins import _AME_COLUMNS, _MER_COLUMNS


@pytest.fixture(scope="module")
def diabetes():
    d = load_diabetes(as_frame=True)
    return d.data, d.target


@pytest.fixture(scope="module")
def linreg(diabetes):
    X, y = diabetes
    return LinearRegression().fit(X, y)


# ----------------------------------------------------------------- item 2: name clashes
@pytest.mark.parametrize("name", _AME_COLUMNS)
def test_by_column_named_like_an_output_column_is_refused(diabetes, linreg, name):
    X, _ = diabetes
    data = X.assign(**{name: (X["sex"] > 0).map({True: "m", False: "f"})})
    with pytest.raises(NameClashError, match=rf"by column '{name}'.*by='{name}_group'"):
        fme.ame(linreg, data, {"bmi": 0.01}, by=name, inference="sample")
    # the way out named by the message works and keeps the labels
    out = fme.ame(linreg, data.assign(**{f"{name}_group": data[name]}), {"bmi": 0.01}, by=f"{name}_group",
                  inference="sample")
    assert list(out[f"{name}_group"]) == ["f", "m"]
    assert list(out.columns).count(name) == 1


def test_by_clash_is_refused_on_dask_data_too(diabetes, linreg):
    dd = pytest.importorskip("dask.dataframe")
    X, _ = diabetes
    data = X.assign(n=np.where(X["sex"] > 0, "m", "f"))
    ddf = dd.from_pandas(data, npartitions=3)
    for name in ("n", "feature", "std_error"):
        with pytest.raises(NameClashError, match=f"by column '{name}'"):
            fme.ame(linreg, ddf.assign(**{name: ddf["n"]}), {"bmi": 0.01}, by=name, inference="sample")


def test_by_groups_keep_their_labels_beside_a_pairwise_table(diabetes, linreg):
    # with hypothesis='pairwise' the by column is not a column of the table: any name works
    X, _ = diabetes
    data = X.assign(n=np.where(X["sex"] > 0, "m", "f"))
    out = fme.ame(linreg, data, {"bmi": 0.01}, by="n", hypothesis="pairwise", inference="sample")
    assert list(out["hypothesis"]) == ["(m) - (f)"]


@pytest.mark.parametrize("name", _MER_COLUMNS)
def test_at_feature_named_like_an_output_column_is_refused(diabetes, name):
    X, y = diabetes
    data = X.rename(columns={"s1": name})
    model = LinearRegression().fit(data, y)
    with pytest.raises(NameClashError, match=rf"at column '{name}'.*fme\.fme\(model, grid, steps\)"):
        fme.mer(model, data, {"bmi": 0.01}, at={name: [-0.01, 0.02]})


def test_at_clash_with_a_step_column(diabetes):
    X, y = diabetes
    data = X.rename(columns={"s1": "step_bmi"})
    model = LinearRegression().fit(data, y)
    with pytest.raises(NameClashError, match="step_bmi"):
        fme.mer(model, data, {"bmi": 0.01}, at={"step_bmi": [0.0]}, extrapolation="envelope",
                on_extrapolation="shrink")


def test_at_without_clash_keeps_the_grid_values(diabetes, linreg):
    X, _ = diabetes
    out = fme.mer(linreg, X, {"bmi": 0.01}, at={"s1": [-0.01, 0.02]})
    assert list(out["s1"]) == [-0.01, 0.02]
    np.testing.assert_allclose(out["fme"], linreg.coef_[list(X.columns).index("bmi")] * 0.01, rtol=1e-10)
    assert (out["note"] == "").all()
