"""The non-linearity measure (paper §5.4):

    NLM = 1 - int (f(gamma(t)) - secant(t))^2 dt / int (f(gamma(t)) - fbar)^2 dt

checked against closed forms, adaptive quadrature (scipy.integrate.quad) and an
independent loop implementation of the composite Simpson 3/8 rule of fmeffects.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate

import fme
from fme.exceptions import ParameterError, StepError
from fme.nlm import nlm_from_path, quadrature_rule


# ------------------------------------------------------------ references
class _Col:
    def __init__(self, value: float):
        self.value = value

    def to_numpy(self, dtype=None):
        return np.array([self.value], dtype=float)


def path_function(model, row: pd.Series, steps: dict):
    """t -> f(x + t h) for one observation; the model sees a minimal column mapping
    (``d[name].to_numpy()``), which keeps adaptive quadrature cheap."""

    def f(t: float) -> float:
        point = {c: _Col(float(row[c]) + t * steps.get(c, 0.0)) for c in row.index}
        return float(np.asarray(model(point), dtype=float).ravel()[0])

    return f


def nlm_quad(f) -> float:
    """NLM by adaptive quadrature."""
    opts = dict(epsabs=1e-14, epsrel=1e-13, limit=200)
    f0, f1 = f(0.0), f(1.0)
    fbar = integrate.quad(f, 0, 1, **opts)[0]
    num = integrate.quad(lambda t: (f(t) - (f0 + t * (f1 - f0))) ** 2, 0, 1, **opts)[0]
    den = integrate.quad(lambda t: (f(t) - fbar) ** 2, 0, 1, **opts)[0]
    return 1.0 - num / den


def nlm_simpson38_reference(f, k: int) -> float:
    """Composite Simpson 3/8 as in fmeffects: subinterval i has nodes (i-1)/k + {0,1/3,2/3,1}/k
    with weights 1/(8k) * (1,3,3,1); fbar with the same rule, then both integrals."""
    nodes, weights = [], []
    for i in range(1, k + 1):
        for j, c in enumerate((1.0, 3.0, 3.0, 1.0)):
            nodes.append((i - 1) / k + (j / 3.0) / k)
            weights.append(c / (8.0 * k))
    values = [f(t) for t in nodes]
    f0, f1 = f(0.0), f(1.0)
    fbar = sum(w * v for w, v in zip(weights, values))
    num = sum(w * (v - (f0 + t * (f1 - f0))) ** 2 for w, v, t in zip(weights, values, nodes))
    den = sum(w * (v - fbar) ** 2 for w, v in zip(weights, values))
    return 1.0 - num / den


def quadratic_nlm(a: float, x: float, h: float) -> float:
    """Closed form for f = a x^2: f(gamma(t)) = A t^2 + B t + C with A = a h^2, B = 2 a x h."""
    A, B = a * h * h, 2 * a * x * h
    return 1.0 - (A * A / 30.0) / (4 * A * A / 45.0 + B * B / 12.0 + A * B / 6.0)


@pytest.fixture(scope="module")
def grid():
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {"x1": rng.uniform(-2, 2, 8), "x2": rng.uniform(-1, 1, 8), "x3": rng.uniform(0, 3, 8)}, index=list("abcdefgh")
    )


def sq(d):
    return d["x1"].to_numpy(dtype=float) ** 2


# ------------------------------------------------------------ closed forms
def test_analytic_quadratic_example():
    res = fme.fme(sq, pd.DataFrame({"x1": [-2.0]}), {"x1": 1.0}, nlm=True)
    expected = 1 - (1 / 30) / (34 / 45)
    assert expected == pytest.approx(0.9558823529411764, abs=1e-15)
    assert res.results["nlm"].iloc[0] == pytest.approx(expected, abs=1e-12)
    assert res.anlm == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("points", [None, 3, 5, 30])
def test_quadratic_exact_for_gauss_legendre(grid, points):
    for h in (0.3, -1.7, 4.0):
        res = fme.fme(sq, grid, {"x1": h}, nlm=True, nlm_points=points)
        expected = [quadratic_nlm(1.0, x, h) for x in grid["x1"]]
        np.testing.assert_allclose(res.results["nlm"].to_numpy(), expected, rtol=0, atol=1e-10)


def test_gauss_legendre_two_points_not_exact_for_quartic():
    # 2 nodes integrate cubics exactly but not the quartic (t^2 - t)^2: the rule is really used
    res = fme.fme(sq, pd.DataFrame({"x1": [-2.0]}), {"x1": 1.0}, nlm=True, nlm_points=2)
    assert abs(res.results["nlm"].iloc[0] - (1 - (1 / 30) / (34 / 45))) > 1e-4


@pytest.mark.parametrize("method", ["gauss-legendre", "simpson38"])
def test_linear_paths_give_one(grid, method):
    def f(d):  # linear in x1, x2; strongly non-linear in the unstepped x3
        return 2.5 * d["x1"].to_numpy() - 0.75 * d["x2"].to_numpy() + np.exp(d["x3"].to_numpy()) * 10

    for steps in ({"x1": 1.3}, {"x2": -0.4}, {"x1": 0.2, "x2": 3.0}):
        res = fme.fme(f, grid, steps, nlm=True, nlm_method=method)
        np.testing.assert_allclose(res.results["nlm"].to_numpy(), 1.0, rtol=0, atol=1e-12)


def test_sine_over_full_period_is_minus_two():
    # f = -cos(2 pi t) along the path: I = 3/2, II = 1/2
    res = fme.fme(
        lambda d: np.sin(d["x1"].to_numpy()),
        pd.DataFrame({"x1": [-np.pi / 2]}),
        {"x1": 2 * np.pi},
        nlm=True,
        nlm_points=30,
    )
    assert res.results["nlm"].iloc[0] == pytest.approx(-2.0, abs=1e-10)
    res = fme.fme(lambda d: np.sin(d["x1"].to_numpy()), pd.DataFrame({"x1": [0.0]}), {"x1": np.pi}, nlm=True)
    assert res.results["nlm"].iloc[0] == pytest.approx(1 - 0.5 / (0.5 - 4 / np.pi**2), abs=1e-9)
    assert res.results["nlm"].iloc[0] < 0


# ------------------------------------------------------------ adaptive quadrature
SMOOTH = {
    "sin": (lambda d: np.sin(1.3 * d["x1"].to_numpy()) + d["x2"].to_numpy(), {"x1": 1.5}),
    "exp": (lambda d: np.exp(0.6 * d["x1"].to_numpy() - 0.4 * d["x2"].to_numpy()), {"x1": 1.0, "x2": 0.8}),
    "rbf": (
        lambda d: (
            np.exp(-((d["x1"].to_numpy() - 0.3) ** 2 + (d["x2"].to_numpy() + 0.2) ** 2) / 0.8)
            + 0.3 * np.exp(-((d["x1"].to_numpy() + 1) ** 2) / 0.5)
        ),
        {"x1": 1.2, "x2": -0.6},
    ),
    "logistic": (lambda d: 1 / (1 + np.exp(-3 * d["x1"].to_numpy() * d["x3"].to_numpy())), {"x1": 0.9}),
}


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_gauss_legendre_matches_adaptive_quadrature(grid, name):
    f, steps = SMOOTH[name]
    res = fme.fme(f, grid, steps, nlm=True)
    for label, row in grid.iterrows():
        ref = nlm_quad(path_function(f, row, steps))
        assert res.results.loc[label, "nlm"] == pytest.approx(ref, abs=1e-8), (name, label)


def test_rbf_svr_matches_adaptive_quadrature(df):
    from sklearn.svm import SVR

    Xs = df[["x1", "x2", "x3"]]
    svr = SVR(kernel="rbf", gamma=0.5, C=3.0).fit(Xs, df["y"])
    sub = Xs.iloc[:6]
    steps = {"x1": 0.8, "x3": -0.5}
    res = fme.fme(svr, sub, steps, nlm=True)
    sv, coef, gamma, b = svr.support_vectors_, svr.dual_coef_.ravel(), 0.5, float(svr.intercept_[0])

    def kernel_expansion(d):  # the RBF-SVR prediction written out by hand
        x = np.array([d[c].to_numpy()[0] for c in ("x1", "x2", "x3")])
        return np.array([coef @ np.exp(-gamma * ((sv - x) ** 2).sum(axis=1)) + b])

    for label, row in sub.iterrows():
        ref = nlm_quad(path_function(kernel_expansion, row, steps))
        assert res.results.loc[label, "nlm"] == pytest.approx(ref, abs=1e-8)


# ------------------------------------------------------------ Simpson 3/8 as in fmeffects
@pytest.mark.parametrize("k", [1, 2, 5, 13])
@pytest.mark.parametrize("name", ["sin", "exp", "rbf"])
def test_simpson38_matches_reference_rule(grid, k, name):
    f, steps = SMOOTH[name]
    res = fme.fme(f, grid, steps, nlm=True, nlm_method="simpson38", nlm_intervals=k)
    assert res.nlm_method == "simpson38" and res.nlm_nodes == 3 * k + 1
    for label, row in grid.iloc[:4].iterrows():
        ref = nlm_simpson38_reference(path_function(f, row, steps), k)
        assert res.results.loc[label, "nlm"] == pytest.approx(ref, abs=1e-12), (name, k, label)


def test_simpson38_default_is_one_interval(grid):
    f, steps = SMOOTH["rbf"]
    a = fme.fme(f, grid, steps, nlm=True, nlm_method="simpson38")
    b = fme.fme(f, grid, steps, nlm=True, nlm_method="simpson38", nlm_intervals=1)
    np.testing.assert_array_equal(a.results["nlm"].to_numpy(), b.results["nlm"].to_numpy())
    row = grid.iloc[0]
    assert a.results["nlm"].iloc[0] == pytest.approx(
        nlm_simpson38_reference(path_function(f, row, steps), 1), abs=1e-12
    )


def test_quadrature_rules():
    s = quadrature_rule("simpson38")
    np.testing.assert_array_equal(s.nodes, [0, 1 / 3, 2 / 3, 1])
    np.testing.assert_array_equal(s.weights, np.array([1, 3, 3, 1]) / 8)
    assert s.n_evaluations == 2
    s2 = quadrature_rule("simpson38", intervals=2)
    np.testing.assert_allclose(s2.weights, np.array([1, 3, 3, 2, 3, 3, 1]) / 16, rtol=0, atol=1e-16)
    g = quadrature_rule()
    assert g.nodes.size == 16 and g.n_evaluations == 16
    assert g.weights.sum() == pytest.approx(1.0, abs=1e-14)
    assert np.all((g.nodes > 0) & (g.nodes < 1))
    # exact for degree 2m - 1
    g3 = quadrature_rule(points=3)
    assert float(np.sum(g3.weights * g3.nodes**5)) == pytest.approx(1 / 6, abs=1e-15)


@pytest.mark.parametrize(
    "kwargs, phrase",
    [
        (dict(nlm_method="trapezoid"), "unknown nlm_method"),
        (dict(nlm_points=0), "nlm_points must be an integer >= 2"),
        (dict(nlm_points=1), "nlm_points must be an integer >= 2"),
        (dict(nlm_points=2.5), "nlm_points must be an integer"),
        (dict(nlm_method="simpson38", nlm_intervals=0), "nlm_intervals must be an integer >= 1"),
        (dict(nlm_method="simpson38", nlm_points=4), "nlm_points applies to nlm_method='gauss-legendre'"),
        (dict(nlm_method="gauss-legendre", nlm_intervals=4), "nlm_intervals applies to nlm_method='simpson38'"),
        (dict(nlm_method="exact"), "nlm_method=.exact. is not available for function"),
        (dict(nlm_method="gauss-kronrod", nlm_points=4), "do not apply to nlm_method=.gauss-kronrod."),
        (dict(nlm_tol=-1.0), "nlm_tol must be a finite number >= 0"),
        (dict(nlm_max_level=13), "nlm_max_level must be an integer in"),
    ],
)
def test_bad_quadrature_arguments(grid, kwargs, phrase):
    with pytest.raises(ParameterError, match=phrase):
        fme.fme(sq, grid, {"x1": 1.0}, nlm=True, **kwargs)


def test_nlm_arguments_without_nlm(grid):
    with pytest.raises(ParameterError, match="nlm=False; pass nlm=True"):
        fme.fme(sq, grid, {"x1": 1.0}, nlm_points=5)


def test_nlm_with_categorical_step_is_an_error(df):
    data = df[["x1", "cat"]]
    before = data.copy(deep=True)
    with pytest.raises(StepError, match=r"numeric path only; feature\(s\) \['cat'\]"):
        fme.fme(lambda d: d["x1"].to_numpy(), data, {"x1": 1.0, "cat": "a"}, nlm=True)
    pd.testing.assert_frame_equal(data, before)


# ------------------------------------------------------------ undefined NLMs
def test_constant_path_gives_nan_and_is_counted(grid):
    def f(d):  # constant in x1 where x2 > 0, linear otherwise; huge offset
        x1, x2 = d["x1"].to_numpy(), d["x2"].to_numpy()
        return 1e6 + np.where(x2 > 0, 0.0, x1)

    res = fme.fme(f, grid, {"x1": 0.5}, nlm=True)
    flat = (grid["x2"] > 0).to_numpy()
    assert 0 < flat.sum() < len(grid)
    nlm = res.results["nlm"].to_numpy()
    assert np.isnan(nlm[flat]).all()
    np.testing.assert_allclose(nlm[~flat], 1.0, atol=1e-9)
    np.testing.assert_array_equal(res.results["fme"].to_numpy()[flat], 0.0)
    assert res.n_nlm_undefined == flat.sum()
    assert res.anlm == pytest.approx(1.0, abs=1e-9)
    assert f"undefined {flat.sum()}" in res.summary()


def test_all_paths_constant(grid):
    res = fme.fme(lambda d: np.full(len(d), 4.2), grid, {"x1": 1.0}, nlm=True)
    assert res.results["nlm"].isna().all() and np.isnan(res.anlm)
    assert res.n_nlm_undefined == len(grid)
    assert f"undefined {len(grid)}" in res.summary()


def test_nlm_from_path_direct():
    rule = quadrature_rule("simpson38")
    f0 = np.array([0.0, 1.0, 5.0])
    f1 = np.array([1.0, 1.0, 5.0])
    interior = np.array([[1 / 3, 2.0, 5.0], [2 / 3, 0.0, 5.0]])
    out = nlm_from_path(f0, f1, interior, rule)
    assert out[0] == pytest.approx(1.0, abs=1e-15)
    # second path: values 1, 2, 0, 1; secant flat at 1 -> I = (3/8)(1 + 1) = 0.75
    vals, w = np.array([1.0, 2.0, 0.0, 1.0]), rule.weights
    fbar = np.sum(w * vals)
    assert out[1] == pytest.approx(1 - 0.75 / np.sum(w * (vals - fbar) ** 2), abs=1e-15)
    assert np.isnan(out[2])


def test_nlm_upper_bound_and_tree_model(gbr, Xnum):
    res = fme.fme(gbr, Xnum, {"x1": 0.8, "x3": 1.0}, nlm=True)
    nlm = res.results["nlm"].to_numpy()
    ok = np.isfinite(nlm)
    assert ok.sum() > 0
    assert np.all(nlm[ok] <= 1.0)
    assert res.anlm == pytest.approx(float(np.mean(nlm[ok])), rel=1e-14)


def test_multiclass_all_nlm_equals_single_class(multiclass, Xnum):
    allc = fme.fme(multiclass, Xnum, {"x2": 1.5}, nlm=True, target_class="all")
    one = fme.fme(multiclass, Xnum, {"x2": 1.5}, nlm=True, target_class="hi")
    np.testing.assert_allclose(allc.results["nlm_hi"].to_numpy(), one.results["nlm"].to_numpy(), rtol=0, atol=1e-13)
    assert allc.anlm["hi"] == pytest.approx(one.anlm, abs=1e-13)


# ------------------------------------------------------------ robust summaries, flat paths, bounds
def _near_flat(d):  # near-flat (moves by ~1e-9) where x2 > 0, quadratic elsewhere, exactly constant where x3 > 2.5
    x1, x2, x3 = (d[c].to_numpy() for c in ("x1", "x2", "x3"))
    out = np.where(x2 > 0, 0.5 + 1e-9 * np.sin(5 * x1), x1**2)
    return np.where(x3 > 2.5, 0.25, out)


def test_flat_paths_are_undefined_and_counted_apart(grid):
    # the relative rule is opt-in: nlm_flat_tol > 0
    f = _near_flat
    res = fme.fme(f, grid, {"x1": 0.7}, nlm=True, nlm_method="gauss-legendre", nlm_flat_tol=1e-6)
    x2, x3 = grid["x2"].to_numpy(), grid["x3"].to_numpy()
    const, flat = x3 > 2.5, (x2 > 0) & ~(x3 > 2.5)
    assert const.sum() >= 1 and flat.sum() >= 1 and (~const & ~flat).sum() >= 1
    st = res.results["nlm_status"].to_numpy()
    np.testing.assert_array_equal(st[const], "constant")
    np.testing.assert_array_equal(st[flat], "flat")
    np.testing.assert_array_equal(st[~const & ~flat], "ok")
    assert np.isnan(res.results["nlm"].to_numpy()[const | flat]).all()
    assert res.n_nlm_flat == flat.sum() and res.n_nlm_constant == const.sum()
    assert res.n_nlm_undefined == (flat | const).sum()
    expected = [quadratic_nlm(1.0, x, 0.7) for x in grid["x1"][~const & ~flat]]
    assert res.anlm == pytest.approx(np.mean(expected), abs=1e-12)
    assert f"flat {flat.sum()}" in res.summary() and f"constant {const.sum()}" in res.summary()
    # without the relative threshold the near-flat paths get (meaningless) NLMs
    raw = fme.fme(f, grid, {"x1": 0.7}, nlm=True, nlm_method="gauss-legendre", nlm_flat_tol=0.0)
    assert np.isfinite(raw.results["nlm"].to_numpy()[flat]).all() and raw.n_nlm_flat == 0


def test_small_scale_paths_keep_their_nlm_by_default(grid):
    """A path varying by 1e-9 around 0.5 is ~10^7 ulps from rounding; its NLM is defined
    (that of sin(5 x1) along the path: the NLM is invariant to f -> a + b f) whatever the other rows do."""
    res = fme.fme(_near_flat, grid, {"x1": 0.7}, nlm=True, nlm_method="gauss-legendre")
    x2, x3 = grid["x2"].to_numpy(), grid["x3"].to_numpy()
    const, small = x3 > 2.5, (x2 > 0) & ~(x3 > 2.5)
    st = res.results["nlm_status"].to_numpy()
    np.testing.assert_array_equal(st[const], "constant")
    np.testing.assert_array_equal(st[~const], "ok")
    assert res.n_nlm_flat == 0
    for i in np.flatnonzero(small):
        ref = nlm_quad(lambda t, x=grid["x1"].iloc[i]: np.sin(5 * (x + 0.7 * t)))
        # rounding of 0.5 + 1e-9 sin(.) (ulp 1.1e-16 against an SD ~ 1e-9): about 1e-7 in the NLM
        assert res.results["nlm"].iloc[i] == pytest.approx(ref, abs=1e-6)


@pytest.mark.parametrize("method", ["gauss-legendre", "gauss-kronrod"])
def test_rounding_level_paths_are_flat(grid, method):
    """Flat = the path's SD is at most FLAT_ULPS eps (|f(x)| + max |f - f(x)|): rounding of its own values."""
    from fme.nlm import CONSTANT_ULPS, FLAT_ULPS

    eps = np.finfo(float).eps
    x = grid["x1"].to_numpy()

    def run(amp):
        def f(d):
            return 0.5 + amp * d["x1"].to_numpy()  # linear: SD along the path |amp h| / sqrt(12)

        return fme.fme(f, grid, {"x1": 1.0}, nlm=True, nlm_method=method)

    level = 0.5 + np.maximum(0.0, 0.0)  # scale ~ 0.5 (+ |amp| h, negligible)
    for ulps, status in ((0.5 * (CONSTANT_ULPS + FLAT_ULPS), "flat"), (8 * FLAT_ULPS, "ok")):
        amp = ulps * eps * level * np.sqrt(12.0)
        res = run(amp)
        np.testing.assert_array_equal(res.results["nlm_status"].to_numpy(), status, err_msg=str(ulps))
        if status == "ok":  # linear: NLM 1 up to the values' rounding (ulps / 8 FLAT_ULPS of the SD)
            np.testing.assert_allclose(res.results["nlm"].to_numpy(), 1.0, atol=0.05)
        else:
            assert res.results["nlm"].isna().all() and res.n_nlm_flat == len(x)


