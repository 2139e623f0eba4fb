"""vcov='unconditional' (the rows' sampling added to the parameters') against independent computations.

Closed forms: for OLS without interactions the AME of x is b_x on every row, so its unconditional variance is
statsmodels' sandwich variance of b_x (HC0, HC1, cluster); the average prediction of an OLS with an intercept is
the mean of y, whose unconditional variance is the plug-in variance of a sample mean. For a logit, the AME's
standard error equals the sandwich of the stacked estimating equations (the score of the logit and
w_i 1{g_i = g} (m_i(beta) - mu_g) = 0), built here with numpy alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import special

import fme
from fme.exceptions import ModelError, ParameterError


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    n = 400
    d = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "z": rng.normal(size=n),
            "c": rng.integers(0, 20, n),
            "g": rng.integers(0, 3, n),
            "w": rng.uniform(0.5, 2.0, n),
        }
    )
    d["y"] = 1 + 0.5 * d["x"] - 0.3 * d["z"] + rng.normal(size=n) * (1 + np.abs(d["x"]))
    d["yb"] = (rng.uniform(size=n) < special.expit(-0.3 + 0.8 * d["x"] + 0.5 * d["z"])).astype(float)
    return d


@pytest.fixture(scope="module")
def ols(data):
    return smf.ols("y ~ x + z", data=data).fit()


@pytest.fixture(scope="module")
def logit(data):
    return smf.logit("yb ~ x + z", data=data).fit(disp=0)


def test_linear_ame_unconditional_is_the_hc0_sandwich(data, ols):
    t = fme.ame(ols, data, {"x": 1, "z": 1}, vcov="unconditional")
    np.testing.assert_allclose(t["std_error"], np.sqrt(np.diag(ols.cov_HC0))[1:], rtol=1e-10)
    assert list(t["inference"]) == ["delta (unconditional)"] * 2
    assert list(t["covers"]) == ["model uncertainty and sampled rows"] * 2
    plain = fme.ame(ols, data, {"x": 1})
    assert plain["inference"].iloc[0] == "delta" and plain["covers"].iloc[0] == "model uncertainty"


def test_linear_ame_unconditional_hc1_and_cluster_are_statsmodels(data, ols):
    hc1 = fme.ame(ols, data, {"x": 1}, vcov={"unconditional": "HC1"})
    np.testing.assert_allclose(hc1["std_error"].iloc[0], np.sqrt(ols.cov_HC1[1, 1]), rtol=1e-10)
    assert hc1["inference"].iloc[0] == "delta (unconditional, HC1)"
    # statsmodels' cluster covariance carries G/(G-1) (n-1)/(n-k): marginaleffects' clustered HC1
    cl = fme.ame(ols, data, {"x": 1}, vcov={"unconditional": "HC1", "cluster": "c"})
    ref = ols.get_robustcov_results("cluster", groups=data["c"]).cov_params()
    np.testing.assert_allclose(cl["std_error"].iloc[0], np.sqrt(ref[1, 1]), rtol=1e-10)
    assert cl["inference"].iloc[0] == "delta (unconditional, HC1, cluster: c)"
    # clustered HC0: G/(G-1) times the sum over clusters of the summed scores' sandwich
    X, e = ols.model.exog, ols.resid.to_numpy()
    G = data["c"].nunique()
    S = pd.DataFrame(X * e[:, None]).groupby(data["c"].to_numpy()).sum().to_numpy()
    bread = np.linalg.inv(X.T @ X)
    V = G / (G - 1) * bread @ S.T @ S @ bread
    cl0 = fme.ame(ols, data, {"x": 1}, vcov={"unconditional": "HC0", "cluster": "c"})
    np.testing.assert_allclose(cl0["std_error"].iloc[0], np.sqrt(V[1, 1]), rtol=1e-10)


def test_average_prediction_of_ols_is_the_mean_of_y(data, ols):
    # with an intercept sum(fitted) = sum(y), and the influence of the mean prediction is (y_i - ybar) / n
    t = fme.avg_predictions(ols, data, vcov="unconditional")
    y = data["y"].to_numpy()
    assert t["estimate"].iloc[0] == pytest.approx(y.mean(), rel=1e-12)
    assert t["std_error"].iloc[0] == pytest.approx(np.sqrt(np.mean((y - y.mean()) ** 2) / y.size), rel=1e-10)


def _stacked_logit(data, logit, weights=None, groups=None, steps=({"x": 1.0},)):
    """Estimates and covariance of (mu_{s,g}) by the sandwich of the stacked estimating equations."""
    X = np.column_stack([np.ones(len(data)), data["x"], data["z"]])
    y = data["yb"].to_numpy()
    beta = np.asarray(logit.params)
    k, n = beta.size, len(data)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    g = np.zeros(n, dtype=int) if groups is None else np.asarray(groups)
    G = g.max() + 1
    p = special.expit(X @ beta)
    psi = [X * (y - p)[:, None]]
    A = np.zeros((k + G * len(steps),) * 2)
    A[:k, :k] = -(X * (p * (1 - p))[:, None]).T @ X
    mus = []
    for s, step in enumerate(steps):
        X1 = X.copy()
        for col, h in step.items():
            X1[:, {"x": 1, "z": 2}[col]] += h
        p1 = special.expit(X1 @ beta)
        m = p1 - p
        J = (p1 * (1 - p1))[:, None] * X1 - (p * (1 - p))[:, None] * X
        for gg in range(G):
            r = k + s * G + gg
            ind = w * (g == gg)
            mu = ind @ m / ind.sum()
            mus.append(mu)
            psi.append((ind * (m - mu))[:, None])
            A[r, :k] = ind @ J
            A[r, r] = -ind.sum()
    Psi = np.hstack(psi)
    Ainv = np.linalg.inv(A)
    V = Ainv @ (Psi.T @ Psi) @ Ainv.T
    return np.array(mus), V[k:, k:]


def test_logit_ame_matches_stacked_estimating_equations(data, logit):
    t = fme.ame(logit, data, {"x": 1}, vcov="unconditional")
    mu, V = _stacked_logit(data, logit)
    assert t["ame"].iloc[0] == pytest.approx(mu[0], rel=1e-12)
    assert t["std_error"].iloc[0] == pytest.approx(np.sqrt(V[0, 0]), rel=1e-8)


def test_logit_weighted_and_by_group_ames_match_stacked_equations(data, logit):
    t = fme.ame(logit, data, {"x": 1}, vcov="unconditional", by="g", wts="w")
    mu, V = _stacked_logit(data, logit, weights=data["w"], groups=data["g"])
    np.testing.assert_allclose(t["ame"], mu, rtol=1e-12)
    np.testing.assert_allclose(t["std_error"], np.sqrt(np.diag(V)), rtol=1e-8)


def test_joint_covariance_of_two_ames_matches_stacked_equations(data, logit):
    # the two AMEs share the rows and the parameters: their difference's SE needs the covariance
    t = fme.ame(logit, data, {"x": 1, "z": 1}, vcov="unconditional", hypothesis="b1 - b2 = 0")
    mu, V = _stacked_logit(data, logit, steps=({"x": 1.0}, {"z": 1.0}))
    assert t["estimate"].iloc[0] == pytest.approx(mu[0] - mu[1], rel=1e-10)
    assert t["std_error"].iloc[0] == pytest.approx(np.sqrt(V[0, 0] + V[1, 1] - 2 * V[0, 1]), rel=1e-8)


def test_ratio_of_average_predictions_linearises_like_stacked_equations(data, logit):
    # ratioavg = mean f(x + 1) / mean f(x): the delta method on the stacked means (f1_i - mu1, f0_i - mu0)
    t = fme.avg_comparisons(logit, data, {"x": 1}, comparison="ratioavg", vcov="unconditional")
    X = np.column_stack([np.ones(len(data)), data["x"], data["z"]])
    X1 = X.copy()
    X1[:, 1] += 1
    beta, n = np.asarray(logit.params), len(data)
    y = data["yb"].to_numpy()
    p0, p1 = special.expit(X @ beta), special.expit(X1 @ beta)
    A = np.zeros((5, 5))
    A[:3, :3] = -(X * (p0 * (1 - p0))[:, None]).T @ X
    A[3, :3] = ((p1 * (1 - p1))[:, None] * X1).sum(axis=0)
    A[4, :3] = ((p0 * (1 - p0))[:, None] * X).sum(axis=0)
    A[3, 3] = A[4, 4] = -n
    Psi = np.column_stack([X * (y - p0)[:, None], p1 - p1.mean(), p0 - p0.mean()])
    Ainv = np.linalg.inv(A)
    V = (Ainv @ Psi.T @ Psi @ Ainv.T)[3:, 3:]
    d = np.array([1 / p0.mean(), -p1.mean() / p0.mean() ** 2])
    assert t["estimate"].iloc[0] == pytest.approx(p1.mean() / p0.mean(), rel=1e-12)
    assert t["std_error"].iloc[0] == pytest.approx(np.sqrt(d @ V @ d), rel=1e-8)
    assert t["inference"].iloc[0] == "delta (unconditional)"
    assert t["covers"].iloc[0] == "model uncertainty and sampled rows"


def test_glm_and_discrete_routes_agree_with_the_linear_one(data, ols):
    # a Gaussian GLM's score and Hessian give OLS's (X'X)^{-1} x_i e_i; the scale cancels
    glm = smf.glm("y ~ x + z", data=data).fit()
    a = fme.ame(ols, data, {"x": 1}, vcov="unconditional")["std_error"].iloc[0]
    assert fme.ame(glm, data, {"x": 1}, vcov="unconditional")["std_error"].iloc[0] == pytest.approx(a, rel=1e-10)


def test_avg_slopes_of_a_linear_term_is_the_hc0_sandwich(data, ols):
    t = fme.avg_slopes(ols, data, variables="x", vcov="unconditional")
    assert t["std_error"].iloc[0] == pytest.approx(np.sqrt(ols.cov_HC0[1, 1]), rel=1e-6)
    assert t["inference"].iloc[0] == "delta (unconditional)"


class _Protocol:
    """A model with parameters and their covariance but no per-row scores."""

    def get_coef(self):
        return np.array([1.0, 2.0])

    def get_vcov(self):
        return np.diag([0.04, 0.09])

    def get_predict(self, params, data):
        return params[0] + params[1] * data["x"].to_numpy() ** 2

    def predict(self, data):
        return self.get_predict(self.get_coef(), data)


class _ProtocolOLS:
    """The get_coef/get_vcov/get_predict protocol around an OLS fit, with its per-row influence by numpy."""

    def __init__(self, data):
        self.X = np.column_stack([np.ones(len(data)), data["x"], data["z"]])
        y = data["y"].to_numpy()
        self.coef = np.linalg.lstsq(self.X, y, rcond=None)[0]
        e = y - self.X @ self.coef
        self.influence = (self.X * e[:, None]) @ np.linalg.inv(self.X.T @ self.X)

    def get_coef(self):
        return self.coef

    def get_vcov(self):
        return self.influence.T @ self.influence

    def get_predict(self, params, data):
        return params[0] + params[1] * data["x"].to_numpy() + params[2] * data["z"].to_numpy()

    def predict(self, data):
        return self.get_predict(self.coef, data)

    def get_influence(self):
        return self.influence


def test_protocol_model_with_influence_gives_the_hc0_sandwich(data, ols):
    model = _ProtocolOLS(data)
    t = fme.ame(model, data[["x", "z", "c"]], {"x": 1}, vcov="unconditional")
    assert t["std_error"].iloc[0] == pytest.approx(np.sqrt(ols.cov_HC0[1, 1]), rel=1e-6)
    cl = fme.ame(model, data[["x", "z", "c"]], {"x": 1}, vcov={"unconditional": "HC1", "cluster": "c"})
    ref = ols.get_robustcov_results("cluster", groups=data["c"]).cov_params()
    assert cl["std_error"].iloc[0] == pytest.approx(np.sqrt(ref[1, 1]), rel=1e-6)


def test_unconditional_refusals(data, ols):
    with pytest.raises(ModelError, match="score and the model's Hessian"):
        fme.ame(_Protocol(), data[["x"]], {"x": 1}, vcov="unconditional")
    with pytest.raises(ModelError, match="estimation sample"):
        fme.ame(ols, data.iloc[:100], {"x": 1}, vcov="unconditional")
    with pytest.raises(ParameterError, match="not to one row"):
        fme.fme(ols, data, {"x": 1}, vcov="unconditional")
    with pytest.raises(ParameterError, match="inference is 'sample'"):
        fme.ame(ols, data, {"x": 1}, vcov="unconditional", inference="sample")
    with pytest.raises(ParameterError, match="'HC0' or 'HC1'"):
        fme.ame(ols, data, {"x": 1}, vcov={"unconditional": "HC3"})


def test_protocol_model_with_influence_on_dask_equals_pandas(data):
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    model, frame = _ProtocolOLS(data), data[["x", "z", "c"]]
    with dask.config.set(scheduler="synchronous"):
        D = dd.from_pandas(frame, npartitions=3)
        a = fme.ame(model, frame, {"x": 1, "z": 0.5}, vcov="unconditional")
        b = fme.ame(model, D, {"x": 1, "z": 0.5}, vcov="unconditional")
        cols = ["ame", "std_error", "conf_low", "conf_high"]
        np.testing.assert_allclose(b[cols].to_numpy(float), a[cols].to_numpy(float), rtol=1e-10)
        assert b["inference"].tolist() == a["inference"].tolist() == ["delta (unconditional)"] * 2
        # a protocol model's clusters are a column of the data, which Dask data holds in its chunks
        with pytest.raises(ParameterError, match="reads a protocol model's clusters from the data"):
            fme.ame(model, D, {"x": 1}, vcov={"unconditional": "HC0", "cluster": "c"})
        with pytest.raises(ModelError, match=r"estimation sample \(400 rows\); the data has 200 rows"):
            fme.ame(model, dd.from_pandas(frame.iloc[:200], npartitions=2), {"x": 1}, vcov="unconditional")
