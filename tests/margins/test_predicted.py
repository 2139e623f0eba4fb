"""fme.predictions / fme.avg_predictions against statsmodels' own get_prediction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

import fme


@pytest.fixture(scope="module")
def glm():
    import statsmodels.api as sm

    rng = np.random.default_rng(4)
    n = 300
    d = pd.DataFrame({"x": rng.normal(size=n), "g": rng.choice(["a", "b", "c"], n)})
    d["y"] = rng.poisson(np.exp(0.3 + 0.5 * d["x"]))
    return smf.glm("y ~ x + C(g)", data=d, family=sm.families.Poisson()).fit(), d


def test_row_predictions_equal_statsmodels_get_prediction(glm):
    m, d = glm
    out = fme.predictions(m, d)
    ref = m.get_prediction(d).summary_frame()
    assert out.index.equals(d.index)
    np.testing.assert_allclose(out["estimate"], ref["mean"], rtol=1e-10)
    np.testing.assert_allclose(out["std_error"], ref["mean_se"], rtol=1e-7)
    assert (out["inference"] == "delta").all()


def test_average_prediction_and_groups(glm):
    m, d = glm
    out = fme.avg_predictions(m, d, by="g")
    assert list(out["g"]) == ["a", "b", "c"]
    for _, row in out.iterrows():
        sub = d[d["g"] == row["g"]]
        assert list(m.params.index) == ["Intercept", "C(g)[T.b]", "C(g)[T.c]", "x"]
        D = np.column_stack([np.ones(len(sub)), sub["g"] == "b", sub["g"] == "c", sub["x"]]).astype(float)
        mu = np.exp(D @ m.params.to_numpy())
        grad = (mu[:, None] * D).mean(axis=0)  # d mean(exp(eta)) / d beta, by hand
        assert row["estimate"] == pytest.approx(mu.mean(), rel=1e-10)
        assert row["std_error"] == pytest.approx(np.sqrt(grad @ m.cov_params().to_numpy() @ grad), rel=1e-9)
        assert row["n"] == len(sub)
    whole = fme.avg_predictions(m, d)
    assert whole["estimate"].iloc[0] == pytest.approx(m.predict(d).mean(), rel=1e-10)


def test_average_prediction_delta_se_by_hand():
    rng = np.random.default_rng(6)
    d = pd.DataFrame({"x": rng.normal(size=200)})
    d["y"] = 1 + 2 * d["x"] + rng.normal(size=200)
    m = smf.ols("y ~ x", data=d).fit()
    out = fme.avg_predictions(m, d)
    g = np.array([1.0, d["x"].mean()])
    assert out["estimate"].iloc[0] == pytest.approx(m.params @ g, rel=1e-10)
    assert out["std_error"].iloc[0] == pytest.approx(np.sqrt(g @ m.cov_params().to_numpy() @ g), rel=1e-10)


def test_sample_inference_for_a_model_without_covariance():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(1)
    X = pd.DataFrame({"x": rng.normal(size=100)})
    lr = LinearRegression().fit(X, 2 * X["x"])
    out = fme.avg_predictions(lr, X, inference="sample")
    p = lr.predict(X)
    assert out["estimate"].iloc[0] == pytest.approx(p.mean(), rel=1e-12)
    assert out["std_error"].iloc[0] == pytest.approx(p.std(ddof=1) / np.sqrt(100), rel=1e-10)
    assert out["conf_high"].iloc[0] == pytest.approx(p.mean() + stats.t.ppf(0.975, 99) * p.std(ddof=1) / 10, rel=1e-10)
    rows = fme.predictions(lr, X, inference="sample")
    assert rows["std_error"].isna().all() and (rows["inference"] == "none").all()
    with pytest.raises(fme.ParameterError, match="bootstrap"):
        fme.avg_predictions(lr, X, inference="bootstrap")
