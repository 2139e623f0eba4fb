"""fme.learner_ame: learner-level AMEs over refits on seeded splits, with the Nadeau-Bengio correction."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

import fme
from fme.exceptions import DataError, FeatureError, LearnerError, LearnerWarning, ModelError, ParameterError
from fme.levels import LearnerSplits, LearnerTable
from fme.levels.learner import COVERS, corrected_moments, learner_splits


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    n = 120
    X = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.normal(size=n),
            "g": rng.choice(["u", "v"], size=n),
            "c": pd.Categorical(rng.choice(["x", "y", "z"], size=n)),
        }
    )
    y = 2 * X.a - X.b + 0.5 * X.a * X.b + (X.c == "y") * 1.5 + rng.normal(size=n)
    return X, y.to_numpy()


def _coefs(X, y, splits, cols=("a", "b")):
    """Each split's LinearRegression coefficients, fitted by hand on the same training rows."""
    return np.array([LinearRegression().fit(X.iloc[tr][list(cols)], y[tr]).coef_ for tr, _ in splits])


def test_splits_are_seeded_partitions():
    s1, s2 = learner_splits(50, 4, 0.2, 7), learner_splits(50, 4, 0.2, 7)
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(s1, s2))
    for train, test in s1:
        assert len(test) == 10 and len(train) == 40
        assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(50))
    assert not np.array_equal(s1[0][1], s1[1][1])
    assert not np.array_equal(learner_splits(50, 4, 0.2, 8)[0][1], s1[0][1])
    assert len(learner_splits(50, 3, 7, 0)[0][1]) == 7


