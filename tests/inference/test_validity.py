"""Wald tests that know when they are not tests (fme.inference.validity).

The reference case: the global test of equal leaf cAMEs of a Poisson GLM (log link, 6 parameters) by the
delta method. Every cAME scales with exp(b0), so the contrasts lie in the span of their Jacobian; with as many
contrasts as parameter directions the statistic was (V^-1)_00, the intercept's information (the sum of the
fitted counts), whatever the leaves. Before the check, these partitions gave 288.00000012 (leaves that differ)
and 292.00000005 (leaves that do not), each equal to its model's (V^-1)_00 to 1e-9.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import fme
from fme.inference import Estimates
from fme.inference.validity import ROUNDING_TOL, numerical_rank
from fme.inference.wald import contrast_matrix, covariance, wald_test


def _poisson(seed: int, differ: bool, n: int = 300):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({f"x{j}": rng.uniform(-1, 1, n) for j in range(1, 6)})
    eta = 0.4 * X.x1 + (0.3 * X.x2 if differ else 0.0) - 0.2 * X.x3 + 0.1 * X.x4
    X["y"] = rng.poisson(np.exp(eta))
    return smf.glm("y ~ x1 + x2 + x3 + x4 + x5", X, family=sm.families.Poisson()).fit(), X


def _unchecked_wald(est: Estimates, L: np.ndarray) -> tuple[float, int]:
    """The statistic as it was computed before the checks: (Lb)' pinv(L C L') (Lb), df = matrix_rank."""
    b = L @ est.estimate
    S = L @ covariance(est) @ L.T
    return float(b @ np.linalg.pinv(S) @ b), int(np.linalg.matrix_rank(S))


@pytest.fixture(scope="module")
def poisson_partitions():
    out = []
    for seed, differ in ((0, True), (1, False)):
        model, X = _poisson(seed, differ)
        eff = fme.fme(model, X, {"x1": 0.5}, inference="delta")
        for leaves in (7, 8):
            part = fme.came(eff, method="cart", max_leaf_nodes=leaves, min_samples_leaf=5, honest=False, random_state=0)
            out.append((model, part))
    return out


def test_the_log_link_collapse_is_reproduced_and_refused(poisson_partitions):
    for model, part in poisson_partitions:
        est = part._leaf_estimates
        m = len(part.leaf_ids)
        assert m in (7, 8)
        L, _ = contrast_matrix(m, "reference")
        # the collapse: the unchecked statistic is the intercept's information, whether the leaves differ or not
        info = np.linalg.inv(est.vcov)[0, 0]
        w, _ = _unchecked_wald(est, L)
        assert w == pytest.approx(info, rel=1e-9)
        assert info == pytest.approx(model.fittedvalues.sum(), rel=1e-6)  # Poisson: the sum of fitted counts
        np.testing.assert_allclose(est.grad[:, 0], est.estimate, rtol=1e-9)  # J e_0 = theta (log link)
        g = part.test().global_test
        assert np.isnan(g["statistic"]) and np.isnan(g["p_value"])
        assert g["note"].startswith("not identified: ")
        expected = (
            "7 contrasts but the estimates depend on only 6 parameter directions"
            if m == 8
            else "the 6 contrasts fix all 6 parameter directions"
        )
        assert expected in g["note"]
    # the reported wording, 8 leaves
    assert (
        poisson_partitions[1][1]
        .test()
        .global_test["note"]
        .startswith("not identified: 7 contrasts but the estimates depend on only 6 parameter directions")
    )


def test_the_dask_engine_refuses_it_alike(poisson_partitions):
    dd = pytest.importorskip("dask.dataframe")
    model, X = _poisson(0, True)
    eff = fme.fme(model, dd.from_pandas(X, npartitions=3), {"x1": 0.5}, inference="delta")
    part = fme.came(eff, method="cart", max_leaf_nodes=8, min_samples_leaf=5, honest=False, random_state=0)
    g, g_memory = part.test().global_test, poisson_partitions[1][1].test().global_test
    assert len(part.leaf_ids) == 8 and np.isnan(g["statistic"]) and g["df"] == g_memory["df"] == 6
    assert g["note"] == g_memory["note"]


def test_the_pairwise_tests_of_the_same_leaves_stay(poisson_partitions):
    _, part = poisson_partitions[1]
    t = part.test()
    assert (t["note"] == "").all() and t["p_value"].notna().all() and t["p_value_adj"].notna().all()
    est = part._leaf_estimates
    L, _ = contrast_matrix(len(part.leaf_ids), "pairwise")
    c = est.contrast(L)
    se = np.sqrt(np.diag(covariance(c)))
    np.testing.assert_allclose(t["statistic"], c.estimate / se, rtol=1e-12)


def test_an_identified_global_test_keeps_its_statistic(poisson_partitions):
    # fewer contrasts than parameter directions: the same Poisson model with 4 leaves
    model, X = _poisson(0, True)
    eff = fme.fme(model, X, {"x1": 0.5}, inference="delta")
    part = fme.came(eff, method="cart", max_leaf_nodes=4, min_samples_leaf=5, honest=False, random_state=0)
    L, _ = contrast_matrix(len(part.leaf_ids), "reference")
    w, df = _unchecked_wald(part._leaf_estimates, L)
    g = part.test().global_test
    assert g["note"] == "" and g["df"] == df == 3
    assert g["statistic"] == pytest.approx(w, rel=1e-12)
    assert g["p_value"] == pytest.approx(stats.chi2.sf(w, df), rel=1e-12)


def test_a_linear_interaction_has_fewer_directions_than_contrasts_and_is_identified():
    """OLS with x*z: every leaf's cAME of x is b1 + b2 z_mean; the 3 contrasts vary along b2 only (rank 1 of
    the 2 directions the cAMEs depend on), a common level (b1) is free: the test of b2 = 0 with 1 df."""
    rng = np.random.default_rng(3)
    n = 400
    d = pd.DataFrame({"x": rng.normal(size=n), "z": rng.uniform(0, 4, size=n)})
    d["y"] = 1 + 0.5 * d.x + 0.2 * d.x * d.z + rng.normal(size=n)
    m = smf.ols("y ~ x * z", d).fit()
    eff = fme.fme(m, d, {"x": 1.0}, inference="delta")
    part = fme.came(
        eff, method="cart", features=["z"], max_leaf_nodes=4, min_samples_leaf=20, honest=False, random_state=0
    )
    L, _ = contrast_matrix(len(part.leaf_ids), "reference")
    w, df = _unchecked_wald(part._leaf_estimates, L)
    g = part.test().global_test
    assert g["note"] == "" and g["df"] == df == 1
    assert g["statistic"] == pytest.approx(w, rel=1e-12)
    z = m.params["x:z"] / m.bse["x:z"]
    assert g["statistic"] == pytest.approx(z**2, rel=1e-8)  # the Wald test of the interaction


def test_an_effect_of_one_interaction_coefficient_is_refused_as_a_test_of_equal_effects():
    """OLS y ~ x:z: every leaf's cAME of x is b2 z_mean, one parameter direction; the leaves are equal only when
    all are zero, so the 'equality' test is the test of b2 = 0 (valid as such: its statistic was the
    interaction's z squared) and is refused as a test of equal effects."""
    rng = np.random.default_rng(4)
    n = 400
    d = pd.DataFrame({"x": rng.normal(size=n), "z": rng.uniform(0, 4, size=n)})
    d["y"] = 1 + 0.2 * d.x * d.z + rng.normal(size=n)
    m = smf.ols("y ~ x:z", d).fit()
    eff = fme.fme(m, d, {"x": 1.0}, inference="delta")
    part = fme.came(
        eff, method="cart", features=["z"], max_leaf_nodes=4, min_samples_leaf=20, honest=False, random_state=0
    )
    L, _ = contrast_matrix(len(part.leaf_ids), "reference")
    w, _ = _unchecked_wald(part._leaf_estimates, L)
    assert w == pytest.approx((m.params["x:z"] / m.bse["x:z"]) ** 2, rel=1e-8)
    g = part.test().global_test
    assert np.isnan(g["statistic"]) and g["note"].startswith(
        "not identified: 3 contrasts but the estimates depend on only 1 parameter direction,"
    )


def test_a_standard_error_at_rounding_level_is_no_test():
    est = Estimates("sample", np.array([0.21]), se=np.array([6.7e-18]), df=np.array([99.0]))
    t = est.table()
    assert np.isnan(t["statistic"].iloc[0]) and np.isnan(t["p_value"].iloc[0])
    assert t["std_error"].iloc[0] == 6.7e-18  # the figure stays; its test goes
    assert est.notes()[0].startswith("standard error at rounding level (6.7e-18 for an estimate of 0.21)")
    # just above the tolerance it is a test again
    ok = Estimates("sample", np.array([0.21]), se=np.array([0.21 * ROUNDING_TOL * 2]), df=np.array([99.0]))
    assert np.isfinite(ok.table()["statistic"].iloc[0]) and ok.notes()[0] == ""


def test_a_linear_model_under_sample_inference_has_no_leaf_tests():
    """The fMEs of a linear model do not vary: each leaf's SE is rounding (SD of equal numbers), so neither
    the global test nor the differences are tests. Before the check the differences' z were -10.7, 0.94 and
    14.1 (estimates of 1e-16 over standard errors of 1e-17) and the global statistic 198.7 (p = 7e-44): a
    'significant' heterogeneity made of rounding; the AME's z was 1.5e16."""
    rng = np.random.default_rng(5)
    n = 300
    d = pd.DataFrame({"x": rng.normal(size=n), "z": rng.uniform(size=n)})
    d["y"] = 1 + 0.21 * d.x + d.z + rng.normal(size=n)
    m = smf.ols("y ~ x + z", d).fit()
    eff = fme.fme(m, d, {"x": 1.0}, inference="sample")
    sd = eff.results["fme"].std()
    assert sd < 1e-14  # the same fME on every row, to rounding
    h = fme.hypotheses(eff)
    assert np.isnan(h["statistic"].iloc[0]) and h["note"].iloc[0].startswith("standard error at rounding level")
    part = fme.came(
        eff, method="cart", features=["z"], max_leaf_nodes=3, min_samples_leaf=20, honest=False, random_state=0
    )
    t = part.test()
    assert t["statistic"].isna().all() and t["note"].str.startswith("standard error at rounding level").all()
    g = t.global_test
    assert np.isnan(g["statistic"]) and g["note"].startswith("standard error at rounding level")


def test_equivalence_and_equations_carry_the_note():
    est = Estimates("delta", np.array([0.21, 0.42]), grad=np.array([[1.0], [2.0]]) * 0.21, vcov=np.array([[0.01]]))
    table = fme.EstimatesTable.from_frame(pd.DataFrame({"estimate": est.estimate}), est, conf_level=0.95)
    # both estimates depend on one parameter direction: their equality fixes it (not identified) ...
    h = fme.hypotheses(table, "pairwise", equivalence=[-0.1, 0.1])
    assert h["note"].iloc[0].startswith("not identified: the contrast fixes the one parameter direction")
    assert h[["statistic", "p_value", "statistic_noninf", "p_value_equiv"]].isna().all().all()
    # ... as is the same equality written as an equation (its linearisation)
    e = fme.hypotheses(table, "b2 - b1 = 0")
    assert e["note"].iloc[0].startswith("not identified") and np.isnan(e["p_value"].iloc[0])
    # ... while each estimate alone is testable
    rows = fme.hypotheses(table)
    assert (rows["note"] == "").all() and rows["p_value"].notna().all()


def test_a_bootstrap_covariance_needs_more_refits_than_contrasts():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(6, 4))
    est = Estimates("bootstrap", draws.mean(axis=1), draws=draws)
    g = wald_test(est, contrast_matrix(6, "reference")[0])
    assert np.isnan(g["statistic"]) and "estimated from 4 refits" in g["note"]
    more = Estimates("bootstrap", draws.mean(axis=1) + 1, draws=rng.normal(size=(6, 50)))
    assert wald_test(more, contrast_matrix(6, "reference")[0])["note"] == ""


