"""Exact NLM of tree ensembles by traversing the trees along the path (paper §5.4).

The midpoint route of :mod:`fme._nlm.exact` predicts at the midpoint of every
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
   predictions, and the closed forms of :mod:`fme._nlm.exact` give the NLM.

Comparisons replicate the model's: scikit-learn's ``tree_`` compares the
float32-cast input with a float64 threshold, so a row's value routes by
``float32(x) <= threshold`` and a stepped feature crosses at the float64
boundary of that set (:func:`fme._nlm.exact.float32_boundary`); HistGradientBoosting
compares float64 values; XGBoost goes left iff ``float32(x) < split_condition`` (``strict``), so its
crossings are the float64 boundaries of that set, and it sums float32 leaves where the traversal sums
float64 (its predictions agree to float32 rounding). The trees are read by the model's adapter
(:mod:`fme._adapters`: scikit-learn ``DecisionTree*``, ``ExtraTree*``, ``RandomForest*``,
``ExtraTrees*``, ``GradientBoosting*`` (constant init) and ``HistGradientBoosting*`` without
categorical features in :mod:`fme._adapters._sktrees`; LightGBM in :mod:`fme._adapters.lightgbm`;
XGBoost ``gbtree`` regressors and binary classifiers in :mod:`fme._adapters.xgboost`).
Other supported models use the midpoint route.

Steps 1 and 2 run compiled (:mod:`fme._nlm.tree_kernel`, numba: a depth-first walk per row and tree, a few ns
per node instead of NumPy's ~70 ns per entry and level); :func:`_jumps` and :func:`_segments` below are the
NumPy route of the same rules, the reference the kernel's tests compare with.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

from .._adapters import adapt
from .._adapters.forest import LGB_ZERO as _LGB_ZERO
from .._adapters.forest import Forest
from .._utils.progress import progress_bar
from . import tree_kernel
from .exact import closed_forms

__all__ = ["Forest", "read_forest", "traverse_nlm"]

#: (row, interval, node) entries started per chunk (~100 bytes each, and the cuts add more; small chunks stay
#: in cache: 200k was 25 % faster than 1M on HistGradientBoosting, 100 trees, and 50k another 15-30 % faster
#: than 200k there and on a 200-tree random forest, whose entries grow fourfold by cuts).
_ENTRY_BUDGET = 50_000


def read_forest(model: Any, target_class: Any = None) -> Forest | None:
    """The model's trees as a :class:`Forest`, or None when they are not read (midpoint route).

    Which models have readable trees is their adapter's business
    (:meth:`fme._adapters.ModelAdapter.forest`: scikit-learn trees and ensembles, LightGBM, XGBoost).
    """
    return adapt(model, target_class).forest()


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
    # float32-rounded values held as float64: compared with float64 thresholds without a cast per level
    Xc = X.astype(np.float32).astype(np.float64).ravel() if forest.float32 else Xf
    Sf = S.ravel()
    any_nan = bool(np.isnan(Xf).any())
    # cells whose value moves along the path: stepped, a non-zero step and a value (a missing value
    # stays missing along the path); one gather per level then finds the entries to cut
    moving = (np.broadcast_to(stepped, (m, p)) & (S != 0) & ~np.isnan(X)).ravel()
    feat, kids, thr_all, bnd_all = forest.node_feature, forest.node_kids, forest.threshold, forest.boundary
    # (boolean masks are avoided: flatnonzero + take is several times faster than mask indexing)
    r = np.tile(np.arange(m, dtype=np.int64) * p, forest.n_trees)  # row * p: the row's first cell
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
            r, lo, hi, le, re, node, f = (
                r.take(ki),
                lo.take(ki),
                hi.take(ki),
                le.take(ki),
                re.take(ki),
                node.take(ki),
                f.take(ki),
            )
        cell = r + f
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
        idx = np.flatnonzero(moving.take(cell))
        if idx.size:
            ci = cell.take(idx)
            s, x = Sf.take(ci), Xf.take(ci)
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
    cat = lambda xs, dt: np.concatenate(xs) if xs else np.empty(0, dtype=dt)
    start = np.empty((m, K))
    sr, sv = cat(s_r, np.int64) // p, forest.value.take(cat(s_node, np.int64), axis=0)
    ids, jv = cat(j_id, np.int64), forest.value.take(cat(j_node, np.int64), axis=0)
    # the left edge of a piece gains its value at the boundary, the right edge loses it
    sign = np.repeat(np.tile([1.0, -1.0], len(j_sign) // 2), j_sign)
    jump = np.empty((nb, K))
    for k in range(K):
        start[:, k] = np.bincount(sr, weights=sv[:, k], minlength=m)
        jump[:, k] = np.bincount(ids, weights=sign * jv[:, k], minlength=nb)
    return start, cat(b_r, np.int64) // p, cat(b_t, float), jump


def _sums32(
    forest: Forest, X: np.ndarray, S: np.ndarray, srow: np.ndarray, a: np.ndarray, b: np.ndarray, stepped: np.ndarray
) -> np.ndarray:
    """The raw scores (n_segments, 1) of a ``sum32`` forest as the model computes them: each tree's leaf on the
    segment, summed in float32 in tree order from float32(baseline). The NumPy route's counterpart of the
    kernel's incremental sums: every tree walked level by level for all segments at once, a moving cell routed
    by where the segment's midpoint lies against the node's crossing t* (as the traversal cuts), not by
    evaluating x + t h (a segment can be narrower than that sum's rounding), any other cell by its value."""
    tm = 0.5 * (a + b)
    x, s = X[srow], S[srow]
    moving = np.broadcast_to(stepped, x.shape) & (s != 0) & ~np.isnan(x)
    xc = x.astype(np.float32).astype(np.float64) if forest.float32 else x
    acc = np.full(srow.size, np.float32(forest.baseline[0]), dtype=np.float32)
    for root in forest.roots:  # a loop over the trees; each walks all segments at once
        node = np.full(srow.size, root, dtype=np.int64)
        inner = np.flatnonzero(~forest.is_leaf[node])
        while inner.size:
            nd, f = node[inner], forest.feature[node[inner]]
            v = xc[inner, f]
            right = (v >= forest.threshold[nd]) if forest.strict else (v > forest.threshold[nd])
            right[np.isnan(v)] = ~forest.missing_left[nd[np.isnan(v)]]
            mv = moving[inner, f]
            with np.errstate(divide="ignore", invalid="ignore"):
                tstar = (forest.boundary[nd] - x[inner, f]) / s[inner, f]
            below = tm[inner] < tstar  # the lower part goes to the child the row reaches first
            right = np.where(mv, below == (s[inner, f] < 0), right)
            node[inner] = np.where(right, forest.right[nd], forest.left[nd])
            inner = inner[~forest.is_leaf[node[inner]]]
        acc = (acc + forest.value[node, 0].astype(np.float32)).astype(np.float32)
    return acc.astype(np.float64)[:, None]


#: Padded (rows x longest row) blocks are used while they hold at most this many cells per entry.
_PAD_RATIO = 3


def _row_scan(x: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Running sums of ``x`` within each row (``pos``: offset of each entry in its row, rows contiguous).

    A Hillis-Steele scan: after pass s every entry holds the sum of the 2**s entries of its own row
    ending at it, combined in an order fixed by its offset alone. A global cumsum minus the row's
    start would make a row's rounding (up to 1e-10 relative in the NLM) depend on the rows before it,
    i.e. on how the data were batched or partitioned. Rows of similar length are scanned as a padded
    (rows, longest) block (slices instead of index arrays; the same sums in the same order).
    """
    top = int(pos.max()) + 1 if pos.size else 0
    rows = np.flatnonzero(pos == 0).size
    if rows * top <= _PAD_RATIO * pos.size + 1024:
        row = np.cumsum(pos == 0) - 1
        block = np.zeros((rows, top) + x.shape[1:])
        block[row, pos] = x
        s = 1
        while s < top:
            block[:, s:] = block[:, s:] + block[:, :-s]  # the right side is evaluated (copied) first
            s *= 2
        return block[row, pos]
    y = x.copy()
    s = 1
    while s < top:
        idx = np.flatnonzero(pos >= s)
        y[idx] = y[idx] + y[idx - s]  # fancy-index reads take a copy of the previous pass first
        s *= 2
    return y


def _row_order(m: int, br: np.ndarray, bt: np.ndarray) -> np.ndarray:
    """The permutation sorting boundaries by row, then t, ties in their original (creation) order.

    Creation order within a row does not depend on the other rows, so neither does the order in which
    a row's tied boundaries (trees sharing a threshold) are summed. Rows of similar length are sorted
    each in its own padded line (timsort on rows of ~1000 instead of one sort of all: about 30 % less).
    """
    key = br.astype(np.uint32 if m >= 2**16 else np.uint16)
    counts = np.bincount(br, minlength=m)
    top = int(counts.max()) if br.size else 0
    if m * top > _PAD_RATIO * br.size + 1024:
        o = np.argsort(bt, kind="stable")  # then stably by row (radix sort for small integer keys)
        return o[np.argsort(key[o], kind="stable")]
    o = np.argsort(key, kind="stable")  # rows contiguous, each in creation order
    rb = br[o]
    cell = rb * top + (np.arange(br.size) - (np.cumsum(counts) - counts)[rb])
    t = np.full(m * top, np.inf)
    t[cell] = bt[o]
    idx = np.full(m * top, -1, dtype=np.int64)
    idx[cell] = o
    within = np.argsort(t.reshape(m, top), axis=1, kind="stable")  # padding (inf) stays at the end
    out = np.take_along_axis(idx.reshape(m, top), within, axis=1).ravel()
    return out[out >= 0]


def _segments(m: int, start: np.ndarray, br: np.ndarray, bt: np.ndarray, jump: np.ndarray):
    """Per-row segments (row, a, b, raw scores, first segment of each row), sorted by row and t."""
    k = start.shape[1]
    o = _row_order(m, br, bt)
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


def traverse_nlm(
    forest: Forest,
    X: pd.DataFrame,
    shifts: Mapping[str, np.ndarray],
    f0: np.ndarray,
    f1: np.ndarray,
    entry_budget: int = _ENTRY_BUDGET,
    n_threads: int | None = None,
    progress: bool | None = False,
    return_scale: bool = False,
) -> tuple:
    """Exact NLMs by tree traversal: same outputs as :func:`fme._nlm.exact.exact_nlm` (nlm, sd, segments
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
        if tree_kernel.available():
            srow, a, b, raw, first = tree_kernel.forest_segments(forest, arr[sl], S[sl], stepped)
        else:
            start_raw, br, bt, jump = _jumps(forest, arr[sl], S[sl], stepped)
            srow, a, b, raw, first = _segments(m, start_raw + forest.baseline, br, bt, jump)
            if forest.sum32:
                raw = _sums32(forest, arr[sl], S[sl], srow, a, b, stepped)
        pred = np.asarray(forest.link(raw), dtype=np.float64)
        if pred.ndim == 1:
            pred = pred[:, None]
        c = pred if forest.output is None else pred[:, forest.output]
        nl, sd, sc = closed_forms(c, srow, first, b - a, 0.5 * (a + b), f0[sl], f1[sl])
        return nl, sd, srow.size, sc

    workers = min(len(chunks), n_threads if n_threads is not None else _default_threads())
    bar = dict(total=len(chunks), desc="exact NLM (tree traversal, chunks of rows)", progress=progress)
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            parts = list(progress_bar(pool.map(one, chunks), **bar))
    else:
        parts = [one(sl) for sl in progress_bar(chunks, **bar)]
    out = (np.concatenate([q[0] for q in parts]), np.concatenate([q[1] for q in parts]), int(sum(q[2] for q in parts)))
    return (*out, np.concatenate([q[3] for q in parts])) if return_scale else out
