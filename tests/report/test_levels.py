"""The three levels of an effect in reports: the ``learner:`` and ``data_level:`` keys, their numbers (equal to
fme.learner_ame and fme.dgp_ame called directly), their table, sentences and flags, and the rendered section."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jsonschema")

from sklearn.base import BaseEstimator, RegressorMixin  # noqa: E402

import fme  # noqa: E402
from fme.report.inputs.config import ConfigError, load_config  # noqa: E402
from tests.report.test_content import FIXTURES, _breast_cancer  # noqa: E402

_HEAD = (
    "title: T\nowner: O\nintended_use: U\nmodel: {joblib: m.joblib}\ndata: {path: data.csv}\ntarget: y\n"
    "effects:\n  - id: x\n    steps: {x: 1}\n    partition: false\n    stability: false\n"
)


def _write(tmp_path: Path, effect: str, top: str = "") -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(_HEAD.replace("effects:\n", top + "effects:\n") + effect, encoding="utf-8")
    return p


# ----------------------------------------------------------------- config
def test_levels_need_training_data_and_name_their_key_and_line(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, "    learner: true\n"))
    assert str(err.value) == (
        f"{tmp_path / 'c.yaml'}:12: effects[0].learner: learner refits the learner on splits of the training data "
        "and needs them: give train_data: {path: ...} (features and the target column) here, or inference: "
        "{method: bootstrap, train_data: ...}"
    )
    with pytest.raises(
        ConfigError,
        match=r":12: effects\[0\]\.data_level: data_level fits the outcome and the "
        r"density ratio of the training data and needs them",
    ):
        load_config(_write(tmp_path, "    data_level: {folds: 3}\n"))
    with pytest.raises(
        ConfigError,
        match=r"effects\[0\]\.learner(\.repeats)?: .*(1 is less than the minimum of 2|"
        r"is not valid)",
    ):
        load_config(_write(tmp_path, "    learner: {repeats: 1, train_data: {path: t.csv}}\n"))


def test_levels_take_their_own_or_the_bootstrap_training_data_and_defaults(tmp_path):
    cfg = load_config(
        _write(
            tmp_path,
            "    learner: true\n    data_level: {train_data: {path: own.csv}}\n",
            top="inference: {method: bootstrap, train_data: {path: boot.csv}}\n",
        )
    )
    eff = cfg.effects[0]
    assert eff.learner == {"repeats": 15, "test_size": 0.5, "train_data": {"path": "boot.csv"}}
    assert eff.data_level == {"folds": 5, "train_data": {"path": "own.csv"}}
    # recorded in results.json only when given; an effect without them records neither (older builds unchanged)
    assert eff.to_dict()["learner"] == eff.learner and eff.to_dict()["data_level"] == eff.data_level
    plain = load_config(_write(tmp_path, "", top="inference: {method: bootstrap, train_data: {path: boot.csv}}\n"))
    assert plain.effects[0].learner is False and "learner" not in plain.effects[0].to_dict()
    # their training files are inputs of the build: listed (hashed) beside the bootstrap's
    from fme.report.inputs.validate import train_data_specs

    assert train_data_specs(cfg) == [
        (("inference", "train_data"), {"path": "boot.csv"}),
        (("effects", 0, "data_level", "train_data"), {"path": "own.csv"}),
    ]


# ----------------------------------------------------------------- analysis
@pytest.fixture(scope="module")
def logit(tmp_path_factory):
    """The breast-cancer logistic-regression pipeline, its radius effect with both levels (analysis only)."""
    import joblib

    from fme.report.analysis import run_effects

    d = tmp_path_factory.mktemp("levels")
    _breast_cancer("logit", d)
    text = (FIXTURES / "breast-cancer-logit.yaml").read_text(encoding="utf-8")
    text = text.replace(
        "      n_resamples: 30\n", "      n_resamples: 30\n    learner: {repeats: 4}\n    data_level: {folds: 3}\n"
    )
    (d / "c.yaml").write_text(text, encoding="utf-8")
    cfg = load_config(d / "c.yaml")
    cfg = replace(cfg, effects=cfg.effects[:1])
    model = joblib.load(d / "model.joblib")
    data = pd.read_csv(d / "data.csv")
    with pytest.warns(fme.BootstrapWarning):
        (g,) = run_effects(model, data, data, cfg, d / "out", target_class="benign")
    return {"dir": d, "cfg": cfg, "model": model, "group": g}


def test_learner_and_data_levels_equal_the_library_called_directly(logit):
    train = pd.read_csv(logit["dir"] / "train.csv")
    X, y = train.drop(columns=["diagnosis"]), train["diagnosis"]
    v = logit["group"]["variants"][0]
    learner = fme.learner_ame(
        logit["model"], X, y, {"mean radius": 1.0}, repeats=4, test_size=0.5, random_state=0, target_class="benign"
    )
    got = v["levels"]["learner"]
    for col in ("ame", "std_error", "conf_low", "conf_high", "ame_full"):
        assert got[col] == learner[col].iloc[0], col
    assert got["inference"] == "learner (Nadeau-Bengio, 4 splits, n_train 200)"
    assert (got["n_train"], got["n_test"], got["n_splits"], got["n_failed"]) == (200, 200, 4, 0)
    data = fme.dgp_ame(
        X,
        y,
        {"mean radius": 1.0},
        folds=3,
        random_state=0,
        model=logit["model"],
        target_class="benign",
        extrapolation=fme.EnvelopeDetector(),
    )
    got = v["levels"]["data"]
    for col in (
        "ame",
        "std_error",
        "conf_low",
        "conf_high",
        "plug_in",
        "correction",
        "ess",
        "max_weight",
        "share_extrapolated",
        "model_ame",
    ):
        assert got[col] == data[col].iloc[0], col
    assert got["positivity"] == data["positivity"].iloc[0] == "ok"
    assert got["inference"] == "one-step (cross-fitted, 3 folds)"
    # the learner fitted on all 400 training rows is the report's model (it was fitted on them)
    assert v["levels"]["learner"]["ame_full"] == pytest.approx(v["levels"]["data"]["model_ame"], rel=1e-12)


def test_levels_table_sentences_and_flags_on_the_report_scale(logit):
    from fme.report.present.context import effect_cells
    from fme.report.present.display import prepare_variant
    from fme.report.present.levels import level_flag_rows, level_rows, level_sentences

    raw = logit["group"]["variants"][0]
    v = prepare_variant(raw, 100.0)  # a class probability: percentage points
    ln, dl = v["levels"]["learner"], v["levels"]["data"]
    assert (
        ln["ame"] == 100 * raw["levels"]["learner"]["ame"]
        and dl["model_ame"] == 100 * raw["levels"]["data"]["model_ame"]
    )
    assert dl["ess"] == raw["levels"]["data"]["ess"]  # scale-free numbers stay
    cells = effect_cells(v)
    rows = level_rows(v, cells, "observations")
    assert [r["level"] for r in rows] == ["model", "learner", "data"]
    a, lo, hi = fme._utils.numfmt.fmt_est(ln["ame"], ln["conf_low"], ln["conf_high"])
    assert rows[1]["ame"] == a and rows[1]["ci"] == f"[{lo}, {hi}]"
    assert rows[1]["rows"] == "test rows of 4 splits of 400 training observations (200 each)"
    assert rows[2]["inference"] == "one-step (cross-fitted, 3 folds); positivity ok"
    text = level_sentences(v, "Larger mean radius", "percentage points", "observations")
    assert text[0].startswith(
        f"Learner level: retrained on 200 observations (4 seeded splits of the training data), "
        f"the algorithm's AME of Larger mean radius is {a} percentage points (95% CI {lo} to {hi}"
    )
    assert ": negative." in text[0]
    assert text[1].startswith("Data level: in the data, the outcome changes by ")
    assert "On the same rows the model predicts a change of " in text[1]
    flags = level_flag_rows(v, "radius")
    assert [(f["rule"], f["value"], f["status"]) for f in flags] == [
        ("learner-level splits failed", "0 of 4", "ok"),
        ("positivity of the data-level step", "ok", "ok"),
    ]


def test_a_level_that_cannot_run_is_said_not_run_and_flagged(tmp_path):
    """A weighted statsmodels GLM cannot be refitted by its formula: the learner level is not run, with the
    reason; the data level needs no refit of the model."""
    import joblib
    import statsmodels.formula.api as smf

    from fme.report.analysis import run_effects
    from fme.report.present.levels import level_flag_rows, level_rows

    rng = np.random.default_rng(0)
    d = pd.DataFrame({"x": rng.normal(size=200), "w": rng.normal(size=200)})
    d["y"] = 1 + 0.5 * d["x"] + rng.normal(size=200)
    model = smf.glm("y ~ x + w", data=d, var_weights=np.full(200, 2.0)).fit()
    joblib.dump(model, tmp_path / "m.joblib")
    d.to_csv(tmp_path / "train.csv", index=False)
    d[["x", "w"]].to_csv(tmp_path / "data.csv", index=False)
    cfg = load_config(
        _write(
            tmp_path,
            "    extrapolation: none\n    learner: {train_data: {path: train.csv}}\n"
            "    data_level: {folds: 2, train_data: {path: train.csv}}\n",
        )
    )
    (g,) = run_effects(model, d[["x", "w"]], d[["x", "w"]], cfg, tmp_path / "out")
    lv = g["variants"][0]["levels"]
    assert lv["learner"]["error"] == (
        "learner: refits of a GLM with var_weights are not supported (the weights are "
        "not a column the formula can take again); pass a function (X_train, "
        "y_train) -> fitted model instead."
    )
    # the data level needs no refit of the model: its own AME is the Gaussian GLM's slope on every row
    assert lv["data"]["model_ame"] == pytest.approx(model.params["x"], rel=1e-12)
    assert lv["data"]["detector"] is None and lv["data"]["share_extrapolated"] is None
    v = g["variants"][0]
    from fme.report.present.context import effect_cells
    from fme.report.present.display import prepare_variant

    v = prepare_variant(v, 1.0)
    rows = level_rows(v, effect_cells(v), "rows")
    assert rows[1]["ame"] == "not run" and rows[1]["inference"] == lv["learner"]["error"]
    assert level_flag_rows(v, "x")[0] == {
        "effect": "x",
        "rule": "learner-level AME computed",
        "threshold": "yes",
        "value": "not run",
        "status": "FLAG (!)",
    }


def test_the_levels_of_a_categorical_effect_share_the_learner_refits(tmp_path):
    """A categorical effect over all its levels refits the learner once per split for all of them (repeats + 1
    fits, not one set per level), and each level's record equals fme.learner_ame called for it alone (its standard
    error to 1e-12: the shared call's variances are the diagonal of one covariance matrix)."""
    import joblib
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from fme.report.analysis import run_effects

    rng = np.random.default_rng(4)
    n = 300
    d = pd.DataFrame({"x": rng.normal(size=n), "k": rng.choice(["a", "b", "c", "d"], n)})
    d["y"] = d["x"] + 2 * (d["k"] == "b") - (d["k"] == "c") + rng.normal(size=n)
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["k"]), remainder="passthrough"), _CountingLinear()
    ).fit(d[["x", "k"]], d["y"])
    joblib.dump(model, tmp_path / "m.joblib")
    d.to_csv(tmp_path / "train.csv", index=False)
    d[["x", "k"]].to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "c.yaml").write_text(
        _HEAD.replace("steps: {x: 1}", "steps: {k: all}") + "    extrapolation: none\n"
        "    learner: {repeats: 3, train_data: {path: train.csv}}\n",
        encoding="utf-8",
    )
    cfg = load_config(tmp_path / "c.yaml")
    _CountingLinear.fits = 0
    (g,) = run_effects(model, d[["x", "k"]], d[["x", "k"]], cfg, tmp_path / "out")
    assert _CountingLinear.fits == 3 + 1  # the splits' fits and the one on all rows, once for the 4 levels
    assert [v["level"] for v in g["variants"]] == ["a", "b", "c", "d"]
    X, y = d[["x", "k"]], d["y"]
    for v in g["variants"]:
        own = fme.learner_ame(model, X, y, {"k": v["level"]}, repeats=3, test_size=0.5, random_state=0)
        got = v["levels"]["learner"]
        assert (got["ame"], got["ame_full"]) == (own["ame"].iloc[0], own["ame_full"].iloc[0])
        for col in ("std_error", "conf_low", "conf_high", "p_value"):  # one covariance matrix: the last bits differ
            assert got[col] == pytest.approx(own[col].iloc[0], rel=1e-12), (v["level"], col)
        assert (got["n_splits"], got["n_failed"], got["errors"]) == (3, 0, [])


