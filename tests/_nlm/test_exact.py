"""Exact NLM of tree models (fme._nlm.exact, paper §5.4).

Reference: for each row separately, the breakpoints t = (threshold - x_j) / h_j
of every split threshold of a stepped feature (collected here by an
independent route per family), the model's own prediction at each segment's
midpoint, and the integrals from antiderivatives of the piecewise-constant
path. Written plainly, with loops over rows and trees.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import fme
import fme._nlm.evaluate
from fme._nlm.exact import float32_boundary
from fme._nlm.tree_paths import read_forest, traverse_nlm
from fme.exceptions import ParameterError

FEATURES = ["x1", "x2", "x3"]


# ------------------------------------------------------------ independent reference
def _float32_crossing(thr, strict: bool = False):
    """Where float32(v) <= thr (``strict``: float32(v) < thr, XGBoost's split test) stops holding, by bisection on
    v (scikit-learn trees cast inputs to float32)."""
    thr = np.asarray(thr, dtype=float)
    lo = thr - 1e-6 * np.abs(thr) - 1e-300
    hi = thr + 1e-6 * np.abs(thr) + 1e-300
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        v = mid.astype(np.float32).astype(float)
        below = v < thr if strict else v <= thr
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return hi


def _sk_thresholds(est, j):
    trees = getattr(est, "estimators_", [est])
    out = []
    for t in np.ravel(np.asarray(trees, dtype=object)):
        out.extend(_float32_crossing(t.tree_.threshold[t.tree_.feature == j]).tolist())
    return out


def _hist_thresholds(est, j):
    return [
        float(node["num_threshold"])
        for it in est._predictors
        for p in it
        for node in p.nodes
        if not node["is_leaf"] and node["feature_idx"] == j
    ]


def _lgb_thresholds(booster, name):
    df = booster.trees_to_dataframe()
    return df.loc[df["split_feature"] == name, "threshold"].astype(float).tolist()


def _xgb_thresholds(booster, name):
    out = []

    def walk(node):
        if "split" in node:
            if node["split"] == name:
                out.append(float(np.float32(node["split_condition"])))  # 9 digits: the float32 exactly
            for child in node["children"]:
                walk(child)

    for tree in booster.get_dump(dump_format="json"):
        walk(json.loads(tree))
    # XGBoost goes left iff float32(x) < split_condition: the path crosses where that stops holding
    out = np.asarray(out, dtype=float)
    return _float32_crossing(out[np.isfinite(out)], strict=True).tolist()


def own_path_reference(predict, data: pd.DataFrame, steps: dict, grid: int = 4096, iters: int = 56) -> np.ndarray:
    """The NLM of the model's own predictions along each path, for models piecewise constant along it: ``predict``
    on a grid of ``grid + 1`` points of [0, 1], every change between neighbours located by bisection on
    ``predict`` (to 2^-56; a bracket whose midpoint equals neither end holds several changes and is split),
    then the integrals of the piecewise-constant prediction in closed form. Independent of the trees: only the
    model's ``predict``, vectorised over rows (one call per bisection step)."""
    n = len(data)
    base = data.to_numpy(dtype=float)
    h = np.array([steps.get(c, 0.0) for c in data.columns])

    def at(rows, t):
        return np.asarray(predict(pd.DataFrame(base[rows] + t[:, None] * h, columns=data.columns)), dtype=float)

    ts = np.linspace(0.0, 1.0, grid + 1)
    V = at(np.repeat(np.arange(n), ts.size), np.tile(ts, n)).reshape(n, ts.size)
    r, j = np.nonzero(V[:, 1:] != V[:, :-1])
    lo, hi, vl, vh = ts[j], ts[j + 1], V[r, j], V[r, j + 1]
    for _ in range(iters):
        m = 0.5 * (lo + hi)
        vm = at(r, m)
        left, right = vm == vl, vm == vh
        both = ~left & ~right
        lo, hi = np.r_[np.where(left, m, lo), m[both]], np.r_[np.where(left, hi, m), hi[both]]
        vl, vh = np.r_[np.where(left, vm, vl), vm[both]], np.r_[np.where(left, vh, vm), vh[both]]
        r = np.r_[r, r[both]]
    out = np.full(n, np.nan)
    for i in range(n):  # the closed forms, row by row
        sel = np.flatnonzero(r == i)
        order = sel[np.argsort(lo[sel])]
        edges = np.r_[0.0, 0.5 * (lo[order] + hi[order]), 1.0]
        vals = np.r_[V[i, 0], vh[order]] - V[i, 0]
        F = V[i, -1] - V[i, 0]
        a, b = edges[:-1], edges[1:]
        mean = np.sum((b - a) * vals)
        num = np.sum(((vals - a * F) ** 3 - (vals - b * F) ** 3) / (3 * F)) if F != 0 else np.sum((b - a) * vals**2)
        den = np.sum((b - a) * (vals - mean) ** 2)
        out[i] = 1.0 - num / den if den > 0 else np.nan
    return out


def reference_thresholds(model, feature):
    """Raw-space thresholds of ``feature`` (plain loops, family by family)."""
    name = type(model).__name__
    if name == "Pipeline":
        scaler, final = model.steps[0][1], model.steps[-1][1]
        j = list(model.feature_names_in_).index(feature)
        thr = np.asarray(reference_thresholds(final, j), dtype=float)
        return (thr * scaler.scale_[j] + scaler.mean_[j]).tolist()
    if isinstance(feature, str):
        j = FEATURES.index(feature)
    else:
        j, feature = feature, FEATURES[feature]
    if name.startswith("HistGradient"):
        return _hist_thresholds(model, j)
    if name.startswith("LGBM"):
        return _lgb_thresholds(model.booster_, feature)
    if name == "Booster" and type(model).__module__.startswith("lightgbm"):
        return _lgb_thresholds(model, feature)
    if name.startswith("XGB"):
        return _xgb_thresholds(model.get_booster(), feature)
    if name == "Booster":
        return _xgb_thresholds(model, feature)
    return _sk_thresholds(model, j)


def reference_nlm(model, predict, row: pd.Series, steps: dict, mids_predict=None) -> float:
    """The exact NLM of one row; ``mids_predict``: the segment values' predictor if not ``predict``."""
    f0 = float(predict(row.to_frame().T.astype(float))[0])
    moved = row.copy()
    for f, h in steps.items():
        moved[f] += h
    f1 = float(predict(moved.to_frame().T.astype(float))[0])
    ts = {0.0, 1.0}
    for f, h in steps.items():
        for thr in reference_thresholds(model, f):
            t = (thr - row[f]) / h
            if 0 < t < 1:
                ts.add(t)
    ts = sorted(ts)
    F = f1 - f0
    mean = num = 0.0
    mids = pd.DataFrame([row] * (len(ts) - 1)).astype(float)  # one predict call per row
    for f, h in steps.items():
        mids[f] = [row[f] + 0.5 * (a + b) * h for a, b in zip(ts[:-1], ts[1:])]
    values = (mids_predict or predict)(mids)
    segs = []
    for a, b, c in zip(ts[:-1], ts[1:], values):
        c = float(c)
        segs.append((a, b, c))
        mean += (b - a) * (c - f0)
        if F != 0:  # antiderivative of (c - f0 - t F)^2
            num += ((c - f0 - a * F) ** 3 - (c - f0 - b * F) ** 3) / (3 * F)
        else:
            num += (b - a) * (c - f0) ** 2
    den = sum((b - a) * (c - f0 - mean) ** 2 for a, b, c in segs)
    return 1.0 - num / den if den > 0 else float("nan")


# ------------------------------------------------------------ models
@pytest.fixture(scope="module")
def data(df):
    return df[FEATURES].iloc[:40]


def _fit(kind, df):
    from sklearn import ensemble as E
    from sklearn import tree as T

    X, y, yb = df[FEATURES], df["y"], df["yb"]
    y3 = np.where(df["y"] < -0.5, "lo", np.where(df["y"] < 1.5, "mid", "hi"))
    small = dict(random_state=0)
    if kind == "dt_reg":
        return T.DecisionTreeRegressor(max_depth=6, **small).fit(X, y), None
    if kind == "dt_clf":
        return T.DecisionTreeClassifier(max_depth=5, **small).fit(X, yb), None
    if kind == "et_single":
        return T.ExtraTreeRegressor(max_depth=6, **small).fit(X, y), None
    if kind == "rf_reg":
        return E.RandomForestRegressor(30, max_depth=6, **small).fit(X, y), None
    if kind == "rf_clf3":
        return E.RandomForestClassifier(20, max_depth=5, **small).fit(X, y3), "hi"
    if kind == "et_reg":
        return E.ExtraTreesRegressor(20, max_depth=6, **small).fit(X, y), None
    if kind == "gb_reg":
        return E.GradientBoostingRegressor(n_estimators=30, max_depth=3, **small).fit(X, y), None
    if kind == "gb_clf":
        return E.GradientBoostingClassifier(n_estimators=20, max_depth=3, **small).fit(X, yb), None
    if kind == "gb_clf3":
        return E.GradientBoostingClassifier(n_estimators=15, max_depth=2, **small).fit(X, y3), "mid"
    if kind == "hgb_reg":
        return E.HistGradientBoostingRegressor(max_iter=40, **small).fit(X, y), None
    if kind == "hgb_clf":
        return E.HistGradientBoostingClassifier(max_iter=30, **small).fit(X, yb), None
    if kind == "lgbm_reg":
        import lightgbm as lgb

        return lgb.LGBMRegressor(n_estimators=30, num_leaves=8, verbose=-1, **small).fit(X, y), None
    if kind == "lgbm_clf3":
        import lightgbm as lgb

        return lgb.LGBMClassifier(n_estimators=15, num_leaves=6, verbose=-1, **small).fit(X, y3), "lo"
    if kind == "lgbm_booster":
        import lightgbm as lgb

        return lgb.train(
            {"objective": "binary", "num_leaves": 6, "verbose": -1}, lgb.Dataset(X, yb), num_boost_round=20
        ), None
    if kind == "xgb_reg":
        import xgboost as xgb

        return xgb.XGBRegressor(n_estimators=30, max_depth=3, n_jobs=1, **small).fit(X, y), None
    if kind == "xgb_clf":
        import xgboost as xgb

        return xgb.XGBClassifier(n_estimators=20, max_depth=3, n_jobs=1, **small).fit(X, yb), None
    if kind == "xgb_booster":
        import xgboost as xgb

        return xgb.train(
            {"objective": "binary:logistic", "max_depth": 3, "nthread": 1}, xgb.DMatrix(X, label=yb), num_boost_round=20
        ), None
    if kind == "pipe_scaled_rf":
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(StandardScaler(), E.RandomForestRegressor(15, max_depth=5, **small)).fit(X, y), None
    raise KeyError(kind)


KINDS = [
    "dt_reg",
    "dt_clf",
    "et_single",
    "rf_reg",
    "rf_clf3",
    "et_reg",
    "gb_reg",
    "gb_clf",
    "gb_clf3",
    "hgb_reg",
    "hgb_clf",
    "lgbm_reg",
    "lgbm_clf3",
    "lgbm_booster",
    "xgb_reg",
    "xgb_clf",
    "xgb_booster",
    "pipe_scaled_rf",
]


#: families whose exact NLM comes from fme._nlm.tree_paths (the others: midpoint predictions)
TRAVERSED = [
    "dt_reg",
    "dt_clf",
    "et_single",
    "rf_reg",
    "rf_clf3",
    "et_reg",
    "gb_reg",
    "gb_clf",
    "gb_clf3",
    "hgb_reg",
    "hgb_clf",
    "lgbm_reg",
    "lgbm_clf3",
    "lgbm_booster",
    "xgb_reg",
    "xgb_clf",
    "xgb_booster",
]


@pytest.mark.parametrize("steps", [{"x1": 0.9}, {"x2": -1.1, "x3": 1.7}], ids=["uni", "bi"])
@pytest.mark.parametrize("kind", KINDS)
def test_exact_equals_segment_reference(df, data, kind, steps, monkeypatch):
    model, target = _fit(kind, df)
    if kind in TRAVERSED:  # the values must come from the tree traversal, not from midpoint predictions
        assert read_forest(model, target) is not None

        def no_midpoints(*args, **kwargs):
            raise AssertionError("midpoint route used")

        monkeypatch.setattr(fme._nlm.evaluate, "exact_nlm", no_midpoints)
    res = fme.fme(model, data, steps, nlm=True, nlm_method="exact", target_class=target)
    assert res.nlm_method == "exact"
    pred = fme._adapters.predictor.make_predictor(model, target)
    got = res.results["nlm"].to_numpy()
    ref = np.array([reference_nlm(model, pred, row, steps) for _, row in data.iterrows()])
    defined = np.isfinite(ref)
    assert defined.sum() >= 10
    np.testing.assert_array_equal(np.isfinite(got), defined)
    np.testing.assert_allclose(got[defined], ref[defined], rtol=1e-9, atol=1e-12)
    assert np.all(got[defined] <= 1.0 + 1e-12)
    # auto picks exact for every supported family
    auto = fme.fme(model, data, steps, nlm=True, target_class=target)
    assert auto.nlm_method == "exact"
    np.testing.assert_array_equal(auto.results["nlm"].to_numpy(), got)


def test_exact_multiclass_all_matches_single_class(df, data):
    model, _ = _fit("gb_clf3", df)
    allc = fme.fme(model, data, {"x1": 0.7}, nlm=True, target_class="all")
    assert allc.nlm_method == "exact"
    for c in model.classes_:
        one = fme.fme(model, data, {"x1": 0.7}, nlm=True, target_class=c)
        np.testing.assert_allclose(
            allc.results[f"nlm_{c}"].to_numpy(), one.results["nlm"].to_numpy(), rtol=1e-12, atol=1e-14
        )


def test_exact_pipeline_with_column_transformer(pipeline, df):
    data = df[FEATURES + ["cat"]].iloc[:30]
    before = data.copy(deep=True)
    res = fme.fme(pipeline, data, {"x1": 0.8}, nlm=True, nlm_method="exact")
    rf = pipeline.steps[-1][1]
    out_names = list(pipeline.steps[0][1].get_feature_names_out())
    j = out_names.index("remainder__x1")
    thr = _sk_thresholds(rf, j)
    for (label, row), got in zip(data.iterrows(), res.results["nlm"].to_numpy()):
        ts = sorted({0.0, 1.0} | {(t - row["x1"]) / 0.8 for t in thr if 0 < (t - row["x1"]) / 0.8 < 1})
        mids = pd.DataFrame([row] * (len(ts) - 1))
        mids["x1"] = row["x1"] + 0.8 * (np.array(ts[:-1]) + np.array(ts[1:])) / 2
        mids["cat"] = pd.Categorical(mids["cat"], categories=data["cat"].cat.categories)
        c = pipeline.predict(mids)
        f0 = pipeline.predict(data.loc[[label]])[0]
        F = res.results.loc[label, "fme"]
        a, b = np.array(ts[:-1]), np.array(ts[1:])
        mean = np.sum((b - a) * (c - f0))
        num = (
            np.sum(((c - f0 - a * F) ** 3 - (c - f0 - b * F) ** 3) / (3 * F)) if F else np.sum((b - a) * (c - f0) ** 2)
        )
        den = np.sum((b - a) * (c - f0 - mean) ** 2)
        if den > 0:
            assert got == pytest.approx(1 - num / den, rel=1e-9, abs=1e-12)
    pd.testing.assert_frame_equal(data, before)


def test_exact_on_unsupported_model_is_an_error(df, data):
    from sklearn.svm import SVR

    svr = SVR().fit(df[FEATURES], df["y"])
    with pytest.raises(ParameterError, match="nlm_method='exact' is not available for SVR"):
        fme.fme(svr, data, {"x1": 1.0}, nlm=True, nlm_method="exact")
    assert fme.fme(svr, data, {"x1": 1.0}, nlm=True).nlm_method == "gauss-kronrod"


def test_exact_categorical_split_falls_back(df):
    from sklearn.ensemble import HistGradientBoostingRegressor

    X = df[["x1", "k"]]
    m = HistGradientBoostingRegressor(max_iter=10, categorical_features=[1], random_state=0).fit(X, df["y"])
    with pytest.raises(ParameterError, match="categorical splits on the stepped feature 'k'"):
        fme.fme(m, X, {"k": 1}, nlm=True, nlm_method="exact")
    assert fme.fme(m, X, {"x1": 1.0}, nlm=True).nlm_method == "exact"


def test_exact_respects_batching_budget(df, data, monkeypatch):
    import fme._nlm.exact as ne

    model, _ = _fit("rf_reg", df)
    full = fme.fme(model, data, {"x1": 1.5, "x2": 0.5}, nlm=True)
    X = data
    shifts = {"x1": np.full(len(X), 1.5), "x2": np.full(len(X), 0.5)}
    thr = ne.tree_thresholds(model, ["x1", "x2"], FEATURES)
    pred = fme._adapters.predictor.make_predictor(model)
    f0, f1 = full.predictions["f_x"].to_numpy(), full.predictions["f_x_step"].to_numpy()
    one, _, _ = ne.exact_nlm(pred, X, shifts, thr, f0, f1)
    calls = pred.n_calls
    small, _, n_seg = ne.exact_nlm(pred, X, shifts, thr, f0, f1, cell_budget=3 * 50)
    assert pred.n_calls - calls > 5 and n_seg > len(X)
    np.testing.assert_array_equal(small, one)
    # the traversal route (what fme() uses for forests) in chunks of 1 to 40 rows
    forest = read_forest(model)
    whole, _, _ = traverse_nlm(forest, X, shifts, f0, f1)
    np.testing.assert_allclose(whole, one, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(whole, full.results["nlm"].to_numpy())
    for budget in (30, 7 * 30):  # 30 trees: 1 and 7 rows per chunk, serial and on threads
        chunked, _, _ = traverse_nlm(forest, X, shifts, f0, f1, entry_budget=budget, n_threads=1)
        # a row's NLM does not depend on which other rows share its chunk (Dask partitions, batches)
        np.testing.assert_array_equal(chunked, whole)
        threaded, _, _ = traverse_nlm(forest, X, shifts, f0, f1, entry_budget=budget, n_threads=3)
        np.testing.assert_array_equal(threaded, chunked)


def _lgbm(**kw):
    import lightgbm as lgb

    return lgb.LGBMRegressor(verbose=-1, random_state=0, **kw)


@pytest.mark.parametrize("kind", ["hgb_reg", "hgb_clf", "rf_reg", "dt_clf", "lgbm_nan", "lgbm_zero"])
def test_traversal_follows_missing_value_directions(df, kind, monkeypatch):
    """NaN in a non-stepped feature: each node's learned missing direction, as in the model's predict."""
    from sklearn import ensemble as E
    from sklearn import tree as T

    rng = np.random.default_rng(3)
    X = df[FEATURES].copy()
    X.loc[rng.random(len(X)) < 0.3, "x3"] = np.nan
    X.loc[rng.random(len(X)) < 0.2, "x2"] = 0.0  # LightGBM's missing type Zero treats these as missing
    y, yb = df["y"], df["yb"]
    model = {
        "hgb_reg": lambda: E.HistGradientBoostingRegressor(max_iter=30, random_state=0).fit(X, y),
        "hgb_clf": lambda: E.HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(X, yb),
        "rf_reg": lambda: E.RandomForestRegressor(20, max_depth=6, random_state=0).fit(X, y),
        "dt_clf": lambda: T.DecisionTreeClassifier(max_depth=6, random_state=0).fit(X, yb),
        "lgbm_nan": lambda: _lgbm(n_estimators=30, num_leaves=8).fit(X, y),
        "lgbm_zero": lambda: _lgbm(n_estimators=30, num_leaves=8, zero_as_missing=True).fit(X, y),
    }[kind]()
    if kind == "lgbm_zero":
        assert read_forest(model).zero_missing is not None
    data = X.iloc[:40]
    assert data["x3"].isna().sum() >= 5
    monkeypatch.setattr(fme._nlm.evaluate, "exact_nlm", lambda *a, **k: pytest.fail("midpoint route used"))
    steps = {"x1": 1.3, "x2": -0.8}
    res = fme.fme(model, data, steps, nlm=True, nlm_method="exact")
    pred = fme._adapters.predictor.make_predictor(model)
    ref = np.array([reference_nlm(model, pred, row, steps) for _, row in data.iterrows()])
    got = res.results["nlm"].to_numpy()
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(ref))
    np.testing.assert_allclose(got[np.isfinite(ref)], ref[np.isfinite(ref)], rtol=1e-9, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e30, 1e30, allow_nan=False, allow_subnormal=False))
