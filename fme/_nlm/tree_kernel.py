"""Compiled kernel of the tree traversal (paper §5.4): each row's path through every tree, depth first.

:func:`fme._nlm.tree_paths._jumps` and :func:`~fme._nlm.tree_paths._segments` do the same work as whole-array
NumPy passes, one pass per depth level over all (row, interval, node) entries of a chunk: about 70 ns per entry
and level, most of a 200-tree forest's exact NLM. Here numba compiles the depth-first walk of each row through
each tree (a block of rows tree by tree), so a node visit costs tens of nanoseconds and no entry arrays are
built. The rules are those of the NumPy route, which stays as the reference the tests hold this kernel to:

* a node splitting on a moving cell (stepped, non-zero step, a value) at crossing ``t* = (boundary - x) / h``
  inside the interval (lo, hi) splits it: the lower part goes to the child the row reaches first;
* any other node routes the whole interval by the row's value: ``float32(x)`` when the model casts, ``<`` when
  its comparison is strict, the missing-value direction for NaN (and, for LightGBM's missing type Zero,
  for |x| <= 1e-35);
* a leaf piece starting at 0 adds its values to the path's start, every other edge is a jump at its t; the jumps
  of a row are sorted by t (stable: ties in tree order, so a row's sums never depend on the other rows of the
  chunk), summed per distinct t and accumulated left to right into one segment per distinct t.
"""

from __future__ import annotations

import numpy as np

from .._adapters.forest import LGB_ZERO

try:  # numba is a declared dependency (fme._nlm.bracket_kernel needs it too)
    import numba

    from .._utils.jit import njit
except ImportError:  # pragma: no cover - an installation without its dependencies
    numba = None

__all__ = ["available", "forest_segments"]


def available() -> bool:
    """Whether the compiled kernel runs; the tests set it False to run the NumPy route through the same caller."""
    return numba is not None


