"""The batch kernel: mergeable summaries equal the in-memory figures; batching and row results."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fme
from fme._core.kernel import _labels, evaluate_batch
from fme._core.summary import Moments, summarise
from fme.effects import FMEOptions, resolve_plan
from tests.conftest import make_regression_frame


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=60), st.lists(st.integers(0, 60), max_size=5)
)
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
    base = dict(
        nlm=False,
        nlm_method="auto",
        nlm_points=None,
        nlm_intervals=None,
        nlm_tol=None,
        nlm_max_level=None,
        nlm_flat_tol=None,
        nlm_linear_threshold=0.9,
        extrapolation=None,
        on_extrapolation=None,
        target_class=None,
        batch_size=None,
        inference="auto",
        bootstrap=None,
        conf_level=0.95,
    )
    base.update(kw)
    return resolve_plan(model, X, X, FMEOptions(**base)).with_steps(X, steps, X)


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
    batches = [evaluate_batch(plan, X.iloc[a : a + 97]) for a in range(0, len(X), 97)]
    summary = summarise(batches[0], plan)
    for b in batches[1:]:
        summary = summary.merge(summarise(b, plan))
    assert summary.codes.tolist() == [res.n, 0, 0, 0, 0, 0]
    assert summary.fme.mean[0] == pytest.approx(res.ame, rel=1e-13)
    assert summary.fme.sd()[0] == pytest.approx(res.sd, rel=1e-12)
    assert summary.nlm.mean[0] == pytest.approx(res.anlm, rel=1e-12)
    assert summary.n_linear[0] / summary.nlm.n[0] == res.share_linear
    assert summary.status[:, 0].tolist() == [
        int((res.results["nlm_status"] == s).sum()) for s in ("ok", "constant", "flat", "inaccurate")
    ]
    np.testing.assert_array_equal(np.concatenate([b.results["nlm"] for b in batches]), res.results["nlm"])


def test_batch_without_evaluable_rows_gives_empty_columns():
    frame = make_regression_frame(n=50, seed=1)
    X = frame[["x1", "x2", "x3", "cat"]]
    plan = _plan(lambda d: d["x1"].to_numpy() * 2, X, {"cat": "a"}, inference="sample")
    batch = evaluate_batch(plan, X[X["cat"] == "a"])
    assert len(batch.results) == 0 and list(batch.results.columns) == ["fme"]
    assert (batch.excluded["reason_type"] == "at_level").all()
    s = summarise(batch, plan)
    assert s.codes.tolist() == [0, 0, int((X["cat"] == "a").sum()), 0, 0, 0] and s.fme.n[0] == 0


_STEP = {"a": 1.0, "c": -0.5}


def _batching_frame() -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(3000, 4)), columns=list("abcd"))
    return X, np.sin(X["a"]) * X["b"] + X["c"] ** 2


def _independent_row_model(kind: str):
    X, y = _batching_frame()
    if kind == "forest":
        from sklearn.ensemble import RandomForestRegressor

        return RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0).fit(X, y)
    return lambda d: np.sin(d["a"].to_numpy()) * d["b"].to_numpy() + d["c"].to_numpy() ** 2


@pytest.mark.parametrize("nlm_points", [None, 16])
@pytest.mark.parametrize("kind", ["forest", "function"])
def test_batching_does_not_change_any_row(kind, nlm_points):
    # The NLM stacks are cut into batches of STACK_CELL_BUDGET cells (32 MB). Where the model computes each
    # row on its own (tree traversals, element-wise functions), a row's fME and NLM are the same bits whatever
    # batch it falls in: everything fme does per row is element-wise (adaptive Gauss-Kronrod and a fixed rule
    # alike). Models that go through BLAS have no such promise (next test).
    from fme.steps import STACK_CELL_BUDGET

    X, _ = _batching_frame()
    model = _independent_row_model(kind)
    whole = fme.fme(model, X, _STEP, nlm=True, nlm_points=nlm_points, progress=False).results
    for batch_size in (7, 257):
        pieces = fme.fme(
            model, X, _STEP, nlm=True, nlm_points=nlm_points, batch_size=batch_size, progress=False
        ).results
        pd.testing.assert_frame_equal(whole, pieces, check_exact=True)
    assert STACK_CELL_BUDGET * 8 <= 32 * 2**20  # below glibc's largest mmap threshold (see fme.steps)


#: BLAS gives a row's sums the same value to a few ulps of the sum of their terms' magnitudes, not the same
#: bits, at another place in a matrix: its kernels block rows and split sums by position (OpenBLAS's Haswell
#: kernels even on one thread; a 7-row batch takes other kernels than a 3000-row one on any CPU).
_BLAS_ULPS = 4


def _blas_model(kind: str):
    X, y = _batching_frame()
    if kind == "mlp":
        from sklearn.neural_network import MLPRegressor

        return MLPRegressor(hidden_layer_sizes=(8,), max_iter=200, random_state=0).fit(X, y)
    from sklearn.linear_model import LinearRegression

    return LinearRegression().fit(X, y)


def _rounding_scale(model, frame: pd.DataFrame) -> np.ndarray:
    """The magnitude a row's prediction is rounded against: sum of |terms| of each product, propagated."""
    x = np.abs(frame.to_numpy())
    if hasattr(model, "coefs_"):  # a ReLU MLP: the hidden layer's rounding passes through |W1|
        hidden = np.maximum(frame.to_numpy() @ model.coefs_[0] + model.intercepts_[0], 0.0)
        hidden_scale = x @ np.abs(model.coefs_[0]) + np.abs(model.intercepts_[0])
        return ((np.abs(hidden) + hidden_scale) @ np.abs(model.coefs_[1]) + np.abs(model.intercepts_[1]))[:, 0]
    return x @ np.abs(model.coef_) + abs(model.intercept_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # any smooth model will do
@pytest.mark.filterwarnings("ignore::fme.exceptions.FixedModelWarning")
@pytest.mark.parametrize("nlm_points", [None, 16])
@pytest.mark.parametrize("kind", ["mlp", "linear"])
def test_batching_moves_blas_rows_by_a_few_ulps(kind, nlm_points):
    # fme adds nothing to BLAS's freedom: per row it is element-wise. So a row's fME moves by at most the
    # rounding of f(x) and f(x + h), and its NLM by the propagation of a rounding delta of the path's values:
    # 1 - A/B moves by at most 4 delta / SD (sqrt(1 - NLM) + 1 - NLM), SD = sqrt(B) (16 Gauss nodes here).
    from fme.nlm import nlm_from_path, quadrature_rule

    X, _ = _batching_frame()
    model = _blas_model(kind)
    whole = fme.fme(model, X, _STEP, nlm=True, nlm_points=nlm_points, progress=False)
    eps = np.finfo(float).eps
    rule = quadrature_rule("gauss-legendre", 16)
    frames = [X.assign(a=X["a"] + t * _STEP["a"], c=X["c"] + t * _STEP["c"]) for t in (0.0, 1.0, *rule.nodes)]
    delta = _BLAS_ULPS * eps * np.stack([_rounding_scale(model, f) for f in frames])
    path = np.stack([model.predict(f) for f in frames[2:]])
    f0, f1 = whole.predictions["f_x"].to_numpy(), whole.predictions["f_x_step"].to_numpy()
    _, sd = nlm_from_path(f0, f1, path, rule, return_sd=True)
    nlm = whole.results["nlm"].to_numpy()
    gap = np.sqrt(np.clip(1.0 - nlm, 0.0, None))
    nlm_tol = 4.0 * delta.max(axis=0) / sd * (gap + gap**2) + _BLAS_ULPS * np.spacing(np.abs(nlm))
    assert np.isfinite(nlm).all() and (nlm_tol < 1e-9).all()  # the bound is informative on these paths
    for batch_size in (7, 257):
        pieces = fme.fme(model, X, _STEP, nlm=True, nlm_points=nlm_points, batch_size=batch_size, progress=False)
        for col, d in (("f_x", delta[0]), ("f_x_step", delta[1])):
            assert (np.abs(pieces.predictions[col].to_numpy() - whole.predictions[col].to_numpy()) <= d).all(), col
        got = pieces.results
        assert (np.abs(got["fme"].to_numpy() - whole.results["fme"].to_numpy()) <= delta[0] + delta[1]).all()
        assert (np.abs(got["nlm"].to_numpy() - nlm) <= nlm_tol).all()
        assert got["nlm_status"].tolist() == whole.results["nlm_status"].tolist()
        if nlm_points is None:
            # the error estimate adds what hidden jumps could do, from one-sided extrapolations of the path values
            # that amplify their rounding up to 1000-fold (fme._nlm.budget_routes._MAX_LEBESGUE): the same
            # estimate to its leading digits, not to the NLM's
            err, err_whole = got["nlm_error"].to_numpy(), whole.results["nlm_error"].to_numpy()
            assert (np.abs(err - err_whole) <= 2.0 * nlm_tol + 1e-9 * err_whole).all()


# ------------------------------------------------------------ every row evaluated: the frame itself, no copy
def _float_frame(n: int = 500) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])


