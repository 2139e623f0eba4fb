"""cAMEs (paper §5.5): growing and reducing the tree, categorical rules, refits (partition_stability), bad
input; the result's tables and prediction (fme._trees.partition) are tested in test_partition.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import fme
from fme.exceptions import DataError, FeatureError, ParameterError
from tests.conftest import piecewise_sim as _piecewise


def test_paper_simulation_linear_leaf_is_exact(sim_part) -> None:
    # Where x + 2 <= 0 the function is linear with slope 1: every fME is 2 and every NLM is 1.
    first = sim_part.leaves.iloc[0]
    desc = sim_part.describe(int(first["node"]))
    assert desc.loc["x", "high"] <= -2.0
    assert first["came"] == pytest.approx(2.0, abs=1e-9)
    assert first["canlm"] == pytest.approx(1.0, abs=1e-9)
    assert first["sd_fme"] == pytest.approx(0.0, abs=1e-9)


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
    full = fme.came(eff, honest=False, minbucket=20)
    nodes = full.tree.nodes_
    # The grown tree is root -> [2] -> ([3] -> (4, 5), 6) and 7: only (4, 5) are sibling leaves,
    # so three subspaces are {3, 6, 7}; then only (3, 6) are siblings, so two are {2, 7}.
    assert full.leaf_ids == [4, 5, 6, 7]
    assert nodes.loc[[4, 5], "parent"].tolist() == [3, 3] and nodes.at[6, "parent"] == 2
    assert fme.came(eff, honest=False, minbucket=20, n_partitions=3).leaf_ids == [3, 6, 7]
    two = fme.came(eff, honest=False, minbucket=20, n_partitions=2)
    assert two.leaf_ids == [2, 7]
    x = eff.data["x"]
    assert two.leaves["n"].tolist() == [(x <= nodes.at[1, "split_value"]).sum(), (x > nodes.at[1, "split_value"]).sum()]
    assert list(two.nodes.index) == [1, 2, 7] and two.nodes["is_leaf"].tolist() == [False, True, True]


def test_greedy_reduction_merges_smallest_pooled_sd() -> None:
    # A balanced hand-made tree: 1 -> (2 -> (3, 4), 5 -> (6, 7)); pooled SD of (3, 4) is 0.5, of (6, 7) 5.
    from types import SimpleNamespace

    from fme._trees.grow import _prune_sequence

    nodes = pd.DataFrame(
        {
            "parent": pd.array([pd.NA, 1, 2, 2, 1, 5, 5], dtype="Int64"),
            "is_leaf": [False, False, True, True, False, True, True],
            "children": [(2, 5), (3, 4), (), (), (6, 7), (), ()],
        },
        index=pd.Index([1, 2, 3, 4, 5, 6, 7], name="node"),
    )
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
    part = fme.came(eff, honest=False, minbucket=20, max_sd=3.5)
    assert part.leaves["sd_fme"].max() < 3.5
    # Three subspaces suffice (blocks 0+1 pooled); the two-subspace reduction pools blocks 0-2.
    assert len(part.leaves) == 3 and part.leaves.iloc[0]["sd_fme"] == pytest.approx(sd_low)
    with pytest.raises(ParameterError, match="max_sd"):
        fme.came(eff, honest=False, minbucket=20, max_sd=1e-6)


def test_categorical_rules_and_cart() -> None:
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"x": rng.uniform(-1, 1, 600), "g": pd.Categorical(rng.choice(["a", "b", "c"], 600))})
    model = lambda d: d["x"] * np.where(d["g"] == "a", 5.0, 1.0)  # noqa: E731
    eff = fme.fme(model, X, {"x": 1.0})
    for method, params in [("ctree", {}), ("cart", {"max_depth": 1})]:
        part = fme.came(eff, honest=False, method=method, **params)
        assert len(part.leaves) == 2
        assert set(part.leaves["came"].round(12)) == {5.0, 1.0}
        assert any("g in {a}" == r for r in part.leaves["rule"])
        desc = part.describe(int(part.leaves.iloc[0]["node"]))
        assert desc.loc["g", "restricted"] and not desc.loc["x", "restricted"]


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


# ---------------------------------------------------------------- stability across subsamples
@pytest.fixture(scope="module")
def two_groups() -> fme.FMEResult:
    # fME = 1 where g == "a", 5 where g == "b" (plus a bit of noise from x): one clear split on g
    rng = np.random.default_rng(7)
    X = pd.DataFrame(
        {"x": rng.normal(size=400), "z": rng.normal(size=400), "g": pd.Categorical(rng.choice(["a", "b"], 400))}
    )

    def f(d: pd.DataFrame) -> np.ndarray:
        slope = np.where(d["g"] == "a", 1.0, 5.0)
        return slope * d["x"].to_numpy() + 0.01 * np.sin(40 * d["z"].to_numpy())

    return fme.fme(f, X, {"x": 1.0})


def test_stability_of_a_clear_split_is_perfect(two_groups) -> None:
    part = fme.came(two_groups)
    assert part.nodes.at[1, "split_feature"] == "g"
    st = fme.partition_stability(part, n_subsamples=8, fraction=0.5, random_state=3)
    assert list(st.columns) == ["subsample", "n", "ame", "n_leaves", "root_split", "same_root_split", "ari", "error"]
    assert st["subsample"].tolist() == list(range(1, 9)) and (st["n"] == 200).all()
    assert (st["root_split"] == "g").all() and st["same_root_split"].all()
    assert st["error"].isna().all()
    # every fME is exactly 1 or 5, so each subsample's AME is 1 + 4 k / 200 (k rows of group b)
    k = (st["ame"].to_numpy() - 1.0) * 200 / 4
    assert k == pytest.approx(np.round(k), abs=1e-9) and st["ame"].between(1.0, 5.0).all()
    assert (st["n_leaves"] == 2).all() and (st["ari"] == 1.0).all()


def test_stability_is_reproducible_and_seeded(sim_part) -> None:
    a = fme.partition_stability(sim_part, n_subsamples=3, random_state=11)
    b = fme.partition_stability(sim_part, n_subsamples=3, random_state=11)
    c = fme.partition_stability(sim_part, n_subsamples=3, random_state=12)
    pd.testing.assert_frame_equal(a, b)
    assert not np.array_equal(a["ame"].to_numpy(), c["ame"].to_numpy())
    assert sim_part.params["minbucket"] == 30 and sim_part.params["testtype"] == "teststatistic"


def test_stability_without_structure_is_one_subspace() -> None:
    # a linear model: every fME is the same, no split, ARI of two one-group labelings is 1
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=300), "z": rng.normal(size=300)})
    eff = fme.fme(lambda d: 2.0 * d["x"].to_numpy() - d["z"].to_numpy(), X, {"x": 0.5})
    st = fme.partition_stability(fme.came(eff), n_subsamples=4)
    assert (st["n_leaves"] == 1).all() and st["root_split"].isna().all()
    assert (st["ari"] == 1.0).all()
    assert st["ame"].to_numpy() == pytest.approx(np.full(4, 1.0), abs=1e-12)


def test_stability_records_failed_refits(sim_effects) -> None:
    part = fme.came(sim_effects, n_partitions=6)
    st = fme.partition_stability(part, n_subsamples=3, fraction=0.02)  # 30 rows cannot give 6 subspaces
    assert st["error"].str.contains("n_partitions=6").all()
    assert st["n_leaves"].isna().all() and st["ari"].isna().all() and st["ame"].notna().all()


@pytest.mark.parametrize(
    ("kwargs", "exc", "phrase"),
    [
        ({"n_subsamples": 0}, ParameterError, "n_subsamples"),
        ({"fraction": 1.0}, ParameterError, "strictly between 0 and 1"),
        ({"fraction": 0.0001}, ParameterError, "fewer than 2 rows"),
    ],
)
def test_stability_bad_arguments(sim_part, kwargs, exc, phrase) -> None:
    with pytest.raises(exc, match=phrase):
        fme.partition_stability(sim_part, **kwargs)


def test_stability_needs_a_partition(sim_effects) -> None:
    with pytest.raises(DataError, match="PartitionResult"):
        fme.partition_stability(sim_effects)


def test_stability_scales_absolute_sizes(two_groups) -> None:
    # minbucket 150 lets the 400 rows split into the groups (about 200 each); a half-sample has about
    # 100 per group, so it can split only if minbucket is scaled to 75
    part = fme.came(two_groups, honest=False, minbucket=150)
    assert len(part.leaf_ids) == 2
    scaled = fme.partition_stability(part, n_subsamples=3)
    raw = fme.partition_stability(part, n_subsamples=3, scale_sizes=False)
    assert (scaled["n_leaves"] == 2).all() and (scaled["ari"] == 1.0).all()
    assert (raw["n_leaves"] == 1).all() and (raw["ari"] == 0.0).all()
    assert part.params["minbucket"] == 150  # the partition's own record is untouched


# ------------------------------------------------------------------ labels and arguments
def _grade_effects(columns=("x", "grade")):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({columns[0]: rng.uniform(-2, 2, 300), columns[1]: rng.choice(["a", "b", "c"], 300)})
    return fme.fme(lambda d: np.abs(d[columns[0]].to_numpy()), X, {columns[0]: 0.5})


def test_integer_column_labels_work_in_came():
    eff = _grade_effects(columns=(0, 1))
    part = fme.came(eff)
    assert part.features == ["0", "1"]
    assert part.root_split == "0"
    assert all(" 0 " in r or r.startswith("0 ") for r in part.leaves["rule"])
    # new rows with the same integer labels are placed like the evaluated rows
    got = part.predict(eff.data.iloc[:20])
    np.testing.assert_array_equal(got["node"].to_numpy(), part.leaf_of_row.iloc[:20].to_numpy())
    cart = fme.came(eff, method="cart", max_depth=2)
    assert cart.leaves["rule"].str.contains(r"^0 |< 0 <=", regex=True).all()


def test_duplicate_index_labels_name_the_index():
    X = pd.DataFrame({"x": np.arange(6.0)}, index=[0, 1, 2, 0, 1, 2])
    with pytest.raises(
        DataError,
        match=r"the index of `data` has duplicate labels \(e.g. \[0, 1, 2\]\).*"
        r"reset_index\(drop=True\)",
    ):
        fme.fme(lambda d: d["x"].to_numpy(), X, {"x": 1.0})


def test_multiindex_and_duplicate_columns():
    X = pd.DataFrame(np.ones((3, 2)), columns=pd.MultiIndex.from_tuples([("a", "x"), ("a", "y")]))
    with pytest.raises(DataError, match=r"`data` has MultiIndex \(hierarchical\) columns"):
        fme.fme(lambda d: d.iloc[:, 0].to_numpy(), X, {("a", "x"): 1.0})
    Y = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    ref = pd.DataFrame(np.ones((3, 2)), columns=["x", "x"])
    with pytest.raises(DataError, match=r"`reference_data` has duplicated column names \['x'\]"):
        fme.fme(lambda d: d["x"].to_numpy(), Y, {"x": 1.0}, reference_data=ref)


@pytest.mark.parametrize("method, valid", [("ctree", "minbucket"), ("cart", "min_samples_leaf")])
def test_misspelt_tree_parameter_lists_valid_names(method, valid):
    with pytest.raises(
        ParameterError,
        match=rf"unknown tree parameter\(s\) \['minbuckets'\] for method='{method}'; "
        rf"valid names: .*{valid}",
    ):
        fme.came(_grade_effects(), method=method, minbuckets=5)


@pytest.mark.parametrize(("given", "name"), [("scale", "standardize"), ("n_leaves", "n_partitions")])
def test_another_tool_s_name_for_a_came_argument_names_fme_s(given, name):
    """What other tools call ``scale=`` (GADGET) is fme's ``standardize=``: the error names it, for one effect
    and for a joint partition alike."""
    eff = _grade_effects()
    for effects in (eff, [eff, eff]):
        with pytest.raises(ParameterError, match=rf"fme.came has no argument {given}=; it is called {name}= here"):
            fme.came(effects, **{given: 3})


def test_features_as_one_string_and_empty_features():
    eff = _grade_effects()
    assert fme.came(eff, features="grade").features == ["grade"]
    with pytest.raises(ParameterError, match="`features` is empty"):
        fme.came(eff, features=[])


def test_partition_stability_random_state_as_text():
    part = fme.came(_grade_effects())
    with pytest.raises(ParameterError, match="random_state must be None, an int or a numpy Generator, got str"):
        fme.partition_stability(part, random_state="7")
