"""The margins vocabulary against Python marginaleffects 0.6: slopes, comparison scales,
predictions and equivalence tests on the logit and Poisson models of tests/test_inference.py.

References: tests/fixtures/marginaleffects/vocab.csv, written by tests/make_marginaleffects_vocab_refs.py in a
throwaway venv (versions in vocab_versions.txt). marginaleffects' avg_comparisons applies the ratio-type
scales to the averages, and so does fme under the same names (``ratio`` = ``ratioavg``); fme's ``..._rows``
forms average the rows' values instead.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf

import fme

REFS = Path(__file__).parents[1] / "fixtures" / "marginaleffects"
FORMULAS = {"logit": "yb ~ age + I(age**2) + income + age:income + C(g)", "poisson": "count ~ age + income + C(g)"}


@pytest.fixture(scope="module")
def data():
    d = pd.read_csv(REFS / "data.csv")
    d["g"] = d["g"].astype("category")
    return d


@pytest.fixture(scope="module")
def refs():
    return pd.read_csv(REFS / "vocab.csv", keep_default_na=False, na_values=[""])


def _model(name, data):
    if name == "logit":
        return smf.logit(FORMULAS[name], data).fit(disp=0)
    return smf.glm(FORMULAS[name], data, family=sm.families.Poisson()).fit()


def _ref(refs, model, case, group=""):
    r = refs[(refs["model"] == model) & (refs["case"] == case) & (refs["group"].fillna("") == group)]
    assert len(r) == 1, (model, case, group)
    return r.iloc[0]


@pytest.mark.parametrize("name", ["logit", "poisson"])
@pytest.mark.parametrize("slope", ["dydx", "eyex", "eydx", "dyex"])
def test_avg_slopes_match_marginaleffects(name, slope, data, refs):
    out = fme.avg_slopes(_model(name, data), data, "income", slope=slope).iloc[0]
    r = _ref(refs, name, f"slope_{slope}")
    # both difference in x with a step of 1e-4 of the range (measured: estimates within 5e-9 relative, rounding of
    # the two differencing schemes); marginaleffects' SEs differentiate numerically in the parameters, fme's
    # analytically for these GLMs (measured: within 1.6e-3 relative, the elasticities the widest)
    assert out["estimate"] == pytest.approx(r["estimate"], rel=1e-8)
    assert out["std_error"] == pytest.approx(r["std_error"], rel=2e-3)


@pytest.mark.parametrize(
    "name, comparison",
    [
        (n, c)
        for n in ("logit", "poisson")
        for c in ("ratio", "lnratio", "lnor", "lift", "ratioavg", "lnratioavg", "lnoravg", "liftavg")
        if not (n == "poisson" and c.startswith("lnor"))
    ],
)
def test_comparison_scales_match_marginaleffects(name, comparison, data, refs):
    out = fme.avg_comparisons(_model(name, data), data, {"income": 0.5}, comparison=comparison).iloc[0]
    r = _ref(refs, name, f"cmp_{comparison}")
    assert out["estimate"] == pytest.approx(r["estimate"], rel=1e-10)
    assert out["std_error"] == pytest.approx(r["std_error"], rel=1e-4)


@pytest.mark.parametrize("name", ["logit", "poisson"])
def test_avg_predictions_match_marginaleffects(name, data, refs):
    m = _model(name, data)
    whole = fme.avg_predictions(m, data).iloc[0]
    r = _ref(refs, name, "pred")
    assert whole["estimate"] == pytest.approx(r["estimate"], rel=1e-10)
    assert whole["std_error"] == pytest.approx(r["std_error"], rel=1e-4)
    by = fme.avg_predictions(m, data, by="g")
    for _, row in by.iterrows():
        r = _ref(refs, name, "pred_by", str(row["g"]))
        assert row["estimate"] == pytest.approx(r["estimate"], rel=1e-10)
        assert row["std_error"] == pytest.approx(r["std_error"], rel=1e-4)


@pytest.mark.parametrize("name", ["logit", "poisson"])
def test_equivalence_matches_marginaleffects(name, data, refs):
    out = fme.ame(_model(name, data), data, {"income": 0.5}, equivalence=[0.0, 0.2]).iloc[0]
    r = _ref(refs, name, "equiv")
    assert out["estimate"] == pytest.approx(r["estimate"], rel=1e-10)
    assert out["std_error"] == pytest.approx(r["std_error"], rel=1e-4)
    for c in ("p_value_noninf", "p_value_nonsup", "p_value_equiv"):
        assert out[c] == pytest.approx(r[c], rel=1e-3, abs=1e-12), c


def test_mer_hypothesis_tests_the_grid_points_jointly():
    import statsmodels.formula.api as smf
    from scipy import stats

    rng = np.random.default_rng(4)
    d = pd.DataFrame({"x": rng.normal(size=400), "z": rng.normal(size=400)})
    d["y"] = (rng.uniform(size=400) < 1 / (1 + np.exp(-(0.5 + d.x - 0.7 * d.z)))).astype(float)
    m = smf.logit("y ~ x + z + I(x**2)", d).fit(disp=0)
    out = fme.mer(m, d, {"x": 1.0}, at={"x": [-1.0, 0.5]}, hypothesis="b2 - b1 = 0", inference="delta")
    # reference: the two grid rows' fMEs and their Jacobian rows from fme.fme on the same grid
    grid = fme.mer(m, d, {"x": 1.0}, at={"x": [-1.0, 0.5]}, inference="delta")
    rows = pd.DataFrame({"x": [-1.0, 0.5], "z": [d.z.mean()] * 2})
    res = fme.fme(m, rows, {"x": 1.0}, inference="delta", reference_data=d)
    np.testing.assert_allclose(grid["fme"], res.results["fme"], rtol=1e-12)
    g = res.inference_rows.jacobian[1] - res.inference_rows.jacobian[0]
    se = float(np.sqrt(g @ res.inference_rows.vcov @ g))
    est = float(res.results["fme"].iloc[1] - res.results["fme"].iloc[0])
    np.testing.assert_allclose(out["estimate"], [est], rtol=1e-10)
    np.testing.assert_allclose(out["std_error"], [se], rtol=1e-6)  # hypotheses differentiates numerically
    np.testing.assert_allclose(out["p_value"], [2 * stats.norm.sf(abs(est / se))], rtol=1e-5)
    with pytest.raises(fme.ParameterError, match="every grid point"):
        fme.mer(
            m,
            d.assign(c=np.where(d.x > 0, "u", "v")),
            {"x": 1.0},
            at={"x": [0.0, 1e6]},
            hypothesis="pairwise",
            inference="delta",
            extrapolation="envelope",
        )


def test_avg_comparisons_refuses_nlm_and_says_its_scale():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(5)
    d = pd.DataFrame({"x": rng.normal(size=200)})
    d["y"] = (rng.uniform(size=200) < 1 / (1 + np.exp(-d.x))).astype(float)
    m = smf.logit("y ~ x", d).fit(disp=0)
    for comparison in ("difference", "ratio"):
        with pytest.raises(fme.ParameterError, match="difference scale"):
            fme.avg_comparisons(m, d, {"x": 1.0}, comparison=comparison, nlm=True)


def test_ame_refuses_nlm_rather_than_dropping_it():
    rng = np.random.default_rng(6)
    d = pd.DataFrame({"x": rng.normal(size=50)})
    with pytest.raises(fme.ParameterError, match=r"\.anlm"):
        fme.ame(lambda X: X["x"] ** 2, d, {"x": 1.0}, nlm=True)


def test_ame_of_every_class_of_a_multinomial_model():
    """target_class='all': one row per outcome, each equal to its own call; the classes' probabilities sum to
    one, so their AMEs sum to zero with zero standard error under the joint covariance."""
    rng = np.random.default_rng(7)
    d = pd.DataFrame({"x": rng.normal(size=600), "z": rng.normal(size=600)})
    eta = np.column_stack([np.zeros(600), 0.8 * d.x - 0.3 * d.z, -0.5 * d.x + 0.4 * d.z])
    p = np.exp(eta) / np.exp(eta).sum(axis=1, keepdims=True)
    d["k"] = (rng.uniform(size=600)[:, None] > p.cumsum(axis=1)).sum(axis=1)
    m = smf.mnlogit("k ~ x + z", d).fit(disp=0)
    t = fme.ame(m, d, {"x": 1.0, "z": 0.5}, target_class="all", inference="delta")
    assert list(t["class"]) == ["0", "0", "1", "1", "2", "2"]
    for k in ("0", "1", "2"):
        one = fme.ame(m, d, {"x": 1.0, "z": 0.5}, target_class=k, inference="delta")
        np.testing.assert_array_equal(t.loc[t["class"] == k, "ame"], one["ame"])
        np.testing.assert_array_equal(t.loc[t["class"] == k, "std_error"], one["std_error"])
    total = fme.hypotheses(t, "b1 + b3 + b5 = 0")
    assert abs(total["estimate"].iloc[0]) < 1e-12 and total["std_error"].iloc[0] < 1e-6
    with pytest.raises(fme.FMEError, match="not a classifier"):
        fme.ame(smf.ols("x ~ z", d).fit(), d, {"z": 1.0}, target_class="all")


def test_every_level_against_the_reference_on_comparison_scales():
    """steps={feature: None}: each level against the first, every row set to the reference then to the level.
    For a logit the per-row log odds ratio of a level is its coefficient on every row, so its average and
    delta standard error are the coefficient's; the difference equals fme.ame(categorical='classic')."""
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(8)
    d = pd.DataFrame({"x": rng.normal(size=500), "c": rng.choice(["a", "b", "c"], 500)})
    d["y"] = (rng.uniform(size=500) < 1 / (1 + np.exp(-(d.x + (d.c == "b") - 0.5 * (d.c == "c"))))).astype(float)
    m = smf.logit("y ~ x + C(c)", d).fit(disp=0)
    t = fme.avg_comparisons(m, d, {"c": None}, comparison="lnor_rows", inference="delta")
    assert list(t["step"]) == ["c: 'a' -> 'b'", "c: 'a' -> 'c'"]
    np.testing.assert_allclose(t["estimate"], m.params[["C(c)[T.b]", "C(c)[T.c]"]], rtol=1e-9)
    np.testing.assert_allclose(t["std_error"], m.bse[["C(c)[T.b]", "C(c)[T.c]"]], rtol=1e-6)
    diff = fme.avg_comparisons(m, d, {"c": None}, inference="delta")
    classic = fme.ame(m, d, {"c": None}, categorical="classic", inference="delta")
    np.testing.assert_allclose(diff["estimate"], classic["ame"], rtol=1e-12)
    np.testing.assert_allclose(diff["std_error"], classic["std_error"], rtol=1e-9)
    h = fme.hypotheses(t, "b1 - b2 = 0")  # joint: the coefficients' own covariance
    V = m.cov_params().loc[["C(c)[T.b]", "C(c)[T.c]"], ["C(c)[T.b]", "C(c)[T.c]"]].to_numpy()
    np.testing.assert_allclose(h["std_error"], [np.sqrt(V[0, 0] + V[1, 1] - 2 * V[0, 1])], rtol=1e-5)
    on_dask = fme.avg_comparisons(
        m, dd.from_pandas(d, npartitions=3), {"c": None}, comparison="lnoravg", inference="delta"
    )
    np.testing.assert_allclose(
        on_dask["estimate"],
        fme.avg_comparisons(m, d, {"c": None}, comparison="lnoravg", inference="delta")["estimate"],
        rtol=1e-10,
    )
