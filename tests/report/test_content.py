"""What a report says.

Fast tests check the config keys (detectors with parameters, inference, flags, overview), the
computations behind new report lines against independent references, and the wording rules
(the model-uncertainty CI decides the direction word). The slow tests build reports for a
LogisticRegression pipeline and a HistGradientBoosting classifier on scikit-learn's bundled
breast-cancer data and a three-class wine model (configs in tests/fixtures/reports/) and the
bundled Boston report, and compare their cells with the library.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jsonschema")

import fme  # noqa: E402
from fme.report.inputs.config import ConfigError, load_config  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reports"

HEAD = """\
title: T
owner: O
intended_use: U
model:
  joblib: model.joblib
data:
  path: data.csv
target: y
"""


def _load(tmp_path: Path, body: str) -> dict:
    p = tmp_path / "c.yaml"
    p.write_text(HEAD + textwrap.dedent(body), encoding="utf-8")
    return load_config(p)


def _error(tmp_path: Path, body: str) -> str:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, body)
    return str(info.value)


# ------------------------------------------------------------------ config keys
def test_detector_with_parameters_is_normalised(tmp_path):
    cfg = _load(
        tmp_path,
        """\
        effects:
          - steps: {x1: 1}
            extrapolation: {method: hull, tol: 1.0e-6}
          - steps: {x1: 1}
            extrapolation: lof
        """,
    )
    assert cfg.effects[0].extrapolation == {"method": "hull", "tol": 1e-6}
    assert cfg.effects[1].extrapolation == {"method": "lof"}
    from fme.report.inputs.specs import describe_detector, make_detector

    det = make_detector(cfg.effects[0].extrapolation, seed=3)
    assert type(det).__name__ == "ConvexHullDetector" and det.tol == 1e-6 and det.random_state == 3
    assert describe_detector({"method": "lof", "n_neighbors": 7}) == "lof (contamination = 0.01, n_neighbors = 7)"


@pytest.mark.parametrize("name", ["hull", "mcec", "cert", "isolation_forest", "lof", "envelope"])
def test_every_detector_name_is_accepted(tmp_path, name):
    cfg = _load(
        tmp_path,
        f"""\
        effects:
          - steps: {{x1: 1}}
            extrapolation: {name}
        """,
    )
    from fme.report.inputs.specs import make_detector

    assert make_detector(cfg.effects[0].extrapolation, 0).name == name


def test_unknown_detector_parameter_names_line_and_parameters(tmp_path):
    msg = _error(
        tmp_path,
        """\
        effects:
          - steps: {x1: 1}
            extrapolation:
              method: mcec
              treshold: 0.6
        """,
    )
    assert msg.startswith(f"{tmp_path / 'c.yaml'}:13: effects[0].extrapolation.treshold: unknown parameter 'treshold'")
    assert "n_background, threshold" in msg


def test_bad_detector_value_is_the_detectors_own_message(tmp_path):
    msg = _error(
        tmp_path,
        """\
        effects:
          - steps: {x1: 1}
            extrapolation: {method: lof, contamination: 0.9}
        """,
    )
    assert msg.endswith(
        ":11: effects[0].extrapolation.contamination: contamination must be a number in (0, 0.5], got 0.9."
    )


def test_bootstrap_needs_train_data_and_effects_inherit_it(tmp_path):
    msg = _error(
        tmp_path,
        """\
        inference: bootstrap
        effects:
          - steps: {x1: 1}
        """,
    )
    assert ":9: inference: bootstrap refits the model and needs its training data" in msg
    cfg = _load(
        tmp_path,
        """\
        inference: {method: bootstrap, train_data: {path: train.csv}, n_resamples: 50}
        effects:
          - steps: {x1: 1}
          - steps: {x1: 1}
            inference: sample
          - steps: {x1: 1}
            inference: bootstrap
        """,
    )
    top = {"method": "bootstrap", "train_data": {"path": "train.csv"}, "n_resamples": 50, "ci": "percentile"}
    assert cfg.inference == top
    assert [e.inference for e in cfg.effects] == [top, {"method": "sample"}, top]


def test_bootstrap_settings_need_method_bootstrap(tmp_path):
    msg = _error(
        tmp_path,
        """\
        effects:
          - steps: {x1: 1}
            inference: {method: delta, n_resamples: 20}
        """,
    )
    assert ":11: effects[0].inference: n_resamples is a bootstrap setting" in msg


def test_flags_and_overview_defaults(tmp_path):
    from fme.report.inputs.specs import FLAG_DEFAULTS

    cfg = _load(
        tmp_path,
        """\
        flags: {ep_share: 0.2, leaf_n: 50}
        overview: false
        effects:
          - steps: {x1: 1}
        """,
    )
    assert cfg.flags == {**FLAG_DEFAULTS, "ep_share": 0.2, "leaf_n": 50}
    assert cfg.overview is False
    assert _load(tmp_path, "effects:\n  - steps: {x1: 1}\n").overview == {
        "step": "sd",
        "extrapolation": {"method": "envelope"},
    }
    msg = _error(tmp_path, "flags: {ep_shar: 0.2}\neffects:\n  - steps: {x1: 1}\n")
    assert ":9: flags.ep_shar: unknown key 'ep_shar'" in msg


# ------------------------------------------------------------------ computations behind new lines
def _grid(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.uniform(0, 10, n), "b": rng.uniform(0, 1, n), "c": rng.normal(0, 1, n)})


def test_extrapolation_causes_count_the_features_outside_the_reference():
    from fme.report.analysis.details import extrapolation_causes

    X = _grid()
    res = fme.fme(lambda d: d["a"] + d["b"], X, {"a": 2.0, "b": 0.3}, extrapolation="envelope")
    causes = extrapolation_causes(res, X, X)
    # brute force: x + h outside [min, max] of the reference, feature by feature
    out_a = X["a"] + 2.0 > X["a"].max()
    out_b = X["b"] + 0.3 > X["b"].max()
    assert {c["feature"]: c["n"] for c in causes} == {"a": int(out_a.sum()), "b": int(out_b.sum())}
    a = next(c for c in causes if c["feature"] == "a")
    assert a["min"] == X.loc[out_a, "a"].min() and a["max"] == X.loc[out_a, "a"].max()
    assert all(c["kind"] == "outside range" for c in causes)
    assert res.n_excluded == int((out_a | out_b).sum())


def test_extrapolation_causes_joint_flags_name_the_features_that_differ():
    from fme.report.analysis.details import extrapolation_causes

    rng = np.random.default_rng(1)
    t, r = rng.uniform(0, 2 * np.pi, 500), np.sqrt(rng.uniform(0, 1, 500))
    ring = pd.DataFrame({"u": r * np.cos(t), "v": r * np.sin(t), "w": rng.normal(0, 1, 500)})
    ring.loc[:49, "w"] = rng.normal(4, 0.1, 50)  # rows far out in w: their steps leave the hull jointly
    res = fme.fme(lambda d: d["u"], ring, {"u": 0.05}, extrapolation="hull", on_extrapolation="keep", random_state=0)
    causes = extrapolation_causes(res, ring, ring)
    flagged = int(res.results["extrapolation"].sum())
    outside = sum(c["n"] for c in causes if c["kind"] == "outside range")
    joint = [c for c in causes if c["kind"] == "joint"]
    assert (
        flagged > 0
        and joint
        and joint[0]["n"]
        == flagged - sum((res.results["extrapolation"] & (ring["u"] + 0.05 > ring["u"].max())).to_numpy())
    )
    assert outside <= flagged
    ranked = [c["feature"] for c in joint]
    smd = [c["smd"] for c in joint]
    assert smd == sorted(smd, reverse=True) and len(ranked) == 3


def test_effective_steps_match_the_shrunk_steps():
    from fme.report.analysis.details import effective_steps

    X = _grid()
    res = fme.fme(lambda d: d["a"] * d["b"], X, {"a": 3.0}, extrapolation="envelope", on_extrapolation="shrink")
    rows = effective_steps(res)
    share = res.results["step_a"].to_numpy() / 3.0
    q = np.quantile(share, [0, 0.25, 0.5, 0.75, 1])
    assert len(rows) == 1
    r = rows[0]
    np.testing.assert_allclose([r["min"], r["q25"], r["median"], r["q75"], r["max"]], q, rtol=0, atol=0)
    assert r["n_shrunk"] == int((share < 1).sum()) and r["n_shrunk"] > 0 and r["min"] >= 0.01
    # the summary prints the same quantiles
    assert f"median {q[2]:.3g}" in res.summary()


def _auc_by_ranks(y: np.ndarray, p: np.ndarray) -> float:
    from scipy.stats import rankdata

    r = rankdata(p)
    n1, n0 = int(y.sum()), int((1 - y).sum())
    return (r[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)


@pytest.mark.parametrize("labels", ["strings", "numbers"])
def test_classifier_fit_metrics_on_the_probability_scale(labels):
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from fme.report.analysis.model_view import model_fit

    bc = load_breast_cancer(as_frame=True)
    X = bc.data[["mean radius", "mean texture", "worst concavity"]]
    y = bc.target if labels == "numbers" else bc.target.map({0: "malignant", 1: "benign"})
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X.iloc[:400], y.iloc[:400])
    test = X.iloc[400:].assign(diagnosis=y.iloc[400:].to_numpy())
    target_class = model.classes_[1]
    fit = model_fit(model, test, "diagnosis", target_class)
    p_all = model.predict_proba(X.iloc[400:])
    k = 1
    yb = (y.iloc[400:].to_numpy() == target_class).astype(int)
    assert fit["kind"] == "classification" and fit["n"] == 169 and fit["n_target"] == int(yb.sum())
    assert fit["brier"] == pytest.approx(np.mean((p_all[:, k] - yb) ** 2), rel=1e-12)
    codes = np.searchsorted(model.classes_, y.iloc[400:].to_numpy())
    assert fit["log_loss"] == pytest.approx(-np.mean(np.log(p_all[np.arange(169), codes])), rel=1e-9)
    assert fit["auc"] == pytest.approx(_auc_by_ranks(yb, p_all[:, k]), rel=1e-12)
    assert "rmse" not in fit


def test_classifier_fit_refuses_an_unknown_label(tmp_path):
    from sklearn.linear_model import LogisticRegression

    from fme.report.analysis.model_view import model_fit

    X = _grid(100)
    y = np.where(X["a"] > 5, "hi", "lo")
    model = LogisticRegression().fit(X, y)
    cfg = _load(tmp_path, "test_data: {path: t.csv}\neffects:\n  - steps: {a: 1}\n")
    test = X.assign(y=np.where(X["a"] > 5, "hi", "LO"))
    with pytest.raises(ConfigError, match=r":9: test_data: test label 'LO' in column 'y' is not a class"):
        model_fit(model, test, "y", "hi", cfg)


# ------------------------------------------------------------------ wording
def _variant(**kw) -> dict:
    v = {
        "ame": 0.02,
        "sd": 0.05,
        "se": 0.004,
        "ci_low": 0.012,
        "ci_high": 0.028,
        "q25": 0.01,
        "q75": 0.03,
        "n": 150,
        "n_total": 150,
        "conf_level": 0.95,
        "step_label": "x + 1",
        "steps": {"x": 1.0},
        "numeric": True,
        "detector": None,
        "policy": None,
        "n_extrapolation": None,
        "nlm": False,
        "inference": "bootstrap",
        "model_ci": {
            "std_error": 0.02,
            "conf_low": -0.01,
            "conf_high": 0.05,
            "p_value": 0.3,
            "n_resamples": 50,
            "n_failed": 0,
            "ci": "percentile",
            "conf_level": 0.95,
        },
        "expected_sign": "+",
        "level_label": "None",
    }
    v.update(kw)
    return v


def test_model_ci_decides_direction_flags_and_plausibility():
    from fme.report.inputs.specs import FLAG_DEFAULTS
    from fme.report.present import sentences
    from fme.report.present.context import effect_cells, sign_agreement
    from fme.report.present.display import prepare_variant
    from fme.report.present.flags import FLAG, flag_rows

    v = prepare_variant(_variant(), scale=100.0)  # probabilities -> percentage points
    assert (v["ame"], v["ci_low"], v["ci_high"]) == pytest.approx((2.0, -1.0, 5.0))
    assert (v["fixed_ci_low"], v["fixed_ci_high"]) == pytest.approx((1.2, 2.8))  # excludes zero
    cells = effect_cells(v)
    text = sentences.effect_sentence(v, cells, "probability of malignant", "percentage points", "rows", {})
    assert "no clear direction on the model's predicted probability of malignant" in text
    assert f"AME {cells['ame']} percentage points" in text
    assert f"CI {cells['ci_low']} to {cells['ci_high']}, model uncertainty by bootstrap refits" in text
    rows = {r["rule"]: r for r in flag_rows(v, cells, "x", FLAG_DEFAULTS)}
    assert rows["CI covers zero although a sign is expected"]["status"] == FLAG
    assert rows["CI of the AME includes zero"]["status"] == FLAG
    assert sign_agreement("+", v["ame"], v["ci_low"], v["ci_high"])["agree"] == "unclear"
    # without a model-uncertainty interval the fixed one decides, and the sentence says so
    w = prepare_variant(_variant(inference="sample", model_ci=None), scale=1.0)
    cw = effect_cells(w)
    tw = sentences.effect_sentence(w, cw, "y", "", "rows", {})
    assert " raises " in tw and "fixed model only: model-estimation uncertainty not computed" in tw
    assert {r["rule"]: r["status"] for r in flag_rows(w, cw, "x", FLAG_DEFAULTS)}[
        "CI covers zero although a sign is expected"
    ] == "ok"


def test_leaf_nonlinearity_flag_uses_the_configured_threshold():
    from fme.report.inputs.specs import FLAG_DEFAULTS
    from fme.report.present.context import effect_cells
    from fme.report.present.display import prepare_variant
    from fme.report.present.flags import FLAG, OK, flag_rows

    leaves = [
        {"node": 2, "n": 60, "canlm": 0.62, "canlm_ci_low": 0.55, "canlm_ci_high": 0.69},
        {"node": 3, "n": 80, "canlm": 0.97, "canlm_ci_low": 0.95, "canlm_ci_high": 0.99},
    ]
    v = prepare_variant(_variant(inference="sample", model_ci=None, partition={"leaves": leaves, "root": {}}), 1.0)
    cells = effect_cells(v)

    def rule(t):
        return next(r for r in flag_rows(v, cells, "x", t) if r["rule"].startswith("non-linear cAME leaf"))

    assert rule(FLAG_DEFAULTS)["status"] == OK  # default 0.5
    flagged = rule({**FLAG_DEFAULTS, "leaf_anlm": 0.7})
    assert flagged["status"] == FLAG and flagged["value"] == "0.620 (leaf 2; 1 of 2 leaves below)"
    assert flagged["threshold"] == "< 0.7"


def test_stability_that_did_not_run_stays_in_the_flags_table():
    """Every stability refit failed: the rule stays in the flags table, says "not run" with the count, and is
    flagged (it was dropped silently); a stability section that ran is judged by its median ARI."""
    from fme.report.inputs.specs import FLAG_DEFAULTS
    from fme.report.present.context import effect_cells
    from fme.report.present.display import prepare_variant
    from fme.report.present.flags import FLAG, OK, flag_rows

    rule = "partition unstable across subsamples (median ARI)"
    failed = {"subsamples": 20, "n_refits": 0, "n_failed": 20, "errors": ["no rows"], "ari_median": None}
    v = prepare_variant(_variant(inference="sample", model_ci=None, stability=failed), 1.0)
    (row,) = [r for r in flag_rows(v, effect_cells(v), "x", FLAG_DEFAULTS) if r["rule"] == rule]
    assert (row["value"], row["status"], row["threshold"]) == ("not run: 20 of 20 refits failed", FLAG, "< 0.5")
    ran = {**failed, "n_refits": 20, "n_failed": 0, "errors": [], "ari_median": 0.8}
    v = prepare_variant(_variant(inference="sample", model_ci=None, stability=ran), 1.0)
    (row,) = [r for r in flag_rows(v, effect_cells(v), "x", FLAG_DEFAULTS) if r["rule"] == rule]
    assert (row["value"], row["status"]) == ("0.800", OK)
    v = prepare_variant(_variant(inference="sample", model_ci=None, stability=None), 1.0)
    assert [r for r in flag_rows(v, effect_cells(v), "x", FLAG_DEFAULTS) if r["rule"] == rule] == []


# ------------------------------------------------------------------ report builds (slow)
def _breast_cancer(kind: str, d: Path) -> None:
    import joblib
    from sklearn.datasets import load_breast_cancer

    bc = load_breast_cancer(as_frame=True)
    cols = ["mean radius", "mean texture", "mean smoothness", "worst concavity"]
    X = bc.data[cols]
    if kind == "logit":
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        y = bc.target.map({0: "malignant", 1: "benign"}).rename("diagnosis")
        model = make_pipeline(StandardScaler(), LogisticRegression())
    else:
        from sklearn.ensemble import HistGradientBoostingClassifier

        y = bc.target.rename("target")
        model = HistGradientBoostingClassifier(max_iter=30, random_state=0)
    model.fit(X.iloc[:400], y.iloc[:400])
    joblib.dump(model, d / "model.joblib")
    X.iloc[:400].assign(**{y.name: y.iloc[:400]}).to_csv(d / "train.csv", index=False)
    X.iloc[:400].to_csv(d / "data.csv", index=False)
    X.iloc[400:].assign(**{y.name: y.iloc[400:]}).to_csv(d / "test.csv", index=False)


def _wine(d: Path) -> None:
    import joblib
    from sklearn.datasets import load_wine
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    w = load_wine(as_frame=True)
    X = w.data[["alcohol", "malic_acid", "flavanoids", "color_intensity"]]
    y = w.target.map(dict(enumerate(w.target_names))).rename("cultivar")
    idx = np.random.default_rng(0).permutation(len(X))
    tr, te = idx[:130], idx[130:]
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X.iloc[tr], y.iloc[tr])
    joblib.dump(model, d / "model.joblib")
    X.iloc[tr].to_csv(d / "data.csv", index=False)
    X.iloc[te].assign(cultivar=y.iloc[te]).to_csv(d / "test.csv", index=False)


def _build(tmp_path_factory, name: str, make) -> tuple[dict, Path, dict]:
    pytest.importorskip("papermill")
    pytest.importorskip("pypandoc")
    from fme.report.build import build_report

    d = tmp_path_factory.mktemp(name)
    make(d)
    shutil.copy(FIXTURES / f"{name}.yaml", d / f"{name}.yaml")
    res = build_report(d / f"{name}.yaml", d / "out", force=True, log=lambda s: None)
    results = json.loads((d / "out" / "results.json").read_text())
    return res, d, results


@pytest.fixture(scope="module")
def logit(tmp_path_factory):
    return _build(tmp_path_factory, "breast-cancer-logit", lambda d: _breast_cancer("logit", d))


@pytest.fixture(scope="module")
def hgb(tmp_path_factory):
    return _build(tmp_path_factory, "breast-cancer-hgb", lambda d: _breast_cancer("hgb", d))


@pytest.fixture(scope="module")
def wine(tmp_path_factory):
    return _build(tmp_path_factory, "wine", _wine)


def _text(res) -> str:
    import html as htmllib

    body = Path(res["html"]).read_text(encoding="utf-8")
    body = re.sub(r"<(style|svg|script)\b.*?</\1>", " ", body, flags=re.S)
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def _tables(res) -> dict[str, list[list[str]]]:
    import html as htmllib

    html = Path(res["html"]).read_text(encoding="utf-8")
    out = {}
    for table in re.findall(r"<table\b.*?</table>", html, flags=re.S):
        cap = " ".join(
            htmllib.unescape(
                re.sub(r"<[^>]+>", " ", re.search(r"<caption>(.*?)</caption>", table, flags=re.S).group(1))
            ).split()
        )
        body = table.split("<tbody>", 1)[1]
        out[cap] = [
            [
                " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", c)).split())
                for c in re.findall(r"<td[^>]*>(.*?)</td>", r, flags=re.S)
            ]
            for r in re.findall(r"<tr[^>]*>(.*?)</tr>", body, flags=re.S)
        ]
    return out


def _table(res, starts: str) -> list[list[str]]:
    hits = [rows for cap, rows in _tables(res).items() if cap.split(": ", 1)[1].startswith(starts)]
    assert len(hits) == 1, starts
    return hits[0]


@pytest.mark.slow
def test_logit_report_names_the_class_in_percentage_points(logit):
    import joblib

    from fme._utils.numfmt import fmt_est, fmt_num

    res, d, results = logit
    text = _text(res)
    assert results["target_class"] == "malignant"
    model = joblib.load(d / "model.joblib")
    data = pd.read_csv(d / "data.csv")
    train = pd.read_csv(d / "train.csv")
    ref = fme.fme(
        model,
        data,
        {"mean radius": 1},
        extrapolation="envelope",
        reference_data=data,
        target_class="malignant",
        inference="bootstrap",
        random_state=0,
        bootstrap={
            "X": train.drop(columns="diagnosis"),
            "y": train["diagnosis"],
            "n_resamples": 30,
            "random_state": 0,
            "progress": False,
        },
    )
    lo, hi = ref.conf_int()
    ame, clo, chi = fmt_est(100 * ref.ame, 100 * lo, 100 * hi)
    sentence = next(s for s in re.split(r"(?<=\.) (?=[A-Z])", text) if s.startswith("Raising mean radius by 1 mm"))
    assert "the model's predicted probability of malignant" in sentence
    assert f"AME {ame} percentage points (95% CI {clo} to {chi}, model uncertainty by bootstrap refits" in sentence
    v = results["effects"][0]["variants"][0]
    assert v["inference"] == "bootstrap" and v["model_ci"]["n_resamples"] == 30
    intervals = _table(res, "Confidence intervals of the AME of Larger mean radius")
    assert intervals[0][0] == "model (bootstrap refits) (30 resamples, 0 failed refits, percentile)"
    assert intervals[0][2] == f"[{clo}, {chi}]" and intervals[0][4] == "yes" and intervals[1][4] == "no"
    # test-data metrics on the probability scale, string labels
    fit = results["test_fit"]
    assert fit["kind"] == "classification" and fit["n"] == 169
    assert f"AUC of class malignant against the rest {fmt_num(fit['auc'], 3)}" in text
    assert f"Brier score {fmt_num(fit['brier'], 4)}, log loss {fmt_num(fit['log_loss'], 4)}" in text
    assert "RMSE" not in text
    # configured flag threshold printed with its default
    thresholds = _table(res, "Flag thresholds")
    assert ["ep_share", "0.25", "0.5", "yes"] == thresholds[0][:4]
    # the mcec detector with its parameters, named in the method section
    assert "mcec (threshold = 0.6, n_background = 300)" in text


@pytest.mark.slow
def test_logit_overview_ranks_every_feature_like_fme_ame(logit):
    import joblib

    from fme._utils.numfmt import fmt_est

    res, d, results = logit
    model = joblib.load(d / "model.joblib")
    data = pd.read_csv(d / "data.csv")
    steps = {c: "sd" for c in data.columns}
    ref = fme.ame(
        model,
        data,
        steps,
        extrapolation="envelope",
        reference_data=data,
        target_class="malignant",
        inference="sample",
        random_state=0,
    )
    ref = ref.reindex(ref["ame"].abs().sort_values(ascending=False).index)
    rows = _table(res, "AME of every model feature")
    assert [r[1] for r in rows] == ref["feature"].tolist()
    for r, (_, e) in zip(rows, ref.iterrows()):
        ame, lo, hi = fmt_est(100 * e["ame"], 100 * e["conf_low"], 100 * e["conf_high"])
        assert r[3:8] == [f"{int(e['n']):,}", f"{int(e['n_excluded']):,}", ame, f"[{lo}, {hi}]", "fixed model (rows)"]
    dictionary = {r[0]: r for r in _table(res, "Feature dictionary")}
    assert dictionary["mean radius"][2:4] == ["mm", "mean distance from the centre to points on the perimeter"]
    assert dictionary["mean texture"][2:4] == ["not stated", "not stated"]


@pytest.mark.slow
def test_hgb_report_numeric_labels_exact_nlm_and_shrink(hgb):
    res, d, results = hgb
    text = _text(res)
    assert results["target_class"] == 1 and results["test_fit"]["kind"] == "classification"
    assert "the model's predicted probability of 1" in text
    v = results["effects"][0]["variants"][0]
    assert v["nlm_method"] == "exact"
    # NLM lines of issues 13/16: method used, median, share >= 0.9, flat and constant paths
    from fme.report.present.context import effect_cells

    c = effect_cells(v)
    assert (
        f"(method: exact): median {c['median_nlm']}, share of rows with NLM ≥ 0.9: {c['share_linear']}; "
        f"flat paths (NLM undefined): {c['n_nlm_flat']}, constant paths: {c['n_nlm_constant']}"
    ) in text
    # effective steps under shrink: table equals results.json, which equals the shrunk step columns
    rows = _table(res, "Effective steps of")
    es = v["effective_steps"][0]
    assert rows[0][0] == "worst concavity" and rows[0][1] == "+0.1"
    tab = pd.read_csv(d / "out" / "tables" / "concavity-fme.csv")
    share = tab["step_worst concavity"].to_numpy() / 0.1
    np.testing.assert_allclose([es["min"], es["median"], es["max"]], np.quantile(share, [0, 0.5, 1]), rtol=1e-12)
    assert es["n_shrunk"] == int((share < 1).sum())
    # overview with unit steps and no detector
    assert "Rows left out" in text and len(_table(res, "AME of every model feature for one unit step")) == 4


@pytest.mark.slow
def test_wine_report_explains_the_configured_class(wine):
    res, d, results = wine
    text = _text(res)
    assert results["target_class"] == "class_1"
    assert "the model's predicted probability of class_1" in text
    assert results["test_fit"]["n_classes"] == 3
    assert "lof (contamination = 0.05, n_neighbors = 10)" in text


@pytest.mark.slow
def test_boston_flags_are_text_and_overview_covers_every_feature(tmp_path_factory):
    pytest.importorskip("papermill")
    from fme.report.build import build_report

    out = tmp_path_factory.mktemp("boston-content")
    res = build_report(REPO / "reports" / "boston-svm.yaml", out, force=True, log=lambda s: None)
    results = json.loads((out / "results.json").read_text())
    flags = _table(res, "Automatic flags")
    assert {r[4] for r in flags} == {"ok", "FLAG (!)"}
    leaf = [r for r in flags if r[1] == "non-linear cAME leaf (lowest cANLM)"]
    assert len(leaf) == 3  # the three effects with a partition and NLMs
    rows = _table(res, "AME of every model feature")
    assert len(rows) == 13  # 11 numeric features + chas to level 0 and to level 1
    assert [r[0] for r in rows] == [str(i) for i in range(1, 14)]
    assert sorted(r[2] for r in rows if r[1] == "chas") == ["to level 0", "to level 1"]
    ames = [abs(float(r[5].replace(",", ""))) for r in rows]
    assert ames == sorted(ames, reverse=True)
    text = _text(res)
    # the where-sentence names the features that caused the exclusion, with their counts
    v = results["effects"][2]["variants"][0]
    assert [(c["feature"], c["n"]) for c in v["extrapolation_where"]] == [("crim", 400), ("nox", 157)]
    assert "outside the reference data in crim for 400: observed crim from" in text
    assert "outside the reference data in nox for 157: observed nox from" in text
    # every effect states the NLM method actually used, the median and the share >= 0.9
    assert text.count("(method: simpson38): median") == 4


def test_model_interval_is_the_delta_method_interval_for_statsmodels():
    import statsmodels.formula.api as smf

    from fme.report.analysis.details import model_interval

    X = _grid(300, seed=4)
    X["y"] = 1.0 + 2.0 * X["a"] - 3.0 * X["b"] + X["a"] * X["b"] + np.random.default_rng(4).normal(0, 1, 300)
    model = smf.ols("y ~ a * b + c", data=X).fit()
    data = X.drop(columns="y")
    res = fme.fme(model, data, {"a": 1.0}, inference="auto")
    got = model_interval(res, 0.9)
    ref = fme.ame(model, data, {"a": 1.0}, inference="delta", conf_level=0.9).iloc[0]
    assert got["inference"] == "delta"
    assert got["model_ci"]["conf_low"] == pytest.approx(ref["conf_low"], rel=1e-10)
    assert got["model_ci"]["conf_high"] == pytest.approx(ref["conf_high"], rel=1e-10)
    assert got["model_ci"]["std_error"] == pytest.approx(ref["std_error"], rel=1e-10)
    # inference="sample" is the fixed-model interval only: no model-uncertainty interval to add
    assert model_interval(fme.fme(model, data, {"a": 1.0}, inference="sample"), 0.9) == {
        "inference": "sample",
        "model_ci": None,
    }
