"""The error-controlled NLM at a bounded cost (fme._nlm.budget, paper §5.4).

References: the exact NLM of the same tree model read from its trees (fme._nlm.exact /
fme._nlm.tree_paths, itself checked against an independent segment reference in
test_nlm_exact.py), and closed forms / adaptive quadrature for smooth and kinked paths.
The model is wrapped in a plain function, so fme cannot read its trees and must treat it as a
black box; the wrapper counts every row it is asked to predict.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme.exceptions import ParameterError

FEATURES = ["x1", "x2", "x3"]


class Counting:
    """A plain function around ``model.predict`` that counts the rows predicted."""

    def __init__(self, model):
        self.model, self.rows, self.calls = model, 0, 0

    def __call__(self, d):
        self.rows += len(d)
        self.calls += 1
        return self.model.predict(d)


@pytest.fixture(scope="module")
def rows(df):
    rng = np.random.default_rng(7)
    return pd.DataFrame(rng.normal(size=(1500, 3)) * df[FEATURES].std().to_numpy(), columns=FEATURES)


@pytest.fixture(scope="module")
def grid():
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {"x1": rng.uniform(-2, 2, 8), "x2": rng.uniform(-1, 1, 8), "x3": rng.uniform(0, 3, 8)}, index=list("abcdefgh")
    )


def _tree(df, depth=4):
    from sklearn.tree import DecisionTreeRegressor

    return DecisionTreeRegressor(max_depth=depth, random_state=0).fit(df[FEATURES], df["y"])


def _hgb(df, iters=5):
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(max_iter=iters, max_depth=3, random_state=0).fit(df[FEATURES], df["y"])


def _check_against_exact(model, rows, steps, budget=None):
    f = Counting(model)
    kw = {} if budget is None else {"nlm_budget": budget}
    res = fme.fme(f, rows, steps, nlm=True, **kw)
    exact = fme.fme(model, rows, steps, nlm=True, nlm_method="exact")
    assert res.nlm_method == "gauss-kronrod" and exact.nlm_method == "exact"
    r, e = res.results, exact.results
    # f(x), f(x + h) and everything on the path, per evaluated row
    per_row = f.rows / len(rows)
    assert per_row <= (34 if budget is None else budget) + 1e-9
    # same undefined rows (constant paths are exact on the jump route: no bracket)
    np.testing.assert_array_equal(np.isnan(r["nlm"].to_numpy()), np.isnan(e["nlm"].to_numpy()))
    defined = ~np.isnan(e["nlm"].to_numpy())
    diff = np.abs(r["nlm"].to_numpy() - e["nlm"].to_numpy())[defined]
    bound = r["nlm_error"].to_numpy()[defined]
    return res, exact, diff, bound, per_row


def test_wrapped_tree_equals_exact_within_the_bracket_bound(df, rows):
    """A wrapped depth-4 tree: every path is piecewise constant, so every row takes the jump route. The NLM
    with jumps placed at the midpoints of brackets of width w differs from the exact one by at most the
    bound derived from w (module docstring of fme._nlm.budget), which is the reported nlm_error."""
    model = _tree(df)
    res, exact, diff, bound, per_row = _check_against_exact(model, rows, {"x1": 1.0})
    r = res.results
    assert (r["nlm_route"] == "jumps").all()
    assert np.all(diff <= bound + 1e-12)
    # 11 probes per row on average locate the (one to three) jumps of each path to a few 2^-8 of the Kronrod
    # node spacing (<= 0.074): bounds of ~1e-5 (measured mean 3e-5, max 1.6e-3)
    assert bound.mean() <= 1e-4 and bound.max() <= 1e-2
    # a budget of 60 locates them to nlm_tol = 1e-6 (the bound holds, so the distance to exact does too)
    res60, _, diff60, bound60, _ = _check_against_exact(model, rows, {"x1": 1.0}, budget=60)
    ok = (res60.results["nlm_status"] == "ok").to_numpy()[~np.isnan(exact.results["nlm"].to_numpy())]
    assert ok.mean() > 0.99
    assert np.all(diff60 <= bound60 + 1e-12) and np.all(diff60[ok] <= 1e-6)
    # constant paths: NaN on both routes, status constant
    const = np.isnan(exact.results["nlm"].to_numpy())
    assert const.any() and (r["nlm_status"].to_numpy()[const] == "constant").all()


def test_wrapped_boosting_bivariate_step_bounded_cost(df, rows):
    """A wrapped HistGradientBoosting model, bivariate step: <= 34 rows predicted per row; where rows stay
    inaccurate, their nlm_error still bounds the distance to the exact NLM (one jump per bracket here)."""
    model = _hgb(df)
    res, exact, diff, bound, per_row = _check_against_exact(model, rows, {"x1": 1.0, "x2": -0.5})
    assert np.all(diff <= bound + 1e-12)
    inacc = res.results["nlm_status"] == "inaccurate"
    assert (res.results.loc[inacc, "nlm_error"] > res.nlm_tol).all()
    assert res.n_nlm_inaccurate == int(inacc.sum())
    if res.n_nlm_inaccurate:
        assert f"inaccurate {res.n_nlm_inaccurate}  (included in the ANLM" in res.summary()
        assert "a larger nlm_budget tightens it)" in res.summary()  # what to do about it


def test_raising_the_budget_buys_accuracy(df, rows):
    model = _hgb(df, iters=8)
    steps = {"x1": 1.0, "x2": -0.5}
    out = {}
    for budget in (23, 34, 60, 120):
        res, exact, diff, bound, per_row = _check_against_exact(model, rows, steps, budget)
        out[budget] = (diff.mean(), bound.mean(), res.n_nlm_inaccurate, per_row)
        assert np.all(diff <= bound + 1e-12)
    for lo, hi in ((23, 34), (34, 60), (60, 120)):
        assert out[hi][1] <= out[lo][1]  # the mean error bound falls (strictly while the budget binds)
        assert out[hi][2] <= out[lo][2]  # and so does the number of inaccurate rows
    assert out[34][1] < out[23][1] and out[60][1] < out[34][1]
    assert out[120][0] < out[23][0] / 10  # the actual mean error with it
    assert out[23][3] == 23  # no refinement at the least budget


def test_smooth_rows_and_kinks_stay_within_budget(grid):
    """|x1| with a kink inside some paths: the quadrature route bisects the kinked rows' worst sub-interval
    within the budget; linear rows need no refinement (NLM 1 to 1e-12)."""
    calls = {"rows": 0}

    def kink(d):
        calls["rows"] += len(d)
        return np.abs(d["x1"].to_numpy())

    res = fme.fme(kink, grid, {"x1": 1.0}, nlm=True, nlm_tol=1e-10)
    assert calls["rows"] <= 34 * len(grid)
    assert (res.results["nlm_route"] == "quadrature").all()
    x = grid["x1"].to_numpy()
    crossing = (x < 0) & (x + 1.0 > 0)
    np.testing.assert_allclose(res.results["nlm"].to_numpy()[~crossing], 1.0, atol=1e-12)
    np.testing.assert_array_equal(res.results["nlm_error"].to_numpy()[~crossing] <= 1e-10, True)
    big = fme.fme(kink, grid, {"x1": 1.0}, nlm=True, nlm_tol=1e-10, nlm_budget=2000)
    e_small = res.results["nlm_error"].to_numpy()[crossing]
    e_big = big.results["nlm_error"].to_numpy()[crossing]
    assert np.all(e_big <= e_small)


def test_gauss_kronrod_error_estimates_match_actual_errors_on_smooth_paths(grid):
    """The quadrature route's estimate is an upper bound in practice on analytic paths (reference: scipy quad)."""
    from scipy import integrate

    def f(d):
        return np.exp(np.sin(3 * d["x1"].to_numpy())) + d["x2"].to_numpy()

    res = fme.fme(f, grid, {"x1": 2.5}, nlm=True, nlm_tol=1e-12, nlm_budget=23)
    for i, x in enumerate(grid["x1"]):
        g = lambda t, x=x: np.exp(np.sin(3 * (x + 2.5 * t)))
        opts = dict(epsabs=1e-14, epsrel=1e-13, limit=200)
        f0, f1 = g(0.0), g(1.0)
        fbar = integrate.quad(g, 0, 1, **opts)[0]
        num = integrate.quad(lambda t: (g(t) - f0 - t * (f1 - f0)) ** 2, 0, 1, **opts)[0]
        den = integrate.quad(lambda t: (g(t) - fbar) ** 2, 0, 1, **opts)[0]
        ref = 1.0 - num / den
        assert abs(res.results["nlm"].iloc[i] - ref) <= max(res.results["nlm_error"].iloc[i], 1e-12)


