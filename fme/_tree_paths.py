"""Exact NLM of tree ensembles by traversing the trees along the path (paper §5.4).

The midpoint route of :mod:`fme.nlm_exact` predicts at the midpoint of every
segment between the union of the stepped features' split thresholds over all
trees; most of those thresholds sit in nodes the row never reaches. Here the
fitted trees are read instead, and each row's path is pushed through every
tree at once:

1. Per tree, (row, t-interval, node) triples start at the root with
   (0, 1) and move down one level per pass, all trees and rows of a chunk
   together (loops over depth levels only). A node splitting on a stepped
   feature j whose crossing t* = (threshold - x_j) / h_j lies inside the
   interval splits it in two; any other node routes the whole interval by
   the row's own value, with the model's missing-value direction.
2. The leaves reached give, per tree and row, pieces (t_lo, t_hi, value)
   that partition (0, 1). Their sum over trees is piecewise constant with
   breakpoints only where some tree's reached piece changes: events
   (row, t, +-value) are sorted and summed cumulatively per row.
3. The ensemble's own link (averaging, learning rate and baseline, sigmoid or
   softmax through the model's loss object) maps the segment raw scores to
   predictions, and the closed forms of :mod:`fme.nlm_exact` give the NLM.

Comparisons replicate the model's: scikit-learn's ``tree_`` compares the
float32-cast input with a float64 threshold, so a row's value routes by
``float32(x) <= threshold`` and a stepped feature crosses at the float64
boundary of that set (:func:`float32_boundary`); HistGradientBoosting
compares float64 values. Models read here: scikit-learn ``DecisionTree*``,
``ExtraTree*``, ``RandomForest*``, ``ExtraTrees*``, ``GradientBoosting*``
(constant init) and ``HistGradientBoosting*`` without categorical features.
Other supported models use the midpoint route.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

__all__ = ["Forest", "read_forest", "float32_boundary", "traverse_nlm"]

#: (row, interval, node) triples alive at once in one chunk (bounds memory: ~100 bytes each).
_ENTRY_BUDGET = 1_000_000


@dataclass
class Forest:
    """All trees of one model as flat node arrays (node ids global across trees).

    ``threshold`` is the boundary in float64 input space: a value v goes left
    iff ``v <= threshold`` (``v < threshold`` when ``strict``); ``float32``
    means non-stepped values are cast to float32 before that comparison (the
    model's own casting). ``value[node]`` (leaves) is the node's additive
    contribution to the raw scores; ``link`` maps raw scores (m, K) to the
    model's predictions (m, C); ``output`` picks the predictor's column(s).
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

    @property
    def n_trees(self) -> int:
        return int(self.roots.size)


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


# ------------------------------------------------------------------ readers
def _stack(trees: list[dict], n_out: int) -> dict:
    """Concatenate per-tree node arrays; ``trees[i]['col']`` is the raw-score column of tree i (or None: all)."""
    sizes = np.array([t["feature"].size for t in trees], dtype=np.int64)
    offs = np.r_[0, np.cumsum(sizes)[:-1]]
    total = int(sizes.sum())
    value = np.zeros((total, n_out))
    for t, o in zip(trees, offs):
        v = t["value"]
        if t.get("col") is None:
            value[o:o + v.shape[0], :] = v
        else:
            value[o:o + v.shape[0], t["col"]] = v[:, 0]
    cat = {k: np.concatenate([t[k] for t in trees]) for k in ("feature", "threshold", "missing_left", "is_leaf")}
    left = np.concatenate([np.where(t["is_leaf"], 0, t["left"]) + o for t, o in zip(trees, offs)])
    right = np.concatenate([np.where(t["is_leaf"], 0, t["right"]) + o for t, o in zip(trees, offs)])
    return dict(cat, left=left.astype(np.int64), right=right.astype(np.int64), value=value, roots=offs)


def _sk_tree(est, scale: float = 1.0, col: int | None = None) -> dict | None:
    t = est.tree_
    if t.n_outputs != 1:
        return None
    leaf = t.children_left < 0
    value = t.value[:, 0, :] * scale if scale != 1.0 else t.value[:, 0, :].copy()
    return dict(feature=np.where(leaf, 0, t.feature).astype(np.int64), threshold=t.threshold.astype(np.float64),
                missing_left=np.asarray(t.missing_go_to_left, dtype=bool), is_leaf=leaf,
                left=t.children_left.astype(np.int64), right=t.children_right.astype(np.int64), value=value, col=col)


def _output_index(model, target_class: Any) -> int | None | str:
    """Column of the model's predict_proba the predictor reports, None for all ('all'), 0 for regressors."""
    from .predictors import _class_index

    classes = getattr(model, "classes_", None)
    if classes is None or not hasattr(model, "predict_proba"):
        return 0
    if isinstance(target_class, str) and target_class == "all":
        return None
    if target_class is None:
        return 1 if len(classes) == 2 else "unknown"
    return _class_index(np.asarray(classes), target_class)


def _read_sklearn(model) -> tuple[list[dict], int, np.ndarray, Callable, bool] | None:
    from sklearn.ensemble import (ExtraTreesClassifier, ExtraTreesRegressor, GradientBoostingClassifier,
                                  GradientBoostingRegressor, HistGradientBoostingClassifier,
                                  HistGradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor)
    from sklearn.tree import BaseDecisionTree

    def ident(raw):
        return raw

    if isinstance(model, BaseDecisionTree):
        tr = _sk_tree(model)
        if tr is None:
            return None
        return [tr], tr["value"].shape[1], np.zeros(tr["value"].shape[1]), ident, True
    if isinstance(model, (RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier, ExtraTreesRegressor)):
        trees = [_sk_tree(e) for e in model.estimators_]
        if any(t is None for t in trees):
            return None
        n_est = len(model.estimators_)

        def mean(raw, n_est=n_est):  # the forest's own order: sum of the trees, then /= n
            return raw / n_est

        k = trees[0]["value"].shape[1]
        return trees, k, np.zeros(k), mean, True
    if isinstance(model, (GradientBoostingClassifier, GradientBoostingRegressor)):
        est = np.asarray(model.estimators_, dtype=object)
        k = est.shape[1]
        lr = float(model.learning_rate)
        trees = [_sk_tree(est[i, j], col=j) for i in range(est.shape[0]) for j in range(k)]
        for t in trees:  # the stage's own product learning_rate * leaf value
            t["value"] = lr * t["value"]
        zero = np.zeros((1, model.n_features_in_), dtype=np.float32)
        baseline = np.asarray(model._raw_predict_init(zero), dtype=np.float64).reshape(-1)
        if isinstance(model, GradientBoostingClassifier):
            def link(raw, model=model):
                return model._loss.predict_proba(raw.ravel() if raw.shape[1] == 1 else raw)
        else:
            link = ident
        return trees, k, baseline, link, True
    if isinstance(model, (HistGradientBoostingClassifier, HistGradientBoostingRegressor)):
        if getattr(model, "_preprocessor", None) is not None or (
                getattr(model, "is_categorical_", None) is not None and np.any(model.is_categorical_)):
            return None  # categorical splits route through bitsets: midpoint route
        trees = []
        for it in model._predictors:
            for j, p in enumerate(it):
                nd = p.nodes
                leaf = nd["is_leaf"].astype(bool)
                trees.append(dict(feature=np.where(leaf, 0, nd["feature_idx"]).astype(np.int64),
                                  threshold=nd["num_threshold"].astype(np.float64),
                                  missing_left=nd["missing_go_to_left"].astype(bool), is_leaf=leaf,
                                  left=nd["left"].astype(np.int64), right=nd["right"].astype(np.int64),
                                  value=nd["value"].astype(np.float64)[:, None], col=j))
        k = int(model.n_trees_per_iteration_)
        baseline = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)
        if isinstance(model, HistGradientBoostingClassifier):
            def link(raw, model=model):
                return model._loss.predict_proba(raw)
        else:
            def link(raw, model=model):
                return model._loss.link.inverse(raw.ravel())[:, None]
        return trees, k, baseline, link, False
    return None


