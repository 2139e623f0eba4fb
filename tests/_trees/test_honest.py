"""Honest cAMEs: the tree grows on one part of the rows, the leaves are estimated on the other.

References: hand computations on the estimation rows (t intervals, delta SEs through fme.ame on the
leaf's rows), Cochran's Q for the global test of independent leaves, statsmodels' multipletests for
Holm, and the pandas path for the Dask path.
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import fme
from fme._trees.grow import honest_mask
from fme.conditional import LeafTests


def _effects(n: int = 600, seed: int = 0, index=None) -> fme.FMEResult:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x1": rng.uniform(0, 1, n), "x2": rng.uniform(0, 1, n), "x3": rng.uniform(0, 1, n)}, index=index)
    # fME of x1 by 0.5: x2 + 2 * (x3 > 0.5): two regions in x3, a gradient in x2
    f = lambda d: 2 * d["x1"].to_numpy() * d["x2"].to_numpy() + 4 * d["x1"].to_numpy() * (d["x3"].to_numpy() > 0.5)
    return fme.fme(f, X, {"x1": 0.5})


def test_the_split_depends_on_seed_and_index_labels_only():
    idx = pd.Index([f"row{k}" for k in range(2000)])
    m = honest_mask(idx, 0.5, 7)
    assert 0.45 < m.mean() < 0.55
    perm = np.random.default_rng(1).permutation(len(idx))
    assert np.array_equal(honest_mask(idx[perm], 0.5, 7), m[perm])  # position never matters
    assert not np.array_equal(honest_mask(idx, 0.5, 8), m)  # the seed does
    assert 0.25 < honest_mask(idx, 0.3, 7).mean() < 0.35
    assert np.array_equal(honest_mask(idx, 0.3, 7) & ~m, np.zeros(len(idx), bool))  # nested in the fraction
    # integer labels (a RangeIndex) too: pandas hashes numbers without its string key, the seed still counts
    r = pd.RangeIndex(2000)
    a, b = honest_mask(r, 0.5, 0), honest_mask(r, 0.5, 1)
    assert 0.45 < a.mean() < 0.55 and 0.2 < np.mean(a != b) < 0.8
    assert np.array_equal(honest_mask(r[::-1], 0.5, 0), a[::-1])


def test_leaf_figures_come_from_the_estimation_rows_only():
    eff = _effects()
    part = fme.came(eff, features=["x2", "x3"], maxdepth=2, random_state=3)
    assert part.honest and len(part.leaf_ids) >= 2
    grow = honest_mask(eff.results.index, 0.5, 3)
    assert part.grown_on.equals(eff.results.index[grow]) and part.estimated_on.equals(eff.results.index[~grow])
    fmes = eff.results["fme"].to_numpy()
    for _, leaf in part.leaves.iterrows():
        in_leaf = (part.leaf_of_row == leaf["node"]).to_numpy()
        v = fmes[in_leaf & ~grow]
        sd = v.std(ddof=1)
        half = stats.t.ppf(0.975, v.size - 1) * sd / np.sqrt(v.size)
        assert leaf["n"] == v.size and leaf["n_grown"] == int((in_leaf & grow).sum())
        assert leaf["came"] == pytest.approx(v.mean(), rel=1e-12)
        assert leaf["came_ci_low"] == pytest.approx(v.mean() - half, rel=1e-12)
        assert leaf["conf_high"] == pytest.approx(v.mean() + half, rel=1e-12)  # sample inference = the t interval
    assert part.leaves["n"].sum() + part.leaves["n_grown"].sum() == eff.n
    assert part.root["came"] == pytest.approx(eff.ame, rel=1e-12)  # the global AME: every row
    assert part.honesty.startswith("honest") and "honest" in part.summary()


def test_the_tree_is_grown_on_the_growing_rows_only():
    eff = _effects()
    part = fme.came(eff, features=["x2", "x3"], maxdepth=2, random_state=3)
    grow = honest_mask(eff.results.index, 0.5, 3)
    X = eff.data.loc[grow, ["x2", "x3"]]
    y = eff.results["fme"].to_numpy()[grow]
    tree = fme.CTree(maxdepth=2).fit(X, (y - y.mean()) / y.std())
    pd.testing.assert_frame_equal(tree.nodes_, part.tree.nodes_)


def test_reordered_rows_give_the_same_partition():
    eff = _effects(index=pd.RangeIndex(600) * 3 + 11)
    perm = np.random.default_rng(5).permutation(600)
    X = eff.data.iloc[perm]
    f = lambda d: 2 * d["x1"].to_numpy() * d["x2"].to_numpy() + 4 * d["x1"].to_numpy() * (d["x3"].to_numpy() > 0.5)
    eff2 = fme.fme(f, X, {"x1": 0.5})
    a = fme.came(eff, features=["x2", "x3"], maxdepth=2)
    b = fme.came(eff2, features=["x2", "x3"], maxdepth=2)
    assert a.leaf_ids == b.leaf_ids
    cols = ["n", "n_grown", "came", "sd_fme", "came_ci_low", "came_ci_high"]
    np.testing.assert_allclose(a.leaves[cols].to_numpy(float), b.leaves[cols].to_numpy(float), rtol=1e-12)


def test_not_honest_says_the_intervals_are_not_adjusted():
    part = fme.came(_effects(), features=["x2", "x3"], maxdepth=2, honest=False)
    assert not part.honest and "n_grown" not in part.leaves.columns
    assert part.honesty.startswith("not honest") and "not adjusted" in part.summary()


def test_delta_leaves_are_the_ame_of_the_leafs_estimation_rows():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(2)
    n = 800
    d = pd.DataFrame({"age": rng.uniform(20, 70, n), "income": rng.normal(3, 1, n)})
    eta = -4 + 0.06 * d["age"] + 0.4 * d["income"]
    d["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    m = smf.logit("y ~ age + income", data=d).fit(disp=0)
    X = d[["age", "income"]]
    eff = fme.fme(m, X, {"age": 1})
    part = fme.came(eff, features=["age", "income"], method="cart", max_depth=2, min_samples_leaf=60)
    assert (part.leaves["inference"] == "delta").all()
    for _, leaf in part.leaves.iterrows():
        rows = part.leaf_of_row.index[part.leaf_of_row == leaf["node"]].intersection(part.estimated_on)
        own = fme.ame(m, X.loc[rows], {"age": 1}).iloc[0]
        assert leaf["came"] == pytest.approx(own["ame"], rel=1e-12)
        for c in ("std_error", "conf_low", "conf_high", "p_value"):
            assert leaf[c] == pytest.approx(own[c], rel=1e-9), c


def test_estimation_root_is_the_ame_of_the_estimation_rows():
    """The root's figures over the estimation rows: the leaves' counts add up to its n; its cAME, t interval
    and delta SE are those of fme.ame on those rows (a logit, delta method); not honest, it is the root."""
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(3)
    n = 700
    d = pd.DataFrame({"age": rng.uniform(20, 70, n), "income": rng.normal(3, 1, n)})
    d["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(4 - 0.06 * d["age"] - 0.4 * d["income"]))).astype(float)
    m = smf.logit("y ~ age + income", data=d).fit(disp=0)
    X = d[["age", "income"]]
    eff = fme.fme(m, X, {"age": 1}, nlm=True)
    part = fme.came(eff, features=["income"], method="cart", max_depth=2, min_samples_leaf=60)
    root = part.estimation_root
    assert part.honest and root["n"] == part.leaves["n"].sum() == len(part.estimated_on) < n
    own = fme.ame(m, X.loc[part.estimated_on], {"age": 1}).iloc[0]
    assert root["came"] == pytest.approx(own["ame"], rel=1e-12) and root["inference"] == "delta"
    for c in ("std_error", "conf_low", "conf_high", "p_value"):
        assert root[c] == pytest.approx(own[c], rel=1e-9), c
    values = eff.results["fme"].loc[part.estimated_on].to_numpy()
    half = stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1) / np.sqrt(values.size)
    assert (root["came_ci_low"], root["came_ci_high"]) == pytest.approx(
        (values.mean() - half, values.mean() + half), rel=1e-12
    )
    assert part.estimation_sample is None  # in memory: effects.results at estimated_on
    nlms = eff.results["nlm"].loc[part.estimated_on].dropna()
    assert root["canlm"] == pytest.approx(nlms.mean(), rel=1e-12) and root["n_nlm"] == len(nlms)
    line = next(x for x in part.summary().splitlines() if x.startswith("  estimation rows: "))
    assert line.startswith(f"  estimation rows: n = {len(part.estimated_on)}, cAME = {root['came']:.4g} [")
    plain = fme.came(eff, honest=False, features=["income"], method="cart", max_depth=2, min_samples_leaf=60)
    cols = ["n", "came", "came_ci_low", "came_ci_high", "std_error", "conf_low", "conf_high"]
    assert plain.estimation_root[cols].tolist() == plain.root[cols].tolist()


def test_leaf_tests_pairwise_holm_and_the_global_test():
    from statsmodels.stats.multitest import multipletests

    part = fme.came(_effects(n=1200), features=["x2", "x3"], method="cart", max_depth=2, min_samples_leaf=50)
    m = len(part.leaf_ids)
    assert m >= 3
    t = part.test()
    assert len(t) == m * (m - 1) // 2
    came, se = part.leaves["came"].to_numpy(), part.leaves["std_error"].to_numpy()
    k = 0
    for i in range(m):
        for j in range(i + 1, m):
            row = t.iloc[k]
            assert row["hypothesis"] == f"[{part.leaf_ids[j]}] - [{part.leaf_ids[i]}]"
            assert row["estimate"] == pytest.approx(came[j] - came[i], rel=1e-12)
            assert row["std_error"] == pytest.approx(np.hypot(se[i], se[j]), rel=1e-12)  # disjoint rows
            assert row["p_value"] == pytest.approx(2 * stats.norm.sf(abs(row["estimate"]) / row["std_error"]), rel=1e-9)
            k += 1
    np.testing.assert_allclose(t["p_value_adj"], multipletests(t["p_value"], method="holm")[1], rtol=1e-12)
    assert (t["multcomp"] == "holm").all()
    # the global test of equal leaf cAMEs, for independent leaves: Cochran's Q with m - 1 df
    w = 1 / se**2
    q = float(np.sum(w * (came - np.sum(w * came) / np.sum(w)) ** 2))
    g = t.global_test
    assert g["statistic"] == pytest.approx(q, rel=1e-9) and g["df"] == m - 1
    assert g["p_value"] == pytest.approx(stats.chi2.sf(q, m - 1), rel=1e-9)
    ref = part.test("reference", multcomp=None)
    assert len(ref) == m - 1 and "p_value_adj" not in ref.columns
    assert ref["estimate"].to_numpy() == pytest.approx(came[1:] - came[0], rel=1e-12)


def test_the_leaf_tests_keep_their_global_test_through_what_users_do_with_a_frame():
    part = fme.came(_effects(n=1200), features=["x2", "x3"], method="cart", max_depth=2, min_samples_leaf=50)
    t = part.test()
    assert type(t) is LeafTests and t.honest is True and t.left_out == []
    g = dict(t.global_test)
    assert set(g) == {"statistic", "df", "p_value", "note"} and g["df"] == len(part.leaf_ids) - 1 and g["note"] == ""
    kept = [
        t.copy(),
        t[["hypothesis", "p_value_adj"]],
        t.loc[t["p_value"] < 2],
        t.head(2),
        t.iloc[::-1],
        t.sort_values("p_value"),
        t.reset_index(drop=True),
        t.round(3),
        pickle.loads(pickle.dumps(t)),
    ]
    for out in kept:
        assert type(out) is LeafTests and out.global_test == g and out.left_out == [] and out.honest is True
    # computed anew: none
    merged = t.merge(pd.DataFrame({"hypothesis": [t["hypothesis"].iloc[0]], "label": ["A"]}), on="hypothesis")
    assert merged.global_test is None and merged.left_out is None and merged["label"].tolist() == ["A"]
    assert not fme.came(_effects(), features=["x2", "x3"], maxdepth=2, honest=False).test().honest


def test_several_splits_report_their_stability():
    eff = _effects(n=1200)
    part = fme.came(eff, features=["x2", "x3"], maxdepth=2, n_splits=5, random_state=4)
    single = fme.came(eff, features=["x2", "x3"], maxdepth=2, random_state=4)
    pd.testing.assert_frame_equal(part.leaves, single.leaves)  # the first split is the partition returned
    s, table = part.split_summary, part.splits
    assert len(table) == 5 and table["seed"].iloc[0] == 4 and table["seed"].nunique() == 5
    assert table["came_min"].nunique() == 5  # five different splits, five different estimates
    assert s["share_same_root_split"] == pytest.approx(np.mean(table["root_split"] == part.root_split))
    assert s["median_global_p_value"] == pytest.approx(np.median(table["global_p_value"]))
    assert s["global_p_value_split_adjusted"] == pytest.approx(min(1.0, 2 * np.median(table["global_p_value"])))
    assert table["root_split"].iloc[0] == "x3" and s["share_same_root_split"] == 1.0  # x3 carries the jump


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"honest_fraction": 1.0}, "honest_fraction"),
        ({"honest_fraction": 0}, "honest_fraction"),
        ({"n_splits": 0}, "n_splits"),
        ({"n_splits": 3, "honest": False}, "honest=True"),
        ({"honest": "yes"}, "honest must be"),
    ],
)
def test_bad_honest_arguments_name_themselves(kwargs, match):
    with pytest.raises(fme.ParameterError, match=match):
        fme.came(_effects(n=100), **kwargs)


def test_too_few_rows_for_two_parts_says_what_to_do():
    X = pd.DataFrame({"x": [0.0, 1.0, 2.0]})
    eff = fme.fme(lambda d: d["x"].to_numpy() ** 2, X, {"x": 1.0})
    with pytest.raises(fme.DataError, match="honest=False"):
        fme.came(eff)


def test_dask_effects_give_the_pandas_honest_partition():
    dd = pytest.importorskip("dask.dataframe")
    eff = _effects(n=1500)
    f = lambda d: 2 * d["x1"].to_numpy() * d["x2"].to_numpy() + 4 * d["x1"].to_numpy() * (d["x3"].to_numpy() > 0.5)
    eff = fme.fme(f, eff.data, {"x1": 0.5}, nlm=True)
    deff = fme.fme(f, dd.from_pandas(eff.data, npartitions=3, sort=False), {"x1": 0.5}, nlm=True)
    a = fme.came(eff, features=["x2", "x3"], maxdepth=2, random_state=6)
    b = fme.came(deff, features=["x2", "x3"], maxdepth=2, random_state=6)
    assert b.honest and a.leaf_ids == b.leaf_ids
    cols = ["n", "n_grown", "came", "sd_fme", "came_ci_low", "came_ci_high", "std_error", "conf_low", "conf_high"]
    np.testing.assert_allclose(b.leaves[cols].to_numpy(float), a.leaves[cols].to_numpy(float), rtol=1e-12)
    assert sorted(b.estimated_on.compute().tolist()) == sorted(a.estimated_on.tolist())
    ta, tb = a.test(), b.test()
    np.testing.assert_allclose(tb["p_value_adj"], ta["p_value_adj"], rtol=1e-9)
    cols = [
        "n",
        "came",
        "sd_fme",
        "came_ci_low",
        "came_ci_high",
        "std_error",
        "conf_low",
        "conf_high",
        "canlm",
        "sd_nlm",
        "canlm_ci_low",
        "canlm_ci_high",
        "n_nlm",
        "share_linear",
    ]
    assert eff.has_nlm and "median_nlm" not in a.estimation_root.index
    np.testing.assert_allclose(
        b.estimation_root[cols].to_numpy(float), a.estimation_root[cols].to_numpy(float), rtol=1e-12
    )
    # the figure's panels: every estimation row's fME in its subspace, as in memory
    panel = b.estimation_sample.sort_index()
    assert panel.index.tolist() == sorted(a.estimated_on.tolist())
    assert panel["fme"].tolist() == eff.results["fme"].loc[panel.index].tolist()
    assert panel["node"].tolist() == a.leaf_of_row.loc[panel.index].tolist()


def test_dask_panels_beyond_sample_size_are_a_seeded_sample_of_the_estimation_rows():
    """Beyond sample_size estimation rows, the panels hold a seeded sample of them (by label: the same rows
    for any chunking), each with its own fME and subspace; the figures stay over all estimation rows."""
    dd = pytest.importorskip("dask.dataframe")
    eff = _effects(n=3000)
    f = lambda d: 2 * d["x1"].to_numpy() * d["x2"].to_numpy() + 4 * d["x1"].to_numpy() * (d["x3"].to_numpy() > 0.5)
    parts = [
        fme.came(
            fme.fme(f, dd.from_pandas(eff.data, npartitions=k, sort=False), {"x1": 0.5}),
            features=["x3"],
            maxdepth=1,
            sample_size=600,
            random_state=6,
        )
        for k in (2, 5)
    ]
    a, b = (p.estimation_sample for p in parts)
    n_est = int(parts[0].leaves["n"].sum())
    assert 1400 < n_est < 1600 and 450 < len(a) < 750  # about sample_size of the estimation rows
    assert a.sort_index().equals(b.sort_index())
    est = set(parts[0].estimated_on.compute().tolist())
    assert set(a.index) <= est
    assert a["fme"].tolist() == eff.results["fme"].loc[a.index].tolist()
    assert parts[0].estimation_root["n"] == n_est


@pytest.mark.slow
def test_coverage_and_fwer_under_no_heterogeneity():
    """The simulation of benchmarks/bench_came_coverage.py ('homogeneous': every region's true cAME is
    0.5), 100 repetitions: honest leaf intervals cover at the nominal rate and the Holm-adjusted pairwise
    tests keep the family-wise error rate; the naive procedure does neither. Bounds: nominal +- about 3
    Monte Carlo SEs (the seeds are fixed)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_came_coverage.py"
    spec = importlib.util.spec_from_file_location("bench_came_coverage", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = {}
    for honest in (True, False):
        res = [bench.one_rep("homogeneous", 400, 1000 + r, honest) for r in range(100)]
        cov = sum(r[0] for r in res) / sum(r[1] for r in res)
        out[honest] = (cov, np.mean([r[2] for r in res]))
    assert out[True][0] >= 0.90 and out[True][1] <= 0.12
    assert out[False][0] < 0.8 and out[False][1] > 0.5


def test_rows_with_a_level_absent_from_a_node_go_to_its_majority_child():
    """An estimation row (or an extrapolation point) whose level is absent from a node goes to the child with
    more training rows (CTree majority=True, fme.came's default), so its subspace is the same whatever rows
    share the call (a Dask chunk) and in every run; partykit's default routes it at random."""
    rng = np.random.default_rng(11)
    n = 800
    g = np.where(rng.uniform(size=n) < 0.5, "a", "b")
    X = pd.DataFrame({"x1": rng.uniform(0, 1, n), "x2": rng.uniform(0, 1, n), "g": pd.Categorical(g)})
    f = lambda d: d["x1"].to_numpy() * (4 * d["x2"].to_numpy() + 3 * (d["g"] == "b").to_numpy())
    part = fme.came(fme.fme(f, X, {"x1": 0.5}), features=["x2", "g"])
    tree = part.tree
    assert tree.majority is True and tree.random_state is None
    # the level "c" is absent from every node: each split on g sends it to its majority child
    new = pd.DataFrame({"x2": rng.uniform(0, 1, 400), "g": pd.Categorical(["c"] * 400, categories=["a", "b", "c"])})
    leaves = tree.apply(new)
    np.testing.assert_array_equal(leaves, tree.apply(new))  # the same in a second call
    np.testing.assert_array_equal(leaves, np.concatenate([tree.apply(new.iloc[i : i + 57]) for i in range(0, 400, 57)]))
    assert part.root_split.startswith("g")  # the level matters, so the routing rule did something
    nodes = tree.nodes_
    kids = nodes.at[1, "children"]
    major = kids[0] if nodes.at[kids[0], "n"] >= nodes.at[kids[1], "n"] else kids[1]
    assert set(leaves) <= set(nodes.index) and all(_descends(nodes, int(leaf), major) for leaf in leaves)


def _descends(nodes: pd.DataFrame, node: int, ancestor: int) -> bool:
    while node != ancestor:
        parent = nodes.at[node, "parent"]
        if parent is None or (isinstance(parent, float) and np.isnan(parent)) or int(parent) < 1:
            return False
        node = int(parent)
    return True
