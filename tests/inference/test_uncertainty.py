"""Model uncertainty of AMEs: delta method and bootstrap (fme.inference), against marginaleffects.

The reference numbers come from Python marginaleffects on statsmodels fits of a simulated data set
(tests/make_marginaleffects_refs.py; versions in tests/fixtures/marginaleffects/versions.txt).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats

import fme
from fme.exceptions import ModelError, ParameterError
from fme.margins.marginal import typical_values

REFS = Path(__file__).parents[1] / "fixtures" / "marginaleffects"
FORMULAS = {
    "ols": "y ~ age + I(age**2) + income + C(g)",
    "logit": "yb ~ age + I(age**2) + income + age:income + C(g)",
    "poisson": "count ~ age + income + C(g)",
}
MODELS = list(FORMULAS)
INF_COLS = ["std_error", "statistic", "p_value", "conf_low", "conf_high"]


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    d = pd.read_csv(REFS / "data.csv")
    d["g"] = d["g"].astype("category")
    return d


@pytest.fixture(scope="module")
def refs() -> pd.DataFrame:
    return pd.read_csv(REFS / "refs.csv", keep_default_na=False, na_values=[""])


@pytest.fixture(scope="module")
def models(data) -> dict:
    return {
        "ols": smf.ols(FORMULAS["ols"], data).fit(),
        "logit": smf.logit(FORMULAS["logit"], data).fit(disp=0),
        "poisson": smf.glm(FORMULAS["poisson"], data, family=sm.families.Poisson()).fit(),
    }


def _ref(refs, model, case):
    return refs[(refs["model"] == model) & (refs["case"] == case)].reset_index(drop=True)


#: Python marginaleffects 0.6 takes t quantiles with the model's df_resid when that is a float (OLS, Logit)
#: and normal ones otherwise (GLM: an integer df_resid); fme uses z and normal quantiles throughout (as
#: Stata's margins and R's marginaleffects by default). The reference p-values and CIs are checked to be
#: exactly that, then fme's are checked against the normal ones built from the reference estimate and SE.
DF_RESID = {"ols": 400 - 6, "logit": 400 - 7, "poisson": np.inf}  # n - k


def _assert_matches(row, ref, model) -> None:
    """Estimates to 1e-10, standard errors to 1e-3 relative; z, p and CI accordingly."""
    est = row["ame"] if "ame" in row else row["fme"]
    assert est == pytest.approx(ref["estimate"], rel=1e-10, abs=1e-14)
    assert row["std_error"] == pytest.approx(ref["std_error"], rel=1e-3)
    assert row["statistic"] == pytest.approx(ref["statistic"], rel=1e-3)
    z, se, df = ref["statistic"], ref["std_error"], DF_RESID[model]
    # the reference's own convention
    assert ref["p_value"] == pytest.approx(2 * stats.t.sf(abs(z), df), rel=1e-9, abs=1e-15)
    assert ref["conf_high"] - ref["estimate"] == pytest.approx(stats.t.ppf(0.975, df) * se, rel=1e-9)
    q = stats.norm.ppf(0.975)
    assert row["conf_low"] == pytest.approx(ref["estimate"] - q * se, abs=1e-3 * q * se)
    assert row["conf_high"] == pytest.approx(ref["estimate"] + q * se, abs=1e-3 * q * se)
    # p moves by about 2 phi(z) |z| 1e-3 when z moves by 1e-3 relative
    p_ref = 2 * stats.norm.sf(abs(z))
    assert row["p_value"] == pytest.approx(p_ref, abs=2e-3 * stats.norm.pdf(z) * abs(z) + 1e-15)
    assert row["inference"] == "delta"


@pytest.mark.parametrize("name", MODELS)
def test_numeric_ame_matches_marginaleffects(name, data, refs, models):
    out = fme.ame(models[name], data, {"age": 1})
    _assert_matches(out.iloc[0], _ref(refs, name, "numeric").iloc[0], name)


@pytest.mark.parametrize("name", MODELS)
def test_multivariate_tidy_matches_marginaleffects(name, data, refs, models):
    res = fme.fme(models[name], data, {"age": 1, "income": 0.5})
    tidy = res.tidy()
    assert list(tidy.columns) == [
        "feature",
        "step",
        "level",
        "reference",
        "contrast",
        "ame",
        *INF_COLS,
        "inference",
        "covers",
        "sd",
        "q25",
        "q75",
        "n",
        "n_excluded",
    ]
    assert tidy["feature"].iloc[0] == "age, income" and tidy["contrast"].iloc[0] == "age + 1, income + 0.5"
    assert np.isnan(tidy["step"].iloc[0]) and tidy["covers"].iloc[0] == "model uncertainty"
    ref = _ref(refs, name, "multivariate").iloc[0]
    _assert_matches(tidy.iloc[0], ref, name)
    assert res.std_error == tidy["std_error"].iloc[0] and res.p_value == tidy["p_value"].iloc[0]
    assert res.conf_int() == (tidy["conf_low"].iloc[0], tidy["conf_high"].iloc[0])
    lo90, hi90 = res.conf_int(0.90)
    assert hi90 - res.ame == pytest.approx(stats.norm.ppf(0.95) * res.std_error, rel=1e-12)
    assert res.inference == "delta" and res.inference_rows.info["kernel"] == "analytic"


@pytest.mark.parametrize("name", MODELS)
def test_reference_contrasts_match_marginaleffects(name, data, refs, models):
    out = fme.ame(models[name], data, {"g": None}, categorical="classic")
    ref = _ref(refs, name, "reference")
    assert [f"{lv} - {r}" for lv, r in zip(out["level"], out["reference"])] == list(ref["contrast"])
    for i in range(len(ref)):
        _assert_matches(out.iloc[i], ref.iloc[i], name)


@pytest.mark.parametrize("name", MODELS)
def test_by_groups_match_marginaleffects(name, data, refs, models):
    out = fme.ame(models[name], data, {"age": 1}, by="g")
    ref = _ref(refs, name, "by")
    assert list(out["g"].astype(str)) == list(ref["group"])
    for i in range(len(ref)):
        _assert_matches(out.iloc[i], ref.iloc[i], name)
        assert out["n"].iloc[i] == int((data["g"] == ref["group"].iloc[i]).sum())


@pytest.mark.parametrize("name", MODELS)
def test_pairwise_by_groups_match_marginaleffects(name, data, refs, models):
    out = fme.ame(models[name], data, {"age": 1}, by="g", hypothesis="pairwise")
    ref = _ref(refs, name, "pairwise")
    assert list(out["hypothesis"]) == list(ref["term"])
    for i in range(len(ref)):
        _assert_matches(out.iloc[i], ref.iloc[i], name)


@pytest.mark.parametrize("name", MODELS)
def test_mer_grid_matches_marginaleffects(name, data, refs, models):
    out = fme.mer(models[name], data, {"age": 1}, at={"age": [30.0, 50.0]})
    ref = _ref(refs, name, "mer")
    assert list(out["age"]) == [float(v) for v in ref["group"]]
    for i in range(len(ref)):
        _assert_matches(out.iloc[i], ref.iloc[i], name)


def test_linear_term_has_positive_se_unlike_the_sample_interval(data, models):
    """For a term linear in the model every fME is equal: the fixed-model interval has zero width,
    the delta-method one does not (and equals the coefficient's own CI)."""
    m = models["ols"]
    delta = fme.ame(m, data, {"income": 1}).iloc[0]
    sample = fme.ame(m, data, {"income": 1}, inference="sample").iloc[0]
    assert sample["inference"] == "sample" and sample["std_error"] == pytest.approx(0, abs=1e-12)
    assert delta["ame"] == pytest.approx(m.params["income"], rel=1e-10)
    assert delta["std_error"] == pytest.approx(m.bse["income"], rel=1e-10)
    assert delta["p_value"] == pytest.approx(2 * stats.norm.sf(abs(m.tvalues["income"])), rel=1e-8)


def test_numerical_kernel_agrees_with_analytic(data, models):
    """A statsmodels model without an analytic mean derivative (NegativeBinomial) uses central
    differences; on the Poisson GLM the numerical kernel must reproduce the analytic Jacobian."""
    from fme._adapters.base import numerical_jacobian as _numerical
    from fme._adapters.statsmodels import design_matrix as _design

    m = models["poisson"]
    res = fme.fme(m, data, {"age": 1})
    x0, x1 = fme.effects.stepped_frames(res, m)
    D = np.vstack([_design(m, x0), _design(m, x1)])
    num = _numerical(lambda p: m.model.predict(p, D), np.asarray(m.params), len(x0))
    np.testing.assert_allclose(num, res.inference_rows.jacobian, rtol=1e-6, atol=1e-9)
    # counts with real overdispersion: on the fixture's Poisson counts the NB's alpha runs to 0, where its
    # Hessian cannot be inverted (the outcome of that optimisation differs between BLAS builds)
    rng = np.random.default_rng(0)
    mu = np.exp(0.3 + 0.01 * (data["age"] - data["age"].mean()))
    over = data.assign(over=rng.negative_binomial(2, 2 / (2 + mu)))
    nb = smf.negativebinomial("over ~ age + income + C(g)", over).fit(disp=0)
    assert nb.mle_retvals["converged"]
    out = fme.fme(nb, over, {"age": 1})
    assert out.inference_rows.info["kernel"] == "numerical"
    assert out.std_error > 0 and np.isfinite(out.p_value)


class _Protocol:
    """A linear model y = b0 + b1 x exposing the delta protocol."""

    def __init__(self):
        self.coef = np.array([1.0, 2.0])
        self.cov = np.array([[0.04, 0.01], [0.01, 0.09]])

    def get_coef(self):
        return self.coef

    def get_vcov(self):
        return self.cov

    def get_predict(self, params, data):
        return params[0] + params[1] * data["x"].to_numpy() ** 2

    def predict(self, data):
        return self.get_predict(self.coef, data)


def test_protocol_model_delta():
    X = pd.DataFrame({"x": np.linspace(0, 1, 11)})
    res = fme.fme(_Protocol(), X, {"x": 0.5})
    # AME = b1 * mean((x+0.5)^2 - x^2) -> gradient (0, c), se = c * sqrt(0.09)
    c = np.mean((X["x"] + 0.5) ** 2 - X["x"] ** 2)
    assert res.inference == "delta"
    assert res.ame == pytest.approx(2 * c, rel=1e-12)
    assert res.std_error == pytest.approx(c * 0.3, rel=1e-7)


def test_inference_errors(data, models):
    with pytest.raises(ParameterError, match="inference must be one of"):
        fme.ame(models["ols"], data, {"age": 1}, inference="hc3")
    with pytest.raises(ModelError, match="get_coef"):
        fme.fme(lambda d: d["age"] * 2.0, data, {"age": 1}, inference="delta")
    with pytest.raises(ParameterError, match="by="):
        fme.ame(models["ols"], data, {"age": 1}, hypothesis="pairwise")
    with pytest.raises(ParameterError, match="bootstrap"):
        fme.ame(models["ols"], data, {"age": 1}, inference="bootstrap")
    with pytest.raises(ParameterError, match="target_class='all'"):
        from sklearn.linear_model import LogisticRegression

        X = data[["age", "income"]]
        clf = LogisticRegression().fit(X, data["yb"])
        fme.fme(clf, X, {"age": 1}, target_class="all", inference="delta")


def test_auto_is_sample_for_models_without_parameters(data):
    from sklearn.linear_model import LinearRegression

    X = data[["age", "income"]]
    lr = LinearRegression().fit(X, data["y"])
    out = fme.ame(lr, X, {"age": 1})
    assert out["inference"].iloc[0] == "sample"
    res = fme.fme(lr, X, {"age": 1})
    assert res.inference == "sample" and res.std_error == pytest.approx(0, abs=1e-12)


def test_caller_objects_untouched(data, models):
    before = data.copy(deep=True)
    params = models["logit"].params.copy()
    fme.ame(models["logit"], data, {"age": 1, "g": None}, by="g")
    pd.testing.assert_frame_equal(data, before)
    pd.testing.assert_series_equal(models["logit"].params, params)


def test_came_leaves_have_model_uncertainty(data, models):
    """Each leaf's delta-method SE is the SE of the AME over the leaf's own rows (same Jacobian rows)."""
    m = models["logit"]
    eff = fme.fme(m, data, {"age": 1})
    part = fme.came(eff, honest=False, features=["age", "income", "g"], method="cart", max_depth=2, min_samples_leaf=40)
    leaves = part.leaves
    assert len(leaves) >= 2 and (leaves["inference"] == "delta").all()
    for _, leaf in leaves.iterrows():
        rows = part.leaf_of_row.index[part.leaf_of_row == leaf["node"]]
        own = fme.ame(m, data.loc[rows], {"age": 1}).iloc[0]
        assert leaf["came"] == pytest.approx(own["ame"], rel=1e-12)
        for c in INF_COLS:
            assert leaf[c] == pytest.approx(own[c], rel=1e-9), c
    assert part.root["std_error"] == pytest.approx(eff.std_error, rel=1e-12)
    # with inference='sample' the leaf interval is the paper's §5.5 t interval
    fixed = fme.came(
        fme.fme(m, data, {"age": 1}, inference="sample"),
        honest=False,
        features=["age", "income", "g"],
        method="cart",
        max_depth=2,
        min_samples_leaf=40,
    ).leaves
    np.testing.assert_allclose(fixed["conf_low"], fixed["came_ci_low"], rtol=1e-12)
    np.testing.assert_allclose(fixed["conf_high"], fixed["came_ci_high"], rtol=1e-12)


class _MutatingProtocol(_Protocol):
    """The same model, but get_predict shifts its input frame's x in place."""

    def get_predict(self, params, data):
        out = super().get_predict(params, data)
        data["x"] = data["x"] + 100.0
        return out


def test_protocol_get_predict_modifying_its_input_gives_the_correct_delta_se():
    X = pd.DataFrame({"x": np.linspace(0, 1, 11)})
    before = X.copy()
    c = np.mean((X["x"] + 0.5) ** 2 - X["x"] ** 2)
    res = fme.fme(_MutatingProtocol(), X, {"x": 0.5})
    assert res.ame == pytest.approx(2 * c, rel=1e-12)
    assert res.std_error == pytest.approx(c * 0.3, rel=1e-7)
    pd.testing.assert_frame_equal(X, before)


class _RaisingProtocol(_Protocol):
    def get_predict(self, params, data):
        if params[1] != self.coef[1]:
            raise ValueError("cannot predict at these parameters")
        return super().get_predict(params, data)


class _TextVcov(_Protocol):
    def get_vcov(self):
        return "diag(0.04, 0.09)"


def test_protocol_failures_are_library_errors_naming_the_method_and_stage():
    X = pd.DataFrame({"x": np.linspace(0, 1, 11)})
    with pytest.raises(
        fme.PredictionError,
        match=r"_RaisingProtocol.get_predict\(\) raised ValueError at the delta "
        r"Jacobian .*rows 0-21 .*cannot predict at these parameters",
    ) as info:
        fme.fme(_RaisingProtocol(), X, {"x": 0.5})
    assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(ModelError, match=r"_TextVcov.get_vcov\(\) returned non-numeric values \(str\)"):
        fme.ame(_TextVcov(), X, {"x": 0.5})
    # the fixed-model interval needs no parameters: still available
    assert fme.fme(_RaisingProtocol(), X, {"x": 0.5}, inference="sample").inference == "sample"


def test_by_accepts_integer_column_labels(data, models):
    """Integer column labels work for by= (and a list of them); a label that is not a column is named."""
    from sklearn.linear_model import LinearRegression

    X = pd.DataFrame({0: data["age"].to_numpy(), 1: data["income"].to_numpy(), 2: data["g"].to_numpy()})
    lr = LinearRegression().fit(X[[0, 1]].set_axis(["a", "b"], axis=1), data["y"])
    model = lambda d: lr.predict(d[[0, 1]].set_axis(["a", "b"], axis=1))  # noqa: E731
    out = fme.ame(model, X, {0: 1.0}, by=2)
    assert out[2].tolist() == sorted(data["g"].unique())
    np.testing.assert_allclose(out["ame"], lr.coef_[0], rtol=1e-12)
    assert out["n"].sum() == len(X)
    assert fme.ame(model, X, {0: 1.0}, by=[2]).equals(out)
    with pytest.raises(fme.FeatureError, match=r"by column\(s\) \[3\] are not columns of the data"):
        fme.ame(model, X, {0: 1.0}, by=3)
    with pytest.raises(ParameterError, match="by must be a column name or a list of column names"):
        fme.ame(model, X, {0: 1.0}, by=[[2]])


def test_mem_and_mer_carry_model_uncertainty(data, models):
    """mem is the fME at the typical values with the same delta uncertainty as mer at those values."""
    m = models["ols"]
    mem = fme.mem(m, data, {"age": 1})
    tv = typical_values(data)
    mer = fme.mer(m, data, {"age": 1}, at={c: tv[c].iloc[0] for c in ["age", "income", "g"]})
    assert mem["inference"].iloc[0] == "delta" == mer["inference"].iloc[0]
    for c in ["fme", "std_error", "p_value", "conf_low", "conf_high"]:
        assert mem[c].iloc[0] == pytest.approx(mer[c].iloc[0], rel=1e-12), c
    # OLS y ~ age + age^2 + ...: fME of age + 1 at a = b1 + b2 (2a + 1); its delta SE by hand
    a = float(tv["age"].iloc[0])
    g = np.zeros(len(m.params))
    g[list(m.params.index).index("age")] = 1.0
    g[list(m.params.index).index("I(age ** 2)")] = 2 * a + 1
    assert mem["std_error"].iloc[0] == pytest.approx(float(np.sqrt(g @ m.cov_params().to_numpy() @ g)), rel=1e-9)


@pytest.mark.parametrize("inference", ["delta", "sample"])
def test_a_by_group_without_evaluated_rows_has_no_uncertainty_and_no_differences(inference):
    """Every row of group b leaves the reference envelope: its AME, interval and its differences are NaN
    (they read as an exactly known 0 before, with a pairwise p-value of 8e-44)."""
    rng = np.random.default_rng(0)
    n = 200
    d = pd.DataFrame({"x": rng.normal(size=n), "g": np.where(np.arange(n) < 100, "a", "b")})
    d.loc[d["g"] == "b", "x"] += 10.0
    d["y"] = d["x"] + rng.normal(size=n)
    res = smf.ols("y ~ x + I(x**2)", d).fit()
    ref = d[d["g"] == "a"]
    t = fme.ame(res, d, {"x": 1}, by="g", reference_data=ref, extrapolation="envelope", inference=inference)
    a, b = t.set_index("g").loc["a"], t.set_index("g").loc["b"]
    assert b["n"] == 0 and b["n_excluded"] == 100
    assert b[["ame", "std_error", "statistic", "p_value", "conf_low", "conf_high"]].isna().all()
    assert a["n"] == 80 and np.isfinite(a[["ame", "std_error", "conf_low", "conf_high"]].astype(float)).all()
    p = fme.ame(
        res,
        d,
        {"x": 1},
        by="g",
        reference_data=ref,
        extrapolation="envelope",
        inference=inference,
        hypothesis="pairwise",
    )
    assert len(p) == 1 and p[["ame", "std_error", "statistic", "p_value", "conf_low", "conf_high"]].isna().all(
        axis=None
    )