def test_numerical_rank_separates_rank_from_rounding():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(7, 6)) * np.logspace(0, 4, 6)  # columns on scales 1 .. 1e4
    J = A @ rng.normal(size=(6, 6))
    assert numerical_rank(J) == 6
    R = contrast_matrix(8, "reference")[0]
    G = R @ np.vstack([J, J[:1] * (1 + 1e-15)])  # 8 rows of rank 6, one repeated to rounding
    assert numerical_rank(G, np.linalg.norm(np.abs(R) @ np.abs(np.vstack([J, J[:1]])), axis=1)) == 6


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), q=st.integers(1, 4), method=st.sampled_from(["delta", "sample", "bootstrap"]))
def test_an_identified_statistic_does_not_depend_on_how_the_contrasts_are_written(seed, q, method):
    """W of R b = 0 equals W of (A R) b = 0 for any invertible A: the same hypothesis."""
    rng = np.random.default_rng(seed)
    m, k = 6, 8
    theta = rng.normal(size=m)
    if method == "delta":
        B = rng.normal(size=(k, k))
        est = Estimates("delta", theta, grad=rng.normal(size=(m, k)), vcov=B @ B.T / k + 0.1 * np.eye(k))
    elif method == "sample":
        est = Estimates("sample", theta, se=rng.uniform(0.1, 1.0, size=m), df=np.full(m, 50.0))
    else:
        est = Estimates("bootstrap", theta, draws=theta[:, None] + rng.normal(scale=0.3, size=(m, 40)))
    R = rng.normal(size=(q, m))
    A = rng.normal(size=(q, q)) + 3 * np.eye(q)  # invertible, not ill-conditioned
    w1, w2 = wald_test(est, R), wald_test(est, A @ R)
    assert w1["note"] == w2["note"] == "" and w1["df"] == w2["df"] == q
    assert w2["statistic"] == pytest.approx(w1["statistic"], rel=1e-8)
    w, _ = _unchecked_wald(est, R)
    assert w1["statistic"] == pytest.approx(w, rel=1e-8)
