"""max_linear_step: the NLM procedure reversed (paper §5.4, last paragraph)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fme.effects import fme
from fme.exceptions import ParameterError, StepError
from fme.linearity import max_linear_step


def _analytic_scale(x: np.ndarray, c: float) -> np.ndarray:
    """Largest h with NLM >= c for f = x^2, step h > 0.

    Along t in [0, 1]: f - secant = h^2 (t^2 - t), so (I) = h^4 / 30;
    f - mean has variance (I I) = x^2 h^2 / 3 + x h^3 / 3 + 4 h^4 / 45.
    NLM = c  <=>  h^2 (3 - 8(1 - c)) - 30 (1 - c) x h - 30 (1 - c) x^2 = 0.
    """
    a, b, k = 3 - 8 * (1 - c), -30 * (1 - c) * x, -30 * (1 - c) * x**2
    return (-b + np.sqrt(b**2 - 4 * a * k)) / (2 * a)


def square(d: pd.DataFrame) -> np.ndarray:
    return d["x"].to_numpy() ** 2


@pytest.mark.parametrize("c", [0.9, 0.75])
def test_quadratic_matches_closed_form(c):
    x = pd.DataFrame({"x": [1.0, 2.0, -1.0, 3.0, 0.5]}, index=list("abcde"))
    out = max_linear_step(square, x, "x", {"x": 1.0}, nlm_threshold=c, tol=1e-12)
    expected = _analytic_scale(x["x"].to_numpy(), c)
    assert out.index.tolist() == list("abcde")
    assert (out["status"] == "ok").all()
    np.testing.assert_allclose(out["scale"], expected, rtol=1e-6)
    np.testing.assert_allclose(out["step_x"], expected, rtol=1e-6)
    np.testing.assert_allclose(out["nlm"], c, atol=1e-6)
    # the answer is a crossing: the fME's NLM from fme() agrees at that step
    res = fme(square, x.iloc[[0]], {"x": float(out["scale"].iloc[0])}, nlm=True)
    np.testing.assert_allclose(res.results["nlm"], out["nlm"].iloc[0], atol=1e-12)


def test_negative_direction_and_one_row():
    x = pd.DataFrame({"x": [2.0]})
    out = max_linear_step(square, x, ["x"], [-1.0])
    # stepping down from x = 2 toward the minimum is the x = -2, h > 0 case mirrored
    np.testing.assert_allclose(out["scale"], _analytic_scale(np.array([-2.0]), 0.9), rtol=1e-6)
    np.testing.assert_allclose(out["step_x"], -out["scale"], rtol=0)


def test_statuses():
    x = pd.DataFrame({"x": [0.0, 1.0], "z": [1.0, 1.0]})
    # at x = 0 the NLM of x^2 is 0.625 for every h: nonlinear at the smallest scale
    out = max_linear_step(square, x, "x", {"x": 1.0})
    assert out["status"].tolist() == ["nonlinear at smallest scale", "ok"]
    assert np.isnan(out["scale"].iloc[0])
    np.testing.assert_allclose(out["nlm"].iloc[0], 0.625, atol=1e-12)
    # a linear model is linear at every scale
    lin = max_linear_step(lambda d: 3 * d["x"] - d["z"], x, ["x", "z"], {"x": 1.0, "z": 2.0}, max_scale=50.0)
    assert lin["status"].tolist() == ["max_scale reached"] * 2
    assert lin["scale"].tolist() == [50.0, 50.0]
    assert lin["step_z"].tolist() == [100.0, 100.0]
    np.testing.assert_allclose(lin["nlm"], 1.0, atol=1e-12)


def test_multivariate_direction_closed_form():
    """f = (x + z)^2 along v = (1, 1): the path is u = x + z moving by 2 s, so s = scale(u) / 2."""
    x = pd.DataFrame({"x": [1.0, 0.5], "z": [1.0, 2.0]})
    out = max_linear_step(lambda d: (d["x"] + d["z"]) ** 2, x, ["x", "z"], {"x": 1.0, "z": 1.0})
    u = (x["x"] + x["z"]).to_numpy()
    np.testing.assert_allclose(out["scale"], _analytic_scale(u, 0.9) / 2, rtol=1e-6)


def test_batched_not_per_row():
    calls = []

    def f(d):
        calls.append(len(d))
        return d["x"].to_numpy() ** 2

    x = pd.DataFrame({"x": np.linspace(1, 3, 200)})
    max_linear_step(f, x, "x", {"x": 1.0})
    # one call per evaluation of f(x), f(x+h) and the stacked interior nodes, each over many rows
    assert len(calls) < 3 * 80
    assert max(calls) >= 200 * 16


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(nlm_threshold=1.0), ParameterError, "nlm_threshold must be a finite number < 1"),
        (dict(min_scale=2.0, max_scale=1.0), ParameterError, "min_scale .* must be smaller"),
        (dict(growth=1.0), ParameterError, "growth must be > 1"),
        (dict(max_scale=-1.0), ParameterError, "max_scale must be a finite positive"),
    ],
)
def test_bad_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        max_linear_step(square, pd.DataFrame({"x": [1.0]}), "x", {"x": 1.0}, **kwargs)


def test_bad_direction():
    x = pd.DataFrame({"x": [1.0], "g": pd.Categorical(["a"])})
    with pytest.raises(StepError, match="one component for each of the features"):
        max_linear_step(square, x, "x", {"y": 1.0})
    with pytest.raises(StepError, match="step of feature 'x' is 0"):
        max_linear_step(square, x, "x", {"x": 0.0})
    with pytest.raises(StepError, match="categorical"):
        max_linear_step(square, x, "g", {"g": "a"})


def test_max_linear_step_with_nan_names_the_feature():
    x = pd.DataFrame({"x": [1.0, np.nan, 2.0], "y": [0.0, 1.0, 2.0]}, index=["a", "b", "c"])
    with pytest.raises(
        StepError,
        match=r"feature 'x' has 1 missing or infinite value\(s\) \(first at index label "
        r"'b'\).*dropna\(subset=\['x'\]\)",
    ):
        max_linear_step(lambda d: d["x"] ** 2, x, "x", {"x": 1.0})


def test_tree_model_uses_the_exact_nlm_by_default():
    """nlm_method='auto' (the default) is exact for trees: the search sees the model's true NLM."""
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 2)), columns=["a", "b"])
    rf = RandomForestRegressor(20, max_depth=5, random_state=0).fit(X, X["a"] ** 2 + 0.1 * X["b"])
    x = X.iloc[:8]
    auto = max_linear_step(rf, x, "a", {"a": 1.0}, min_scale=0.05, max_scale=4.0, tol=1e-6)
    exact = max_linear_step(rf, x, "a", {"a": 1.0}, min_scale=0.05, max_scale=4.0, tol=1e-6, nlm_method="exact")
    pd.testing.assert_frame_equal(auto, exact)
    assert (auto["status"] == "ok").sum() >= 3
    for label, row in auto.iterrows():
        if row["status"] != "ok":
            continue
        res = fme(rf, x.loc[[label]], {"a": row["step_a"]}, nlm=True, nlm_method="exact")
        got = res.results["nlm"].iloc[0]
        assert (np.isnan(got) and np.isnan(row["nlm"])) or got == pytest.approx(row["nlm"], rel=1e-12, abs=1e-12)
        assert np.isnan(got) or got >= 0.9
    gl = max_linear_step(rf, x, "a", {"a": 1.0}, min_scale=0.05, max_scale=4.0, tol=1e-6, nlm_method="gauss-legendre")
    assert not np.allclose(gl["nlm"].to_numpy(), auto["nlm"].to_numpy(), equal_nan=True)  # quadrature error
