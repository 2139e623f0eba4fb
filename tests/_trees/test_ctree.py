"""Closed-form, property and input-validation tests of :class:`fme.CTree`.

Agreement with partykit itself is tested in ``test_ctree_fixtures.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from fme import CTree
from fme.exceptions import DataError, FeatureError, NotFittedError, ParameterError

FIX = Path(__file__).parents[1] / "fixtures" / "ctree"


def load_data(ds: str) -> tuple[pd.DataFrame, np.ndarray]:
    d = pd.read_csv(FIX / f"{ds}_data.csv")
    d["o"] = pd.Categorical(d["o"], categories=["low", "mid", "high", "top"], ordered=True)
    d["g"] = pd.Categorical(d["g"])
    return d, d.pop("y").to_numpy()


def _toy(n: int = 400, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "x1": rng.normal(size=n),
            "x2": rng.uniform(size=n),
            "g": pd.Categorical(rng.choice(list("abcd"), size=n)),
            "o": pd.Categorical(rng.choice(["lo", "mi", "hi"], size=n), categories=["lo", "mi", "hi"], ordered=True),
        }
    )
    shift = X["g"].map({"a": 0.0, "b": 1.0, "c": -1.0, "d": 0.5}).to_numpy(float)
    y = 1.5 * (X["x1"].to_numpy() > 0) + shift + rng.normal(size=n)
    return X, y


def _root_stats(tree: CTree) -> pd.DataFrame:
    return tree.criteria_[tree.criteria_["node"] == 1].set_index("variable")


# --------------------------------------------------------------- closed forms (§3.3)


def test_numeric_statistic_is_n_minus_1_r_squared() -> None:
    X, y = _toy()
    st = _root_stats(CTree().fit(X, y))
    for col in ("x1", "x2"):
        r = np.corrcoef(X[col], y)[0, 1]
        assert st.at[col, "statistic"] == pytest.approx((len(y) - 1) * r**2, rel=1e-10)
    # ordered factor: scores 1..K
    r = np.corrcoef(X["o"].cat.codes + 1, y)[0, 1]
    assert st.at["o", "statistic"] == pytest.approx((len(y) - 1) * r**2, rel=1e-10)


def test_factor_statistic_is_n_minus_1_eta_squared() -> None:
    X, y = _toy()
    st = _root_stats(CTree().fit(X, y))
    df = pd.DataFrame({"g": X["g"], "y": y})
    ss_b = df.groupby("g", observed=True)["y"].apply(lambda v: len(v) * (v.mean() - y.mean()) ** 2).sum()
    ss_t = ((y - y.mean()) ** 2).sum()
    assert st.at["g", "statistic"] == pytest.approx((len(y) - 1) * ss_b / ss_t, rel=1e-10)


def test_weighted_statistic_uses_weight_sum() -> None:
    X, y = _toy()
    w = np.random.default_rng(3).integers(0, 4, size=len(y)).astype(float)
    st = _root_stats(CTree().fit(X, y, sample_weight=w))
    x = X["x1"].to_numpy()
    W = w.sum()
    xm, ym = w @ x / W, w @ y / W
    r2 = (w @ ((x - xm) * (y - ym))) ** 2 / ((w @ (x - xm) ** 2) * (w @ (y - ym) ** 2))
    assert st.at["x1", "statistic"] == pytest.approx((W - 1) * r2, rel=1e-10)
    # integer weights are case replication
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    st_rep = _root_stats(CTree().fit(X.iloc[rep].reset_index(drop=True), y[rep]))
    np.testing.assert_allclose(st["statistic"], st_rep["statistic"], rtol=1e-9)


def test_sidak_adjustment_and_univariate_pvalues() -> None:
    X, y = _toy()
    uni = _root_stats(CTree(testtype="Univariate").fit(X, y))
    bon = _root_stats(CTree(testtype="bonferroni").fit(X, y))
    dfs = {"x1": 1, "x2": 1, "o": 1, "g": 3}
    for v, df in dfs.items():
        assert uni.at[v, "p_value"] == pytest.approx(stats.chi2.sf(uni.at[v, "statistic"], df), rel=1e-10)
    m = len(bon)
    p = uni["p_value"].to_numpy()
    big = p > 1e-6  # the naive formula loses all digits for tiny p
    assert big.any()
    np.testing.assert_allclose(bon["p_value"][big], 1 - (1 - p[big]) ** m, rtol=1e-6)
    # the log-scale form keeps small p-values accurate
    np.testing.assert_allclose(bon["p_value"], -np.expm1(m * np.log1p(-p)), rtol=1e-12)
    np.testing.assert_allclose(bon["criterion"], m * np.log1p(-p), rtol=1e-12)


def test_teststatistic_criterion_is_log_statistic() -> None:
    X, y = _toy()
    st = _root_stats(CTree(testtype="teststatistic", mincriterion=0.99).fit(X, y))
    np.testing.assert_allclose(st["criterion"], np.log(st["statistic"]), rtol=1e-14)
    assert st["p_value"].isna().all()


# ------------------------------------------------------------------ ties (§4.2)


def test_underflow_tie_is_won_by_larger_statistic() -> None:
    rng = np.random.default_rng(11)
    n = 3000
    a, b = rng.normal(size=n), rng.normal(size=n)
    y = a + 1.2 * b + 0.05 * rng.normal(size=n)
    # the stronger covariate comes first: without the tie rule the last column would win
    X = pd.DataFrame({"strong": b, "weak": a})
    tree = CTree().fit(X, y)
    st = _root_stats(tree)
    assert st.at["strong", "statistic"] > st.at["weak", "statistic"]
    assert (st["p_value"] < 1e-150).all()  # both tied at (nearly) zero
    assert st.at["strong", "criterion"] > st.at["weak", "criterion"]
    assert tree.nodes_.at[1, "split_feature"] == "strong"


def test_exact_tie_picks_last_column() -> None:
    X, y = _toy()
    X2 = pd.DataFrame({"first": X["x1"], "second": X["x1"].copy()})
    assert CTree().fit(X2, y).nodes_.at[1, "split_feature"] == "second"


# -------------------------------------------------------------------- properties


def test_each_row_in_exactly_one_leaf_and_predict_is_leaf_mean() -> None:
    X, y = _toy(600, seed=5)
    w = np.random.default_rng(1).uniform(0.5, 2, size=len(y))
    tree = CTree(alpha=0.2).fit(X, y, sample_weight=w)
    leaf = tree.apply(X)
    assert set(np.unique(leaf)) <= set(tree.leaves_)
    assert tree.nodes_.loc[tree.leaves_, "n_obs"].sum() == len(y)
    np.testing.assert_array_equal(leaf, tree._train_leaf)
    pred = tree.predict(X)
    for lf in tree.leaves_:
        sel = leaf == lf
        assert np.allclose(pred[sel], np.average(y[sel], weights=w[sel]), rtol=1e-12)
    assert len(tree.leaves_) > 2


def test_row_permutation_invariance() -> None:
    X, y = load_data("mixed_n300")
    t1 = CTree(majority=True).fit(X, y)
    perm = np.random.default_rng(7).permutation(len(y))
    t2 = CTree(majority=True).fit(X.iloc[perm].reset_index(drop=True), y[perm])
    cols = ["parent", "depth", "split_feature", "split_value", "n", "children"]
    pd.testing.assert_frame_equal(t1.nodes_[cols], t2.nodes_[cols])
    np.testing.assert_allclose(t1.nodes_["p_value"], t2.nodes_["p_value"], rtol=1e-9)
    np.testing.assert_array_equal(t1.apply(X), t2.apply(X))


def test_tiny_scale_response_is_faithful_to_partykit_tolerance() -> None:
    # partykit's absolute tolerance (1.49e-8) discards every test when y ~ 1e-7 (§9.1)
    X, y = load_data("tinyscale_n2000")
    assert len(CTree().fit(X, y).nodes_) == 1
    assert len(CTree().fit(X, y * 1e6).nodes_) > 1


def test_minbucket_is_truncated_like_partykit() -> None:
    X, y = load_data("mixed_n4000")
    a = CTree(minbucket=40.9, majority=True).fit(X, y).nodes_
    b = CTree(minbucket=40, majority=True).fit(X, y).nodes_
    pd.testing.assert_frame_equal(a, b)


def test_missing_values_majority_and_random_routing() -> None:
    X, _ = _toy(500, seed=2)
    X = X[["x1", "x2"]].copy()
    y = 2.0 * (X["x1"].to_numpy() > 0.4) + np.random.default_rng(2).normal(size=len(X))
    X.loc[::7, "x1"] = np.nan
    maj = CTree(majority=True).fit(X, y)
    root = maj.nodes_.loc[1]
    assert root["split_feature"] == "x1"
    c1, c2 = root["children"]
    big = c1 if maj.nodes_.at[c1, "n_obs"] >= maj.nodes_.at[c2, "n_obs"] else c2
    na_rows = X["x1"].isna().to_numpy()
    rule = maj.rules  # every NA row followed the larger child
    leaves_of_big = [lf for lf in maj.leaves_ if maj.rules(lf).startswith(rule(big))]
    assert np.isin(maj.apply(X)[na_rows], leaves_of_big).all()
    r1 = CTree(random_state=4).fit(X, y)
    r2 = CTree(random_state=4).fit(X, y)
    np.testing.assert_array_equal(r1._train_leaf, r2._train_leaf)
    np.testing.assert_array_equal(r1.apply(X), r2.apply(X))
    goes_left = [(CTree(random_state=s).fit(X, y)._train_leaf[na_rows] <= c2 - 1).mean() for s in range(3)]
    assert all(0 < g < 1 for g in goes_left)  # random routing sends NA rows both ways


def test_unseen_level_and_nan_at_prediction_are_routed() -> None:
    X, y = _toy()
    tree = CTree(majority=True).fit(X, y)
    Xn = X.head(5).copy()
    Xn["g"] = pd.Categorical(["zzz", None, "a", "b", "c"])
    Xn.loc[Xn.index[0], "x1"] = np.nan
    leaf = tree.apply(Xn)
    assert set(leaf) <= set(tree.leaves_)


def test_bool_and_string_columns_are_factors() -> None:
    X, y = _toy()
    b = X["x1"].to_numpy() > 0.3
    s = X["g"].astype(str).astype(object)
    t_bool = CTree().fit(pd.DataFrame({"b": b, "s": s}), y)
    t_ref = CTree().fit(pd.DataFrame({"b": b.astype(float), "s": X["g"]}), y)
    np.testing.assert_allclose(_root_stats(t_bool)["statistic"], _root_stats(t_ref)["statistic"], rtol=1e-12)
    lv = t_bool.nodes_["split_levels"].dropna()
    assert all(set(d) in ({False, True}, set("abcd")) for d in lv)


def test_unused_categories_are_dropped_like_r() -> None:
    X, y = _toy()
    X2 = X.copy()
    X2["o"] = X["o"].cat.add_categories(["zero"]).cat.reorder_categories(["zero", "lo", "mi", "hi"])
    pd.testing.assert_frame_equal(CTree().fit(X, y).nodes_, CTree().fit(X2, y).nodes_)


def test_factor_with_too_many_levels_raises() -> None:
    rng = np.random.default_rng(0)
    lv = rng.integers(0, 35, size=2000)
    X = pd.DataFrame({"many": [f"L{i:02d}" for i in lv]})
    y = lv * 0.3 + rng.normal(size=2000)
    with pytest.raises(ParameterError, match="30.*[Mm]erge"):
        CTree().fit(X, y)


def test_maximum_statistics() -> None:
    X, y = _toy()
    q = _root_stats(CTree().fit(X, y))
    mx = _root_stats(CTree(teststat="maximum", random_state=0).fit(X, y))
    for v in ("x1", "x2", "o"):  # PQ = 1: maximum = sqrt(quadratic)
        assert mx.at[v, "statistic"] == pytest.approx(np.sqrt(q.at[v, "statistic"]), rel=1e-12)
        assert mx.at[v, "p_value"] == pytest.approx(q.at[v, "p_value"], rel=1e-6, abs=1e-12)
    assert 0 <= mx.at["g", "p_value"] <= 1
    t = CTree(splitstat="maximum").fit(X, y)
    assert t.nodes_.at[1, "split_feature"] == CTree().fit(X, y).nodes_.at[1, "split_feature"]


def test_maxdepth_and_minsplit() -> None:
    X, y = _toy()
    assert CTree(maxdepth=1).fit(X, y).nodes_["depth"].max() == 1
    t = CTree(minsplit=1e9).fit(X, y)
    assert len(t.nodes_) == 1 and t.criteria_.empty


# -------------------------------------------------------------- text and rules


def test_print_matches_partykit_layout() -> None:
    X, y = load_data("mixed_n300")
    txt = CTree().fit(X, y).to_text()
    ref = (FIX / "mixed_n300__default_print.txt").read_text()
    body = ref.split("Fitted party:")[1].strip().splitlines()
    for line in body:
        assert line.rstrip() in txt
    assert str(CTree().fit(X, y)) == txt


def test_rules() -> None:
    X, y = load_data("mixed_n300")
    t = CTree().fit(X, y)
    assert t.rules(1) == "(all)"
    assert t.rules(4) == "g in {centre, east} & o <= mid & a <= -0.69932"
    with pytest.raises(ParameterError, match="Unknown node"):
        t.rules(99)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "kwargs,phrase",
    [
        (dict(alpha=0), "alpha"),
        (dict(alpha=1.5), "alpha"),
        (dict(minsplit=-1), "minsplit"),
        (dict(minbucket=-2), "minbucket"),
        (dict(testtype="MonteCarlo"), "testtype"),
        (dict(teststat="median"), "teststat"),
        (dict(splitstat="x"), "splitstat"),
        (dict(maxdepth=-1), "maxdepth"),
    ],
)
def test_bad_parameters(kwargs: dict, phrase: str) -> None:
    X, y = _toy(50)
    with pytest.raises(ParameterError, match=phrase):
        CTree(**kwargs).fit(X, y)


def test_bad_data() -> None:
    X, y = _toy(50)
    with pytest.raises(DataError, match="DataFrame"):
        CTree().fit(X.to_numpy(), y)
    with pytest.raises(DataError, match="empty"):
        CTree().fit(X.iloc[:0], y[:0])
    with pytest.raises(DataError, match="rows"):
        CTree().fit(X, y[:-1])
    y2 = y.copy()
    y2[3] = np.nan
    with pytest.raises(DataError, match="dropped"):
        CTree().fit(X, y2)
    with pytest.raises(DataError, match="non-negative"):
        CTree().fit(X, y, sample_weight=-np.ones(len(y)))
    with pytest.raises(DataError, match="sample_weight"):
        CTree().fit(X, y, sample_weight=np.ones(3))
    with pytest.raises(NotFittedError, match="fit"):
        CTree().predict(X)
    t = CTree().fit(X, y)
    with pytest.raises(FeatureError, match="x1"):
        t.predict(X.drop(columns="x1"))
    for exc in (DataError, ParameterError, NotFittedError, FeatureError):
        assert issubclass(exc, ValueError)


# ------------------------------------------------------------ randomised checks


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(30, 300),
    nan_frac=st.sampled_from([0.0, 0.1]),
    weighted=st.booleans(),
    majority=st.booleans(),
)
def test_random_data_invariants(seed: int, n: int, nan_frac: float, weighted: bool, majority: bool) -> None:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "k": rng.integers(0, 5, size=n).astype(float),
            "g": pd.Categorical(rng.choice(list("pqr"), size=n)),
        }
    )
    y = X["a"].to_numpy() + (X["g"] == "q").to_numpy() + rng.normal(size=n)
    if nan_frac:
        X.loc[rng.uniform(size=n) < nan_frac, "a"] = np.nan
    w = rng.integers(0, 3, size=n).astype(float) if weighted else None
    tree = CTree(alpha=0.3, minbucket=3, majority=majority, random_state=seed).fit(X, y, sample_weight=w)
    nodes = tree.nodes_
    # pre-order ids: each child id exceeds its parent, children are consecutive subtrees
    for nid, row in nodes.iterrows():
        if row["children"]:
            c1, c2 = row["children"]
            assert c1 == nid + 1 and c2 > c1
            assert nodes.at[c1, "n_obs"] + nodes.at[c2, "n_obs"] == row["n_obs"]
    leaf = tree._train_leaf
    assert set(np.unique(leaf)) <= set(tree.leaves_)
    if majority:
        np.testing.assert_array_equal(tree.apply(X), leaf)
    # root statistic of a numeric covariate = (W - 1) r^2 over the non-missing rows
    root = tree.criteria_[tree.criteria_["node"] == 1].set_index("variable")
    if "k" in root.index:
        ww = np.ones(n) if w is None else w
        x = X["k"].to_numpy()
        W = ww.sum()
        xm, ym = ww @ x / W, ww @ y / W
        r2 = (ww @ ((x - xm) * (y - ym))) ** 2 / ((ww @ (x - xm) ** 2) * (ww @ (y - ym) ** 2))
        assert root.at["k", "statistic"] == pytest.approx((W - 1) * r2, rel=1e-8)


def test_many_level_factor_ordering_search_matches_exhaustive(monkeypatch: pytest.MonkeyPatch) -> None:
    import fme._trees.ctree_stats as S

    rng = np.random.default_rng(8)
    lv = rng.integers(0, 10, size=1500)
    X = pd.DataFrame({"f": pd.Categorical([f"L{i}" for i in lv])})
    y = rng.normal(size=10)[lv] + rng.normal(size=1500)
    exhaustive = CTree(minbucket=1, maxdepth=1).fit(X, y).nodes_.at[1, "split_levels"]
    monkeypatch.setattr(S, "EXHAUSTIVE_MAX_LEVELS", 2)
    ordered = CTree(minbucket=1, maxdepth=1).fit(X, y).nodes_.at[1, "split_levels"]
    assert exhaustive == ordered
    assert set(exhaustive.values()) == {1, 2}
    assert exhaustive["L0"] == 1  # first level always goes to child 1
    # object columns of booleans are factors too
    Xb = pd.DataFrame({"b": pd.Series(lv > 4, dtype=object)})
    tb = CTree(maxdepth=1).fit(Xb, y)
    tf = CTree(maxdepth=1).fit(pd.DataFrame({"b": (lv > 4).astype(float)}), y)
    assert tb._covs[0].kind == "factor" and tb._covs[0].levels == [False, True]
    assert tb.criteria_["statistic"].iloc[0] == pytest.approx(tf.criteria_["statistic"].iloc[0], rel=1e-12)


# ------------------------------------------------------------------ argument types up front
def test_ctree_refuses_complex_covariate() -> None:
    X = pd.DataFrame({"a": np.arange(30.0), "z": np.arange(30.0) + 1j})
    with pytest.raises(DataError, match=r"column\(s\) \['z'\] of `X` are complex-valued"):
        CTree().fit(X, np.arange(30.0))


@pytest.mark.parametrize(
    "y, w, culprit",
    [
        (["a"] * 30, None, "y must be the numeric response"),
        (np.arange(30.0) + 1j, None, "y must be the numeric response"),
        (np.arange(30.0), ["1"] * 30, "sample_weight must be non-negative case weights"),
    ],
)
def test_ctree_text_response_or_weights(y, w, culprit) -> None:
    X = pd.DataFrame({"a": np.arange(30.0)})
    with pytest.raises(DataError, match=culprit):
        CTree().fit(X, y, sample_weight=w)


def test_ctree_random_state_as_text() -> None:
    X = pd.DataFrame({"a": np.arange(30.0)})
    with pytest.raises(ParameterError, match="random_state must be None, an int or a numpy Generator, got str"):
        CTree(random_state="42").fit(X, np.arange(30.0))