@pytest.mark.parametrize("value", [22, 22.9, float("inf"), "34", True, -1])
def test_bad_budget(grid, value):
    with pytest.raises(ParameterError, match="nlm_budget must be a finite number >= 23"):
        fme.fme(lambda d: d["x1"].to_numpy() ** 2, grid, {"x1": 1.0}, nlm=True, nlm_budget=value)


def test_budget_without_nlm(grid):
    with pytest.raises(ParameterError, match="nlm=False; pass nlm=True"):
        fme.fme(lambda d: d["x1"].to_numpy() ** 2, grid, {"x1": 1.0}, nlm_budget=40)


def test_multi_output_black_box_takes_the_jump_route(df, rows):
    """Two outputs of a wrapped classifier (target_class='all' of a plain Predictor): ties must hold in every
    output; each output's NLM equals the exact one within its own bound."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from fme._adapters.predictor import Predictor

    model = HistGradientBoostingClassifier(max_iter=5, max_depth=3, random_state=0).fit(df[FEATURES], df["yb"])
    exact = fme.fme(model, rows, {"x1": 1.0}, nlm=True, nlm_method="exact", target_class="all")
    names = list(exact.output_names)
    wrapped = Predictor(lambda d: model.predict_proba(d), output_names=names, description="wrapped")
    res = fme.fme(wrapped, rows, {"x1": 1.0}, nlm=True)
    assert res.nlm_method == "gauss-kronrod"
    for c in names:
        a, b = res.results[f"nlm_{c}"].to_numpy(), exact.results[f"nlm_{c}"].to_numpy()
        ok = ~np.isnan(b)
        np.testing.assert_array_equal(np.isnan(a), ~ok)
        assert np.all(np.abs(a - b)[ok] <= res.results[f"nlm_error_{c}"].to_numpy()[ok] + 1e-12)
    assert set(res.results["nlm_route"]) <= {"jumps", "quadrature"}


@pytest.fixture(scope="module")
def boosted():
    """The benchmark's model (benchmarks/bench_nlm_budget.py): 100 iterations of HistGradientBoosting on 10
    standard-normal features, about 42 jumps per path of the two-feature step, 2-3 per level-0 interval."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    cols = [f"x{i}" for i in range(10)]
    train = pd.DataFrame(rng.normal(size=(20_000, 10)), columns=cols)
    y = np.sin(2 * train["x0"]) + train["x1"] ** 2 + train["x2"] * train["x3"] + rng.normal(0, 0.1, len(train))
    with threadpool_limits(1):  # OpenMP threads wait for each other on a loaded machine (one region per tree)
        model = HistGradientBoostingRegressor(max_iter=100, random_state=0).fit(train, y)
    rows = pd.DataFrame(rng.normal(size=(100_000, 10)), columns=cols)  # the benchmark's rows
    # the first 800, and four whose paths have a jump in every level-0 interval (no tie among the 23 values:
    # quadrature route until their first bisection's nodes tie)
    return model, rows.iloc[np.r_[np.arange(800), [7478, 10674, 18454, 82197]]].reset_index(drop=True)


