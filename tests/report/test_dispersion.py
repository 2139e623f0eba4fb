"""An overdispersed binomial GLM in a report: its delta-method intervals use the covariance scaled by the
Pearson dispersion, and every place that reads the interval (the interval table and files, the sentence's
direction words, the contracts, the change log, the cAME leaves, the overview) reads the scaled one and says so.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jsonschema")

import fme  # noqa: E402
from fme.report.inputs.config import load_config  # noqa: E402

N, TRIALS = 400, 40


def _data(seed: int = 7) -> pd.DataFrame:
    """Beta-binomial successes out of TRIALS per row: the binomial variance times about 1 + 39 / 3 = 14."""
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=N), rng.normal(size=N)
    p = 1 / (1 + np.exp(-(0.2 + 0.9 * x1 + 0.07 * x2)))
    k = 2.0  # beta precision: small k, strong overdispersion
    q = rng.beta(p * k, (1 - p) * k)
    y = rng.binomial(TRIALS, q)
    return pd.DataFrame({"x1": x1, "x2": x2, "share": y / TRIALS})


def _glm(d: pd.DataFrame):
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    return smf.glm(
        "share ~ x1 + x2", data=d, family=sm.families.Binomial(), var_weights=np.full(len(d), float(TRIALS))
    ).fit()


def _config(tmp_path: Path, model, d: pd.DataFrame, body: str):
    import joblib

    joblib.dump(model, tmp_path / "model.joblib")
    d.drop(columns="share").to_csv(tmp_path / "data.csv", index=False)
    head = "title: T\nowner: O\nintended_use: U\nmodel: {joblib: model.joblib}\ndata: {path: data.csv}\ntarget: share\n"
    (tmp_path / "c.yaml").write_text(head + textwrap.dedent(body), encoding="utf-8")
    return load_config(tmp_path / "c.yaml")


BODY = """\
    inference: delta
    effects:
      - id: x2
        steps: {x2: 1}
        extrapolation: none
        expect: {sign: "+"}
        partition: {method: cart, max_depth: 1, honest: false}
        stability: false
    """


@pytest.fixture(scope="module")
def glm_case(tmp_path_factory):
    from fme.report.analysis import run_effects, write_results

    tmp = tmp_path_factory.mktemp("dispersion")
    d = _data()
    model = _glm(d)
    cfg = _config(tmp, model, d, BODY)
    X = d.drop(columns="share")
    groups = run_effects(model, X, X, cfg, tmp / "out")
    write_results(tmp / "out" / "results.json", {"effects": groups, "config_name": "c", "config_sha256": "0" * 64})
    results = json.loads((tmp / "out" / "results.json").read_text(encoding="utf-8"))
    return {"d": d, "X": X, "model": model, "cfg": cfg, "results": results, "out": tmp / "out"}


def _dispersion(model) -> float:
    return float(np.sum(np.asarray(model.resid_pearson) ** 2) / model.df_resid)


def test_the_simulated_glm_is_overdispersed_and_its_delta_interval_excludes_zero_unscaled(glm_case):
    model, X = glm_case["model"], glm_case["X"]
    phi = _dispersion(model)
    assert 8 < phi < 25  # about 1 + (TRIALS - 1) / (k + 1)
    res = fme.fme(model, X, {"x2": 1})
    lo, hi = res.conf_int(0.95)
    # the premise of the test: unscaled, the interval says "raises"; scaled by sqrt(phi) it spans zero
    assert lo > 0 and res.ame - 1.959963984540054 * res.std_error * np.sqrt(phi) < 0


def test_scaled_standard_error_is_sqrt_dispersion_times_the_models(glm_case):
    from fme.report.analysis.model_view import dispersion_scaled, glm_dispersion

    model, X = glm_case["model"], glm_case["X"]
    phi = glm_dispersion(model)["dispersion"]
    assert phi == pytest.approx(_dispersion(model), rel=1e-12)
    before, bse = np.asarray(model.cov_params()).copy(), np.asarray(model.bse).copy()
    scaled, name = dispersion_scaled(model, 1.5)
    assert name == f"Pearson dispersion {phi:.2f}"
    np.testing.assert_allclose(np.asarray(scaled.cov_params()), np.asarray(model.cov_params()) * phi, rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(scaled.params), np.asarray(model.params))
    np.testing.assert_allclose(np.asarray(scaled.bse), bse * np.sqrt(phi), rtol=1e-12)
    # the caller's model is untouched and the copy is never scaled twice
    np.testing.assert_array_equal(np.asarray(model.cov_params()), before)
    np.testing.assert_array_equal(np.asarray(model.bse), bse)
    assert dispersion_scaled(scaled, 1.5) == (scaled, name)
    unscaled = fme.fme(model, X, {"x2": 1})
    v = glm_case["results"]["effects"][0]["variants"][0]
    assert v["model_ci"]["std_error"] == pytest.approx(unscaled.std_error * np.sqrt(phi), rel=1e-12)
    assert v["std_error"] == v["model_ci"]["std_error"]
    # statsmodels' own quasi-likelihood fit states the same covariance
    refit = model.model.fit(scale="X2")
    np.testing.assert_allclose(np.asarray(scaled.cov_params()), np.asarray(refit.cov_params()), rtol=1e-6)
    # below the threshold, or with a robust covariance, nothing is scaled
    assert dispersion_scaled(model, phi + 1) == (model, None)
    robust = model.model.fit(cov_type="HC0")
    assert dispersion_scaled(robust, 1.5) == (robust, None)


def test_results_and_tables_carry_the_shown_interval_labelled(glm_case):
    model = glm_case["model"]
    phi = _dispersion(model)
    v = glm_case["results"]["effects"][0]["variants"][0]
    label = f"delta (Pearson dispersion {phi:.2f})"
    assert v["inference"] == "delta" and v["covariance"] == f"Pearson dispersion {phi:.2f}"
    mc = v["model_ci"]
    assert (v["conf_low"], v["conf_high"]) == (mc["conf_low"], mc["conf_high"])
    assert v["conf_low"] < 0 < v["conf_high"]
    assert "scaled by its Pearson dispersion" in v["covers"]
    assert v["ci_inference"] == "sample" and v["ci_covers"].startswith("fixed model")
    primary, fixed = v["intervals"]
    assert primary["inference"] == label and primary["conf_low"] == v["conf_low"]
    # results.json keeps the fixed-model interval labelled, never as an unlabelled ci_low/ci_high
    assert "ci_low" not in v and v["fixed_interval"]["kind"] == "fixed model"
    assert fixed["inference"] == "sample" and (fixed["conf_low"], fixed["conf_high"]) == (
        v["fixed_interval"]["low"],
        v["fixed_interval"]["high"],
    )
    table = pd.read_csv(glm_case["out"] / "tables" / "x2-ame.csv")
    assert table["inference"].tolist() == [label, "sample"]
    assert table.loc[0, "conf_low"] == pytest.approx(v["conf_low"], rel=1e-12)
    # the cAME leaves read the same (scaled) covariance: the root's interval is the AME's, and say so
    root = v["partition"]["root"]
    assert root["std_error"] == pytest.approx(mc["std_error"], rel=1e-9)
    leaves = v["partition"]["leaves"]
    assert len(leaves) == 2 and {leaf["inference"] for leaf in leaves} == {label}
    assert v["partition"]["tests"]["inference"] == label
    unscaled = fme.came(fme.fme(model, glm_case["X"], {"x2": 1}), method="cart", max_depth=1, honest=False)
    np.testing.assert_allclose(
        sorted(leaf["std_error"] for leaf in leaves), sorted(unscaled.leaves["std_error"] * np.sqrt(phi)), rtol=1e-9
    )
    table = pd.read_csv(glm_case["out"] / "tables" / "x2-leaves.csv")
    assert table["inference"].tolist() == [label, label] and table["covers"].str.contains("scaled by its").all()
    # the other intervals of the effect are the fixed-model ones, labelled so
    assert v["sensitivity"] and all(r["ci_inference"] == "sample" for r in v["sensitivity"])


def test_sentence_direction_words_and_interval_use_the_scaled_interval(glm_case):
    from fme.report.present.context import effect_cells
    from fme.report.present.display import interval_rows, prepare_variant
    from fme.report.present.sentences import effect_sentence

    phi = _dispersion(glm_case["model"])
    v = prepare_variant(glm_case["results"]["effects"][0]["variants"][0], 1.0)
    cells = effect_cells(v)
    text = effect_sentence(v, cells, "share", "", "observations", {})
    assert "has no clear direction" in text and "the CI includes zero" in text and "raises" not in text
    assert f"95% CI {cells['ci_low']} to {cells['ci_high']}" in text
    assert cells["ci_low"].startswith("-") and not cells["ci_high"].startswith("-")
    assert f"delta method with the covariance scaled by the Pearson dispersion {phi:.2f}" in text
    assert cells["ci_kind"] == f"model (delta method, Pearson dispersion {phi:.2f})"
    first = interval_rows(v, cells["level"])[0]
    assert first["interval"] == cells["ci_kind"] and "scaled by its Pearson dispersion" in first["covers"]


def test_contract_verdict_uses_the_scaled_interval(glm_case):
    from fme.report.analysis.contracts import adjust_contracts, contract_rows

    phi = _dispersion(glm_case["model"])
    v = glm_case["results"]["effects"][0]["variants"][0]
    (row,) = v["contracts"]
    assert row["contract"] == "sign" and row["inference"] == f"delta (Pearson dispersion {phi:.2f})"
    assert row["std_error"] == v["std_error"] and (row["conf_low"], row["conf_high"]) == (v["conf_low"], v["conf_high"])
    assert row["verdict"] == "inconclusive"
    assert row["statistic"] == pytest.approx(v["ame"] / v["std_error"], rel=1e-12)
    # the unscaled interval would have met it: the verdict changed because of the scale alone
    unscaled = {**v, "intervals": [{**v["intervals"][0], "std_error": v["std_error"] / np.sqrt(phi)}]}
    (met,) = adjust_contracts(contract_rows(unscaled, {"sign": "+"}))
    assert met["verdict"] == "met"


def test_changelog_overlap_is_judged_on_the_scaled_intervals(glm_case):
    from fme.report.present.changelog import changelog, compact

    phi = _dispersion(glm_case["model"])
    results = glm_case["results"]
    v = results["effects"][0]["variants"][0]
    mc = v["model_ci"]
    width = mc["conf_high"] - mc["conf_low"]
    shift = 0.75 * width  # beyond the unscaled width (width / sqrt(phi)), within the scaled one
    assert shift > width / np.sqrt(phi)
    moved = {
        **v,
        "ame": v["ame"] + shift,
        "model_ci": {**mc, "conf_low": mc["conf_low"] + shift, "conf_high": mc["conf_high"] + shift},
    }
    new = {**results, "effects": [{**results["effects"][0], "variants": [moved]}]}
    previous = {"path": "p", "sha256": "0", **compact(results)}
    assert previous["effects"]["x2"]["inference"] == f"delta (Pearson dispersion {phi:.2f})"
    (row,) = changelog(new, previous)["rows"]
    assert row["interval"] == f"model (delta method, Pearson dispersion {phi:.2f})" and row["overlap"] == "yes"
    # an earlier build with the unscaled delta interval differs in kind: the fixed-model intervals are compared
    plain = {**v, "model_ci": {k: x for k, x in mc.items() if k != "covariance"}}
    old = {**results, "effects": [{**results["effects"][0], "variants": [plain]}]}
    (row,) = changelog(new, {"path": "p", "sha256": "0", **compact(old)})["rows"]
    assert row["interval"] == f"model (delta method) to model (delta method, Pearson dispersion {phi:.2f})"
    assert row["overlap"].endswith("(fixed-model intervals; the primary ones differ in kind)")


def test_model_section_and_overview_say_the_intervals_are_scaled(glm_case, tmp_path):
    from fme.report.analysis.model_view import feature_overview, glm_dispersion
    from fme.report.inputs.specs import FLAG_DEFAULTS
    from fme.report.present.flags import dispersion_text

    model, X = glm_case["model"], glm_case["X"]
    disp = glm_dispersion(model)
    text = dispersion_text(disp, FLAG_DEFAULTS)
    assert f"labelled delta (Pearson dispersion {disp['dispersion']:.2f})" in text
    assert f"their standard errors are {np.sqrt(disp['dispersion']):.2f} times the model's" in text
    assert "too narrow" not in text
    overview = "inference: delta\n    overview: {step: unit, extrapolation: none}\n"
    cfg = _config(tmp_path, model, glm_case["d"], BODY.replace("inference: delta\n", overview))
    ov = feature_overview(model, X, X, cfg, None)
    row = next(r for r in ov["rows"] if r["feature"] == "x2")
    unscaled = fme.ame(model, X, {"x2": 1}).iloc[0]
    assert row["inference"] == f"delta (Pearson dispersion {disp['dispersion']:.2f})"
    assert row["std_error"] == pytest.approx(unscaled["std_error"] * np.sqrt(disp["dispersion"]), rel=1e-12)


@pytest.mark.slow
def test_boston_binomial_glm_report_is_small_and_says_its_intervals_are_scaled(tmp_path):
    """The whole build of a Boston binomial GLM (var_weights 313: dispersion 13.49) with five effects and the
    default partition: under 2 MB of HTML (2.59 MB before the figures were compacted further), and the page,
    results.json and tables all carry the dispersion-scaled interval."""
    import html as html_lib
    import re

    import joblib
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    from fme.__main__ import main
    from fme.datasets import load_boston

    d = load_boston()
    formula = "I(medv / 50) ~ " + " + ".join(c for c in d.columns if c != "medv")
    model = smf.glm(formula, data=d, family=sm.families.Binomial(), var_weights=np.full(len(d), 313.0)).fit()
    phi = _dispersion(model)
    joblib.dump(model, tmp_path / "glm.joblib")
    (tmp_path / "glm.yaml").write_text(
        textwrap.dedent("""\
        title: Boston housing binomial GLM
        owner: O
        intended_use: U
        model: {joblib: glm.joblib}
        data: {dataset: boston}
        target: medv
        pdf: false
        overview: {step: sd}
        effects:
          - {id: rm, steps: {rm: 1}}
          - {id: crim, steps: {crim: -5}}
          - {id: crim-nox, steps: {crim: -5, nox: -0.1}}
          - {id: ptratio, steps: {ptratio: 1}, expect: {sign: "+"}}
          - {id: chas, steps: {chas: all}}
        """),
        encoding="utf-8",
    )
    assert main(["report", str(tmp_path / "glm.yaml")]) == 0
    page = (tmp_path / "glm" / "report.html").read_bytes()
    assert len(page) < 2_000_000, len(page)
    text = html_lib.unescape(" ".join(re.sub(r"<[^>]+>", " ", page.decode("utf-8")).split()))
    label = f"Pearson dispersion {phi:.2f}"
    assert "too narrow" not in text and f"labelled delta ({label})" in text
    assert text.count(f"with the covariance scaled by the {label}") >= 6  # one sentence per effect variant
    results = json.loads((tmp_path / "glm" / "results.json").read_text(encoding="utf-8"))
    variants = [v for g in results["effects"] for v in g["variants"]]
    assert len(variants) == 6
    for v in variants:
        assert v["covariance"] == label and (v["conf_low"], v["conf_high"]) == (
            v["model_ci"]["conf_low"],
            v["model_ci"]["conf_high"],
        )
        table = pd.read_csv(tmp_path / "glm" / "tables" / f"{v['id']}-ame.csv")
        assert table.loc[0, "inference"] == f"delta ({label})"
        assert v["with_eps"] is None or v["with_eps"]["ci_inference"] == "sample"
    assert variants[0]["with_eps"]["ci_covers"].startswith("fixed model")  # rm: envelope, points left out
    assert {r["inference"] for r in results["overview"]["rows"] if r["error"] is None} == {f"delta ({label})"}


def test_the_challenger_difference_says_which_covariance_each_side_used():
    from fme.report.analysis.run import _label_difference

    c = {"difference_inference": "delta, fits taken as independent"}
    _label_difference(c, "Pearson dispersion 13.49", None)
    assert c["difference_inference"] == (
        "delta, fits taken as independent; covariance: champion Pearson dispersion 13.49, challenger as fitted"
    )
    boot = {"difference_inference": "bootstrap, both models refitted on the same 200 resamples (paired)"}
    _label_difference(boot, "Pearson dispersion 13.49", "Pearson dispersion 2.10")
    assert boot["difference_inference"].endswith("(paired)")  # refits: no covariance involved
    plain = {"difference_inference": "delta, fits taken as independent"}
    _label_difference(plain, None, None)
    assert plain["difference_inference"] == "delta, fits taken as independent"


def test_the_audit_second_path_agrees_with_the_glm_report(glm_case):
    """The appendix's second path on the overdispersed GLM: the AME by the model's own predict and the delta SE
    by its own (dispersion-scaled) cov_params() and a numerical Jacobian agree with the report's, and say so."""
    results = glm_case["results"]
    top = results["second_path"]
    assert top["largest_ame_difference"]["value"] < 1e-10
    assert 0 <= top["largest_se_difference"]["value"] < 1e-6
    v = results["effects"][0]["variants"][0]
    assert v["quantities"]["second_path_se"]["value"] == pytest.approx(v["intervals"][0]["std_error"], rel=1e-6)
    assert v["intervals"][0]["inference"].startswith("delta (Pearson dispersion")
    agree = [c for c in results["claims"] if c["kind"] == "agreement"]
    assert len(agree) == 2 and all(c["holds"] and c["outcome"] == "agrees" for c in agree)
    assert {c["text"] for c in agree} == {"second path agrees to 1e-10", "second path agrees to 1e-06"}