def test_float32_boundary_splits_the_float32_comparison(thr):
    b = float32_boundary(np.array([thr]))[0]
    below, above = np.nextafter(b, -np.inf), np.nextafter(b, np.inf)
    # compared in float64, as the trees compare (NEP 50 would cast a Python float to float32)
    assert float(np.float32(below)) <= thr  # every v < b passes float32(v) <= thr ...
    assert float(np.float32(above)) > thr  # ... and every v > b fails it
    assert abs(b - thr) <= np.spacing(np.float32(abs(thr)), dtype=np.float32) + 1e-300


def test_traversal_handles_shrunk_zero_steps(df):
    """Per-row steps with zeros (on_extrapolation='shrink' can give h = 0): those rows route by value."""
    model, _ = _fit("hgb_reg", df)
    X = df[FEATURES].iloc[:30]
    h = np.where(np.arange(30) % 3 == 0, 0.0, 1.2)
    shifts = {"x1": h, "x2": np.where(np.arange(30) % 2 == 0, 0.0, -0.7)}
    pred = fme._adapters.predictor.make_predictor(model)
    moved = X.copy()
    moved["x1"] += shifts["x1"]
    moved["x2"] += shifts["x2"]
    f0, f1 = pred(X), pred(moved)
    import fme._nlm.exact as ne

    thr = ne.tree_thresholds(model, ["x1", "x2"], FEATURES)
    mid, _, _ = ne.exact_nlm(pred, X, shifts, thr, f0, f1)
    trav, _, _ = traverse_nlm(read_forest(model), X, shifts, f0, f1)
    np.testing.assert_array_equal(np.isfinite(trav), np.isfinite(mid))
    assert np.isnan(trav[(h == 0) & (shifts["x2"] == 0)]).all()  # no step: constant path
    np.testing.assert_allclose(trav, mid, rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------ property: quadrature converges to exact
def _rule_error(rule: np.ndarray, exact: np.ndarray) -> float:
    """Largest error of a rule's NLMs, relative beyond |NLM| = 1; a row the rule finds constant (NaN) while
    the exact NLM is defined is an infinite error (it used to count as none: a coarse rule that missed a
    narrow jump then looked more accurate than a fine one)."""
    e = np.abs(rule - exact) / np.maximum(1.0, np.abs(exact))
    e[np.isnan(rule) & ~np.isnan(exact)] = np.inf
    return float(np.nanmax(e)) if (~np.isnan(e)).any() else 0.0


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(depth=st.integers(1, 6), seed=st.integers(0, 10_000), h=st.floats(0.2, 3.0), neg=st.booleans())
@example(depth=3, seed=1769, h=1.5625, neg=True)  # NLM -31.6: absolute error 0.07 at 4096 nodes, 0.2 % relative
@example(depth=3, seed=1406, h=0.9921875, neg=True)  # NLM -1116: 16 nodes miss the narrow jump (NaN)
def test_gauss_legendre_converges_to_exact(df, depth, seed, h, neg):
    from sklearn.tree import DecisionTreeRegressor

    model = DecisionTreeRegressor(max_depth=depth, random_state=seed).fit(df[FEATURES], df["y"])
    data = df[FEATURES].iloc[seed % 100 : seed % 100 + 5]
    step = {"x1": -h if neg else h}
    exact = fme.fme(model, data, step, nlm=True, nlm_method="exact").results["nlm"].to_numpy()
    errs = []
    for m in (16, 256, 4096):
        gl = fme.fme(model, data, step, nlm=True, nlm_method="gauss-legendre", nlm_points=m).results["nlm"]
        # The NLM is unbounded below: its quadrature error scales with |NLM| (relative beyond 1).
        errs.append(_rule_error(gl.to_numpy(), exact))
    assert errs[2] <= errs[0] + 1e-12
    assert errs[2] < 0.05


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    family=st.sampled_from(["rf", "hgb_clf"]),
    seed=st.integers(0, 10_000),
    h1=st.floats(0.2, 3.0),
    h2=st.floats(-2.0, 2.0),
)
def test_gauss_legendre_converges_to_exact_on_ensembles(df, family, seed, h1, h2):
    """The same property for ensembles (exact by traversal), bivariate steps, a classifier's probability."""
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestRegressor

    if family == "rf":
        model = RandomForestRegressor(15, max_depth=5, random_state=seed).fit(df[FEATURES], df["y"])
    else:
        model = HistGradientBoostingClassifier(max_iter=15, max_leaf_nodes=8, random_state=seed).fit(
            df[FEATURES], df["yb"]
        )
    assert read_forest(model) is not None
    data = df[FEATURES].iloc[seed % 100 : seed % 100 + 5]
    step = {"x1": h1, "x2": h2} if h2 != 0 else {"x1": h1}
    exact = fme.fme(model, data, step, nlm=True, nlm_method="exact").results["nlm"].to_numpy()
    errs = []
    for m in (16, 256, 4096):
        gl = fme.fme(model, data, step, nlm=True, nlm_method="gauss-legendre", nlm_points=m).results["nlm"]
        errs.append(_rule_error(gl.to_numpy(), exact))
    assert errs[2] <= errs[0] + 1e-12
    assert errs[2] < 0.05