# mtcars (Henderson and Velleman 1981; public domain): hp, wt, am of the 32 cars
_MTCARS = np.array(
    [
        [110, 2.620, 1],
        [110, 2.875, 1],
        [93, 2.320, 1],
        [110, 3.215, 0],
        [175, 3.440, 0],
        [105, 3.460, 0],
        [245, 3.570, 0],
        [62, 3.190, 0],
        [95, 3.150, 0],
        [123, 3.440, 0],
        [123, 3.440, 0],
        [180, 4.070, 0],
        [180, 3.730, 0],
        [180, 3.780, 0],
        [205, 5.250, 0],
        [215, 5.424, 0],
        [230, 5.345, 0],
        [66, 2.200, 1],
        [52, 1.615, 1],
        [65, 1.835, 1],
        [97, 2.465, 0],
        [150, 3.520, 0],
        [150, 3.435, 0],
        [245, 3.840, 0],
        [175, 3.845, 0],
        [66, 1.935, 1],
        [91, 2.140, 1],
        [113, 1.513, 1],
        [264, 3.170, 1],
        [175, 2.770, 1],
        [335, 3.570, 1],
        [109, 2.780, 1],
    ]
)


def _logistic_path_nlm(eta0: float, deta: float, m: int = 200_000) -> float:
    """NLM of t -> expit(eta0 + t deta) by composite Simpson on 2m intervals (float64), values divided by
    f(0) first (the NLM is invariant to f -> b f): error O(m^-4) relative, ~1e-20 here."""
    from scipy.special import expit

    t = np.linspace(0.0, 1.0, 2 * m + 1)
    w = np.full(t.size, 2.0)
    w[1::2] = 4.0
    w[0] = w[-1] = 1.0
    w /= 3.0 * (2 * m)
    f = expit(eta0 + t * deta) / expit(eta0)
    sec = f[0] + t * (f[-1] - f[0])
    fbar = np.sum(w * f)
    return 1.0 - np.sum(w * (f - sec) ** 2) / np.sum(w * (f - fbar) ** 2)


