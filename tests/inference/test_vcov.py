"""vcov= and df= against statsmodels' own robust, cluster and t-based inference.

For OLS the AME of a unit step of x_k is b_k, so fme's delta SEs under each covariance must equal
statsmodels' bse of a fit with that cov_type, and df='residual' its t-based p-values and intervals.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import fme


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(12)
    n = 300
    d = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n), "c": rng.integers(0, 25, n)})
    d["y"] = 1 + 0.6 * d["x1"] - 0.2 * d["x2"] + rng.normal(size=n) * (1 + np.abs(d["x1"]))
    d["z"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-(0.5 * d["x1"])))).astype(float)
    return d


@pytest.mark.parametrize("cov_type", ["HC0", "HC1", "HC2", "HC3"])
def test_robust_covariances_equal_statsmodels(data, cov_type):
    m = smf.ols("y ~ x1 + x2", data=data).fit()
    before = m.cov_params().copy()
    t = fme.ame(m, data, {"x1": 1, "x2": 1}, vcov=cov_type)
    ref = smf.ols("y ~ x1 + x2", data=data).fit(cov_type=cov_type)
    np.testing.assert_allclose(t["std_error"], ref.bse[["x1", "x2"]], rtol=1e-10)
    assert (t["inference"] == f"delta ({cov_type})").all()
    pd.testing.assert_frame_equal(m.cov_params(), before)  # the caller's model is untouched


def test_cluster_robust_equals_statsmodels(data):
    m = smf.ols("y ~ x1 + x2", data=data).fit()
    t = fme.ame(m, data, {"x1": 1}, vcov={"cluster": "c"})
    ref = smf.ols("y ~ x1 + x2", data=data).fit(cov_type="cluster", cov_kwds={"groups": data["c"]})
    assert t["std_error"].iloc[0] == pytest.approx(ref.bse["x1"], rel=1e-10)
    assert t["inference"].iloc[0] == "delta (cluster: c)"


def test_a_logit_with_robust_covariance(data):
    lg = smf.logit("z ~ x1 + x2", data=data).fit(disp=0)
    robust = smf.logit("z ~ x1 + x2", data=data).fit(disp=0, cov_type="HC0")
    got = fme.ame(lg, data, {"x1": 1}, vcov="HC0")
    want = fme.ame(robust, data, {"x1": 1})
    assert got["ame"].iloc[0] == pytest.approx(want["ame"].iloc[0], rel=1e-9)
    assert got["std_error"].iloc[0] == pytest.approx(want["std_error"].iloc[0], rel=1e-7)


def test_a_given_matrix_and_fme_fme(data):
    m = smf.ols("y ~ x1 + x2", data=data).fit()
    V = np.diag([0.04, 0.09, 0.16])
    t = fme.ame(m, data, {"x1": 1, "x2": 1}, vcov=V)
    np.testing.assert_allclose(t["std_error"], [0.3, 0.4], rtol=1e-12)
    assert fme.fme(m, data, {"x1": 1}, vcov="HC3").std_error == pytest.approx(
        smf.ols("y ~ x1 + x2", data=data).fit(cov_type="HC3").bse["x1"], rel=1e-10
    )


def test_residual_df_gives_statsmodels_t_inference(data):
    m = smf.ols("y ~ x1 + x2", data=data).fit()
    t = fme.ame(m, data, {"x1": 1}, df="residual")
    assert t["p_value"].iloc[0] == pytest.approx(m.pvalues["x1"], rel=1e-8)
    lo, hi = m.conf_int().loc["x1"]
    assert t["conf_low"].iloc[0] == pytest.approx(lo, rel=1e-9) and t["conf_high"].iloc[0] == pytest.approx(
        hi, rel=1e-9
    )
    s = fme.avg_slopes(m, data, "x1", df=10)
    from scipy import stats

    half = stats.t.ppf(0.975, 10) * s["std_error"].iloc[0]
    assert s["conf_high"].iloc[0] - s["estimate"].iloc[0] == pytest.approx(half, rel=1e-8)


def test_bad_covariance_choices_name_the_fix(data):
    from sklearn.linear_model import LinearRegression

    m = smf.ols("y ~ x1 + x2", data=data).fit()
    with pytest.raises(fme.ParameterError, match="HC0"):
        fme.ame(m, data, {"x1": 1}, vcov="HC9")
    with pytest.raises(fme.ParameterError, match="training data"):
        fme.ame(m, data, {"x1": 1}, vcov={"cluster": "nope"})
    with pytest.raises(fme.ParameterError, match="3 x 3"):
        fme.ame(m, data, {"x1": 1}, vcov=np.eye(2))
    lr = LinearRegression().fit(data[["x1", "x2"]], data["y"])
    with pytest.raises(fme.ModelError, match="parameter covariance"):
        fme.ame(lr, data[["x1", "x2"]], {"x1": 1}, vcov="HC3")
    with pytest.raises(fme.ParameterError, match="df must be"):
        fme.ame(m, data, {"x1": 1}, df="fitted")
