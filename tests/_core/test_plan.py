"""Validate once: a front door checks the data, resolves the plan and makes the predictor once per call, and every
step specification (each row of an ``fme.ame`` table) is derived from that plan
(:meth:`fme._core.plan.Plan.with_steps`).
"""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import fme
from fme._adapters.predictor import make_predictor
from fme._core.plan import FMEOptions, resolve_plan
from fme._utils.validation import check_data

COUNTED = {"check_data": check_data, "resolve_plan": resolve_plan, "make_predictor": make_predictor}


@pytest.fixture(scope="module")
def ols_data():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(7)
    X = pd.DataFrame({"x": rng.normal(size=150), "z": rng.uniform(-1, 1, 150)})
    X["y"] = 1.0 + 2.0 * X["x"] - 0.5 * X["z"] + rng.normal(0, 0.3, 150)
    return smf.ols("y ~ x + z", data=X).fit(), X


@pytest.fixture
def counts(monkeypatch):
    """Counting wrappers at every name the code calls: each fme module that bound one of the functions."""
    seen: Counter = Counter()

    def counting(name, func):
        def wrapper(*args, **kwargs):
            seen[name] += 1
            return func(*args, **kwargs)

        return wrapper

    bound = 0
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("fme"):
            continue
        for name, func in COUNTED.items():
            if getattr(module, name, None) is func:
                monkeypatch.setattr(module, name, counting(name, func))
                bound += 1
    assert bound >= 3
    return seen


def test_one_ame_call_checks_plans_and_predicts_once(ols_data, counts):
    ols, X = ols_data
    table = fme.ame(ols, X, {"x": 1, "z": 1})
    assert dict(counts) == {"check_data": 1, "resolve_plan": 1, "make_predictor": 1}
    # a linear model's AME of a unit step is its coefficient, with the delta method's standard error
    np.testing.assert_allclose(table["ame"], ols.params[["x", "z"]], rtol=1e-12)
    np.testing.assert_allclose(table["std_error"], ols.bse[["x", "z"]], rtol=1e-8)
    assert table["inference"].tolist() == ["delta", "delta"]


def test_one_fme_call_checks_plans_and_predicts_once(ols_data, counts):
    ols, X = ols_data
    res = fme.fme(ols, X, {"x": 1})
    assert dict(counts) == {"check_data": 1, "resolve_plan": 1, "make_predictor": 1}
    np.testing.assert_allclose(res.results["fme"], ols.params["x"], rtol=1e-12)


def test_the_table_fits_its_detector_once(ols_data):
    """Every row of the table shares the plan's detector, fitted once on the reference rows."""
    ols, X = ols_data
    fits = []

    class Below:
        name = "below"

        def fit(self, reference):
            fits.append(len(reference))
            self.top = float(reference["x"].max())
            return self

        def flag(self, points):
            return (points["x"] > self.top).to_numpy()

    table = fme.ame(ols, X, {"x": 1, "z": 1}, extrapolation=Below())
    assert fits == [len(X)]
    assert table["n"].tolist() == [int((X["x"] + 1 <= X["x"].max()).sum()), len(X)]
    np.testing.assert_allclose(table["ame"], ols.params[["x", "z"]], rtol=1e-12)


def test_step_plans_derive_from_one_plan(ols_data):
    ols, X = ols_data
    base = resolve_plan(ols, X, X, FMEOptions(extrapolation="envelope"))
    assert base.steps == () and base.complete_cols == ("x", "z") and base.conf_level == 0.95
    px, pz = base.with_steps(X, {"x": "sd"}, X), base.with_steps(X, {"z": 1}, X)
    assert px.predictor is base.predictor and px.detector is base.detector is pz.detector
    assert px.steps[0].value == pytest.approx(float(X["x"].std())) and pz.steps[0].value == 1.0
    # the stepped feature is not required complete: its missing values are the step's own exclusion
    assert px.complete_cols == ("z",) and pz.complete_cols == ("x",)


def test_one_dask_ame_call_plans_and_predicts_once(ols_data, counts):
    """The Dask engine derives every row's plan from the front door's, resolved on the frame's _meta."""
    dd = pytest.importorskip("dask.dataframe")
    ols, X = ols_data
    table = fme.ame(ols, dd.from_pandas(X, npartitions=3), {"x": 1, "z": 1})
    assert counts["resolve_plan"] == 1 and counts["make_predictor"] == 1
    np.testing.assert_allclose(table["ame"], ols.params[["x", "z"]], rtol=1e-12)
    np.testing.assert_allclose(table["std_error"], ols.bse[["x", "z"]], rtol=1e-8)


def test_a_plan_carries_no_data(ols_data):
    """Dask ships plans to its workers: the reference rows travel beside the plan, the bootstrap's training data
    only in ``plan.bootstrap`` (which the Dask pass drops), never inside the recorded options."""
    ols, X = ols_data
    spec = {"data": X, "n_resamples": 10}
    plan = resolve_plan(ols, X, X, FMEOptions(reference_data=X, bootstrap=spec, inference="bootstrap"))
    assert plan.method == "bootstrap" and plan.bootstrap is spec
    assert plan.options.reference_data is None and plan.options.bootstrap is None
