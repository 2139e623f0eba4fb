"""fme.plotting.came.CAMEDisplay: one point and CI per leaf under the AME they partition."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex

import fme
from fme.exceptions import ParameterError
from fme.plotting import CAMEDisplay, PlotStyle
from fme.plotting.came import largest_leaves


@pytest.fixture(scope="module")
def effects():
    rng = np.random.default_rng(5)
    X = pd.DataFrame({"x": rng.uniform(0, 8, 800), "z": rng.normal(size=800)})
    return fme.fme(lambda d: np.floor(d["x"].to_numpy()) ** 2 + d["z"].to_numpy(), X, {"x": 1.0}, inference="sample")


def _points(container) -> np.ndarray:
    return np.asarray(container.lines[0].get_xydata(), dtype=float)


def test_one_point_and_ci_per_leaf_with_units(pyplot, effects):
    part = fme.came(effects, method="cart", max_depth=2, honest=False)
    style = PlotStyle(colors={"came": "#0072B2", "reference": "#000000"})
    disp = CAMEDisplay.from_partition(part, units={"x": "years"}, prediction_unit="USD", style=style)
    leaves = part.leaves
    assert disp.n_rows_ == len(leaves) + 1 and len(disp.ax_.get_yticklabels()) == len(leaves) + 1
    pts = _points(disp.leaves_)
    np.testing.assert_allclose(pts[:, 0], leaves["came"].to_numpy())
    segs = disp.leaves_.lines[2][0].get_segments()  # the horizontal CI bars, leaf by leaf
    np.testing.assert_allclose([s[0][0] for s in segs], leaves["came_ci_low"].to_numpy())
    np.testing.assert_allclose([s[1][0] for s in segs], leaves["came_ci_high"].to_numpy())
    np.testing.assert_allclose(_points(disp.root_)[0, 0], part.root["came"])
    assert to_hex(disp.leaves_.lines[0].get_color()).upper() == "#0072B2"
    assert to_hex(disp.root_.lines[0].get_color()) == "#000000"
    assert disp.ax_.get_xlabel() == "cAME of x + 1 years (USD)"
    labels = [t.get_text() for t in disp.ax_.get_yticklabels()]
    assert labels[0] == f"all rows (n = {int(part.root['n'])})"
    assert labels[1:] == [f"leaf {int(r.node)}: {r.rule} (n = {int(r.n)})" for r in leaves.itertuples()]
    assert disp.ame_line_.get_xdata()[0] == pytest.approx(part.root["came"])


def test_honest_first_row_and_largest_leaves(pyplot, effects):
    part = fme.came(effects, method="cart", max_depth=3)  # honest by default
    assert part.honest and len(part.leaves) > 3
    disp = CAMEDisplay.from_partition(part, max_leaves=3)
    n_est = int(part.estimation_root["n"])
    assert disp.ax_.get_yticklabels()[0].get_text() == f"estimation rows (n = {n_est})"
    texts = [t.get_text() for t in disp.legend_.get_texts()]
    assert f"Every row: the {n_est:,} rows that estimate the leaves (honest)" in texts
    assert f"the 3 largest of {len(part.leaves)} leaves" in texts
    kept = largest_leaves(part.leaves, 3)
    assert len(kept) == 3 and kept["n"].min() >= part.leaves["n"].nlargest(3).min()
    assert list(kept["node"]) == sorted(kept["node"])  # drawn in node order
    np.testing.assert_allclose(_points(disp.leaves_)[:, 0], kept["came"].to_numpy())


def test_bad_input_names_the_fix():
    with pytest.raises(ParameterError, match="pass fme.came"):
        CAMEDisplay.from_partition(pd.DataFrame())
    with pytest.raises(ParameterError, match="one estimate and CI per label"):
        CAMEDisplay(labels=["a", "b"], estimates=[1.0], lows=[0.0], highs=[2.0], step_text="x + 1")
