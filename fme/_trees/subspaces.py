"""The subspaces of a cAME partition as regions of the feature space (paper §5.5, Table 3).

A partition's subspaces are nodes of a grown tree (``tree.nodes_``: ``parent``, ``children``, ``is_leaf``,
``split_feature``, ``split_value``, ``split_levels``) whose subtrees are dropped. This module reads that table:
the subspace each grown leaf belongs to and how many rows fall into each (:func:`subspace_lookup`,
:func:`subspace_counts`), the tree reduced to the subspaces (:func:`reduced_nodes`), the rows under a node
(:func:`rows_in`), and a subspace's bounds, its readable rule and its hyperrectangle (:func:`subspace_bounds`,
:func:`subspace_rule`, :func:`describe_subspace`). :class:`fme._trees.partition.PartitionResult` shows them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._utils.numfmt import fmt_bound
from .._utils.validation import is_categorical
from ..exceptions import ParameterError

__all__ = [
    "subspace_lookup",
    "subspace_counts",
    "reduced_nodes",
    "rows_in",
    "node_path",
    "subspace_bounds",
    "subspace_rule",
    "describe_subspace",
]


def subspace_counts(tree: Any, lookup: np.ndarray, X: pd.DataFrame) -> dict[int, int]:
    """``{subspace: rows}`` of the rows of ``X`` (the partitioning features) dropped down ``tree``, ``lookup``
    (:func:`subspace_lookup`) taking each grown leaf to its subspace; rows with a missing value are left out."""
    X = X[X.notna().all(axis=1).to_numpy()]
    if not len(X):
        return {}
    nodes, n = np.unique(lookup[np.asarray(tree.apply(X), dtype=int)], return_counts=True)
    return {int(a): int(b) for a, b in zip(nodes, n)}


def subspace_lookup(tree: Any, leaf_set: list[int]) -> np.ndarray:
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


def reduced_nodes(nodes: pd.DataFrame, leaf_ids: Sequence[int]) -> pd.DataFrame:
    """The node table ``nodes`` reduced to the subspaces ``leaf_ids``: they become its leaves (their subtrees
    dropped); same columns."""
    keep = set()
    for leaf in leaf_ids:
        cur = leaf
        while True:
            keep.add(int(cur))
            par = nodes.at[cur, "parent"]
            if pd.isna(par):
                break
            cur = int(par)
    out = nodes.loc[sorted(keep)].copy()
    for leaf in leaf_ids:
        out.at[leaf, "is_leaf"] = True
        out.at[leaf, "children"] = ()
        out.at[leaf, "split_feature"] = None
        out.at[leaf, "split_levels"] = None
        out.at[leaf, "split_value"] = np.nan
    return out


def rows_in(nodes: pd.DataFrame, node: int, tree_leaf: np.ndarray) -> np.ndarray:
    """Boolean mask of the rows in the subtree of ``node``, ``tree_leaf`` the grown leaf of each row."""
    inside = set()
    stack = [int(node)]
    while stack:
        cur = stack.pop()
        inside.add(cur)
        stack.extend(int(c) for c in nodes.at[cur, "children"])
    return np.isin(tree_leaf, list(inside))


def node_path(nodes: pd.DataFrame, node: int, leaf_ids: Sequence[int]) -> list[tuple[int, int]]:
    """(parent, child) pairs from the root of ``nodes`` to ``node`` (an unknown node names the subspaces
    ``leaf_ids``)."""
    if node not in nodes.index:
        raise ParameterError(f"unknown node {node!r}; subspaces are {leaf_ids}.")
    path = []
    cur = int(node)
    while not pd.isna(nodes.at[cur, "parent"]):
        par = int(nodes.at[cur, "parent"])
        path.append((par, cur))
        cur = par
    return path[::-1]


def subspace_bounds(nodes: pd.DataFrame, node: int, leaf_ids: Sequence[int]) -> dict[str, list]:
    """Per feature restricted on the path to ``node``: [exclusive lower, inclusive upper, allowed level set]."""
    bounds: dict[str, list] = {}
    for par, child in node_path(nodes, node, leaf_ids):
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


def subspace_rule(bounds: Mapping[str, list], X: pd.DataFrame) -> str:
    """Compact rule of a subspace of bounds ``bounds`` (:func:`subspace_bounds`) over the features of ``X``: one
    condition per restricted feature, e.g. ``"lstat <= 11.38 & rm <= 6.433"`` or ``"2.9 < x <= 4.1"``."""
    parts = []
    for feat, (low, high, levels) in bounds.items():
        if levels is not None:
            col = X[feat]
            order = list(col.cat.categories) if isinstance(col.dtype, pd.CategoricalDtype) else sorted(levels, key=str)
            parts.append(f"{feat} in {{{', '.join(str(lv) for lv in order if lv in levels)}}}")
        elif isinstance(X[feat].dtype, pd.CategoricalDtype):
            cats = list(X[feat].cat.categories)
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


def describe_subspace(
    features: Sequence[str],
    bounds: Mapping[str, list],
    data: pd.DataFrame,
    X: pd.DataFrame,
    inside: np.ndarray,
    data_ranges: Mapping[str, tuple[float, float]],
) -> pd.DataFrame:
    """The hyperrectangle of a subspace (:meth:`fme._trees.partition.PartitionResult.describe`): per feature of
    ``features``, its ``bounds`` (:func:`subspace_bounds`) or, unrestricted, the range of ``data`` (of
    ``data_ranges`` where given: all rows of Dask data), and the observed range of the rows ``inside`` of ``X``."""
    out = []
    for feat in features:
        # Unrestricted features span the whole data's range (paper Table 3), not only the evaluated rows.
        col = data[feat]
        sub = X[feat][inside]
        b = bounds.get(feat, [None, None, None])
        ordered = isinstance(col.dtype, pd.CategoricalDtype) and col.cat.ordered
        if is_categorical(col) and not ordered:
            all_levels = (
                list(col.cat.categories)
                if isinstance(col.dtype, pd.CategoricalDtype)
                else sorted(col.dropna().unique().tolist(), key=str)
            )
            levels = [lv for lv in all_levels if b[2] is None or lv in b[2]]
            out.append(
                {
                    "feature": feat,
                    "kind": "categorical",
                    "low": np.nan,
                    "high": np.nan,
                    "low_open": False,
                    "levels": levels,
                    "range": "{" + ", ".join(map(str, levels)) + "}",
                    "restricted": b[2] is not None,
                    "min": np.nan,
                    "max": np.nan,
                }
            )
            continue
        if isinstance(col.dtype, pd.CategoricalDtype):  # ordered factor: bounds are level positions
            cats = list(col.cat.categories)
            lo_i = 0 if b[0] is None else int(b[0])
            hi_i = len(cats) if b[1] is None else int(b[1])
            levels = cats[lo_i:hi_i]
            out.append(
                {
                    "feature": feat,
                    "kind": "ordered",
                    "low": np.nan,
                    "high": np.nan,
                    "low_open": False,
                    "levels": levels,
                    "range": "{" + ", ".join(map(str, levels)) + "}",
                    "restricted": b[0] is not None or b[1] is not None,
                    "min": np.nan,
                    "max": np.nan,
                }
            )
            continue
        if feat in data_ranges:  # Dask effects: the tree's rows are a sample; the range is all rows'
            gmin, gmax = data_ranges[feat]
        else:
            values = col.to_numpy(dtype=float)
            gmin, gmax = np.nanmin(values), np.nanmax(values)
        low = gmin if b[0] is None else b[0]
        high = gmax if b[1] is None else b[1]
        sv = sub.to_numpy(dtype=float)
        out.append(
            {
                "feature": feat,
                "kind": "numeric",
                "low": low,
                "high": high,
                "low_open": b[0] is not None,
                "levels": None,
                "range": f"{'(' if b[0] is not None else '['}{fmt_bound(low)}, {fmt_bound(high)}]",
                "restricted": b[0] is not None or b[1] is not None,
                "min": float(np.nanmin(sv)) if sv.size else np.nan,
                "max": float(np.nanmax(sv)) if sv.size else np.nan,
            }
        )
    return pd.DataFrame(out).set_index("feature")
