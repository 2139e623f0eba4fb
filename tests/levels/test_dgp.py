"""fme.dgp_ame: the data-level AME E[mu(X + h) - mu(X)] by a cross-fitted one-step estimator."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from sklearn.linear_model import LinearRegression, LogisticRegression

import fme
from fme.exceptions import DataError, FeatureError, ParameterError, PositivityWarning, StepError
from fme.levels import shift_weights


def _gaussian(n, seed, rho=0.5):
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = rho * x1 + np.sqrt(1 - rho**2) * rng.normal(size=n)
    return pd.DataFrame({"x1": x1, "x2": x2}), rng


def _hand(X, y, h, fold):
    """The estimator recomputed with numpy and the two learners: influence summands of the issue's form."""
    A = X.to_numpy()
    As = A + np.asarray(h)
    T = np.empty(len(X))
    plug = np.empty(len(X))
    for j in np.unique(fold):
        tr, te = fold != j, fold == j
        lr = LinearRegression().fit(A[tr], y[tr])
        clf = LogisticRegression().fit(np.vstack([A[tr], As[tr]]), np.repeat([0, 1], tr.sum()))
        c = clf.predict_proba(A[te])[:, 1]
        r = c / (1 - c)
        mu_s, mu_x = lr.predict(As[te]), lr.predict(A[te])
        T[te] = mu_s - y[te] + r * (y[te] - mu_x)
        # the same summand as plug-in plus correction: -Y + rY - r mu = -mu + (r - 1)(Y - mu)
        np.testing.assert_allclose(T[te], mu_s - mu_x + (r - 1) * (y[te] - mu_x), rtol=1e-12, atol=1e-12)
        plug[te] = mu_s - mu_x
    return T, plug


def test_one_step_formula_against_a_hand_computation():
    X, rng = _gaussian(300, 1)
    y = np.sin(2 * X["x1"].to_numpy()) + X["x2"].to_numpy() + rng.normal(size=300)
    fold = np.arange(300) % 3
    t = fme.dgp_ame(
        X,
        y,
        [{"x1": 0.4}, {"x1": 0.4, "x2": -0.3}],
        outcome_learner=LinearRegression(),
        ratio_learner=LogisticRegression(),
        folds=fold,
        extrapolation=None,
    )
    T1, p1 = _hand(X, y, [0.4, 0.0], fold)
    T2, p2 = _hand(X, y, [0.4, -0.3], fold)
    np.testing.assert_allclose(t["ame"], [T1.mean(), T2.mean()], rtol=1e-10)
    np.testing.assert_allclose(t["plug_in"], [p1.mean(), p2.mean()], rtol=1e-10)
    np.testing.assert_allclose(t["correction"], [T1.mean() - p1.mean(), T2.mean() - p2.mean()], rtol=1e-8)
    np.testing.assert_allclose(t["std_error"], [T1.std() / np.sqrt(300), T2.std() / np.sqrt(300)], rtol=1e-10)
    assert list(t["inference"]) == ["one-step (cross-fitted, 3 folds)"] * 2
    assert list(t["feature"]) == ["x1", "x1, x2"] and t["step"].iloc[0] == 0.4 and np.isnan(t["step"].iloc[1])
    # the joint covariance is the influence terms' : fme.hypotheses' difference has their difference's spread
    h = fme.hypotheses(t, "b1 - b2 = 0")
    d = T1 - T2
    np.testing.assert_allclose(h["estimate"], [d.mean()], rtol=1e-9)
    np.testing.assert_allclose(h["std_error"], [d.std() / np.sqrt(300)], rtol=1e-6)


def test_by_groups_average_the_influence_terms_within_each_group():
    X, rng = _gaussian(300, 2)
    X["g"] = np.where(rng.uniform(size=300) < 0.4, "a", "b")
    y = X["x1"].to_numpy() * (1 + (X["g"] == "b")) + rng.normal(size=300)
    fold = np.arange(300) % 2
    t = fme.dgp_ame(
        X,
        y,
        {"x1": 0.5},
        outcome_learner=LinearRegression(),
        ratio_learner=LogisticRegression(),
        folds=fold,
        by="g",
        extrapolation=None,
    )
    assert list(t["g"]) == ["a", "b"] and list(t["n"]) == [int((X["g"] == "a").sum()), int((X["g"] == "b").sum())]
    whole = fme.dgp_ame(
        X,
        y,
        {"x1": 0.5},
        outcome_learner=LinearRegression(),
        ratio_learner=LogisticRegression(),
        folds=fold,
        extrapolation=None,
    )
    share = t["n"].to_numpy() / 300
    # the same learners and summands: the groups' estimates average to the whole's
    np.testing.assert_allclose((t["ame"] * share).sum(), whole["ame"].iloc[0], rtol=1e-10)
    h = fme.hypotheses(t, "b1 - b2 = 0")  # disjoint groups: independent rows
    np.testing.assert_allclose(h["std_error"], [np.hypot(*t["std_error"])], rtol=1e-6)


