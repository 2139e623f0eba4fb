"""Model adapters (fme._adapters): one module per backend states its capabilities; predictions are the
backend's own (exact), capabilities are what the backend supports (with the reason when not), and a
new backend is picked up by registering one adapter class."""

from __future__ import annotations

import numpy as np
import pytest

import fme
from fme._adapters import ModelAdapter, Prediction, Support, Unsupported, adapt, register_adapter
from fme._adapters.base import registered_adapters, unregister_adapter
from fme._adapters.predictor import make_predictor
from fme.exceptions import ModelError, ParameterError
from tests.conftest import FEATURES


def _kind(model, target_class=None) -> str:
    return adapt(model, target_class).name


# ------------------------------------------------------------ scikit-learn
def test_sklearn_regressor_and_forest(gbr, Xnum, df):
    from sklearn.ensemble import RandomForestRegressor

    ad = adapt(gbr)
    assert ad.name == "sklearn"
    np.testing.assert_array_equal(ad.predict(Xnum), gbr.predict(Xnum))
    assert ad.feature_names == FEATURES and ad.output_names is None
    rf = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(df[FEATURES], df["y"])
    rad = adapt(rf)
    support = rad.delta_support()
    assert not support and "RandomForestRegressor" in support.reason and "covariance" in support.reason
    assert rad.refit_support()
    assert rad.forest() is not None and rad.forest().n_trees == 5
    thr = rad.split_thresholds(["x1"], FEATURES)["x1"]
    expected = np.concatenate([t.tree_.threshold[t.tree_.feature == 0] for t in rf.estimators_])
    assert thr.size == expected.size
    refit = rad.refit((df[FEATURES], df["y"]), np.arange(len(df)))
    assert refit is not rf and type(refit) is RandomForestRegressor
    np.testing.assert_array_equal(refit.predict(Xnum), rf.predict(Xnum))  # same seed, same rows
    assert rad.training_levels() == {}


def test_sklearn_classifier_and_pipeline(rf_binary, multiclass, pipeline, X, Xnum):
    ad = adapt(rf_binary)
    np.testing.assert_array_equal(ad.predict(Xnum), rf_binary.predict_proba(Xnum)[:, 1])
    assert ad.prediction().description == "RandomForestClassifier, P(class = 1)"
    allp = adapt(multiclass, "all")
    np.testing.assert_array_equal(allp.predict(Xnum), multiclass.predict_proba(Xnum))
    assert allp.output_names == [str(c) for c in multiclass.classes_]
    with pytest.raises(ParameterError, match="3 classes"):
        adapt(multiclass).prediction()
    pad = adapt(pipeline)
    assert pad.name == "sklearn"
    np.testing.assert_array_equal(pad.predict(X), pipeline.predict(X))
    assert pad.forest() is None  # a Pipeline: midpoint route
    assert pad.split_thresholds(["x1"], FEATURES + ["cat"])["x1"].size > 0
    assert pad.training_levels() == {"cat": ["a", "b", "c"]}  # the OneHotEncoder's categories_


# ------------------------------------------------------------ statsmodels
def test_statsmodels_ols(ols, df, X):
    ad = adapt(ols)
    assert ad.name == "statsmodels"
    np.testing.assert_array_equal(ad.predict(X), np.asarray(ols.predict(X)))
    assert ad.feature_names == ["x1", "x2", "x3", "cat"]
    assert ad.delta_support() and ad.refit_support()
    assert ad.forest() is None
    with pytest.raises(Unsupported):
        ad.split_thresholds(["x1"], FEATURES)
    assert ad.training_levels() == {"cat": ["a", "b", "c"]}
    # the analytic Jacobian of an OLS fME in x1 by 1 is the design difference: e_x1 in every row
    jac, vcov, kernel = ad.fme_jacobian(X, X.assign(x1=X["x1"] + 1.0))
    assert kernel == "analytic"
    expected = np.zeros((len(X), ols.params.size))
    expected[:, list(ols.params.index).index("x1")] = 1.0
    np.testing.assert_allclose(jac, expected, atol=1e-12)
    np.testing.assert_array_equal(vcov, ols.cov_params().to_numpy())
    refit = ad.refit(df, np.arange(len(df)))
    np.testing.assert_allclose(refit.params.to_numpy(), ols.params.to_numpy(), rtol=1e-10)


