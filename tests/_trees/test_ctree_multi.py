"""CTree with a multivariate response (fme._trees.ctree_multi): the statistics equal an independent computation
of the CTREE spec's formulas (ctree-spec.md §2, §3.1, §3.3, §5.1), written here in plain NumPy from the spec's
text: T = vec(sum_i w_i g(z_i) h_i^T), mu = vec(s_g e_h^T), Sigma = V_h (x) [W/(W-1) C_g - s_g s_g^T/(W-1)],
the quadratic form with the Moore-Penrose inverse (relative eigenvalue threshold) and the maximum statistic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fme import CTree

TOL = np.sqrt(np.finfo(float).eps)


def _g(col: pd.Series) -> np.ndarray:
    """The regression function of §3.3: raw values (numeric), scores 1..K (ordered), indicators (unordered)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        levels = [lv for lv in col.cat.categories if lv in set(col)]
        codes = pd.Index(levels).get_indexer(col.astype(object))
        if col.cat.ordered:
            return (codes + 1.0)[:, None]
        return (codes[:, None] == np.arange(len(levels))[None, :]).astype(float)
    return col.to_numpy(dtype=float)[:, None]


def _moments(g: np.ndarray, h: np.ndarray, w: np.ndarray):
    W = w.sum()
    T = ((g * w[:, None]).T @ h).ravel(order="F")
    eh = w @ h / W
    hc = h - eh
    Vh = (hc * w[:, None]).T @ hc / W
    sg = w @ g
    Cg = (g * w[:, None]).T @ g
    mu = np.outer(sg, eh).ravel(order="F")
    Sigma = np.kron(Vh, W / (W - 1) * Cg - np.outer(sg, sg) / (W - 1))
    return T, mu, Sigma


def _quadratic(d: np.ndarray, Sigma: np.ndarray) -> tuple[float, int]:
    lam, vec = np.linalg.eigh(Sigma)
    keep = lam >= lam.max() * TOL
    proj = vec[:, keep].T @ d
    return float(np.sum(proj**2 / lam[keep])), int(keep.sum())


def _maximum(d: np.ndarray, Sigma: np.ndarray) -> float:
    diag = np.diag(Sigma)
    good = diag > TOL
    return float(np.max(np.abs(d[good]) / np.sqrt(diag[good])))


def spec_test(col: pd.Series, h: np.ndarray, w: np.ndarray, teststat: str) -> tuple[float, int]:
    T, mu, Sigma = _moments(_g(col), h, w)
    if teststat == "maximum":
        return _maximum(T - mu, Sigma), 0
    return _quadratic(T - mu, Sigma)


def spec_split(col: pd.Series, h: np.ndarray, w: np.ndarray, mb: float, splitstat: str):
    """The best left set of §5.1-§5.3: cut value (numeric), last level index (ordered) or the set of levels."""
    W = w.sum()
    eh = w @ h / W
    hc = h - eh
    Vh = (hc * w[:, None]).T @ hc / W
    if isinstance(col.dtype, pd.CategoricalDtype) and not col.cat.ordered:
        levels = [lv for lv in col.cat.categories if lv in set(col)]
        cands = []
        for j in range(1, 2 ** (len(levels) - 1)):
            cands.append({levels[k] for k in range(1, len(levels)) if (j >> (k - 1)) & 1})
        masks = [col.isin(c).to_numpy() for c in cands]
    else:
        values = col.cat.codes.to_numpy() + 1 if isinstance(col.dtype, pd.CategoricalDtype) else col.to_numpy()
        cands = list(np.unique(values))
        masks = [values <= u for u in cands]
    best, best_c = None, 0.0
    for cand, left in zip(cands, masks):
        nl = w[left].sum()
        if nl < mb or W - nl < mb:
            continue
        d = (w[left, None] * hc[left]).sum(axis=0)
        Sigma = Vh * nl * (W - nl) / (W - 1)
        c = _maximum(d, Sigma) if splitstat == "maximum" else _quadratic(d, Sigma)[0]
        if c > best_c:
            best, best_c = cand, c
    return best


def _fixture(kind: str, seed: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = 150
    if kind == "numeric":
        X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 9, n).astype(float), "c": rng.normal(size=n)})
        s = X["a"] > 0.3
    elif kind == "ordered":
        X = pd.DataFrame(
            {
                "o": pd.Categorical(
                    rng.choice(["lo", "mid", "hi", "top"], n), ["lo", "mid", "hi", "top"], ordered=True
                ),
                "p": pd.Categorical(rng.choice(["a", "b", "c"], n), ["a", "b", "c"], ordered=True),
                "x": rng.normal(size=n),
            }
        )
        s = X["o"].cat.codes >= 2
    else:
        X = pd.DataFrame(
            {
                "f": pd.Categorical(rng.choice(list("pqrst"), n)),
                "g": pd.Categorical(rng.choice(["u", "v"], n)),
                "x": rng.normal(size=n),
            }
        )
        s = X["f"].isin(["q", "s"])
    s = s.to_numpy(dtype=float)
    # three correlated responses, two shifted by the same split, on different units
    e = rng.normal(size=(n, 3))
    Y = np.column_stack([2.0 * s + e[:, 0], 10.0 * (s + 0.5 * e[:, 0] + e[:, 1]), 0.01 * e[:, 2]])
    w = rng.integers(1, 4, n).astype(float)  # integer case weights (partykit's weights)
    return X, Y, w