@pytest.mark.parametrize("method", ["gauss-kronrod", "gauss-legendre", "simpson38"])
def test_mtcars_logit_small_probabilities_have_their_nlm(method):
    """On R fmeffects' own example: glm(am ~ hp + wt, binomial) on mtcars, step hp + 10. The
    heavy cars have P(am = 1) ~ 1e-8 (about 3e-8 for the Lincoln); the relative flat rule set their NLM to
    NaN although it is well defined (fmeffects: 0.985): here it equals an independent dense Simpson rule."""
    import statsmodels.api as sm
    from scipy.special import expit

    data = pd.DataFrame(_MTCARS, columns=["hp", "wt", "am"])
    X = sm.add_constant(data[["hp", "wt"]])
    fit = sm.Logit(data["am"], X).fit(disp=0)
    b = fit.params.to_numpy()
    np.testing.assert_allclose(b, [18.86630, 0.03626, -8.08348], atol=5e-5)  # R's glm estimates

    def model(d):
        return expit(b[0] + b[1] * d["hp"].to_numpy() + b[2] * d["wt"].to_numpy())

    res = fme.fme(model, data[["hp", "wt"]], {"hp": 10}, nlm=True, nlm_method=method)
    eta = b[0] + b[1] * data["hp"].to_numpy() + b[2] * data["wt"].to_numpy()
    p = expit(eta)
    tiny = p < 1e-7
    assert tiny.sum() >= 2 and p.min() < 5e-8
    st = res.results["nlm_status"].to_numpy()
    assert (st == "ok").all(), st
    nlm = res.results["nlm"].to_numpy()
    ref = np.array([_logistic_path_nlm(e, 10 * b[1]) for e in eta])
    # Gauss-Kronrod/Legendre on this analytic path: ~1e-15; Simpson 3/8 with one interval: its own rule.
    # Near p = 1 the values' rounding (eps against a change |fME| ~ 1e-5) bounds both to ~eps / |fME|.
    if method == "simpson38":
        assert np.abs(nlm[tiny] - 0.985).max() < 5e-3
    else:
        np.testing.assert_allclose(nlm[tiny], ref[tiny], rtol=0, atol=1e-12)
        fm = np.abs(res.results["fme"].to_numpy())
        assert np.all(np.abs(nlm - ref) <= 1e-12 + 64 * np.finfo(float).eps * np.maximum(p, p + fm) / fm)
    assert res.n_nlm_flat == 0 and res.n_nlm_undefined == 0
    # the opt-in relative rule is what discarded them
    old = fme.fme(model, data[["hp", "wt"]], {"hp": 10}, nlm=True, nlm_method=method, nlm_flat_tol=1e-6)
    assert (old.results["nlm_status"].to_numpy()[tiny] == "flat").any()


