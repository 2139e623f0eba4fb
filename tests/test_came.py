"""cAMEs (paper §5.5): subspace statistics, reduction, hyperrectangles, prediction, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import fme
from fme.exceptions import DataError, FeatureError, ParameterError


def _piecewise(d: pd.DataFrame) -> np.ndarray:
    # Paper §7.1: f(x) = x for x < 0, 5 sin(2x) otherwise.
    x = d["x"].to_numpy()
    return np.where(x < 0, x, 5 * np.sin(2 * x))


@pytest.fixture(scope="module")
def sim_effects() -> fme.FMEResult:
    rng = np.random.default_rng(123)
    X = pd.DataFrame({"x": rng.uniform(-5, 5, 1500)})
    return fme.fme(_piecewise, X, {"x": 2}, nlm=True, nlm_method="simpson38")


@pytest.fixture(scope="module")
def sim_part(sim_effects):
    return fme.came(sim_effects, minbucket=30, testtype="teststatistic", mincriterion=0.99)


def test_paper_simulation_linear_leaf_is_exact(sim_part) -> None:
    # Where x + 2 <= 0 the function is linear with slope 1: every fME is 2 and every NLM is 1.
    first = sim_part.leaves.iloc[0]
    desc = sim_part.describe(int(first["node"]))
    assert desc.loc["x", "high"] <= -2.0
    assert first["came"] == pytest.approx(2.0, abs=1e-9)
    assert first["canlm"] == pytest.approx(1.0, abs=1e-9)
    assert first["sd_fme"] == pytest.approx(0.0, abs=1e-9)


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


def test_conf_level_changes_interval_width(sim_effects) -> None:
    a = fme.came(sim_effects, maxdepth=1, conf_level=0.9).leaves
    b = fme.came(sim_effects, maxdepth=1, conf_level=0.99).leaves
    n = a["n"].to_numpy()
    ratio = (b["came_ci_high"] - b["came"]) / (a["came_ci_high"] - a["came"])
    np.testing.assert_allclose(ratio, stats.t.ppf(0.995, n - 1) / stats.t.ppf(0.95, n - 1), rtol=1e-12)


def _four_groups() -> fme.FMEResult:
    # Four blocks of x with fME levels 0, 1, 10, 30 and different spreads; worked by hand below.
    rng = np.random.default_rng(7)
    x = np.repeat([0.5, 1.5, 2.5, 3.5], 50) + rng.uniform(-0.4, 0.4, 200)
    level = np.select([x < 1, x < 2, x < 3], [0.0, 1.0, 10.0], 30.0)
    noise = rng.normal(0, 1, 200) * np.select([x < 1, x < 2, x < 3], [0.1, 0.1, 2.0], 3.0)
    X = pd.DataFrame({"x": x})
    values = pd.Series(level + noise, index=X.index)
    return fme.fme(lambda d: values.loc[d.index].to_numpy() * (d["x"] - X.loc[d.index, "x"] + 1), X, {"x": 1.0})


def test_n_partitions_follows_the_tree() -> None:
    eff = _four_groups()
    full = fme.came(eff, minbucket=20)
    nodes = full.tree.nodes_
    # The grown tree is root -> [2] -> ([3] -> (4, 5), 6) and 7: only (4, 5) are sibling leaves,
    # so three subspaces are {3, 6, 7}; then only (3, 6) are siblings, so two are {2, 7}.
    assert full.leaf_ids == [4, 5, 6, 7]
    assert nodes.loc[[4, 5], "parent"].tolist() == [3, 3] and nodes.at[6, "parent"] == 2
    assert fme.came(eff, minbucket=20, n_partitions=3).leaf_ids == [3, 6, 7]
    two = fme.came(eff, minbucket=20, n_partitions=2)
    assert two.leaf_ids == [2, 7]
    x = eff.data["x"]
    assert two.leaves["n"].tolist() == [(x <= nodes.at[1, "split_value"]).sum(), (x > nodes.at[1, "split_value"]).sum()]
    assert list(two.nodes.index) == [1, 2, 7] and two.nodes["is_leaf"].tolist() == [False, True, True]


def test_greedy_reduction_merges_smallest_pooled_sd() -> None:
    # A balanced hand-made tree: 1 -> (2 -> (3, 4), 5 -> (6, 7)); pooled SD of (3, 4) is 0.5, of (6, 7) 5.
    from types import SimpleNamespace

    from fme.came import _prune_sequence

    nodes = pd.DataFrame(
        {"parent": pd.array([pd.NA, 1, 2, 2, 1, 5, 5], dtype="Int64"),
         "is_leaf": [False, False, True, True, False, True, True],
         "children": [(2, 5), (3, 4), (), (), (6, 7), (), ()]},
        index=pd.Index([1, 2, 3, 4, 5, 6, 7], name="node"))
    leaf_of_row = np.repeat([3, 4, 6, 7], 2)
    fmes = np.array([0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 10.0, 10.0])
    seq = _prune_sequence(SimpleNamespace(nodes_=nodes), fmes, leaf_of_row)
    assert seq == [[3, 4, 6, 7], [2, 6, 7], [2, 5], [1]]
    assert np.std(fmes[:4], ddof=1) < np.std(fmes[4:], ddof=1)


def test_max_sd_picks_fewest_leaves_meeting_threshold() -> None:
    eff = _four_groups()
    fmes, x = eff.results["fme"], eff.data["x"]
    sd_low = fmes[x < 2].std(ddof=1)
    sd_three = fmes[x < 2.88].std(ddof=1)
    assert sd_low < 3.5 < sd_three
    part = fme.came(eff, minbucket=20, max_sd=3.5)
    assert part.leaves["sd_fme"].max() < 3.5
    # Three subspaces suffice (blocks 0+1 pooled); the two-subspace reduction pools blocks 0-2.
    assert len(part.leaves) == 3 and part.leaves.iloc[0]["sd_fme"] == pytest.approx(sd_low)
    with pytest.raises(ParameterError, match="max_sd"):
        fme.came(eff, minbucket=20, max_sd=1e-6)


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
        splits = set(nodes["split_value"].dropna()) | {sim_part.effects.data["x"].min(),
                                                        sim_part.effects.data["x"].max()}
        assert row["low"] in splits and row["high"] in splits


def test_categorical_rules_and_cart() -> None:
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"x": rng.uniform(-1, 1, 600), "g": pd.Categorical(rng.choice(["a", "b", "c"], 600))})
    model = lambda d: d["x"] * np.where(d["g"] == "a", 5.0, 1.0)  # noqa: E731
    eff = fme.fme(model, X, {"x": 1.0})
    for method, params in [("ctree", {}), ("cart", {"max_depth": 1})]:
        part = fme.came(eff, method=method, **params)
        assert len(part.leaves) == 2
        assert set(part.leaves["came"].round(12)) == {5.0, 1.0}
        assert any("g in {a}" == r for r in part.leaves["rule"])
        desc = part.describe(int(part.leaves.iloc[0]["node"]))
        assert desc.loc["g", "restricted"] and not desc.loc["x", "restricted"]


def test_predict_flags_rows_outside_observed_subspace(sim_part) -> None:
    new = pd.DataFrame({"x": [-4.5, 12.0]}, index=["inside", "far"])
    out = sim_part.predict(new)
    assert list(out.index) == ["inside", "far"]
    assert not out.loc["inside", "outside_observed"] and out.loc["far", "outside_observed"]
    assert out.loc["far", "outside_features"] == "x"
    first = sim_part.leaves.iloc[0]
    assert out.loc["inside", "node"] == first["node"] and out.loc["inside", "came"] == first["came"]


def test_tiny_scale_fmes_still_partition() -> None:
    # CTREE's absolute tolerance stops trees on tiny responses (spec §9); came standardises first.
    rng = np.random.default_rng(5)
    X = pd.DataFrame({"x": rng.uniform(-5, 5, 800)})
    eff = fme.fme(lambda d: 1e-7 * _piecewise(d), X, {"x": 2})
    assert len(fme.CTree().fit(X, eff.results["fme"]).leaves_) == 1
    part = fme.came(eff)
    assert len(part.leaf_ids) > 1
    raw = fme.came(eff, standardize=False)
    assert len(raw.leaf_ids) == 1


def test_undefined_nlms_are_ignored_and_counted() -> None:
    X = pd.DataFrame({"x": np.linspace(-3, 3, 100)})
    eff = fme.fme(lambda d: np.maximum(d["x"], 0.0), X, {"x": 1.0}, nlm=True)
    assert eff.results["nlm"].isna().any()
    part = fme.came(eff, maxdepth=1)
    total = part.leaves["n_nlm"].sum()
    assert total == eff.results["nlm"].notna().sum()
    assert part.leaves["canlm"].notna().all()


def test_single_node_when_fewer_rows_than_minsplit() -> None:
    X = pd.DataFrame({"x": np.linspace(0, 1, 10)})
    part = fme.came(fme.fme(lambda d: d["x"] ** 2, X, {"x": 0.1}))
    assert part.leaf_ids == [1]
    assert any("minsplit" in note for note in part.notes)
    assert "minsplit" in part.summary()


@pytest.mark.parametrize(
    "kwargs, exc, phrase",
    [
        ({"features": ["nope"]}, FeatureError, "nope"),
        ({"n_partitions": 1}, ParameterError, "n_partitions"),
        ({"n_partitions": 500}, ParameterError, "only"),
        ({"max_sd": 0}, ParameterError, "max_sd"),
        ({"conf_level": 1.5}, ParameterError, "conf_level"),
        ({"method": "forest"}, ParameterError, "method"),
    ],
)
def test_bad_input(sim_effects, kwargs, exc, phrase) -> None:
    with pytest.raises(exc, match=phrase):
        fme.came(sim_effects, **kwargs)


def test_effects_must_be_a_result() -> None:
    with pytest.raises(DataError, match="FMEResult"):
        fme.came(pd.DataFrame({"fme": [1.0]}))


def test_many_level_factor_is_a_clear_error() -> None:
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.uniform(size=400), "g": pd.Categorical(rng.integers(0, 40, 400).astype(str))})
    eff = fme.fme(lambda d: d["x"] * d["g"].cat.codes.to_numpy(), X, {"x": 1.0})
    with pytest.raises(ParameterError, match="30"):
        fme.came(eff)
    part = fme.came(eff, features=["x"])
    assert part.features == ["x"]
