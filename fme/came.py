"""Conditional average marginal effects on feature subspaces (paper §5.5).

The fMEs of a model are partitioned into subspaces (hyperrectangles) where
they are homogeneous, by a tree grown with the fMEs as response and the
features as partitioning variables. Each subspace gets a conditional AME
(cAME), a conditional average NLM (cANLM), their SDs, coefficients of
variation CoV = SD / |mean| and t-based confidence intervals

    mean +- t(1 - alpha/2, n - 1) * SD / sqrt(n).

``method="ctree"`` uses :class:`fme.ctree.CTree` (partykit's CTREE, as the
paper); ``method="cart"`` a scikit-learn CART tree. ``n_partitions`` and
``max_sd`` reduce the grown tree as R's fmeffects does.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

import numpy as np
import pandas as pd

from ._cart import CartTree
from ._numfmt import fmt_bound
from ._tree_args import check_tree_params, string_columns
from ._stats import describe
from ._validation import check_conf_level, check_data, check_random_state, is_categorical
from .ctree import CTree
from .effects import FMEResult
from .exceptions import DataError, FeatureError, FMEError, ParameterError
from .inference import INFERENCE_COLUMNS, sample_inference

__all__ = ["came", "PartitionResult", "partition_stability"]

_LEAF_COLUMNS = ["node", "n", "came", "sd_fme", "cov_fme", "came_ci_low", "came_ci_high"]
_NLM_COLUMNS = ["canlm", "sd_nlm", "cov_nlm", "canlm_ci_low", "canlm_ci_high", "n_nlm", "median_nlm",
                "share_linear"]


def _figures(fmes: np.ndarray, nlms: np.ndarray | None, conf_level: float,
             linear_threshold: float = 0.9) -> dict[str, float]:
    d = describe(fmes, conf_level)
    row = {"n": int(d["n"]), "came": d["mean"], "sd_fme": d["sd"], "cov_fme": d["cov"],
           "came_ci_low": d["ci_low"], "came_ci_high": d["ci_high"]}
    if nlms is not None:
        # ignores undefined (NaN) NLMs and counts the rest; the t-interval of the mean is
        # truncated at 1, the NLM's upper bound (paper §5.4: NLM <= 1)
        e = describe(nlms, conf_level, upper=1.0)
        ok = nlms[~np.isnan(nlms)]
        row.update(canlm=e["mean"], sd_nlm=e["sd"], cov_nlm=e["cov"], canlm_ci_low=e["ci_low"],
                   canlm_ci_high=e["ci_high"], n_nlm=int(e["n"]),
                   median_nlm=float(np.median(ok)) if ok.size else np.nan,
                   share_linear=float(np.mean(ok >= linear_threshold)) if ok.size else np.nan)
    return row


class PartitionResult:
    """Subspaces with their cAMEs, returned by :func:`came`.

    Attributes
    ----------
    leaves : DataFrame
        One row per subspace in node order: node, n, came, sd_fme, cov_fme,
        came_ci_low, came_ci_high (the fixed-model t interval of §5.5),
        the cAME's std_error, statistic, p_value, conf_low, conf_high and
        ``inference`` under the effects' method (:mod:`fme.inference`: delta
        or bootstrap from the same per-row ingredients, or ``sample``, then
        equal to the §5.5 interval), (with NLMs) canlm, sd_nlm, cov_nlm,
        canlm_ci_low, canlm_ci_high (t-interval of the mean truncated at 1,
        the NLM's upper bound), n_nlm, median_nlm, share_linear (share of
        NLMs >= the result's ``nlm_linear_threshold``), and the readable ``rule``.
    root : Series
        The same figures for all evaluated rows (the global AME).
    tree : CTree or CartTree
        The fitted tree (before any reduction by ``n_partitions``/``max_sd``).
    leaf_ids : list of int
        Node ids of the subspaces (after reduction).
    leaf_of_row : Series
        Subspace (node id) of each evaluated row, indexed like ``effects.results``.
    effects : FMEResult
    features : list of str
        Partitioning variables.
    conf_level : float
    notes : list of str
        Remarks such as "single node: fewer rows than minsplit".
    params : dict
        The arguments of :func:`came` that grew and reduced the tree, as given
        (``features``, ``n_partitions``, ``max_sd``, ``standardize`` and the
        tree parameters), so the same partition can be refitted on other rows.
    """

    def __init__(self, effects: FMEResult, tree: Any, X: pd.DataFrame, leaf_ids: list[int],
                 tree_leaf: np.ndarray, conf_level: float, method: str, notes: list[str],
                 params: dict[str, Any] | None = None) -> None:
        self.params = dict(params or {})
        self.effects = effects
        self.tree = tree
        self.features = list(X.columns)
        self.leaf_ids = leaf_ids
        self._subspace = _subspace_lookup(tree, leaf_ids)
        self._tree_leaf = tree_leaf  # leaf of the grown tree per evaluated row
        self.leaf_of_row = pd.Series(self._subspace[tree_leaf], index=X.index, name="node")
        self.conf_level = conf_level
        self.method = method
        self.notes = notes
        self._X = X
        fmes = effects.results["fme"].to_numpy(dtype=float)
        nlms = effects.results["nlm"].to_numpy(dtype=float) if effects.has_nlm else None
        rows = []
        lin = getattr(effects, "nlm_linear_threshold", 0.9)
        node_of_row = self.leaf_of_row.to_numpy()
        # Uncertainty of each cAME from the effects' per-row ingredients (no new predictions).
        inf = effects.inference_rows if effects.inference_rows is not None else sample_inference(fmes)
        slot = {node: j for j, node in enumerate(leaf_ids)}
        codes = np.fromiter((slot[v] for v in node_of_row), dtype=np.int64, count=node_of_row.size)
        leaf_table = inf.average(codes, len(leaf_ids)).table(conf_level)
        for j, node in enumerate(leaf_ids):
            mask = node_of_row == node
            row = {"node": node, **_figures(fmes[mask], None if nlms is None else nlms[mask], conf_level, lin),
                   **leaf_table.iloc[j].to_dict()}
            row["rule"] = self.rule(node)
            rows.append(row)
        cols = _LEAF_COLUMNS + INFERENCE_COLUMNS + (_NLM_COLUMNS if nlms is not None else []) + ["rule"]
        self.leaves = pd.DataFrame(rows, columns=cols)
        root = {"node": 1, **_figures(fmes, nlms, conf_level, lin), **inf.average().table(conf_level).iloc[0].to_dict(),
                "rule": "(all)"}
        self.root = pd.Series(root)[cols]

    @property
    def nodes(self) -> pd.DataFrame:
        """Node table of the tree as reduced to the subspaces: the subspaces are
        its leaves (their subtrees dropped); same columns as ``tree.nodes_``."""
        nodes = self.tree.nodes_
        keep = set()
        for leaf in self.leaf_ids:
            cur = leaf
            while True:
                keep.add(int(cur))
                par = nodes.at[cur, "parent"]
                if pd.isna(par):
                    break
                cur = int(par)
        out = nodes.loc[sorted(keep)].copy()
        for leaf in self.leaf_ids:
            out.at[leaf, "is_leaf"] = True
            out.at[leaf, "children"] = ()
            out.at[leaf, "split_feature"] = None
            out.at[leaf, "split_levels"] = None
            out.at[leaf, "split_value"] = np.nan
        return out

    @property
    def root_split(self) -> str | None:
        """Feature of the first split of the (reduced) tree; None for a single subspace."""
        nodes = self.nodes
        return None if nodes.at[1, "is_leaf"] else str(nodes.at[1, "split_feature"])

    # ------------------------------------------------------------ subspaces
    def _path(self, node: int) -> list[tuple[int, int]]:
        """(parent, child) pairs from the root to ``node``."""
        nodes = self.tree.nodes_
        if node not in nodes.index:
            raise ParameterError(f"unknown node {node!r}; subspaces are {self.leaf_ids}.")
        path = []
        cur = int(node)
        while not pd.isna(nodes.at[cur, "parent"]):
            par = int(nodes.at[cur, "parent"])
            path.append((par, cur))
            cur = par
        return path[::-1]

    def describe(self, node: int) -> pd.DataFrame:
        """The subspace of ``node`` as a hyperrectangle (paper Table 3).

        Returns
        -------
        DataFrame
            One row per partitioning variable: ``kind``, ``low``/``high``
            (numeric: the subspace bounds, the global observed range where
            unrestricted, over all rows of the data, including rows left out
            as extrapolation; ``low_open`` says whether ``low`` is excluded),
            ``levels`` (categorical), ``range`` (readable), ``restricted``
            (whether a split on the path limits the feature), and the observed
            ``min``/``max`` of the subspace's rows.
        """
        X = self._X
        rows_in = self._rows_in(node)
        out = []
        bounds = self._bounds(node)
        full = self.effects.data
        for feat in self.features:
            # Unrestricted features span the whole data's range (paper Table 3), not only the evaluated rows.
            col = full[feat]
            sub = X[feat][rows_in]
            b = bounds.get(feat, [None, None, None])
            ordered = isinstance(col.dtype, pd.CategoricalDtype) and col.cat.ordered
            if is_categorical(col) and not ordered:
                all_levels = list(col.cat.categories) if isinstance(col.dtype, pd.CategoricalDtype) else sorted(
                    col.dropna().unique().tolist(), key=str)
                levels = [lv for lv in all_levels if b[2] is None or lv in b[2]]
                out.append({"feature": feat, "kind": "categorical", "low": np.nan, "high": np.nan, "low_open": False,
                            "levels": levels, "range": "{" + ", ".join(map(str, levels)) + "}",
                            "restricted": b[2] is not None, "min": np.nan, "max": np.nan})
                continue
            if isinstance(col.dtype, pd.CategoricalDtype):  # ordered factor: bounds are level positions
                cats = list(col.cat.categories)
                lo_i = 0 if b[0] is None else int(b[0])
                hi_i = len(cats) if b[1] is None else int(b[1])
                levels = cats[lo_i:hi_i]
                out.append({"feature": feat, "kind": "ordered", "low": np.nan, "high": np.nan, "low_open": False,
                            "levels": levels, "range": "{" + ", ".join(map(str, levels)) + "}",
                            "restricted": b[0] is not None or b[1] is not None, "min": np.nan, "max": np.nan})
                continue
            values = col.to_numpy(dtype=float)
            gmin, gmax = np.nanmin(values), np.nanmax(values)
            low = gmin if b[0] is None else b[0]
            high = gmax if b[1] is None else b[1]
            sv = sub.to_numpy(dtype=float)
            out.append({"feature": feat, "kind": "numeric", "low": low, "high": high, "low_open": b[0] is not None,
                        "levels": None, "range": f"{'(' if b[0] is not None else '['}{fmt_bound(low)}, {fmt_bound(high)}]",
                        "restricted": b[0] is not None or b[1] is not None,
                        "min": float(np.nanmin(sv)) if sv.size else np.nan,
                        "max": float(np.nanmax(sv)) if sv.size else np.nan})
        return pd.DataFrame(out).set_index("feature")

    def _bounds(self, node: int) -> dict[str, list]:
        """Per restricted feature: [exclusive lower, inclusive upper, allowed level set]."""
        nodes = self.tree.nodes_
        bounds: dict[str, list] = {}
        for par, child in self._path(node):
            feat = nodes.at[par, "split_feature"]
            first = nodes.at[par, "children"][0] == child
            b = bounds.setdefault(feat, [None, None, None])
            levels = nodes.at[par, "split_levels"]
            if isinstance(levels, dict):
                keep = {lv for lv, c in levels.items() if c == (1 if first else 2)}
                b[2] = keep if b[2] is None else b[2] & keep
            else:
                v = float(nodes.at[par, "split_value"])
                if first:
                    b[1] = v if b[1] is None else min(b[1], v)
                else:
                    b[0] = v if b[0] is None else max(b[0], v)
        return bounds

    def rule(self, node: int) -> str:
        """Compact rule of a subspace: one condition per restricted feature,
        e.g. ``"lstat <= 11.38 & rm <= 6.433"`` or ``"2.9 < x <= 4.1"``; bounds with 6 significant
        digits (:func:`fme._numfmt.fmt_bound`, as the tree's edge labels)."""
        parts = []
        for feat, (low, high, levels) in self._bounds(node).items():
            if levels is not None:
                col = self._X[feat]
                order = list(col.cat.categories) if isinstance(col.dtype, pd.CategoricalDtype) else sorted(levels, key=str)
                parts.append(f"{feat} in {{{', '.join(str(lv) for lv in order if lv in levels)}}}")
            elif isinstance(self._X[feat].dtype, pd.CategoricalDtype):
                cats = list(self._X[feat].cat.categories)
                lo = 0 if low is None else int(low)
                hi = len(cats) if high is None else int(high)
                parts.append(f"{feat} in {{{', '.join(map(str, cats[lo:hi]))}}}")
            elif low is not None and high is not None:
                parts.append(f"{fmt_bound(low)} < {feat} <= {fmt_bound(high)}")
            elif high is not None:
                parts.append(f"{feat} <= {fmt_bound(high)}")
            else:
                parts.append(f"{feat} > {fmt_bound(low)}")
        return " & ".join(parts) if parts else "(all)"

    def _rows_in(self, node: int) -> np.ndarray:
        """Boolean mask of evaluated rows in the subtree of ``node``."""
        nodes = self.tree.nodes_
        inside = set()
        stack = [int(node)]
        while stack:
            cur = stack.pop()
            inside.add(cur)
            stack.extend(int(c) for c in nodes.at[cur, "children"])
        return np.isin(self._tree_leaf, list(inside))

    def predict(self, new_rows: pd.DataFrame) -> pd.DataFrame:
        """Subspace, cAME and CI (and cANLM) for hypothetical observations.

        ``outside_observed`` flags rows outside the observed data of their
        subspace (a numeric value outside the rows' [min, max] there, or an
        unseen level): the cAME is then an extrapolation of the tree (paper
        §5.5, last paragraph); ``outside_features`` names the culprits.
        """
        check_data(new_rows, "new_rows")
        missing = [f for f in self.features if f not in map(str, new_rows.columns)]
        if missing:
            raise FeatureError(f"new_rows lack the partitioning feature(s) {missing}.")
        Xn = string_columns(new_rows, "new_rows")[self.features]
        node = self._subspace[np.asarray(self.tree.apply(Xn), dtype=int)]
        stats = self.leaves.set_index("node")
        cols = [c for c in stats.columns if c != "rule"]
        out = stats.loc[node, cols].set_index(new_rows.index)
        out.insert(0, "node", node)
        culprits = np.full(len(Xn), "", dtype=object)
        for leaf in np.unique(node):
            rows = node == leaf
            obs = self._X[self.leaf_of_row.to_numpy() == leaf]
            for feat in self.features:
                col, new = obs[feat], Xn.loc[rows, feat]
                if is_categorical(col):
                    bad = ~new.isin(set(col.dropna().unique().tolist())).to_numpy()
                else:
                    v = new.to_numpy(dtype=float)
                    bad = (v < np.nanmin(col.to_numpy(dtype=float))) | (v > np.nanmax(col.to_numpy(dtype=float)))
                idx = np.flatnonzero(rows)[bad]
                culprits[idx] = np.where(culprits[idx] == "", feat, culprits[idx] + ", " + feat)
        out["outside_observed"] = culprits != ""
        out["outside_features"] = culprits
        return out

    # ------------------------------------------------------------ display
    def summary(self) -> str:
        """Readable table of the subspaces with the global figures first."""
        def fmt(r: pd.Series) -> str:
            txt = (f"n = {int(r['n'])}, cAME = {r['came']:.4g} [{r['came_ci_low']:.4g}, {r['came_ci_high']:.4g}], "
                   f"CoV = {r['cov_fme']:.3g}")
            if "canlm" in r.index:
                txt += f", cANLM = {r['canlm']:.3g} [{r['canlm_ci_low']:.3g}, {r['canlm_ci_high']:.3g}]"
            return txt
        lines = [f"cAMEs of {self.effects.describe_steps()} ({self.method}, {int(self.conf_level * 100)}% CIs)",
                 f"  all rows: {fmt(self.root)}"]
        for _, r in self.leaves.iterrows():
            lines.append(f"  [{int(r['node'])}] {r['rule']}: {fmt(r)}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"PartitionResult(method={self.method!r}, n_leaves={len(self.leaf_ids)}, n={int(self.root['n'])})"

    def plot(self, **kwargs: Any) -> Any:
        """Draw the tree with per-leaf fME histograms (see :class:`fme.plotting.PartitionDisplay`)."""
        from .plotting import PartitionDisplay

        return PartitionDisplay.from_partition(self, **kwargs)


# ---------------------------------------------------------------- reduction
def _prune_sequence(tree: Any, fmes: np.ndarray, leaf_of_row: np.ndarray) -> list[list[int]]:
    """Greedy merging of sibling leaves, smallest pooled SD first (fmeffects' pruning).

    Returns the leaf sets from the grown tree down to the root.
    """
    nodes = tree.nodes_
    rows_of: dict[int, np.ndarray] = {}
    for node in nodes.index[::-1]:  # post-order accumulation: children have larger ids
        kids = nodes.at[node, "children"]
        rows_of[int(node)] = (np.flatnonzero(leaf_of_row == node) if not kids
                              else np.concatenate([rows_of[int(k)] for k in kids]))
    leaves = {int(i) for i in nodes.index[nodes["is_leaf"].to_numpy(dtype=bool)]}
    seq = [sorted(leaves)]
    while len(leaves) > 1:
        best, best_sd = None, np.inf
        for node in sorted(leaves):
            par = nodes.at[node, "parent"]
            if pd.isna(par):
                continue
            kids = nodes.at[int(par), "children"]
            if all(int(k) in leaves for k in kids):
                vals = fmes[rows_of[int(par)]]
                sd = float(np.std(vals, ddof=1)) if vals.size > 1 else 0.0
                if sd < best_sd:
                    best, best_sd = int(par), sd
        leaves -= {int(k) for k in nodes.at[best, "children"]}
        leaves.add(best)
        seq.append(sorted(leaves))
    return seq


def _max_leaf_sd(leaf_set: list[int], fmes: np.ndarray, mapping: np.ndarray) -> float:
    sds = []
    for node in leaf_set:
        vals = fmes[mapping == node]
        sds.append(float(np.std(vals, ddof=1)) if vals.size > 1 else 0.0)
    return max(sds)


def _subspace_lookup(tree: Any, leaf_set: list[int]) -> np.ndarray:
    """Array indexed by node id: the subspace (ancestor in ``leaf_set``) of each grown leaf."""
    nodes = tree.nodes_
    keep = set(leaf_set)
    out = np.zeros(int(nodes.index.max()) + 1, dtype=int)
    for leaf in nodes.index[nodes["is_leaf"].to_numpy(dtype=bool)]:
        cur = int(leaf)
        while cur not in keep:
            cur = int(nodes.at[cur, "parent"])
        out[int(leaf)] = cur
    return out


# ---------------------------------------------------------------- public API
def came(
    effects: FMEResult,
    *,
    method: str = "ctree",
    features: list[str] | None = None,
    n_partitions: int | None = None,
    max_sd: float | None = None,
    conf_level: float = 0.95,
    standardize: bool = True,
    sample_size: int | None = None,
    random_state: Any = None,
    **tree_params: Any,
) -> PartitionResult:
    """Conditional AMEs on subspaces found by a tree (paper §5.5).

    Parameters
    ----------
    effects : FMEResult
        From :func:`fme.fme`; a single output (not ``target_class='all'``).
    method : {'ctree', 'cart'}, default='ctree'
        CTREE (:class:`fme.ctree.CTree`, partykit's algorithm, as the paper)
        or CART (scikit-learn's ``DecisionTreeRegressor``; categorical
        features are one-hot encoded and each split maps back to a level set).
    features : list of str, optional
        Partitioning variables; default: the model's input columns if known,
        else every column of the data the effects were computed on.
    n_partitions : int, optional
        Reduce the grown tree to this many subspaces by greedily merging the
        sibling leaves whose pooled fMEs have the smallest SD (R fmeffects).
    max_sd : float, optional
        Reduce to the fewest subspaces whose largest fME SD is below
        ``max_sd``. With ``n_partitions`` or ``max_sd`` the tree grows with
        fmeffects' defaults alpha = 0.35, minbucket = 2% of n unless given.
    conf_level : float, default=0.95
        Confidence level of the t-based CIs.
    standardize : bool, default=True
        Grow the tree on standardised fMEs. CTREE's statistics and p-values
        are invariant to this, but partykit's *absolute* variance tolerance
        (1.5e-8) stops trees on tiny-scale responses such as probabilities or
        small steps (CTREE spec §9); standardising removes that artefact.
        Reported figures are always on the fME scale.
    sample_size : int, optional
        Effects of Dask data (:func:`fme.fme` on a ``dask.dataframe.DataFrame``)
        only: the tree is grown on a seeded sample (``random_state``) of at
        most this many evaluated rows (default 10**6; when there are no more
        rows, all of them: the tree of the pandas path); every row is then
        assigned to its subspace and the cAMEs, CIs and NLM summaries are
        aggregated over all rows exactly. ``notes`` and ``grown_on_sample``
        say whether a sample was used.
    random_state : int, optional
        Seed of that sample (default 0).
    **tree_params
        Tree parameters by partykit's names (``minbucket``, ``alpha``,
        ``testtype``, ``mincriterion``, ``maxdepth``, ...) or, for CART,
        scikit-learn's (``min_samples_leaf``, ``max_depth``, ...).

    Returns
    -------
    PartitionResult

    Examples
    --------
    >>> part = fme.came(eff, minbucket=100, testtype="teststatistic", mincriterion=0.99)  # doctest: +SKIP
    >>> part.leaves[["node", "n", "came", "came_ci_low", "came_ci_high"]]              # doctest: +SKIP
    """
    if type(effects).__name__ == "DaskMultiFMEResult":  # several outputs of Dask data, as for FMEResult below
        raise ParameterError("came needs one fME per row; compute effects with a single target_class, not 'all'.")
    if type(effects).__name__ == "DaskFMEResult":
        from ._dask_tables import came_dask

        return came_dask(effects, sample_size=sample_size, random_state=random_state, method=method,
                         features=features, n_partitions=n_partitions, max_sd=max_sd, conf_level=conf_level,
                         standardize=standardize, **tree_params)
    if sample_size is not None:
        raise ParameterError("sample_size applies to Dask effects only (the tree is then grown on a sample); "
                             "in-memory effects use every row.")
    if not isinstance(effects, FMEResult):
        raise DataError(f"`effects` must be the FMEResult of fme.fme(...), got {type(effects).__name__}.")
    if effects.output_names is not None:
        raise ParameterError("came needs one fME per row; compute effects with a single target_class, not 'all'.")
    if effects.n == 0:
        raise DataError("the effects have no evaluated rows; nothing to partition.")
    conf_level = check_conf_level(conf_level)
    if method not in ("ctree", "cart"):
        raise ParameterError(f"method must be 'ctree' or 'cart', got {method!r}.")
    if n_partitions is not None and max_sd is not None:
        raise ParameterError("give either n_partitions or max_sd, not both.")
    if n_partitions is not None and (isinstance(n_partitions, bool) or not isinstance(n_partitions, numbers.Integral)
                                     or n_partitions < 2):
        raise ParameterError(f"n_partitions must be an integer >= 2, got {n_partitions!r}.")
    if max_sd is not None and (not isinstance(max_sd, numbers.Real) or not np.isfinite(max_sd) or max_sd <= 0):
        raise ParameterError(f"max_sd must be a positive number, got {max_sd!r}.")
    if isinstance(features, str):
        features = [features]  # one feature, not its letters
    if features is not None and len(list(features)) == 0:
        raise ParameterError("`features` is empty; name at least one partitioning feature, or None for the default.")
    check_tree_params(method, tree_params)
    params = {"features": None if features is None else list(features), "n_partitions": n_partitions,
              "max_sd": max_sd, "standardize": standardize, **tree_params}
    data = effects.data
    if features is None:
        features = list(effects.model_features) if effects.model_features is not None else list(data.columns)
    for f in features:
        if f not in data.columns:
            raise FeatureError(f"partitioning feature {f!r} is not a column of the data the effects were computed on.")
    # by position: the evaluated rows in order, whatever the index; the trees name features by text
    X = string_columns(data.iloc[data.index.get_indexer(effects.results.index)][list(features)], "features")
    y = effects.results["fme"].to_numpy(dtype=float)
    n = y.size
    fit_y = y
    if standardize:
        sd = float(np.std(y))
        fit_y = (y - y.mean()) / sd if sd > 0 else y - y.mean()
    notes: list[str] = []
    reduce = n_partitions is not None or max_sd is not None
    if method == "ctree":
        if reduce:
            tree_params.setdefault("alpha", 0.35)
            tree_params.setdefault("minbucket", 0.02 * n)
        tree = CTree(**tree_params).fit(X, fit_y)
        minsplit = tree_params.get("minsplit", 20)
        if n < minsplit:
            notes.append(f"the tree is a single node: {n} rows are fewer than minsplit = {minsplit}.")
    else:
        if reduce:
            tree_params.setdefault("min_samples_leaf", max(1, int(round(0.02 * n))))
        tree = CartTree(**tree_params).fit(X, fit_y)
    leaf_of_row = np.asarray(tree.apply(X), dtype=int)
    grown = sorted(int(i) for i in tree.nodes_.index[tree.nodes_["is_leaf"].to_numpy(dtype=bool)])
    leaf_set = grown
    if n_partitions is not None:
        if n_partitions > len(grown):
            raise ParameterError(
                f"n_partitions={n_partitions} but the grown tree has only {len(grown)} leaves; use 2..{len(grown)} "
                "or grow a larger tree (smaller minbucket, larger alpha)."
            )
        seq = _prune_sequence(tree, y, leaf_of_row)
        leaf_set = next(s for s in seq if len(s) == n_partitions)
    elif max_sd is not None:
        seq = _prune_sequence(tree, y, leaf_of_row)
        # As fmeffects: reductions down to two subspaces (the root only when nothing was split).
        ok = [s for s in seq if (len(s) >= 2 or len(grown) == 1)
              and _max_leaf_sd(s, y, _subspace_lookup(tree, s)[leaf_of_row]) < max_sd]
        if not ok:
            raise ParameterError(
                f"no reduction of the grown tree ({len(grown)} leaves) has every leaf's fME SD below max_sd={max_sd}; "
                "increase max_sd or grow a larger tree."
            )
        leaf_set = min(ok, key=len)
    if len(grown) == 1 and not notes:
        notes.append("no split was significant: one subspace (the whole data).")
    return PartitionResult(effects, tree, X, leaf_set, leaf_of_row, conf_level, method, notes, params)


#: Absolute size parameters per tree method, scaled to the subsample by :func:`partition_stability`.
_SIZE_PARAMS = {"ctree": ("minbucket", "minsplit"), "cart": ("min_samples_leaf", "min_samples_split")}


def _subset(effects: FMEResult, positions: np.ndarray) -> FMEResult:
    """The same effects restricted to some evaluated rows (by position)."""
    rows = effects.inference_rows
    return dataclasses.replace(effects, results=effects.results.iloc[positions],
                               predictions=effects.predictions.iloc[positions],
                               inference_rows=None if rows is None else rows.take(positions),
                               positions=None if effects.positions is None else effects.positions[positions])


def partition_stability(
    partition: PartitionResult,
    *,
    n_subsamples: int = 20,
    fraction: float = 0.5,
    random_state: int | None = 0,
    scale_sizes: bool = True,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Refit a partition on random subsamples of its rows: how stable are the AME and the subspaces?

    Small leaves of a tree are unstable (paper §5.5; report checklist §1.7
    asks for "variation across subsamples"). Each subsample draws
    ``round(fraction * n)`` of the evaluated rows without replacement and
    grows the tree again with the same method and arguments
    (:attr:`PartitionResult.params`); the fMEs themselves are not recomputed,
    so this measures the sampling variability of the summaries given the
    fitted model, not model-refit uncertainty.

    Parameters
    ----------
    partition : PartitionResult
        From :func:`came`.
    n_subsamples : int, default=20
    fraction : float, default=0.5
        Share of the evaluated rows in each subsample, in (0, 1).
    random_state : int or None, default=0
        Seed of the subsample draws (None: fresh entropy, not reproducible).
    scale_sizes : bool, default=True
        Scale absolute size parameters given to :func:`came` (CTREE
        ``minbucket``/``minsplit``, CART integer ``min_samples_leaf``/
        ``min_samples_split``) by the subsample share, so a refit may split
        as finely, relative to its rows, as the full tree. Defaults that
        :func:`came` derives from n (``n_partitions``/``max_sd``) follow the
        subsample anyway.
    progress : bool, optional
        A progress bar over the refits: default on a terminal only, unless
        ``FME_PROGRESS=0`` (:mod:`fme._progress`).

    Returns
    -------
    DataFrame
        One row per subsample: ``subsample``, ``n``, ``ame`` (mean fME of
        the subsample), ``n_leaves``, ``root_split`` (feature of the first
        split, None for a single node), ``same_root_split`` (equal to the
        full partition's), ``ari`` (adjusted Rand index between the
        subsample's subspaces and the full partition's on the subsample's
        rows: 1 = the same grouping, about 0 = unrelated) and ``error``
        (the message when the refit failed, e.g. fewer leaves than
        ``n_partitions``; the tree columns are then missing).
    """
    from sklearn.metrics import adjusted_rand_score

    if not isinstance(partition, PartitionResult):
        raise DataError(f"`partition` must be the PartitionResult of fme.came(...), got {type(partition).__name__}.")
    if isinstance(n_subsamples, bool) or not isinstance(n_subsamples, numbers.Integral) or n_subsamples < 1:
        raise ParameterError(f"n_subsamples must be a positive integer, got {n_subsamples!r}.")
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) or not 0 < fraction < 1:
        raise ParameterError(f"fraction must be a number strictly between 0 and 1, got {fraction!r}.")
    effects = partition.effects
    n = effects.n
    m = int(round(fraction * n))
    if m < 2:
        raise ParameterError(f"a subsample of {fraction:g} x {n} rows has fewer than 2 rows; raise fraction.")
    rng = check_random_state(random_state)
    fmes = effects.results["fme"].to_numpy(dtype=float)
    full_leaf = partition.leaf_of_row.to_numpy()
    full_root = partition.root_split
    params = dict(partition.params)
    if scale_sizes:
        # Absolute leaf/split sizes are relative to n: a minbucket of 30 on 106 rows allows splits,
        # on a half-sample of 53 it forbids every split, and the refit would look "unstable" for that alone.
        for key in _SIZE_PARAMS[partition.method]:
            v = params.get(key)
            if isinstance(v, numbers.Real) and not isinstance(v, bool) and v >= 1:
                params[key] = max(1, round(v * m / n)) if isinstance(v, numbers.Integral) else v * m / n
    rows = []
    from ._progress import progress_bar

    for b in progress_bar(range(int(n_subsamples)), total=int(n_subsamples), desc="stability refits",
                          progress=progress):
        pos = np.sort(rng.choice(n, size=m, replace=False))
        row: dict[str, Any] = {"subsample": b + 1, "n": m, "ame": float(fmes[pos].mean()), "n_leaves": pd.NA,
                               "root_split": None, "same_root_split": pd.NA, "ari": np.nan, "error": None}
        try:
            sub = came(_subset(effects, pos), method=partition.method, conf_level=partition.conf_level, **params)
        except FMEError as exc:
            row["error"] = str(exc)
        else:
            root = sub.root_split
            row.update(n_leaves=len(sub.leaf_ids), root_split=root, same_root_split=root == full_root,
                       ari=float(adjusted_rand_score(full_leaf[pos], sub.leaf_of_row.to_numpy())))
        rows.append(row)
    out = pd.DataFrame(rows)
    # nullable dtypes: a failed refit has no tree figures (<NA>), the others stay integers/booleans
    return out.astype({"n_leaves": "Int64", "same_root_split": "boolean"})