def test_median_and_share_linear_resist_one_extreme_row(grid):
    # x1^2 over a path crossing its minimum gives very negative NLMs for one row only
    data = grid.copy()
    data.loc["a", "x1"] = -0.35  # path [-0.35, 0.35]: symmetric around the minimum, NLM << 0
    res = fme.fme(sq, data, {"x1": 0.7}, nlm=True, nlm_linear_threshold=0.5)
    v = np.array([quadratic_nlm(1.0, x, 0.7) for x in data["x1"]])
    assert v.min() < -1
    assert res.median_nlm == pytest.approx(np.median(v), abs=1e-10)
    assert res.share_linear == pytest.approx(np.mean(v >= 0.5), abs=1e-15)
    assert res.anlm == pytest.approx(np.mean(v), abs=1e-10)
    assert f"median {np.median(v):.6g}" in res.summary() and "share >= 0.5" in res.summary()
    with pytest.raises(ParameterError, match="nlm_linear_threshold must be a finite number <= 1"):
        fme.fme(sq, data, {"x1": 0.7}, nlm=True, nlm_linear_threshold=1.5)


def test_nlm_intervals_never_exceed_one(grid):
    from fme._utils.stats import describe

    d = describe(np.array([1.0, 1.0, 1.0, 0.96, 1.0]), upper=1.0)
    assert d["ci_high"] == 1.0 and d["ci_low"] < d["mean"] < 1.0
    res = fme.fme(lambda d: d["x1"].to_numpy() + 0.02 * d["x1"].to_numpy() ** 2, grid, {"x1": 0.5}, nlm=True)
    part = fme.came(res, features=["x2"])
    assert (part.leaves["canlm_ci_high"] <= 1.0).all() and part.root["canlm_ci_high"] <= 1.0
    assert {"median_nlm", "share_linear"} <= set(part.leaves.columns)
    assert part.root["share_linear"] == pytest.approx(res.share_linear, abs=1e-15)