def test_wrapped_100_tree_boosting_bound_holds_on_every_row(boosted):
    """Several jumps per bracket: the bound (with its excursion term) is at least the distance to the exact
    NLM on every row at every budget, and more budget gives a smaller mean error and a smaller mean bound."""
    from threadpoolctl import threadpool_limits

    model, rows = boosted
    steps = {"x0": 1.0, "x1": 1.0}
    out = {}
    for budget in (34, 60, 120):
        with threadpool_limits(1):
            res, exact, diff, bound, per_row = _check_against_exact(model, rows, steps, budget)
        assert (res.results["nlm_route"] == "jumps").all()
        assert np.all(diff <= bound + 1e-12)
        finite = np.isfinite(bound)
        out[budget] = (diff.mean(), np.median(bound), finite.mean())
    assert out[60][0] < out[34][0] / 2 and out[120][0] < out[60][0] / 2
    assert out[60][1] < out[34][1] and out[120][1] < out[60][1]
    assert out[60][2] == 1.0 and out[120][2] == 1.0


def test_fme_is_predicted_apart_from_the_nodes_and_never_depends_on_them(grid):
    """f(x) and f(x + h) in calls of their own, then the 21 nodes: the fMEs are the model's predictions of x and
    x + h as fme.fme(nlm=False) makes them, bit for bit, whatever the batching (a model's last bits can depend on
    a row's place in a stacked frame: BLAS kernels, SIMD tails; tests/test_kernel.py has an MLP)."""
    calls = []

    def f(d):
        calls.append(len(d))
        return np.exp(np.sin(d["x1"].to_numpy())) + d["x2"].to_numpy() * d["x3"].to_numpy()

    res = fme.fme(f, grid, {"x1": 0.7, "x3": -0.2}, nlm=True, nlm_budget=23)
    assert calls == [len(grid), len(grid), 21 * len(grid)]
    moved = grid.assign(x1=grid["x1"] + 0.7, x3=grid["x3"] - 0.2)
    np.testing.assert_array_equal(res.results["fme"].to_numpy(), f(moved) - f(grid))
    np.testing.assert_array_equal(res.predictions["f_x"].to_numpy(), f(grid))
    plain = fme.fme(f, grid, {"x1": 0.7, "x3": -0.2}).results["fme"].to_numpy()
    np.testing.assert_array_equal(res.results["fme"].to_numpy(), plain)


