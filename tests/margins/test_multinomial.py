"""Multinomial models: statsmodels MNLogit with target_class, delta SEs per outcome.

Reference: the softmax's analytic Jacobian, dp_j / dB_m = p_j (1(j = m) - p_m) x for the non-base
outcomes m, through statsmodels' own covariance (outcome by outcome, its cov_params order).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import fme


@pytest.fixture(scope="module")
def mnl():
    rng = np.random.default_rng(0)
    n = 500
    d = pd.DataFrame({"x": rng.normal(size=n), "w": rng.normal(size=n)})
    u = np.column_stack([np.zeros(n), 0.5 + d.x, -0.3 + 0.8 * d.w])
    p = np.exp(u) / np.exp(u).sum(1, keepdims=True)
    d["y"] = [rng.choice(3, p=row) for row in p]
    return smf.mnlogit("y ~ x + w", data=d).fit(disp=0), d


def _probs(B, D):
    u = np.column_stack([np.zeros(len(D)), D @ B])
    e = np.exp(u - u.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.mark.parametrize("outcome", [0, 1, 2])
def test_ame_and_delta_se_per_outcome(mnl, outcome):
    m, d = mnl
    B = np.asarray(m.params, dtype=float)  # K x (J - 1), outcomes 1 and 2
    D0 = np.column_stack([np.ones(len(d)), d["x"], d["w"]])
    D1 = D0 + np.array([0.0, 1.0, 0.0])
    P0, P1 = _probs(B, D0), _probs(B, D1)
    ame = (P1[:, outcome] - P0[:, outcome]).mean()

    def jac(P, D):  # d p_outcome / d vec(B) (F order: outcome 1's coefficients, then outcome 2's)
        blocks = [(P[:, outcome] * ((outcome == mm) - P[:, mm]))[:, None] * D for mm in (1, 2)]
        return np.hstack(blocks)

    g = (jac(P1, D1) - jac(P0, D0)).mean(0)
    se = np.sqrt(g @ m.cov_params().to_numpy() @ g)
    out = fme.ame(m, d, {"x": 1}, target_class=outcome)
    assert out["inference"].iloc[0] == "delta"
    assert out["ame"].iloc[0] == pytest.approx(ame, rel=1e-10)
    assert out["std_error"].iloc[0] == pytest.approx(se, rel=1e-6)


def test_all_outcomes_and_the_missing_target_class(mnl):
    m, d = mnl
    r = fme.fme(m, d, {"x": 1}, target_class="all")
    assert list(r.output_names) == ["0", "1", "2"]
    assert r.ame.sum() == pytest.approx(0.0, abs=1e-12)  # probabilities sum to 1 at x and at x + h
    with pytest.raises(fme.ParameterError, match="target_class"):
        fme.ame(m, d, {"x": 1})
    with pytest.raises(fme.ParameterError, match="outcomes are"):
        fme.ame(m, d, {"x": 1}, target_class=7)


def test_predictions_of_an_outcome(mnl):
    m, d = mnl
    out = fme.avg_predictions(m, d, target_class=2)
    assert out["estimate"].iloc[0] == pytest.approx(np.asarray(m.predict(d))[:, 2].mean(), rel=1e-10)
    assert out["inference"].iloc[0] == "delta" and out["std_error"].iloc[0] > 0
