"""fme.avg_comparisons: ratio, lnratio, lnor, lift and their ...avg forms.

References: a logit's log odds ratio for a step h in x is b_x h on every row (closed form, SE h se(b_x));
other scales by hand-written Jacobians through statsmodels' covariance; the difference equals fme.ame.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

import fme


@pytest.fixture(scope="module")
def logit():
    rng = np.random.default_rng(21)
    n = 500
    d = pd.DataFrame({"x": rng.normal(size=n), "w": rng.normal(size=n), "g": rng.choice(["a", "b"], n)})
    d["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-(-0.3 + 0.7 * d["x"] + 0.4 * d["w"])))).astype(float)
    return smf.logit("y ~ x + w", data=d).fit(disp=0), d


def _design(d, h=0.0):
    return np.column_stack([np.ones(len(d)), d["x"] + h, d["w"]])


def test_lnor_of_a_logit_is_the_coefficient_times_the_step(logit):
    m, d = logit
    out = fme.avg_comparisons(m, d, {"x": 0.5}, comparison="lnor_rows")
    assert out["estimate"].iloc[0] == pytest.approx(0.5 * m.params["x"], rel=1e-9)
    assert out["std_error"].iloc[0] == pytest.approx(0.5 * m.bse["x"], rel=1e-7)
    avg = fme.avg_comparisons(m, d, {"x": 0.5}, comparison="lnoravg")
    # marginaleffects' convention: the plain name is the scale of the averages
    pd.testing.assert_frame_equal(
        fme.avg_comparisons(m, d, {"x": 0.5}, comparison="lnor").drop(columns="comparison"),
        avg.drop(columns="comparison"),
    )
    b, V = m.params.to_numpy(), m.cov_params().to_numpy()
    p0, p1 = 1 / (1 + np.exp(-_design(d) @ b)), 1 / (1 + np.exp(-_design(d, 0.5) @ b))
    P0, P1 = p0.mean(), p1.mean()
    g = ((p1 * (1 - p1))[:, None] * _design(d, 0.5)).mean(0) / (P1 * (1 - P1)) - (
        (p0 * (1 - p0))[:, None] * _design(d)
    ).mean(0) / (P0 * (1 - P0))
    assert avg["estimate"].iloc[0] == pytest.approx(np.log(P1 / (1 - P1)) - np.log(P0 / (1 - P0)), rel=1e-10)
    assert avg["std_error"].iloc[0] == pytest.approx(np.sqrt(g @ V @ g), rel=1e-7)


@pytest.mark.parametrize("kind", ["ratio", "lnratio", "lift"])
def test_row_scales_by_hand_jacobians(logit, kind):
    m, d = logit
    b, V = m.params.to_numpy(), m.cov_params().to_numpy()
    D0, D1 = _design(d), _design(d, 1.0)
    p0, p1 = 1 / (1 + np.exp(-D0 @ b)), 1 / (1 + np.exp(-D1 @ b))
    J0, J1 = (p0 * (1 - p0))[:, None] * D0, (p1 * (1 - p1))[:, None] * D1
    if kind == "ratio":
        c, J = p1 / p0, J1 / p0[:, None] - (p1 / p0**2)[:, None] * J0
    elif kind == "lnratio":
        c, J = np.log(p1 / p0), J1 / p1[:, None] - J0 / p0[:, None]
    else:
        c, J = (p1 - p0) / p0, J1 / p0[:, None] - (p1 / p0**2)[:, None] * J0
    g = J.mean(0)
    out = fme.avg_comparisons(m, d, {"x": 1.0}, comparison=f"{kind}_rows")
    assert out["estimate"].iloc[0] == pytest.approx(c.mean(), rel=1e-10)
    assert out["std_error"].iloc[0] == pytest.approx(np.sqrt(g @ V @ g), rel=1e-7)
    assert out["comparison"].iloc[0] == f"{kind}_rows" and out["inference"].iloc[0] == "delta"


def test_difference_equals_ame_and_ratioavg_by_group(logit):
    m, d = logit
    diff = fme.avg_comparisons(m, d, {"x": 1.0})
    a = fme.ame(m, d, {"x": 1.0})
    assert diff["estimate"].iloc[0] == pytest.approx(a["ame"].iloc[0], rel=1e-10)
    assert diff["std_error"].iloc[0] == pytest.approx(a["std_error"].iloc[0], rel=1e-7)
    out = fme.avg_comparisons(m, d, {"x": 1.0}, comparison="ratioavg", by="g")
    b = m.params.to_numpy()
    for _, row in out.iterrows():
        sub = d[d["g"] == row["g"]]
        p0, p1 = 1 / (1 + np.exp(-_design(sub) @ b)), 1 / (1 + np.exp(-_design(sub, 1.0) @ b))
        assert row["estimate"] == pytest.approx(p1.mean() / p0.mean(), rel=1e-10) and row["n"] == len(sub)


def test_sample_inference_and_refusals():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    X = pd.DataFrame({"x": rng.normal(size=200)})
    y = (rng.uniform(size=200) < 1 / (1 + np.exp(-X["x"]))).astype(int)
    clf = LogisticRegression().fit(X, y)
    out = fme.avg_comparisons(clf, X, {"x": 1.0}, comparison="ratio_rows", target_class=1)
    p = clf.predict_proba(X)[:, 1]
    p1 = clf.predict_proba(X.assign(x=X["x"] + 1))[:, 1]
    r = p1 / p
    assert out["inference"].iloc[0] == "sample" and out["estimate"].iloc[0] == pytest.approx(r.mean(), rel=1e-10)
    half = stats.t.ppf(0.975, 199) * r.std(ddof=1) / np.sqrt(200)
    assert out["conf_high"].iloc[0] == pytest.approx(r.mean() + half, rel=1e-9)
    # the ratio of the averages with the model held fixed: the linearisation d1 p1 + d0 p0 over the rows
    avg = fme.avg_comparisons(clf, X, {"x": 1.0}, comparison="ratio", target_class=1)
    P1, P0 = p1.mean(), p.mean()
    psi = p1 / P0 - (P1 / P0**2) * p
    assert avg["inference"].iloc[0] == "sample" and avg["estimate"].iloc[0] == pytest.approx(P1 / P0, rel=1e-12)
    assert avg["std_error"].iloc[0] == pytest.approx(psi.std(ddof=1) / np.sqrt(200), rel=1e-9)
    lnor = fme.avg_comparisons(clf, X, {"x": 1.0}, comparison="lnoravg", target_class=1)
    psi = p1 / (P1 * (1 - P1)) - p / (P0 * (1 - P0))
    assert lnor["std_error"].iloc[0] == pytest.approx(psi.std(ddof=1) / np.sqrt(200), rel=1e-9)
    with pytest.raises(fme.ParameterError, match="comparison must be"):
        fme.avg_comparisons(clf, X, {"x": 1.0}, comparison="odds", target_class=1)


def test_ame_comparison_rows_keep_their_joint_covariance(logit):
    m, d = logit
    table = fme.ame(m, d, {"x": 1.0, "w": 1.0}, comparison="lnratio")
    a = fme.avg_comparisons(m, d, {"x": 1.0}, comparison="lnratio").estimates
    b = fme.avg_comparisons(m, d, {"w": 1.0}, comparison="lnratio").estimates
    g = a.grad[0] - b.grad[0]  # the difference's gradient: both rows share the model's covariance
    out = fme.ame(m, d, {"x": 1.0, "w": 1.0}, comparison="lnratio", hypothesis="b1 - b2 = 0").iloc[0]
    assert out["estimate"] == pytest.approx(table["estimate"].iloc[0] - table["estimate"].iloc[1], rel=1e-10)
    assert out["std_error"] == pytest.approx(np.sqrt(g @ a.vcov @ g), rel=1e-6)
    eq = fme.ame(m, d, {"x": 1.0}, comparison="lnratio", equivalence=[-1.0, 1.0])
    assert eq["p_value_equiv"].iloc[0] < 0.05