class _CountingLinear(RegressorMixin, BaseEstimator):
    """A linear regression that counts its fits (clones share the count)."""

    fits = 0

    def fit(self, X, y) -> _CountingLinear:
        from sklearn.linear_model import LinearRegression

        type(self).fits += 1
        self.model_ = LinearRegression().fit(X, y)
        return self

    def predict(self, X):
        return self.model_.predict(X)


@pytest.mark.slow
def test_the_rendered_report_shows_the_three_levels(tmp_path):
    from fme.report.build import build_report

    _breast_cancer("logit", tmp_path)
    text = (FIXTURES / "breast-cancer-logit.yaml").read_text(encoding="utf-8")
    text = text.replace(
        "      n_resamples: 30\n", "      n_resamples: 30\n    learner: {repeats: 4}\n    data_level: {folds: 3}\n"
    )
    (tmp_path / "c.yaml").write_text(text, encoding="utf-8")
    res = build_report(tmp_path / "c.yaml", tmp_path / "out", force=True, log=lambda s: None)
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    radius = next(g for g in results["effects"] if g["id"] == "radius")["variants"][0]
    texture = next(g for g in results["effects"] if g["id"] == "texture")["variants"][0]
    assert set(radius["levels"]) == {"learner", "data"} and "levels" not in texture
    qmd = (tmp_path / "out" / "report.qmd").read_text(encoding="utf-8")
    assert qmd.count("**Three levels of the effect.**") == 1
    assert "\n- **Environment:**" in qmd  # its own bullet, not run into the package versions
    assert "| learner | Would the algorithm, retrained on new data of the same size, show this effect? |" in qmd
    import html as htmllib
    import re

    page = Path(res["html"]).read_text(encoding="utf-8")
    text = " ".join(
        htmllib.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(style|svg)\b.*?</\1>", " ", page, flags=re.S))).split()
    )
    lv = radius["levels"]
    ame, lo, hi = fme._utils.numfmt.fmt_est(
        100 * lv["learner"]["ame"], 100 * lv["learner"]["conf_low"], 100 * lv["learner"]["conf_high"]
    )
    assert (
        f"the algorithm's AME of Larger mean radius is {ame} percentage points (95% CI {lo} to {hi}, "
        "Nadeau-Bengio corrected)"
    ) in text
    assert "Data level: in the data, the outcome changes by " in text
    assert "positivity of the data-level step" in text