def read_forest(model: Any, target_class: Any = None) -> Forest | None:
    """The model's trees as a :class:`Forest`, or None when this module does not read it (midpoint route)."""
    if not type(model).__module__.startswith("sklearn") or type(model).__name__ == "Pipeline":
        return None
    if getattr(model, "n_outputs_", 1) != 1:
        return None
    out = _output_index(model, target_class)
    if isinstance(out, str):
        return None
    got = _read_sklearn(model)
    if got is None:
        return None
    trees, k, baseline, link, f32 = got
    st = _stack(trees, k)
    thr = st["threshold"]
    boundary = float32_boundary(thr) if f32 else thr
    return Forest(feature=st["feature"], threshold=thr, boundary=boundary, left=st["left"], right=st["right"],
                  missing_left=st["missing_left"], is_leaf=st["is_leaf"], value=st["value"], roots=st["roots"],
                  baseline=baseline, link=link, float32=f32, output=out, name=type(model).__name__,
                  n_features=int(model.n_features_in_))


# ------------------------------------------------------------------ traversal
def _pieces(forest: Forest, X: np.ndarray, S: np.ndarray):
    """Leaf pieces (row, t_lo, t_hi, leaf node) of every tree for the rows of ``X`` (m, p); ``S``: shifts (m, p)."""
    m, p = X.shape
    Xf = X.ravel()
    Xc = X.astype(np.float32).ravel() if forest.float32 else Xf
    Sf = S.ravel()
    r = np.tile(np.arange(m, dtype=np.int64), forest.n_trees)
    node = np.repeat(forest.roots, m)
    lo = np.zeros(r.size)
    hi = np.ones(r.size)
    out_r, out_lo, out_hi, out_node = [], [], [], []
    while r.size:
        leaf = forest.is_leaf[node]
        if leaf.any():
            out_r.append(r[leaf]), out_lo.append(lo[leaf]), out_hi.append(hi[leaf]), out_node.append(node[leaf])
            keep = ~leaf
            r, lo, hi, node = r[keep], lo[keep], hi[keep], node[keep]
            if not r.size:
                break
        cell = r * p + forest.feature[node]
        s = Sf[cell]
        xv = Xc[cell]
        L, R = forest.left[node], forest.right[node]
        thr = forest.threshold[node]
        with np.errstate(invalid="ignore"):
            by_value = (xv < thr) if forest.strict else (xv <= thr)
        by_value = np.where(np.isnan(xv), forest.missing_left[node], by_value)
        stepped = (s != 0) & ~np.isnan(xv)  # a missing value stays missing along the path
        with np.errstate(divide="ignore", invalid="ignore"):
            tstar = np.where(stepped, (forest.boundary[node] - Xf[cell]) / s, np.inf)
        # the lower part of the interval (t < t*) goes left for h_j > 0; a non-stepped node sends all of it "low"
        low_child = np.where(stepped, np.where(s > 0, L, R), np.where(by_value, L, R))
        up_child = np.where(s > 0, R, L)
        low_end = np.minimum(hi, tstar)
        up_start = np.maximum(lo, tstar)
        has_low = low_end > lo
        has_up = up_start < hi
        if has_up.any():
            both = has_up & has_low
            if both.all():
                r = np.concatenate([r, r])
                lo, hi = np.concatenate([lo, up_start]), np.concatenate([low_end, hi])
                node = np.concatenate([low_child, up_child])
            else:
                r = np.concatenate([r[has_low], r[has_up]])
                lo = np.concatenate([lo[has_low], up_start[has_up]])
                hi = np.concatenate([low_end[has_low], hi[has_up]])
                node = np.concatenate([low_child[has_low], up_child[has_up]])
        else:
            hi, node = low_end, low_child
    cat = (lambda xs, dt: np.concatenate(xs) if xs else np.empty(0, dtype=dt))
    return cat(out_r, np.int64), cat(out_lo, float), cat(out_hi, float), cat(out_node, np.int64)