def test_separate_gives_one_row_per_feature():
    X, rng = _gaussian(200, 12)
    y = X["x1"].to_numpy() - X["x2"].to_numpy() + rng.normal(size=200)
    kw = dict(outcome_learner=LinearRegression(), ratio_learner=LogisticRegression(), folds=np.arange(200) % 2)
    sep = fme.dgp_ame(X, y, {"x1": 0.4, "x2": 0.3}, separate=True, **kw)
    one = fme.dgp_ame(X, y, [{"x1": 0.4}, {"x2": 0.3}], **kw)
    joint = fme.dgp_ame(X, y, {"x1": 0.4, "x2": 0.3}, **kw)
    np.testing.assert_allclose(sep["ame"], one["ame"], rtol=1e-12)
    assert list(sep["feature"]) == ["x1", "x2"] and list(joint["feature"]) == ["x1, x2"]
    assert abs(joint["ame"].iloc[0] - sep["ame"].sum()) > 1e-6  # the joint shift is its own estimate


def test_linear_dgp_recovers_beta_times_h():
    X, rng = _gaussian(3000, 3, rho=0.6)
    y = 1.5 * X["x1"].to_numpy() - X["x2"].to_numpy() + rng.normal(size=3000)
    t = fme.dgp_ame(X, y, {"x1": 0.8}, outcome_learner=LinearRegression(), ratio_learner=LogisticRegression())
    r = t.iloc[0]
    assert abs(r["ame"] - 1.2) < 3 * r["std_error"] and abs(r["ame"] - 1.2) < 0.03
    assert abs(r["correction"]) < 0.01  # a correct outcome model leaves little to correct
    assert r["positivity"] == "ok" and r["conf_low"] < 1.2 < r["conf_high"]


def test_weights_equal_the_gaussian_density_ratio():
    rng = np.random.default_rng(4)
    X = pd.DataFrame({"x": rng.normal(size=4000)})
    h = 0.5
    w = shift_weights(X, {"x": h}, ratio_learner=LogisticRegression())
    true = np.exp(h * X["x"].to_numpy() - h**2 / 2)
    central = np.abs(X["x"].to_numpy()) < 2
    np.testing.assert_allclose(w[central], true[central], rtol=0.08)
    assert np.median(np.abs(w / true - 1)) < 0.03
    # a badly specified ratio (the step's sign flipped) is far off: the check can fail
    wrong = shift_weights(X, {"x": -h}, ratio_learner=LogisticRegression())
    assert np.median(np.abs(wrong / true - 1)) > 0.2


def test_binary_outcome_uses_the_class_probability():
    X, rng = _gaussian(3000, 5)
    eta = lambda d: -0.2 + 1.0 * d["x1"] - 0.5 * d["x2"]  # noqa: E731
    y = np.where(rng.uniform(size=3000) < expit(eta(X)), "yes", "no")
    theta = float(np.mean(expit(eta(X.assign(x1=X["x1"] + 0.5))) - expit(eta(X))))
    t = fme.dgp_ame(
        X, y, {"x1": 0.5}, outcome_learner=LogisticRegression(), ratio_learner=LogisticRegression(), target_class="yes"
    )
    assert abs(t["ame"].iloc[0] - theta) < 3 * t["std_error"].iloc[0]
    t_no = fme.dgp_ame(
        X, y, {"x1": 0.5}, outcome_learner=LogisticRegression(), ratio_learner=LogisticRegression(), target_class="no"
    )
    np.testing.assert_allclose(t_no["ame"], -t["ame"], rtol=1e-4)