def test_a_failing_positivity_withholds_the_interval_in_table_sentence_and_flag():
    from fme.report.present.levels import level_flag_rows, level_rows, level_sentences

    data = {
        "ame": 0.8,
        "std_error": 0.3,
        "conf_low": None,
        "conf_high": None,
        "inference": "one-step (cross-fitted, 5 folds)",
        "plug_in": 0.7,
        "correction": 0.1,
        "ess": 41.6,
        "max_weight": 88.0,
        "share_extrapolated": 0.46,
        "positivity": "fails",
        "n": 500,
        "model_ame": 1.2,
        "note": "",
        "folds": 5,
    }
    v = {"conf_level": 0.9, "levels": {"learner": None, "data": data}, "ci_inference": "sample", "se": 0.05}
    cells = {"n": "500", "ame": "1.20", "ci_low": "1.10", "ci_high": "1.30", "ci_kind": "fixed model (rows)"}
    rows = level_rows(v, cells, "rows")
    assert rows[1] == {
        "level": "data",
        "question": "Does the outcome itself change this way in the data (E[Y | X] moved by the step)?",
        "rows": "500 training rows (5 folds)",
        "ame": "0.800",
        "ci": "withheld (positivity fails)",
        "se": "0.3000",
        "inference": "one-step (cross-fitted, 5 folds); positivity fails",
        "extrapolation": "46.0% of the moved rows flagged; kept, weighed in the positivity verdict",
    }
    (text,) = level_sentences(v, "x", "", "rows")
    assert text == (
        "Data level: in the data, the outcome changes by 0.800 on average under the same step (one-step "
        "estimate on 500 training rows; no interval: the moved rows leave the support of the data); "
        "positivity fails (effective sample size 42 of 500, largest weight 88.0, 46.0% of moved rows "
        "flagged as extrapolation). On the same rows the model predicts a change of 1.200."
    )
    assert level_flag_rows(v, "x") == [
        {
            "effect": "x",
            "rule": "positivity of the data-level step",
            "threshold": "weak or fails",
            "value": "fails",
            "status": "FLAG (!)",
        }
    ]


