"""The margins vocabulary on Dask data: equal to the pandas results on the same rows.

Hypotheses, equivalence and multiple comparisons on the tables of ``fme.ame`` (their joint uncertainty summed
chunk by chunk), ``wts=`` (weighted sums per chunk), ``avg_slopes``, ``avg_predictions``/``predictions`` and
``avg_comparisons`` (per-chunk sums of the rows' values and Jacobians): a statsmodels logit under the delta
method and a scikit-learn model under ``inference="sample"``. Dask's synchronous scheduler keeps the tests
fast; the data are split into several chunks so that merging matters.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")

import fme  # noqa: E402

RTOL = 1e-10
FIGURES = ["std_error", "statistic", "conf_low", "conf_high"]


@pytest.fixture(scope="module", autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(24)
    n = 1500
    d = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "w": rng.normal(size=n),
            "v": rng.uniform(0.5, 2.0, n),
            "g": rng.choice(["a", "b", "c"], n),
            "k": rng.integers(1, 4, n).astype(float),
        }
    )
    eta = -0.3 + 0.8 * d["x"] - 0.5 * d["w"] + 0.4 * d["x"] * d["w"] + 0.3 * d["v"]
    d["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    d.index = rng.permutation(np.arange(5000, 5000 + n))
    return d


@pytest.fixture(scope="module")
def logit(data):
    import statsmodels.formula.api as smf

    return smf.logit("y ~ x * w + v + C(g)", data=data).fit(disp=0)


@pytest.fixture(scope="module")
def forest(data):
    """A scikit-learn classifier (no parameter covariance: inference='sample'); a small boosted ensemble."""
    from sklearn.ensemble import GradientBoostingClassifier

    X = data[["x", "w", "v"]]
    return GradientBoostingClassifier(n_estimators=15, max_depth=2, random_state=0).fit(X, data["y"])


def _dd(frame: pd.DataFrame, npartitions: int = 4):
    return dd.from_pandas(frame, npartitions=npartitions, sort=False)


def _same(b: pd.DataFrame, a: pd.DataFrame, est: str = "estimate", rtol: float = RTOL) -> None:
    """Estimates, uncertainty and p-values of two tables to ``rtol`` (p-values to rtol * max(1, z^2): a tail
    probability magnifies a relative error of z by about z^2); the other columns equal."""
    assert list(b.columns) == list(a.columns) and len(b) == len(a)
    nums = [c for c in a.columns if c.startswith(("p_value", "statistic")) or c in [est, *FIGURES]]
    rest = [c for c in a.columns if c not in nums and not c.startswith(("sd", "q25", "q75"))]
    pd.testing.assert_frame_equal(b[rest].reset_index(drop=True), a[rest].reset_index(drop=True), check_dtype=False)
    z = np.abs(a["statistic"].to_numpy(dtype=float))
    for c in nums:
        x, y = b[c].to_numpy(dtype=float), a[c].to_numpy(dtype=float)
        assert np.array_equal(np.isnan(x), np.isnan(y)), c
        tol = rtol * (np.maximum(1.0, np.nan_to_num(z) ** 2) if c.startswith("p_value") else 1.0)
        ok = ~np.isnan(y)
        bound = np.broadcast_to(tol * np.abs(y), y.shape)
        assert np.all(np.abs(x - y)[ok] <= bound[ok]), (c, x, y)


# ----------------------------------------------------------------- hypotheses, equivalence, weights (fme.ame)
@pytest.mark.parametrize("which", ["logit", "forest"])
def test_ame_hypotheses_equal_pandas(which, data, logit, forest):
    model = logit if which == "logit" else forest
    kw = {} if which == "logit" else {"inference": "sample", "target_class": 1}
    frame = data if which == "logit" else data[["x", "w", "v", "g", "k"]]
    D = _dd(frame)
    steps = {"x": 1.0, "w": 0.5, "v": 0.25}
    a = fme.ame(model, frame, steps, **kw)
    b = fme.ame(model, D, steps, **kw)
    assert b.estimates is not None and b.estimates.method == ("delta" if which == "logit" else "sample")
    for hyp in ("pairwise", "b1 - b2 = 0", "b2 / b1 = 1"):
        _same(fme.hypotheses(b, hyp), fme.hypotheses(a, hyp))
    for args in (
        {"hypothesis": "reference"},
        {"hypothesis": "b1 - b3 = 0"},
        {"equivalence": [-0.05, 0.05]},
        {"hypothesis": "sequential", "multcomp": "holm", "equivalence": [-0.1, 0.1]},
    ):
        _same(fme.ame(model, D, steps, **kw, **args), fme.ame(model, frame, steps, **kw, **args))
    # by-groups: their pairwise differences and a hypothesis over the groups' rows
    a = fme.ame(model, frame, {"x": 1.0}, by="g", hypothesis="pairwise", **kw)
    b = fme.ame(model, D, {"x": 1.0}, by="g", hypothesis="pairwise", **kw)
    _same(b, a, est="ame")
    _same(fme.hypotheses(b, "b1 + b2 = 0"), fme.hypotheses(a, "b1 + b2 = 0"))
    _same(
        fme.ame(model, D, {"x": 1.0}, by="g", hypothesis="revsequential", **kw),
        fme.ame(model, frame, {"x": 1.0}, by="g", hypothesis="revsequential", **kw),
    )


@pytest.mark.parametrize("which", ["logit", "forest"])
def test_weighted_ame_equals_pandas(which, data, logit, forest):
    model = logit if which == "logit" else forest
    kw = {} if which == "logit" else {"inference": "sample", "target_class": 1}
    frame = data if which == "logit" else data[["x", "w", "v", "g", "k"]]
    D = _dd(frame, 5)
    for by in (None, "g"):
        a = fme.ame(model, frame, {"x": 1.0, "w": 1.0}, wts="k", by=by, **kw)
        b = fme.ame(model, D, {"x": 1.0, "w": 1.0}, wts="k", by=by, **kw)
        _same(b, a, est="ame")
        _same(fme.hypotheses(b, "b1 - b2 = 0"), fme.hypotheses(a, "b1 - b2 = 0"))
    if which == "logit":  # categorical levels, observation-wise and classic (all levels in one pass)
        for categorical in ("observation", "classic"):
            a = fme.ame(model, frame, {"g": None}, wts="k", categorical=categorical)
            b = fme.ame(model, D, {"g": None}, wts="k", categorical=categorical)
            _same(b, a, est="ame")
    # weights change the estimate (a check that they are used at all)
    plain = fme.ame(model, D, {"x": 1.0}, **kw)
    assert abs(plain["ame"].iloc[0] - b["ame"].iloc[0]) > 1e-6


def test_df_and_vcov_labels_on_dask(data, logit):
    a = fme.ame(logit, data, {"x": 1.0, "w": 1.0}, df=100, vcov="HC1", hypothesis="b1 - b2 = 0")
    b = fme.ame(logit, _dd(data), {"x": 1.0, "w": 1.0}, df=100, vcov="HC1", hypothesis="b1 - b2 = 0")
    _same(b, a)
    t = fme.ame(logit, _dd(data), {"x": 1.0}, df=100, vcov="HC1")
    assert t["inference"].iloc[0] == "delta (HC1)"


def test_dask_weights_must_be_a_column(data, logit):
    with pytest.raises(fme.FeatureError, match="column"):
        fme.ame(logit, _dd(data), {"x": 1.0}, wts=np.ones(len(data)))
    with pytest.raises(fme.ParameterError, match="non-negative"):
        fme.ame(logit, _dd(data.assign(k=-data["k"])), {"x": 1.0}, wts="k")


# ----------------------------------------------------------------- avg_slopes, avg_predictions, avg_comparisons
def _models(which, data, logit, forest):
    if which == "logit":
        return logit, data, {}
    return forest, data[["x", "w", "v", "g"]], {"inference": "sample", "target_class": 1}


@pytest.mark.parametrize("which", ["logit", "forest"])
def test_avg_slopes_equal_pandas(which, data, logit, forest):
    model, frame, kw = _models(which, data, logit, forest)
    D = _dd(frame)
    for slope, by in (("dydx", None), ("dydx", "g"), ("eyex", None)):
        a = fme.avg_slopes(model, frame, ["x", "v"], slope=slope, by=by, **kw)
        b = fme.avg_slopes(model, D, ["x", "v"], slope=slope, by=by, **kw)
        _same(b, a)
    _same(fme.hypotheses(b, "b1 - b2 = 0"), fme.hypotheses(a, "b1 - b2 = 0"))


@pytest.mark.parametrize("which", ["logit", "forest"])
def test_avg_predictions_and_predictions_equal_pandas(which, data, logit, forest):
    model, frame, kw = _models(which, data, logit, forest)
    D = _dd(frame)
    for by in (None, "g"):
        _same(fme.avg_predictions(model, D, by=by, **kw), fme.avg_predictions(model, frame, by=by, **kw))
    kw_rows = {k: v for k, v in kw.items() if k != "inference"}
    a = fme.predictions(model, frame, **kw_rows)
    b = fme.predictions(model, D, **kw_rows).compute()
    assert b.index.equals(a.index)
    if which == "logit":
        _same(b, a)
    else:
        pd.testing.assert_frame_equal(b, a)


@pytest.mark.parametrize("which", ["logit", "forest"])
def test_avg_comparisons_equal_pandas(which, data, logit, forest):
    model, frame, kw = _models(which, data, logit, forest)
    D = _dd(frame)
    scales = (
        ("lnratio", "lnor", "lnratioavg", "lift", "lnor_rows")
        if which == "logit"
        else ("lnratio", "ratio", "ratio_rows", "lift_rows")
    )
    for comparison in scales:
        for by in (None, "g"):
            a = fme.avg_comparisons(model, frame, {"x": 0.5}, comparison=comparison, by=by, **kw)
            b = fme.avg_comparisons(model, D, {"x": 0.5}, comparison=comparison, by=by, **kw)
            _same(b, a)
    # fme.ame's comparison= on Dask data, with the rows fme.fme leaves out (an envelope detector)
    ref = frame[frame["x"] < 1.0]
    a = fme.ame(model, frame, {"x": 0.5}, comparison="lnratio", extrapolation="envelope", reference_data=ref, **kw)
    b = fme.ame(model, D, {"x": 0.5}, comparison="lnratio", extrapolation="envelope", reference_data=ref, **kw)
    assert a["n"].iloc[0] < len(frame)
    _same(b, a)


def test_multinomial_outcomes_equal_pandas():
    """statsmodels MNLogit on Dask data: one outcome's AMEs with a hypothesis, its average
    slope, prediction and log risk ratio, delta SEs through the softmax's Jacobian, as on pandas data."""
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(6)
    n = 600
    d = pd.DataFrame({"x": rng.normal(size=n), "w": rng.normal(size=n)})
    u = np.column_stack([np.zeros(n), 0.5 + d.x, -0.3 + 0.8 * d.w])
    p = np.exp(u) / np.exp(u).sum(1, keepdims=True)
    d["y"] = (p.cumsum(1) < rng.uniform(size=(n, 1))).sum(1)
    m = smf.mnlogit("y ~ x + w", data=d).fit(disp=0)
    D = _dd(d, 3)
    for outcome in (0, 2):
        kw = {"target_class": outcome}
        _same(
            fme.ame(m, D, {"x": 1.0, "w": 1.0}, hypothesis="b1 - b2 = 0", **kw),
            fme.ame(m, d, {"x": 1.0, "w": 1.0}, hypothesis="b1 - b2 = 0", **kw),
        )
        _same(fme.avg_slopes(m, D, "x", **kw), fme.avg_slopes(m, d, "x", **kw))
        _same(fme.avg_predictions(m, D, **kw), fme.avg_predictions(m, d, **kw))
        _same(
            fme.avg_comparisons(m, D, {"w": 0.5}, comparison="lnratio", **kw),
            fme.avg_comparisons(m, d, {"w": 0.5}, comparison="lnratio", **kw),
        )


