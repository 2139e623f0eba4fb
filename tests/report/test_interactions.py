"""interactions: in reports: listed pairs and the auto screen, equal to fme.interaction."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jsonschema")


def _case(tmp_path, interactions: str):
    import joblib
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(6)
    n = 300
    d = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.normal(size=n)})
    d["y"] = d["a"] + d["b"] + 0.6 * d["a"] * d["b"] + 0.2 * d["c"] + rng.normal(size=n)
    m = smf.ols("y ~ a * b + c", data=d).fit()
    joblib.dump(m, tmp_path / "m.joblib")
    d[["a", "b", "c"]].to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "c.yaml").write_text(
        textwrap.dedent(f"""\
        title: T
        owner: O
        intended_use: U
        model: {{joblib: m.joblib}}
        data: {{path: data.csv}}
        target: y
        interactions: {interactions}
        effects:
          - id: a
            steps: {{a: 1}}
            extrapolation: none
            partition: false
            stability: false
        """),
        encoding="utf-8",
    )
    return m, d


def test_listed_pairs_equal_the_library_and_the_coefficient(tmp_path):
    import fme
    from fme.report.analysis.interactions import run_interactions
    from fme.report.inputs.config import load_config
    from fme.report.present.context import interaction_cells

    m, d = _case(tmp_path, "[{a: {a: 1}, b: {b: 1}}, {a: {a: 1}, b: {c: 1}}]")
    cfg = load_config(tmp_path / "c.yaml")
    X = d[["a", "b", "c"]]
    block = run_interactions(m, X, X, cfg, None)
    first, second = block["rows"]  # ordered by |estimate| / SE: a-b first
    assert first["steps_b"].startswith("b") and first["estimate"] == pytest.approx(m.params["a:b"], rel=1e-9)
    assert first["std_error"] == pytest.approx(m.bse["a:b"], rel=1e-8)
    lib = fme.interaction(m, X, {"a": 1}, {"c": 1})
    assert second["estimate"] == pytest.approx(float(lib["estimate"].iloc[0]), abs=1e-12)  # additive in a and c
    cells = interaction_cells(block)
    assert "changes when the other is taken too" in cells["sentences"][0]
    assert cells["sentences"][1].startswith("a + 1 and c + 1: no clear interaction")


def test_auto_screens_pairs_of_the_overview_and_the_report_renders(tmp_path):
    from fme.__main__ import main

    _case(tmp_path, "{auto: 3}")
    assert main(["report", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "r"), "--no-pdf", "--no-progress"]) == 0
    import json

    res = json.loads((tmp_path / "r" / "results.json").read_text(encoding="utf-8"))
    rows = res["interactions"]["rows"]
    assert res["interactions"]["auto"] and len(rows) == 3  # 3 features: 3 pairs
    assert {frozenset((r["steps_a"].split()[0], r["steps_b"].split()[0])) for r in rows} == {
        frozenset(p) for p in (("a", "b"), ("a", "c"), ("b", "c"))
    }
    html = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "Interactions of two steps" in html


def test_the_screens_fixed_model_intervals_are_said_in_the_reports_words(tmp_path):
    """A model without covariance under inference: bootstrap: the screen's intervals are fixed-model ones; the
    report says so once, naming the screen and the config, and no Python-keyword advice reaches the warnings."""
    import warnings

    import joblib
    from sklearn.linear_model import LinearRegression

    from fme.report.analysis.interactions import run_interactions
    from fme.report.inputs.config import load_config
    from fme.report.present.context import interaction_cells

    rng = np.random.default_rng(1)
    d = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    d["y"] = d["a"] + d["b"] + rng.normal(size=200)
    X = d[["a", "b"]]
    joblib.dump(LinearRegression().fit(X, d["y"]), tmp_path / "m.joblib")
    d.to_csv(tmp_path / "train.csv", index=False)
    X.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "c.yaml").write_text(
        textwrap.dedent("""\
        title: T
        owner: O
        intended_use: U
        model: {joblib: m.joblib}
        data: {path: data.csv}
        target: y
        inference: {method: bootstrap, train_data: {path: train.csv}, n_resamples: 20}
        interactions: [{a: {a: 1}, b: {b: 1}}]
        effects:
          - steps: {a: 1}
        """),
        encoding="utf-8",
    )
    cfg = load_config(tmp_path / "c.yaml")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        block = run_interactions(joblib.load(tmp_path / "m.joblib"), X, X, cfg, None)
    assert not [w for w in caught if "bootstrap={" in str(w.message)]
    assert block["note"].startswith("The interactions screen refits nothing: its intervals are fixed-model")
    assert "the config asks for inference: bootstrap" in block["note"] and "bootstrap={" not in block["note"]
    assert interaction_cells(block)["note"] == block["note"]