@pytest.mark.parametrize("kind", ["hgb_reg", "rf_reg"])
def test_exact_nlm_of_a_row_does_not_depend_on_the_other_rows(df, data, kind):
    """Same row, same NLM to the last bit, whether evaluated with all rows or a slice of them."""
    model, _ = _fit(kind, df)
    steps = {"x1": 1.5, "x2": 0.5}
    whole = fme.fme(model, data, steps, nlm=True).results["nlm"].to_numpy()
    part = fme.fme(model, data.iloc[7:41], steps, nlm=True).results["nlm"].to_numpy()
    np.testing.assert_array_equal(part, whole[7:41])


def _xgb_models(X, y, yb):
    import xgboost as xgb
    from sklearn.model_selection import train_test_split

    Xa, Xb, ya, yb_ = train_test_split(X, y, test_size=0.3, random_state=0)
    early = xgb.XGBRegressor(n_estimators=300, max_depth=3, early_stopping_rounds=3, n_jobs=1, random_state=0)
    early.fit(Xa, ya, eval_set=[(Xb, yb_)], verbose=False)
    return {
        "xgb_reg": xgb.XGBRegressor(n_estimators=40, max_depth=4, n_jobs=1, random_state=0).fit(X, y),
        "xgb_clf": xgb.XGBClassifier(n_estimators=30, max_depth=3, n_jobs=1, random_state=0).fit(X, yb),
        "xgb_booster": xgb.train(
            {"objective": "binary:logistic", "max_depth": 3, "nthread": 1}, xgb.DMatrix(X, label=yb), num_boost_round=20
        ),
        "xgb_poisson": xgb.XGBRegressor(
            n_estimators=20, max_depth=3, objective="count:poisson", n_jobs=1, random_state=0
        ).fit(X, np.exp(y / 3)),
        "xgb_early_stopping": early,
    }