def test_per_row_bootstrap_predictions_equal_pandas(data):
    """``fme.predictions(..., bootstrap=)`` on Dask data: the refits are fitted once and every chunk predicts its
    rows with them, so each row's SE and percentile interval equal the pandas ones (same seeds)."""
    from sklearn.linear_model import LogisticRegression

    X = data[["x", "w", "v"]]
    clf = LogisticRegression().fit(X, data["y"])
    spec = {"X": X, "y": data["y"], "n_resamples": 30, "random_state": 2}
    a = fme.predictions(clf, X, target_class=1, bootstrap=spec)
    b = fme.predictions(clf, _dd(X), target_class=1, bootstrap=spec).compute()
    assert b.index.equals(a.index) and (a["inference"] == "bootstrap").all()
    assert (a["std_error"] > 0).all()
    _same(b, a)


def test_a_refit_whose_prediction_fails_on_a_chunk_is_an_error(data, monkeypatch):
    from sklearn.linear_model import LogisticRegression

    import fme._dask.vocab as fp  # the Dask engine's per-chunk table calls model_values

    X = data[["x", "w", "v"]]
    clf = LogisticRegression().fit(X, data["y"])
    real = fp.model_values

    def one_fails(quantity, piece, models, errors=None):
        out = real(quantity, piece, models, errors)
        out[:, 3] = np.nan  # the 4th refit's prediction failed on this chunk
        if errors is not None:
            errors.append("ValueError: boom")
        return out

    monkeypatch.setattr(fp, "model_values", one_fails)
    spec = {"X": X, "y": data["y"], "n_resamples": 10, "random_state": 2, "ci": "normal"}
    with pytest.raises(
        fme.ModelError, match=r"prediction of 1 of 10 refitted models failed on a chunk.*ValueError: boom"
    ):
        fme.predictions(clf, _dd(X), target_class=1, bootstrap=spec).compute()


