"""fme.plotting._common.PlotStyle: the displays draw in the caller's style; the default is their own look."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex, to_rgba

import fme
from fme.exceptions import ParameterError
from fme.plotting import (
    COLORS,
    DEFAULT_STYLE,
    FMEDisplay,
    NLMDisplay,
    PartitionDisplay,
    PlotStyle,
    SecantTangentDisplay,
)

HOUSE = PlotStyle(
    colors={"points": "#112233", "average": "#445566", "reference": "#000000", "rug": "#778899", "fill": "#CFE3F2"},
    fontsize={"label": 7, "tick": 6, "legend": 5, "note": 5},
    hollow_points=True,
    zero_linestyle="-",
    fill_alpha=1.0,
    fill_edge="#112233",
    average_linewidth=1.1,
)


@pytest.fixture(scope="module")
def eff():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"x": rng.uniform(0, 4, 300), "z": rng.normal(size=300)})
    return fme.fme(
        lambda d: np.sin(d["x"].to_numpy()) + d["z"].to_numpy(),
        X,
        {"x": 0.5},
        nlm=True,
        extrapolation="envelope",
        inference="sample",
    )


def _hex(c) -> str:
    return to_hex(to_rgba(c), keep_alpha=False).upper()


def test_defaults_are_the_displays_colours_and_unknown_roles_are_refused():
    assert DEFAULT_STYLE == PlotStyle()
    assert {k: DEFAULT_STYLE.colors[k] for k in COLORS} == COLORS
    assert DEFAULT_STYLE.fill == COLORS["points"] and HOUSE.fill == "#CFE3F2"
    partial = PlotStyle(colors={"points": "#000000"})
    assert partial.color("points") == "#000000" and partial.color("average") == COLORS["average"]
    assert partial.replace(colors={"average": "#111111"}).colors == {**partial.colors, "average": "#111111"}
    with pytest.raises(ParameterError, match=r"unknown roles \['dots'\]"):
        PlotStyle(colors={"dots": "#000000"})
    with pytest.raises(ParameterError, match="max_points=0"):
        PlotStyle(max_points=0)
    with pytest.raises(ParameterError, match="style must be a fme.plotting.PlotStyle"):
        FMEDisplay.from_effects(
            fme.fme(lambda d: d["x"], pd.DataFrame({"x": [1.0, 2.0]}), {"x": 1.0}, inference="sample"),
            style={"points": "red"},
        )


def test_scatter_in_the_callers_style(pyplot, eff):
    disp = FMEDisplay.from_effects(eff, kind="scatter", rug=True, style=HOUSE, units={"x": "m"}, prediction_unit="kg")
    edges = {_hex(c) for c in disp.scatter_.get_edgecolors()}
    assert edges == {"#112233"} and len(disp.scatter_.get_facecolors()) == 0  # hollow: outline only
    assert disp.n_drawn_ == eff.n == len(disp.scatter_.get_offsets())
    assert _hex(disp.ame_line_.get_color()) == "#445566" and disp.ame_line_.get_linewidth() == 1.1
    assert disp.zero_line_.get_linestyle() == "-" and _hex(disp.zero_line_.get_color()) == "#000000"
    assert _hex(disp.rug_.get_color()) == "#778899"
    # the rug marks every distinct value of x over all rows, evaluated or left out
    np.testing.assert_array_equal(disp.rug_.get_xdata(), np.unique(eff.data["x"]))
    assert disp.ax_.get_xlabel() == "x (m)" and disp.ax_.get_ylabel() == "fME of x + 0.5 m (kg)"
    assert disp.ax_.xaxis.label.get_fontsize() == 7 and disp.legend_.get_texts()[0].get_fontsize() == 5
    assert disp.legend_.get_texts()[0].get_text() == f"fME of a row: {eff.n}"


def test_default_scatter_unchanged(pyplot, eff):
    disp = FMEDisplay.from_effects(eff, kind="scatter")
    assert {_hex(c) for c in disp.scatter_.get_facecolors()} == {COLORS["points"].upper()}
    assert disp.scatter_.get_alpha() == 0.7 and disp.rug_ is None and disp.zero_line_.get_linestyle() == ":"


def test_max_points_draws_a_seeded_sample_and_says_so(pyplot, eff):
    style = HOUSE.replace(max_points=50, rug_points=20, seed=4)
    a = FMEDisplay.from_effects(eff, kind="scatter", rug=True, style=style)
    b = FMEDisplay.from_effects(eff, kind="scatter", rug=True, style=style)
    assert a.n_drawn_ == 50 == len(a.scatter_.get_offsets())
    np.testing.assert_array_equal(a.scatter_.get_offsets(), b.scatter_.get_offsets())  # seeded
    assert a.legend_.get_texts()[0].get_text() == f"fME of a row: 50 of {eff.n} drawn"
    assert len(a.rug_.get_xdata()) == 20 and a.rug_quantiles_
    assert "observed values (20 quantiles of all rows)" in [t.get_text() for t in a.legend_.get_texts()]


def test_nlm_histogram_on_a_fixed_range(pyplot, eff):
    disp = NLMDisplay.from_effects(eff, kind="density", value_range=(-1.0, 1.0), kde=False, style=HOUSE)
    nlm = eff.results["nlm"].to_numpy()
    nlm = nlm[np.isfinite(nlm)]
    heights = np.array([p.get_height() for p in disp.hist_])
    widths = np.array([p.get_width() for p in disp.hist_])
    counts = heights * widths * nlm.size  # density=True: the bars' areas are the shares
    np.testing.assert_allclose(counts.sum(), nlm.size)
    assert len(disp.hist_) == 40 and disp.kde_line_ is None
    assert disp.hist_[0].get_x() == pytest.approx(-1.0)
    # values below -1 are drawn in the first bin, and the axis says so
    first = int(((nlm < -1) | ((nlm >= -1) & (nlm < -0.95))).sum())
    assert counts[0] == pytest.approx(first)
    below = "(values below -1 shown at -1)" if (nlm < -1).any() else ""
    assert disp.ax_.get_xlabel() == f"NLM of x + 0.5 {below}".strip()
    assert _hex(disp.hist_[0].get_facecolor()) == "#CFE3F2" and _hex(disp.hist_[0].get_edgecolor()) == "#112233"
    assert disp.linear_line_.get_linestyle() != disp.zero_line_.get_linestyle()  # told apart without colour


def test_tree_and_secant_take_the_style(pyplot, eff):
    part = fme.came(eff, method="cart", max_depth=1, honest=False)
    style = HOUSE.replace(colors={"bars": "#010203", "came": "#040506", "text": "#070809"})
    tree = PartitionDisplay.from_partition(part, style=style)
    for node, line in tree.leaf_came_lines_.items():
        assert _hex(line.get_color()) == "#040506"
    assert _hex(tree.note_.get_color()) == "#070809"
    square = lambda d: d["x"].to_numpy() ** 2  # noqa: E731
    sec = SecantTangentDisplay.from_effects(
        fme.fme(square, eff.data, {"x": 0.5}, inference="sample"), fme.dme(square, eff.data, "x"), style=style
    )
    assert {_hex(c) for c in sec.scatter_.get_facecolors()} == {"#112233"}
