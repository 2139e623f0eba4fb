"""The margins vocabulary against Python marginaleffects 0.6: slopes, comparison scales,
predictions and equivalence tests on the logit and Poisson models of tests/test_inference.py.

References: tests/fixtures/marginaleffects/vocab.csv, written by tests/make_marginaleffects_vocab_refs.py in a
throwaway venv (versions in vocab_versions.txt). marginaleffects' avg_comparisons applies the ratio-type
scales to the averages, i.e. fme's ``...avg`` forms.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf

import fme

REFS = Path(__file__).parent / "fixtures" / "marginaleffects"
FORMULAS = {"logit": "yb ~ age + I(age**2) + income + age:income + C(g)", "poisson": "count ~ age + income + C(g)"}


@pytest.fixture(scope="module")
def data():
    d = pd.read_csv(REFS / "data.csv")
    d["g"] = d["g"].astype("category")
    return d


@pytest.fixture(scope="module")
def refs():
    return pd.read_csv(REFS / "vocab.csv", keep_default_na=False, na_values=[""])


def _model(name, data):
    if name == "logit":
        return smf.logit(FORMULAS[name], data).fit(disp=0)
    return smf.glm(FORMULAS[name], data, family=sm.families.Poisson()).fit()


def _ref(refs, model, case, group=""):
    r = refs[(refs["model"] == model) & (refs["case"] == case) & (refs["group"].fillna("") == group)]
    assert len(r) == 1, (model, case, group)
    return r.iloc[0]


@pytest.mark.parametrize("name", ["logit", "poisson"])
@pytest.mark.parametrize("slope", ["dydx", "eyex", "eydx", "dyex"])
def test_avg_slopes_match_marginaleffects(name, slope, data, refs):
    out = fme.avg_slopes(_model(name, data), data, "income", slope=slope).iloc[0]
    r = _ref(refs, name, f"slope_{slope}")
    # both difference in x with a step of 1e-4 of the range (measured: estimates within 5e-9 relative, rounding of
    # the two differencing schemes); marginaleffects' SEs differentiate numerically in the parameters, fme's
    # analytically for these GLMs (measured: within 1.6e-3 relative, the elasticities the widest)
    assert out["estimate"] == pytest.approx(r["estimate"], rel=1e-8)
    assert out["std_error"] == pytest.approx(r["std_error"], rel=2e-3)


@pytest.mark.parametrize("name, comparison", [(n, c) for n in ("logit", "poisson")
                                              for c in ("ratioavg", "lnratioavg", "lnoravg", "liftavg")
                                              if not (n == "poisson" and c == "lnoravg")])
def test_comparison_scales_match_marginaleffects(name, comparison, data, refs):
    out = fme.avg_comparisons(_model(name, data), data, {"income": 0.5}, comparison=comparison).iloc[0]
    r = _ref(refs, name, f"cmp_{comparison}")
    assert out["estimate"] == pytest.approx(r["estimate"], rel=1e-10)
    assert out["std_error"] == pytest.approx(r["std_error"], rel=1e-4)


@pytest.mark.parametrize("name", ["logit", "poisson"])
def test_avg_predictions_match_marginaleffects(name, data, refs):
    m = _model(name, data)
    whole = fme.avg_predictions(m, data).iloc[0]
    r = _ref(refs, name, "pred")
    assert whole["estimate"] == pytest.approx(r["estimate"], rel=1e-10)
    assert whole["std_error"] == pytest.approx(r["std_error"], rel=1e-4)
    by = fme.avg_predictions(m, data, by="g")
    for _, row in by.iterrows():
        r = _ref(refs, name, "pred_by", str(row["g"]))
        assert row["estimate"] == pytest.approx(r["estimate"], rel=1e-10)
        assert row["std_error"] == pytest.approx(r["std_error"], rel=1e-4)


@pytest.mark.parametrize("name", ["logit", "poisson"])
def test_equivalence_matches_marginaleffects(name, data, refs):
    out = fme.ame(_model(name, data), data, {"income": 0.5}, equivalence=[0.0, 0.2]).iloc[0]
    r = _ref(refs, name, "equiv")
    assert out["estimate"] == pytest.approx(r["estimate"], rel=1e-10)
    assert out["std_error"] == pytest.approx(r["std_error"], rel=1e-4)
    for c in ("p_value_noninf", "p_value_nonsup", "p_value_equiv"):
        assert out[c] == pytest.approx(r[c], rel=1e-3, abs=1e-12), c
