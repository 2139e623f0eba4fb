"""fme.interaction: the per-row second difference and its average with inference.

References: closed forms (additive models: 0; x1 * x2: h_a h_b), statsmodels' own coefficient SE for an
OLS interaction term, and a central-difference Jacobian of the average over the model's parameters for a
logit (the delta method by hand).
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import fme
from fme.margins.interactions import InteractionTable


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(5)
    n = 500
    d = pd.DataFrame(
        {"x1": rng.normal(size=n), "x2": rng.normal(size=n), "g": pd.Categorical(rng.choice(["a", "b"], size=n))}
    )
    d["y"] = 1 + 0.5 * d["x1"] - 0.4 * d["x2"] + 0.7 * d["x1"] * d["x2"] + rng.normal(size=n)
    d["z"] = (
        rng.uniform(size=n) < 1 / (1 + np.exp(-(0.3 + 0.8 * d["x1"] - 0.5 * d["x2"] + 0.6 * d["x1"] * d["x2"])))
    ).astype(float)
    return d


def test_additive_models_do_not_interact(frame):
    f = lambda d: np.sin(d["x1"].to_numpy()) + d["x2"].to_numpy() ** 3
    out = fme.interaction(f, frame[["x1", "x2"]], {"x1": 0.5}, {"x2": -0.3})
    assert out["share_above_tol"].iloc[0] == 0.0
    assert np.abs(out.per_row).max() < 1e-12


def test_a_product_interacts_by_the_product_of_the_steps(frame):
    f = lambda d: d["x1"].to_numpy() * d["x2"].to_numpy()
    out = fme.interaction(f, frame[["x1", "x2"]], {"x1": 0.5}, {"x2": -0.3})
    np.testing.assert_allclose(out.per_row, 0.5 * -0.3, rtol=1e-12)
    assert out["estimate"].iloc[0] == pytest.approx(-0.15, rel=1e-12)
    assert out["share_above_tol"].iloc[0] == 1.0 and out["n"].iloc[0] == len(frame)
    assert out["inference"].iloc[0] == "sample" and out["std_error"].iloc[0] < 1e-12  # the same value on every row


def test_ols_interaction_term_delta_se_is_the_coefficients(frame):
    m = smf.ols("y ~ x1 * x2", data=frame).fit()
    out = fme.interaction(m, frame, {"x1": 2.0}, {"x2": 0.5})
    b, se = m.params["x1:x2"], m.bse["x1:x2"]
    assert out["estimate"].iloc[0] == pytest.approx(b * 2.0 * 0.5, rel=1e-9)
    assert out["inference"].iloc[0] == "delta"
    assert out["std_error"].iloc[0] == pytest.approx(se * 2.0 * 0.5, rel=1e-8)


def test_logit_delta_se_by_a_hand_jacobian(frame):
    m = smf.logit("z ~ x1 * x2", data=frame).fit(disp=0)
    assert list(m.params.index) == ["Intercept", "x1", "x2", "x1:x2"]
    out = fme.interaction(m, frame, {"x1": 1.0}, {"x2": 1.0})
    pts = [(frame.x1, frame.x2), (frame.x1 + 1, frame.x2), (frame.x1, frame.x2 + 1), (frame.x1 + 1, frame.x2 + 1)]
    D = [np.column_stack([np.ones(len(frame)), a, b, a * b]) for a, b in pts]  # the design by hand

    def avg(p):
        f = [1 / (1 + np.exp(-(d @ p))) for d in D]
        return np.mean(f[3] - f[1] - f[2] + f[0])

    p0 = m.params.to_numpy()
    g = np.array([(avg(p0 + e) - avg(p0 - e)) / 2e-6 for e in np.eye(p0.size) * 1e-6])
    assert out["estimate"].iloc[0] == pytest.approx(avg(p0), rel=1e-10)
    assert out["std_error"].iloc[0] == pytest.approx(np.sqrt(g @ m.cov_params().to_numpy() @ g), rel=1e-5)


def test_bootstrap_uses_the_same_refits_for_both_effects(frame):
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures

    X, y = frame[["x1", "x2"]], frame["y"]
    pipe = make_pipeline(PolynomialFeatures(2, interaction_only=True, include_bias=False), LinearRegression()).fit(X, y)
    out = fme.interaction(
        pipe, X, {"x1": 1.0}, {"x2": 1.0}, bootstrap={"X": X, "y": y, "n_resamples": 40, "random_state": 0}
    )
    coef = pipe[-1].coef_[2]
    assert out["estimate"].iloc[0] == pytest.approx(coef, rel=1e-9)
    assert out["inference"].iloc[0] == "bootstrap"
    # each refit's interaction is that refit's own x1:x2 coefficient: refit on the same resamples by hand
    # (fme.inference.bootstrap draws resample b with default_rng(SeedSequence(random_state).spawn(B)[b]))
    coefs = []
    for seed in np.random.SeedSequence(0).spawn(40):
        idx = np.random.default_rng(seed).integers(0, len(X), len(X))
        coefs.append(
            make_pipeline(PolynomialFeatures(2, interaction_only=True, include_bias=False), LinearRegression())
            .fit(X.iloc[idx], y.iloc[idx])[-1]
            .coef_[2]
        )
    np.testing.assert_allclose(out.estimates.draws[0], coefs, rtol=1e-8)
    assert out["std_error"].iloc[0] == pytest.approx(np.std(coefs, ddof=1), rel=1e-8)


def test_the_per_row_interactions_are_a_typed_attribute_that_rides_along(frame):
    f = lambda d: d["x1"].to_numpy() * d["x2"].to_numpy()
    out = fme.interaction(f, frame[["x1", "x2"]], {"x1": 0.5}, {"x2": -0.3}, inference="sample")
    assert type(out) is InteractionTable and out.per_row.index.equals(frame.index)
    kept = [
        out.copy(),
        out.iloc[[0]],
        out[["estimate", "std_error"]],
        out.reset_index(drop=True),
        out.round(3),
        pd.concat([out, out]),
        pickle.loads(pickle.dumps(out)),
    ]
    for t in kept:
        assert type(t) is InteractionTable, type(t)
        np.testing.assert_allclose(t.per_row.to_numpy(), np.full(len(frame), -0.15), rtol=1e-12)
    # computed anew: none (pandas' attrs held a Series that made merge and concat fail)
    merged = out.merge(pd.DataFrame({"steps_a": ["x1 + 0.5"], "label": ["A"]}), on="steps_a")
    assert merged.per_row is None and merged["label"].tolist() == ["A"]
    assert fme.hypotheses(out, equivalence=[-1.0, 1.0])["estimate"].iloc[0] == pytest.approx(-0.15, rel=1e-12)
    dd = pytest.importorskip("dask.dataframe")
    on_dask = fme.interaction(
        f, dd.from_pandas(frame[["x1", "x2"]], npartitions=2), {"x1": 0.5}, {"x2": -0.3}, inference="sample"
    )
    assert type(on_dask) is InteractionTable and on_dask.per_row is None


def test_categorical_steps_and_rows_already_at_the_level(frame):
    f = lambda d: d["x1"].to_numpy() * (d["g"] == "b").to_numpy()
    out = fme.interaction(f, frame[["x1", "g"]], {"x1": 1.0}, {"g": "b"})
    at_b = int((frame["g"] == "b").sum())
    assert out["n_excluded"].iloc[0] == at_b and out["n"].iloc[0] == len(frame) - at_b
    np.testing.assert_allclose(out.per_row, 1.0, rtol=1e-12)


def test_extrapolation_leaves_out_rows_whose_any_point_is_outside(frame):
    f = lambda d: d["x1"].to_numpy() * d["x2"].to_numpy()
    X = frame[["x1", "x2"]]
    out = fme.interaction(f, X, {"x1": 1.0}, {"x2": 1.0}, extrapolation="envelope")
    outside = ((X["x1"] + 1 > X["x1"].max()) | (X["x2"] + 1 > X["x2"].max())).sum()
    assert out["n_excluded"].iloc[0] == outside and outside > 0


def test_hypotheses_and_equivalence_on_an_interaction(frame):
    m = smf.ols("y ~ x1 * x2", data=frame).fit()
    out = fme.interaction(m, frame, {"x1": 1.0}, {"x2": 1.0})
    h = fme.hypotheses(out, equivalence=[-0.1, 0.1])
    assert h["estimate"].iloc[0] == pytest.approx(m.params["x1:x2"], rel=1e-9)
    assert h["p_value_equiv"].iloc[0] > 0.5  # 0.7 is far outside [-0.1, 0.1]


@pytest.mark.parametrize(
    "a, b, match",
    [
        ({"x1": 1.0}, {"x1": 2.0}, "share the feature"),
        ({"x1": 1.0}, {"nope": 1.0}, "nope"),
    ],
)
def test_bad_steps_name_the_culprit(frame, a, b, match):
    with pytest.raises(fme.FMEError, match=match):
        fme.interaction(lambda d: d["x1"].to_numpy(), frame[["x1", "x2"]], a, b)


@pytest.mark.parametrize("inference", ["delta", "sample"])
def test_dask_data_give_the_pandas_interaction(frame, inference):
    dd = pytest.importorskip("dask.dataframe")
    m = smf.logit("z ~ x1 * x2", data=frame).fit(disp=0)
    X = frame[["x1", "x2"]]
    a = fme.interaction(m, X, {"x1": 1.0}, {"x2": 0.5}, inference=inference)
    b = fme.interaction(m, dd.from_pandas(X, npartitions=3, sort=False), {"x1": 1.0}, {"x2": 0.5}, inference=inference)
    for c in ("estimate", "std_error", "conf_low", "conf_high", "sd", "tol", "share_above_tol"):
        np.testing.assert_allclose(b[c].iloc[0], a[c].iloc[0], rtol=1e-10, err_msg=c)
    assert (b["n"].iloc[0], b["inference"].iloc[0]) == (a["n"].iloc[0], a["inference"].iloc[0])
    with pytest.raises(fme.ParameterError, match="rules"):
        fme.interaction(m, dd.from_pandas(X, npartitions=2), {"x1": "sd"}, {"x2": 0.5})
