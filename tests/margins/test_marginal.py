"""AME, MEM, MER and dME against hand computations (paper §3.2, §5.1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme.exceptions import FeatureError, ParameterError, StepError
from fme.margins.marginal import typical_values

BETA = {"x1": 2.0, "x2": -3.0, "x3": 0.5}
CAT = {"a": 0.0, "b": 1.5, "c": -1.0}


def linear(d):
    out = sum(b * d[f].to_numpy(dtype=float) for f, b in BETA.items())
    return out + d["cat"].map(CAT).to_numpy(dtype=float)


def nonlinear(d):
    return d["x1"].to_numpy(dtype=float) ** 2 * d["x3"].to_numpy(dtype=float) + d["cat"].map(CAT).to_numpy(float)


@pytest.fixture
def data(X):
    return X.copy()


def test_ame_numeric_linear_is_beta_times_h(data):
    before = data.copy(deep=True)
    out = fme.ame(linear, data, {"x1": 1.5, "x2": -2.0, "x3": "sd"})
    assert list(out["feature"]) == ["x1", "x2", "x3"]
    sd3 = float(np.std(data["x3"], ddof=1))
    np.testing.assert_allclose(out["step"], [1.5, -2.0, sd3], rtol=1e-14)
    np.testing.assert_allclose(out["ame"], [3.0, 6.0, 0.5 * sd3], rtol=1e-12)
    np.testing.assert_allclose(out["sd"], 0.0, atol=1e-12)
    np.testing.assert_allclose(out["q25"], out["ame"], rtol=1e-12)
    np.testing.assert_allclose(out["q75"], out["ame"], rtol=1e-12)
    assert (out["n"] == len(data)).all() and (out["n_excluded"] == 0).all()
    for col in ("step", "ame", "sd", "q25", "q75", "n"):
        assert pd.api.types.is_numeric_dtype(out[col])
    pd.testing.assert_frame_equal(data, before)


def test_ame_nonlinear_matches_fme(data):
    out = fme.ame(nonlinear, data, {"x1": 0.5})
    x1, x3 = data["x1"].to_numpy(), data["x3"].to_numpy()
    eff = ((x1 + 0.5) ** 2 - x1**2) * x3
    row = out.iloc[0]
    assert row["ame"] == pytest.approx(eff.mean(), rel=1e-12)
    assert row["sd"] == pytest.approx(np.std(eff, ddof=1), rel=1e-10)
    assert row["q25"] == pytest.approx(np.quantile(eff, 0.25), rel=1e-10)
    assert row["q75"] == pytest.approx(np.quantile(eff, 0.75), rel=1e-10)
    # A callable has no parameters: 'auto' falls back to the fixed-model t interval over the rows (paper §5.5).
    assert row["inference"] == "sample"
    se = np.std(eff, ddof=1) / np.sqrt(len(eff))
    assert row["std_error"] == pytest.approx(se, rel=1e-10)
    assert row["statistic"] == pytest.approx(eff.mean() / se, rel=1e-10)
    from scipy import stats

    assert row["p_value"] == pytest.approx(2 * stats.t.sf(abs(eff.mean() / se), len(eff) - 1), rel=1e-8)
    half = row["conf_high"] - row["ame"]
    assert half == pytest.approx(stats.t.ppf(0.975, len(eff) - 1) * se, rel=1e-10)
    assert row["ame"] - row["conf_low"] == pytest.approx(half, rel=1e-10)


def test_ame_categorical_observation_wise_vs_classic(data):
    obs = fme.ame(linear, data, {"cat": None})
    assert list(obs["level"]) == ["a", "b", "c"]
    assert obs["step"].isna().all()
    codes = data["cat"].astype(str).to_numpy()
    for _, row in obs.iterrows():
        others = codes[codes != row["level"]]
        expected = CAT[row["level"]] - np.array([CAT[c] for c in others])
        assert row["n"] == others.size and row["n_excluded"] == len(data) - others.size
        assert row["ame"] == pytest.approx(expected.mean(), rel=1e-12)
    classic = fme.ame(linear, data, {"cat": None}, categorical="classic")
    assert list(classic["level"]) == ["b", "c"] and (classic["reference"] == "a").all()
    np.testing.assert_allclose(classic["ame"], [CAT["b"] - CAT["a"], CAT["c"] - CAT["a"]], atol=1e-12)
    np.testing.assert_allclose(classic["sd"], 0.0, atol=1e-12)
    assert (classic["n"] == len(data)).all()
    # the two definitions differ: the observation-wise ME starts from each row's own level
    b_obs = obs.loc[obs["level"] == "b", "ame"].item()
    assert abs(b_obs - classic.loc[classic["level"] == "b", "ame"].item()) > 0.1
    ref_c = fme.ame(linear, data, {"cat": {"reference": "c"}}, categorical="classic")
    np.testing.assert_allclose(ref_c["ame"], [CAT["a"] - CAT["c"], CAT["b"] - CAT["c"]], atol=1e-12)
    one = fme.ame(linear, data, {"cat": "b"})
    assert len(one) == 1 and one["ame"].item() == pytest.approx(b_obs, rel=1e-14)


def test_ame_classic_on_nonlinear_interacting_model(data):
    def f(d):
        return d["x1"].to_numpy() * d["cat"].map({"a": 1.0, "b": 2.0, "c": 5.0}).to_numpy(float)

    classic = fme.ame(f, data, {"cat": {"reference": "a"}}, categorical="classic")
    x1 = data["x1"].to_numpy()
    np.testing.assert_allclose(classic["ame"], [x1.mean() * 1.0, x1.mean() * 4.0], rtol=1e-12)


def test_ame_all_features(data):
    out = fme.ame(linear, data)
    assert list(out["feature"]) == ["x1", "x2", "x3", "cat", "cat", "cat"]
    np.testing.assert_allclose(out["ame"].iloc[:3], [2.0, -3.0, 0.5], rtol=1e-12)
    assert (out["step"].iloc[:3] == 1.0).all()
    sub = fme.ame(linear, data, features=["x2"])
    assert list(sub["feature"]) == ["x2"]


def test_ame_sklearn_uses_model_features(gbr, df):
    out = fme.ame(gbr, df, {"x1": 0.5})
    assert out["ame"].item() == pytest.approx(fme.fme(gbr, df, {"x1": 0.5}).ame, rel=1e-15)
    allf = fme.ame(gbr, df)
    assert list(allf["feature"]) == ["x1", "x2", "x3"]  # not k, y, yb, cat


def test_ame_errors(data):
    with pytest.raises(FeatureError, match="unknown feature 'zz'"):
        fme.ame(linear, data, {"zz": 1})
    with pytest.raises(StepError, match="non-empty dict"):
        fme.ame(linear, data, {})
    with pytest.raises(ParameterError, match="'observation' or 'classic'"):
        fme.ame(linear, data, {"x1": 1}, categorical="reference")
    with pytest.raises(ParameterError, match="conf_level"):
        fme.ame(linear, data, {"x1": 1}, conf_level=1.5)


# ------------------------------------------------------------ MEM / MER
def test_typical_values(data):
    tv = typical_values(data)
    assert len(tv) == 1
    for f in BETA:
        assert tv[f].item() == pytest.approx(data[f].mean(), rel=1e-15)
    assert tv["cat"].item() == data["cat"].value_counts().idxmax()
    assert tv["cat"].dtype == data["cat"].dtype


def test_mem_numeric(data):
    m = data[list(BETA)].mean()
    out = fme.mem(nonlinear, data, {"x1": 0.5})
    mode = data["cat"].value_counts().idxmax()
    expected = ((m["x1"] + 0.5) ** 2 - m["x1"] ** 2) * m["x3"]
    assert len(out) == 1
    assert out["fme"].item() == pytest.approx(expected, rel=1e-12)
    assert out["note"].item() == ""
    lin = fme.mem(linear, data, {"x1": 0.5, "x2": 1.0})
    assert lin["fme"].item() == pytest.approx(2.0 * 0.5 - 3.0, rel=1e-12)
    # MEM != AME for a non-linear model
    assert abs(fme.ame(nonlinear, data, {"x1": 0.5})["ame"].item() - expected) > 1e-3
    assert mode in CAT


def test_mem_categorical_evaluates_other_levels(data):
    out = fme.mem(linear, data, {"cat": "b"})
    assert list(out["cat"].astype(str)) == ["a", "c"]
    np.testing.assert_allclose(out["fme"], [CAT["b"] - CAT["a"], CAT["b"] - CAT["c"]], atol=1e-12)


def test_mer_grid(data):
    at = {"x1": [0.0, 1.0, 2.0], "cat": ["a", "b"]}
    out = fme.mer(nonlinear, data, {"x1": 0.5}, at=at)
    assert len(out) == 6
    assert list(zip(out["x1"], out["cat"].astype(str))) == [
        (0.0, "a"),
        (0.0, "b"),
        (1.0, "a"),
        (1.0, "b"),
        (2.0, "a"),
        (2.0, "b"),
    ]
    x3 = data["x3"].mean()
    np.testing.assert_allclose(out["fme"], ((out["x1"] + 0.5) ** 2 - out["x1"] ** 2) * x3, rtol=1e-12)
    single = fme.mer(nonlinear, data, {"x1": 0.5}, at={"x1": 1.0, "x3": 2.0})
    assert len(single) == 1 and single["fme"].item() == pytest.approx(2.25 * 2 - 2.0, rel=1e-12)


def test_mer_categorical_step_at_level_is_nan_with_note(data):
    out = fme.mer(linear, data, {"cat": "b"}, at={"cat": ["a", "b", "c"], "x1": [0.0, 1.0]})
    assert len(out) == 6
    at_b = (out["cat"] == "b").to_numpy()
    assert out["fme"][at_b].isna().all()
    assert out["note"][at_b].str.contains("already at level 'b'").all()
    np.testing.assert_allclose(out["fme"][~at_b], np.where(out["cat"][~at_b] == "a", 1.5, 2.5), atol=1e-12)


def test_mer_unknown_at_feature(data):
    with pytest.raises(FeatureError, match="unknown feature 'q' in `at`"):
        fme.mer(linear, data, {"x1": 1}, at={"q": 1})


@pytest.mark.parametrize("dtype", ["str", "object"])
def test_mem_mer_categorical_step_on_string_column(data, dtype):
    d = data.assign(cat=data["cat"].astype(str).astype(dtype))
    out = fme.mem(linear, d, {"cat": "b"})
    assert list(out["cat"]) == ["a", "c"]
    np.testing.assert_allclose(out["fme"], [1.5, 2.5], atol=1e-12)
    mode = d["cat"].value_counts().idxmax()
    target = next(lv for lv in ("a", "b", "c") if lv != mode)
    grid = fme.mer(linear, d, {"cat": target, "x1": 1.0}, at={"x2": [0.0, 1.0]})
    assert len(grid) == 2 and list(grid["x2"]) == [0.0, 1.0]
    np.testing.assert_allclose(grid["fme"], CAT[target] - CAT[mode] + 2.0, atol=1e-12)
    at_mode = fme.mer(linear, d, {"cat": mode}, at={"x2": [0.0, 1.0]})
    assert at_mode["fme"].isna().all()


# ------------------------------------------------------------ dME
def test_dme_linear_and_quadratic(data):
    d = fme.dme(linear, data, "x1")
    assert d.index.equals(data.index) and list(d.columns) == ["dme"]
    np.testing.assert_allclose(d["dme"], 2.0, rtol=1e-7)
    q = fme.dme(nonlinear, data, "x1", eps=1e-3)
    # central differences are exact for quadratics (up to rounding)
    np.testing.assert_allclose(q["dme"], 2 * data["x1"] * data["x3"], rtol=1e-6, atol=1e-8)
    # dME * h vs fME: the tangent misses the curvature h^2 * x3
    fm = fme.fme(nonlinear, data, {"x1": 1.0}).results["fme"]
    np.testing.assert_allclose(fm - q["dme"], data["x3"], rtol=1e-6, atol=1e-7)


def test_dme_errors(data):
    with pytest.raises(FeatureError, match="unknown feature 'nope'"):
        fme.dme(linear, data, "nope")
    with pytest.raises(StepError, match="'cat' is categorical"):
        fme.dme(linear, data, "cat")
    with pytest.raises(ParameterError, match="eps must be a positive finite number"):
        fme.dme(linear, data, "x1", eps=-1.0)


def test_dme_classifier(rf_binary, logit, Xnum):
    d = fme.dme(logit, Xnum, "x1")
    p = np.asarray(logit.predict(Xnum))
    np.testing.assert_allclose(d["dme"], logit.params["x1"] * p * (1 - p), rtol=1e-6)


def test_margins_with_multiclass(multiclass, Xnum):
    one = fme.ame(multiclass, Xnum, {"x1": 0.5}, target_class="mid")
    assert one["ame"].item() == pytest.approx(fme.fme(multiclass, Xnum, {"x1": 0.5}, target_class="mid").ame, rel=1e-15)
    every = fme.ame(multiclass, Xnum, {"x1": 0.5}, target_class="all")  # one row per class
    assert list(every["class"]) == [str(c) for c in multiclass.classes_]
    assert every.loc[every["class"] == "mid", "ame"].item() == one["ame"].item()
    assert every["ame"].sum() == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ParameterError, match="target_class='all' is not supported"):
        fme.dme(multiclass, Xnum, "x1", target_class="all")
    m = fme.mem(multiclass, Xnum, {"x1": 0.5}, target_class="all")
    classes = [str(c) for c in multiclass.classes_]
    assert [c for c in m.columns if c.startswith("fme_")] == [f"fme_{c}" for c in classes]
    assert m[[f"fme_{c}" for c in classes]].sum(axis=1).item() == pytest.approx(0.0, abs=1e-12)
    d = fme.dme(multiclass, Xnum, "x1", target_class="mid", eps=1e-4)
    j = classes.index("mid")
    up, down = Xnum.assign(x1=Xnum["x1"] + 1e-4), Xnum.assign(x1=Xnum["x1"] - 1e-4)
    manual = (multiclass.predict_proba(up)[:, j] - multiclass.predict_proba(down)[:, j]) / 2e-4
    np.testing.assert_allclose(d["dme"].to_numpy(), manual, rtol=1e-12, atol=1e-14)


def test_model_features_missing_from_data(gbr, Xnum):
    with pytest.raises(fme.DataError, match=r"lacks feature\(s\) \['x3'\]"):
        fme.fme(gbr, Xnum[["x1", "x2"]], {"x1": 1.0})


@pytest.mark.parametrize(
    "at, phrase",
    [
        ({"cat": ["a", "zz"]}, r"\['zz'\] for the categorical feature 'cat'; use its levels \['a', 'b', 'c'\]"),
        ({"x2": ["a"]}, r"\['a'\] for the numeric feature 'x2'; use finite numbers"),
        ({"x2": [0.0, np.nan]}, "for the numeric feature 'x2'"),
    ],
)
def test_mer_bad_at_values(data, at, phrase):
    before = data.copy(deep=True)
    with pytest.raises(ParameterError, match=phrase):
        fme.mer(linear, data, {"x1": 1.0}, at=at)
    pd.testing.assert_frame_equal(data, before)


def test_dme_leaves_missing_feature_values_out() -> None:
    X = pd.DataFrame({"x": [1.0, np.nan, 3.0]}, index=["a", "b", "c"])
    seen = []

    def f(d: pd.DataFrame) -> np.ndarray:
        seen.append(d["x"].isna().sum())
        return d["x"].to_numpy() ** 2

    out = fme.dme(f, X, "x")
    assert seen == [0, 0]
    np.testing.assert_allclose(out.loc[["a", "c"], "dme"], [2.0, 6.0], rtol=1e-6)
    assert np.isnan(out.loc["b", "dme"])


def test_mer_with_every_grid_point_outside_returns_nan_rows_with_reason() -> None:
    X = pd.DataFrame({"x": [0.0, 1.0, 2.0]})
    out = fme.mer(lambda d: d["x"] ** 2, X, {"x": 1.0}, at={"x": [5.0, 6.0]}, extrapolation="envelope")
    assert out["fme"].isna().all()
    assert out["note"].str.contains("extrapolation points").all()


# ------------------------------------------------------------------ dme validates like fme
def test_dme_validates_like_fme(data):
    all_nan = data.assign(x1=np.nan)
    with pytest.raises(fme.DataError, match="feature 'x1' has no finite value in any of the 120 rows"):
        fme.dme(linear, all_nan, "x1")
    with pytest.raises(fme.DataError, match="no row can be evaluated"):
        fme.fme(linear, all_nan, {"x1": 1.0})
    for bad in (True, "0.1", 0, -1.0, np.nan):
        with pytest.raises(ParameterError, match=r"eps must be a positive finite number \(or None"):
            fme.dme(linear, data, "x1", eps=bad)
    with pytest.raises(FeatureError, match=r"`feature` must be one column name, got list \['x1', 'x2'\]"):
        fme.dme(linear, data, ["x1", "x2"])
    got = fme.dme(linear, data.assign(x1=np.where(np.arange(len(data)) == 0, np.inf, data["x1"])), "x1")
    assert np.isnan(got["dme"].iloc[0])
    np.testing.assert_allclose(got["dme"].iloc[1:], BETA["x1"], rtol=1e-6)


def test_mer_mem_with_nullable_boolean_and_string_columns_holding_na():
    X = pd.DataFrame(
        {
            "a": [1.0, 2.0, 3.0, 4.0],
            "b": pd.array([True, None, False, True], dtype="boolean"),
            "s": pd.array(["u", None, "v", "u"], dtype="string"),
        }
    )

    def model(d):
        return (
            2.0 * d["a"].to_numpy()
            + 3.0 * d["b"].to_numpy(dtype=float, na_value=np.nan)
            + (d["s"] == "v").to_numpy(dtype=float, na_value=0.0)
        )

    out = fme.mem(model, X, {"a": 1.0})
    assert out["fme"].tolist() == [2.0]
    out = fme.mer(model, X, {"b": True}, at={"s": ["u", "v"]})
    assert out["s"].tolist() == ["u", "v"]
    # the mode of b is True: already at the level, so mer leaves it out with a note
    assert out["fme"].isna().all() and out["note"].str.contains("no row can be evaluated for the step b -> True").all()
    out = fme.mem(model, X, {"b": True})
    assert out["b"].tolist() == [False] and out["fme"].tolist() == [3.0]
    out = fme.mem(model, X, {"s": "v"})
    assert out["s"].tolist() == ["u"] and out["fme"].tolist() == [1.0]
    assert typical_values(X)[["b", "s"]].iloc[0].tolist() == [True, "u"]