def _xgb_frame(df):
    """Features with NaN (default directions) and values exactly at split conditions and their float32 boundaries."""
    rng = np.random.default_rng(5)
    X = df[FEATURES].copy()
    X.loc[rng.random(len(X)) < 0.25, "x3"] = np.nan
    X.loc[rng.random(len(X)) < 0.1, "x1"] = np.nan
    return X


@pytest.fixture(scope="module")
def xgb_case(df):
    X = _xgb_frame(df)
    models = _xgb_models(X, df["y"], df["yb"])
    data = X.iloc[:60].copy()
    # per feature, rows on its split conditions s, on the float64 boundaries b of float32(v) < s and one
    # float64 ulp either side of b
    row = 0
    for f in FEATURES:
        conds = np.unique([float(np.float32(c)) for c in _xgb_raw_conditions(models["xgb_reg"], f)])
        bounds = np.asarray(reference_thresholds(models["xgb_reg"], f))
        vals = np.concatenate(
            [conds[:3], bounds[:3], np.nextafter(bounds[:2], np.inf), np.nextafter(bounds[:2], -np.inf)]
        )
        data.iloc[row : row + vals.size, FEATURES.index(f)] = vals
        row += vals.size
    # and rows whose path ends on a split condition of x1 (x1 + h = s for the step h = 1.3 of x1 below)
    data.iloc[row : row + 4, 0] = (
        np.unique([float(np.float32(c)) for c in _xgb_raw_conditions(models["xgb_reg"], "x1")])[:4] - 1.3
    )
    return models, data