def test_reproducible_with_the_seed_and_caller_objects_untouched():
    X, rng = _gaussian(400, 6)
    y = np.tanh(X["x1"].to_numpy()) + rng.normal(size=400)
    X0, learner = X.copy(), LogisticRegression()
    a = fme.dgp_ame(X, y, {"x1": 0.5}, ratio_learner=learner, random_state=11)
    b = fme.dgp_ame(X, y, {"x1": 0.5}, ratio_learner=learner, random_state=11)
    c = fme.dgp_ame(X, y, {"x1": 0.5}, ratio_learner=learner, random_state=12)
    pd.testing.assert_frame_equal(pd.DataFrame(a), pd.DataFrame(b))
    assert a["ame"].iloc[0] != c["ame"].iloc[0]
    pd.testing.assert_frame_equal(X, X0)
    assert not hasattr(learner, "coef_")


def _uniform(n=1500, seed=7):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x1": rng.uniform(size=n), "x2": rng.uniform(size=n)})
    return X, X["x1"].to_numpy() + X["x2"].to_numpy() + rng.normal(scale=0.1, size=n)


def test_positivity_fails_when_the_step_leaves_the_support():
    X, y = _uniform()
    with pytest.warns(PositivityWarning, match=r"100\.0% of the moved rows are outside the data \(envelope\)"):
        t = fme.dgp_ame(X, y, {"x1": 2.0}, outcome_learner=LinearRegression())
    r = t.iloc[0]
    assert r["positivity"] == "fails" and r["share_extrapolated"] == 1.0
    assert np.isnan(r["conf_low"]) and np.isnan(r["std_error"]) and np.isfinite(r["ame"])
    with pytest.raises(DataError, match="no row of the data can be moved"):
        fme.dgp_ame(X, y, {"x1": 2.0}, on_extrapolation="exclude")


def test_exclude_restates_the_estimand_and_shrink_shrinks_into_the_support():
    X, y = _uniform()
    x1 = X["x1"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PositivityWarning)
        ex = fme.dgp_ame(
            X,
            y,
            {"x1": 0.3},
            outcome_learner=LinearRegression(),
            ratio_learner=LogisticRegression(),
            on_extrapolation="exclude",
        ).iloc[0]
    kept = x1 + 0.3 <= x1.max()
    assert ex["n"] == kept.sum() and ex["share_extrapolated"] == pytest.approx(1 - kept.mean())
    assert f"{kept.sum()} of 1,500 rows" in ex["note"] and ex["positivity"] != "fails"
    assert abs(ex["ame"] - 0.3) < 3 * ex["std_error"]  # y is linear in x1: the effect on the rows kept is 0.3
    # shrink: each row's step ends at the envelope's edge, so the linear outcome's effect is the mean effective
    # step; the shrunk rows pile up on that edge, where the density ratio is unbounded: the verdict may say so
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PositivityWarning)
        sh = fme.dgp_ame(X, y, {"x1": 0.3}, outcome_learner=LinearRegression(), on_extrapolation="shrink").iloc[0]
    step = np.minimum(0.3, x1.max() - x1)
    evaluated = step >= 0.003
    assert sh["n"] == evaluated.sum() and "shrunk into the support" in sh["note"]
    assert sh["plug_in"] == pytest.approx(step[evaluated].mean(), abs=0.01) and np.isfinite(sh["ame"])
    assert sh["share_extrapolated"] == pytest.approx(1 - kept.mean())


def test_categorical_switch_is_aipw_on_the_rows_not_at_the_level():
    rng = np.random.default_rng(8)
    n = 3000
    w = rng.normal(size=n)
    p = np.column_stack([np.ones(n), np.exp(0.8 * w), np.exp(-0.5 * w)])
    u = rng.uniform(size=n)[:, None] > np.cumsum(p / p.sum(1, keepdims=True), axis=1)
    a = np.array(["a", "b", "c"])[u.sum(1)]
    effect = {"a": 0.0, "b": 1.0, "c": 3.0}
    y = 2 * w + np.vectorize(effect.get)(a) + rng.normal(size=n)
    X = pd.DataFrame({"w": w, "a": pd.Categorical(a)})
    t = fme.dgp_ame(X, y, {"a": "c"}, outcome_learner=LinearRegression(), ratio_learner=LogisticRegression())
    r = t.iloc[0]
    not_c = a != "c"
    theta = float(np.mean(3.0 - np.vectorize(effect.get)(a[not_c])))
    assert r["level"] == "c" and r["n"] == not_c.sum() and np.isnan(r["step"])
    assert abs(r["ame"] - theta) < 3 * r["std_error"]
    assert 0 < r["propensity_min"] < r["propensity_max"] < 1 and r["positivity"] in ("ok", "weak")
    assert 0 < r["ess_share"] <= 1