def _jump_function(d):
    """A smooth path plus a jump of 3 where x3 crosses 0.5 (a plain function: the quadrature route)."""
    x1, x2, x3, x4 = (d[c].to_numpy() for c in ("x1", "x2", "x3", "x4"))
    return 2.0 * x1 + np.sin(x2) + 3.0 * (x3 > 0.5) + x1 * x4


_JUMP_STEP = {"x1": 1.0, "x2": 1.0, "x3": 0.3}


def _jump_reference(X):
    """The NLM of _jump_function along each path, independently: 40-node Gauss-Legendre on the smooth pieces
    either side of the jump at t* = (0.5 - x3) / 0.3 (exact to rounding for sin and polynomials of degree 79)."""
    from scipy.special import roots_legendre

    z, w = roots_legendre(40)
    out = []
    for x1, x2, x3, x4 in X[["x1", "x2", "x3", "x4"]].to_numpy():

        def g(t):
            return 2.0 * (x1 + t) + np.sin(x2 + t) + 3.0 * (x3 + 0.3 * t > 0.5) + (x1 + t) * x4

        ts = (0.5 - x3) / 0.3
        edges = [0.0, ts, 1.0] if 0.0 < ts < 1.0 else [0.0, 1.0]
        t = np.concatenate([a + (z + 1.0) / 2.0 * (b - a) for a, b in zip(edges[:-1], edges[1:])])
        wt = np.concatenate([w / 2.0 * (b - a) for a, b in zip(edges[:-1], edges[1:])])
        v = g(t) - g(0.0)
        F = g(1.0) - g(0.0)
        fbar = np.sum(wt * v)
        out.append(1.0 - np.sum(wt * (v - t * F) ** 2) / np.sum(wt * (v - fbar) ** 2))
    return np.array(out)


def test_a_jump_inside_a_quadrature_sub_interval_is_bounded_and_located():
    """A smooth path with a jump: the jump at a sub-interval's centre (t* near 1/4, 3/8, 1/2, 3/4 after
    bisections), where the Kronrod and Gauss values agree, and between the last node and t = 1 or t = 0, where no
    node sees it, once got nlm_status 'ok' with nlm_error ~1e-16 and true errors up to 13; and more budget did not
    help (bisection stops at nlm_max_level with the jump inside). Now the error bounds the true error on every
    row, 'ok' rows are within nlm_tol, and more budget locates the jump: the worst error falls."""
    rng = np.random.default_rng(11)
    crossings = np.array(
        [
            0.25 + 1e-4,
            0.375 - 3e-4,
            0.5 + 2e-4,
            0.75 - 1e-4,
            0.28125 + 1e-5,
            0.09375 - 1e-5,
            0.9995,
            0.99987,
            0.0008,
            0.3,
            0.61,
        ]
    )
    t_star = np.r_[crossings, -0.5, 1.7]  # and two paths that do not cross
    X = pd.DataFrame(
        {
            "x1": rng.normal(size=t_star.size),
            "x2": rng.normal(size=t_star.size),
            "x3": 0.5 - 0.3 * t_star,
            "x4": rng.normal(size=t_star.size),
        }
    )
    ref = _jump_reference(X)
    worst = {}
    for budget in (34, 100, 300):
        res = fme.fme(_jump_function, X, _JUMP_STEP, nlm=True, nlm_budget=budget, inference="sample")
        r = res.results
        assert (r["nlm_route"] == "quadrature").all()
        diff = np.abs(r["nlm"].to_numpy() - ref)
        err = r["nlm_error"].to_numpy()
        assert np.all(diff <= err), (budget, diff / err)
        ok = (r["nlm_status"] == "ok").to_numpy()
        assert np.all(diff[ok] <= res.nlm_tol)
        assert np.all(ok[-2:])  # the smooth paths need no refinement
        worst[budget] = diff.max()
    assert worst[300] < worst[100] / 100 < worst[34] / 1000
    assert worst[300] <= 1e-6