# ------------------------------------------------------------ Gauss-Kronrod error control
def test_gauss_kronrod_smooth_rows_need_no_subdivision(df):
    from sklearn.svm import SVR

    from fme._adapters.predictor import make_predictor
    from fme._nlm.evaluate import adaptive_nlm
    from fme.steps import parse_steps

    Xs = df[["x1", "x2", "x3"]]
    svr = SVR(kernel="rbf", gamma=0.5, C=3.0).fit(Xs, df["y"])
    steps = parse_steps(Xs, {"x1": 0.8, "x3": -0.5})
    p = make_predictor(svr)
    f0, f1 = p(Xs), svr.predict(Xs.assign(x1=Xs["x1"] + 0.8, x3=Xs["x3"] - 0.5))
    nlm, _, err, intervals = adaptive_nlm(p, Xs, steps, None, f0, f1, tol=1e-8, max_level=5)
    assert np.all(intervals == 1) and np.all(err <= 1e-8)
    gl = fme.fme(svr, Xs, {"x1": 0.8, "x3": -0.5}, nlm=True, nlm_method="gauss-legendre", nlm_points=64)
    np.testing.assert_allclose(nlm, gl.results["nlm"].to_numpy(), rtol=0, atol=1e-9)


def test_gauss_kronrod_subdivides_and_flags_rows(grid):
    def kink(d):  # |x1|: a kink inside the path needs subdivision; far from 0 the path is linear
        return np.abs(d["x1"].to_numpy())

    res = fme.fme(kink, grid, {"x1": 1.0}, nlm=True, nlm_tol=1e-6)
    x = grid["x1"].to_numpy()
    crossing = (x < 0) & (x + 1.0 > 0)
    assert crossing.any() and (~crossing).any()
    nlm = res.results["nlm"].to_numpy()
    np.testing.assert_allclose(nlm[~crossing], 1.0, atol=1e-12)

    def exact_kink(x0):  # piecewise linear path: closed form by fine adaptive quadrature
        return nlm_quad(lambda t: abs(x0 + t))

    for i in np.flatnonzero(crossing):
        ok = res.results["nlm_status"].iloc[i] == "ok"
        assert abs(nlm[i] - exact_kink(x[i])) <= (1e-5 if ok else 1e-2)
    # a budget of one level leaves the kinked rows inaccurate, flagged and counted
    tight = fme.fme(kink, grid, {"x1": 1.0}, nlm=True, nlm_tol=1e-12, nlm_max_level=0)
    bad = tight.results["nlm_status"].to_numpy() == "inaccurate"
    np.testing.assert_array_equal(bad, crossing)
    assert tight.n_nlm_inaccurate == crossing.sum()
    assert f"inaccurate {crossing.sum()}" in tight.summary()