def test_statsmodels_from_arrays_cannot_refit(df):
    import statsmodels.api as sm

    res = sm.OLS(df["y"].to_numpy(), sm.add_constant(df[FEATURES].to_numpy())).fit()
    support = adapt(res).refit_support()
    assert not support and "formula API" in support.reason
    assert adapt(res).delta_support()


# ------------------------------------------------------------ LightGBM and XGBoost
def test_lightgbm_wrapper_and_booster(df, Xnum):
    lgb = pytest.importorskip("lightgbm")
    model = lgb.LGBMRegressor(n_estimators=10, num_leaves=7, verbose=-1, random_state=0).fit(df[FEATURES], df["y"])
    ad = adapt(model)
    assert ad.name == "lightgbm"
    np.testing.assert_array_equal(ad.predict(Xnum), model.predict(Xnum))
    assert ad.forest() is not None and ad.refit_support()
    assert not ad.delta_support() and "LGBMRegressor" in ad.delta_support().reason
    booster = model.booster_
    bad = adapt(booster)
    np.testing.assert_array_equal(bad.predict(Xnum), booster.predict(Xnum))
    assert bad.feature_names == FEATURES and bad.forest() is not None
    assert not bad.refit_support() and "Booster" in bad.refit_support().reason
    np.testing.assert_array_equal(
        bad.split_thresholds(["x1"], FEATURES)["x1"], ad.split_thresholds(["x1"], FEATURES)["x1"]
    )


def test_xgboost_wrapper_and_booster(df, Xnum):
    xgb = pytest.importorskip("xgboost")
    model = xgb.XGBRegressor(n_estimators=10, max_depth=3, random_state=0).fit(df[FEATURES], df["y"])
    ad = adapt(model)
    assert ad.name == "xgboost"
    np.testing.assert_array_equal(ad.predict(Xnum), model.predict(Xnum))
    assert ad.forest() is not None and ad.refit_support() and not ad.delta_support()  # traversal (paper §5.4)
    booster = model.get_booster()
    bad = adapt(booster)
    np.testing.assert_array_equal(bad.predict(Xnum), booster.predict(xgb.DMatrix(Xnum)))
    assert bad.split_thresholds(["x1"], FEATURES)["x1"].size > 0
    assert bad.forest() is not None and not bad.refit_support()
    dart = xgb.XGBRegressor(n_estimators=3, booster="dart", random_state=0).fit(df[FEATURES], df["y"])
    assert adapt(dart).forest() is None  # dart: the midpoint route
    # the thresholds, read from the JSON model, are where XGBoost's own rule float32(x) < s changes for its
    # table's split values s (its text dump prints them rounded: equal as float32, which XGBoost compares in):
    # the float64 midpoint between s and the float32 below it
    for m in (model, dart):
        table = m.get_booster().trees_to_dataframe()
        table = table[table["Feature"] != "Leaf"]
        got = adapt(m).split_thresholds(FEATURES, FEATURES)
        for f in FEATURES:
            s32 = np.sort(table.loc[table["Feature"] == f, "Split"].to_numpy(dtype=float).astype(np.float32))
            want = 0.5 * np.nextafter(s32, np.float32(-np.inf)).astype(float) + 0.5 * s32.astype(float)
            have = np.sort(got[f])
            assert have.size == want.size
            np.testing.assert_array_equal(have, want)
            below, above = np.nextafter(have, -np.inf), np.nextafter(have, np.inf)
            assert np.all(below.astype(np.float32) < s32) and np.all(above.astype(np.float32) >= s32)


# ------------------------------------------------------------ plain callables and objects
class _Linear:
    """An object with predict, and the delta protocol."""

    coef = np.array([0.5, 2.0])

    def predict(self, frame):
        return self.get_predict(self.coef, frame)

    def get_coef(self):
        return self.coef

    def get_vcov(self):
        return np.diag([0.01, 0.04])

    def get_predict(self, params, frame):
        return params[0] + params[1] * frame["x1"].to_numpy()