def _overwriting(d: pd.DataFrame) -> np.ndarray:
    """2 a + b, then every cell of its input frame overwritten in place and a column replaced."""
    out = 2.0 * d["a"].to_numpy() + d["b"].to_numpy()
    d.iloc[:, :] = 0.0
    d.loc[:, "a"] = -1.0
    d["b"] = -2.0
    return out


def _clean(d: pd.DataFrame) -> np.ndarray:
    return 2.0 * d["a"].to_numpy() + d["b"].to_numpy()


def _check_writes_change_neither(X: pd.DataFrame) -> None:
    before = X.copy()
    first = fme.fme(_overwriting, X, {"a": 0.5}, inference="sample")
    pd.testing.assert_frame_equal(X, before)
    want = fme.fme(_clean, before, {"a": 0.5}, inference="sample")
    pd.testing.assert_frame_equal(first.results, want.results)
    pd.testing.assert_frame_equal(first.predictions, want.predictions)
    again = fme.fme(_overwriting, X, {"a": 0.5}, inference="sample")  # the data as they were for the second call too
    pd.testing.assert_frame_equal(again.predictions, first.predictions)


def test_a_model_writing_into_its_input_changes_neither_the_data_nor_the_fmes():
    """f(x) is handed columns shared with the data when every row is evaluated: copy-on-write keeps a model's
    in-place writes (here to every column of its input) to its own copy."""
    _check_writes_change_neither(_float_frame())


