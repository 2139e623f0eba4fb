"""Compiled per-row sums of the error-controlled NLM (paper §5.4; :mod:`fme._nlm.budget_routes` holds the
formulas and :mod:`fme._nlm.budget` the rounds).

The rounds keep per-row sums over millions of brackets and sub-intervals (10^5 rows of a wrapped boosting
model: 4 million open brackets). In NumPy each sum was a ``bincount`` per column over a product computed into
a temporary first: 10 products and 10 passes for the jump route's bound alone. Here one compiled pass per
quantity reads each bracket once and adds every column in bracket order, which is the order ``bincount``
adds in: the sums are the same floating-point numbers.
"""

from __future__ import annotations

import numpy as np

from .._utils.jit import njit
from .._utils.threads import MIN_SLOW_ROWS_PER_THREAD, run_ranges

__all__ = [
    "rowsum",
    "jump_sums",
    "bracket_shares",
    "bracket_rowsums",
    "segment_rowsums",
    "split_brackets",
    "gk_sums",
    "row_argmax",
    "hidden_jumps",
    "level_seen",
]

_jit = njit(nogil=True)
#: Small helpers inlined where called: a compiled call with array arguments costs reference counting per call.
_inline = njit(nogil=True, inline="always")


@_jit
def _rowsum(rows, vals, n):
    out = np.zeros((n, vals.shape[1]))
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(vals.shape[1]):
            out[r, j] += vals[i, j]
    return out


def rowsum(rows: np.ndarray, vals: np.ndarray, n: int) -> np.ndarray:
    """Per-row sums (n, ...) of ``vals`` (k, ...) over the rows ``rows`` (k,), added in index order."""
    flat = np.ascontiguousarray(vals, dtype=np.float64).reshape(vals.shape[0], -1)
    return _rowsum(np.asarray(rows, dtype=np.int64), flat, n).reshape((n,) + vals.shape[1:])


@_inline
def _terms(i, r, j, ba, bb, dL, dR, F, ratio, s1):
    """Bracket i (of row r), output j: half-width s, |J|, |J| s, A = |(1 - r) g + r S1 - m F|, G = |g - S1|
    (s, m, g, J as :func:`fme._nlm.budget_routes.bracket_statics`)."""
    si = 0.5 * (bb[i] - ba[i])
    mi = 0.5 * (ba[i] + bb[i])
    gij = 0.5 * (dL[i, j] + dR[i, j])
    Jij = abs(dL[i, j] - dR[i, j])
    A = abs((1.0 - ratio[r, j]) * gij + ratio[r, j] * s1[r, j] - mi * F[r, j])
    return si, Jij, Jij * si, A, abs(gij - s1[r, j])


@_jit
def _jump_sums(lo, hi, br, ba, bb, dL, dR, F, ratio, s1, out):
    # the rows lo:hi (a range of rows per thread): each row adds its brackets in index order on any threads
    C = dL.shape[1]
    for i in range(br.shape[0]):
        r = br[i]
        if r < lo or r >= hi:
            continue
        for j in range(C):
            si, Jij, aj, A, G = _terms(i, r, j, ba, bb, dL, dR, F, ratio, s1)
            out[r, 0, j] += aj * A
            out[r, 1, j] += si * A
            out[r, 2, j] += aj * G
            out[r, 3, j] += si * G
            out[r, 4, j] += aj
            out[r, 5, j] += aj * si
            out[r, 6, j] += si
            out[r, 7, j] += si * Jij
            out[r, 8, j] += si * si
            out[r, 9, j] += Jij


def jump_sums(br, ba, bb, dL, dR, F, ratio, s1, n) -> np.ndarray:
    """Per-row sums (n, 10, C) of the jump route's bracket terms (see
    :func:`fme._nlm.budget_routes.jump_state`): |J| s A, s A, |J| s G, s G, |J| s, |J| s^2, s, s |J|, s^2, |J|,
    with A = |(1 - r) g + r S1 - m F| and G = |g - S1| per bracket and output; s, m, g, |J| from the bracket's
    ends [a, b] and values dL, dR (:func:`fme._nlm.budget_routes.bracket_statics`)."""
    f = lambda x: np.ascontiguousarray(x, dtype=np.float64)
    args = (np.asarray(br, dtype=np.int64), f(ba), f(bb), f(dL), f(dR), f(F), f(ratio), f(s1))
    out = np.zeros((n, 10, args[3].shape[1]))
    run_ranges(lambda lo, hi: _jump_sums(lo, hi, *args, out), n, align=8, min_rows=MIN_SLOW_ROWS_PER_THREAD)
    return out