def test_categorical_switch_against_a_hand_computation():
    rng = np.random.default_rng(13)
    n = 240
    w = rng.normal(size=n)
    a = np.where(rng.uniform(size=n) < expit(w), "t", "u")
    y = w + (a == "t") * (1 + w) + rng.normal(size=n)
    X = pd.DataFrame({"w": w, "a": a})
    fold = np.arange(n) % 3
    t = fme.dgp_ame(
        X,
        y,
        {"a": "t"},
        outcome_learner=LinearRegression(),
        ratio_learner=LogisticRegression(),
        folds=fold,
        extrapolation=None,
    ).iloc[0]
    at, D = a == "t", a != "t"
    A = np.column_stack([w, at.astype(float)])
    As = np.column_stack([w, np.ones(n)])
    T = np.empty(n)
    for j in range(3):
        tr, te = fold != j, fold == j
        lr = LinearRegression().fit(A[tr], y[tr])
        pi = LogisticRegression().fit(w[tr, None], at[tr].astype(int)).predict_proba(w[te, None])[:, 1]
        T[te] = D[te] * (lr.predict(As[te]) - y[te]) + at[te] * (1 - pi) / pi * (y[te] - lr.predict(A[te]))
    theta = T.sum() / D.sum()
    phi = (T - theta * D) / D.mean()
    assert t["ame"] == pytest.approx(theta, rel=1e-10) and t["n"] == D.sum()
    assert t["std_error"] == pytest.approx(np.sqrt(np.sum(phi**2)) / n, rel=1e-10)


def test_model_ame_is_the_models_own_effect_on_the_same_rows():
    X, rng = _gaussian(400, 9)
    y = X["x1"].to_numpy() ** 2 + rng.normal(size=400)
    model = LinearRegression().fit(X, y)
    t = fme.dgp_ame(X, y, {"x1": 0.5, "x2": 1.0}, model=model)
    np.testing.assert_allclose(t["model_ame"], [0.5 * model.coef_[0] + model.coef_[1]], rtol=1e-10)
    assert list(t.columns[-2:]) == ["model_ame", "note"]


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(on_extrapolation="keep"), ParameterError, "on_extrapolation must be one of"),
        (dict(steps={"x1": 1, "g": "a"}), StepError, "mixes a categorical switch"),
        (dict(steps={"nope": 1}), FeatureError, "unknown feature 'nope'"),
        (dict(y=np.zeros(5)), DataError, "one outcome per row"),
        (dict(folds=1), ParameterError, "folds must be between 2"),
        (dict(by="x1"), FeatureError, "is a moved feature"),
        (dict(target_class=3), ParameterError, "is for a binary outcome"),
        (dict(reference_data=None), ParameterError, "pass model="),
        (dict(steps=[]), StepError, "non-empty list"),
    ],
)
def test_bad_inputs_raise_the_librarys_errors(kwargs, error, match):
    X, rng = _gaussian(60, 10)
    X["g"] = np.where(rng.uniform(size=60) < 0.5, "a", "b")
    args = dict(
        X=X,
        y=rng.normal(size=60),
        steps={"x1": 1.0},
        outcome_learner=LinearRegression(),
        ratio_learner=LogisticRegression(),
    )
    args.update(kwargs)
    with pytest.raises(error, match=match):
        fme.dgp_ame(**args)


def test_a_pandas_y_is_matched_to_the_rows_of_X_by_label():
    X, rng = _gaussian(300, 4)
    X.index = pd.Index(rng.permutation(1000)[:300])
    y = X["x1"] ** 2 + X["x2"] + rng.normal(size=300)
    kw = dict(outcome_learner=LinearRegression(), ratio_learner=LogisticRegression(), folds=3, extrapolation=None)
    ref = fme.dgp_ame(X, y.to_numpy(), {"x1": 0.5}, **kw)
    got = fme.dgp_ame(X, y.sample(frac=1, random_state=1), {"x1": 0.5}, **kw)
    for col in ("ame", "std_error", "plug_in", "correction", "conf_low", "conf_high"):
        np.testing.assert_array_equal(got[col].to_numpy(), ref[col].to_numpy())
    with pytest.raises(DataError, match=r"index labels of `X` and `y` differ"):
        fme.dgp_ame(X, y.reset_index(drop=True), {"x1": 0.5}, **kw)
    with pytest.raises(DataError, match=r"the index of `y` has duplicate labels"):
        fme.dgp_ame(X, y.set_axis(np.r_[X.index[:-1], X.index[0]]), {"x1": 0.5}, **kw)