def test_frames_a_model_keeps_and_predictions_that_are_its_input_stay_as_handed():
    """A model may keep its inputs or return a view of one of their columns: a buffer of a call is reused by a
    later one only when nothing refers to it (fme._utils.memory), so what it kept and the results built from it
    stay as they were."""
    kept: list[pd.DataFrame] = []

    def keeping(d: pd.DataFrame) -> np.ndarray:
        kept.append(d)
        return d["a"].to_numpy()  # a view of its input

    X = _float_frame()
    first = fme.fme(keeping, X, {"a": 1.0}, inference="sample")
    snapshot = [k.copy() for k in kept]
    fme.fme(keeping, X + 10.0, {"a": 3.0}, inference="sample")
    for k, s in zip(kept[:2], snapshot):
        pd.testing.assert_frame_equal(k, s)
    np.testing.assert_array_equal(snapshot[1]["a"].to_numpy(), X["a"].to_numpy() + 1.0)
    np.testing.assert_array_equal(first.predictions["f_x_step"], X["a"].to_numpy() + 1.0)
    np.testing.assert_array_equal(first.results["fme"], (X["a"].to_numpy() + 1.0) - X["a"].to_numpy())


@pytest.mark.parametrize("codes", [[0, 0, 0], [2, 2], [0, 1, 2, 1], [3]], ids=["same", "same-other", "mixed", "one"])
def test_label_columns_equal_the_labels_written_one_by_one(codes):
    labels = ("ok", "inaccurate", "flat", "constant")
    values = np.asarray(codes, dtype=np.int8)
    got = pd.Series(_labels(values, labels))
    want = pd.DataFrame({"s": np.asarray([labels[c] for c in codes], dtype=object)})["s"]
    pd.testing.assert_series_equal(got, want, check_names=False)
    empty = _labels(values[:0], labels)
    assert len(empty) == 0 and empty.dtype == got.dtype
    np.testing.assert_array_equal(_labels(np.asarray(["a", "b"], dtype=object), labels), ["a", "b"])  # labels as given


def _stepped_only(bad: float):
    """A model that is finite at the data (x1 < 1.5) and ``bad`` at points moved beyond it."""
    return lambda d: np.where(d["x1"].to_numpy() > 1.5, bad, d["x1"].to_numpy())


def _nan_where_x2_positive(d: pd.DataFrame) -> np.ndarray:
    return np.where(d["x2"].to_numpy() > 0, np.nan, d["x1"].to_numpy())


@pytest.mark.parametrize("batch_size", [None, 7])
def test_a_non_finite_prediction_names_its_own_stage_though_the_subtraction_checks_both(batch_size):
    """f(x) and f(x + h) are checked by the fMEs' subtraction, one pass for both: a NaN or an infinity is still
    reported at the prediction it came from, f(x)'s first, with the rows of its batch."""
    X = make_regression_frame(n=30, seed=2)[["x1", "x2", "x3"]]
    X = X.assign(x1=np.linspace(-1.0, 1.4, 30))
    kw = {} if batch_size is None else {"batch_size": batch_size}
    with pytest.raises(fme.PredictionError, match=r"non-finite prediction\(s\) at f\(x\) \(") as info:
        fme.fme(_nan_where_x2_positive, X, {"x1": 1.0}, **kw)
    assert info.value.non_finite
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(fme.PredictionError, match=r"non-finite prediction\(s\) at f\(x \+ h\) for the step x1"):
            fme.fme(_stepped_only(bad), X, {"x1": 1.0}, **kw)