@_jit
def _bracket_shares(lo, hi, br, ba, bb, dL, dR, F, ratio, s1, H, bound, D, out):
    C = dL.shape[1]
    for i in range(lo, hi):
        r = br[i]
        best = -np.inf
        for j in range(C):
            si, Jij, aj, A, G = _terms(i, r, j, ba, bb, dL, dR, F, ratio, s1)
            Hb = H[r, j]
            aF = abs(F[r, j])
            om = abs(1.0 - ratio[r, j])
            share = (
                aj * (2.0 * A + aF * si)
                + 4.0 * Hb * si * (A + om * (0.5 * Jij + Hb) + aF * si)
                + min(bound[r, j], 1.0) * (2.0 * aj * G + 4.0 * Hb * si * (G + 0.5 * Jij + Hb))
            )
            v = share / abs(D[r, j])
            if not np.isfinite(v):
                v = np.inf
            if v > best:
                best = v
        out[i] = best


def bracket_shares(br, ba, bb, dL, dR, F, ratio, s1, H, bound, D) -> np.ndarray:
    """Each open bracket's share of its row's bound, the largest over outputs (k,); infinite where undefined."""
    f = lambda x: np.ascontiguousarray(x, dtype=np.float64)
    br = np.asarray(br, dtype=np.int64)
    args = (br, f(ba), f(bb), f(dL), f(dR), f(F), f(ratio), f(s1), f(H), f(bound), f(D))
    out = np.empty(br.shape[0])
    # each bracket on its own: ranges of brackets, one per thread
    run_ranges(
        lambda lo, hi: _bracket_shares(lo, hi, *args, out), br.shape[0], align=8, min_rows=MIN_SLOW_ROWS_PER_THREAD
    )
    return out


@_jit
def _bracket_rowsums(r, ba, bb, dL, dR, c, F, out, sign):
    C = dL.shape[1]
    for i in range(r.shape[0]):
        q = r[i]
        hw = 0.5 * (bb[i] - ba[i])
        m = 0.5 * (ba[i] + bb[i])
        mL = 0.5 * (ba[i] + m)
        mR = 0.5 * (m + bb[i])
        for j in range(C):
            L = dL[i, j]
            R = dR[i, j]
            cc = c[q, j]
            Fq = F[q, j]
            out[q, 0, j] += sign * (hw * (L + R))
            out[q, 1, j] += sign * (hw * ((L - cc) ** 2 + (R - cc) ** 2))
            out[q, 2, j] += sign * (hw * ((L - mL * Fq) ** 2 + (R - mR * Fq) ** 2) + Fq**2 * hw**3 / 6.0)


