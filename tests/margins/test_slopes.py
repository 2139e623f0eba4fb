"""fme.avg_slopes: derivatives and elasticities against closed forms.

For a logit the per-row derivative is p (1 - p) b_x, so every slope type and its delta-method SE has an
analytic reference (the Jacobian of the average in the coefficients by hand).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import fme


@pytest.fixture(scope="module")
def logit():
    rng = np.random.default_rng(8)
    n = 600
    d = pd.DataFrame({"x": rng.normal(1.0, 1.0, n), "w": rng.uniform(1, 3, n), "g": rng.choice(["a", "b"], n)})
    eta = -0.5 + 0.9 * d["x"] - 0.4 * d["w"]
    d["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    m = smf.logit("y ~ x + w", data=d).fit(disp=0)
    return m, d


def _analytic(m, d, slope):
    b = m.params.to_numpy()
    D = np.column_stack([np.ones(len(d)), d["x"], d["w"]])
    p = 1 / (1 + np.exp(-(D @ b)))
    x = d["x"].to_numpy()
    s = p * (1 - p) * b[1]
    g = {"dydx": s, "dyex": s * x, "eydx": s / p, "eyex": s * x / p}[slope]
    # Jacobian of each row's value in the coefficients
    dp = (p * (1 - p))[:, None] * D
    e1 = np.zeros(3)
    e1[1] = 1.0
    ds = ((1 - 2 * p) * b[1])[:, None] * dp + (p * (1 - p))[:, None] * e1
    jac = {
        "dydx": ds,
        "dyex": ds * x[:, None],
        "eydx": ds / p[:, None] - (s / p**2)[:, None] * dp,
        "eyex": (ds / p[:, None] - (s / p**2)[:, None] * dp) * x[:, None],
    }[slope]
    grad = jac.mean(axis=0)
    return g.mean(), float(np.sqrt(grad @ m.cov_params().to_numpy() @ grad))


@pytest.mark.parametrize("slope", ["dydx", "eyex", "eydx", "dyex"])
def test_slopes_and_their_delta_se_equal_the_closed_forms(logit, slope):
    m, d = logit
    out = fme.avg_slopes(m, d, "x", slope=slope)
    est, se = _analytic(m, d, slope)
    assert out["term"].iloc[0] == "x" and out["slope"].iloc[0] == slope and out["inference"].iloc[0] == "delta"
    assert out["estimate"].iloc[0] == pytest.approx(est, rel=1e-7)  # central difference: O(eps^2)
    assert out["std_error"].iloc[0] == pytest.approx(se, rel=1e-5)


def test_by_groups_and_default_variables(logit):
    m, d = logit
    out = fme.avg_slopes(m, d, by="g")
    assert sorted(out["term"].unique()) == ["w", "x"] and set(out["g"]) == {"a", "b"}
    row = out[(out["term"] == "x") & (out["g"] == "b")].iloc[0]
    sub = d[d["g"] == "b"]
    est, _ = _analytic(m, sub, "dydx")
    assert row["estimate"] == pytest.approx(est, rel=1e-7) and row["n"] == len(sub)


def test_a_linear_model_slope_is_its_coefficient_and_bootstrap_works():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(2)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    y = 1.5 * X["a"] - X["b"] + rng.normal(size=200)
    lr = LinearRegression().fit(X, y)
    out = fme.avg_slopes(lr, X, ["a", "b"], bootstrap={"X": X, "y": y, "n_resamples": 30, "random_state": 0})
    np.testing.assert_allclose(out["estimate"], lr.coef_, rtol=1e-8)
    assert (out["inference"] == "bootstrap").all() and (out["std_error"] > 0).all()
    # elasticities divide by each refit's own prediction (tests/test_vocab_bootstrap.py has them by hand)
    spec = {"X": X, "y": y, "n_resamples": 30, "random_state": 0, "ci": "normal"}
    ey = fme.avg_slopes(lr, X.assign(a=X["a"] + 5), "a", slope="eyex", bootstrap=spec)
    assert ey["inference"].iloc[0] == "bootstrap" and ey["std_error"].iloc[0] > 0


def test_categorical_variables_and_bad_slopes_are_refused(logit):
    m, d = logit
    with pytest.raises(fme.FeatureError, match="categorical"):
        fme.avg_slopes(lambda f: f["x"].to_numpy(), d.assign(g=d["g"].astype("category")), "g")
    with pytest.raises(fme.ParameterError, match="slope must be"):
        fme.avg_slopes(m, d, "x", slope="dxdy")


def test_avg_slopes_of_a_spline_variable_stays_within_its_knots():
    """A formula's B-spline cannot be evaluated past its boundary knots (the training range): the rows at the
    ends take a one-sided difference, and the average slope is the spline's exact derivative averaged."""
    from scipy.interpolate import BSpline

    rng = np.random.default_rng(4)
    n = 300
    d = pd.DataFrame({"x": rng.uniform(0, 10, n), "z": rng.normal(size=n)})
    d["y"] = np.sin(d["x"]) + d["z"] + rng.normal(0, 0.3, n)
    m = smf.ols("y ~ bs(x, df=5) + z", data=d).fit()
    (info,) = [i for f, i in m.model.data.model_spec.factor_infos.items() if f.code.startswith("bs(")]
    (basis,) = info.state["transforms"].values()
    coef = np.r_[0.0, m.params.filter(like="bs(").to_numpy()]  # patsy drops the first basis function
    x = d["x"].to_numpy()
    exact = BSpline(np.asarray(basis._all_knots), coef, 3).derivative()(x)
    out = fme.avg_slopes(m, d, "x")
    assert np.isfinite(out["std_error"].iloc[0]) and out["std_error"].iloc[0] > 0
    # the central difference's error is O(eps^2) inside; a one-sided one's O(eps) at the two end rows
    eps = 1e-4 * (x.max() - x.min())
    inner = (x > x.min() + eps) & (x < x.max() - eps)
    assert (~inner).sum() == 2
    assert out["estimate"].iloc[0] == pytest.approx(exact.mean(), abs=2 * eps / n)
    per_row = fme.slopes(m, d, "x")["estimate"].to_numpy()
    np.testing.assert_allclose(per_row[inner], exact[inner], atol=1e-6)
    np.testing.assert_allclose(per_row[~inner], exact[~inner], atol=eps)
    dme = fme.dme(m, d, "x")["dme"].to_numpy()
    np.testing.assert_allclose(dme[inner], exact[inner], atol=1e-5)
    np.testing.assert_allclose(dme[~inner], exact[~inner], atol=2 * eps)
