"""Effect contracts: expect: keys tested, Holm-adjusted, and a release gate (--check exits 3)."""

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
    from fme.report.inputs.config import load_config

    m, d = _ols_case(tmp_path, "{sign: '+', within: [0.5, 1.5], at_least: 0.6, at_most: 0.7}")
    cfg = load_config(tmp_path / "c.yaml")
    (g,) = run_effects(m, d[["x", "w"]], d[["x", "w"]], cfg, tmp_path / "out")
    rows = {r["contract"]: r for r in g["variants"][0]["contracts"]}
    b, se = m.params["x"], m.bse["x"]  # the AME of a unit step of x is its coefficient
    assert rows["sign"]["estimate"] == pytest.approx(b, rel=1e-10) and rows["sign"]["std_error"] == pytest.approx(
        se, rel=1e-8
    )
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
    status = main(
        ["report", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "r"), "--no-pdf", "--check", "--no-progress"]
    )
    assert status == 3
    html = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "Effect contracts" in html and "NOT MET" in html
    _ols_case(tmp_path, "{sign: '+'}")
    assert (
        main(
            ["report", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "r2"), "--no-pdf", "--check", "--no-progress"]
        )
        == 0
    )


def test_bad_contracts_are_config_errors(tmp_path):
    from fme.report.inputs.config import ConfigError, load_config

    _ols_case(tmp_path, "{within: [1]}")
    with pytest.raises(ConfigError, match="expect"):
        load_config(tmp_path / "c.yaml")
    _ols_case(tmp_path, "{sign: up}")
    with pytest.raises(ConfigError, match="expect"):
        load_config(tmp_path / "c.yaml")