def _segments(forest: Forest, m: int, r, lo, hi, node):
    """Per-row segments (row, a, b, raw scores) of the summed piecewise-constant trees, sorted by row and t."""
    val = forest.value[node]
    k = val.shape[1]
    start = np.empty((m, k))
    at0 = lo == 0.0
    for j in range(k):
        start[:, j] = np.bincount(r[at0], weights=val[at0, j], minlength=m)
    start += forest.baseline
    up = lo > 0.0
    down = hi < 1.0
    er = np.concatenate([r[up], r[down]])
    et = np.concatenate([lo[up], hi[down]])
    ev = np.concatenate([val[up], -val[down]])
    order = np.lexsort((et, er))
    er, et, ev = er[order], et[order], ev[order]
    if er.size:
        new = np.r_[True, (er[1:] != er[:-1]) | (et[1:] != et[:-1])]
        gstart = np.flatnonzero(new)
        gsum = np.add.reduceat(ev, gstart, axis=0)
        gr, gt = er[gstart], et[gstart]
    else:
        gsum, gr, gt = np.empty((0, k)), np.empty(0, dtype=np.int64), np.empty(0)
    # running sum per row: global cumsum minus its value before the row's first group
    cum = np.cumsum(gsum, axis=0)
    ng = np.bincount(gr, minlength=m)
    first = np.cumsum(ng) - ng
    before = np.zeros((m, k))
    has = ng > 0
    before[has] = np.where((first[has] > 0)[:, None], cum[np.maximum(first[has] - 1, 0)], 0.0)
    after = start[gr] + (cum - before[gr])
    # segments: per row the first (0, t_1) then one after each group
    nseg = ng + 1
    seg_first = np.cumsum(nseg) - nseg
    total = int(nseg.sum())
    srow = np.repeat(np.arange(m), nseg)
    a = np.zeros(total)
    raw = np.empty((total, k))
    raw[seg_first] = start
    pos = np.ones(total, dtype=bool)
    pos[seg_first] = False
    a[pos] = gt
    raw[pos] = after
    b = np.ones(total)
    b[:-1] = np.where(srow[1:] == srow[:-1], a[1:], 1.0)
    return srow, a, b, raw, seg_first