def _xgb_raw_conditions(model, feature):
    out = []
    for tree in model.get_booster().get_dump(dump_format="json"):
        stack = [json.loads(tree)]
        while stack:
            node = stack.pop()
            if "split" in node:
                if node["split"] == feature:
                    out.append(node["split_condition"])
                stack.extend(node["children"])
    return out


@pytest.mark.parametrize("kind", ["xgb_reg", "xgb_clf", "xgb_booster", "xgb_poisson", "xgb_early_stopping"])
def test_xgboost_forest_reproduces_predict(xgb_case, kind):
    """The trees read from XGBoost's JSON model predict as XGBoost does, bit for bit: a dense walk summing the
    leaves in float32 in tree order gives its margins, and the traversal's segments (compiled and NumPy route,
    a path of length zero: one segment per row) carry its predictions."""
    import xgboost as xgb

    from fme._nlm import tree_kernel
    from fme._nlm.tree_paths import _sums32

    models, data = xgb_case
    model = models[kind]
    forest = read_forest(model)
    assert forest is not None and forest.float32 and forest.strict and forest.sum32
    Xa = data.to_numpy(dtype=float)
    xc = Xa.astype(np.float32)
    margin = np.full(len(Xa), np.float32(forest.baseline[0]), dtype=np.float32)
    for root in forest.roots:  # dense walk, float32 accumulation in tree order
        node = np.full(len(Xa), root)
        while not forest.is_leaf[node].all():
            v = xc[np.arange(len(Xa)), forest.feature[node]]
            right = np.where(np.isnan(v), ~forest.missing_left[node], v >= forest.threshold[node])
            node = np.where(forest.is_leaf[node], node, np.where(right, forest.right[node], forest.left[node]))
        margin = (margin + forest.value[node, 0].astype(np.float32)).astype(np.float32)
    if kind == "xgb_booster":
        want_margin = model.predict(xgb.DMatrix(data), output_margin=True)
        want = model.predict(xgb.DMatrix(data))
    else:
        want_margin = model.predict(data, output_margin=True)
        want = model.predict_proba(data)[:, 1] if kind == "xgb_clf" else model.predict(data)
    np.testing.assert_array_equal(margin, want_margin)
    zero = np.zeros_like(Xa)
    srow, a, b, raw, _ = tree_kernel.forest_segments(forest, Xa, zero, np.zeros(Xa.shape[1], dtype=bool))
    np.testing.assert_array_equal(raw[:, 0], want_margin)
    np.testing.assert_array_equal(_sums32(forest, Xa, zero, srow, a, b, np.zeros(Xa.shape[1], dtype=bool)), raw)
    np.testing.assert_array_equal(np.asarray(forest.link(raw))[:, forest.output], want)
    if kind == "xgb_clf":  # the first predict_proba column too
        np.testing.assert_array_equal(np.asarray(forest.link(raw))[:, 0], model.predict_proba(data)[:, 0])