def test_corrected_se_matches_a_hand_computation(data):
    X, y = data
    Xn = X[["a", "b"]]
    J, test_size, seed = 6, 0.25, 3
    t = fme.learner_ame(
        LinearRegression(), Xn, y, {"a": 1, "b": 0.5}, repeats=J, test_size=test_size, random_state=seed, conf_level=0.9
    )
    splits = learner_splits(len(X), J, test_size, seed)
    n_test, n_train = len(splits[0][1]), len(splits[0][0])
    # a linear model's fME of +h is coef * h on every row: each split's AME is its coefficient times the step
    V = _coefs(Xn, y, splits) * np.array([1.0, 0.5])
    S = np.cov(V.T, ddof=1)
    vcov = (1 / J + n_test / n_train) * S
    se = np.sqrt(np.diag(vcov))
    np.testing.assert_allclose(t["ame"], V.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(t["std_error"], se, rtol=1e-10)
    q = stats.t.ppf(0.95, J - 1)
    np.testing.assert_allclose(t["conf_low"], V.mean(axis=0) - q * se, rtol=1e-10)
    np.testing.assert_allclose(t["p_value"], 2 * stats.t.sf(np.abs(V.mean(axis=0) / se), J - 1), rtol=1e-8)
    full = LinearRegression().fit(Xn, y).coef_ * np.array([1.0, 0.5])
    np.testing.assert_allclose(t["ame_full"], full, rtol=1e-12)
    assert list(t["n_train"]) == [n_train] * 2 and list(t["n_test"]) == [n_test] * 2 == [30, 30]
    assert list(t["repeats"]) == [J, J] and list(t["n_failed"]) == [0, 0] and list(t["n_splits"]) == [J, J]
    assert list(t["inference"]) == [f"learner (Nadeau-Bengio, {J} splits, n_train {n_train})"] * 2
    assert list(t["covers"]) == [COVERS] * 2 and list(t["estimand"]) == ["AME", "AME"]
    # the rows' joint covariance reaches fme.hypotheses
    h = fme.hypotheses(t, "b1 - b2 = 0")
    se_diff = np.sqrt(vcov[0, 0] + vcov[1, 1] - 2 * vcov[0, 1])
    np.testing.assert_allclose(h["std_error"], [se_diff], rtol=1e-7)
    np.testing.assert_allclose(h["estimate"], [V.mean(axis=0) @ [1, -1]], rtol=1e-10)


def test_corrected_moments_with_missing_values():
    M = np.array([[1.0, 2.0], [2.0, np.nan], [4.0, 5.0], [3.0, 1.0]])
    est, vcov, counts = corrected_moments(M, 80, 20)
    assert list(counts) == [4, 3]
    np.testing.assert_allclose(est, [2.5, 8 / 3])
    np.testing.assert_allclose(vcov[0, 0], np.var(M[:, 0], ddof=1) * (1 / 4 + 0.25))
    both = M[[0, 2, 3]]
    np.testing.assert_allclose(vcov[0, 1], np.cov(both.T)[0, 1] * (1 / 3 + 0.25))
    _, v1, _ = corrected_moments(np.array([[1.0, np.nan], [2.0, 3.0]]), 80, 20)
    assert np.isnan(v1[1, 1]) and np.isnan(v1[0, 1]) and np.isfinite(v1[0, 0])


def test_reproducible_and_independent_of_n_jobs(data):
    X, y = data
    Xn = X[["a", "b"]]
    rf = RandomForestRegressor(n_estimators=10, random_state=0)
    kw = dict(repeats=4, test_size=0.25, random_state=5)
    t1 = fme.learner_ame(rf, Xn, y, {"a": 1}, n_jobs=1, **kw)
    t2 = fme.learner_ame(rf, Xn, y, {"a": 1}, n_jobs=2, **kw)
    t3 = fme.learner_ame(rf, Xn, y, {"a": 1}, **kw)
    pd.testing.assert_frame_equal(pd.DataFrame(t1), pd.DataFrame(t2))
    pd.testing.assert_frame_equal(pd.DataFrame(t1), pd.DataFrame(t3))
    other = fme.learner_ame(rf, Xn, y, {"a": 1}, n_jobs=1, **{**kw, "random_state": 6})
    assert other["ame"].iloc[0] != t1["ame"].iloc[0]
    assert rf.get_params()["random_state"] == 0 and not hasattr(rf, "estimators_")  # the caller's learner unfitted


def test_a_failed_split_is_counted_warned_and_left_out(data):
    X, y = data
    Xn = X[["a", "b"]].copy()
    before = Xn.copy()
    splits = learner_splits(len(X), 5, 0.2, 0)
    bad = Xn.index[splits[2][0]]

    def learner(X_train, y_train):
        if X_train.index.equals(bad):
            raise RuntimeError("singular design on this split")
        return LinearRegression().fit(X_train, y_train)

    with pytest.warns(LearnerWarning, match=r"1 of 5 splits failed.*RuntimeError: singular design"):
        t = fme.learner_ame(learner, Xn, y, {"a": 1, "b": 1}, repeats=5, test_size=0.2, random_state=0)
    kept = [s for j, s in enumerate(splits) if j != 2]
    V = _coefs(Xn, y, kept)
    n_test, n_train = len(splits[0][1]), len(splits[0][0])
    np.testing.assert_allclose(t["ame"], V.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(t["std_error"] ** 2, np.var(V, axis=0, ddof=1) * (1 / 4 + n_test / n_train), rtol=1e-10)
    assert list(t["n_failed"]) == [1, 1] and list(t["n_splits"]) == [4, 4]
    assert t["inference"].iloc[0] == f"learner (Nadeau-Bengio, 4 splits, n_train {n_train})"
    assert t.learner.errors == ["RuntimeError: singular design on this split"]
    pd.testing.assert_frame_equal(Xn, before)


def test_the_splits_record_is_a_typed_attribute_that_rides_along(data):
    X, y = data
    Xn = X[["a", "b"]]
    t = fme.learner_ame(LinearRegression(), Xn, y, {"a": 1, "b": 0.5}, repeats=4, random_state=3)
    assert isinstance(t, LearnerTable) and isinstance(t.learner, LearnerSplits)
    rec = t.learner
    splits = learner_splits(len(X), 4, 0.5, 3)
    np.testing.assert_allclose(rec.split_estimates, _coefs(Xn, y, splits) * np.array([1.0, 0.5]), rtol=1e-12)
    np.testing.assert_allclose(rec.split_estimates.mean(axis=0), t["ame"], rtol=1e-12)
    assert (rec.errors, rec.n_nonconverged, rec.n_train, rec.n_test) == ([], 0, 60, 60)
    # what users (and the report's one-row pick) do with a table keeps the record and the joint covariance
    kept = [
        t.copy(),
        t.iloc[[1]],
        t[["feature", "ame"]],
        t.sort_values("ame"),
        t.reset_index(drop=True),
        t.head(1),
        pd.concat([t.iloc[[1]], t.iloc[[0]]]),
        pickle.loads(pickle.dumps(t)),
    ]
    for out in kept:
        assert type(out) is LearnerTable and out.learner.n_train == 60, type(out)
        np.testing.assert_array_equal(out.learner.split_estimates, rec.split_estimates)
    h = fme.hypotheses(t.iloc[[1, 0]], "b1 - b2 = 0")
    assert h["estimate"].iloc[0] == pytest.approx(t["ame"].iloc[1] - t["ame"].iloc[0], rel=1e-12)
    # a frame computed anew has no record (pandas' attrs held an array that made merge and concat fail)
    merged = t.merge(pd.DataFrame({"feature": ["b", "a"], "label": ["B", "A"]}), on="feature")
    assert merged.learner is None and merged["label"].tolist() == ["A", "B"]
    other = fme.learner_ame(LinearRegression(), Xn, y, {"a": 1}, repeats=2, random_state=4)
    both = pd.concat([t, other], ignore_index=True)
    assert both.learner is None and both.estimates is None and both["ame"].tolist() == [*t["ame"], *other["ame"]]


def test_fewer_than_two_successful_splits_raise(data):
    X, y = data
    Xn = X[["a", "b"]]
    calls = []

    def learner(X_train, y_train):
        calls.append(len(X_train))
        if len(X_train) < len(Xn):  # every split fails, the fit on all rows works
            raise ValueError("too few rows")
        return LinearRegression().fit(X_train, y_train)

    with pytest.raises(LearnerError, match=r"only 0 of 3 splits succeeded.*ValueError: too few rows"):
        fme.learner_ame(learner, Xn, y, {"a": 1}, repeats=3)
    assert len(calls) == 4


def test_nonconverged_fits_are_kept_and_counted(data):
    X, y = data
    yc = (y > np.median(y)).astype(int)
    with pytest.warns(LearnerWarning, match="the fits of 3 of 3 splits warned that they did not converge"):
        t = fme.learner_ame(LogisticRegression(max_iter=1), X[["a", "b"]], yc, {"a": 1}, repeats=3, target_class=1)
    assert t.learner.n_nonconverged == 3 and list(t["n_failed"]) == [0]


def test_classifier_with_target_class(data):
    X, y = data
    Xn = X[["a", "b"]]
    yc = (y > np.median(y)).astype(int)
    t = fme.learner_ame(
        LogisticRegression(), Xn, yc, {"a": 0.5}, repeats=4, test_size=0.25, random_state=1, target_class=1
    )
    splits = learner_splits(len(X), 4, 0.25, 1)
    step = Xn.assign(a=Xn.a + 0.5)
    V = []
    for train, test in splits:
        m = LogisticRegression().fit(Xn.iloc[train], yc[train])
        V.append(np.mean(m.predict_proba(step.iloc[test])[:, 1] - m.predict_proba(Xn.iloc[test])[:, 1]))
    V = np.array(V)
    np.testing.assert_allclose(t["ame"], [V.mean()], rtol=1e-10)
    np.testing.assert_allclose(t["std_error"], [np.sqrt(np.var(V, ddof=1) * (1 / 4 + 30 / 90))], rtol=1e-8)
    m = LogisticRegression().fit(Xn, yc)
    np.testing.assert_allclose(
        t["ame_full"], [np.mean(m.predict_proba(step)[:, 1] - m.predict_proba(Xn)[:, 1])], rtol=1e-10
    )


def test_by_groups_use_each_groups_test_rows(data):
    X, y = data
    Xab = X[["a", "b"]]

    def learner(X_train, y_train):
        return make_pipeline(
            PolynomialFeatures(degree=2, interaction_only=True, include_bias=False), LinearRegression()
        ).fit(X_train[["a", "b"]], y_train)

    t = fme.learner_ame(learner, X[["a", "b", "g"]], y, {"a": 1}, by="g", repeats=4, random_state=2)
    assert list(t["g"]) == ["u", "v"] and list(t["feature"]) == ["a", "a"]
    splits = learner_splits(len(X), 4, 0.5, 2)
    V = []
    for train, test in splits:
        coef = (
            make_pipeline(PolynomialFeatures(degree=2, interaction_only=True, include_bias=False), LinearRegression())
            .fit(Xab.iloc[train], y[train])[-1]
            .coef_
        )
        # the fME of a + 1 under a + b + a*b is coef_a + coef_ab * b: its mean over each group's test rows
        te = X.iloc[test]
        V.append([coef[0] + coef[2] * te.b[te.g == g].mean() for g in ("u", "v")])
    V = np.array(V)
    np.testing.assert_allclose(t["ame"], V.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(t["std_error"] ** 2, np.var(V, axis=0, ddof=1) * (1 / 4 + 60 / 60), rtol=1e-8)
    assert t["ame"].iloc[0] != t["ame"].iloc[1]


def test_categorical_step_rows_per_level(data):
    X, y = data
    Xc = X[["a", "c"]]

    def learner(X_train, y_train):
        return LinearRegression().fit(pd.get_dummies(X_train, columns=["c"], dtype=float), y_train)

    class Dummies:
        """A model on the raw frame: the dummy coding happens inside predict (fme sees a plain callable)."""

        def __init__(self, model):
            self.model = model

        def predict(self, frame):
            d = pd.get_dummies(frame.astype({"c": pd.CategoricalDtype(["x", "y", "z"])}), columns=["c"], dtype=float)
            return self.model.predict(d)

    t = fme.learner_ame(lambda Xt, yt: Dummies(learner(Xt, yt)), Xc, y, {"c": None}, repeats=4, random_state=4)
    assert list(t["feature"]) == ["c"] * 3 and list(t["level"]) == ["x", "y", "z"]
    V = []
    for train, test in learner_splits(len(X), 4, 0.5, 4):
        coef = dict(zip(["a", "x", "y", "z"], learner(Xc.iloc[train], y[train]).coef_))
        c = Xc.c.iloc[test].astype(str)
        # observation-wise categorical ME: rows already at the level are left out
        V.append([np.mean([coef[lev] - coef[v] for v in c[c != lev]]) for lev in ("x", "y", "z")])
    V = np.array(V)
    np.testing.assert_allclose(t["ame"], V.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(t["std_error"] ** 2, np.var(V, axis=0, ddof=1) * (1 / 4 + 60 / 60), rtol=1e-8)


def test_anlm_rows(data):
    X, y = data
    Xn = X[["a", "b"]]
    pipe = make_pipeline(PolynomialFeatures(degree=2, include_bias=False), LinearRegression())
    t = fme.learner_ame(pipe, Xn, y, {"a": 1}, repeats=3, random_state=0, nlm=True)
    assert list(t["estimand"]) == ["AME", "ANLM"] and list(t["feature"]) == ["a", "a"]
    from sklearn.base import clone

    anlm = []
    for train, test in learner_splits(len(X), 3, 0.5, 0):
        m = clone(pipe).fit(Xn.iloc[train], y[train])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            anlm.append(fme.fme(m, Xn.iloc[test], {"a": 1}, nlm=True, inference="sample").anlm)
    np.testing.assert_allclose(t["ame"].iloc[1], np.mean(anlm), rtol=1e-10)
    assert np.isfinite(t["std_error"]).all()


def test_multivariate_steps_with_by_and_anlm(data):
    X, y = data
    Xab = X[["a", "b"]]

    def learner(X_train, y_train):
        return make_pipeline(PolynomialFeatures(degree=2, include_bias=False), LinearRegression()).fit(
            X_train[["a", "b"]], y_train
        )

    steps = [{"a": 1, "b": 0.5}, {"a": 1, "b": 0.5}, {"b": -1}]
    t = fme.learner_ame(learner, X[["a", "b", "g"]], y, steps, by="g", repeats=4, random_state=9, nlm=True)
    assert list(t["feature"]) == ["a, b"] * 4 * 2 + ["b"] * 4
    assert list(t["estimand"]) == ["AME", "AME", "ANLM", "ANLM"] * 3 and list(t["g"]) == ["u", "v"] * 6
    assert list(t["contrast"][:2]) == ["a + 1, b + 0.5"] * 2
    splits = learner_splits(len(X), 4, 0.5, 9)
    V, N = [], []
    for train, test in splits:
        m = learner(Xab.iloc[train], y[train])
        te = X.iloc[test]
        f = m.predict(te[["a", "b"]].assign(a=te.a + 1, b=te.b + 0.5)) - m.predict(te[["a", "b"]])
        V.append([f[te.g.to_numpy() == g].mean() for g in ("u", "v")])
        r = fme.fme(m, te[["a", "b"]].reset_index(drop=True), steps[0], nlm=True, inference="sample")
        nl = r.results["nlm"].to_numpy()
        N.append([np.nanmean(nl[te.g.to_numpy()[r.results.index] == g]) for g in ("u", "v")])
    V, N = np.array(V), np.array(N)
    np.testing.assert_allclose(t["ame"].iloc[:2], V.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(t["ame"].iloc[4:6], V.mean(axis=0), rtol=1e-10)  # the repeated step, its own rows
    np.testing.assert_allclose(t["std_error"].iloc[:2] ** 2, np.var(V, axis=0, ddof=1) * (1 / 4 + 60 / 60), rtol=1e-8)
    np.testing.assert_allclose(t["ame"].iloc[2:4], N.mean(axis=0), rtol=1e-10)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"repeats": 1}, ParameterError, "repeats must be an integer >= 2"),
        ({"repeats": 2.5}, ParameterError, "repeats"),
        ({"repeats": True}, ParameterError, "repeats"),
        ({"test_size": 0.0}, ParameterError, "test_size must be a fraction"),
        ({"test_size": 1.5}, ParameterError, "test_size"),
        ({"test_size": 119}, ParameterError, "at least 1 test row and 2 training rows"),
        (
            {"by": "nope"},
            FeatureError,
            r"by column\(s\) \['nope'\] are not columns of the data; use some of \['a', 'b', 'g'\]",
        ),
        ({"inference": "delta"}, ParameterError, "drop \\['inference'\\]"),
        ({"hypothesis": "b1 = 0"}, ParameterError, "fme.hypotheses"),
        ({"steps": []}, ParameterError, "steps as a list must hold one or more dicts"),
        ({"steps": [{"a": 1}, "b"]}, ParameterError, "steps as a list"),
        ({"conf_level": 95}, ParameterError, "conf_level"),
    ],
)
def test_bad_arguments(data, kwargs, exc, match):
    X, y = data
    kwargs = {"steps": {"a": 1}, **kwargs}
    with pytest.raises(exc, match=match):
        fme.learner_ame(LinearRegression(), X[["a", "b", "g"]], y, **kwargs)


def test_bad_data_and_learner(data):
    X, y = data
    Xn = X[["a", "b"]]
    with pytest.raises(DataError, match="`X` must be a pandas DataFrame"):
        fme.learner_ame(LinearRegression(), Xn.to_numpy(), y, {"a": 1})
    with pytest.raises(DataError, match="`y` has 119 values but `X` has 120 rows"):
        fme.learner_ame(LinearRegression(), Xn, y[:-1], {"a": 1})
    with pytest.raises(ModelError, match="learner must be an unfitted scikit-learn estimator"):
        fme.learner_ame(5, Xn, y, {"a": 1})
    with pytest.raises(ModelError, match="returned None"):
        fme.learner_ame(lambda X, y: None, Xn, y, {"a": 1})


def test_a_statsmodels_formula_result_is_refitted_by_its_formula(data):
    """An OLS formula result as the learner: each split refits y ~ a + b on its training rows, so the split's AME
    of a + 1 is that fit's coefficient of a (computed here by hand with statsmodels on the same rows)."""
    import statsmodels.formula.api as smf

    X, y = data
    frame = X[["a", "b"]].assign(y=y)
    result = smf.ols("y ~ a + b", data=frame).fit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fme.learner_ame(result, X[["a", "b"]], pd.Series(y, name="y"), {"a": 1.0}, repeats=6)
    splits = learner_splits(len(X), 6, 0.5, 0)
    est = np.array([smf.ols("y ~ a + b", data=frame.iloc[tr]).fit().params["a"] for tr, _ in splits])
    assert table["ame"].iloc[0] == pytest.approx(est.mean(), rel=1e-10)
    n_test = len(splits[0][1])
    se = np.sqrt(est.var(ddof=1) * (1 / 6 + n_test / (len(X) - n_test)))
    assert table["std_error"].iloc[0] == pytest.approx(se, rel=1e-8)
    assert table["ame_full"].iloc[0] == pytest.approx(result.params["a"], rel=1e-10)
    weighted = smf.glm("y ~ a + b", data=frame, var_weights=np.full(len(X), 2.0)).fit()
    with pytest.raises(
        ModelError,
        match=r"learner: refits of a GLM with var_weights are not supported \(the weights are not a column the "
        r"formula can take again\); pass a function",
    ):
        fme.learner_ame(weighted, X[["a", "b"]], y, {"a": 1.0})


def test_a_pandas_y_is_matched_to_the_rows_of_X_by_label(data):
    X, y = data
    Xn = X[["a", "b"]].set_axis(np.arange(len(X))[::-1] * 3)
    ys = pd.Series(y, index=Xn.index)
    ref = fme.learner_ame(LinearRegression(), Xn, y, {"a": 1}, repeats=3)
    got = fme.learner_ame(LinearRegression(), Xn, ys.sample(frac=1, random_state=2), {"a": 1}, repeats=3)
    for col in ("ame", "std_error", "ame_full"):
        np.testing.assert_array_equal(got[col].to_numpy(), ref[col].to_numpy())
    with pytest.raises(DataError, match=r"index labels of `X` and `y` differ"):
        fme.learner_ame(LinearRegression(), Xn, ys.reset_index(drop=True), {"a": 1}, repeats=3)
    with pytest.raises(DataError, match=r"the index of `X` has duplicate labels"):
        fme.learner_ame(LinearRegression(), Xn.set_axis(np.zeros(len(X), int)), ys, {"a": 1}, repeats=3)


def test_a_classifier_table_names_its_class_scikit_learns_second_by_default(data):
    X, y = data
    Xn = X[["a", "b"]]
    labels = np.where(y > np.median(y), "case", "control")
    kw = dict(repeats=3, test_size=0.25, random_state=1)
    default = fme.learner_ame(LogisticRegression(), Xn, labels, {"a": 0.5}, **kw)
    assert list(default.columns[:5]) == ["feature", "step", "level", "reference", "class"]
    assert default["class"].tolist() == [LogisticRegression().fit(Xn, labels).classes_[1]] == ["control"]
    case = fme.learner_ame(LogisticRegression(), Xn, labels, {"a": 0.5}, target_class="case", **kw)
    assert case["class"].tolist() == ["case"]
    np.testing.assert_allclose(case["ame"], -default["ame"], rtol=1e-8)
    # the table keeps its joint uncertainty with the column added
    np.testing.assert_allclose(fme.hypotheses(case)["std_error"], case["std_error"], rtol=1e-12)
    assert "class" not in fme.learner_ame(LinearRegression(), Xn, y, {"a": 0.5}, **kw).columns