def bracket_rowsums(r, ba, bb, dL, dR, c, F, out: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """Adds ``sign`` times the per-row (S1, S2, N) of open brackets, each with its jump at its midpoint
    (:func:`fme._nlm.budget_routes.bracket_sums`), to ``out`` (n, 3, C) in place; returns ``out``."""
    f = lambda x: np.ascontiguousarray(x, dtype=np.float64)
    _bracket_rowsums(np.asarray(r, dtype=np.int64), f(ba), f(bb), f(dL), f(dR), f(c), f(F), out, float(sign))
    return out


@_jit
def _segment_rowsums(r, a, b, d, c, F, out):
    C = d.shape[1]
    for i in range(r.shape[0]):
        q = r[i]
        w = b[i] - a[i]
        m = 0.5 * (a[i] + b[i])
        for j in range(C):
            dij = d[i, j]
            Fq = F[q, j]
            out[q, 0, j] += w * dij
            out[q, 1, j] += w * (dij - c[q, j]) ** 2
            out[q, 2, j] += w * (dij - m * Fq) ** 2 + Fq**2 * w**3 / 12.0


def segment_rowsums(r, a, b, d, c, F, n: int) -> np.ndarray:
    """Per-row (S1, S2, N) (n, 3, C) of constant values ``d`` (k, C) on [a, b] relative to f(x)
    (:func:`fme._nlm.budget_routes.segment`), added in index order."""
    f = lambda x: np.ascontiguousarray(x, dtype=np.float64)
    out = np.zeros((n, 3, d.shape[1]))
    _segment_rowsums(np.asarray(r, dtype=np.int64), f(a), f(b), f(d), f(c), f(F), out)
    return out


@_inline
def _add_bracket(out, sign, q, a, b, L, R, c, F):
    hw = 0.5 * (b - a)
    m = 0.5 * (a + b)
    mL = 0.5 * (a + m)
    mR = 0.5 * (m + b)
    for j in range(L.shape[0]):
        cc = c[q, j]
        Fq = F[q, j]
        out[q, 0, j] += sign * (hw * (L[j] + R[j]))
        out[q, 1, j] += sign * (hw * ((L[j] - cc) ** 2 + (R[j] - cc) ** 2))
        out[q, 2, j] += sign * (hw * ((L[j] - mL * Fq) ** 2 + (R[j] - mR * Fq) ** 2) + Fq**2 * hw**3 / 6.0)


@_jit
def _count_extra(lv, rv, bpick, kk, vals):
    """Open pairs beyond the one that takes its bracket's slot, over all picked brackets."""
    C = lv.shape[1]
    extra = 0
    off = 0
    for p in range(bpick.shape[0]):
        i = bpick[p]
        k = kk[p]
        opens = 0
        for q in range(k + 1):
            for j in range(C):
                u = lv[i, j] if q == 0 else vals[off + q - 1, j]
                v = rv[i, j] if q == k else vals[off + q, j]
                if u != v:
                    opens += 1
                    break
        extra += opens - 1
        off += k
    return extra


@_jit
def _cut(r, a, b, lv, rv, k0, bpick, kk, tb, vals, c, F, sums, settled, third):
    """Cuts in place: the arrays have room beyond ``k0`` for the appended open pairs. Values are copied through
    small buffers, never sliced: a slice per pair cost more than the pair's arithmetic."""
    C = lv.shape[1]
    Li, Ri = np.empty(C), np.empty(C)  # the bracket's ends, read before its slot is overwritten
    U, V = np.empty(C), np.empty(C)  # the current pair's values
    pos = k0
    off = 0
    for p in range(bpick.shape[0]):
        i = bpick[p]
        k = kk[p]
        q_row = r[i]
        ai, bi = a[i], b[i]
        for j in range(C):
            Li[j] = lv[i, j]
            Ri[j] = rv[i, j]
            U[j] = lv[i, j]
        _add_bracket(sums, -1.0, q_row, ai, bi, Li, Ri, c, F)  # the cut bracket leaves the sums
        first = True
        t0 = ai
        for q in range(k + 1):
            if q == k:
                t1 = bi
                for j in range(C):
                    V[j] = Ri[j]
            else:
                t1 = tb[off + q]
                neither_l = False
                neither_r = False
                for j in range(C):
                    x = vals[off + q, j]
                    V[j] = x
                    neither_l |= x != Li[j]
                    neither_r |= x != Ri[j]
                if neither_l and neither_r:
                    third[q_row] = True  # a probe equal to neither end: the bracket held two jumps or more
            tie = True
            for j in range(C):
                if U[j] != V[j]:
                    tie = False
            if tie:  # tied neighbours settle as a constant segment
                w = t1 - t0
                mid = 0.5 * (t0 + t1)
                for j in range(C):
                    Fq = F[q_row, j]
                    settled[q_row, 0, j] += w * U[j]
                    settled[q_row, 1, j] += w * (U[j] - c[q_row, j]) ** 2
                    settled[q_row, 2, j] += w * (U[j] - mid * Fq) ** 2 + Fq**2 * w**3 / 12.0
            else:  # an open pair: the first takes the bracket's slot, the others are appended
                slot = i if first else pos
                if not first:
                    pos += 1
                first = False
                r[slot] = q_row
                a[slot] = t0
                b[slot] = t1
                for j in range(C):
                    lv[slot, j] = U[j]
                    rv[slot, j] = V[j]
                _add_bracket(sums, 1.0, q_row, t0, t1, U, V, c, F)
            t0 = t1
            for j in range(C):
                U[j] = V[j]
        off += k
    return pos


_KEYS = ("r", "a", "b", "l", "rt")


def split_brackets(B: dict, bpick, kk, tb, vals, c, F, settled, third) -> None:
    """Cut each picked bracket of ``B`` at its probes (``kk`` per bracket, at ``tb`` with values ``vals``, in
    bracket order), in place: tied neighbours settle into ``settled`` (n, 3, C), the other neighbouring pairs
    stay open (the first in the bracket's slot, the others appended) and ``B["sums"]`` follows; ``third`` (n,)
    marks the rows where a probe equals neither end of its bracket.

    The brackets live in arrays with room to grow (``B["_store"]``; ``B[key]`` are views of their first rows):
    appending in place instead of concatenating saves copying every open bracket in every round."""
    f = lambda x: np.ascontiguousarray(x, dtype=np.float64)
    bpick, kk, tb, vals = (np.asarray(bpick, dtype=np.int64), np.asarray(kk, dtype=np.int64), f(tb), f(vals))
    k0 = B["r"].shape[0]
    extra = _count_extra(f(B["l"]), f(B["rt"]), bpick, kk, vals)
    store = B.get("_store")
    if store is None or store["r"].shape[0] < k0 + extra or any(B[key].base is not store[key] for key in _KEYS):
        cap = (3 * (k0 + extra)) // 2 + 16
        store = {}
        for key in _KEYS:
            v = B[key]
            store[key] = np.empty((cap,) + v.shape[1:], dtype=np.int64 if key == "r" else np.float64)
            store[key][:k0] = v
        B["_store"] = store
    end = _cut(*(store[key] for key in _KEYS), k0, bpick, kk, tb, vals, f(c), f(F), B["sums"], settled, third)
    for key in _KEYS:
        B[key] = store[key][:end]


@_jit
def _gk_sums(Dv, u, wk, wg, a, b, c, F):
    n_nodes, n_int, C = Dv.shape
    K = np.zeros((n_int, 3, C))
    G = np.zeros((n_int, 3, C))
    for i in range(n_int):
        w = b[i] - a[i]
        for j in range(n_nodes):
            t = a[i] + u[j] * (b[i] - a[i])
            wkj = wk[j] * w
            wgj = wg[j] * w
            for k in range(C):
                d = Dv[j, i, k]
                t0 = d
                t1 = (d - c[i, k]) ** 2
                t2 = (d - t * F[i, k]) ** 2
                K[i, 0, k] += wkj * t0
                K[i, 1, k] += wkj * t1
                K[i, 2, k] += wkj * t2
                if wg[j] != 0.0:
                    G[i, 0, k] += wgj * t0
                    G[i, 1, k] += wgj * t1
                    G[i, 2, k] += wgj * t2
    return K, G


def gk_sums(Dv, u, wk, wg, a, b, c, F):
    """Kronrod and Gauss values (I, 3, C) of (S1, S2, N) on intervals [a, b] from the values minus f(x) at the
    21 nodes, ``Dv`` (21, I, C), with the intervals' own ``c`` and ``F`` (I, C)
    (:func:`fme._nlm.budget_routes.gk_sums`: the same sums in the same order, node by node)."""
    f = lambda x: np.ascontiguousarray(x, dtype=np.float64)
    return _gk_sums(f(Dv), f(u), f(wk), f(wg), f(a), f(b), f(c), f(F))


@_jit
def _row_argmax(rows, values, n):
    best = np.full(n, -1, dtype=np.int64)
    for i in range(rows.shape[0]):
        r = rows[i]
        if best[r] < 0 or values[i] > values[best[r]]:
            best[r] = i
    return best


def row_argmax(rows: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per row (ascending) that has entries: the index of its largest value, the first one among ties."""
    best = _row_argmax(np.asarray(rows, dtype=np.int64), np.ascontiguousarray(values, dtype=np.float64), n)
    return best[best >= 0]


@_jit
def _hidden_jumps(
    lo, hi, Vf, a, b, c, F, level, idx, wts, npts, leb, pts, share_at, ulps, outlier, tv_factor, P, cut, iso
):
    # the sub-intervals lo:hi, each on its own (a range per thread: the same numbers on any number of them)
    n_pts, I, C = Vf.shape  # noqa: E741 - I sub-intervals and C outputs, the quadrature's notation
    G = n_pts - 1
    eps = np.finfo(np.float64).eps
    low = np.empty(G)
    high = np.empty(G)
    d = np.empty(G)
    worst = np.empty(G)
    v = np.empty(n_pts)  # one path's values: 23 loads instead of a stride of I * C per point
    for i in range(lo, hi):
        w = b[i] - a[i]
        for g in range(G):
            worst[g] = 0.0
        for k in range(C):
            big = level[i, k]
            for p in range(n_pts):
                v[p] = Vf[p, i, k]
                big = max(big, abs(v[p]))
            floor = ulps * eps * big
            tv = 0.0
            for g in range(G):
                # the four one-sided predictions together: four independent sums per point (the tables pad the
                # shorter sides with zero weights), not four chains one after the other
                p0 = p1 = p2 = p3 = 0.0
                for q in range(idx.shape[2]):
                    p0 += wts[g, 0, q] * v[idx[g, 0, q]]
                    p1 += wts[g, 1, q] * v[idx[g, 1, q]]
                    p2 += wts[g, 2, q] * v[idx[g, 2, q]]
                    p3 += wts[g, 3, q] * v[idx[g, 3, q]]
                low[g] = min(
                    max(abs(p0 - v[g + 1]) - floor * leb[g, 0], 0.0), max(abs(p1 - v[g]) - floor * leb[g, 1], 0.0)
                )
                high[g] = min(
                    max(abs(p2 - v[g + 1]) - floor * leb[g, 2], 0.0), max(abs(p3 - v[g]) - floor * leb[g, 3], 0.0)
                )
                d[g] = abs(v[g + 1] - v[g])
                tv += d[g]
            for g in range(G):
                near = low[g]
                beside = 0.0
                if g > 0:
                    near = max(near, low[g - 1])
                    beside = d[g - 1] / (pts[g] - pts[g - 1])
                if g < G - 1:
                    near = max(near, low[g + 1])
                    beside = max(beside, d[g + 1] / (pts[g + 2] - pts[g + 1]))
                den = share_at * near
                if den > 0.0:
                    share = min(max(2.0 * high[g] / den - 1.0, 0.0), 1.0)
                else:
                    share = 1.0 if high[g] > 0.0 else 0.0
                gap = pts[g + 1] - pts[g]
                m = share * min(min(high[g], low[g]), d[g] + beside * gap)
                t0 = a[i] + pts[g] * w
                t1 = a[i] + pts[g + 1] * w
                zc = max(abs(v[g + 1] - c[i, k]), abs(v[g] - c[i, k]))
                zn = max(abs(v[g + 1] - t1 * F[i, k]), abs(v[g] - t0 * F[i, k]))
                wj = 2.0 * gap * w
                tvw = tv_factor * w
                P[i, 0, k] += m * wj
                P[i, 1, k] += m * (wj * (2.0 * zc + m) + tvw * 2.0 * tv)
                P[i, 2, k] += m * (wj * (2.0 * zn + m) + tvw * 2.0 * (tv + abs(F[i, k]) * w))
                worst[g] = max(worst[g], m)
        top = 0
        for g in range(1, G):
            if worst[g] > worst[top]:
                top = g
        rest = -np.inf
        for g in range(G):
            if g != top:
                rest = max(rest, worst[g])
        first = worst[top]
        iso[i] = first > 0.0 and first > outlier * rest
        if first > 0.0:
            cut[i] = a[i] + 0.5 * (pts[top] + pts[top + 1]) * w


def hidden_jumps(Vf, a, b, c, F, level, idx, wts, npts, leb, pts, share_at, ulps, outlier, tv_factor):
    """Compiled :func:`fme._nlm.budget_routes.hidden_jumps_numpy` (the same misses, shares and sums, interval by
    interval, output by output; its stencil tables ``idx``, ``wts``, ``npts``, ``leb`` and constants are passed
    in): returns ``(P, cut, isolated)``."""
    f = lambda x: np.ascontiguousarray(x, dtype=np.float64)
    Vf = f(Vf)
    I, C = Vf.shape[1], Vf.shape[2]  # noqa: E741 - I sub-intervals and C outputs, the quadrature's notation
    P = np.zeros((I, 3, C))
    cut = np.full(I, np.nan)
    iso = np.zeros(I, dtype=np.bool_)
    args = (
        Vf,
        f(a),
        f(b),
        f(c),
        f(F),
        f(np.broadcast_to(level, (I, C))),
        idx,
        wts,
        npts,
        leb,
        f(pts),
        float(share_at),
        float(ulps),
        float(outlier),
        float(tv_factor),
        P,
        cut,
        iso,
    )
    run_ranges(lambda lo, hi: _hidden_jumps(lo, hi, *args), I, align=8, min_rows=MIN_SLOW_ROWS_PER_THREAD)
    return P, cut, iso


@_jit
def _level_seen(scale, rows, vals, f0):  # pragma: no cover - compiled (tests/_nlm/test_budget_routes.py)
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(vals.shape[1]):
            x = abs(vals[i, j]) + abs(f0[r, j])
            s = scale[r, j]
            if not (s > x or s != s):  # NumPy's maximum: the second unless the first is larger or NaN
                scale[r, j] = x


def level_seen(scale: np.ndarray, rows: np.ndarray, vals: np.ndarray, f0: np.ndarray) -> None:
    """``np.maximum.at(scale, rows, |vals| + |f0[rows]|)`` in place (``scale`` and ``f0`` (n, C), ``vals`` (k, C)
    the path values relative to f(x) at points of the rows ``rows`` (k,)): each path's level seen so far, in one
    pass without the gathered temporaries (``ufunc.at`` on rows of a 2-D array took 23 ms for 1.1 million points,
    this 2 ms)."""
    _level_seen(scale, np.asarray(rows, dtype=np.int64), np.ascontiguousarray(vals, dtype=np.float64), f0)
