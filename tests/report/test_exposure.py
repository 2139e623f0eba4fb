"""A GLM's exposure or offset column enters every prediction as observed: the overview does not step it (it
never says its effect 'would be 0 by construction') and says that predictions use each row's exposure."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from fme.report.inputs.config import load_config


def test_the_overview_says_predictions_use_each_rows_exposure(tmp_path):
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    from fme.report.analysis.model_view import feature_overview
    from fme.report.present.model_context import whole_model

    rng = np.random.default_rng(0)
    d = pd.DataFrame({"x": rng.normal(size=200), "t": rng.uniform(1, 3, 200)})
    d["y"] = rng.poisson(d["t"] * np.exp(0.3 * d["x"]))
    model = smf.glm("y ~ x", data=d, family=sm.families.Poisson(), exposure=d["t"]).fit()
    (tmp_path / "c.yaml").write_text(
        textwrap.dedent("""\
        title: T
        owner: O
        intended_use: U
        model: {joblib: model.joblib}
        data: {path: data.csv}
        target: y
        effects:
          - steps: {x: 1}
        """),
        encoding="utf-8",
    )
    cfg = load_config(tmp_path / "c.yaml")
    X = d[["x", "t"]]
    ov = feature_overview(model, X, X, cfg, None)
    assert [r["feature"] for r in ov["rows"]] == ["x"]
    assert not any("by construction" in str(r.get("error")) for r in ov["rows"])
    assert ov["prediction_columns"] == [{"column": "t", "role": "exposure"}]
    view = whole_model({"overview": ov, "dictionary": []}, cfg, 1.0, 5)
    assert view["overview"]["inputs"] == ["predictions use each row's exposure (column t), as observed"]
