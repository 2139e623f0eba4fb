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
boundary of that set (:func:`fme.nlm_exact.float32_boundary`); HistGradientBoosting
compares float64 values. Models read here: scikit-learn ``DecisionTree*``,
``ExtraTree*``, ``RandomForest*``, ``ExtraTrees*``, ``GradientBoosting*``
(constant init) and ``HistGradientBoosting*`` without categorical features.
Other supported models use the midpoint route.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from .._utils.progress import progress_bar
from ..nlm_exact import _closed_forms, float32_boundary

__all__ = ["Forest", "read_forest", "traverse_nlm"]

#: (row, interval, node) entries started per chunk (~100 bytes each; small chunks stay in cache: 200k was
#: 25 % faster than 1M on HistGradientBoosting, 100 trees).
_ENTRY_BUDGET = 200_000
#: LightGBM's kZeroThreshold (float 1e-35): |v| at most this is "zero" for missing type Zero.
_LGB_ZERO = float(np.float32(1e-35))
_LGB_IDENTITY = ("regression", "regression_l1", "huber", "fair", "quantile", "mape")


@dataclass
class Forest:
    """All trees of one model as flat node arrays (node ids global across trees).

    ``threshold`` is the boundary in float64 input space: a value v goes left
    iff ``v <= threshold`` (``v < threshold`` when ``strict``); ``float32``
    means non-stepped values are cast to float32 before that comparison (the
    model's own casting); ``zero_missing`` marks nodes (LightGBM's missing
    type Zero) that send |v| <= 1e-35 the missing way. ``value[node]`` (leaves) is the node's additive
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
    zero_missing: np.ndarray | None = None

    @property
    def n_trees(self) -> int:
        return int(self.roots.size)

    def __post_init__(self) -> None:
        # per level one gather of the feature (-1 at leaves) and one of the child: kids[2 node + goes right]
        self.node_feature = np.where(self.is_leaf, -1, self.feature).astype(np.int64)
        self.node_kids = np.column_stack([self.left, self.right]).astype(np.int64).ravel()


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
    cat = {k: np.concatenate([np.asarray(t[k]) for t in trees])
           for k in ("feature", "threshold", "missing_left", "is_leaf")}
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
    from ..predictors import _class_index

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


def _read_lightgbm(model, target_class: Any) -> Forest | None:
    """LightGBM (scikit-learn wrapper or Booster) from ``dump_model()``: double precision, ``<=`` splits,
    missing types None (NaN compares as 0), Zero and NaN; numerical splits and constant leaves only."""
    booster = model.booster_ if hasattr(model, "booster_") else model
    if type(booster).__name__ != "Booster":
        return None
    dump = booster.dump_model()
    obj = str(dump.get("objective", "")).split()
    name = obj[0] if obj else ""
    params = dict(o.split(":", 1) for o in obj[1:] if ":" in o)
    k = int(dump["num_tree_per_iteration"])
    if "sqrt" in obj:
        return None
    if hasattr(model, "booster_") and hasattr(model, "classes_"):  # LGBMClassifier: predict_proba columns
        out = _output_index(model, target_class)
        if isinstance(out, str):
            return None
    elif k > 1:  # Booster: the predictor picks an output column by index
        if not isinstance(target_class, (int, np.integer)) or isinstance(target_class, bool):
            return None
        out = int(target_class)
    else:
        out = 0
    trees = []
    for i, info in enumerate(dump["tree_info"]):
        nodes: list[dict] = []
        stack = [info["tree_structure"]]
        while stack:  # nodes of the fitted model in pre-order (ids assigned when first seen)
            node = stack.pop()
            nodes.append(node)
            if "split_feature" in node:
                if node.get("decision_type", "<=") != "<=":
                    return None  # categorical split
                stack.extend((node["right_child"], node["left_child"]))
            elif "leaf_coeff" in node:
                return None  # linear_tree
        ids = {id(nd): j for j, nd in enumerate(nodes)}
        leaf = np.array(["split_feature" not in nd for nd in nodes])
        get = (lambda key, default, nodes=nodes: [nd.get(key, default) for nd in nodes])
        mtype = np.array(get("missing_type", "None"))
        thr = np.array(get("threshold", np.inf), dtype=float)
        dleft = np.array(get("default_left", True), dtype=bool)
        trees.append(dict(
            feature=np.array(get("split_feature", 0), dtype=np.int64), threshold=thr,
            # missing type None: NaN is compared as 0.0
            missing_left=np.where(mtype == "None", 0.0 <= thr, dleft), is_leaf=leaf, zero=(mtype == "Zero") & ~leaf,
            left=np.array([ids[id(nd["left_child"])] if "left_child" in nd else 0 for nd in nodes], dtype=np.int64),
            right=np.array([ids[id(nd["right_child"])] if "right_child" in nd else 0 for nd in nodes], dtype=np.int64),
            value=np.array(get("leaf_value", 0.0), dtype=float)[:, None], col=i % k))
    n_iter = len(trees) // k
    sigma = float(params.get("sigmoid", 1.0))
    average = bool(dump.get("average_output", False))
    wrapper_proba = hasattr(model, "booster_") and hasattr(model, "classes_")

    def link(raw):
        if average:
            raw = raw / n_iter
        if name in _LGB_IDENTITY:
            return raw
        if name in ("poisson", "gamma", "tweedie"):
            return np.exp(raw)
        if name in ("binary", "cross_entropy", "xentropy"):
            p = 1.0 / (1.0 + np.exp(-sigma * raw))
            return np.column_stack([1.0 - p[:, 0], p[:, 0]]) if wrapper_proba else p
        if name == "multiclass":
            e = np.exp(raw - raw.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        if name == "multiclassova":
            return 1.0 / (1.0 + np.exp(-sigma * raw))
        raise AssertionError(name)

    if name not in _LGB_IDENTITY + ("poisson", "gamma", "tweedie", "binary", "cross_entropy", "xentropy",
                                    "multiclass", "multiclassova"):
        return None
    st = _stack(trees, k)
    zero = np.concatenate([t["zero"] for t in trees])
    return Forest(feature=st["feature"], threshold=st["threshold"], boundary=st["threshold"], left=st["left"],
                  right=st["right"], missing_left=st["missing_left"], is_leaf=st["is_leaf"], value=st["value"],
                  roots=st["roots"], baseline=np.zeros(k), link=link, float32=False, output=out,
                  name=type(model).__name__, n_features=int(booster.num_feature()),
                  zero_missing=zero if zero.any() else None)


def read_forest(model: Any, target_class: Any = None) -> Forest | None:
    """The model's trees as a :class:`Forest`, or None when this module does not read it (midpoint route)."""
    if type(model).__module__.startswith("lightgbm"):
        return _read_lightgbm(model, target_class)
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
def _jumps(forest: Forest, X: np.ndarray, S: np.ndarray, stepped: np.ndarray):
    """Start values and boundary jumps of the summed trees along each row's path.

    ``X`` (m, p) rows, ``S`` (m, p) shifts, ``stepped`` (p,) bool. Each split of
    an interval at t* creates one boundary (row, t*); the pieces either side
    carry its id at their right/left edge down to their leaves, whose values
    then give the boundary's jump v(t*+) - v(t*-) without sorting pieces.

    Returns
    -------
    start : ndarray (m, K), the raw scores on (0, first boundary) without the baseline
    br, bt : ndarray (nb,), row and t of each boundary (unsorted; repeats across trees)
    jump : ndarray (nb, K)
    """
    m, p = X.shape
    K = forest.value.shape[1]
    Xf = X.ravel()
    Xc = X.astype(np.float32).ravel() if forest.float32 else Xf
    Sf = S.ravel()
    any_nan = bool(np.isnan(Xf).any())
    feat, kids, thr_all, bnd_all = forest.node_feature, forest.node_kids, forest.threshold, forest.boundary
    # (boolean masks are avoided: flatnonzero + take is several times faster than mask indexing)
    r = np.tile(np.arange(m, dtype=np.int64), forest.n_trees)
    node = np.repeat(forest.roots, m)
    lo, hi = np.zeros(r.size), np.ones(r.size)
    le, re = np.full(r.size, -1, dtype=np.int64), np.full(r.size, -1, dtype=np.int64)
    s_r, s_node, b_r, b_t, j_id, j_node, j_sign = [], [], [], [], [], [], []
    nb = 0
    while r.size:
        f = feat.take(node)
        leaf = f < 0
        li = np.flatnonzero(leaf)
        if li.size:
            lnode, lle, lre = node.take(li), le.take(li), re.take(li)
            at0 = np.flatnonzero(lle < 0)
            s_r.append(r.take(li).take(at0))
            s_node.append(lnode.take(at0))
            inner_l, inner_r = np.flatnonzero(lle >= 0), np.flatnonzero(lre >= 0)
            j_id += [lle.take(inner_l), lre.take(inner_r)]
            j_node += [lnode.take(inner_l), lnode.take(inner_r)]
            j_sign += [inner_l.size, inner_r.size]
            ki = np.flatnonzero(~leaf)
            if not ki.size:
                break
            r, lo, hi, le, re, node, f = (r.take(ki), lo.take(ki), hi.take(ki), le.take(ki), re.take(ki),
                                          node.take(ki), f.take(ki))
        cell = r * p + f
        xv = Xc.take(cell)
        thr = thr_all.take(node)
        go_right = (xv >= thr) if forest.strict else (xv > thr)
        if any_nan:
            nan = np.flatnonzero(np.isnan(xv))
            go_right[nan] = ~forest.missing_left.take(node.take(nan))
        if forest.zero_missing is not None:
            zi = np.flatnonzero(forest.zero_missing.take(node) & (np.abs(xv) <= _LGB_ZERO))
            go_right[zi] = ~forest.missing_left.take(node.take(zi))
        two = node * 2
        new_node = kids.take(two + go_right)
        idx = np.flatnonzero(stepped.take(f))
        if idx.size:
            ci = cell.take(idx)
            s, x = Sf.take(ci), Xf.take(ci)
            move = np.flatnonzero((s != 0) & ~np.isnan(x))  # a missing value stays missing along the path
            if move.size < idx.size:
                idx, s, x = idx.take(move), s.take(move), x.take(move)
        if idx.size:
            two_i = two.take(idx)
            tstar = (bnd_all.take(node.take(idx)) - x) / s
            pos = s > 0
            Li, Ri = kids.take(two_i), kids.take(two_i + 1)
            low_child, up_child = np.where(pos, Li, Ri), np.where(pos, Ri, Li)
            lo_i, hi_i = lo.take(idx), hi.take(idx)
            has_low = tstar > lo_i
            # inside the interval: the entry keeps the low part, an extra entry takes the up part
            new_node[idx] = np.where(has_low, low_child, up_child)
            bi = np.flatnonzero(has_low & (tstar < hi_i))
            if bi.size:
                ib = idx.take(bi)
                ids = np.arange(nb, nb + bi.size, dtype=np.int64)
                nb += bi.size
                tb = tstar.take(bi)
                rb = r.take(ib)
                b_r.append(rb)
                b_t.append(tb)
                ext_re = re.take(ib)
                hi[ib] = tb
                re[ib] = ids
                r = np.concatenate([r, rb])
                lo = np.concatenate([lo, tb])
                hi = np.concatenate([hi, hi_i.take(bi)])
                le = np.concatenate([le, ids])
                re = np.concatenate([re, ext_re])
                new_node = np.concatenate([new_node, up_child.take(bi)])
        node = new_node
    cat = (lambda xs, dt: np.concatenate(xs) if xs else np.empty(0, dtype=dt))
    start = np.empty((m, K))
    sr, sv = cat(s_r, np.int64), forest.value.take(cat(s_node, np.int64), axis=0)
    ids, jv = cat(j_id, np.int64), forest.value.take(cat(j_node, np.int64), axis=0)
    # the left edge of a piece gains its value at the boundary, the right edge loses it
    sign = np.repeat(np.tile([1.0, -1.0], len(j_sign) // 2), j_sign)
    jump = np.empty((nb, K))
    for k in range(K):
        start[:, k] = np.bincount(sr, weights=sv[:, k], minlength=m)
        jump[:, k] = np.bincount(ids, weights=sign * jv[:, k], minlength=nb)
    return start, cat(b_r, np.int64), cat(b_t, float), jump


def _row_scan(x: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Running sums of ``x`` within each row (``pos``: offset of each entry in its row, rows contiguous).

    A Hillis-Steele scan: after pass s every entry holds the sum of the 2**s entries of its own row
    ending at it, combined in an order fixed by its offset alone. A global cumsum minus the row's
    start would make a row's rounding (up to 1e-10 relative in the NLM) depend on the rows before it,
    i.e. on how the data were batched or partitioned.
    """
    y = x.copy()
    s = 1
    top = int(pos.max()) + 1 if pos.size else 0
    while s < top:
        idx = np.flatnonzero(pos >= s)
        y[idx] = y[idx] + y[idx - s]  # fancy-index reads take a copy of the previous pass first
        s *= 2
    return y


def _segments(m: int, start: np.ndarray, br: np.ndarray, bt: np.ndarray, jump: np.ndarray):
    """Per-row segments (row, a, b, raw scores, first segment of each row), sorted by row and t."""
    k = start.shape[1]
    # sort by t, then stably by row (radix sort for small integer keys); both stable, so boundaries of one
    # row at the same t (trees sharing a threshold) are summed in tree order whatever else the chunk holds
    o = np.argsort(bt, kind="stable")
    o = o[np.argsort(br[o].astype(np.uint32 if m >= 2 ** 16 else np.uint16), kind="stable")]
    br, bt, jump = br[o], bt[o], jump[o]
    if br.size:
        new = np.empty(br.size, dtype=bool)
        new[0] = True
        np.not_equal(br[1:], br[:-1], out=new[1:])
        new[1:] |= bt[1:] != bt[:-1]
        gstart = np.flatnonzero(new)
        gsum = np.add.reduceat(jump, gstart, axis=0)
        gr, gt = br[gstart], bt[gstart]
    else:
        gsum, gr, gt = np.empty((0, k)), np.empty(0, dtype=np.int64), np.empty(0)
    ng = np.bincount(gr, minlength=m)
    first = np.cumsum(ng) - ng
    after = start[gr] + _row_scan(gsum, np.arange(gr.size) - first[gr])
    # segments: per row the first (0, t_1), then one after each boundary
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


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _default_threads() -> int:
    """The usable cores, at most 4, and at most ``OMP_NUM_THREADS`` when that is set.

    Dask's workers (and other process pools) set ``OMP_NUM_THREADS=1`` so that
    each process uses the one core it was given; the traversal honours that as
    the models' own OpenMP ``predict`` does, instead of oversubscribing.
    """
    n = min(4, _cpu_count())
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) >= 1:
        n = min(n, int(omp))
    return n


def traverse_nlm(forest: Forest, X: pd.DataFrame, shifts: Mapping[str, np.ndarray], f0: np.ndarray,
                 f1: np.ndarray, entry_budget: int = _ENTRY_BUDGET,
                 n_threads: int | None = None, progress: bool | None = False,
                 return_scale: bool = False) -> tuple:
    """Exact NLMs by tree traversal: same outputs as :func:`fme.nlm_exact.exact_nlm` (nlm, sd, segments
    and, with ``return_scale``, the rounding scale of each path).

    ``X`` holds the model's columns in the model's order, all numeric; the
    rows are processed in chunks of about ``entry_budget / n_trees`` rows,
    on ``n_threads`` threads (default: the usable cores, at most 4 and at most ``OMP_NUM_THREADS``; NumPy
    releases the GIL in the array operations, as the ensembles' own
    ``predict`` runs on all cores). Chunks are independent, so the result
    does not depend on the number of threads. ``progress``: a bar over the
    chunks when there are several (:func:`fme._utils.progress.progress_bar`).
    """
    n, p = X.shape
    arr = X.to_numpy(dtype=np.float64, na_value=np.nan)
    S = np.zeros((n, p))
    for f, s in shifts.items():
        S[:, X.columns.get_loc(f)] = s
    stepped = np.zeros(p, dtype=bool)
    stepped[[X.columns.get_loc(f) for f in shifts]] = True
    size = max(1, entry_budget // max(1, forest.n_trees))
    chunks = [slice(i, min(n, i + size)) for i in range(0, n, size)]  # chunks of rows, never one row at a time

    def one(sl: slice):
        m = sl.stop - sl.start
        start_raw, br, bt, jump = _jumps(forest, arr[sl], S[sl], stepped)
        srow, a, b, raw, first = _segments(m, start_raw + forest.baseline, br, bt, jump)
        pred = np.asarray(forest.link(raw), dtype=np.float64)
        if pred.ndim == 1:
            pred = pred[:, None]
        c = pred if forest.output is None else pred[:, forest.output]
        nl, sd, sc = _closed_forms(c, srow, first, b - a, 0.5 * (a + b), f0[sl], f1[sl])
        return nl, sd, srow.size, sc

    workers = min(len(chunks), n_threads if n_threads is not None else _default_threads())
    bar = dict(total=len(chunks), desc="exact NLM (tree traversal, chunks of rows)", progress=progress)
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            parts = list(progress_bar(pool.map(one, chunks), **bar))
    else:
        parts = [one(sl) for sl in progress_bar(chunks, **bar)]
    out = (np.concatenate([q[0] for q in parts]), np.concatenate([q[1] for q in parts]),
           int(sum(q[2] for q in parts)))
    return (*out, np.concatenate([q[3] for q in parts])) if return_scale else out
