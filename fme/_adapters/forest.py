"""Tree ensembles as flat node arrays: what an adapter's ``forest()`` returns for the exact NLM's traversal
(:mod:`fme._nlm.tree_paths`, paper §5.4), and the float32 split boundary of scikit-learn trees."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Forest", "stack_trees", "float32_boundary"]

#: LightGBM's kZeroThreshold (float 1e-35): |v| at most this is "zero" for missing type Zero.
LGB_ZERO = float(np.float32(1e-35))


def float32_boundary(threshold: np.ndarray) -> np.ndarray:
    """The float64 b with ``float32(v) <= threshold`` iff ``v < b`` (up to a tie exactly at b).

    float32(v) <= thr iff float32(v) <= a, a the largest float32 <= thr,
    iff v is below the midpoint between a and the next float32 (round to
    nearest). Exact in float64 (both neighbours and their mean are).
    """
    thr = np.asarray(threshold, dtype=np.float64)
    with np.errstate(over="ignore"):
        a = thr.astype(np.float32)
    down = a.astype(np.float64) > thr
    a[down] = np.nextafter(a[down], np.float32(-np.inf))
    b = np.nextafter(a, np.float32(np.inf))
    out = 0.5 * a.astype(np.float64) + 0.5 * b.astype(np.float64)
    # beyond float32 range (inf thresholds): the comparison is decided by the sign alone
    return np.where(np.isfinite(a) & np.isfinite(b), out, thr)


@dataclass
class Forest:
    """All trees of one model as flat node arrays (node ids global across trees).

    ``threshold`` is the boundary in float64 input space: a value v goes left
    iff ``v <= threshold`` (``v < threshold`` when ``strict``); ``float32``
    means non-stepped values are cast to float32 before that comparison (the
    model's own casting); ``zero_missing`` marks nodes (LightGBM's missing
    type Zero) that send |v| <= 1e-35 the missing way. ``value[node]`` (leaves) is the node's additive
    contribution to the raw scores; ``link`` maps raw scores (m, K) to the
    model's predictions (m, C); ``output`` picks the predictor's column(s). ``sum32``: the model sums its
    leaves in float32, tree by tree from float32(``baseline``) (XGBoost, one output): a segment's raw score
    is then that sum, the model's own number, instead of the float64 sum of the leaves.
    """

    feature: np.ndarray
    threshold: np.ndarray
    boundary: np.ndarray
    left: np.ndarray
    right: np.ndarray
    missing_left: np.ndarray
    is_leaf: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    baseline: np.ndarray
    link: Callable[[np.ndarray], np.ndarray]
    float32: bool
    strict: bool = False
    output: int | None = None
    name: str = ""
    n_features: int = 0
    zero_missing: np.ndarray | None = None
    sum32: bool = False

    @property
    def n_trees(self) -> int:
        return int(self.roots.size)

    def __post_init__(self) -> None:
        # per level one gather of the feature (-1 at leaves) and one of the child: kids[2 node + goes right]
        self.node_feature = np.where(self.is_leaf, -1, self.feature).astype(np.int64)
        self.node_kids = np.column_stack([self.left, self.right]).astype(np.int64).ravel()


def stack_trees(trees: list[dict], n_out: int) -> dict:
    """Concatenate per-tree node arrays; ``trees[i]['col']`` is the raw-score column of tree i (or None: all)."""
    sizes = np.array([t["feature"].size for t in trees], dtype=np.int64)
    offs = np.r_[0, np.cumsum(sizes)[:-1]]
    total = int(sizes.sum())
    value = np.zeros((total, n_out))
    for t, o in zip(trees, offs):
        v = t["value"]
        if t.get("col") is None:
            value[o : o + v.shape[0], :] = v
        else:
            value[o : o + v.shape[0], t["col"]] = v[:, 0]
    cat = {
        k: np.concatenate([np.asarray(t[k]) for t in trees])
        for k in ("feature", "threshold", "missing_left", "is_leaf")
    }
    left = np.concatenate([np.where(t["is_leaf"], 0, t["left"]) + o for t, o in zip(trees, offs)])
    right = np.concatenate([np.where(t["is_leaf"], 0, t["right"]) + o for t, o in zip(trees, offs)])
    return dict(cat, left=left.astype(np.int64), right=right.astype(np.int64), value=value, roots=offs)
