"""The batch kernel: mergeable summaries equal the in-memory figures (issue 14)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fme
from fme._core.summary import Moments, summarise
from fme._core.kernel import evaluate_batch
from fme.effects import resolve_plan

from conftest import make_regression_frame


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=60),
       st.lists(st.integers(0, 60), max_size=5))
def test_moments_merge_equals_pooled(values, cuts):
    v = np.array(values)
    edges = sorted({0, len(v), *[min(c, len(v)) for c in cuts]})
    parts = [Moments.of(v[a:b]) for a, b in zip(edges[:-1], edges[1:])]
    m = parts[0]
    for p in parts[1:]:
        m = m.merge(p)
    assert m.n[0] == v.size
    scale = max(1.0, float(np.abs(v).max()))
    assert abs(m.mean[0] - v.mean()) <= 1e-12 * scale
    if v.size > 1:
        assert abs(m.sd()[0] - v.std(ddof=1)) <= 1e-9 * scale
    else:
        assert np.isnan(m.sd()[0])


def test_moments_ignore_nan_and_empty_batches():
    m = Moments.of(np.array([1.0, np.nan, 3.0])).merge(Moments.of(np.empty(0)))
    assert m.n[0] == 2 and m.mean[0] == 2.0 and m.sd()[0] == pytest.approx(np.sqrt(2.0), rel=1e-15)


def _plan(model, X, steps, **kw):
    base = dict(nlm=False, nlm_method="auto", nlm_points=None, nlm_intervals=None, nlm_tol=None, nlm_max_level=None,
                nlm_flat_tol=None, nlm_linear_threshold=0.9, extrapolation=None, on_extrapolation=None,
                target_class=None, batch_size=None, inference="auto", bootstrap=None, conf_level=0.95)
    base.update(kw)
    plan, _ = resolve_plan(model, X, steps, X, **base)
    return plan


def test_summaries_of_batches_merge_to_the_fme_result():
    from sklearn.ensemble import RandomForestRegressor

    frame = make_regression_frame(n=400, seed=5)
    X = frame[["x1", "x2", "x3"]]
    model = RandomForestRegressor(n_estimators=10, random_state=0).fit(X, frame["y"])
    res = fme.fme(model, X, {"x1": 0.5}, nlm=True)
    plan = _plan(model, X, {"x1": 0.5}, nlm=True)
    # the flat-test scale of all rows, as the Dask path's first pass gives it
    preds = np.concatenate([res.predictions["f_x"], res.predictions["f_x_step"]])
    from dataclasses import replace

    plan = replace(plan, spread=np.std(preds))
    batches = [evaluate_batch(plan, X.iloc[a:a + 97]) for a in range(0, len(X), 97)]
    summary = summarise(batches[0], plan)
    for b in batches[1:]:
        summary = summary.merge(summarise(b, plan))
    assert summary.codes.tolist() == [res.n, 0, 0, 0, 0]
    assert summary.fme.mean[0] == pytest.approx(res.ame, rel=1e-13)
    assert summary.fme.sd()[0] == pytest.approx(res.sd, rel=1e-12)
    assert summary.nlm.mean[0] == pytest.approx(res.anlm, rel=1e-12)
    assert summary.n_linear[0] / summary.nlm.n[0] == res.share_linear
    assert summary.status[:, 0].tolist() == [int((res.results["nlm_status"] == s).sum())
                                             for s in ("ok", "constant", "flat", "inaccurate")]
    np.testing.assert_array_equal(np.concatenate([b.results["nlm"] for b in batches]), res.results["nlm"])


def test_batch_without_evaluable_rows_gives_empty_columns():
    frame = make_regression_frame(n=50, seed=1)
    X = frame[["x1", "x2", "x3", "cat"]]
    plan = _plan(lambda d: d["x1"].to_numpy() * 2, X, {"cat": "a"}, inference="sample")
    batch = evaluate_batch(plan, X[X["cat"] == "a"])
    assert len(batch.results) == 0 and list(batch.results.columns) == ["fme"]
    assert (batch.excluded["reason_type"] == "at_level").all()
    s = summarise(batch, plan)
    assert s.codes.tolist() == [0, 0, int((X["cat"] == "a").sum()), 0, 0] and s.fme.n[0] == 0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # any smooth model will do
@pytest.mark.parametrize("nlm_points", [None, 16])
def test_batching_does_not_change_any_row(nlm_points):
    # The NLM stacks are cut into batches of STACK_CELL_BUDGET cells (32 MB): a row's fME and NLM are the
    # same bits whatever batch it falls in (adaptive Gauss-Kronrod and a fixed rule alike).
    from sklearn.neural_network import MLPRegressor

    from fme.steps import STACK_CELL_BUDGET

    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(3000, 4)), columns=list("abcd"))
    y = np.sin(X["a"]) * X["b"] + X["c"] ** 2
    model = MLPRegressor(hidden_layer_sizes=(8,), max_iter=200, random_state=0).fit(X, y)
    whole = fme.fme(model, X, {"a": 1.0, "c": -0.5}, nlm=True, nlm_points=nlm_points, progress=False).results
    pieces = fme.fme(model, X, {"a": 1.0, "c": -0.5}, nlm=True, nlm_points=nlm_points, batch_size=257,
                     progress=False).results
    pd.testing.assert_frame_equal(whole, pieces, check_exact=True)
    assert STACK_CELL_BUDGET * 8 <= 32 * 2**20  # below glibc's largest mmap threshold (see fme.steps)
