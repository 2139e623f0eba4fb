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


def test_results_json_lists_the_enters_predictions_claim_the_overview_prints(tmp_path):
    """The sentence 'predictions use each row's exposure' is the text of a claim results.json lists (kind
    enters_predictions, the column cited), and the overview prints that listed claim."""
    from fme.report.analysis.typed import typed_payload
    from fme.report.present.model_context import whole_model

    (tmp_path / "c.yaml").write_text(
        "title: T\nowner: O\nintended_use: U\nmodel: {joblib: m.joblib}\ndata: {path: d.csv}\ntarget: y\n"
        "effects:\n  - steps: {x: 1}\n",
        encoding="utf-8",
    )
    cfg = load_config(tmp_path / "c.yaml")
    row = {"feature": "x", "step": 1.0, "level": None, "ame": 0.3, "std_error": 0.1, "conf_low": 0.1}
    row.update(conf_high=0.5, inference="delta", n=200, n_excluded=0, conf_level=0.95, error=None)
    overview = {"step": "unit", "detector": {"method": "none"}, "rows": [row]}
    overview["prediction_columns"] = [{"column": "t", "role": "exposure"}]
    typed = typed_payload({"effects": [], "overview": overview, "target": "y", "config": {"target_unit": "claims"}})
    (claim,) = [c for c in typed["claims"] if c["kind"] == "enters_predictions"]
    assert claim["cites"] == ["t"] and claim["holds"] and claim["outcome"] == "enters"
    view = whole_model({**typed, "dictionary": []}, cfg, 1.0, 5)
    assert (
        view["overview"]["inputs"] == [claim["text"]] == ["predictions use each row's exposure (column t), as observed"]
    )
    q = typed["overview"]["rows"][0]["quantity"]
    assert q["id"] == "overview/x" and q["unit"]["name"] == "claims" and q["rows"]["n"] == 200
    assert view["overview"]["rows"][0]["ame"] == "0.30" and view["overview"]["rows"][0]["n"] == "200"