def traverse_nlm(forest: Forest, X: pd.DataFrame, shifts: Mapping[str, np.ndarray], f0: np.ndarray,
                 f1: np.ndarray, entry_budget: int = _ENTRY_BUDGET) -> tuple[np.ndarray, np.ndarray, int]:
    """Exact NLMs by tree traversal: same outputs as :func:`fme.nlm_exact.exact_nlm` (nlm, sd, segments).

    ``X`` holds the model's columns in the model's order, all numeric; the
    rows are processed in chunks of about ``entry_budget / n_trees`` rows.
    """
    from .nlm_exact import _closed_forms

    n, p = X.shape
    arr = X.to_numpy(dtype=np.float64, na_value=np.nan)
    S = np.zeros((n, p))
    for f, s in shifts.items():
        S[:, X.columns.get_loc(f)] = s
    size = max(1, entry_budget // max(1, forest.n_trees))
    nlm_parts, sd_parts, total = [], [], 0
    for start in range(0, n, size):  # chunks of rows, never one row at a time
        sl = slice(start, min(n, start + size))
        m = sl.stop - sl.start
        r, lo, hi, node = _pieces(forest, arr[sl], S[sl])
        srow, a, b, raw, first = _segments(forest, m, r, lo, hi, node)
        pred = np.asarray(forest.link(raw), dtype=np.float64)
        if pred.ndim == 1:
            pred = pred[:, None]
        c = pred if forest.output is None else pred[:, forest.output]
        total += srow.size
        nl, sd = _closed_forms(c, srow, first, b - a, 0.5 * (a + b), f0[sl], f1[sl])
        nlm_parts.append(nl)
        sd_parts.append(sd)
    return np.concatenate(nlm_parts), np.concatenate(sd_parts), total