@pytest.mark.parametrize("kind", ["xgb_reg", "xgb_clf", "xgb_booster", "xgb_poisson"])
def test_xgboost_traversal_equals_its_own_predictions(xgb_case, kind, monkeypatch):
    """NaN (default directions; a NaN stepped value stays missing) and rows on split conditions and on
    their float32 boundaries: the traversal's NLM is that of XGBoost's own predictions along the path
    (:func:`own_path_reference`, ``predict`` alone) to 1e-9, and so is the midpoint route's. The traversal once
    summed the leaves in float64 with a float64 link, 1e-4 relative from the NLM of ``predict``."""
    import fme._nlm.exact as ne

    models, data = xgb_case
    model = models[kind]
    steps = {"x1": 1.3, "x2": -0.7}
    monkeypatch.setattr(fme._nlm.evaluate, "exact_nlm", lambda *a, **k: pytest.fail("midpoint route used"))
    res = fme.fme(model, data, steps, nlm=True, nlm_method="exact")
    got = res.results["nlm"].to_numpy()
    assert data["x1"].isna().sum() >= 3  # fme leaves out rows whose stepped feature is missing
    data = data.loc[res.results.index]
    pred = fme._adapters.predictor.make_predictor(model)
    ref = own_path_reference(pred, data, steps)
    defined = np.isfinite(ref)
    assert defined.sum() >= 30 and data["x3"].isna().sum() >= 10
    np.testing.assert_array_equal(np.isfinite(got), defined)
    np.testing.assert_allclose(got[defined], ref[defined], rtol=1e-9, atol=1e-12)
    # the midpoint route: XGBoost's predictions at the midpoints of the segments between all split thresholds
    shifts = {f: np.full(len(data), h) for f, h in steps.items()}
    f0, f1 = res.predictions["f_x"].to_numpy(), res.predictions["f_x_step"].to_numpy()
    mid, _, _ = ne.exact_nlm(pred, data, shifts, ne.tree_thresholds(model, list(steps), FEATURES), f0, f1)
    np.testing.assert_allclose(got[defined], mid[defined], rtol=1e-9, atol=1e-12)


def test_xgboost_numpy_route_carries_the_same_float32_sums(xgb_case, monkeypatch):
    """The NumPy traversal (the kernel's reference) gives a sum32 forest the same NLMs as the kernel, bit for bit:
    both carry XGBoost's float32 sums, one incrementally, one by walking every tree at the segment midpoints."""
    from fme._nlm import tree_kernel

    models, data = xgb_case
    model = models["xgb_clf"]
    steps = {"x1": 1.3, "x2": -0.7}
    compiled = fme.fme(model, data, steps, nlm=True, nlm_method="exact").results["nlm"].to_numpy()
    monkeypatch.setattr(tree_kernel, "available", lambda: False)
    numpy_route = fme.fme(model, data, steps, nlm=True, nlm_method="exact").results["nlm"].to_numpy()
    np.testing.assert_array_equal(numpy_route, compiled)