def test_callables_and_objects(Xnum):
    def f(d):
        return d["x1"].to_numpy() ** 2

    ad = adapt(f)
    assert ad.name == "object"
    np.testing.assert_array_equal(ad.predict(Xnum), Xnum["x1"].to_numpy() ** 2)
    support = ad.delta_support()
    assert not support and "get_coef" in support.reason
    assert not ad.refit_support() and ad.forest() is None and ad.training_levels() == {}
    obj = adapt(_Linear())
    np.testing.assert_array_equal(obj.predict(Xnum), _Linear().predict(Xnum))
    assert obj.delta_support()
    jac, vcov, kernel = obj.fme_jacobian(Xnum, Xnum.assign(x1=Xnum["x1"] + 1.0))
    assert kernel == "numerical"
    np.testing.assert_allclose(jac, np.tile([0.0, 1.0], (len(Xnum), 1)), atol=1e-8)
    with pytest.raises(ModelError, match="is a class"):
        adapt(_Linear)
    with pytest.raises(ModelError, match="neither predict"):
        adapt(object())


def test_registry_order_is_by_priority():
    order = registered_adapters()
    assert [c.priority for c in order] == sorted((c.priority for c in order), reverse=True)
    assert order[-1].name == "object"


# ------------------------------------------------------------ a new backend is one new module
class _ToyModel:
    """A backend fme has never heard of: no predict, no __call__; its own method and parameters."""

    def __init__(self, a: float, b: float):
        self.theta = np.array([a, b])

    def evaluate_rows(self, x: np.ndarray, theta: np.ndarray | None = None) -> np.ndarray:
        t = self.theta if theta is None else theta
        return t[0] * np.tanh(t[1] * x)


class _ToyAdapter(ModelAdapter):
    """What a new module fme/_adapters/toy.py would hold."""

    name = "toy"
    priority = 50

    @classmethod
    def accepts(cls, model):
        return isinstance(model, _ToyModel)

    def _make_prediction(self):
        return Prediction(lambda X: self.model.evaluate_rows(X["x1"].to_numpy()), ["x1"], None, "toy model")

    def delta_support(self):
        return Support(True)

    def fme_jacobian(self, X0, X1, f0=None):
        a, b = self.model.theta
        x0, x1 = X0["x1"].to_numpy(), X1["x1"].to_numpy()

        def grad(x):
            return np.column_stack([np.tanh(b * x), a * x / np.cosh(b * x) ** 2])

        return grad(x1) - grad(x0), np.diag([0.02, 0.01]), "analytic"


def test_a_registered_adapter_is_picked_up_without_edits_elsewhere(Xnum):
    toy = _ToyModel(1.5, 0.8)
    with pytest.raises(ModelError):
        make_predictor(toy)
    register_adapter(_ToyAdapter)
    try:
        assert _kind(toy) == "toy"
        row = fme.ame(toy, Xnum, {"x1": 0.5}).iloc[0]
        x = Xnum["x1"].to_numpy()
        fmes = toy.evaluate_rows(x + 0.5) - toy.evaluate_rows(x)
        assert row["ame"] == pytest.approx(fmes.mean(), rel=1e-14)
        assert row["inference"] == "delta"  # the adapter said so: auto -> delta
        g = _ToyAdapter(toy).fme_jacobian(Xnum, Xnum.assign(x1=x + 0.5))[0].mean(axis=0)
        assert row["std_error"] == pytest.approx(float(np.sqrt(g @ np.diag([0.02, 0.01]) @ g)), rel=1e-12)
        assert fme.fme(toy, Xnum, {"x1": 0.5}).model_description == "toy model"
    finally:
        unregister_adapter(_ToyAdapter)
    assert _ToyAdapter not in registered_adapters()


def test_inputs_named_for_an_array_model_reach_it_as_one_array_wrapped_once():
    import pickle

    import pandas as pd
    from sklearn.linear_model import LinearRegression

    from fme._adapters.base import OnArray

    rng = np.random.default_rng(2)
    A = rng.normal(size=(50, 2))
    model = LinearRegression().fit(A, A @ [1.0, -2.0])
    adapter = adapt(model)
    frame_func = adapter.prediction().func
    adapter.name_inputs(["a", "b"], as_array=True)
    adapter.name_inputs(["a", "b"], as_array=True)
    func = adapter.prediction().func
    # one wrapper around the frame function, however often the inputs are named
    assert isinstance(func, OnArray) and func.on_frame is frame_func
    X = pd.DataFrame(A, columns=["a", "b"])
    np.testing.assert_allclose(func(X), model.predict(A), rtol=1e-12)
    # a plain object, not a closure: worker processes receive it by pickle
    np.testing.assert_allclose(pickle.loads(pickle.dumps(func))(X), model.predict(A), rtol=1e-12)
    assert adapter.feature_names == ["a", "b"]
