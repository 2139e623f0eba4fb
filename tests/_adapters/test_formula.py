"""Formula information of statsmodels results: the boundary knots of B-spline columns, and the error that names
them when a step or the data leaves them (patsy and formulaic refuse to evaluate a B-spline there)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme._adapters import adapt
from fme._adapters.formula import spline_bounds
from fme.exceptions import DataError


@pytest.fixture(params=["patsy", "formulaic"])
def formula_engine(request):
    """statsmodels >= 0.15 fits formulas with patsy or formulaic (a global option): run under each."""
    pytest.importorskip(request.param)
    sm_formula = pytest.importorskip("statsmodels.formula")
    before = sm_formula.options.formula_engine
    sm_formula.options.formula_engine = request.param
    yield request.param
    sm_formula.options.formula_engine = before


def _spline_frame(n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    d = pd.DataFrame({"x": rng.uniform(0, 10, n), "z": rng.normal(size=n), "w": rng.uniform(1, 5, n)})
    d["y"] = np.sin(d["x"]) + d["z"] + rng.normal(0, 0.3, n)
    return d


def test_spline_bounds_are_the_boundary_knots(formula_engine):
    smf = pytest.importorskip("statsmodels.formula.api")
    d = _spline_frame()
    res = smf.ols("y ~ bs(x, df=5) + np.log(w) + z", d).fit()
    bounds = spline_bounds(res)
    assert list(bounds) == ["x"]
    lo, hi, term = bounds["x"]
    assert (lo, hi) == (d["x"].min(), d["x"].max())
    assert term == "bs(x, df=5)"
    assert adapt(res).input_bounds() == {"x": (lo, hi)}
    # a spline of a transformed column bounds the transform, not the column: no bound is claimed
    assert spline_bounds(smf.ols("y ~ bs(np.log(w), df=4)", d).fit()) == {}


def test_formulaic_spline_that_extrapolates_has_no_bound():
    pytest.importorskip("formulaic")
    sm_formula = pytest.importorskip("statsmodels.formula")
    smf = pytest.importorskip("statsmodels.formula.api")
    before = sm_formula.options.formula_engine
    sm_formula.options.formula_engine = "formulaic"
    try:
        res = smf.ols("y ~ bs(x, df=5, extrapolation='clip') + z", _spline_frame()).fit()
    finally:
        sm_formula.options.formula_engine = before
    assert spline_bounds(res) == {}


@pytest.mark.parametrize("inference", ["delta", "sample"])
def test_step_past_the_knots_names_feature_step_and_range(formula_engine, inference):
    smf = pytest.importorskip("statsmodels.formula.api")
    d = _spline_frame()
    res = smf.ols("y ~ bs(x, df=5) + z", d).fit()
    lo, hi = d["x"].min(), d["x"].max()
    with pytest.raises(DataError) as info:
        fme.ame(res, d, {"x": 1.0}, inference=inference)
    msg = str(info.value)
    # the step: read off the moved points (delta: one design matrix per point set) or from the stage predicted
    step = "the step of 'x' by +1" if inference == "delta" else "for the step x + 1"
    assert step in msg and "'x'" in msg and "bs(x, df=5)" in msg
    assert f"[{lo:.6g}, {hi:.6g}]" in msg
    moved = int((d["x"] + 1.0 > hi).sum())
    assert f"{moved} of {len(d)}" in msg
    # on the rows whose step stays within the knots the AME is defined
    kept = d[d["x"] <= hi - 1.0]
    assert np.isfinite(fme.ame(res, kept, {"x": 1.0}, inference=inference)["ame"].iloc[0])


def test_data_outside_the_knots_is_a_data_error(formula_engine):
    smf = pytest.importorskip("statsmodels.formula.api")
    d = _spline_frame()
    res = smf.ols("y ~ bs(x, df=5) + z", d).fit()
    far = d.assign(x=d["x"] + 20.0).head(3)
    with pytest.raises(DataError, match=r"column 'x' has 3 of 3 value\(s\).*boundary knots"):
        fme.avg_predictions(res, far)


def test_the_step_error_names_the_rows_it_stays_defined_on():
    smf = pytest.importorskip("statsmodels.formula.api")
    d = _spline_frame()
    res = smf.ols("y ~ bs(x, df=5) + z", d).fit()
    hi = d["x"].max()
    with pytest.raises(DataError, match=rf"only the rows with x <= {hi - 2.5:.10g}"):
        fme.ame(res, d, {"x": 2.5}, inference="delta")
    with pytest.raises(
        DataError, match=rf"the step of 'x' by -2.5 .*only the rows with x >= {d['x'].min() + 2.5:.10g}"
    ):
        fme.ame(res, d, {"x": -2.5}, inference="delta")


def test_a_categorical_factor_of_a_transformed_column_leaves_the_column_numeric(formula_engine):
    # I(x3 > 0) is categorical in patsy's design, but x3 itself is numeric: stepping it moves the indicator
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(3)
    d = pd.DataFrame({"x1": rng.normal(size=200), "x3": rng.normal(size=200)})
    d["y"] = d.x1 * (1 + (d.x3 > 0)) + rng.normal(size=200)
    m = smf.ols("y ~ x1*I(x3 > 0)", data=d).fit()
    got = fme.ame(m, d, {"x3": 0.5})["ame"].iloc[0]
    direct = float((m.predict(d.assign(x3=d.x3 + 0.5)) - m.predict(d)).mean())
    assert got == pytest.approx(direct, rel=1e-12, abs=1e-14)
    assert direct != 0.0
    # a plain C(x) of a numeric column still takes the formula's levels
    d["g"] = rng.integers(0, 3, size=200)
    m2 = smf.ols("y ~ x1 + C(g)", data=d).fit()
    with pytest.raises(fme.DataError, match="C\\(g\\)"):
        fme.ame(m2, d.assign(g=d.g + 0.5), {"x1": 1})


@pytest.mark.parametrize("inference", ["delta", "sample"])
def test_a_spline_of_a_transformed_column_past_its_knots_is_a_data_error_naming_the_term(formula_engine, inference):
    """bs(np.log(w)) bounds log(w), which fme does not evaluate: the engine finds the point outside the knots and
    fme's error names the term, its knots and the fix (not the engine's raw error)."""
    smf = pytest.importorskip("statsmodels.formula.api")
    d = _spline_frame()
    res = smf.ols("y ~ bs(np.log(w), df=4) + z", d).fit()
    lo, hi = np.log(d["w"]).min(), np.log(d["w"]).max()
    for call in (
        lambda: fme.ame(res, d, {"w": 1.0}, inference=inference),
        lambda: fme.fme(res, d, {"w": 1.0}, inference=inference),
        lambda: fme.avg_predictions(res, d.assign(w=d["w"] + 1.0), inference=inference),
    ):
        with pytest.raises(DataError) as info:
            call()
        msg = str(info.value)
        assert "bs(np.log(w), df=4)" in msg and f"boundary knots [{lo:.6g}, {hi:.6g}]" in msg, msg
        assert "lower_bound=..., upper_bound=..." in msg
    # rows whose step keeps log(w) within the knots: defined
    kept = d[np.log(d["w"] + 1.0) <= hi]
    assert np.isfinite(fme.ame(res, kept, {"w": 1.0}, inference=inference)["ame"].iloc[0])


def test_other_engine_errors_are_not_read_as_a_spline_error():
    from fme._adapters.formula import spline_error

    smf = pytest.importorskip("statsmodels.formula.api")
    res = smf.ols("y ~ bs(np.log(w), df=4) + z", _spline_frame()).fit()
    assert spline_error(KeyError("z"), res) is None
    assert spline_error(ValueError("could not convert string to float"), res) is None