def _gk_exact_sums(g, tau, c, F):
    """Kronrod sums of (S1, S2, N) of the path values g(t) - g(0) on [0, 1] at the 21 nodes, and the exact ones
    (scipy quad split at tau)."""
    from scipy import integrate

    from fme.nlm import gauss_kronrod_rules

    kron, _ = gauss_kronrod_rules(1)
    u, w = kron.nodes, kron.weights
    d = g(u) - g(0.0)
    K = np.array([np.sum(w * d), np.sum(w * (d - c) ** 2), np.sum(w * (d - u * F) ** 2)])
    opts = dict(epsabs=1e-14, epsrel=1e-13, limit=200, points=[tau] if 0 < tau < 1 else None)
    exact = np.array(
        [
            integrate.quad(lambda t: g(t) - g(0.0), 0, 1, **opts)[0],
            integrate.quad(lambda t: (g(t) - g(0.0) - c) ** 2, 0, 1, **opts)[0],
            integrate.quad(lambda t: (g(t) - g(0.0) - t * F) ** 2, 0, 1, **opts)[0],
        ]
    )
    return K, exact


def test_hidden_jumps_see_a_jump_and_not_a_smooth_path():
    """fme._nlm.budget_routes.hidden_jumps on one sub-interval [0, 1] (its 23 points: the ends and the 21 nodes):
    smooth paths hold no jump (P = 0, no cut); a jump of 3 anywhere, also where the Kronrod and Gauss sums
    agree (near the centre) or where no node sees it (before t = 1, after t = 0), is found in its gap, isolated,
    and P bounds what it does to the Kronrod sums; the compiled kernel equals the NumPy formulas bit for bit."""
    from fme._nlm import budget_routes as R

    pts = R._POINTS
    one, zero = np.ones(1), np.zeros(1)

    def run(g, c=0.3):
        V = (g(pts) - g(0.0))[:, None, None]
        return R.hidden_jumps(V, zero, one, np.full((1, 1), c), V[-1]), V

    for g in (
        lambda t: np.sin(1.0 + 2.5 * t),
        lambda t: np.exp(-((t - 0.4) ** 2)),
        lambda t: 3 * t**3 - t,
        lambda t: 2.0 * t,
    ):
        (P, cut, iso), _ = run(g)
        assert np.all(P == 0.0) and np.isnan(cut[0]) and not iso[0]
    for tau in (0.5 + 1e-4, 0.5 - 1e-4, 0.25 + 1e-3, 0.9995, 0.0008, 0.3, 0.61):

        def g(t, tau=tau):
            return np.sin(1.0 + 2.5 * t) + 0.7 * t + 3.0 * (t > tau)

        (P, cut, iso), V = run(g)
        j = np.searchsorted(pts, tau) - 1  # the gap holding tau
        assert iso[0] and cut[0] == 0.5 * (pts[j] + pts[j + 1])
        K, exact = _gk_exact_sums(g, tau, 0.3, V[-1, 0, 0])
        assert np.all(np.abs(K - exact) <= P[0, :, 0]), (tau, np.abs(K - exact), P[0, :, 0])
    rng = np.random.default_rng(5)
    V = np.cumsum(rng.normal(size=(23, 300, 2)), axis=0)
    V[12:, ::4, 0] += 3.0
    a = rng.random(300) * 0.5
    b = a + rng.random(300) * 0.5
    c, lev = rng.normal(size=(300, 2)), np.abs(V).max(axis=0) + 1.0
    got, want = R.hidden_jumps(V, a, b, c, V[-1], lev), R.hidden_jumps_numpy(V, a, b, c, V[-1], lev)
    for x, y in zip(got, want):
        np.testing.assert_array_equal(x, y)


