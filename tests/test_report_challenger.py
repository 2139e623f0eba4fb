"""Champion and challenger (issue 27 item 2): the same effects for a second model on the same rows."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jsonschema")


def _case(tmp_path, slope_b: float):
    import joblib
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(4)
    n = 300
    d = pd.DataFrame({"x": rng.normal(size=n), "w": rng.normal(size=n)})
    d["y"] = 1 + 0.8 * d["x"] + rng.normal(size=n)
    d["y2"] = 1 + slope_b * d["x"] + rng.normal(size=n)
    a = smf.ols("y ~ x + w", data=d).fit()
    b = smf.ols("y2 ~ x + w", data=d).fit()
    joblib.dump(a, tmp_path / "a.joblib")
    joblib.dump(b, tmp_path / "b.joblib")
    d[["x", "w"]].to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "c.yaml").write_text(textwrap.dedent("""\
        title: T
        owner: O
        intended_use: U
        model: {joblib: a.joblib}
        challenger: {joblib: b.joblib}
        data: {path: data.csv}
        target: y
        inference: delta
        effects:
          - id: x
            steps: {x: 1}
            extrapolation: none
            partition: false
            stability: false
            expect: {sign: '+'}
        """), encoding="utf-8")
    return a, b, d


def test_paired_difference_by_hand_and_the_disagreement_sentences(tmp_path):
    from fme.report.analysis import run_effects
    from fme.report.config import load_config
    from fme.report.context import challenger_cells

    a, b, d = _case(tmp_path, -0.6)
    cfg = load_config(tmp_path / "c.yaml")
    X = d[["x", "w"]]
    (g,) = run_effects(a, X, X, cfg, tmp_path / "out")
    c = g["variants"][0]["challenger"]
    # OLS: each AME is the x coefficient; the two fits' delta SEs combine as independent
    assert c["ame"] == pytest.approx(b.params["x"], rel=1e-10)
    assert c["difference"] == pytest.approx(a.params["x"] - b.params["x"], rel=1e-10)
    se = np.hypot(a.bse["x"], b.bse["x"])
    assert c["difference_high"] - c["difference"] == pytest.approx(1.959963984540054 * se, rel=1e-6)
    assert c["difference_inference"].startswith("delta") and c["n_common"] == len(d)
    assert c["sign_disagrees"] and c["contracts"][0]["verdict"] == "not met"
    cells = challenger_cells([g])
    assert any("disagree in sign" in n for n in cells["notes"])
    assert any("contract AME > 0 is met for the champion and not met for the challenger" in n for n in cells["notes"])


def test_a_model_without_covariance_gets_the_paired_fixed_model_interval(tmp_path):
    import joblib
    from sklearn.linear_model import LinearRegression

    from fme.report.analysis import run_effects
    from fme.report.config import load_config

    a, _, d = _case(tmp_path, 0.8)
    X = d[["x", "w"]]
    lr = LinearRegression().fit(X, d["y2"])
    joblib.dump(lr, tmp_path / "b.joblib")
    cfg = load_config(tmp_path / "c.yaml")
    (g,) = run_effects(a, X, X, cfg, tmp_path / "out")
    c = g["variants"][0]["challenger"]
    diff = a.params["x"] - lr.coef_[0]                       # constant per row: no spread over the rows
    assert c["difference"] == pytest.approx(diff, rel=1e-8)
    assert c["difference_inference"] == "fixed model, paired over the rows"
    assert not c["sign_disagrees"]