def _grow(a: np.ndarray, need: int) -> np.ndarray:
    """``a`` with room for at least ``need`` entries along axis 0 (doubling), contents kept."""
    cap = a.shape[0]
    if need <= cap:
        return a
    while cap < need:
        cap *= 2
    out = np.empty((cap,) + a.shape[1:], dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


#: One node per 32-byte record: one cache line read per node visited where five separate arrays (feature,
#: children, threshold, boundary, flags) were five.
NODE = np.dtype(
    [
        ("feature", np.int32),
        ("left", np.int32),
        ("right", np.int32),
        ("flags", np.int32),
        ("threshold", np.float64),
        ("boundary", np.float64),
    ]
)
_MISSING_LEFT, _ZERO_MISSING = 1, 2
#: Rows walked together through one tree.
_BLOCK = 64


def _walk_block(
    b0,
    rows,
    X,
    Xc,
    S,
    moving,
    nodes,
    strict,
    value,
    roots,
    zero_eps,
    st_node,
    st_lo,
    st_hi,
    start,
    ev_t,
    ev_jump,
    ne,
    sum32,
    leaf0,
    ev_tree,
):
    """Rows ``b0 .. b0 + rows`` through every tree, tree by tree (a tree's nodes stay in cache while the block
    walks it): adds each row's piece at t = 0 to ``start[r]`` and appends its boundaries (t, jump of the tree's
    value) to ``ev_*[r]``; returns False when some row's boundaries do not fit (the caller grows the buffers).
    ``sum32``: instead, each tree's value at t = 0 goes to ``leaf0[r, tree]`` and a boundary records the tree
    (``ev_tree``) and its new value (in ``ev_jump``), for the float32 sums of :func:`_emit_row32`.
    One call per block: a call per (row, tree) cost more than the walk (reference counts of its array arguments)."""
    K = value.shape[1]
    cap = ev_t.shape[1]
    for tree in range(roots.shape[0]):
        for r in range(rows):
            i = b0 + r
            n_ev = ne[r]
            st_node[0] = roots[tree]
            st_lo[0] = 0.0
            st_hi[0] = 1.0
            top = 1
            last = -1
            # depth first, the lower part of a split interval first: a tree's pieces come in increasing t
            while top > 0:
                top -= 1
                node = st_node[top]
                lo = st_lo[top]
                hi = st_hi[top]
                while True:
                    rec = nodes[node]
                    f = rec.feature
                    if f < 0:
                        break
                    if moving[i, f]:
                        s = S[i, f]
                        tstar = (rec.boundary - X[i, f]) / s
                        if s > 0:
                            low_child = rec.left
                            up_child = rec.right
                        else:
                            low_child = rec.right
                            up_child = rec.left
                        # branch-free: whether t* falls inside (lo, hi) is unpredictable; the upper part is always
                        # written to the stack (it has room: depth + 2) and kept only on a split
                        above = tstar > lo
                        split = above & (tstar < hi)
                        st_node[top] = up_child
                        st_lo[top] = tstar
                        st_hi[top] = hi
                        top += split
                        hi = tstar if split else hi
                        node = low_child if above else up_child
                        continue
                    xv = Xc[i, f]
                    if strict:
                        right = xv >= rec.threshold
                    else:
                        right = xv > rec.threshold
                    if np.isnan(xv) or ((rec.flags & 2) != 0 and abs(xv) <= zero_eps):
                        right = (rec.flags & 1) == 0
                    node = rec.right if right else rec.left
                if lo == 0.0:
                    if sum32:
                        leaf0[r, tree] = value[node, 0]
                    else:
                        for k in range(K):
                            start[r, k] += value[node, k]
                else:
                    if n_ev == cap:
                        return False
                    ev_t[r, n_ev] = lo
                    if sum32:
                        ev_tree[r, n_ev] = tree
                        ev_jump[r, n_ev, 0] = value[node, 0]
                    else:
                        for k in range(K):
                            ev_jump[r, n_ev, k] = value[node, k] - value[last, k]
                    n_ev += 1
                last = node
            ne[r] = n_ev
    return True


def _merge_sort(t, ne, order, tmp):
    """``order[:ne]``: the indices of ``t[:ne]`` sorted by value, ties by index (a bottom-up merge sort; numba's
    own ``argsort(kind="mergesort")`` added 1.3 s to the kernel's one-time compilation)."""
    src, dst = order, tmp
    for e in range(ne):
        src[e] = e
    swapped = False
    width = 1
    while width < ne:
        for lo in range(0, ne, 2 * width):
            mid = min(lo + width, ne)
            hi = min(lo + 2 * width, ne)
            i, j = lo, mid
            for k in range(lo, hi):
                # the left run's next unless the right run's is strictly smaller: ties keep their order
                if j >= hi or (i < mid and not t[src[j]] < t[src[i]]):
                    dst[k] = src[i]
                    i += 1
                else:
                    dst[k] = src[j]
                    j += 1
        src, dst = dst, src
        swapped = not swapped
        width *= 2
    if swapped:  # the sorted runs are in tmp
        for e in range(ne):
            order[e] = src[e]


def _order(t, ne, order, cnt):
    """``order[:ne]``: the indices of ``t[:ne]`` (values in (0, 1)) sorted by value, ties by index.

    A bucket pass (ne buckets over (0, 1), filled in index order) and an insertion sort within each bucket:
    linear for spread values, where a comparison sort of a row's few hundred boundaries cost more than its
    walk. A row whose values crowd one bucket (more than 64) is sorted by a stable merge sort instead
    (:func:`_merge_sort`)."""
    nb = ne
    for q in range(nb + 1):
        cnt[q] = 0
    for e in range(ne):
        q = min(int(t[e] * nb), nb - 1)
        cnt[q + 1] += 1
    for q in range(nb):
        if cnt[q + 1] > 64:
            _merge_sort(t, ne, order, cnt)
            return
        cnt[q + 1] += cnt[q]
    for e in range(ne):
        q = min(int(t[e] * nb), nb - 1)
        order[cnt[q]] = e
        cnt[q] += 1
    # cnt[q] is now the end of bucket q: insertion sort (stable) within each bucket
    lo = 0
    for q in range(nb):
        hi = cnt[q]
        for x in range(lo + 1, hi):
            e = order[x]
            v = t[e]
            y = x - 1
            while y >= lo and t[order[y]] > v:
                order[y + 1] = order[y]
                y -= 1
            order[y + 1] = e
        lo = hi


def _emit_row(ne, start, ev_t, ev_jump, seg_a, seg_raw, ns, order, cnt):
    """The row's segments from its boundaries, written at ``seg_*[ns:]``; returns their number.

    Boundaries are ordered by t (ties in creation order: a row's sums depend on its own boundaries alone), the
    jumps at one t are summed, then added to the running raw score."""
    K = start.shape[0]
    _order(ev_t, ne, order, cnt)
    seg_a[ns] = 0.0
    for k in range(K):
        seg_raw[ns, k] = start[k]
    c = 1
    e = 0
    while e < ne:
        t = ev_t[order[e]]
        for k in range(K):
            seg_raw[ns + c, k] = 0.0
        while e < ne and ev_t[order[e]] == t:
            j = order[e]
            for k in range(K):
                seg_raw[ns + c, k] += ev_jump[j, k]
            e += 1
        seg_a[ns + c] = t
        for k in range(K):
            seg_raw[ns + c, k] += seg_raw[ns + c - 1, k]
        c += 1
    return c


def _emit_row32(ne, base, leaf0, ev_t, ev_tree, ev_val, seg_a, seg_raw, ns, order, cnt, seg_of, acc):
    """As :func:`_emit_row`, but each segment's raw score is the float32 sum of its trees' values in tree order
    from float32 ``base`` (XGBoost's own margin). The boundaries come tree by tree, in increasing t within a
    tree (the walk's order), so tree by tree, each of its values is added to the running sums of the segments
    it spans (a slice): every segment's sum takes its trees in tree order, the same float32 numbers as
    XGBoost's, without recomputing a chain of partial sums at every boundary."""
    T = leaf0.shape[0]
    _order(ev_t, ne, order, cnt)
    seg_a[ns] = 0.0
    c = 0
    e = 0
    while e < ne:  # the segment each boundary opens: one per distinct t
        t = ev_t[order[e]]
        c += 1
        seg_a[ns + c] = t
        while e < ne and ev_t[order[e]] == t:
            seg_of[order[e]] = c
            e += 1
    nseg = c + 1
    for q in range(nseg):
        acc[q] = base
    e = 0
    for k in range(T):
        v = np.float32(leaf0[k])
        s0 = 0
        while e < ne and ev_tree[e] == k:
            s1 = seg_of[e]
            for q in range(s0, s1):
                acc[q] = acc[q] + v
            v = np.float32(ev_val[e, 0])
            s0 = s1
            e += 1
        for q in range(s0, nseg):
            acc[q] = acc[q] + v
    for q in range(nseg):
        seg_raw[ns + q, 0] = acc[q]
    return nseg


def _forest_segments(
    X, Xc, S, moving, nodes, strict, value, roots, baseline, zero_eps, depth, block, cap, seg_cap, sum32
):
    m = X.shape[0]
    K = value.shape[1]
    # a depth-first stack holds at most one pending upper part per level
    st_node = np.empty(depth + 2, dtype=np.int64)
    st_lo = np.empty(depth + 2)
    st_hi = np.empty(depth + 2)
    seg_a = np.empty(seg_cap)
    seg_raw = np.empty((seg_cap, K))
    counts = np.zeros(m, dtype=np.int64)
    T = roots.shape[0]
    base32 = np.float32(baseline[0])
    seg_of, acc = np.empty(cap, dtype=np.int64), np.empty(cap + 1, dtype=np.float32)
    ns = 0
    for b0 in range(0, m, block):
        b1 = min(m, b0 + block)
        while True:
            # tree by tree over a block of rows: a tree's nodes stay in cache while the block walks it
            start = np.empty((b1 - b0, K))
            ev_t, ev_jump = np.empty((b1 - b0, cap)), np.empty((b1 - b0, cap, K))
            ev_tree = np.empty((b1 - b0, cap if sum32 else 0), dtype=np.int64)
            leaf0 = np.empty((b1 - b0, T if sum32 else 0))
            ne = np.zeros(b1 - b0, dtype=np.int64)
            order, cnt = np.empty(cap, dtype=np.int64), np.empty(cap + 1, dtype=np.int64)
            for r in range(b1 - b0):
                start[r] = baseline
            if _walk_block(
                b0,
                b1 - b0,
                X,
                Xc,
                S,
                moving,
                nodes,
                strict,
                value,
                roots,
                zero_eps,
                st_node,
                st_lo,
                st_hi,
                start,
                ev_t,
                ev_jump,
                ne,
                sum32,
                leaf0,
                ev_tree,
            ):
                break
            cap *= 2  # more boundaries than room: grow and walk the block again
        if sum32 and acc.shape[0] < cap + 1:
            seg_of, acc = np.empty(cap, dtype=np.int64), np.empty(cap + 1, dtype=np.float32)
        for r in range(b1 - b0):
            if ns + ne[r] + 1 > seg_cap:
                seg_cap = max(2 * seg_cap, ns + ne[r] + 1)
                seg_a = _grow(seg_a, seg_cap)
                seg_raw = _grow(seg_raw, seg_cap)
            if sum32:
                c = _emit_row32(
                    ne[r],
                    base32,
                    leaf0[r],
                    ev_t[r],
                    ev_tree[r],
                    ev_jump[r],
                    seg_a,
                    seg_raw,
                    ns,
                    order,
                    cnt,
                    seg_of,
                    acc,
                )
            else:
                c = _emit_row(ne[r], start[r], ev_t[r], ev_jump[r], seg_a, seg_raw, ns, order, cnt)
            counts[b0 + r] = c
            ns += c
    return seg_a[:ns].copy(), seg_raw[:ns].copy(), counts


def node_records(forest) -> tuple[np.ndarray, int]:
    """The forest's nodes as :data:`NODE` records and its deepest leaf's depth, built once per forest.

    Cached on the forest in one assignment: threads of :func:`fme._nlm.tree_paths.traverse_nlm` may ask at the
    same time, and each sees either nothing (and builds the same pair) or the whole pair."""
    got = getattr(forest, "_kernel_nodes", None)
    if got is None:
        n = forest.node_feature.size
        if n >= 2**31:
            raise OverflowError("more than 2**31 tree nodes")  # int32 ids; never reached by real models
        rec = np.zeros(n, dtype=NODE)
        rec["feature"] = forest.node_feature
        rec["left"] = forest.node_kids[0::2]
        rec["right"] = forest.node_kids[1::2]
        flags = np.where(np.asarray(forest.missing_left, dtype=bool), _MISSING_LEFT, 0)
        if forest.zero_missing is not None:
            flags |= np.where(np.asarray(forest.zero_missing, dtype=bool), _ZERO_MISSING, 0)
        rec["flags"] = flags
        rec["threshold"] = forest.threshold
        rec["boundary"] = forest.boundary
        got = (rec, _max_depth(forest))
        forest._kernel_nodes = got
    return got


def _max_depth(forest) -> int:
    """The deepest leaf's depth over all trees (levels from the roots, vectorised over the nodes)."""
    node, depth = np.asarray(forest.roots, dtype=np.int64), 0
    while True:
        node = node[forest.node_feature[node] >= 0]
        if not node.size:
            return depth
        node = np.concatenate([forest.node_kids[2 * node], forest.node_kids[2 * node + 1]])
        depth += 1


if numba is not None:
    _grow = njit(nogil=True)(_grow)
    _walk_block = njit(nogil=True)(_walk_block)
    _merge_sort = njit(nogil=True)(_merge_sort)
    _order = njit(nogil=True)(_order)
    _emit_row = njit(nogil=True, inline="always")(_emit_row)
    _emit_row32 = njit(nogil=True)(_emit_row32)
    _forest_segments = njit(nogil=True)(_forest_segments)


def forest_segments(
    forest, X: np.ndarray, S: np.ndarray, stepped: np.ndarray, ev_cap: int | None = None, seg_cap: int | None = None
):
    """Per-row segments of the summed trees along each row's path, baseline included.

    ``X`` (m, p) rows, ``S`` (m, p) shifts, ``stepped`` (p,) bool. Returns ``(srow, a, b, raw, first)`` as
    :func:`fme._nlm.tree_paths._segments`: segments sorted by row and t, raw scores (n_segments, K) (a
    ``sum32`` forest: the model's float32 sums, :func:`_emit_row32`).
    ``ev_cap`` (boundaries per row) and ``seg_cap`` (segments) are the buffers' first sizes; they grow as
    needed (small values test that).
    """
    m, p = X.shape
    X = np.ascontiguousarray(X, dtype=np.float64)
    S = np.ascontiguousarray(S, dtype=np.float64)
    Xc = X.astype(np.float32).astype(np.float64) if forest.float32 else X
    moving = np.ascontiguousarray(np.broadcast_to(stepped, (m, p)) & (S != 0) & ~np.isnan(X))
    nodes, depth = node_records(forest)
    a, raw, counts = _forest_segments(
        X,
        Xc,
        S,
        moving,
        nodes,
        bool(forest.strict),
        np.ascontiguousarray(forest.value, dtype=np.float64),
        np.asarray(forest.roots, dtype=np.int64),
        np.asarray(forest.baseline, dtype=np.float64).reshape(-1),
        LGB_ZERO,
        depth,
        _BLOCK,
        4 * forest.n_trees + 16 if ev_cap is None else max(1, ev_cap),
        4 * m * forest.n_trees + 16 if seg_cap is None else max(1, seg_cap),
        bool(forest.sum32),
    )
    first = np.cumsum(counts) - counts
    srow = np.repeat(np.arange(m), counts)
    b = np.ones(a.size)
    b[:-1] = np.where(srow[1:] == srow[:-1], a[1:], 1.0)
    return srow, a, b, raw, first