def test_the_nlm_of_a_cheap_model_stacks_at_most_its_budget() -> None:
    """2 * 10^5 rows of a smooth model: f(x) and f(x + h) apart, then the 21 nodes of every row in stacked
    frames, and no more rows in all than the budget (34 per row by default) allows."""
    n = 200_000
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(n, 10)), columns=[f"x{j}" for j in range(10)])
    beta = np.linspace(-1.0, 1.0, 10) / np.sqrt(10.0)
    calls: list[int] = []

    def f(df: pd.DataFrame) -> np.ndarray:
        calls.append(len(df))
        return np.tanh(df.to_numpy() @ beta)

    res = fme.fme(f, X, {"x0": 1.0}, nlm=True, inference="sample")
    assert calls[:2] == [n, n]
    assert sum(calls[2:]) == 21 * n  # smooth paths: the level-0 nodes are enough
    assert max(calls[2:]) <= 21 * n and sum(calls) <= 34 * n
    assert (res.results["nlm_status"] == "ok").all() and (res.results["nlm_route"] == "quadrature").all()


@pytest.mark.parametrize("batch_size", [40, 64])
def test_every_predict_call_of_the_nlm_stays_within_batch_size_times_its_nodes(batch_size):
    # bounded memory: no frame sent to the model holds more than batch_size rows' 21 nodes, in every block
    rows: list[int] = []
    beta = np.array([1.0, -2.0, 0.5])

    def f(d: pd.DataFrame) -> np.ndarray:
        rows.append(len(d))
        return np.tanh(d.to_numpy() @ beta) + np.where(d["a"].to_numpy() > 0.3, 1.0, 0.0)

    X = pd.DataFrame(np.random.default_rng(4).normal(size=(500, 3)), columns=["a", "b", "c"])
    batched = fme.fme(f, X, {"a": 1.0}, nlm=True, batch_size=batch_size, inference="sample")
    assert max(rows) <= batch_size * 21
    assert rows.count(batch_size * 21) >= 500 // batch_size - 1  # every full block of nodes was sent in one frame
    whole = fme.fme(f, X, {"a": 1.0}, nlm=True, inference="sample")
    pd.testing.assert_frame_equal(batched.results, whole.results)


def _masked_state(n, C, c, scale, jumps, Q):
    """The quadrature rows' state as it was built before every row on that route took the kernel's arrays
    as they are: full arrays, the rows off the jump route gathered and scattered."""
    from fme._nlm.budget import CONSTANT_ULPS
    from fme._nlm.level0_kernel import quad_state

    nlm, err, D = np.full((n, C), np.nan), np.zeros((n, C)), np.zeros((n, C))
    v, e, d, qe, ej = quad_state(n, c, scale, Q["r"], Q["K"], Q["G"], Q["P"], CONSTANT_ULPS)
    rows = ~jumps
    nlm[rows], err[rows], D[rows] = v[rows], e[rows], d[rows]
    return nlm, err, qe, D, ej


def test_state_of_rows_all_on_the_quadrature_route_is_the_masked_one(monkeypatch):
    from fme._nlm import budget

    seen = []
    real = budget._state

    def spy(n, C, c, F, scale, jumps, Q, settled, B, dense, shares=True, into=None):
        out = real(n, C, c, F, scale, jumps, Q, settled, B, dense, shares, into)
        if not jumps.any():  # copies: the state of round 0 is written into memory the next block reuses
            seen.append(([a.copy() for a in out], _masked_state(n, C, c, scale, jumps, Q), Q["ej"].copy()))
        return out

    monkeypatch.setattr(budget, "_state", spy)
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(4000, 3)), columns=FEATURES)

    beta = np.array([0.7, -0.4, 0.2])
    res = fme.fme(lambda d: np.tanh(d.to_numpy() @ beta), X, {"x1": 1.5}, nlm=True, inference="sample")
    assert (res.results["nlm_route"] == "quadrature").all()
    assert seen  # smooth paths: every row on the quadrature route
    for (nlm, err, qe, be, D), (nlm0, err0, qe0, D0, ej0), ej in seen:
        for a, b in ((nlm, nlm0), (err, err0), (qe, qe0), (D, D0), (ej, ej0)):
            np.testing.assert_array_equal(a, b)
        assert be.size == 0


