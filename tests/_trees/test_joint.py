"""Joint regions (fme._trees.joint): fme.came of a list of effects grows one tree on their fMEs; per-effect
leaves, one Holm adjustment across effects, the explained share of each effect's heterogeneity."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

import fme
from fme._trees.joint import EQUAL_TAILED, UNIFIED, heterogeneity_row
from fme._trees.unified import unified_interval
from fme.exceptions import DataError, FMEError, ParameterError

FEATURES = ["z1", "z2", "g"]


def _frame(n: int = 800, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cols = {c: rng.normal(size=n) for c in ("xa", "xb", "xc", "z1", "z2", "u1", "u2", "u3")}
    cols["g"] = rng.choice(["p", "q", "r"], n)
    return pd.DataFrame(cols)


def _model(d: pd.DataFrame) -> np.ndarray:
    # fME of xa: 1 + 2 s + u1, of xb: -1 + 1.5 s + u2 (s = 1{z1 > 0}), of xc: 0.5 + u3 (no structure)
    s = (d["z1"] > 0).astype(float)
    return (d.xa * (1 + 2 * s + d.u1) + d.xb * (-1 + 1.5 * s + d.u2) + d.xc * (0.5 + d.u3)).to_numpy()


def _effects(X: pd.DataFrame, model=_model) -> list[fme.FMEResult]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a function model: the fixed-model interval, said by a warning
        return [fme.fme(model, X, {f: 1.0}) for f in ("xa", "xb", "xc")]


@pytest.fixture(scope="module")
def effects() -> list[fme.FMEResult]:
    return _effects(_frame())


@pytest.fixture(scope="module")
def joint(effects) -> fme.JointPartitionResult:
    return fme.came(effects, features=FEATURES)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"honest": False}, {"method": "cart", "max_depth": 2}, {"n_partitions": 2, "honest": False}],
)
def test_a_one_effect_list_is_came_of_the_effect(effects, kwargs):
    one = fme.came([effects[0]], features=FEATURES, **kwargs)
    ref = fme.came(effects[0], features=FEATURES, **kwargs)
    assert type(one) is fme.PartitionResult
    pd.testing.assert_frame_equal(one.leaves, ref.leaves)
    pd.testing.assert_frame_equal(one.tree.nodes_, ref.tree.nodes_)
    assert one.leaf_ids == ref.leaf_ids


def test_the_shared_split_and_the_leaves_per_effect(joint, effects):
    assert isinstance(joint, fme.PartitionResult)
    assert joint.root_split == "z1" and abs(joint.tree.nodes_.at[1, "split_value"]) < 0.2
    labels = [e.describe_steps() for e in effects]
    assert joint.effect_labels == labels
    leaves = joint.leaves
    assert len(leaves) == len(joint.leaf_ids) * 3
    assert leaves["effect"].tolist() == labels * len(joint.leaf_ids)  # leaf-major
    assert list(leaves.columns) == ["node", "effect"] + [c for c in joint.parts[0].leaves.columns if c != "node"]
    # each effect's figures in its own unit from the estimation rows of its leaf
    est = joint.estimated_on
    for k, e in enumerate(effects):
        fm = e.results.loc[est, "fme"]
        node = joint.leaf_of_row.loc[est]
        rows = leaves[leaves["effect"] == labels[k]].set_index("node")
        for leaf in joint.leaf_ids:
            vals = fm[node == leaf].to_numpy()
            assert rows.at[leaf, "n"] == vals.size
            assert rows.at[leaf, "came"] == pytest.approx(vals.mean(), rel=1e-12)
            assert rows.at[leaf, "sd_fme"] == pytest.approx(vals.std(ddof=1), rel=1e-12)
    assert list(joint.root["effect"]) == labels and list(joint.estimation_root["effect"]) == labels


def test_leaf_tests_share_one_holm_adjustment(joint):
    t = joint.test()
    assert len(t) == 3 * len(joint.leaf_ids) * (len(joint.leaf_ids) - 1) // 2
    assert set(t["effect"]) == set(joint.effect_labels)
    np.testing.assert_allclose(t["p_value_adj"], multipletests(t["p_value"], method="holm")[1], rtol=1e-12)
    single = joint.parts[2].test(multcomp=None)
    np.testing.assert_allclose(t.loc[t["effect"] == joint.effect_labels[2], "p_value"], single["p_value"])
    assert set(t.global_test) == set(joint.effect_labels) and t.honest
    with pytest.raises(ParameterError, match="multcomp"):
        joint.test(multcomp="sidak")


def test_heterogeneity_is_the_variance_decomposition(joint, effects):
    het = joint.heterogeneity()
    assert list(het["effect"]) == joint.effect_labels
    est = joint.estimated_on
    node = joint.leaf_of_row.loc[est].to_numpy()
    for k, e in enumerate(effects):
        y = e.results.loc[est, "fme"].to_numpy()
        total = np.mean((y - y.mean()) ** 2)
        within = np.mean((y - pd.Series(y).groupby(node).transform("mean").to_numpy()) ** 2)
        r = het.iloc[k]
        assert r["variance"] == pytest.approx(total, rel=1e-10)
        assert r["within_variance"] == pytest.approx(within, rel=1e-9)
        assert r["share_explained"] == pytest.approx(1 - within / total, rel=1e-9)
        L = len(np.unique(node))
        f = ((total - within) * y.size / (L - 1)) / (within * y.size / (y.size - L))
        assert r["statistic"] == pytest.approx(f, rel=1e-9)
        assert r["p_value"] == pytest.approx(stats.f.sf(f, L - 1, y.size - L), rel=1e-9, abs=1e-300)
        assert r["share_ci_low"] <= r["share_explained"] <= r["share_ci_high"]
    # two effects share the split; the third has no structure: its interval reaches 0
    assert het["share_explained"].iloc[0] > 0.3 and het["share_ci_low"].iloc[1] > 0.2
    assert het["share_ci_low"].iloc[2] == 0.0 and het["p_value"].iloc[2] > 0.05


def test_share_interval_is_the_unified_interval_of_the_noncentrality(joint):
    r = joint.heterogeneity(conf_level=0.9).iloc[0]
    n, d1, d2 = r["n"], r["df1"], r["df2"]
    iv = unified_interval(r["statistic"], d1, d2, 0.9)
    assert r["interval"] == UNIFIED and r["note"] == ""
    assert r["share_ci_low"] == pytest.approx(iv.lambda_low / (iv.lambda_low + n), rel=1e-12)
    assert r["share_ci_high"] == pytest.approx(iv.lambda_high / (iv.lambda_high + n), rel=1e-12)


def test_cart_sums_the_squared_error_over_effects(effects):
    part = fme.came(effects, features=FEATURES, method="cart", max_depth=1, honest=False)
    Y = np.column_stack([(e.results["fme"] - e.results["fme"].mean()) / e.results["fme"].std(ddof=0) for e in effects])
    z = effects[0].data["z1"].to_numpy()
    # the root split minimises the summed within-child squared error of the standardised fMEs
    cuts = np.unique(z)[10:-10]
    sse = [sum(((Y[m] - Y[m].mean(0)) ** 2).sum() for m in (z <= c, z > c)) for c in cuts]
    best = cuts[int(np.argmin(sse))]
    assert part.root_split == "z1"
    assert part.tree.nodes_.at[1, "split_value"] == pytest.approx(
        (best + np.unique(z)[np.searchsorted(np.unique(z), best) + 1]) / 2
    )


def test_standardize_keeps_a_large_unit_from_dominating():
    X = _frame(600, seed=5)

    def big(d: pd.DataFrame) -> np.ndarray:
        # the third effect on a 1000-fold unit, a little of it explained by z2 (about 7 % of its variance, where
        # z1 explains about half of each of the other two)
        s = (d["z1"] > 0).astype(float)
        third = 1000.0 * (0.5 + d.u3 + 0.6 * (d["z2"] > 0.5))
        return (d.xa * (1 + 2 * s + d.u1) + d.xb * (-1 + 1.5 * s + d.u2) + d.xc * third).to_numpy()

    eff = _effects(X, big)
    scaled = fme.came(eff, features=FEATURES, method="cart", max_depth=1, honest=False)
    raw = fme.came(eff, features=FEATURES, method="cart", max_depth=1, honest=False, standardize=False)
    assert raw.root_split == "z2" and scaled.root_split == "z1"


def test_summary_predict_and_plot(joint):
    text = joint.summary()
    assert text.count("cAME =") == 3 * len(joint.leaf_ids) and "share explained" in text and "honest" in text
    assert text.count("(unified (Feldman-Cousins) interval)") == 3
    new = joint.effects_list[0].data.head(4)
    pred = joint.predict(new)
    assert len(pred) == 12 and set(pred["effect"]) == set(joint.effect_labels)
    disp = joint.plot()
    assert set(disp.leaf_labels_) == set(joint.leaf_ids)
    for leaf, box in disp.leaf_labels_.items():
        assert all(lab in box.get_text() for lab in joint.effect_labels)
    with pytest.raises(FMEError, match="parts"):
        joint.joint_estimates()


def test_effects_must_share_rows_and_model(effects):
    X = _frame()
    other_rows = _effects(X.iloc[:700])[1]
    with pytest.raises(DataError, match=r"effects\[1\].*other rows"):
        fme.came([effects[0], other_rows], features=FEATURES)

    def other(d: pd.DataFrame) -> np.ndarray:
        return 2.0 * _model(d)

    with pytest.raises(DataError, match=r"effects\[2\].*another model"):
        fme.came([effects[0], effects[1], _effects(X, other)[2]], features=FEATURES)
    with pytest.raises(ParameterError, match="max_sd"):
        fme.came(effects, features=FEATURES, max_sd=1.0)
    with pytest.raises(ParameterError, match="n_splits"):
        fme.came(effects, features=FEATURES, n_splits=3)
    with pytest.raises(ParameterError, match="empty list"):
        fme.came([], features=FEATURES)
    with pytest.raises(DataError, match=r"effects\[1\] must be"):
        fme.came([effects[0], "x"], features=FEATURES)


def test_stability_refits_one_effect(joint):
    with pytest.raises(ParameterError, match=r"parts\[k\]"):
        fme.partition_stability(joint)


def test_heterogeneity_of_regions_that_separate_the_fmes_exactly():
    # fMEs constant within each region (within-variance at rounding level): F is astronomically large, where the
    # noncentral F distribution's CDF is NaN far out; the share is 1 and its interval reaches it
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"xa": rng.normal(size=400), "z": rng.normal(size=400), "g": rng.choice(list("pqr"), 400)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        effs = [fme.fme(lambda d: (d.xa * (1.1 + 2 * (d.g == "p")) + d.z).to_numpy(), X, {f: 1.0}) for f in ("xa", "z")]
    joint = fme.came(effs, features=["g"])
    het = joint.heterogeneity()
    r = het.iloc[0]
    assert r["share_explained"] == pytest.approx(1.0, abs=1e-12)
    assert 0.999 < r["share_ci_low"] <= r["share_ci_high"] <= 1.0
    assert "share explained" in joint.summary()


@pytest.mark.parametrize(
    ("f_value", "df1", "df2", "kind"),
    [
        (10.0, 100, 1e5, UNIFIED),
        (0.01, 100, 1000, UNIFIED),
        (1e9, 100, 100, EQUAL_TAILED),
        (2e14, 1, 50, EQUAL_TAILED),  # beyond rounding: the closed form from the denominator's chi-square
    ],
)
def test_share_bounds_where_scipys_noncentral_f_fails(f_value, df1, df2, kind):
    # scipy's ncf.cdf is NaN in parts of these ranges; the unified interval sums the density itself and needs
    # only the CDF at its bounds; at a huge noncentrality the equal-tailed interval is reported
    n = df1 + df2 + 1
    ss_total = 1.0
    ss_within = 1.0 / (1.0 + f_value * df1 / df2)
    leaves = pd.DataFrame(
        {"n": [n - df1] + [1] * int(df1), "sd_fme": [np.sqrt(ss_within / (n - df1 - 1))] + [0.0] * int(df1)}
    )
    root = pd.Series({"n": n, "sd_fme": np.sqrt(ss_total / (n - 1))})
    r = heterogeneity_row(leaves, root, 0.95)
    assert r["statistic"] == pytest.approx(f_value, rel=1e-9)
    lo, hi = r["share_ci_low"], r["share_ci_high"]
    assert 0.0 <= lo <= hi <= 1.0 and r["interval"] == kind
    if kind == UNIFIED:
        iv = unified_interval(r["statistic"], df1, df2, 0.95)
        assert (lo, hi) == (iv.lambda_low / (iv.lambda_low + n), iv.lambda_high / (iv.lambda_high + n))
        assert hi > 0 and r["note"] == ""
        return
    assert "equal-tailed" in r["note"]
    for bound, target in ((lo, 0.975), (hi, 0.025)):
        lam = n * bound / (1.0 - bound)
        # an independent P(F <= f | lambda): the numerator's noncentral chi-square simulated, exactly
        rng = np.random.default_rng(0)
        num = rng.noncentral_chisquare(df1, lam, 200_000) / df1
        den = rng.chisquare(df2, 200_000) / df2
        assert np.mean(num / den <= f_value) == pytest.approx(target, abs=0.004)


def test_heterogeneity_of_constant_regions_and_constant_fmes_says_why_it_has_no_interval():
    root = pd.Series({"n": 10, "sd_fme": 1.0})
    # every region's fMEs constant: within-region variance exactly 0, the share 1, F infinite
    r = heterogeneity_row(pd.DataFrame({"n": [4, 6], "sd_fme": [0.0, 0.0]}), root, 0.95)
    assert r["share_explained"] == 1.0 and r["within_variance"] == 0.0
    assert np.isnan([r["share_ci_low"], r["share_ci_high"], r["statistic"], r["p_value"]]).all()
    assert "within-region variance 0" in r["note"] and r["interval"] == ""
    # fMEs that do not vary: nothing to explain
    r = heterogeneity_row(pd.DataFrame({"n": [4, 6], "sd_fme": [0.0, 0.0]}), pd.Series({"n": 10, "sd_fme": 0.0}), 0.95)
    assert np.isnan(r["share_explained"]) and np.isnan(r["share_ci_low"]) and "do not vary" in r["note"]


def test_effects_on_other_data_with_the_same_predictions_are_refused(effects):
    # the model ignores z2: another z2 leaves f(x) unchanged, but the tree would split effects[1]'s fMEs on the
    # first effect's z2
    X = effects[1].data.copy()
    X["z2"] = X["z2"].to_numpy()[::-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other = fme.fme(_model, X, {"xb": 1.0})
    with pytest.raises(DataError, match=r"effects\[1\].*other data"):
        fme.came([effects[0], other], features=FEATURES)


def test_summary_states_the_confidence_level(effects):
    joint = fme.came(effects[:2], features=FEATURES, conf_level=0.57)
    assert "57% CIs" in joint.summary().splitlines()[0]


def test_the_caller_s_effects_are_unchanged_and_a_classifier_s_leaves_name_the_class():
    from sklearn.linear_model import LogisticRegression

    X = _frame(500)
    y = (X["xa"] * (X["z1"] > 0) + X["xb"] > 0).astype(int)
    cols = ["xa", "xb", "z1", "z2"]
    clf = LogisticRegression().fit(X[cols], y)
    effs = [fme.fme(clf, X[cols], {f: 1.0}, target_class=1) for f in ("xa", "xb")]
    before = [(e.results.copy(), e.data.copy(), e.predictions.copy(), e.excluded.copy(), e.steps) for e in effs]
    joint = fme.came(effs, features=["z1", "z2"], honest=False)
    for e, (res, data, pred, exc, steps) in zip(effs, before):
        pd.testing.assert_frame_equal(e.results, res)
        pd.testing.assert_frame_equal(e.data, data)
        pd.testing.assert_frame_equal(e.predictions, pred)
        pd.testing.assert_frame_equal(e.excluded, exc)
        assert e.steps == steps
    one = fme.came(effs[0], features=["z1", "z2"], honest=False)
    assert set(joint.leaves["class"]) == set(one.leaves["class"]) == {"1"}
    # each effect's leaf cAME: the mean of its fMEs (probability of class 1) over the leaf's rows
    for k, e in enumerate(effs):
        rows = joint.leaves[joint.leaves["effect"] == joint.effect_labels[k]]
        for _, r in rows.iterrows():
            fm = e.results["fme"][joint.leaf_of_row == r["node"]]
            assert r["came"] == pytest.approx(fm.mean(), rel=1e-12)


@pytest.mark.parametrize("kwargs", [{"method": "cart", "max_depth": 2}, {}])
def test_an_effect_constant_up_to_rounding_does_not_steer_the_tree(kwargs):
    # the fME of xc is 0.5 on every row up to rounding: standardised to SD 1 its rounding noise would be split on
    X = _frame(600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        effs = [
            fme.fme(lambda d: (d.xa * (1 + 2 * (d.z1 > 0)) + 0.5 * d.xc).to_numpy(), X, {f: 1.0}) for f in ("xa", "xc")
        ]
    assert 0 < effs[1].results["fme"].std() < 1e-14
    joint = fme.came(effs, features=FEATURES, **kwargs)
    one = fme.came(effs[0], features=FEATURES, **kwargs)
    assert joint.leaf_ids == one.leaf_ids
    cols = ["parent", "is_leaf", "n", "split_feature", "split_value"]
    pd.testing.assert_frame_equal(joint.tree.nodes_[cols], one.tree.nodes_[cols])


def test_the_share_of_an_effect_constant_up_to_rounding_is_in_its_interval():
    X = _frame(600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        effs = [
            fme.fme(lambda d: (d.xa * (1 + 2 * (d.z1 > 0)) + 0.5 * d.xc).to_numpy(), X, {f: 1.0}) for f in ("xa", "xc")
        ]
    r = fme.came(effs, features=FEATURES).heterogeneity().iloc[1]
    assert r["variance"] < 1e-28
    assert 0.0 <= r["share_explained"] <= 1.0
    assert r["share_ci_low"] <= r["share_explained"] <= r["share_ci_high"]
