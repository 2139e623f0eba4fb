"""The level 0 of the error-controlled NLM in one compiled pass over the predictions (paper §5.4).

:mod:`fme._nlm.budget` starts every row with its 21 Gauss-Kronrod nodes on [0, 1]. From their predictions it
needs, per row and output, the path's level, the fixed centre ``c`` (the Kronrod mean), the exact ties between
neighbouring values (the route), and for the rows on the quadrature route the Kronrod and Gauss sums
(:func:`fme._nlm.budget_routes.gk_sums`) and what a jump hidden between two of the 23 points could do
(:func:`fme._nlm.budget_routes.hidden_jumps`). In NumPy those were about 20 passes over the 23 x n values, each
writing a temporary, and the compiled sums read each interval's 23 values with a stride of n; here
:func:`level0` reads the predictions once, a tile of rows at a time, and computes every quantity with the rows
innermost, where the compiler keeps a few rows in one vector register. Each row's arithmetic is that of the
NumPy and compiled references, in the same order (no reassociation, no fused multiply-add), so every number is
the same floating-point number; ``tests/_nlm/test_level0_kernel.py`` checks it. Where several terms go into one
sum (a stencil's points, the Kronrod and Gauss sums), a pass adds three or four of them, in their order, so
that the sum is loaded and stored once per pass rather than once per term; the row by row searches (the largest
value, the largest miss) run with the rows innermost as the rest. :func:`quad_state`, the
quadrature route's state that every round reads, is compiled the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._utils.jit import njit
from .._utils.threads import MIN_SLOW_ROWS_PER_THREAD, run_ranges

__all__ = ["TILE", "level0", "level0_work", "quad_state"]

#: Rows per tile: the tile's 23 values per row and the stencil sums stay in the first-level cache.
TILE = 64


@njit(nogil=True, error_model="numpy")
def _level0(
    V, f0, F, u, wk, wg, idx, wts, npts, leb, pts, share_at, ulps, outlier, tv_factor, given_c, first, last, *out
):
    scale, c, jumps, K, G, P, cut, iso = out
    n_nodes, n, C = V.shape
    n_pts = n_nodes + 2
    n_gaps = n_pts - 1
    eps = np.finfo(np.float64).eps
    T = TILE
    v = np.empty((n_pts, T))
    low = np.empty((n_gaps, T))
    high = np.empty((n_gaps, T))
    d = np.empty((n_gaps, T))
    worst = np.empty((n_gaps, T))
    acc = np.empty((4, T))
    tv = np.empty(T)
    big = np.empty(T)
    floor = np.empty(T)
    cc = np.empty(T)
    FF = np.empty(T)
    p0 = np.empty(T)
    p1 = np.empty(T)
    p2 = np.empty(T)
    k0 = np.empty(T)
    k1 = np.empty(T)
    k2 = np.empty(T)
    g0 = np.empty(T)
    g1 = np.empty(T)
    g2 = np.empty(T)
    near = np.empty(T)
    beside = np.empty(T)
    tied = np.empty(T, dtype=np.bool_)
    best = np.empty(T)
    knodes = np.arange(n_nodes)
    gnodes = np.empty(n_nodes, dtype=np.int64)  # the Gauss nodes among the Kronrod ones
    n_g = 0
    for j in range(n_nodes):
        if wg[j] != 0.0:
            gnodes[n_g] = j
            n_g += 1
    rest_r = np.empty(T)
    top_r = np.empty(T, dtype=np.int64)
    eq = np.empty((n_gaps, T), dtype=np.bool_)
    for start in range(first, last, T):
        m = min(T, last - start)
        for r in range(m):
            tied[r] = False
        for g in range(n_gaps):
            for r in range(m):
                worst[g, r] = 0.0
        for g in range(n_gaps):
            for r in range(m):
                eq[g, r] = True
        for k in range(C):
            # the 23 points relative to f(x): t = 0 (zero), the nodes, t = 1 (the fME)
            for r in range(m):
                v[0, r] = 0.0
                FF[r] = F[start + r, k]
                v[n_pts - 1, r] = FF[r]
            for j in range(n_nodes):
                for r in range(m):
                    v[j + 1, r] = V[j, start + r, k] - f0[start + r, k]
            # the path's level |f(x)| + max |f - f(x)| and the Kronrod mean, node by node
            for r in range(m):
                big[r] = 0.0
                cc[r] = 0.0
            for j in range(n_nodes):
                w = wk[j]
                for r in range(m):
                    big[r] = max(big[r], abs(v[j + 1, r]))
                    cc[r] += w * v[j + 1, r]
            for r in range(m):
                lev = max(big[r], abs(FF[r])) + abs(f0[start + r, k])
                scale[start + r, k] = lev
                if given_c:
                    cc[r] = c[start + r, k]
                else:
                    c[start + r, k] = cc[r]
                big[r] = lev
            for g in range(n_gaps):
                for r in range(m):
                    eq[g, r] = eq[g, r] & (v[g + 1, r] == v[g, r])
            # Kronrod and Gauss sums of (S1, S2, N) on [0, 1]
            for r in range(m):
                k0[r] = 0.0
                k1[r] = 0.0
                k2[r] = 0.0
                g0[r] = 0.0
                g1[r] = 0.0
                g2[r] = 0.0
            # the Kronrod sums over every node, the Gauss sums over its nodes
            _node_sums(k0, k1, k2, v, knodes, n_nodes, wk, u, cc, FF, m)
            _node_sums(g0, g1, g2, v, gnodes, n_g, wg, u, cc, FF, m)
            for r in range(m):
                K[start + r, 0, k] = k0[r]
                K[start + r, 1, k] = k1[r]
                K[start + r, 2, k] = k2[r]
                G[start + r, 0, k] = g0[r]
                G[start + r, 1, k] = g1[r]
                G[start + r, 2, k] = g2[r]
            # hidden jumps: the one-sided predictions of every gap's far end and their misses
            # the largest |value| of each row's 23, point by point with the rows innermost (the same maxima in the
            # same order as row by row)
            for p in range(n_pts):  # big is the level until here and is not read again for this output
                for r in range(m):
                    big[r] = max(big[r], abs(v[p, r]))
            for r in range(m):
                floor[r] = ulps * eps * big[r]
                tv[r] = 0.0
            for g in range(n_gaps):
                for s in range(4):
                    for r in range(m):
                        acc[s, r] = 0.0
                    nq = npts[g, s]
                    q = 0
                    # four points a pass, added in the same order (one load and store of the sum per pass)
                    while q + 4 <= nq:
                        w0, w1, w2, w3 = wts[g, s, q], wts[g, s, q + 1], wts[g, s, q + 2], wts[g, s, q + 3]
                        i0, i1, i2, i3 = idx[g, s, q], idx[g, s, q + 1], idx[g, s, q + 2], idx[g, s, q + 3]
                        for r in range(m):
                            acc[s, r] = (((acc[s, r] + w0 * v[i0, r]) + w1 * v[i1, r]) + w2 * v[i2, r]) + w3 * v[i3, r]
                        q += 4
                    while q < nq:  # the padding beyond npts adds exact zeros
                        wq = wts[g, s, q]
                        iq = idx[g, s, q]
                        for r in range(m):
                            acc[s, r] += wq * v[iq, r]
                        q += 1
                for r in range(m):
                    low[g, r] = min(
                        max(abs(acc[0, r] - v[g + 1, r]) - floor[r] * leb[g, 0], 0.0),
                        max(abs(acc[1, r] - v[g, r]) - floor[r] * leb[g, 1], 0.0),
                    )
                    high[g, r] = min(
                        max(abs(acc[2, r] - v[g + 1, r]) - floor[r] * leb[g, 2], 0.0),
                        max(abs(acc[3, r] - v[g, r]) - floor[r] * leb[g, 3], 0.0),
                    )
                    d[g, r] = abs(v[g + 1, r] - v[g, r])
                    tv[r] += d[g, r]
            for r in range(m):
                p0[r] = 0.0
                p1[r] = 0.0
                p2[r] = 0.0
            for g in range(n_gaps):
                gap = pts[g + 1] - pts[g]
                t0 = 0.0 + pts[g] * 1.0
                t1 = 0.0 + pts[g + 1] * 1.0
                wj = 2.0 * gap * 1.0
                tvw = tv_factor * 1.0
                # the low degree's miss over the gap and its neighbours, and the neighbouring slopes (the first and
                # the last gap have one neighbour): apart, so that the loop below has no branch on g
                if g == 0:
                    right_gap = pts[g + 2] - pts[g + 1]
                    for r in range(m):
                        near[r] = max(low[g, r], low[g + 1, r])
                        beside[r] = max(0.0, d[g + 1, r] / right_gap)
                elif g == n_gaps - 1:
                    left_gap = pts[g] - pts[g - 1]
                    for r in range(m):
                        near[r] = max(low[g, r], low[g - 1, r])
                        beside[r] = d[g - 1, r] / left_gap
                else:
                    left_gap = pts[g] - pts[g - 1]
                    right_gap = pts[g + 2] - pts[g + 1]
                    for r in range(m):
                        near[r] = max(max(low[g, r], low[g - 1, r]), low[g + 1, r])
                        beside[r] = max(d[g - 1, r] / left_gap, d[g + 1, r] / right_gap)
                for r in range(m):
                    den = share_at * near[r]
                    hi = high[g, r]
                    share = min(max(2.0 * hi / den - 1.0, 0.0), 1.0) if den > 0.0 else (1.0 if hi > 0.0 else 0.0)
                    mm = share * min(min(hi, low[g, r]), d[g, r] + beside[r] * gap)
                    vr = v[g + 1, r]
                    vl = v[g, r]
                    zc = max(abs(vr - cc[r]), abs(vl - cc[r]))
                    zn = max(abs(vr - t1 * FF[r]), abs(vl - t0 * FF[r]))
                    p0[r] += mm * wj
                    p1[r] += mm * (wj * (2.0 * zc + mm) + tvw * 2.0 * tv[r])
                    p2[r] += mm * (wj * (2.0 * zn + mm) + tvw * 2.0 * (tv[r] + abs(FF[r]) * 1.0))
                    worst[g, r] = max(worst[g, r], mm)
            for r in range(m):
                P[start + r, 0, k] = p0[r]
                P[start + r, 1, k] = p1[r]
                P[start + r, 2, k] = p2[r]
        for g in range(n_gaps):
            for r in range(m):
                tied[r] = tied[r] | eq[g, r]
        # the first largest miss of each row and the largest of the others, gap by gap with the rows innermost
        for r in range(m):
            best[r] = worst[0, r]
            rest_r[r] = -np.inf
            top_r[r] = 0
        for g in range(1, n_gaps):
            for r in range(m):
                w = worst[g, r]
                if w > best[r]:
                    rest_r[r] = max(rest_r[r], best[r])
                    best[r] = w
                    top_r[r] = g
                else:
                    rest_r[r] = max(rest_r[r], w)
        for r in range(m):
            i = start + r
            jumps[i] = tied[r]
            top = top_r[r]
            first = best[r]
            iso[i] = first > 0.0 and first > outlier * rest_r[r]
            cut[i] = 0.0 + 0.5 * (pts[top] + pts[top + 1]) * 1.0 if first > 0.0 else np.nan


@njit(nogil=True, error_model="numpy")
def _node_sums(s0, s1, s2, v, nodes, count, w, u, cc, FF, m):
    """Add to the sums (S1, S2, N) of a tile's ``m`` rows the terms of the first ``count`` of ``nodes`` (weights
    ``w``, positions ``u``), in node order: three nodes a pass, so that each sum is loaded and stored once per
    pass rather than once per term."""
    q = 0
    while q + 3 <= count:
        ja, jb, jc = nodes[q], nodes[q + 1], nodes[q + 2]
        ta, tb, tc = 0.0 + u[ja] * 1.0, 0.0 + u[jb] * 1.0, 0.0 + u[jc] * 1.0
        wa, wb, wc = w[ja] * 1.0, w[jb] * 1.0, w[jc] * 1.0
        for r in range(m):
            da, db, dc = v[ja + 1, r], v[jb + 1, r], v[jc + 1, r]
            cr, fr = cc[r], FF[r]
            s0[r] = ((s0[r] + wa * da) + wb * db) + wc * dc
            s1[r] = ((s1[r] + wa * (da - cr) ** 2) + wb * (db - cr) ** 2) + wc * (dc - cr) ** 2
            s2[r] = ((s2[r] + wa * (da - ta * fr) ** 2) + wb * (db - tb * fr) ** 2) + wc * (dc - tc * fr) ** 2
        q += 3
    while q < count:
        j = nodes[q]
        t = 0.0 + u[j] * 1.0
        wj = w[j] * 1.0
        for r in range(m):
            dd = v[j + 1, r]
            s0[r] += wj * dd
            s1[r] += wj * (dd - cc[r]) ** 2
            s2[r] += wj * (dd - t * FF[r]) ** 2
        q += 1


def level0(*args: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
    """The level 0 of every row (:func:`level0_work`'s arrays), its rows cut into ranges on every thread
    (:func:`fme._utils.threads.run_ranges`): every row on its own, so any ranges give the same numbers."""
    work, outs = level0_work(*args, **kwargs)
    run_ranges(work, outs[0].shape[0], align=TILE)
    return outs


def level0_work(
    V: np.ndarray,
    f0: np.ndarray,
    F: np.ndarray,
    u: np.ndarray,
    wk: np.ndarray,
    wg: np.ndarray,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    pts: np.ndarray,
    share_at: float,
    ulps: float,
    outlier: float,
    tv_factor: float,
    out: tuple[np.ndarray, ...] | None = None,
) -> tuple[Callable[[int, int], None], tuple[np.ndarray, ...]]:
    """The level 0 of every row from the predictions ``V`` (21, n, C) at the Gauss-Kronrod nodes ``u`` on
    [0, 1], f(x) ``f0`` and the fME ``F`` (n, C), not yet computed: the function ``work(lo, hi)`` that computes
    the rows ``lo:hi`` (any ranges that cover every row once, on any threads; starts multiples of :data:`TILE`
    leave the fewest part tiles) and the eight arrays it fills, ``(scale, c, jumps, K, G, P, cut, iso)``.

    They are: per row and output the path's level |f(x)| + max |f - f(x)| and the Kronrod mean of f - f(x); per
    row whether two neighbouring values of its 23 (t = 0, the nodes, t = 1) tie in every output (the jump
    route); and as if every row were one quadrature sub-interval [0, 1]: the Kronrod and Gauss values of
    (S1, S2, N) (n, 3, C), the hidden jumps' bounds (n, 3, C), the cut and whether its jump is isolated (n,), as
    :func:`fme._nlm.budget_routes.gk_sums` and :func:`fme._nlm.budget_routes.hidden_jumps` give them for
    ``a = 0``, ``b = 1``, the centre ``c`` and the level ``scale``. ``tables``: the stencil tables of
    :mod:`fme._nlm.budget_routes` (``idx``, ``wts``, ``npts``, ``leb``), ``pts`` the 23 relative points.
    ``out``: the eight arrays to write them into (C-contiguous, of these shapes; :class:`fme._nlm.blocks.BlockWork`
    reuses them from block to block), else fresh ones. :func:`level0` runs the work on every thread.
    """
    f = lambda x: np.ascontiguousarray(x, dtype=np.float64)
    V = f(V)
    n, C = V.shape[1], V.shape[2]
    if out is None:
        scale, c = np.empty((n, C)), np.empty((n, C))
        jumps = np.empty(n, dtype=np.bool_)
        K, G, P = np.empty((n, 3, C)), np.empty((n, 3, C)), np.empty((n, 3, C))
        cut, iso = np.empty(n), np.empty(n, dtype=np.bool_)
    else:
        scale, c, jumps, K, G, P, cut, iso = out
        _check_out("level0", out, [(n, C), (n, C), (n,), (n, 3, C), (n, 3, C), (n, 3, C), (n,), (n,)], (2, 7))
    idx, wts, npts, leb = tables
    # the centre as NumPy's einsum sums it: node by node for several values, but for a single one (one row, one
    # output) in its own order, which the kernel then takes as given
    given_c = n * C == 1
    if given_c:
        c[:] = np.einsum("j,jnc->nc", wk, V - f0[None])
    args = (V, f(f0), f(F), f(u), f(wk), f(wg), idx, wts, npts, leb, f(pts))
    args += (float(share_at), float(ulps), float(outlier), float(tv_factor), given_c)
    outs = (scale, c, jumps, K, G, P, cut, iso)
    return (lambda lo, hi: _level0(*args, lo, hi, *outs)), outs


def _check_out(name: str, out: tuple[np.ndarray, ...], shapes: list[tuple[int, ...]], bools: tuple[int, ...]) -> None:
    """``out`` holds C-contiguous arrays of ``shapes``, boolean at the positions ``bools`` and float64 elsewhere (a
    compiled kernel would otherwise be compiled anew for another dtype and write at its precision)."""
    want = [np.dtype(np.bool_) if i in bools else np.dtype(np.float64) for i in range(len(shapes))]
    if [a.shape for a in out] != shapes or [a.dtype for a in out] != want or not all(a.flags.c_contiguous for a in out):
        raise ValueError(f"{name}'s out must be C-contiguous arrays of the shapes {shapes} and dtypes {want}")


@njit(nogil=True, error_model="numpy")
def _row_ratios(tk0, tk1, tk2, tg0, tg1, tg2, centre, level, limit):
    """One row and output of the quadrature state from its Kronrod (``tk``) and Gauss (``tg``) sums of
    (S1, S2, N): D, the NLM, the ratio N / D, whether the Kronrod and the Gauss D are within rounding of 0 (the
    NLM undefined) and the Gauss NLM."""
    thr = (limit * level) ** 2
    d = tk1 - (tk0 - centre) ** 2
    q = tk2 / d
    und = d <= thr
    dg = tg1 - (tg0 - centre) ** 2
    und_g = dg <= thr
    return d, np.nan if und else 1.0 - q, 0.0 if und else q, und, und_g, np.nan if und_g else 1.0 - tg2 / dg


@njit(nogil=True, error_model="numpy")
def _contribution(qK, qG, qP, i, k, s1c, rq, d, und, und_g):
    """Sub-interval ``i``'s share of its row's error estimate in output ``k`` and the hidden jumps' part of it
    (the Kronrod-Gauss differences of its sums, and its hidden-jump bounds, through the row's NLM)."""
    d0 = qK[i, 0, k] - qG[i, 0, k]
    d1 = qK[i, 1, k] - qG[i, 1, k]
    d2 = qK[i, 2, k] - qG[i, 2, k]
    contrib = abs(d2 - rq * (d1 - 2.0 * s1c * d0)) / d
    hidden = (qP[i, 2, k] + abs(rq) * (qP[i, 1, k] + 2.0 * abs(s1c) * qP[i, 0, k])) / d
    contrib = contrib + hidden
    if und:
        contrib = 0.0 if und_g else np.inf
    if np.isnan(contrib):
        contrib = np.inf
    if und:
        hidden = 0.0
    if np.isnan(hidden):
        hidden = np.inf
    return contrib, hidden


@njit(nogil=True, error_model="numpy")
def _row_error(nlm, v_g, csum, d, rq, tk0, tk1, centre, eps, und, und_g):
    """One row and output's error estimate: the larger of |Kronrod - Gauss NLM| and the sub-intervals'
    contributions (NaN wins, as NumPy's maximum), plus the rounding of the ratio."""
    a = abs(nlm - v_g)
    m = a if (np.isnan(a) or a >= csum) else csum
    if np.isnan(csum):
        m = csum
    rnd = 32.0 * eps * (1.0 + abs(rq) * (abs(tk1) + (tk0 - centre) ** 2) / d)
    if not np.isfinite(rnd):
        rnd = 0.0
    e = m + rnd
    if und and und_g:
        e = 0.0
    if np.isnan(e):
        e = np.inf
    return e


@njit(nogil=True, error_model="numpy")
def _quad_state(lo, hi, c, scale, qr, qK, qG, qP, limit, eps, nlm, err, DK, qe, qh, TK, TG, ratio, und, vG, csum):
    # the rows lo:hi and their sub-intervals (a range of rows per thread): each row's sums add its sub-intervals
    # in index order whatever the ranges, so the numbers are the same on any number of threads
    C = c.shape[1]
    for i in range(qr.shape[0]):  # per-row sums in index order, as rowsum adds them
        r = qr[i]
        if r < lo or r >= hi:
            continue
        for s in range(3):
            for k in range(C):
                TK[r, s, k] += qK[i, s, k]
                TG[r, s, k] += qG[i, s, k]
    for r in range(lo, hi):
        for k in range(C):
            DK[r, k], nlm[r, k], ratio[r, k], und[r, k, 0], und[r, k, 1], vG[r, k] = _row_ratios(
                TK[r, 0, k],
                TK[r, 1, k],
                TK[r, 2, k],
                TG[r, 0, k],
                TG[r, 1, k],
                TG[r, 2, k],
                c[r, k],
                scale[r, k],
                limit,
            )
    for i in range(qr.shape[0]):
        r = qr[i]
        if r < lo or r >= hi:
            continue
        worst = -np.inf
        worst_h = -np.inf
        for k in range(C):
            s1c = TK[r, 0, k] - c[r, k]
            contrib, hidden = _contribution(qK, qG, qP, i, k, s1c, ratio[r, k], DK[r, k], und[r, k, 0], und[r, k, 1])
            csum[r, k] += contrib
            worst = max(worst, contrib)
            worst_h = max(worst_h, hidden)
        qe[i] = worst
        qh[i] = worst_h
    for r in range(lo, hi):
        for k in range(C):
            err[r, k] = _row_error(
                nlm[r, k],
                vG[r, k],
                csum[r, k],
                DK[r, k],
                ratio[r, k],
                TK[r, 0, k],
                TK[r, 1, k],
                c[r, k],
                eps,
                und[r, k, 0],
                und[r, k, 1],
            )


@njit(nogil=True, error_model="numpy")
def _one_per_row(qr):
    """Whether the sub-intervals are the rows themselves, one each in row order (``qr`` is 0, 1, ..., n - 1)."""
    for i in range(qr.shape[0]):
        if qr[i] != i:
            return False
    return True


@njit(nogil=True, error_model="numpy")
def _quad_state_rows(first, last, c, scale, qK, qG, qP, limit, eps, nlm, err, DK, qe, qh):
    # :func:`_quad_state` when sub-interval i is row i (level 0 of smooth paths): each row's steps in turn, the
    # same helpers on the same numbers (0.0 + x for the sums _quad_state starts from zero), without its per-row
    # arrays; rows first..last-1 only, so that ranges can run on threads
    C = c.shape[1]
    ratio = np.empty(C)
    undK = np.empty(C, dtype=np.bool_)
    undG = np.empty(C, dtype=np.bool_)
    vG = np.empty(C)
    for r in range(first, last):
        for k in range(C):
            tk0, tk1, tk2 = 0.0 + qK[r, 0, k], 0.0 + qK[r, 1, k], 0.0 + qK[r, 2, k]
            tg0, tg1, tg2 = 0.0 + qG[r, 0, k], 0.0 + qG[r, 1, k], 0.0 + qG[r, 2, k]
            DK[r, k], nlm[r, k], ratio[k], undK[k], undG[k], vG[k] = _row_ratios(
                tk0, tk1, tk2, tg0, tg1, tg2, c[r, k], scale[r, k], limit
            )
        worst = -np.inf
        worst_h = -np.inf
        for k in range(C):
            tk0, tk1 = 0.0 + qK[r, 0, k], 0.0 + qK[r, 1, k]
            contrib, hidden = _contribution(qK, qG, qP, r, k, tk0 - c[r, k], ratio[k], DK[r, k], undK[k], undG[k])
            worst = max(worst, contrib)
            worst_h = max(worst_h, hidden)
            # one sub-interval: the row's sum of contributions is 0.0 + contrib
            err[r, k] = _row_error(
                nlm[r, k], vG[k], 0.0 + contrib, DK[r, k], ratio[k], tk0, tk1, c[r, k], eps, undK[k], undG[k]
            )
        qe[r] = worst
        qh[r] = worst_h


def quad_state(n, c, scale, qr, qK, qG, qP, constant_ulps, out=None):
    """Compiled :func:`fme._nlm.budget_routes.quad_state` (the quadrature route's per-row NLM, error
    estimate and D, per sub-interval contribution and its hidden-jump part): one pass over the sub-intervals for
    the per-row sums, one per row, one per sub-interval, instead of about 40 NumPy passes; the same numbers. When
    the sub-intervals are the rows themselves (level 0 of smooth paths) one pass over the rows, on row ranges of
    several threads. ``out``: the five arrays ``(nlm, err, D, qe, qh)`` to write them into (C-contiguous, of their
    shapes), else fresh ones."""
    f = lambda x: np.ascontiguousarray(x, dtype=np.float64)
    c, scale = f(c), f(scale)
    C = c.shape[1]
    if out is None:
        nlm, err, DK = np.empty((n, C)), np.empty((n, C)), np.empty((n, C))
        qe, qh = np.empty(qr.shape[0]), np.empty(qr.shape[0])
    else:
        nlm, err, DK, qe, qh = out
        _check_out("quad_state", out, [(n, C), (n, C), (n, C), qr.shape[:1], qr.shape[:1]], ())
    limit = float(constant_ulps) * np.finfo(np.float64).eps
    qr = np.asarray(qr, dtype=np.int64)
    args = (f(qK), f(qG), f(qP), limit, np.finfo(np.float64).eps, nlm, err, DK, qe, qh)
    if qr.shape[0] == n and _one_per_row(qr):
        # one sub-interval per row (level 0 of smooth paths): no per-row sums to gather, every row on its own
        run_ranges(lambda lo, hi: _quad_state_rows(lo, hi, c, scale, *args), n, align=8)
    else:
        # per-row scratch shared by the ranges (each writes its own rows)
        scratch = (np.zeros((n, 3, C)), np.zeros((n, 3, C)), np.empty((n, C)), np.empty((n, C, 2), np.bool_))
        scratch += (np.empty((n, C)), np.zeros((n, C)))
        run_ranges(
            lambda lo, hi: _quad_state(lo, hi, c, scale, qr, *args, *scratch),
            n,
            align=8,
            min_rows=MIN_SLOW_ROWS_PER_THREAD,
        )
    return nlm, err, DK, qe, qh