def _stairs_or_smooth(d: pd.DataFrame) -> np.ndarray:
    """Stairs in a where b > 0 (the jump route, refined), elsewhere smooth (the quadrature route)."""
    x = d.to_numpy()
    return np.where(x[:, 1] > 0.0, np.floor(3.0 * x[:, 0]), np.tanh(x[:, 0] + 0.3 * x[:, 2]))


def test_blocks_of_rows_reusing_one_workspace_give_each_blocks_own_numbers(monkeypatch):
    """Every block of a call writes level 0 into the memory the block before it used (fme._nlm.blocks.BlockWork); its
    numbers are those of the same rows in a call of their own (each block spends its own budget)."""
    from fme._nlm import budget

    monkeypatch.setattr(budget, "_BLOCK_ROWS", 256)
    X = pd.DataFrame(np.random.default_rng(11).normal(size=(600, 3)), columns=["a", "b", "c"])
    cols = ["nlm", "nlm_error", "nlm_route"]
    whole = fme.fme(_stairs_or_smooth, X, {"a": 1.0}, nlm=True, inference="sample").results[cols]
    assert set(whole["nlm_route"]) == {"quadrature", "jumps"}
    alone = pd.concat(
        [
            fme.fme(_stairs_or_smooth, X.iloc[a:b], {"a": 1.0}, nlm=True, inference="sample").results[cols]
            for a, b in ((0, 256), (256, 512), (512, 600))  # the last block smaller than the first
        ]
    )
    pd.testing.assert_frame_equal(whole, alone)


def test_an_nlm_result_keeps_its_numbers_when_later_calls_reuse_the_memory(monkeypatch):
    from fme._nlm import budget

    monkeypatch.setattr(budget, "_BLOCK_ROWS", 256)
    rng = np.random.default_rng(12)
    X = pd.DataFrame(rng.normal(size=(600, 3)), columns=["a", "b", "c"])
    first = fme.fme(_stairs_or_smooth, X, {"a": 1.0}, nlm=True, inference="sample")
    before = first.results.copy(deep=True)
    again = fme.fme(_stairs_or_smooth, X * 2.0, {"a": 0.5}, nlm=True, inference="sample")
    pd.testing.assert_frame_equal(first.results, before)
    assert not np.array_equal(again.results["nlm"].to_numpy(), before["nlm"].to_numpy(), equal_nan=True)


def test_a_blocks_level_0_beside_the_next_blocks_predictions_gives_the_numbers_of_one_after_the_other(monkeypatch):
    """With spare threads, a block's level 0 runs while the model predicts the next block's nodes (two sets of
    memory, taken in turn); the numbers are those of one block after the other on one thread, and the model is
    called from the caller's thread alone."""
    import threading

    from fme._nlm import budget
    from fme._utils import threads

    monkeypatch.setattr(budget, "_BLOCK_ROWS", 256)
    X = pd.DataFrame(np.random.default_rng(13).normal(size=(900, 3)), columns=["a", "b", "c"])
    callers: set[int] = set()

    def f(d: pd.DataFrame) -> np.ndarray:
        callers.add(threading.get_ident())
        return _stairs_or_smooth(d)

    results = {}
    for count in (1, 3):
        monkeypatch.setattr(threads, "thread_count", lambda c=count: c)
        monkeypatch.setattr(budget, "thread_count", lambda c=count: c)
        started = threading.Thread.start
        helpers = []

        def spy(self, started=started, helpers=helpers):
            helpers.append(self)
            return started(self)

        monkeypatch.setattr(threading.Thread, "start", spy)
        # a pool of its own, whatever earlier tests left: its helpers are started in this call
        monkeypatch.setattr(threads, "_POOL", None)
        monkeypatch.setattr(threads, "_POOL_SIZE", 0)
        results[count] = fme.fme(f, X, {"a": 1.0}, nlm=True, inference="sample").results
        monkeypatch.setattr(threading.Thread, "start", started)
        assert bool(helpers) is (count > 1)  # the level 0 of the first blocks ran on a thread of its own
    pd.testing.assert_frame_equal(results[1], results[3])
    assert set(results[3]["nlm_route"]) == {"quadrature", "jumps"}
    assert callers == {threading.get_ident()}
