"""wts=: weighted AMEs, groups and hypotheses, with delta, bootstrap and fixed-model inference.

References: the weighted mean of the rows' fMEs by hand; frequency weights against replicated rows (same AME and
delta SE exactly); a hand delta gradient; unit weights equal to no weights.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import fme


@pytest.fixture(scope="module")
def logit():
    rng = np.random.default_rng(9)
    n = 300
    d = pd.DataFrame(
        {"x": rng.normal(size=n), "w": rng.normal(size=n), "g": rng.choice(["a", "b"], n), "k": rng.integers(1, 4, n)}
    )
    d["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-(0.4 + 0.9 * d["x"] - 0.5 * d["w"])))).astype(float)
    return smf.logit("y ~ x + w", data=d).fit(disp=0), d


def test_weighted_ame_and_delta_se_by_hand(logit):
    m, d = logit
    out = fme.ame(m, d, {"x": 1}, wts="k")
    b, V = m.params.to_numpy(), m.cov_params().to_numpy()
    D0 = np.column_stack([np.ones(len(d)), d["x"], d["w"]])
    D1 = D0 + np.array([0.0, 1.0, 0.0])
    p0, p1 = 1 / (1 + np.exp(-D0 @ b)), 1 / (1 + np.exp(-D1 @ b))
    w = d["k"].to_numpy(float)
    J = (p1 * (1 - p1))[:, None] * D1 - (p0 * (1 - p0))[:, None] * D0
    g = (w[:, None] * J).sum(0) / w.sum()
    assert out["ame"].iloc[0] == pytest.approx(np.sum(w * (p1 - p0)) / w.sum(), rel=1e-12)
    assert out["std_error"].iloc[0] == pytest.approx(np.sqrt(g @ V @ g), rel=1e-9)


def test_frequency_weights_equal_replicated_rows(logit):
    m, d = logit
    rep = d.loc[d.index.repeat(d["k"])].reset_index(drop=True)
    a = fme.ame(m, d, {"x": 1}, wts="k", by="g")
    b = fme.ame(m, rep, {"x": 1}, by="g")
    np.testing.assert_allclose(a["ame"], b["ame"], rtol=1e-12)
    np.testing.assert_allclose(a["std_error"], b["std_error"], rtol=1e-10)  # the mean Jacobian is the same


def test_unit_weights_change_nothing_and_sample_se_by_hand(logit):
    m, d = logit
    for inference in ("delta", "sample"):
        a = fme.ame(m, d, {"x": 1, "w": 1}, inference=inference, wts=np.ones(len(d)))
        b = fme.ame(m, d, {"x": 1, "w": 1}, inference=inference)
        np.testing.assert_allclose(a["ame"], b["ame"], rtol=1e-12)
        np.testing.assert_allclose(a["std_error"], b["std_error"], rtol=1e-12)
    out = fme.ame(m, d, {"x": 1}, inference="sample", wts="k")
    v = fme.fme(m, d, {"x": 1}).results["fme"].to_numpy()
    w = d["k"].to_numpy(float)
    mean = np.sum(w * v) / w.sum()
    n = len(v)
    se = np.sqrt(n / (n - 1) * np.sum((w * (v - mean)) ** 2)) / w.sum()
    assert out["std_error"].iloc[0] == pytest.approx(se, rel=1e-12)


def test_weighted_bootstrap_and_hypotheses():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(2)
    X = pd.DataFrame({"x": rng.normal(size=200), "z": rng.normal(size=200)})
    y = (rng.uniform(size=200) < 1 / (1 + np.exp(-X["x"]))).astype(int)
    clf = LogisticRegression().fit(X, y)
    w = rng.uniform(0.5, 2, 200)
    out = fme.ame(
        clf,
        X,
        {"x": 1, "z": 1},
        wts=w,
        target_class=1,
        bootstrap={"X": X, "y": y, "n_resamples": 30, "random_state": 0},
    )
    v = fme.fme(clf, X, {"x": 1}, target_class=1).results["fme"].to_numpy()
    assert out["ame"].iloc[0] == pytest.approx(np.sum(w * v) / w.sum(), rel=1e-12)
    assert (out["inference"] == "bootstrap").all()
    h = fme.hypotheses(out, "b1 - b2 = 0")
    assert h["estimate"].iloc[0] == pytest.approx(out["ame"].iloc[0] - out["ame"].iloc[1], rel=1e-12)


def test_bad_weights_are_refused(logit):
    m, d = logit
    with pytest.raises(fme.FeatureError, match="nope"):
        fme.ame(m, d, {"x": 1}, wts="nope")
    with pytest.raises(fme.ParameterError, match="one weight per row"):
        fme.ame(m, d, {"x": 1}, wts=[1.0, 2.0])
    with pytest.raises(fme.ParameterError, match="non-negative"):
        fme.ame(m, d, {"x": 1}, wts=-np.ones(len(d)))