def _kept_design(n, seed, rho=0.5):
    """x1, x2 standard normal with correlation rho; mu = x1 + x1^2 / 2 + x1 x2 / 2 + x2, quadratic, so that a linear
    outcome learner is wrong while the Gaussian shift's log density ratio is linear (a logistic ratio is right)."""
    X, rng = _gaussian(n, seed, rho)
    x1, x2 = X["x1"].to_numpy(), X["x2"].to_numpy()
    return X, x1 + 0.5 * x1**2 + 0.5 * x1 * x2 + x2 + rng.normal(size=n)


def _kept_truth(h, c, rho=0.5):
    """E[mu(X1 + h, X2) - mu(X) | X1 <= c] = h + h^2 / 2 + h (1 + rho / 2) E[X1 | X1 <= c]."""
    from scipy import stats

    return h + h**2 / 2 - h * (1 + rho / 2) * stats.norm.pdf(c) / stats.norm.cdf(c)


def test_exclude_estimates_the_effect_on_the_rows_kept_against_its_closed_form():
    X, y = _kept_design(2000, 21)
    h = 0.6
    kept = X["x1"].to_numpy() + h <= X["x1"].max()
    theta = _kept_truth(h, X["x1"].max() - h)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PositivityWarning)
        r = fme.dgp_ame(
            X,
            y,
            {"x1": h},
            outcome_learner=LinearRegression(),
            ratio_learner=LogisticRegression(),
            on_extrapolation="exclude",
        ).iloc[0]
    assert r["n"] == kept.sum() < 2000 and r["positivity"] in ("ok", "weak")
    # the linear outcome learner misses the quadratic terms (its plug-in is h, short of theta_K by h^2 / 2); the
    # correction, weighted by the kept rows' density ratio, recovers theta_K within 3 standard errors (0.27 % of
    # normal draws fall outside; the sample is seeded)
    assert theta - r["plug_in"] > 0.15 > 2 * r["std_error"]
    assert abs(r["ame"] - theta) < 3 * r["std_error"]
    assert r["conf_low"] < theta < r["conf_high"]


def test_exclude_withholds_the_estimate_when_positivity_fails_on_the_rows_kept():
    X, y = _kept_design(1000, 22)
    with pytest.warns(
        PositivityWarning,
        match=r"positivity fails on the rows kept .* withheld \(estimate and "
        r"interval NaN\)",
    ):
        t = fme.dgp_ame(
            X,
            y,
            {"x1": 3.0},
            outcome_learner=LinearRegression(),
            ratio_learner=LogisticRegression(),
            on_extrapolation="exclude",
        )
    r = t.iloc[0]
    assert r["positivity"] == "fails" and r["ess_share"] < 0.05
    for col in ("ame", "std_error", "conf_low", "conf_high", "p_value", "plug_in", "correction"):
        assert np.isnan(r[col]), col
    assert r["note"].endswith("no estimate") and "positivity fails on the rows kept" in r["note"]
    assert r["n"] == (X["x1"].to_numpy() + 3.0 <= X["x1"].max()).sum()


def test_a_binary_outcome_table_names_its_class_scikit_learns_second_by_default():
    X, rng = _gaussian(600, 9)
    p = expit(-0.2 + 1.0 * X["x1"])
    y = np.where(rng.uniform(size=600) < p, "case", "control")
    kw = dict(outcome_learner=LogisticRegression(), ratio_learner=LogisticRegression(), folds=2)
    default = fme.dgp_ame(X, y, {"x1": 0.5}, **kw)
    assert list(default.columns[:5]) == ["feature", "step", "level", "reference", "class"]
    # scikit-learn's classes_ are the sorted labels: the second, 'control', is the explained class
    assert default["class"].tolist() == [LogisticRegression().fit(X, y).classes_[1]] == ["control"]
    case = fme.dgp_ame(X, y, {"x1": 0.5}, target_class="case", **kw)
    assert case["class"].tolist() == ["case"]
    np.testing.assert_allclose(case["ame"], -default["ame"], rtol=1e-6)
    # a numeric outcome's table has no class
    numeric = X["x1"].to_numpy() + rng.normal(size=600)
    kw["outcome_learner"] = LinearRegression()
    assert "class" not in fme.dgp_ame(X, numeric, {"x1": 0.5}, **kw).columns
