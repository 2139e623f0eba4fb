"""The compiled traversal (fme._nlm.tree_kernel) against the NumPy traversal (fme._nlm.tree_paths._jumps and
_segments), which is independent code for the same rules: the same segments bit for bit, the same raw scores
to rounding, on every kind of forest the adapters read (float32 casts, strict comparisons, missing-value
directions, LightGBM's missing type Zero, several outputs), rows on thresholds, negative and zero steps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme._nlm import tree_kernel, tree_paths
from fme._nlm.tree_paths import read_forest


def _frame(seed=0, n=400):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=["a", "b", "c", "d"])
    y = np.sin(2 * X["a"]) + X["b"] ** 2 + X["c"] * X["d"] + 0.1 * rng.normal(size=n)
    return X, y


def _models():
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn import ensemble as E

    X, y = _frame()
    Xn = X.copy()
    rng = np.random.default_rng(1)
    Xn.loc[rng.random(len(X)) < 0.15, "c"] = np.nan
    Xn.loc[rng.random(len(X)) < 0.15, "b"] = 0.0
    y3 = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    return {
        "rf": (E.RandomForestRegressor(25, max_depth=8, random_state=0).fit(X, y), X, None),
        "hgb3": (E.HistGradientBoostingClassifier(max_iter=15, random_state=0).fit(Xn, y3), Xn, "all"),
        "gb": (E.GradientBoostingRegressor(n_estimators=20, random_state=0).fit(X, y), X, None),
        "lgb_zero": (
            lgb.LGBMRegressor(n_estimators=25, num_leaves=8, zero_as_missing=True, verbose=-1, random_state=0).fit(
                Xn, y
            ),
            Xn,
            None,
        ),
        "xgb": (xgb.XGBRegressor(n_estimators=25, max_depth=4, n_jobs=1, random_state=0).fit(Xn, y), Xn, None),
    }


@pytest.fixture(scope="module")
def models():
    return _models()


def _rows(forest, X: pd.DataFrame):
    """The frame's first 150 rows plus rows whose values sit on split thresholds and boundaries."""
    A = X.to_numpy(dtype=float)[:150].copy()
    thr = np.asarray(forest.threshold)[~np.asarray(forest.is_leaf)]
    bnd = np.asarray(forest.boundary)[~np.asarray(forest.is_leaf)]
    A[:20, 0] = thr[:20]
    A[20:40, 1] = bnd[:20]
    A[40:50, 0] = np.nextafter(bnd[:10], np.inf)
    return A


def _shifts(A, stepped):
    rng = np.random.default_rng(2)
    S = np.zeros_like(A)
    S[:, 0] = rng.normal(size=len(A))  # both signs
    S[:, 1] = -0.8
    S[::7, 0] = 0.0  # a zero step on a stepped feature
    return S, np.array(stepped)


@pytest.mark.parametrize("kind", ["rf", "hgb3", "gb", "lgb_zero", "xgb"])
@pytest.mark.parametrize("caps", [None, (1, 1)], ids=["default", "grown"])
def test_kernel_equals_numpy_traversal(models, kind, caps):
    model, X, target = models[kind]
    forest = read_forest(model, target)
    assert forest is not None
    A = _rows(forest, X)
    S, stepped = _shifts(A, [True, True, False, False])
    start, br, bt, jump = tree_paths._jumps(forest, A, S, stepped)
    want = tree_paths._segments(len(A), start + forest.baseline, br, bt, jump)
    ev_cap, seg_cap = caps or (None, None)
    got = tree_kernel.forest_segments(forest, A, S, stepped, ev_cap=ev_cap, seg_cap=seg_cap)
    for w, g in zip([want[0], want[1], want[2], want[4]], [got[0], got[1], got[2], got[4]]):
        np.testing.assert_array_equal(g, w)  # rows, segment ends, first segments: identical
    assert got[3].shape == want[3].shape
    if forest.sum32:  # XGBoost's float32 sums: incremental in the kernel, a walk at the midpoints in NumPy
        assert kind == "xgb"
        np.testing.assert_array_equal(got[3], tree_paths._sums32(forest, A, S, want[0], want[1], want[2], stepped))
    else:
        scale = np.abs(forest.value).sum(axis=0).max() + np.abs(forest.baseline).max()
        np.testing.assert_allclose(got[3], want[3], rtol=0, atol=1e-13 * scale)
    if kind == "hgb3":
        assert got[3].shape[1] == 3
    if kind == "lgb_zero":
        assert forest.zero_missing is not None and np.isnan(A).any()


