"""A categorical step to a level the fitted model never saw is refused, naming the level
and the model's levels, whatever the extrapolation detector."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme._adapters import adapt
from fme.exceptions import StepError


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(7)
    n = 300
    train = pd.DataFrame(
        {"x": rng.normal(size=n), "c": pd.Categorical(rng.choice(["a", "b", "c"], n), categories=["a", "b", "c"])}
    )
    y = train["x"] + train["c"].map({"a": 0.0, "b": 1.0, "c": -1.0}).astype(float) + rng.normal(0, 0.1, n)
    # evaluation rows: the training levels only, but the column also knows a level 'z' the model never saw
    new = train.iloc[:50].copy()
    new["c"] = new["c"].cat.add_categories(["z"])
    return train, y, new


def test_hist_gradient_boosting_categorical_unseen_level(frames):
    from sklearn.ensemble import HistGradientBoostingRegressor

    train, y, new = frames
    model = HistGradientBoostingRegressor(max_iter=20, random_state=0).fit(train, y)
    assert adapt(model).training_levels() == {"c": ["a", "b", "c"]}
    for detector in (None, "envelope"):
        with pytest.raises(StepError, match=r"feature 'c': the model never saw the level 'z'.*\['a', 'b', 'c'\]"):
            fme.fme(model, new, {"c": "z"}, extrapolation=detector)
    with pytest.raises(StepError, match="never saw the level 'z'"):
        fme.ame(model, new, {"c": None})  # every level of the column, 'z' among them
    with pytest.raises(StepError, match="never saw the level 'z'"):
        fme.ame(model, new, {"c": {"reference": "a"}}, categorical="classic")
    # a known level is fine and exact
    res = fme.fme(model, new, {"c": "b"})
    moved = new.assign(c=pd.Categorical(["b"] * len(new), categories=new["c"].cat.categories))
    keep = (new["c"] != "b").to_numpy()
    expected = model.predict(moved)[keep] - model.predict(new)[keep]
    np.testing.assert_array_equal(res.results["fme"].to_numpy(), expected)


def test_statsmodels_formula_levels(frames):
    smf = pytest.importorskip("statsmodels.formula.api")
    train, y, new = frames
    data = train.assign(y=y, c=train["c"].astype(str))
    ols = smf.ols("y ~ x + C(c)", data=data).fit()
    assert adapt(ols).training_levels() == {"c": ["a", "b", "c"]}
    with pytest.raises(StepError, match=r"never saw the level 'z'.*\['a', 'b', 'c'\]"):
        fme.fme(ols, new, {"c": "z"})
    with pytest.raises(StepError, match=r"never saw the level 'z'"):
        fme.ame(ols, new, {"c": "z"}, extrapolation="envelope", reference_data=new)
    row = fme.ame(ols, new, {"c": "b"}).iloc[0]
    assert row["ame"] == pytest.approx(
        ols.params["C(c)[T.b]"] - np.mean([ols.params.get(f"C(c)[T.{lv}]", 0.0) for lv in new["c"][new["c"] != "b"]]),
        rel=1e-10,
    )


def test_lightgbm_and_pipeline_levels(frames):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    train, y, new = frames
    pipe = Pipeline(
        [
            (
                "pre",
                ColumnTransformer([("oh", OneHotEncoder(handle_unknown="ignore"), ["c"])], remainder="passthrough"),
            ),
            ("lm", LinearRegression()),
        ]
    ).fit(train, y)
    with pytest.raises(StepError, match="never saw the level 'z'"):
        fme.fme(pipe, new, {"c": "z"})
    lgb = pytest.importorskip("lightgbm")
    model = lgb.LGBMRegressor(n_estimators=5, verbose=-1).fit(train, y)
    assert adapt(model).training_levels() == {"c": ["a", "b", "c"]}
    with pytest.raises(StepError, match="never saw the level 'z'"):
        fme.fme(model, new, {"c": "z"})


def test_xgboost_levels(frames):
    xgb = pytest.importorskip("xgboost")
    train, y, new = frames
    model = xgb.XGBRegressor(n_estimators=5, max_depth=2, enable_categorical=True, tree_method="hist").fit(train, y)
    assert adapt(model).training_levels() == {"c": ["a", "b", "c"]}
    assert adapt(model.get_booster()).training_levels() == {"c": ["a", "b", "c"]}
    with pytest.raises(StepError, match=r"never saw the level 'z'"):
        fme.fme(model, new, {"c": "z"})