def test_bootstrap_contracts_on_a_sklearn_model_match_a_hand_tost_and_gate_the_release(tmp_path):
    """A Ridge model with bootstrap inference: every contract row uses the bootstrap interval (SE of the refits'
    AMEs, percentile bounds), its p-values are a hand TOST / one-sided z-test from the same seeded refits, the
    verdicts follow from them, and the failing contract makes `fme report --check` exit 3 with the report
    written."""
    import json

    import joblib
    from sklearn.base import clone
    from sklearn.linear_model import Ridge
    from statsmodels.stats.multitest import multipletests

    from fme.__main__ import main

    rng = np.random.default_rng(8)
    n, B, seed = 150, 200, 3
    d = pd.DataFrame({"x": rng.normal(size=n), "w": rng.normal(size=n)})
    d["y"] = 1 + 0.8 * d["x"] + 0.1 * d["w"] + rng.normal(size=n)
    X, y = d[["x", "w"]], d["y"]
    model = Ridge(alpha=1.0).fit(X, y)
    joblib.dump(model, tmp_path / "model.joblib")
    X.to_csv(tmp_path / "data.csv", index=False)
    d.to_csv(tmp_path / "train.csv", index=False)
    (tmp_path / "c.yaml").write_text(
        textwrap.dedent(f"""\
        title: T
        owner: O
        intended_use: U
        model: {{joblib: model.joblib}}
        data: {{path: data.csv}}
        target: y
        seed: {seed}
        inference: {{method: bootstrap, train_data: {{path: train.csv}}, n_resamples: {B}}}
        effects:
          - id: x
            steps: {{x: 1}}
            extrapolation: none
            partition: false
            stability: false
            expect: {{sign: '+', within: [0.5, 1.2], at_least: 0.75, at_most: 0.5}}
        """),
        encoding="utf-8",
    )
    status = main(
        ["report", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "r"), "--no-pdf", "--check", "--no-progress"]
    )
    assert status == 3  # 'at most 0.5' is not met
    html = (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
    assert "Effect contracts" in html and "NOT MET" in html
    results = json.loads((tmp_path / "r" / "results.json").read_text(encoding="utf-8"))
    rows = {r["contract"]: r for r in results["effects"][0]["variants"][0]["contracts"]}
    # by hand: the same seeded resamples (one seed per refit, spawned from the report's seed); a Ridge model's
    # AME of a unit step of x is its x coefficient, on the fitted model and on every refit
    train = pd.read_csv(tmp_path / "train.csv")
    Xt, yt = train[["x", "w"]], train["y"]
    draws = np.array(
        [
            clone(model).fit(Xt.iloc[idx], yt.iloc[idx]).coef_[0]
            for idx in (np.random.default_rng(s).integers(0, n, n) for s in np.random.SeedSequence(seed).spawn(B))
        ]
    )
    est, se = model.coef_[0], draws.std(ddof=1)
    lo, hi = np.quantile(draws, [0.025, 0.975])
    for r in rows.values():
        assert r["inference"] == "bootstrap"
        assert r["estimate"] == pytest.approx(est, rel=1e-10) and r["std_error"] == pytest.approx(se, rel=1e-10)
        assert [r["conf_low"], r["conf_high"]] == pytest.approx([lo, hi], rel=1e-10)
    z = stats.norm  # bootstrap statistics are z statistics
    hand = {
        "sign": z.sf(est / se),
        "within": max(z.sf((est - 0.5) / se), z.cdf((est - 1.2) / se)),  # TOST: the larger one-sided p
        "at_least": z.sf((est - 0.75) / se),
        "at_most": z.cdf((est - 0.5) / se),
    }
    order = list(hand)
    assert [rows[k]["p_value"] for k in order] == pytest.approx([hand[k] for k in order], rel=1e-8)
    adj = multipletests([hand[k] for k in order], method="holm")[1]
    assert [rows[k]["p_value_adj"] for k in order] == pytest.approx(adj.tolist(), rel=1e-8)
    wrong = {"sign": hi < 0, "within": hi < 0.5 or lo > 1.2, "at_least": hi < 0.75, "at_most": lo > 0.5}
    for k, a in zip(order, adj):
        assert rows[k]["verdict"] == ("met" if a < 0.05 else "not met" if wrong[k] else "inconclusive")
    assert rows["at_most"]["verdict"] == "not met" and rows["sign"]["verdict"] == "met"


def test_bounds_are_read_on_the_scale_the_report_shows():
    """A classifier's AMEs are shown in percentage points: an AME of 0.0139 (1.39 pp, CI 0.88 to 1.91 pp) against
    ``at_most: 0.5`` is not met (it was 'met' when the bound was read as a probability); the row carries the
    estimate and interval in percentage points with the unit, and the statistic does not depend on the scale."""
    from fme.report.analysis.contracts import adjust_contracts, contract_rows

    v = {
        "id": "x",
        "n": 500,
        "conf_level": 0.95,
        "intervals": [
            {"estimate": 0.0139, "std_error": 0.0026, "conf_low": 0.0088, "conf_high": 0.0191, "inference": "delta"}
        ],
    }
    unit = "percentage points of P(1)"
    shown = adjust_contracts(contract_rows(v, {"at_most": 0.5, "sign": "+"}, scale=100.0, unit=unit))
    at_most = next(r for r in shown if r["contract"] == "at_most")
    assert at_most["verdict"] == "not met" and at_most["expected"] == f"AME <= 0.5 {unit}"
    assert at_most["estimate"] == pytest.approx(1.39) and at_most["conf_low"] == pytest.approx(0.88)
    assert at_most["unit"] == unit
    assert at_most["statistic"] == pytest.approx((1.39 - 0.5) / 0.26)
    raw = adjust_contracts(contract_rows(v, {"at_most": 0.5}))  # the model's own scale: another question
    assert raw[0]["verdict"] == "met"
    sign = next(r for r in shown if r["contract"] == "sign")
    assert sign["statistic"] == pytest.approx(0.0139 / 0.0026)


def test_contracts_that_can_never_fail_or_hold_are_config_errors(tmp_path):
    """A contract on the ANLM of an effect without NLMs, and an empty band: one line naming the key and its line,
    before any computation."""
    from fme.report.inputs.config import ConfigError, load_config

    _ols_case(tmp_path, "{within: [5, 0]}")
    with pytest.raises(ConfigError, match=r"c\.yaml:\d+: effects\[0\]\.expect\.within: an empty band \[5, 0\]"):
        load_config(tmp_path / "c.yaml")
    _ols_case(tmp_path, "{nlm_at_least: 0.9}")
    text = (tmp_path / "c.yaml").read_text().replace("stability: false", "stability: false\n    nlm: false")
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ConfigError, match=r"expect\.nlm_at_least: .*nlm: false"):
        load_config(tmp_path / "c.yaml")


def test_a_model_file_that_is_not_a_pickle_says_so(tmp_path):
    from fme.report.analysis.run import load_model
    from fme.report.inputs.config import ConfigError, load_config

    _ols_case(tmp_path, "{sign: '+'}")
    cfg = load_config(tmp_path / "c.yaml")
    assert load_model(cfg)[0].params.shape == (3,)  # the real pickle loads
    (tmp_path / "model.joblib").write_text("this is a CSV file, not a model\n1,2,3\n")
    with pytest.raises(ConfigError, match=r"model\.joblib: .*is not a joblib or pickle file.*joblib\.dump"):
        load_model(cfg)