def test_the_levels_table_says_which_rows_were_checked_for_extrapolation():
    """The model row leaves its extrapolation points out, the learner's test rows are not checked, the data row
    keeps the moved rows it flags: each row says so."""
    from fme.report.present.levels import LEARNER_EPS, level_rows

    learner = {
        "ame": 0.5,
        "std_error": 0.1,
        "conf_low": 0.3,
        "conf_high": 0.7,
        "inference": "Nadeau-Bengio",
        "n_splits": 4,
        "n_rows": 400,
        "n_test": 200,
    }
    data = {
        "ame": 0.8,
        "std_error": 0.3,
        "conf_low": 0.2,
        "conf_high": 1.4,
        "inference": "one-step",
        "positivity": "ok",
        "n": 500,
        "folds": 5,
        "share_extrapolated": 0.02,
        "detector": "envelope",
    }
    v = {
        "conf_level": 0.95,
        "levels": {"learner": learner, "data": data},
        "ci_inference": "sample",
        "se": 0.05,
        "detector": "envelope",
        "policy": "exclude",
    }
    cells = {
        "n": "480",
        "ame": "1.20",
        "ci_low": "1.10",
        "ci_high": "1.30",
        "ci_kind": "fixed model (rows)",
        "n_extrapolation": "20",
    }
    rows = level_rows(v, cells, "rows")
    assert [r["extrapolation"] for r in rows] == [
        "20 left out (envelope)",
        LEARNER_EPS,
        "2.0% of the moved rows flagged (envelope); kept, weighed in the positivity verdict",
    ]
    assert LEARNER_EPS.startswith("not checked")