def test_no_step_gives_one_segment_at_the_model_prediction(models):
    """With every step zero the path is the point itself: one segment per row, its raw score the model's."""
    model, X, _ = models["xgb"]
    forest = read_forest(model)
    A = X.to_numpy(dtype=float)[:100]
    srow, a, b, raw, first = tree_kernel.forest_segments(forest, A, np.zeros_like(A), np.ones(4, dtype=bool))
    np.testing.assert_array_equal(srow, np.arange(100))
    np.testing.assert_array_equal(a, 0.0)
    np.testing.assert_array_equal(b, 1.0)
    np.testing.assert_array_equal(forest.link(raw)[:, 0], model.predict(X.iloc[:100]))  # XGBoost's own numbers


def test_numpy_route_through_the_same_caller_gives_the_same_nlm(models, monkeypatch):
    """fme.fme with the kernel switched off runs the NumPy traversal: the NLMs agree to rounding."""
    model, X, _ = models["rf"]
    steps = {"a": 0.9, "b": -0.5}
    compiled = (
        fme.fme(model, X.iloc[:120], steps, nlm=True, nlm_method="exact", inference="sample").results["nlm"].to_numpy()
    )
    monkeypatch.setattr(tree_kernel, "available", lambda: False)
    numpy_route = (
        fme.fme(model, X.iloc[:120], steps, nlm=True, nlm_method="exact", inference="sample").results["nlm"].to_numpy()
    )
    np.testing.assert_allclose(compiled, numpy_route, rtol=1e-10, atol=1e-12)


def test_a_row_does_not_depend_on_its_block(models):
    """Rows walked in blocks: a row's segments and raw scores are bit-identical alone and among others."""
    model, X, _ = models["gb"]
    forest = read_forest(model)
    A = X.to_numpy(dtype=float)[:130]
    S, stepped = _shifts(A, [True, True, False, False])
    whole = tree_kernel.forest_segments(forest, A, S, stepped)
    part = tree_kernel.forest_segments(forest, A[67:69], S[67:69], stepped)
    sel = (whole[0] >= 67) & (whole[0] < 69)
    np.testing.assert_array_equal(part[1], whole[1][sel])
    np.testing.assert_array_equal(part[3], whole[3][sel])


def test_threads_on_a_fresh_forest(models):
    """Threads that meet a forest for the first time together (its node records are built on first use)."""
    from fme._nlm.tree_paths import traverse_nlm

    model, X, _ = models["rf"]
    data = X.iloc[:300]
    shifts = {"a": np.full(300, 0.9), "b": np.full(300, -0.5)}
    f0 = model.predict(data)
    f1 = model.predict(data.assign(a=data["a"] + 0.9, b=data["b"] - 0.5))
    one, _, _ = traverse_nlm(read_forest(model), data, shifts, f0, f1, entry_budget=500, n_threads=1)
    for _ in range(3):
        many, _, _ = traverse_nlm(read_forest(model), data, shifts, f0, f1, entry_budget=500, n_threads=4)
        np.testing.assert_array_equal(many, one)


@pytest.mark.parametrize("kind", ["spread", "crowded", "ties", "one", "none"])
def test_boundary_order_is_a_stable_sort(kind):
    """A row's boundaries ordered by value, ties by creation: the bucket pass with insertion sorts (spread values)
    and the merge sort (values crowding one bucket) both give NumPy's stable argsort."""
    rng = np.random.default_rng(4)
    t = {
        "spread": rng.random(500),
        "crowded": 0.5 + 1e-9 * rng.random(500),
        "ties": rng.choice([0.25, 0.5, 0.5000001], size=400),
        "one": np.array([0.3]),
        "none": np.empty(0),
    }[kind]
    ne = t.size
    order, cnt = np.empty(ne + 1, dtype=np.int64), np.empty(ne + 2, dtype=np.int64)
    tree_kernel._order(np.r_[t, 0.9], ne, order, cnt)  # a trailing unused value: only t[:ne] counts
    np.testing.assert_array_equal(order[:ne], np.argsort(t, kind="stable"))
