"""fme.hypotheses and ame(hypothesis=, equivalence=, multcomp=).

Reference: for an OLS model the AME of a unit step of x_k is the coefficient b_k, and the delta method's
joint covariance of those AMEs is the coefficients' covariance block, so every contrast, equation and
equivalence test has a closed form from statsmodels' own params and cov_params.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

import fme


@pytest.fixture(scope="module")
def ols():
    rng = np.random.default_rng(11)
    n = 400
    d = pd.DataFrame(
        {
            "x1": rng.normal(size=n),
            "x2": rng.normal(size=n),
            "x3": rng.normal(size=n),
            "g": rng.choice(["a", "b", "c"], size=n),
        }
    )
    d["y"] = 1.0 + 0.8 * d["x1"] + 0.5 * d["x2"] - 0.3 * d["x3"] + rng.normal(scale=1.0, size=n)
    m = smf.ols("y ~ x1 + x2 + x3", data=d).fit()
    return m, d


def _b_v(m):
    b = m.params[["x1", "x2", "x3"]].to_numpy()
    V = m.cov_params().loc[["x1", "x2", "x3"], ["x1", "x2", "x3"]].to_numpy()
    return b, V


def test_rows_carry_their_joint_covariance(ols):
    m, d = ols
    t = fme.ame(m, d, {"x1": 1, "x2": 1, "x3": 1})
    b, V = _b_v(m)
    np.testing.assert_allclose(t["ame"], b, rtol=1e-10)
    h = fme.hypotheses(t)
    np.testing.assert_allclose(h["estimate"], b, rtol=1e-10)
    np.testing.assert_allclose(h["std_error"], np.sqrt(np.diag(V)), rtol=1e-8)
    assert h["hypothesis"].tolist() == ["b1", "b2", "b3"]


@pytest.mark.parametrize(
    "name, pairs",
    [
        ("pairwise", [(1, 0), (2, 0), (2, 1)]),
        ("revpairwise", [(0, 1), (0, 2), (1, 2)]),
        ("reference", [(1, 0), (2, 0)]),
        ("revreference", [(0, 1), (0, 2)]),
        ("sequential", [(1, 0), (2, 1)]),
        ("revsequential", [(0, 1), (1, 2)]),
    ],
)
def test_named_hypotheses_are_the_right_differences(ols, name, pairs):
    m, d = ols
    b, V = _b_v(m)
    t = fme.ame(m, d, {"x1": 1, "x2": 1, "x3": 1})
    # fme.ame(hypothesis='pairwise') is the by-group comparison (it needs by=); the others apply to the rows
    h = fme.hypotheses(t, name) if name == "pairwise" else fme.ame(m, d, {"x1": 1, "x2": 1, "x3": 1}, hypothesis=name)
    assert h["hypothesis"].tolist() == [f"b{a + 1} - b{c + 1}" for a, c in pairs]
    for r, (a, c) in enumerate(pairs):
        se = np.sqrt(V[a, a] + V[c, c] - 2 * V[a, c])
        assert h["estimate"].iloc[r] == pytest.approx(b[a] - b[c], rel=1e-9)
        assert h["std_error"].iloc[r] == pytest.approx(se, rel=1e-8)
        assert h["p_value"].iloc[r] == pytest.approx(2 * stats.norm.sf(abs(b[a] - b[c]) / se), rel=1e-6)


def test_equations_linear_and_ratio_by_the_delta_method(ols):
    m, d = ols
    b, V = _b_v(m)
    t = fme.ame(m, d, {"x1": 1, "x2": 1, "x3": 1})
    lin = fme.hypotheses(t, "b1 - 2 * b3 = 0.1")
    g = np.array([1.0, 0.0, -2.0])
    assert lin["estimate"].iloc[0] == pytest.approx(b[0] - 2 * b[2] - 0.1, rel=1e-9)
    assert lin["std_error"].iloc[0] == pytest.approx(np.sqrt(g @ V @ g), rel=1e-6)
    # statsmodels' own Wald test of the same restriction: same estimate and SE
    tt = m.t_test("x1 - 2 * x3 = 0.1")  # effect = x1 - 2 x3, tested against 0.1
    assert lin["estimate"].iloc[0] == pytest.approx(float(np.squeeze(tt.effect)) - 0.1, rel=1e-9)
    assert lin["std_error"].iloc[0] == pytest.approx(float(np.squeeze(tt.sd)), rel=1e-6)
    ratio = fme.hypotheses(t, "b2 / b1 = 1")
    grad = np.array([-b[1] / b[0] ** 2, 1 / b[0], 0.0])
    assert ratio["hypothesis"].iloc[0] == "b2 / b1 = 1"
    assert ratio["estimate"].iloc[0] == pytest.approx(b[1] / b[0] - 1, rel=1e-9)
    assert ratio["std_error"].iloc[0] == pytest.approx(np.sqrt(grad @ V @ grad), rel=1e-6)


def test_a_matrix_of_contrast_weights(ols):
    m, d = ols
    b, V = _b_v(m)
    W = np.array([[1.0, 0.5], [-1.0, 0.5], [0.0, 0.0]])
    h = fme.ame(m, d, {"x1": 1, "x2": 1, "x3": 1}, hypothesis=W)
    assert h["hypothesis"].tolist() == ["H1", "H2"]
    np.testing.assert_allclose(h["estimate"], W.T @ b, rtol=1e-9)
    np.testing.assert_allclose(h["std_error"], np.sqrt(np.diag(W.T @ V @ W)), rtol=1e-6)


def test_equivalence_is_two_one_sided_tests_by_hand(ols):
    m, d = ols
    b, V = _b_v(m)
    h = fme.ame(m, d, {"x1": 1, "x2": 1}, equivalence=[0.4, 0.9])
    se = np.sqrt(np.diag(V))[:2]
    lo, hi = (b[:2] - 0.4) / se, (b[:2] - 0.9) / se
    np.testing.assert_allclose(h["statistic_noninf"], lo, rtol=1e-6)
    np.testing.assert_allclose(h["p_value_noninf"], stats.norm.sf(lo), rtol=1e-5)
    np.testing.assert_allclose(h["p_value_nonsup"], stats.norm.cdf(hi), rtol=1e-5)
    np.testing.assert_allclose(h["p_value_equiv"], np.maximum(stats.norm.sf(lo), stats.norm.cdf(hi)), rtol=1e-5)


def test_multcomp_adjusts_the_family(ols):
    from statsmodels.stats.multitest import multipletests

    m, d = ols
    for method in ("holm", "bonferroni", "fdr_bh"):
        h = fme.ame(m, d, {"x1": 1, "x2": 1, "x3": 1}, hypothesis="sequential", multcomp=method)
        assert (h["multcomp"] == method).all()
        np.testing.assert_allclose(h["p_value_adj"], multipletests(h["p_value"], method=method)[1], rtol=1e-12)


def test_by_groups_keep_their_pairs_and_take_equations(ols):
    m, d = ols
    t = fme.ame(m, d, {"x1": 1}, by="g")
    assert len(t) == 3
    h = fme.hypotheses(t, "b3 - b1 = 0")
    assert h["estimate"].iloc[0] == pytest.approx(t["ame"].iloc[2] - t["ame"].iloc[0], rel=1e-9)
    pairs = fme.ame(m, d, {"x1": 1}, by="g", hypothesis="pairwise")
    again = fme.hypotheses(pairs)  # the pairs' joint covariance is kept too
    np.testing.assert_allclose(again["std_error"], pairs["std_error"], rtol=1e-12)


def test_bootstrap_equations_use_each_refit():
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(3)
    X = pd.DataFrame({"x1": rng.normal(size=200), "x2": rng.normal(size=200)})
    y = 2 * X["x1"] + X["x2"] + rng.normal(size=200)
    lr = LinearRegression().fit(X, y)
    t = fme.ame(lr, X, {"x1": 1, "x2": 1}, bootstrap={"X": X, "y": y, "n_resamples": 60, "random_state": 0})
    est = t.estimates
    h = fme.hypotheses(t, "b1 / b2 = 2")
    ratio = est.draws[0] / est.draws[1] - 2
    assert h["estimate"].iloc[0] == pytest.approx(t["ame"].iloc[0] / t["ame"].iloc[1] - 2, rel=1e-9)
    assert h["std_error"].iloc[0] == pytest.approx(ratio.std(ddof=1), rel=1e-12)
    assert h["inference"].iloc[0] == "bootstrap"


def test_partitions_and_single_effects():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.uniform(0, 1, 600), "z": rng.uniform(0, 1, 600)})
    eff = fme.fme(lambda d: d["x"].to_numpy() * (1 + 3 * (d["z"].to_numpy() > 0.5)), X, {"x": 1.0})
    single = fme.hypotheses(eff, equivalence=[0.0, 10.0])
    assert single["estimate"].iloc[0] == pytest.approx(eff.ame, rel=1e-12)
    assert single["std_error"].iloc[0] == pytest.approx(eff.std_error, rel=1e-12)
    part = fme.came(eff, features=["z"], maxdepth=1)
    h = fme.hypotheses(part, "pairwise", multcomp="holm")
    t = part.test()
    np.testing.assert_allclose(h["estimate"], t["estimate"], rtol=1e-12)
    np.testing.assert_allclose(h["p_value_adj"], t["p_value_adj"], rtol=1e-12)


@pytest.mark.parametrize(
    "hyp, match",
    [
        ("b1 - b4 = 0", "not a row"),
        ("b0 = 0", "not a row"),
        ("b1 - b2", "exactly one '='"),
        ("__import__('os').system('true') = 0", "allowed"),
        ("b1.real = 0", "allowed"),
        ("sin(b1) = 0", "functions"),
        ("diagonal", "must be one of"),
    ],
)
def test_bad_hypotheses_are_refused_with_the_reason(ols, hyp, match):
    m, d = ols
    t = fme.ame(m, d, {"x1": 1, "x2": 1, "x3": 1})
    with pytest.raises(fme.ParameterError, match=match):
        fme.hypotheses(t, hyp if hyp != "diagonal" else None, multcomp="diagonal" if hyp == "diagonal" else None)


def test_a_frame_without_its_covariance_says_why(ols):
    m, d = ols
    t = fme.ame(m, d, {"x1": 1, "x2": 1})
    assert isinstance(t, fme.EstimatesTable)
    with pytest.raises(fme.ParameterError, match="this DataFrame keeps no joint covariance") as info:
        fme.hypotheses(pd.DataFrame(t.to_dict()))  # a rebuilt, plain frame
    assert "attrs" not in str(info.value) and "EstimatesTable" in str(info.value)
    with pytest.raises(fme.ParameterError, match="got list"):
        fme.hypotheses([1.0, 2.0])
    swapped = t.iloc[::-1].copy()
    swapped.index = t.index  # the labels no longer follow the rows
    rescaled = t.assign(ame=t["ame"] * 100)  # estimates changed after fme.ame
    for changed in (swapped, rescaled):
        with pytest.raises(fme.ParameterError, match="rows of this table are not those"):
            fme.hypotheses(changed)
    with pytest.raises(fme.ParameterError, match="keeps no joint covariance"):
        fme.hypotheses(t.merge(pd.DataFrame({"feature": ["x1", "x2"], "note": 1}), on="feature"))
    same = fme.hypotheses(t[["feature", "ame", "std_error"]])  # columns only: still the same rows
    np.testing.assert_allclose(same["estimate"], t["ame"], rtol=1e-12)
    np.testing.assert_allclose(same["std_error"], t["std_error"], rtol=1e-12)


def test_hypotheses_tables_can_be_tested_again(ols):
    """The table of hypotheses keeps their joint uncertainty: a contrast of contrasts equals the direct one."""
    m, d = ols
    t = fme.ame(m, d, {"x1": 1, "x2": 1, "x3": 1})
    seq = fme.hypotheses(t, "sequential")  # b2 - b1, b3 - b2
    assert isinstance(seq, fme.EstimatesTable) and seq.conf_level == 0.95
    twice = fme.hypotheses(seq, "b2 - b1 = 0")  # b3 - 2 b2 + b1
    direct = fme.hypotheses(t, np.array([1.0, -2.0, 1.0]))
    assert twice["estimate"].iloc[0] == pytest.approx(direct["estimate"].iloc[0], rel=1e-12)
    assert twice["std_error"].iloc[0] == pytest.approx(direct["std_error"].iloc[0], rel=1e-12)


def test_a_bad_equation_names_the_term_it_cannot_read(ols):
    m, d = ols
    t = fme.ame(m, d, {"x1": 1, "x2": 1})
    with pytest.raises(fme.ParameterError, match=r"cannot be read near 'b\* /'"):
        fme.hypotheses(t, "b* / b1 = 1")
    with pytest.raises(fme.ParameterError, match=r"'b7' is not a row; the rows are b1..b2"):
        fme.hypotheses(t, ["b1 = 0", "b7 = 0"])


def test_a_list_of_equations_is_tested_jointly(ols):
    """Each row equals the equation tested alone; the rows keep their joint covariance, so a test on them equals
    the single equation of their sum (the delta method of the composite function)."""
    m, d = ols
    t = fme.ame(m, d, {"x1": 1, "x2": 1, "x3": 1})
    eqs = ["b1 - b2 = 0", "b2 / b1 = 1"]
    both = fme.hypotheses(t, eqs)
    assert both["hypothesis"].tolist() == eqs
    for k, eq in enumerate(eqs):
        alone = fme.hypotheses(t, eq)
        np.testing.assert_allclose(
            both[["estimate", "std_error"]].iloc[k].to_numpy(dtype=float),
            alone[["estimate", "std_error"]].iloc[0].to_numpy(dtype=float),
            rtol=1e-10,
        )
    total = fme.hypotheses(both, "b1 + b2 = 0")
    direct = fme.hypotheses(t, "(b1 - b2) + (b2 / b1 - 1) = 0")
    np.testing.assert_allclose(total["estimate"], direct["estimate"], rtol=1e-12)
    np.testing.assert_allclose(total["std_error"], direct["std_error"], rtol=1e-6)