# ----------------------------------------------------------------- vcov='unconditional': the rows' sampling added
UNCONDITIONAL = ["unconditional", {"unconditional": "HC1", "cluster": "k"}]


@pytest.mark.parametrize("vcov", UNCONDITIONAL)
def test_unconditional_ame_equals_pandas(vcov, data, logit):
    D = _dd(data, npartitions=3)
    steps = {"x": 1.0, "w": 0.5}
    for kw in ({"by": "g"}, {"wts": "v"}):
        a = fme.ame(logit, data, steps, vcov=vcov, **kw)
        b = fme.ame(logit, D, steps, vcov=vcov, **kw)
        assert b["inference"].tolist() == a["inference"].tolist() == [fme_label(vcov)] * len(a)
        _same(b, a, est="ame")
        # the rows' joint uncertainty too: the table's rows share the estimation sample
        _same(fme.hypotheses(b, "b1 - b2 = 0"), fme.hypotheses(a, "b1 - b2 = 0"))
        conditional = fme.ame(logit, D, steps, **kw)
        # another variance than the conditional one (the HC0 sandwich plus the rows' sampling)
        assert not np.allclose(b["std_error"].to_numpy(), conditional["std_error"].to_numpy(), rtol=1e-3)


@pytest.mark.parametrize("vcov", UNCONDITIONAL)
def test_unconditional_averages_equal_pandas(vcov, data, logit):
    D = _dd(data, npartitions=3)
    calls = [
        (fme.avg_predictions, {"by": "g"}),
        (fme.avg_slopes, {"variables": ["x", "v"], "wts": "v"}),
        (fme.avg_comparisons, {"steps": {"x": 1.0}, "comparison": "ratio", "by": "g"}),
        (fme.avg_comparisons, {"steps": {"w": 0.5}, "wts": "v"}),
    ]
    for verb, kw in calls:
        a = verb(logit, data, vcov=vcov, **kw)
        b = verb(logit, D, vcov=vcov, **kw)
        assert b["inference"].tolist() == a["inference"].tolist() == [fme_label(vcov)] * len(a)
        _same(b, a)


def fme_label(vcov) -> str:
    return "delta (unconditional)" if isinstance(vcov, str) else "delta (unconditional, HC1, cluster: k)"


def test_unconditional_on_dask_needs_the_estimation_sample_row_for_row(data, logit):
    from fme.exceptions import ModelError, ParameterError

    with pytest.raises(ModelError, match="estimation sample"):
        fme.avg_predictions(logit, _dd(data.iloc[:1000], npartitions=3), vcov="unconditional")
    with pytest.raises(ModelError, match="not it, row for row"):
        fme.ame(logit, _dd(data.iloc[::-1], npartitions=3), {"x": 1.0}, vcov="unconditional")
    with pytest.raises(ParameterError, match="categorical='classic'"):
        fme.ame(logit, _dd(data, npartitions=3), {"g": None}, vcov="unconditional", categorical="classic")
