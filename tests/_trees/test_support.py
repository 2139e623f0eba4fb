"""fme._trees.support.leaf_support: where each cAME holds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fme
from fme._trees.support import leaf_support


@pytest.fixture(scope="module")
def part():
    rng = np.random.default_rng(3)
    n = 600
    X = pd.DataFrame({"a": rng.uniform(0, 10, n), "b": rng.uniform(-1, 1, n), "c": rng.normal(0, 1, n)})

    def model(d):
        a, b = d["a"].to_numpy(), d["b"].to_numpy()
        return np.where(a > 5, 3.0, 1.0) * a + np.where(b > 0, 2.0, -2.0) * b ** 2

    eff = fme.fme(model, X, {"a": 2.5}, extrapolation="envelope")  # a > 7.5 leaves the data
    return fme.came(eff, minbucket=40, features=["a", "b"])


def _inside(X: pd.DataFrame, box: pd.DataFrame) -> np.ndarray:
    """Rows of X inside a hyperrectangle, from its printed bounds (independent of the tree)."""
    ok = np.ones(len(X), dtype=bool)
    for feat, b in box.iterrows():
        if b["restricted"]:
            v = X[feat].to_numpy(dtype=float)
            ok &= (v > b["low"]) if b["low_open"] else (v >= b["low"])
            ok &= v <= b["high"]
    return ok


def test_extrapolation_points_per_leaf_and_evaluated_ranges(part):
    eff = part.effects
    assert eff.n_excluded > 50 and len(part.leaf_ids) >= 2
    s = leaf_support(part).set_index("node")
    ep = eff.data.loc[eff.excluded.index[eff.excluded["reason_type"] == "extrapolation"]]
    evaluated = eff.data.loc[eff.results.index]
    total = 0
    for node in part.leaf_ids:
        box = part.describe(node)
        assert s.at[node, "n_extrapolation"] == int(_inside(ep, box).sum())
        total += s.at[node, "n_extrapolation"]
        rows = evaluated[(part.leaf_of_row == node).to_numpy()]
        for feat in ("a", "b"):
            assert s.at[node, f"{feat}:eval_min"] == rows[feat].min()
            assert s.at[node, f"{feat}:eval_max"] == rows[feat].max()
            assert box.at[feat, "low"] <= s.at[node, f"{feat}:eval_min"] <= s.at[node, f"{feat}:eval_max"] \
                <= box.at[feat, "high"]
    assert total == len(ep) and (s["n_unassigned"] == 0).all()
    # the evaluated range is narrower than the hyperrectangle for the stepped feature: no row above 7.5 has an fME
    assert s["a:eval_max"].max() <= 7.5 < eff.data["a"].max()


def test_unchecked_effects_have_no_extrapolation_counts():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.uniform(0, 1, 200), "b": rng.uniform(0, 1, 200)})
    eff = fme.fme(lambda d: d["a"].to_numpy() * (d["b"].to_numpy() > 0.5), X, {"a": 0.1})
    s = leaf_support(fme.came(eff, minbucket=40))
    assert s["n_extrapolation"].isna().all()
