"""Model adapters: fMEs are exactly predict(x + h) - predict(x) for every kind of
model; classifiers explain the probability of ``target_class``; bad models and bad
predictions raise library exceptions; the engine calls predict in batches only."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import fme
from fme._adapters.predictor import Predictor, make_predictor
from fme.exceptions import FMEError, ModelError, ParameterError, PredictionError
from tests.conftest import FEATURES, CallRecorder


def shifted(frame: pd.DataFrame, steps: dict) -> pd.DataFrame:
    out = frame.copy()
    for f, h in steps.items():
        if isinstance(frame[f].dtype, pd.CategoricalDtype):
            out[f] = pd.Categorical([h] * len(frame), dtype=frame[f].dtype)
        else:
            out[f] = frame[f].to_numpy(dtype=float) + h
    return out


# ------------------------------------------------------------ exactness per model kind
def test_sklearn_regressor_exact(gbr, Xnum):
    steps = {"x1": 0.7}
    res = fme.fme(gbr, Xnum, steps)
    expected = gbr.predict(shifted(Xnum, steps)) - gbr.predict(Xnum)
    np.testing.assert_array_equal(res.results["fme"].to_numpy(), expected)
    assert res.results.index.equals(Xnum.index)
    assert res.ame == pytest.approx(float(np.mean(expected)), rel=0, abs=1e-15)


def test_sklearn_regressor_multivariate_exact(gbr, Xnum):
    steps = {"x1": -0.4, "x3": 1.25}
    res = fme.fme(gbr, Xnum, steps)
    expected = gbr.predict(shifted(Xnum, steps)) - gbr.predict(Xnum)
    np.testing.assert_array_equal(res.results["fme"].to_numpy(), expected)


def test_binary_classifier_default_positive_class(rf_binary, Xnum):
    steps = {"x2": 0.5}
    res = fme.fme(rf_binary, Xnum, steps)
    p = rf_binary.predict_proba
    expected = p(shifted(Xnum, steps))[:, 1] - p(Xnum)[:, 1]
    np.testing.assert_array_equal(res.results["fme"].to_numpy(), expected)
    res0 = fme.fme(rf_binary, Xnum, steps, target_class=0)
    np.testing.assert_array_equal(res0.results["fme"].to_numpy(), p(shifted(Xnum, steps))[:, 0] - p(Xnum)[:, 0])
    np.testing.assert_allclose(res0.results["fme"].to_numpy(), -expected, atol=1e-12)


def test_multiclass_target_class(multiclass, Xnum):
    steps = {"x1": 0.3}
    classes = list(multiclass.classes_)
    P0 = multiclass.predict_proba(Xnum)
    P1 = multiclass.predict_proba(shifted(Xnum, steps))
    j = classes.index("mid")
    res = fme.fme(multiclass, Xnum, steps, target_class="mid")
    np.testing.assert_array_equal(res.results["fme"].to_numpy(), P1[:, j] - P0[:, j])


def test_multiclass_all_classes(multiclass, Xnum):
    steps = {"x1": 0.3}
    classes = [str(c) for c in multiclass.classes_]
    res = fme.fme(multiclass, Xnum, steps, target_class="all", nlm=True)
    P0 = multiclass.predict_proba(Xnum)
    P1 = multiclass.predict_proba(shifted(Xnum, steps))
    assert list(res.results.columns) == (
        [f"fme_{c}" for c in classes]
        + [f"nlm_{c}" for c in classes]
        + [f"nlm_status_{c}" for c in classes]  # Gauss-Kronrod:
        + [f"nlm_error_{c}" for c in classes]
        + ["nlm_route"]
    )
    for j, c in enumerate(classes):
        np.testing.assert_array_equal(res.results[f"fme_{c}"].to_numpy(), P1[:, j] - P0[:, j])
    # probabilities sum to one: the class effects cancel row-wise
    total = res.results[[f"fme_{c}" for c in classes]].sum(axis=1).to_numpy()
    np.testing.assert_allclose(total, 0.0, atol=1e-12)
    assert isinstance(res.ame, pd.Series)
    assert list(res.ame.index) == classes
    j = classes.index("mid")
    assert res.ame["mid"] == pytest.approx(float(np.mean(P1[:, j] - P0[:, j])), abs=1e-15)
    nlm_mid = res.results["nlm_mid"].to_numpy()
    assert np.all(nlm_mid[np.isfinite(nlm_mid)] <= 1.0 + 1e-12)


def test_multiclass_requires_target_class(multiclass, Xnum):
    with pytest.raises(ParameterError, match="target_class"):
        fme.fme(multiclass, Xnum, {"x1": 1.0})
    with pytest.raises(ParameterError, match="not one of the model's classes"):
        fme.fme(multiclass, Xnum, {"x1": 1.0}, target_class="nope")


def test_pipeline_with_onehot_numeric_and_categorical_steps(pipeline, X):
    steps = {"x2": -0.25}
    res = fme.fme(pipeline, X, steps)
    np.testing.assert_array_equal(
        res.results["fme"].to_numpy(), pipeline.predict(shifted(X, steps)) - pipeline.predict(X)
    )
    # observation-wise categorical ME: rows at 'b' are not evaluated
    res_c = fme.fme(pipeline, X, {"cat": "b"})
    rows = X.index[X["cat"] != "b"]
    assert res_c.results.index.equals(rows)
    sub = X.loc[rows]
    np.testing.assert_array_equal(
        res_c.results["fme"].to_numpy(), pipeline.predict(shifted(sub, {"cat": "b"})) - pipeline.predict(sub)
    )
    # mixed numeric + categorical step
    res_m = fme.fme(pipeline, X, {"cat": "b", "x1": 0.5})
    both = shifted(shifted(sub, {"cat": "b"}), {"x1": 0.5})
    np.testing.assert_array_equal(res_m.results["fme"].to_numpy(), pipeline.predict(both) - pipeline.predict(sub))


def test_statsmodels_ols_formula(ols, X):
    steps = {"x1": 1.0}
    res = fme.fme(ols, X, steps)
    expected = np.asarray(ols.predict(shifted(X, steps))) - np.asarray(ols.predict(X))
    np.testing.assert_array_equal(res.results["fme"].to_numpy(), expected)
    # linear in x1: every fME is beta_x1 * h (up to rounding)
    np.testing.assert_allclose(res.results["fme"].to_numpy(), ols.params["x1"], rtol=1e-10)
    res_c = fme.fme(ols, X, {"cat": "c"})
    sub = X[X["cat"] != "c"]
    expected_c = np.where(
        sub["cat"] == "a", ols.params["C(cat)[T.c]"], ols.params["C(cat)[T.c]"] - ols.params["C(cat)[T.b]"]
    )
    np.testing.assert_allclose(res_c.results["fme"].to_numpy(), expected_c, rtol=1e-10)


@pytest.mark.parametrize("name", ["glm_binomial", "logit"])
def test_statsmodels_binomial(name, request, Xnum):
    model = request.getfixturevalue(name)
    steps = {"x2": 0.5, "x3": -1.0}
    res = fme.fme(model, Xnum, steps, nlm=True)
    expected = np.asarray(model.predict(shifted(Xnum, steps))) - np.asarray(model.predict(Xnum))
    np.testing.assert_array_equal(res.results["fme"].to_numpy(), expected)
    assert np.all(np.abs(expected) < 1)


def test_callable_and_plain_object(Xnum):
    def f(d):
        return np.exp(0.3 * d["x1"].to_numpy()) * d["x3"].to_numpy()

    class Plain:
        def predict(self, d):
            return pd.Series(f(d), index=d.index)

    steps = {"x1": 0.5, "x3": 0.25}
    expected = f(shifted(Xnum, steps)) - f(Xnum)
    for model in (f, Plain()):
        res = fme.fme(model, Xnum, steps)
        np.testing.assert_array_equal(res.results["fme"].to_numpy(), expected)


def test_callable_returning_column_vector(Xnum):
    res = fme.fme(lambda d: d[["x1"]].to_numpy() * 3.0, Xnum, {"x1": 2.0})
    np.testing.assert_allclose(res.results["fme"].to_numpy(), 6.0, rtol=1e-14)


# ------------------------------------------------------------ bad models and predictions
def test_model_without_predict(X):
    before = X.copy(deep=True)
    with pytest.raises(ModelError, match="neither predict nor predict_proba") as info:
        fme.fme(object(), X, {"x1": 1})
    assert isinstance(info.value, TypeError) and isinstance(info.value, FMEError)
    pd.testing.assert_frame_equal(X, before)


def test_target_class_for_regressor(gbr, Xnum):
    with pytest.raises(ParameterError, match="not a classifier"):
        fme.fme(gbr, Xnum, {"x1": 1}, target_class=1)


@pytest.mark.parametrize(
    "func, phrase",
    [
        (lambda d: np.ones(len(d) - 1), "for .* rows; it must return one prediction per row"),
        (lambda d: 1.0, "a scalar"),
        (lambda d: np.ones((len(d), 2)), "one number per row"),
        (lambda d: np.where(d["x1"] > 0, np.nan, 1.0), "non-finite"),
        (lambda d: np.where(d["x1"] > 1.9, np.inf, 1.0) + d["x1"], "non-finite"),
        (lambda d: np.array(["a"] * len(d)), "non-numeric"),
    ],
)
def test_bad_predictions(func, phrase, Xnum):
    before = Xnum.copy(deep=True)
    with pytest.raises(PredictionError, match=phrase) as info:
        fme.fme(func, Xnum, {"x1": 0.5})
    assert isinstance(info.value, ValueError)
    pd.testing.assert_frame_equal(Xnum, before)


def test_bad_prediction_only_on_stepped_points(Xnum):
    # finite at x, infinite at x + h: found on the second call
    with pytest.raises(PredictionError, match="non-finite"):
        fme.fme(lambda d: np.where(d["x1"] > 2.0, np.inf, 0.0), Xnum, {"x1": 1.0})


def test_huge_finite_predictions_are_not_mistaken_for_overflow(Xnum):
    # the sum of these predictions overflows to inf; every single one is finite
    big = np.finfo(float).max / 2
    res = fme.fme(lambda d: big + 0.0 * d["x1"].to_numpy(), Xnum, {"x1": 1.0}, nlm=True).results
    assert (res["fme"] == 0.0).all() and res["nlm"].isna().all()


def test_make_predictor_passthrough_and_columns(gbr, X):
    p = make_predictor(gbr)
    assert p.feature_names == FEATURES
    assert make_predictor(p) is p
    reordered = X[["cat", "x3", "x2", "x1"]]
    assert list(p.select(reordered).columns) == FEATURES
    res = fme.fme(gbr, reordered, {"x1": 0.5})
    np.testing.assert_array_equal(
        res.results["fme"].to_numpy(), gbr.predict(shifted(X[FEATURES], {"x1": 0.5})) - gbr.predict(X[FEATURES])
    )


# ------------------------------------------------------------ call counting and batching
@pytest.mark.parametrize("nlm, method, nodes", [(False, None, 0), (True, "gauss-legendre", 16), (True, "auto", 21)])
def test_two_calls_per_fme(Xnum, nlm, method, nodes):
    rec = CallRecorder()
    fme.fme(rec, Xnum, {"x1": 0.5, "x2": 0.1}, nlm=nlm, **({"nlm_method": method} if method else {}))
    n = len(Xnum)
    # f(x) and f(x + h) in calls of their own (a row's fME never depends on the NLM's stacked frames)
    assert len(rec.lengths) == (3 if nlm else 2)
    assert rec.lengths[:2] == [n, n]
    if nlm:
        # all nodes in one stacked call; the smooth path meets nlm_tol without subdivision
        assert rec.lengths[2] == nodes * n


def test_simpson_nlm_stacks_two_interior_nodes(Xnum):
    rec = CallRecorder()
    fme.fme(rec, Xnum, {"x1": 0.5}, nlm=True, nlm_method="simpson38", nlm_intervals=3)
    assert rec.lengths == [len(Xnum), len(Xnum), 8 * len(Xnum)]  # 3k + 1 = 10 nodes, both endpoints reused


@pytest.mark.parametrize("b", [1, 7, 50, 119, 120, 500])
@pytest.mark.parametrize("nlm", [False, True])
def test_batching(Xnum, b, nlm):
    # element-wise arithmetic only: the model itself is exact whatever the batch layout
    # (numpy's SIMD sin/exp may differ in the last bit between contiguous and strided input)
    def poly(d):
        x1, x2, x3 = (d[c].to_numpy(dtype=float) for c in ("x1", "x2", "x3"))
        return x1 * x1 * x2 + 2.0 * x1 - x3 * x1 + 1e3

    n = len(Xnum)
    kw = {"nlm_method": "gauss-legendre"} if nlm else {}
    full = fme.fme(CallRecorder(poly), Xnum, {"x1": 0.5}, nlm=nlm, **kw)
    rec = CallRecorder(poly)
    res = fme.fme(rec, Xnum, {"x1": 0.5}, nlm=nlm, batch_size=b, **kw)
    batches = math.ceil(n / b)
    per_batch = 3 if nlm else 2
    assert len(rec.lengths) == per_batch * batches
    assert sum(rec.lengths[0::per_batch]) == n
    assert max(rec.lengths[0::per_batch]) == min(b, n)
    pd.testing.assert_frame_equal(res.results, full.results, check_exact=True)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_bad_batch_size(Xnum, bad):
    with pytest.raises(ParameterError, match="batch_size"):
        fme.fme(CallRecorder(), Xnum, {"x1": 0.5}, batch_size=bad)


def test_model_receives_original_dtypes(X):
    Xk = X.assign(k=np.arange(len(X), dtype=np.int32), s=pd.array(["u", "v"] * (len(X) // 2), dtype="str"))
    rec = CallRecorder()
    fme.fme(rec, Xk, {"x1": 0.5}, nlm=True)
    for frame in rec.frames:
        assert isinstance(frame["cat"].dtype, pd.CategoricalDtype)
        assert frame["cat"].dtype == X["cat"].dtype
        assert frame["k"].dtype == np.int32
        assert frame["s"].dtype == Xk["s"].dtype
        assert frame["x2"].dtype == np.float64
    # categorical step: the stepped column stays categorical with the same categories
    rec = CallRecorder()
    fme.fme(rec, Xk, {"cat": "a"})
    for frame in rec.frames:
        assert frame["cat"].dtype == X["cat"].dtype
        assert frame["k"].dtype == np.int32
    assert (rec.frames[1]["cat"] == "a").all()
    assert (rec.frames[0]["cat"] != "a").all()


def test_predictor_counts_calls():
    p = Predictor(lambda d: d["a"].to_numpy(dtype=float))
    p(pd.DataFrame({"a": [1.0, 2.0]}))
    p(pd.DataFrame({"a": [1.0, 2.0, 3.0]}))
    assert (p.n_calls, p.n_rows) == (2, 5)


# ------------------------------------------------------------------ unusable models, boosters
def test_unfitted_sklearn_estimator(Xnum):
    from sklearn.ensemble import GradientBoostingRegressor

    with pytest.raises(
        fme.NotFittedError,
        match="the GradientBoostingRegressor passed as the model is not fitted; "
        r"call .fit\(X, y\)",
    ):
        fme.fme(GradientBoostingRegressor(), Xnum, {"x1": 1.0})


def test_model_class_instead_of_instance(Xnum):
    from sklearn.linear_model import LinearRegression

    with pytest.raises(ModelError, match=r"LinearRegression is a class, not a fitted model.*LinearRegression\(\)"):
        fme.fme(LinearRegression, Xnum, {"x1": 1.0})


def test_statsmodels_model_instead_of_results(df):
    smf = pytest.importorskip("statsmodels.formula.api")
    with pytest.raises(ModelError, match=r"statsmodels OLS that has not been fitted; call .fit\(\) first"):
        fme.fme(smf.ols("y ~ x1 + x2", df), df, {"x1": 1.0})


def _boost_data():
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    return X, 2.0 * X["a"] + X["b"] ** 2


def test_raw_xgboost_booster():
    xgb = pytest.importorskip("xgboost")
    X, y = _boost_data()
    booster = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, label=y), 15)
    res = fme.fme(booster, X[["c", "b", "a"]], {"a": 0.5})  # columns in another order: the booster's are used
    want = booster.predict(xgb.DMatrix(X.assign(a=X["a"] + 0.5))) - booster.predict(xgb.DMatrix(X))
    np.testing.assert_allclose(res.results["fme"], want, rtol=1e-6, atol=1e-6)
    assert res.model_description == "xgboost.Booster"


def test_raw_lightgbm_booster():
    lgb = pytest.importorskip("lightgbm")
    X, y = _boost_data()
    booster = lgb.train({"verbose": -1, "num_threads": 1}, lgb.Dataset(X, label=y), 15)
    res = fme.fme(booster, X, {"a": 0.5})
    np.testing.assert_allclose(res.results["fme"], booster.predict(X.assign(a=X["a"] + 0.5)) - booster.predict(X))
    assert res.model_description == "lightgbm.Booster"


@pytest.mark.parametrize(
    "module, reg, clf", [("xgboost", "XGBRegressor", "XGBClassifier"), ("lightgbm", "LGBMRegressor", "LGBMClassifier")]
)
def test_sklearn_wrappers_of_boosting_libraries(module, reg, clf):
    lib = pytest.importorskip(module)
    X, y = _boost_data()
    kw = {"n_estimators": 10, "n_jobs": 1} | ({"verbose": -1} if module == "lightgbm" else {})
    model = getattr(lib, reg)(**kw).fit(X, y)
    res = fme.fme(model, X, {"b": -1.0})
    np.testing.assert_allclose(
        res.results["fme"], model.predict(X.assign(b=X["b"] - 1.0)) - model.predict(X), rtol=1e-6, atol=1e-6
    )
    c = getattr(lib, clf)(**kw).fit(X, (y > y.median()).astype(int))
    res = fme.fme(c, X, {"b": -1.0})
    assert res.model_description == f"{clf}, P(class = 1)"
    with pytest.raises(fme.NotFittedError, match=f"the {reg} passed as the model is not fitted"):
        fme.fme(getattr(lib, reg)(), X, {"a": 1.0})


def test_readable_classifier_descriptions(df):
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(max_iter=5).fit(df[FEATURES], df["yb"])
    assert fme.fme(model, df[FEATURES], {"x1": 1.0}).model_description == "HistGradientBoostingClassifier, P(class = 1)"
    assert make_predictor(model, "all").description == "HistGradientBoostingClassifier, P(class) for each class"


@pytest.fixture(params=["patsy", "formulaic"])
def formula_engine(request):
    """statsmodels >= 0.15 fits formulas with patsy or formulaic (a global option): run under each."""
    pytest.importorskip(request.param)
    sm_formula = pytest.importorskip("statsmodels.formula")
    before = sm_formula.options.formula_engine
    sm_formula.options.formula_engine = request.param
    yield request.param
    sm_formula.options.formula_engine = before


def _religious_frame():
    rng = np.random.default_rng(5)
    n = 200
    d = pd.DataFrame(
        {"age": rng.uniform(20, 60, n), "religious": rng.integers(1, 6, n).astype(float), "unused": rng.normal(size=n)}
    )
    effect = {1.0: 0.0, 2.0: 0.5, 3.0: -1.0, 4.0: 2.0, 5.0: 1.0}
    d["y"] = 0.1 * d["age"] + d["religious"].map(effect) + rng.normal(0, 0.1, n)
    return d


def test_statsmodels_formula_c_of_numeric_column_is_categorical(formula_engine):
    smf = pytest.importorskip("statsmodels.formula.api")
    d = _religious_frame()
    before = d.copy()
    res = smf.ols("y ~ age + C(religious)", d).fit()
    assert type(res.model.data.model_spec).__module__.split(".")[0] == formula_engine
    eff = fme.fme(res, d, {"religious": 4.0})
    assert eff.steps[0].kind == "categorical" and eff.steps[0].value == 4.0
    other = d["religious"] != 4.0
    coef = {lv: (0.0 if lv == 1.0 else res.params[f"C(religious)[T.{lv}]"]) for lv in [1.0, 2.0, 3.0, 4.0, 5.0]}
    want = coef[4.0] - d.loc[other, "religious"].map(coef)
    np.testing.assert_allclose(eff.results["fme"], want, rtol=1e-9)
    with pytest.raises(fme.StepError, match=r"feature 'religious' is categorical: give one of its levels"):
        fme.fme(res, d, {"religious": 6.0})
    pd.testing.assert_frame_equal(d, before)


def test_ame_without_steps_uses_the_formulas_right_hand_side(formula_engine):
    smf = pytest.importorskip("statsmodels.formula.api")
    d = _religious_frame()
    res = smf.ols("y ~ np.log(age) + C(religious)", d).fit()
    assert type(res.model.data.model_spec).__module__.split(".")[0] == formula_engine
    out = fme.ame(res, d)
    assert out["feature"].tolist() == ["age"] + ["religious"] * 5
    assert out.loc[out["feature"] == "religious", "level"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(fme.FeatureError, match=r"feature\(s\) \['unused'\] are not inputs of the model"):
        fme.fme(res, d, {"unused": 1.0})


def test_patsy_and_formulaic_fits_give_the_same_effects_and_inference():
    smf = pytest.importorskip("statsmodels.formula.api")
    pytest.importorskip("formulaic")
    sm_formula = pytest.importorskip("statsmodels.formula")
    d = _religious_frame()
    d["yb"] = (d["y"] > d["y"].median()).astype(float)
    before = sm_formula.options.formula_engine
    tables = {}
    try:
        for engine in ("patsy", "formulaic"):
            sm_formula.options.formula_engine = engine
            ols = smf.ols("y ~ C(religious) + np.log(age) + I(age ** 2)", d).fit()
            logit = smf.logit("yb ~ np.log(age) + C(religious)", d).fit(disp=0)
            tables[engine] = (fme.ame(ols, d), fme.ame(logit, d, {"religious": None, "age": 5.0}))
    finally:
        sm_formula.options.formula_engine = before
    for got, want in zip(tables["formulaic"], tables["patsy"]):
        assert got["inference"].eq("delta").all()
        pd.testing.assert_frame_equal(got, want, rtol=1e-9)
    # right-hand-side order as written in the formula, whatever order the engine gives its terms
    assert tables["formulaic"][0]["feature"].tolist() == ["religious"] * 5 + ["age"]
    assert np.isfinite(tables["formulaic"][1]["std_error"]).all()


def test_values_outside_the_formulas_levels_name_the_column(formula_engine):
    smf = pytest.importorskip("statsmodels.formula.api")
    d = _religious_frame()
    res = smf.ols("y ~ age + C(religious)", d).fit()
    new = d.assign(religious=d["religious"].replace(5.0, 9.0))
    before = new.copy()
    with pytest.raises(
        fme.DataError,
        match=r"column 'religious' is categorical in the model's formula "
        r"\(C\(religious\)\) with levels \[1.0, 2.0, 3.0, 4.0, 5.0\], but the "
        r"data holds other values such as \[9.0\]",
    ):
        fme.fme(res, new, {"age": 1.0})
    with pytest.raises(fme.DataError, match=r"such as \['x'\] in 200 row\(s\)"):
        fme.ame(res, d.assign(religious="x"), {"age": 1.0})
    pd.testing.assert_frame_equal(new, before)
    # missing values stay missing values (rows left out as usual), not an error
    na = d.assign(religious=d["religious"].where(d.index % 10 != 0))
    assert fme.fme(res, na, {"religious": 4.0}).excluded["reason_type"].eq("missing").sum() == 20


# ------------------------------------------------------------ predictions the model keeps
class _OneBuffer:
    """A model that writes every call's predictions into one buffer of its own and returns it (as inference
    engines with fixed output buffers do): each call overwrites the predictions of the call before."""

    def __init__(self) -> None:
        self.buf = np.empty(0)

    def __call__(self, d: pd.DataFrame) -> np.ndarray:
        if self.buf.size != len(d):
            self.buf = np.empty(len(d))
        np.multiply(np.sin(d["x1"].to_numpy()), d["x2"].to_numpy() + 2.0, out=self.buf)
        return self.buf


def _fresh(d: pd.DataFrame) -> np.ndarray:
    return np.sin(d["x1"].to_numpy()) * (d["x2"].to_numpy() + 2.0)


@pytest.mark.parametrize(
    "verb",
    [
        lambda f, X: fme.fme(f, X, {"x1": 1.0}, nlm=True, inference="sample").results,
        lambda f, X: fme.fme(f, X, {"x1": 1.0}, nlm=True, nlm_method="gauss-legendre", inference="sample").results,
        lambda f, X: fme.ame(f, X, {"x1": 1.0, "x2": -0.5}, inference="sample"),
        lambda f, X: fme.avg_comparisons(f, X, {"x1": 1.0}, comparison="ratio", inference="sample"),
        lambda f, X: fme.avg_predictions(f, X, inference="sample"),
        lambda f, X: fme.interaction(f, X, {"x1": 1.0}, {"x2": 0.5}, inference="sample"),
    ],
    ids=["fme-budget-nlm", "fme-fixed-nlm", "ame", "avg_comparisons", "avg_predictions", "interaction"],
)
def test_a_model_reusing_one_output_buffer_gives_the_numbers_of_fresh_predictions(verb):
    """The predictions of one call are fme's own before the model is called again: a model that writes every
    call into the same buffer gets the numbers of a model that returns new arrays (its fMEs were 0 before)."""
    X = pd.DataFrame(np.random.default_rng(2).normal(size=(300, 2)), columns=["x1", "x2"])
    pd.testing.assert_frame_equal(pd.DataFrame(verb(_OneBuffer(), X)), pd.DataFrame(verb(_fresh, X)))


def test_predictions_the_model_keeps_are_copied_and_fresh_ones_are_not():
    kept: list[np.ndarray] = []

    def keeps(d: pd.DataFrame) -> np.ndarray:
        kept.append(_fresh(d))
        return kept[-1]

    X = pd.DataFrame(np.random.default_rng(3).normal(size=(50, 2)), columns=["x1", "x2"])
    p = make_predictor(keeps)
    out = p(X)
    assert not np.shares_memory(out, kept[-1])
    np.testing.assert_array_equal(out, kept[-1])
    got = make_predictor(_fresh)(X)
    assert got.flags.owndata and got.base is None  # the model's own new array, not copied
