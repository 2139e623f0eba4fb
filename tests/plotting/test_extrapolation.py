"""fme.plotting.extrapolation.ExtrapolationDisplay: the evaluated rows and the extrapolation points, stacked."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex

import fme
from fme.exceptions import ParameterError
from fme.plotting import ExtrapolationDisplay, PlotStyle


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    return pd.DataFrame({"x": rng.uniform(0, 10, 300), "g": pd.Categorical(rng.choice(["a", "b", "c"], 300))})


def _model(d):
    return d["x"].to_numpy() * 2.0


STYLE = PlotStyle(colors={"bars": "#0072B2", "extrapolation": "#6E6E6E"}, hatch="xx", fontsize={"legend": 7})


def test_numeric_feature_counts_colours_and_legend_outside(pyplot, data):
    res = fme.fme(_model, data, {"x": 1.0}, extrapolation="envelope", inference="sample")
    disp = ExtrapolationDisplay.from_effects(res, units={"x": "m"}, style=STYLE)
    n_ep = res.n_extrapolation
    assert 0 < n_ep and disp.n_evaluated_ == res.n and disp.n_extrapolation_ == n_ep
    evaluated, points = disp.bars_
    assert sum(p.get_height() for p in evaluated) == res.n
    assert sum(p.get_height() for p in points) == n_ep
    assert {to_hex(p.get_facecolor()).upper() for p in evaluated} == {"#0072B2"}
    assert {to_hex(p.get_edgecolor()).upper() for p in points} == {"#6E6E6E"} and points[0].get_hatch() == "xx"
    texts = [t.get_text() for t in disp.legend_.get_texts()]
    assert texts == [f"evaluated rows: {res.n}", f"extrapolation points: {n_ep}"]
    assert disp.ax_.get_xlabel() == "x (m), observed value"
    renderer = disp.figure_.canvas.get_renderer()
    legend, axes = disp.legend_.get_window_extent(renderer), disp.ax_.get_window_extent(renderer)
    assert legend.y0 >= axes.y1  # above the bars, never on them


def test_categorical_feature_and_one_point(pyplot, data):
    d = data.copy()
    d.loc[0, "x"] = 9.9999  # the one row whose step leaves the data
    d.loc[1:, "x"] = d.loc[1:, "x"].clip(upper=8.0)
    res = fme.fme(_model, d, {"x": 1.0}, extrapolation="envelope", inference="sample")
    disp = ExtrapolationDisplay.from_effects(res, feature="g", style=STYLE)
    ep = d.index.isin(res.extrapolated.index)
    assert ep.sum() == 1  # one point: the legend says "point", not "points"
    assert [t.get_text() for t in disp.ax_.get_xticklabels()] == ["a", "b", "c"]
    evaluated, points = disp.bars_
    for level, bar_a, bar_b in zip("abc", evaluated, points):
        assert bar_a.get_height() == ((d["g"] == level) & ~ep).sum()
        assert bar_b.get_height() == ((d["g"] == level) & ep).sum() and bar_b.get_y() == bar_a.get_height()
    assert disp.legend_.get_texts()[1].get_text() == "extrapolation point: 1"


def test_non_finite_values_are_counted_and_unchecked_effects_refused(pyplot, data):
    d = data.copy()
    d.loc[[3, 4], "x"] = np.nan
    res = fme.fme(_model, d, {"x": 1.0}, extrapolation="envelope", inference="sample")
    disp = ExtrapolationDisplay.from_effects(res)
    assert disp.not_drawn_ == "not drawn: 2 non-finite values (2 NaN)"
    assert disp.not_drawn_ in [t.get_text() for t in disp.legend_.get_texts()]
    with pytest.raises(ParameterError, match="extrapolation='envelope'"):
        ExtrapolationDisplay.from_effects(fme.fme(_model, data, {"x": 1.0}, extrapolation=None, inference="sample"))
