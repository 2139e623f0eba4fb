"""Issue 22: reports that hold on models no one here wrote (statsmodels GLMs with C() terms, gradient boosting
with pandas categoricals, LightGBM). Each test runs a small case like the one that found the problem, on data
shipped with statsmodels or scikit-learn."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("jsonschema")

from fme.report.config import ConfigError, load_config  # noqa: E402


def _randhie(n: int = 600) -> pd.DataFrame:
    import statsmodels.api as sm

    d = sm.datasets.randhie.load_pandas().data.iloc[:n].copy()
    d["health"] = np.select([d["hlthp"] == 1, d["hlthf"] == 1, d["hlthg"] == 1], ["poor", "fair", "good"],
                            "excellent")
    return d.drop(columns=["hlthg", "hlthf", "hlthp"])


def _poisson(d: pd.DataFrame):
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    return smf.glm("mdvis ~ lncoins + lpi + physlm + disea + C(idp) + C(health)", data=d,
                   family=sm.families.Poisson()).fit()


def _config(tmp_path: Path, model, data: pd.DataFrame, body: str, target: str = "mdvis") -> dict:
    import joblib

    joblib.dump(model, tmp_path / "model.joblib")
    data.drop(columns=[target]).to_csv(tmp_path / "data.csv", index=False)
    head = (f"title: T\nowner: O\nintended_use: U\nmodel: {{joblib: model.joblib}}\ndata: {{path: data.csv}}\n"
            f"target: {target}\n")
    (tmp_path / "c.yaml").write_text(head + textwrap.dedent(body), encoding="utf-8")
    return load_config(tmp_path / "c.yaml")


# ------------------------------------------------------------------ item 1: the interval a file carries
def test_sidecars_and_changelog_carry_the_primary_interval_labelled(tmp_path):
    from fme.report.analysis import run_effects
    from fme.report.changelog import changelog, compact

    d = _randhie()
    model = _poisson(d)
    cfg = _config(tmp_path, model, d, """\
        inference: delta
        effects:
          - id: lpi
            steps: {lpi: 1}
            partition: false
            stability: false
        """)
    data = d.drop(columns=["mdvis"])
    (g,) = run_effects(model, data, data, cfg, tmp_path / "out")
    v = g["variants"][0]
    mc = v["model_ci"]
    assert v["inference"] == "delta" and v["ci_inference"] == "sample"
    primary, fixed = v["intervals"]
    assert primary["inference"] == "delta" and primary["primary"] is True
    assert (primary["conf_low"], primary["conf_high"], primary["std_error"]) == (
        mc["conf_low"], mc["conf_high"], mc["std_error"])
    assert fixed["inference"] == "sample" and fixed["primary"] is False
    assert (fixed["conf_low"], fixed["conf_high"], fixed["std_error"]) == (v["ci_low"], v["ci_high"], v["se"])
    assert "model uncertainty" in primary["covers"] and "not included" in fixed["covers"]
    table = pd.read_csv(tmp_path / "out" / "tables" / "lpi-ame.csv")
    assert table["inference"].tolist() == ["delta", "sample"] and table["primary"].tolist() == [True, False]
    assert {"estimate", "std_error", "conf_low", "conf_high", "conf_level", "covers"} <= set(table.columns)
    assert "std.error" not in table.columns and "ci_low" not in table.columns
    assert table.loc[0, "conf_low"] == pytest.approx(mc["conf_low"], rel=1e-12)
    assert table.loc[1, "conf_high"] == pytest.approx(v["ci_high"], rel=1e-12)
    # the change log compares the primary (delta) intervals: shift the AME so that the narrow fixed-model
    # intervals no longer overlap while the wide delta intervals still do
    results = {"config_name": "c", "config_sha256": "0" * 64, "effects": [g]}
    shift = (fixed["conf_high"] - fixed["conf_low"]) * 1.5
    assert shift < primary["conf_high"] - primary["conf_low"]
    moved = {**v, "ame": v["ame"] + shift, "ci_low": v["ci_low"] + shift, "ci_high": v["ci_high"] + shift,
             "model_ci": {**mc, "conf_low": mc["conf_low"] + shift, "conf_high": mc["conf_high"] + shift}}
    new = {**results, "effects": [{**g, "variants": [moved]}]}
    (row,) = changelog(new, {"path": "p", "sha256": "0", **compact(results)})["rows"]
    assert row["interval"] == "model (delta method)" and row["overlap"] == "yes"
    # a previous build with only the fixed-model interval: compared on the fixed-model intervals, said so
    old = {**results, "effects": [{**g, "variants": [{**v, "model_ci": None, "inference": "sample"}]}]}
    (row,) = changelog(new, {"path": "p", "sha256": "0", **compact(old)})["rows"]
    assert row["interval"] == "fixed model (rows) to model (delta method)"
    assert row["overlap"] == "no (fixed-model intervals; the primary ones differ in kind)"
