"""Growing and reducing the cAME tree (paper §5.5): the worker behind :func:`fme.came`.

:func:`grow_partition` trusts its arguments (:func:`fme.came` validated them) and serves both engines:
the in-memory path calls it on the effects, the Dask engine (:mod:`fme._dask.came`) on an in-memory
:class:`~fme._core.results.FMEResult` of its seeded sample. ``n_partitions`` and ``max_sd`` reduce the
grown tree as R's fmeffects does (:func:`_prune_sequence`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._core.results import FMEResult
from .._utils.numfmt import count
from ..exceptions import DataError, ParameterError
from .args import string_columns
from .cart import CartTree
from .ctree import CTree
from .partition import PartitionResult
from .settings import TreeSettings
from .subspaces import subspace_lookup

__all__ = ["evaluated_features", "grow_partition", "grow_tree", "honest_mask"]


# ---------------------------------------------------------------- reduction
def _prune_sequence(tree: Any, fmes: np.ndarray, leaf_of_row: np.ndarray) -> list[list[int]]:
    """Greedy merging of sibling leaves, smallest pooled SD first (fmeffects' pruning).

    Returns the leaf sets from the grown tree down to the root.
    """
    nodes = tree.nodes_
    rows_of: dict[int, np.ndarray] = {}
    for node in nodes.index[::-1]:  # post-order accumulation: children have larger ids
        kids = nodes.at[node, "children"]
        rows_of[int(node)] = (
            np.flatnonzero(leaf_of_row == node) if not kids else np.concatenate([rows_of[int(k)] for k in kids])
        )
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
                sd = _pooled_sd(fmes[rows_of[int(par)]])
                if sd < best_sd:
                    best, best_sd = int(par), sd
        leaves -= {int(k) for k in nodes.at[best, "children"]}
        leaves.add(best)
        seq.append(sorted(leaves))
    return seq


def _pooled_sd(vals: np.ndarray) -> float:
    """The SD (n - 1) of a leaf's fMEs; of several columns, the root of their mean variance."""
    if len(vals) < 2:
        return 0.0
    return float(np.std(vals, ddof=1)) if vals.ndim == 1 else float(np.sqrt(np.mean(np.var(vals, axis=0, ddof=1))))


def _max_leaf_sd(leaf_set: list[int], fmes: np.ndarray, mapping: np.ndarray) -> float:
    sds = []
    for node in leaf_set:
        sds.append(_pooled_sd(fmes[mapping == node]))
    return max(sds)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 arrays (wrapping arithmetic): a well-mixed 64-bit hash."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def honest_mask(index: pd.Index, fraction: float, seed: int) -> np.ndarray:
    """True for the rows that grow the tree, False for those that estimate its leaves (honest cAMEs).

    A row's part depends only on ``seed`` and its index label, never on its position: the label's
    64-bit hash (pandas' ``hash_pandas_object``) is mixed with the seed by SplitMix64 and the row grows
    the tree when the result / 2**64 < ``fraction``. Reordered rows, or the same rows as Dask data split
    into any chunks, fall in the same parts."""
    labels = pd.util.hash_pandas_object(pd.Index(index), index=False).to_numpy(dtype=np.uint64)
    key = _splitmix64(np.array([int(seed) % 2**64], dtype=np.uint64))[0]
    return (_splitmix64(labels ^ key) / np.float64(2.0**64)) < fraction


def grow_tree(
    X_all: pd.DataFrame, y_all: np.ndarray, index: pd.Index, settings: TreeSettings
) -> tuple[Any, np.ndarray, list[int], np.ndarray, list[str]]:
    """Grow the tree on the response ``y_all`` (the fMEs, (n,); or several effects' fMEs, (n, Q)) over the
    features ``X_all`` and reduce it; ``index``: the evaluated rows' labels (the honest split's key).

    ``standardize`` scales each column to SD 1 before growing (a joint partition: no effect dominates by its
    unit); the pooled SD that reduces the tree is then over the scaled columns (one column: the fMEs' own).

    Returns
    -------
    tuple
        (tree, grown-tree leaf of every evaluated row, the subspaces' node ids, the growing rows (mask),
        notes).
    """
    s = settings
    method, n_partitions, max_sd, standardize = s.method, s.n_partitions, s.max_sd, s.standardize
    honest, honest_fraction, seed = s.honest, s.honest_fraction, s.seed
    tree_params = dict(s.tree_params)
    grow_rows = np.ones(len(y_all), dtype=bool)
    if honest:
        grow_rows = honest_mask(index, honest_fraction, seed)
        n_grow = int(grow_rows.sum())
        if n_grow < 2 or len(y_all) - n_grow < 2:
            raise DataError(
                f"honest cAMEs split the {len(y_all)} evaluated rows into {n_grow} to grow the tree and "
                f"{len(y_all) - n_grow} to estimate its leaves; each part needs at least 2 rows. Evaluate more "
                "rows, change honest_fraction, or pass honest=False."
            )
    X, y = X_all[grow_rows], y_all[grow_rows]
    n = len(y)
    fit_y = y
    if standardize and y.ndim == 1:
        sd = float(np.std(y))
        fit_y = (y - y.mean()) / sd if sd > 0 else y - y.mean()
    elif standardize:
        sds = np.std(y, axis=0)
        # a column constant up to rounding (SD within a few ulps of its values) is left unscaled: scaled to SD 1,
        # its rounding noise would weigh as much as another effect's heterogeneity
        tiny = sds <= 64.0 * np.finfo(float).eps * np.max(np.abs(y), axis=0, initial=0.0)
        fit_y = (y - y.mean(axis=0)) / np.where((sds > 0) & ~tiny, sds, 1.0)
    # a joint partition reduces on the scaled fMEs (its effects' units differ); one effect on its own fMEs
    prune_y = y if y.ndim == 1 else fit_y
    notes: list[str] = []
    reduce = n_partitions is not None or max_sd is not None
    if method == "ctree":
        if reduce:
            tree_params.setdefault("alpha", 0.35)
            tree_params.setdefault("minbucket", 0.02 * n)
        # rows the tree did not grow on (the honest estimation rows, extrapolation points) can carry a level
        # absent from a node: the majority child, not partykit's random one, so that a row's subspace does not
        # depend on which other rows share the call (a Dask chunk, the pandas frame) or on the run
        tree_params.setdefault("majority", True)
        tree = CTree(**tree_params).fit(X, fit_y)
        minsplit = tree_params.get("minsplit", 20)
        if n < minsplit:
            notes.append(f"the tree is a single node: {count(n, 'row')} are fewer than minsplit = {minsplit}.")
    else:
        if reduce:
            tree_params.setdefault("min_samples_leaf", max(1, int(round(0.02 * n))))
        tree = CartTree(**tree_params).fit(X, fit_y)
    leaf_all = np.asarray(tree.apply(X_all), dtype=int)
    leaf_of_row = leaf_all[grow_rows]
    grown = sorted(int(i) for i in tree.nodes_.index[tree.nodes_["is_leaf"].to_numpy(dtype=bool)])
    leaf_set = grown
    if n_partitions is not None:
        if n_partitions > len(grown):
            raise ParameterError(
                f"n_partitions={n_partitions} but the grown tree has only {count(len(grown), 'leaf', 'leaves')}; use "
                f"2..{len(grown)} "
                "or grow a larger tree (smaller minbucket, larger alpha)."
            )
        seq = _prune_sequence(tree, prune_y, leaf_of_row)
        leaf_set = next(s for s in seq if len(s) == n_partitions)
    elif max_sd is not None:
        seq = _prune_sequence(tree, prune_y, leaf_of_row)
        # As fmeffects: reductions down to two subspaces (the root only when nothing was split).
        ok = [
            s
            for s in seq
            if (len(s) >= 2 or len(grown) == 1)
            and _max_leaf_sd(s, prune_y, subspace_lookup(tree, s)[leaf_of_row]) < max_sd
        ]
        if not ok:
            raise ParameterError(
                f"no reduction of the grown tree ({count(len(grown), 'leaf', 'leaves')}) has every leaf's fME SD "
                f"below max_sd={max_sd}; "
                "increase max_sd or grow a larger tree."
            )
        leaf_set = min(ok, key=len)
    if len(grown) == 1 and not notes:
        notes.append("no split was significant: one subspace (the whole data).")
    return tree, leaf_all, leaf_set, grow_rows, notes


def grow_partition(effects: FMEResult, settings: TreeSettings) -> PartitionResult:
    """Grow the tree on ``effects``' fMEs over the settings' features and reduce it (the settings validated by
    :func:`fme.came`; their ``params`` is the record kept in :attr:`PartitionResult.params`).

    ``honest``: the tree is grown and reduced on the rows of :func:`honest_mask` (``honest_fraction`` of
    them, ``seed``) and every leaf figure is computed from the other rows only (Athey & Imbens 2016)."""
    X_all = evaluated_features(effects, list(settings.features))
    y_all = effects.results["fme"].to_numpy(dtype=float)
    tree, leaf_all, leaf_set, grow_rows, notes = grow_tree(X_all, y_all, effects.results.index, settings)
    return PartitionResult(
        effects,
        tree,
        X_all,
        leaf_set,
        leaf_all,
        settings.conf_level,
        settings.method,
        notes,
        dict(settings.params),
        estimate_rows=~grow_rows if settings.honest else None,
        seed=settings.seed,
    )


def evaluated_features(effects: FMEResult, features: list[str]) -> pd.DataFrame:
    """The partitioning features of ``effects``' evaluated rows, in their order, with text labels."""
    data = effects.data
    # by position: the evaluated rows in order, whatever the index; the trees name features by text
    return string_columns(data.iloc[data.index.get_indexer(effects.results.index)][list(features)], "features")
