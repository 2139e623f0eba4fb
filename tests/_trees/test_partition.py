"""The cAME result (fme._trees.partition.PartitionResult, paper §5.5): subspace statistics, rows per subspace,
hyperrectangles and prediction for new rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import fme


def test_leaf_statistics_match_hand_computation(sim_effects, sim_part) -> None:
    fmes = sim_effects.results["fme"]
    nlms = sim_effects.results["nlm"]
    for _, leaf in sim_part.leaves.iterrows():
        rows = sim_part.leaf_of_row == leaf["node"]
        v = fmes[rows].to_numpy()
        n = v.size
        sd = v.std(ddof=1)
        half = stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)
        assert leaf["n"] == n
        assert leaf["came"] == pytest.approx(v.mean(), rel=1e-12)
        assert leaf["sd_fme"] == pytest.approx(sd, rel=1e-12, abs=1e-15)
        if abs(v.mean()) > 0:
            assert leaf["cov_fme"] == pytest.approx(sd / abs(v.mean()), rel=1e-12, abs=1e-15)
        assert leaf["came_ci_low"] == pytest.approx(v.mean() - half, rel=1e-12, abs=1e-12)
        assert leaf["came_ci_high"] == pytest.approx(v.mean() + half, rel=1e-12, abs=1e-12)
        w = nlms[rows].dropna().to_numpy()
        assert leaf["n_nlm"] == w.size
        assert leaf["canlm"] == pytest.approx(w.mean(), rel=1e-12)


def test_rows_map_to_exactly_one_leaf(sim_effects, sim_part) -> None:
    assert sim_part.leaf_of_row.index.equals(sim_effects.results.index)
    assert set(sim_part.leaf_of_row.unique()) == set(sim_part.leaf_ids)
    assert sim_part.leaves["n"].sum() == sim_effects.n == sim_part.root["n"]
    assert sim_part.root["came"] == pytest.approx(sim_effects.ame, rel=1e-12)


def test_describe_is_the_hyperrectangle(sim_part) -> None:
    nodes = sim_part.tree.nodes_
    for node in sim_part.leaf_ids:
        desc = sim_part.describe(node)
        row = desc.loc["x"]
        rows = sim_part.leaf_of_row == node
        xs = sim_part.effects.data.loc[rows[rows].index, "x"]
        assert row["min"] == xs.min() and row["max"] == xs.max()
        assert row["low"] <= xs.min() and xs.max() <= row["high"]
        assert bool(row["restricted"])
        # Bounds are split values (or the global range where unrestricted).
        splits = set(nodes["split_value"].dropna()) | {
            sim_part.effects.data["x"].min(),
            sim_part.effects.data["x"].max(),
        }
        assert row["low"] in splits and row["high"] in splits


def test_predict_flags_rows_outside_observed_subspace(sim_part) -> None:
    new = pd.DataFrame({"x": [-4.5, 12.0]}, index=["inside", "far"])
    out = sim_part.predict(new)
    assert list(out.index) == ["inside", "far"]
    assert not out.loc["inside", "outside_observed"] and out.loc["far", "outside_observed"]
    assert out.loc["far", "outside_features"] == "x"
    first = sim_part.leaves.iloc[0]
    assert out.loc["inside", "node"] == first["node"] and out.loc["inside", "came"] == first["came"]


def test_undefined_nlms_are_ignored_and_counted() -> None:
    X = pd.DataFrame({"x": np.linspace(-3, 3, 100)})
    eff = fme.fme(lambda d: np.maximum(d["x"], 0.0), X, {"x": 1.0}, nlm=True)
    assert eff.results["nlm"].isna().any()
    part = fme.came(eff, honest=False, maxdepth=1)
    total = part.leaves["n_nlm"].sum()
    assert total == eff.results["nlm"].notna().sum()
    assert part.leaves["canlm"].notna().all()


def test_summary_names_the_confidence_level_as_given():
    # 0.57 * 100 is 56.99999999999999 in floating point: the level is printed, never truncated
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300)})
    eff = fme.fme(lambda d: d["a"] * (1 + (d["b"] > 0)), X, {"a": 1.0})
    part = fme.came(eff, conf_level=0.57)
    assert "57% CIs" in part.summary() and "56%" not in part.summary()