@pytest.mark.parametrize("kind", ["numeric", "ordered", "unordered"])
@pytest.mark.parametrize("stat", ["quadratic", "maximum"])
def test_statistics_equal_the_spec_formulas(kind, stat):
    X, Y, w = _fixture(kind, seed={"numeric": 1, "ordered": 2, "unordered": 3}[kind])
    # maximum-type p-values of PQ > 1 are quasi-Monte Carlo integrals (slow, random): the statistics alone
    testtype = "teststatistic" if stat == "maximum" else "bonferroni"
    tree = CTree(
        teststat=stat, splitstat=stat, maxdepth=2, testtype=testtype, mincriterion=2.0 if stat == "maximum" else None
    )
    tree = tree.fit(X, Y, sample_weight=w)
    crit = tree.criteria_
    assert (tree.nodes_["split_feature"].notna()).sum() >= 1  # the shared split is found
    for node in (1, 2):
        if node not in set(crit["node"]):
            continue
        if node == 1:
            mask = np.ones(len(X), dtype=bool)
        else:
            feat = tree.nodes_.at[1, "split_feature"]
            mask = _left(tree, X, feat)
        got = crit[crit["node"] == node].set_index("variable")
        m = len(got)
        for var in X.columns:
            c, rank = spec_test(X[var][mask].reset_index(drop=True), Y[mask], w[mask], stat)
            assert got.at[var, "statistic"] == pytest.approx(c, rel=1e-10, abs=1e-10), (node, var)
            if stat == "quadratic":  # Šidák-adjusted chi-squared p-value with df = rank of Sigma (§3.2, §4.1)
                p = stats.chi2.sf(c, rank)
                assert got.at[var, "p_value"] == pytest.approx(-np.expm1(m * np.log1p(-p)), abs=1e-10), (node, var)


def _left(tree: CTree, X: pd.DataFrame, feat: str) -> np.ndarray:
    row = tree.nodes_.loc[1]
    if isinstance(row["split_levels"], dict):
        return X[feat].map(lambda v: row["split_levels"].get(v) == 1).to_numpy(dtype=bool)
    col = X[feat]
    values = col.cat.codes.to_numpy() + 1 if isinstance(col.dtype, pd.CategoricalDtype) else col.to_numpy()
    return values <= row["split_value"]


@pytest.mark.parametrize("kind", ["numeric", "ordered", "unordered"])
@pytest.mark.parametrize("stat", ["quadratic", "maximum"])
def test_root_split_is_the_spec_maximum(kind, stat):
    X, Y, w = _fixture(kind, seed={"numeric": 1, "ordered": 2, "unordered": 3}[kind])
    tree = CTree(teststat=stat, splitstat=stat, maxdepth=1, minbucket=7, random_state=0).fit(X, Y, sample_weight=w)
    feat = tree.nodes_.at[1, "split_feature"]
    assert feat is not None
    mb = max(7, np.ceil(0.01 * w.sum()))
    best = spec_split(X[feat], Y, w, int(mb), stat)
    levels = tree.nodes_.at[1, "split_levels"]
    if isinstance(levels, dict):
        # partykit's child 2 holds the levels whose bit is set (the left set L of the enumeration)
        assert {lv for lv, c in levels.items() if c == 2} == best
    else:
        assert tree.nodes_.at[1, "split_value"] == best


def test_one_column_response_is_the_univariate_tree():
    X, Y, w = _fixture("numeric", seed=1)
    a = CTree().fit(X, Y[:, :1], sample_weight=w)
    b = CTree().fit(X, Y[:, 0], sample_weight=w)
    pd.testing.assert_frame_equal(a.nodes_, b.nodes_)
    pd.testing.assert_frame_equal(a.criteria_, b.criteria_)


def test_quadratic_statistic_is_invariant_to_column_scales():
    # (T - mu)^T Sigma^+ (T - mu) does not change when a column is rescaled, as long as no eigenvalue crosses the
    # relative threshold of the MP inverse: scales spanning 1e9 would drop the smallest column (fme.came's
    # standardize=True avoids that)
    X, Y, w = _fixture("unordered", seed=3)
    a = CTree().fit(X, Y, sample_weight=w)
    b = CTree().fit(X, Y * np.array([3.0, 0.5, 7.0]), sample_weight=w)
    np.testing.assert_allclose(a.criteria_["statistic"], b.criteria_["statistic"], rtol=1e-9)
    assert a.nodes_["split_feature"].tolist() == b.nodes_["split_feature"].tolist()
    # node means are per column
    assert isinstance(a.nodes_.at[1, "mean"], tuple) and len(a.nodes_.at[1, "mean"]) == 3
    np.testing.assert_allclose(a.nodes_.at[1, "mean"], w @ Y / w.sum(), rtol=1e-12)