def test_f_x_non_finite_is_reported_before_the_model_failing_at_x_plus_h():
    """f(x) was checked before f(x + h) was asked for: its fault stays the one reported when the model then
    raises at x + h."""
    X = make_regression_frame(n=30, seed=2)[["x1", "x2", "x3"]]

    def model(d: pd.DataFrame) -> np.ndarray:
        if (d["x1"] > 2.0).any():
            raise RuntimeError("only at x + h")
        return _nan_where_x2_positive(d)

    with pytest.raises(fme.PredictionError, match=r"non-finite prediction\(s\) at f\(x\)"):
        fme.fme(model, X, {"x1": 1.0})


def test_the_fmes_are_the_predictions_difference_to_the_bit_in_every_batch():
    X, _ = _batching_frame()
    model = _independent_row_model("function")
    for kw in ({}, {"batch_size": 701}, {"nlm": True, "nlm_points": 8, "batch_size": 999}):
        res = fme.fme(model, X, _STEP, **kw)
        p = res.predictions
        np.testing.assert_array_equal(res.results["fme"].to_numpy(), p["f_x_step"].to_numpy() - p["f_x"].to_numpy())


# ------------------------------------------------------------ x + h written while the model predicts f(x)
def _wide_frame(n: int = 4_000) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    return pd.DataFrame(rng.normal(size=(n, 4)), columns=["a", "b", "c", "d"])


@pytest.fixture
def beside_from_small_frames(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """x + h of the small frames below written beside f(x) on two threads, and the order of the events."""
    from fme import steps as steps_module
    from fme._utils import threads

    for module in (threads, steps_module):
        monkeypatch.setattr(module, "thread_count", lambda: 2)
        monkeypatch.setattr(module, "MIN_CELLS_PER_THREAD", 64)
    events: list[str] = []
    real = steps_module.chunks_beside

    def recorded(*args, **kwargs):
        events.append("x + h started")
        finish = real(*args, **kwargs)

        def finished() -> None:
            finish()
            events.append("x + h written")

        return finished

    monkeypatch.setattr(steps_module, "chunks_beside", recorded)
    return events


def test_x_plus_h_is_written_while_the_model_predicts_f_x_with_the_same_fmes(beside_from_small_frames):
    events = beside_from_small_frames
    X = _wide_frame()

    def model(d: pd.DataFrame) -> np.ndarray:
        events.append(f"predict {len(d)}")
        return np.tanh(d.to_numpy() @ np.array([1.0, -0.5, 0.25, 2.0]))

    got = fme.fme(model, X, {"a": 0.5, "c": -1.0}, inference="sample")
    assert events == ["x + h started", f"predict {len(X)}", "x + h written", f"predict {len(X)}"]
    moved = X.to_numpy().copy()
    moved[:, 0] += 0.5
    moved[:, 2] += -1.0
    beta = np.array([1.0, -0.5, 0.25, 2.0])
    np.testing.assert_array_equal(got.results["fme"], np.tanh(moved @ beta) - np.tanh(X.to_numpy() @ beta))


def test_a_model_writing_into_its_input_while_x_plus_h_is_written_changes_neither(beside_from_small_frames):
    _check_writes_change_neither(_wide_frame())
    assert "x + h written" in beside_from_small_frames  # x + h was written beside f(x)


def test_f_x_failing_while_x_plus_h_is_written_raises_its_own_error_and_the_next_call_is_right(
    beside_from_small_frames,
):
    X = _wide_frame()
    calls = []

    def failing_once(d: pd.DataFrame) -> np.ndarray:
        calls.append(len(d))
        if len(calls) == 1:
            raise ValueError("the model's own fault")
        return 3.0 * d["b"].to_numpy() + d["a"].to_numpy() ** 2

    with pytest.raises(fme.PredictionError, match=r"raised ValueError at f\(x\) ") as info:
        fme.fme(failing_once, X, {"b": 2.0}, inference="sample")
    assert "the model's own fault" in str(info.value)
    assert beside_from_small_frames[-1] == "x + h written"  # waited for before the error left
    got = fme.fme(failing_once, X, {"b": 2.0}, inference="sample")
    np.testing.assert_allclose(got.results["fme"], 6.0, rtol=1e-12)
