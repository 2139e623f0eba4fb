"""Effect contracts (issue 27 item 1): expect: keys tested, Holm-adjusted, and a release gate (--check exits 3)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

pytest.importorskip("jsonschema")


def _ols_case(tmp_path: Path, expect: str) -> tuple:
    import joblib
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(5)
    n = 400
    d = pd.DataFrame({"x": rng.normal(size=n), "w": rng.normal(size=n)})
    d["y"] = 1 + 0.8 * d["x"] + 0.1 * d["w"] + rng.normal(size=n)
    m = smf.ols("y ~ x + w", data=d).fit()
    joblib.dump(m, tmp_path / "model.joblib")
    d[["x", "w"]].to_csv(tmp_path / "data.csv", index=False)
    body = f"""\
        title: T
        owner: O
        intended_use: U
        model: {{joblib: model.joblib}}
        data: {{path: data.csv}}
        target: y
        inference: delta
        effects:
          - id: x
            steps: {{x: 1}}
            extrapolation: none
            partition: false
            stability: false
            expect: {expect}
        """
    (tmp_path / "c.yaml").write_text(textwrap.dedent(body), encoding="utf-8")
    return m, d


def test_contract_tests_equal_hand_computations(tmp_path):
    from fme.report.analysis import run_effects
    from fme.report.config import load_config

    m, d = _ols_case(tmp_path, "{sign: '+', within: [0.5, 1.5], at_least: 0.6, at_most: 0.7}")
    cfg = load_config(tmp_path / "c.yaml")
    (g,) = run_effects(m, d[["x", "w"]], d[["x", "w"]], cfg, tmp_path / "out")
    rows = {r["contract"]: r for r in g["variants"][0]["contracts"]}
    b, se = m.params["x"], m.bse["x"]                       # the AME of a unit step of x is its coefficient
    assert rows["sign"]["estimate"] == pytest.approx(b, rel=1e-10) and rows["sign"]["std_error"] == pytest.approx(se, rel=1e-8)
    assert rows["sign"]["p_value"] == pytest.approx(stats.norm.sf(b / se), rel=1e-6)
    tost = max(stats.norm.sf((b - 0.5) / se), stats.norm.cdf((b - 1.5) / se))
    assert rows["within"]["p_value"] == pytest.approx(tost, rel=1e-6)
    assert rows["at_least"]["p_value"] == pytest.approx(stats.norm.sf((b - 0.6) / se), rel=1e-6)
    assert rows["at_most"]["p_value"] == pytest.approx(stats.norm.cdf((b - 0.7) / se), rel=1e-6)
    from statsmodels.stats.multitest import multipletests

    order = ["sign", "within", "at_least", "at_most"]
    adj = multipletests([rows[k]["p_value"] for k in order], method="holm")[1]
    assert [rows[k]["p_value_adj"] for k in order] == pytest.approx(adj.tolist(), rel=1e-12)
    assert rows["sign"]["verdict"] == "met" and rows["within"]["verdict"] == "met"
    # b is about 0.8 with SE about 0.05: 'at most 0.7' has its whole interval above 0.7
    assert rows["at_most"]["conf_low"] > 0.7 and rows["at_most"]["verdict"] == "not met"


def test_check_exits_3_on_a_contract_not_met_and_still_writes_the_report(tmp_path):
    from fme.__main__ import main

    _ols_case(tmp_path, "{sign: '-'}")
    status = main(["report", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "r"), "--no-pdf", "--check",
                   "--no-progress"])
    assert status == 3
    html = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "Effect contracts" in html and "NOT MET" in html
    _ols_case(tmp_path, "{sign: '+'}")
    assert main(["report", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "r2"), "--no-pdf", "--check",
                 "--no-progress"]) == 0


def test_bad_contracts_are_config_errors(tmp_path):
    from fme.report.config import ConfigError, load_config

    _ols_case(tmp_path, "{within: [1]}")
    with pytest.raises(ConfigError, match="expect"):
        load_config(tmp_path / "c.yaml")
    _ols_case(tmp_path, "{sign: up}")
    with pytest.raises(ConfigError, match="expect"):
        load_config(tmp_path / "c.yaml")
