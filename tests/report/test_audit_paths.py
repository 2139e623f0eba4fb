"""The audit's second path (fme.report.analysis.audit_paths): every AME recomputed by the model's own predict at
x and x + h, every delta SE from the model's own cov_params() and a numerically differentiated AME; typed as
quantities with "agrees to" claims, and a planted mismatch in the kernel's result fails its claim and raises a
flag (never printed as an agreement)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import fme.report.analysis.effect as effect_module
from fme.report.analysis.audit_paths import AME_TOLERANCE, SE_TOLERANCE, second_path, stepped
from fme.report.analysis.effect import compute_effect
from fme.report.analysis.model_view import dispersion_scaled
from fme.report.analysis.typed import typed_payload
from fme.report.inputs.config import EffectConfig
from fme.report.present.audit import second_path_context
from fme.report.present.context import unstated_flags


def _effect(steps: dict, method: str = "delta") -> EffectConfig:
    return EffectConfig(
        id="e",
        steps=steps,
        conf_level=0.95,
        inference={"method": method},
        extrapolation={"method": "envelope"},
        partition=False,
        stability=False,
    )


def _glm_data(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    d = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "z": rng.uniform(0, 1, n),
            "t": rng.uniform(1, 3, n),
            "k": rng.choice(["a", "b", "c"], n),
        }
    )
    d["y"] = rng.poisson(d["t"] * np.exp(0.3 * d["x"] + 0.5 * (d["k"] == "b") + d["z"]))
    d["y2"] = rng.negative_binomial(2, 2 / (2 + d["t"] * np.exp(0.3 * d["x"])))
    return d


def _run(model, X, eff, target_class=None, roles=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = compute_effect(model, X, X, eff, 0, target_class)
    return out, second_path(model, X, out["result"], out["summary"], target_class, roles or {})


@pytest.mark.parametrize("steps", [{"x": 1}, {"x": 0.5, "z": 0.2}, {"k": "b"}])
def test_poisson_glm_with_exposure_agrees_on_ame_and_delta_se(steps):
    """A formula GLM with an exposure column: numeric, multivariate and categorical (level switch) steps."""
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    d = _glm_data()
    model = smf.glm("y ~ x + z + C(k)", data=d, family=sm.families.Poisson(), exposure=d["t"]).fit()
    X = d[["x", "z", "k", "t"]]
    out, sp = _run(model, X, _effect(steps), roles={"t": "exposure"})
    assert sp["n"] == out["summary"]["n"] > 100
    assert sp["ame"] == pytest.approx(out["summary"]["ame"], rel=0, abs=1e-10)
    assert sp["ame_difference"] < 1e-10
    assert out["summary"]["intervals"][0]["inference"] == "delta"
    assert sp["se_difference"] < SE_TOLERANCE and sp["se"] > 0
    # not vacuous: the exposure enters the second path (without it the AME is that of exposure 1)
    _, without = _run(model, X, _effect(steps), roles={})
    assert abs(without["ame"] - sp["ame"]) > 1e-3


def test_dispersion_scaled_covariance_and_gaussian_formula_agree():
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    d = _glm_data()
    over = smf.glm("y2 ~ x + z", data=d, family=sm.families.Poisson(), exposure=d["t"]).fit()
    scaled, name = dispersion_scaled(over, 1.5)
    assert name.startswith("Pearson dispersion")
    X = d[["x", "z", "t"]]
    out, sp = _run(scaled, X, _effect({"x": 1}), roles={"t": "exposure"})
    assert sp["ame_difference"] < 1e-10 and sp["se_difference"] < SE_TOLERANCE
    _, unscaled = _run(over, X, _effect({"x": 1}), roles={"t": "exposure"})
    assert unscaled["se"] < sp["se"] / 1.2  # the scaled covariance is the one the report shows, and checks
    ols = smf.ols("y ~ x + I(x ** 2) + z", data=d).fit()
    out, sp = _run(ols, d[["x", "z"]], _effect({"x": 1}))
    assert sp["ame_difference"] < 1e-10 and sp["se_difference"] < SE_TOLERANCE


def test_classifier_second_path_uses_predict_proba_and_says_why_there_is_no_se():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    y = np.where(X["a"] + rng.normal(size=200) > 0, "yes", "no")
    model = LogisticRegression().fit(X, y)
    out, sp = _run(model, X, _effect({"a": 1}, "sample"), target_class="yes")
    assert sp["ame_difference"] < 1e-12 and sp["ame"] > 0.05
    assert sp["se"] is None and "no covariance matrix" in sp["se_reason"] and "fixed-model" in sp["se_reason"]
    payload = typed_payload(
        {"effects": [{"variants": [{**out["summary"], "id": "a", "second_path": sp}]}], "target_class": "yes"}
    )
    q = payload["effects"][0]["variants"][0]["quantities"]
    assert q["second_path_ame"]["unit"]["name"] == "percentage points"
    kinds = {(c["kind"], c["outcome"]) for c in payload["claims"] if "a/ame" in c["cites"]}
    assert ("agreement", "agrees") in kinds and ("not_computed", "not applicable") in kinds
    view = second_path_context(payload)
    assert view["unit"] == " (pp)" and view["rows"][0]["se_verdict"].startswith("not applicable: the model has no")
    assert view["rows"][0]["ame_verdict"] == "second path agrees to 1e-10"


def test_stepped_switches_a_categorical_level_and_keeps_its_categories():
    f = pd.DataFrame({"k": pd.Categorical(["a", "b"], categories=["a", "b", "c"]), "x": [1, 2]})
    out = stepped(
        f, [{"feature": "k", "numeric": False, "value": "c"}, {"feature": "x", "numeric": True, "value": 0.5}], {}
    )
    assert list(out["k"]) == ["c", "c"] and list(out["k"].cat.categories) == ["a", "b", "c"]
    assert out["x"].tolist() == [1.5, 2.5] and f["x"].tolist() == [1, 2]  # the caller's frame unchanged


def test_a_planted_mismatch_fails_its_claim_and_raises_a_flag(monkeypatch):
    """The kernel's AME shifted by 1e-6 (a monkeypatched result): the second path disagrees, its claim does not
    hold, the appendix says 'cannot be stated' and the flags table flags it."""
    import statsmodels.formula.api as smf

    d = _glm_data()
    model = smf.ols("y ~ x + z", data=d).fit()
    real = effect_module.figures_of

    def planted(res, conf):
        out = dict(real(res, conf))
        out["mean"] = out["mean"] + 1e-6
        return out

    monkeypatch.setattr(effect_module, "figures_of", planted)
    out, sp = _run(model, d[["x", "z"]], _effect({"x": 1}))
    assert sp["ame_difference"] == pytest.approx(1e-6, rel=1e-6)
    payload = typed_payload(
        {"effects": [{"variants": [{**out["summary"], "id": "x", "second_path": sp}]}], "target": "y"}
    )
    failed = [c for c in payload["claims"] if not c["holds"]]
    assert [c["kind"] for c in failed] == ["agreement"] and "x/second_path_ame" in failed[0]["cites"]
    assert failed[0]["text"].startswith(
        "cannot be stated: second path differs from the report by a difference of 1e-06"
    )
    assert payload["second_path"]["largest_ame_difference"]["value"] == pytest.approx(1e-6, rel=1e-6)
    assert payload["second_path"]["ame_tolerance"] == AME_TOLERANCE
    row = second_path_context(payload)["rows"][0]
    assert row["ame_verdict"].startswith("cannot be stated") and "agrees" not in row["ame_verdict"]
    flags = unstated_flags("the report", [c["text"] for c in payload["claims"] if not c["holds"]])
    assert len(flags) == 1 and flags[0]["status"] and flags[0]["value"].startswith("cannot be stated: second path")


def test_the_models_own_columns_are_passed_and_a_failing_predict_is_not_an_agreement():
    from sklearn.linear_model import LinearRegression

    from fme.report.analysis.audit_paths import audit_effect

    rng = np.random.default_rng(2)
    X = pd.DataFrame({"a": rng.normal(size=120), "b": rng.normal(size=120), "extra": rng.normal(size=120)})
    model = LinearRegression().fit(X[["b", "a"]], 2 * X["a"] - X["b"])
    out, sp = _run(model, X, _effect({"a": 1}, "sample"))
    assert sp["ame"] == pytest.approx(2.0, abs=1e-12) and sp["ame_difference"] < 1e-12

    class Broken:
        n_features_in_ = 3

        def predict(self, X):
            raise RuntimeError("predict needs a session")

    rec = audit_effect(Broken(), X, out["result"], out["summary"])
    assert rec["ame"] is None and rec["ame_reason"].startswith("the model's own prediction failed (RuntimeError")
    payload = typed_payload({"effects": [{"variants": [{**out["summary"], "id": "a", "second_path": rec}]}]})
    (claim,) = [c for c in payload["claims"] if "a/second_path_ame" in c["cites"]]
    assert claim["kind"] == "not_computed" and claim["outcome"] == "not applicable" and claim["holds"]
    assert "agrees" not in claim["text"] and payload["second_path"]["largest_ame_difference"] is None


def test_an_offset_fitted_as_the_log_of_a_column_enters_the_second_path_as_its_log():
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    from fme.report.analysis.audit_paths import offset_roles
    from fme.report.analysis.model_view import prediction_columns

    d = _glm_data()
    model = smf.glm("y ~ x + z", data=d, family=sm.families.Poisson(), offset=np.log(d["t"])).fit()
    X = d[["x", "z", "t"]]
    roles = {r["column"]: r["role"] for r in prediction_columns(model, list(X.columns))}
    assert roles == {"t": "offset"} and offset_roles(model, X, roles) == {"t": "log offset"}
    out, sp = _run(model, X, _effect({"x": 1}), roles=offset_roles(model, X, roles))
    assert sp["ame_difference"] < 1e-10 and sp["se_difference"] < SE_TOLERANCE
    logged = d.assign(lt=np.log(d["t"]))[["x", "z", "lt"]]  # a column holding the offset itself: as observed
    assert offset_roles(model, logged, {"lt": "offset"}) == {"lt": "offset"}
