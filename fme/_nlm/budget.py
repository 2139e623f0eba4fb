"""The error-controlled NLM of any model at a bounded cost (paper §5.4, eq. of the NLM; issue 26).

Every row starts with the 21-node Gauss-Kronrod rule on [0, 1] (its embedded 10-node Gauss rule on
the same nodes gives the error estimate), i.e. 23 predictions with f(x) and f(x + h). Then one
budget, ``budget`` predictions per evaluated row on average for the whole call (default 34: the
Gauss-Kronrod pair plus 11 per row for refinement), is spent greedily, in rounds, on the largest
error contributions of the rows whose estimate is still above ``tol``. Each row takes one of two
routes, chosen from its 23 values (``nlm_route``):

* ``quadrature``: adaptive bisection as in QUADPACK. The three integrals of the NLM
  (int (f - f(x)), int (f - f(x) - c)^2 with a fixed centre c, the level-0 mean, and
  int (f - secant)^2) are sums over sub-intervals, each with its Kronrod and Gauss value;
  NLM = 1 - N / (S2 - (S1 - c)^2). The row's estimate is max(|NLM_K - NLM_G|, sum of the
  sub-intervals' first-order contributions |dN_i - NLM' dD_i| / D); bisecting the sub-interval
  with the largest contribution costs 42 predictions (at most ``2**max_level`` sub-intervals).
* ``jumps``: the path's values tie exactly between neighbouring nodes (a wrapped tree model,
  any piecewise-constant predictor). Neighbours with equal values are taken as one constant
  segment; neighbours with different values bracket a jump, placed at the bracket's midpoint.
  The integrals are then closed forms over constant segments (as :mod:`fme.nlm_exact`), and
  moving each jump anywhere inside its bracket changes them by at most (per bracket of width w
  and values dL, dR relative to f(x), J = dL - dR, secant slope F, midpoint m)
  |J| w/2 (S1), |J| |dL + dR - 2c| w/2 (S2) and |J| w/2 (|dL + dR - 2 m F| + |F| w/2) (N),
  so |NLM error| <= (E_N + |N/D| E_D) / (D - E_D) with E_D = E_2 + 2|S1 - c| E_1 + E_1^2: the
  reported error is this bound. Bisecting a bracket (one prediction at its midpoint) halves its
  width; a midpoint equal to one end settles that half. The bound holds when each bracket holds
  one jump (more generally: f stays between its ends inside the bracket); a narrow excursion
  that returns to the same value between two tied nodes is invisible to any sampling.

Rounds: at most :data:`_MAX_ROUNDS` (:data:`_BINDING_ROUNDS` when the budget cannot give every
open bracket one probe at the start: then most rows stay above ``nlm_tol`` whatever the split, and
a predict call can be dear), each one stacked prediction (in frames of at most
``STACK_CELL_BUDGET`` cells), because a model's ``predict`` call can cost far more than its rows
(an OpenMP region per tree). Round i of R spends at most what is left / (R - i). When that covers
every candidate, each active quadrature row bisects its worst sub-interval and every bracket of an
active jump row gets k probes ((k + 1)-section, 1 <= k <= :data:`_MAX_PROBES`): as many as
would bring its contribution to nlm_tol / (brackets of its row) in the rounds left at the same k,
scaled down to the round's share; otherwise the candidates are taken greedily by error per prediction (a bracket's
contribution halves for 1 prediction; a sub-interval's mostly disappears for 42).

Which rows are refined depends on the other rows of the call when the budget binds (the worst ones
are); rows are processed in blocks of :data:`_BLOCK_ROWS` (each with its own share), which bounds the
memory (about 0.9 KB per row at most) whatever the number of rows. A Dask partition is its own call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._utils.progress import progress_bar
from ..nlm import CONSTANT_ULPS, gauss_kronrod_rules
from ..steps import STACK_CELL_BUDGET, Step, _numeric_shift, stack_path

__all__ = ["DEFAULT_BUDGET", "BASE_COST", "ROUTES", "BudgetNLM", "budget_nlm"]

#: Default ``nlm_budget``: predictions per evaluated row on average, f(x) and f(x + h) included.
DEFAULT_BUDGET = 34.0
#: f(x), f(x + h) and the 21 Gauss-Kronrod nodes: the least budget (no refinement).
BASE_COST = 23
#: Values of ``nlm_route``.
ROUTES = ("quadrature", "jumps")
_QUAD_COST = 42
#: Refinement rounds (each one stacked prediction; a model's predict call can cost far more than its rows).
_MAX_ROUNDS = 12
#: Rounds when the budget cannot even give every open bracket one probe at the start (wrapped boosting).
_BINDING_ROUNDS = 4
#: At most this many probes per bracket and round ((k + 1)-section).
_MAX_PROBES = 15
#: Brackets narrower than this (in t) are not bisected further.
_MIN_WIDTH = 2.0 ** -40
_BLOCK_ROWS = 262_144
_EPS = np.finfo(float).eps


@dataclass
class BudgetNLM:
    """Per row (and output): ``nlm``, ``sd`` (SD of f along the path), ``err`` (the error estimate or
    bound), ``scale`` (|f(x)| + max |f - f(x)| over the values seen); per row: ``route`` (index into
    :data:`ROUTES`), ``intervals`` (quadrature sub-intervals; 0 on the jump route); ``predictions``:
    predictions made on the path (f(x) and f(x + h) not counted)."""

    nlm: np.ndarray
    sd: np.ndarray
    err: np.ndarray
    scale: np.ndarray
    route: np.ndarray
    intervals: np.ndarray
    predictions: int


def _rowsum(rows: np.ndarray, vals: np.ndarray, n: int) -> np.ndarray:
    """Sums of ``vals`` (k, ...) per row (n, ...), one bincount per trailing column."""
    flat = vals.reshape(vals.shape[0], int(np.prod(vals.shape[1:])))
    out = np.empty((n, flat.shape[1]))
    for j in range(flat.shape[1]):
        out[:, j] = np.bincount(rows, weights=flat[:, j], minlength=n)
    return out.reshape((n,) + vals.shape[1:])


def _segment(a, b, d, c, F):
    """(S1, S2, N) of a constant value d (relative to f(x)) on [a, b]: stacked on axis 1, shape (k, 3, C)."""
    w = (b - a)[:, None]
    m = (0.5 * (a + b))[:, None]
    return np.stack([w * d, w * (d - c) ** 2, w * (d - m * F) ** 2 + F ** 2 * w ** 3 / 12.0], axis=1)


def _nlm_of(T: np.ndarray, c: np.ndarray, scale: np.ndarray):
    """NLM, D, N/D from summed (S1, S2, N) ``T`` (n, 3, C); NaN where D is at rounding level."""
    D = T[:, 1] - (T[:, 0] - c) ** 2
    with np.errstate(over="ignore"):
        undefined = D <= (CONSTANT_ULPS * _EPS * scale) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = T[:, 2] / D
    nlm = 1.0 - ratio
    nlm[undefined] = np.nan
    return nlm, D, np.where(undefined, 0.0, ratio), undefined


class _Paths:
    """The path geometry of a block of rows: point frames x + t h for any (row, t)."""

    def __init__(self, predictor, X: pd.DataFrame, steps: tuple[Step, ...], h, label: str):
        self.predictor, self.X, self.steps, self.h, self.label = predictor, X, steps, h, label
        n = len(X)
        self.shift = {s.feature: np.broadcast_to(np.asarray(_numeric_shift(s, h), dtype=float), (n,))
                      for s in steps if s.is_numeric}
        self.x = {f: X[f].to_numpy(dtype=float) for f in self.shift}
        floats = all(isinstance(dt, np.dtype) and np.issubdtype(dt, np.floating) for dt in X.dtypes)
        self.base = X.to_numpy(dtype=float) if floats else None
        self.chunk = max(1000, STACK_CELL_BUDGET // max(1, X.shape[1]))

    def set_chunk(self, points: int) -> None:
        self.chunk = max(1, int(points))

    def frame(self, rows: np.ndarray, t: np.ndarray) -> pd.DataFrame:
        if self.base is not None:
            arr = self.base[rows]
            for f, s in self.shift.items():
                arr[:, self.X.columns.get_loc(f)] = self.x[f][rows] + t * s[rows]
            return pd.DataFrame(arr, columns=self.X.columns, copy=False)
        out = self.X.take(rows)
        out.index = pd.RangeIndex(rows.size)
        for f, s in self.shift.items():
            out[f] = self.x[f][rows] + t * s[rows]
        return out

    def predict(self, rows: np.ndarray, t: np.ndarray, C: int, offset: int, total: int,
                progress: bool | None = False, desc: str = "") -> np.ndarray:
        out = np.empty((rows.size, C))
        starts = range(0, rows.size, self.chunk)
        for start in progress_bar(starts, total=len(starts), progress=progress, desc=desc):  # chunks of points
            sl = slice(start, start + self.chunk)
            r = rows[sl]
            v = self.predictor(self.frame(r, t[sl]), stage=f"the NLM's refinement points x + t h for the step "
                               f"{self.label}", rows=(offset + int(r.min()), offset + int(r.max()) + 1, total))
            out[sl] = np.asarray(v, dtype=float).reshape(r.size, C)
        return out


def budget_nlm(predictor, X: pd.DataFrame, steps: tuple[Step, ...], h, f0: np.ndarray, f1: np.ndarray,
               tol: float, budget: float = DEFAULT_BUDGET, max_level: int = 5, batch_size: int | None = None,
               progress: bool | None = False) -> BudgetNLM:
    """Error-controlled NLMs of every row of ``X`` within ``budget`` predictions per row (module docstring).

    ``f0``, ``f1``: f(x), f(x + h), shape (n,) or (n, C). ``batch_size``: rows per stacked frame of the
    21 Gauss-Kronrod nodes (default: frames of about ``STACK_CELL_BUDGET`` cells).
    """
    n = len(X)
    squeeze = np.ndim(f0) == 1
    F0 = np.asarray(f0, dtype=float).reshape(n, -1)
    F1 = np.asarray(f1, dtype=float).reshape(n, -1)
    parts = []
    starts = range(0, max(n, 1), _BLOCK_ROWS)
    for start in progress_bar(starts, total=len(starts), progress=progress if len(starts) > 1 else False,
                              desc="NLM Gauss-Kronrod with a budget, blocks of rows"):
        sl = slice(start, min(n, start + _BLOCK_ROWS))
        hb = None if h is None else {k: np.broadcast_to(np.asarray(v, dtype=float), (n,))[sl] for k, v in h.items()}
        parts.append(_block(predictor, X.iloc[sl], steps, hb, F0[sl], F1[sl], tol, budget, max_level, batch_size,
                            progress if len(starts) == 1 else False, start, n))
    cat = (lambda k: np.concatenate([getattr(p, k) for p in parts]) if parts else np.empty((0, F0.shape[1])))
    out = BudgetNLM(nlm=cat("nlm"), sd=cat("sd"), err=cat("err"), scale=cat("scale"),
                    route=np.concatenate([p.route for p in parts]) if parts else np.empty(0, dtype=np.int8),
                    intervals=np.concatenate([p.intervals for p in parts]) if parts else np.empty(0, dtype=np.int64),
                    predictions=int(sum(p.predictions for p in parts)))
    if squeeze:
        for k in ("nlm", "sd", "err", "scale"):
            setattr(out, k, getattr(out, k)[:, 0])
    return out


def _block(predictor, X, steps, h, f0, f1, tol, budget, max_level, batch_size, progress, offset, total) -> BudgetNLM:
    n, C = f0.shape
    if n == 0:
        z = np.empty((0, C))
        return BudgetNLM(z, z, z, z, np.empty(0, dtype=np.int8), np.empty(0, dtype=np.int64), 0)
    label = ", ".join(s.describe() for s in steps)
    paths = _Paths(predictor, X, steps, h, label)
    if batch_size:  # a refinement frame as large as a batch of the 21 nodes
        paths.set_chunk(batch_size * 21)
    kron, gauss = gauss_kronrod_rules(1)
    u, wk, wg = kron.nodes, kron.weights, gauss.weights
    k = u.size
    F = f1 - f0
    # ------------------------------------------------ level 0: the Gauss-Kronrod nodes of every row
    V = np.empty((k, n, C))
    size = batch_size or max(1000, STACK_CELL_BUDGET // max(1, X.shape[1] * k))
    bstarts = range(0, n, size)
    for start in progress_bar(bstarts, total=len(bstarts), progress=progress,
                              desc="NLM Gauss-Kronrod, 21 nodes"):
        sl = slice(start, min(n, start + size))
        hb = None if h is None else {f: v[sl] for f, v in h.items()}
        got = predictor(stack_path(X.iloc[sl], steps, u, hb),
                        stage=f"the NLM nodes x + t h for the step {label}",
                        rows=(offset + start, offset + sl.stop, total))
        V[:, sl] = np.asarray(got, dtype=float).reshape(k, sl.stop - start, C)
    D0 = V - f0[None]
    scale = np.maximum(np.abs(D0).max(axis=0), np.abs(F)) + np.abs(f0)
    c = np.zeros((n, C))
    for j in range(k):  # element-wise, node by node: a row's sums do not depend on the other rows
        c += wk[j] * D0[j]
    # route: exact ties between neighbouring values (t = 0, the nodes, t = 1) in every output
    full = np.concatenate([np.zeros((1, n, C)), D0, F[None]])
    tied = np.all(full[1:] == full[:-1], axis=2)  # (k + 1, n)
    jumps = tied.any(axis=0)
    route = jumps.astype(np.int8)
    # ------------------------------------------------ quadrature route: one interval per row
    qrows = np.flatnonzero(~jumps)
    qa, qb = np.zeros(qrows.size), np.ones(qrows.size)
    qdepth = np.zeros(qrows.size, dtype=np.int64)
    qK, qG = _gk_sums(D0[:, qrows], u, wk, wg, qa, qb, c[qrows], F[qrows])
    qr = qrows.copy()
    # ------------------------------------------------ jump route: settled segments and brackets
    jrows = np.flatnonzero(jumps)
    tfull = np.r_[0.0, u, 1.0]
    settled = np.zeros((n, 3, C))
    pair_a, pair_b = tfull[:-1], tfull[1:]
    tj = tied[:, jrows]  # (k + 1, m)
    pi, pj = np.nonzero(tj)  # tied pairs: constant segments
    if pi.size:
        rr = jrows[pj]
        seg = _segment(pair_a[pi], pair_b[pi], full[pi, rr], c[rr], F[rr])
        settled += _rowsum(rr, seg, n)
    bi, bj = np.nonzero(~tj)
    br = jrows[bj]
    ba, bb = pair_a[bi].copy(), pair_b[bi].copy()
    dL, dR = full[bi, br].copy(), full[bi + 1, br].copy()
    del V, D0, full
    made = 0
    left = max(0.0, (float(budget) - BASE_COST) * n)
    rounds = _MAX_ROUNDS
    for rnd in range(_MAX_ROUNDS):
        nlm, err, qe, be, D = _state(n, C, c, F, scale, jumps, qr, qK, qG, settled, br, ba, bb, dL, dR)
        active = np.any(err > tol, axis=1)
        # candidates: the worst sub-interval of each active quadrature row, every bracket of an active jump row
        qcand = np.empty(0, dtype=np.int64)
        if qr.size:
            order = np.lexsort((-qe, qr))
            first = np.flatnonzero(np.r_[True, qr[order][1:] != qr[order][:-1]])
            worst = order[first]
            qcand = worst[active[qr[worst]] & (qdepth[worst] < max_level)]
        bcand = np.flatnonzero(active[br] & (bb - ba > _MIN_WIDTH)) if br.size else np.empty(0, dtype=np.int64)
        cost_all = _QUAD_COST * qcand.size + bcand.size
        if cost_all == 0 or left < 1:
            break
        if rnd == 0 and cost_all > left:
            # the budget cannot give every open bracket one probe: the rows will mostly stay above nlm_tol,
            # and further rounds would only bisect the few worst brackets again; fewer, larger rounds
            rounds = _BINDING_ROUNDS
        if rnd >= rounds:
            break
        # this round's share: what is left over the rounds left (the last round spends all)
        spend = left / (rounds - rnd)
        kk = np.ones(bcand.size, dtype=np.int64)
        if cost_all <= spend:
            qpick, bpick = qcand, bcand
            if bcand.size:  # probes by need: (k + 1)-section reaching nlm_tol over the rounds left
                nb = np.bincount(br[bcand], minlength=n)[br[bcand]]
                need = np.log2(np.maximum(be[bcand] * nb / max(tol, 1e-300), 1.0))
                kk = np.clip(np.ceil(2.0 ** (need / (rounds - rnd))) - 1, 1, _MAX_PROBES).astype(np.int64)
                room = spend - _QUAD_COST * qcand.size
                if kk.sum() > room:  # scale down to this round's share (at least one probe each)
                    kk = np.maximum(1, np.floor(kk * room / kk.sum())).astype(np.int64)
        else:
            prio = np.r_[qe[qcand] / _QUAD_COST, 0.5 * be[bcand]]
            cost = np.r_[np.full(qcand.size, _QUAD_COST), np.ones(bcand.size)]
            order = np.argsort(-prio, kind="stable")
            take = order[np.cumsum(cost[order]) <= max(spend, min(left, _QUAD_COST))]
            if take.size == 0:
                break
            qpick, bpick = qcand[take[take < qcand.size]], bcand[take[take >= qcand.size] - qcand.size]
            kk = np.ones(bpick.size, dtype=np.int64)
        # one stacked prediction for the round: 2 x 21 nodes per sub-interval, `probes` points per bracket
        qa_p, qb_p = qa[qpick], qb[qpick]
        qm = 0.5 * (qa_p + qb_p)
        halves_a, halves_b = np.r_[qa_p, qm], np.r_[qm, qb_p]
        hrows = np.r_[qr[qpick], qr[qpick]]
        tq = (halves_a[None, :] + np.outer(u, halves_b - halves_a)).ravel()
        rq = np.tile(hrows, k)
        r, a, b, l, rgt = br[bpick], ba[bpick], bb[bpick], dL[bpick], dR[bpick]
        grp = np.repeat(np.arange(bpick.size), kk)  # probe j = 1..k of bracket i at a + j (b - a) / (k + 1)
        j = np.arange(grp.size) - (np.cumsum(kk) - kk)[grp] + 1
        tb = a[grp] + j / (kk[grp] + 1.0) * (b - a)[grp]
        rows_all = np.r_[rq, r[grp]]
        vals = paths.predict(rows_all, np.r_[tq, tb], C, offset, total, progress=progress,
                             desc=f"NLM refinement, round {rnd + 1}") - f0[rows_all]
        made += rows_all.size
        left -= rows_all.size
        _raise_scale(scale, rows_all, vals, f0)
        # quadrature: replace each picked interval by its left half, append the right halves
        if qpick.size:
            Vq = vals[:rq.size].reshape(k, hrows.size, C)
            hK, hG = _gk_sums(Vq, u, wk, wg, halves_a, halves_b, c[hrows], F[hrows])
            p = qpick.size
            qa[qpick], qb[qpick] = halves_a[:p], halves_b[:p]
            qdepth[qpick] += 1
            qK[qpick], qG[qpick] = hK[:p], hG[:p]
            qr = np.r_[qr, hrows[p:]]
            qa, qb = np.r_[qa, halves_a[p:]], np.r_[qb, halves_b[p:]]
            qdepth = np.r_[qdepth, qdepth[qpick]]
            qK, qG = np.concatenate([qK, hK[p:]]), np.concatenate([qG, hG[p:]])
        if bpick.size:
            # the bracket's points a < p_1 < ... < p_k < b: tied neighbours settle, the others stay brackets
            P = bpick.size
            start = np.cumsum(kk + 2) - (kk + 2)
            pt = np.empty(int((kk + 2).sum()))
            pv = np.empty((pt.size, C))
            pt[start], pv[start] = a, l
            pt[start + kk + 1], pv[start + kk + 1] = b, rgt
            inner = start[grp] + j
            pt[inner], pv[inner] = tb, vals[rq.size:]
            first = np.ones(pt.size - 1, dtype=bool)
            first[(start + kk + 1)[:-1]] = False  # no pair across two brackets
            owner = np.repeat(np.arange(P), kk + 2)[:-1]
            tie = np.all(pv[1:] == pv[:-1], axis=1) & first
            si = np.flatnonzero(tie)
            if si.size:
                rs = r[owner[si]]
                settled += _rowsum(rs, _segment(pt[si], pt[si + 1], pv[si], c[rs], F[rs]), n)
            oi = np.flatnonzero(first & ~tie)
            ro = r[owner[oi]]
            keep = np.ones(br.size, dtype=bool)
            keep[bpick] = False
            br = np.r_[br[keep], ro]
            ba = np.r_[ba[keep], pt[oi]]
            bb = np.r_[bb[keep], pt[oi + 1]]
            dL = np.concatenate([dL[keep], pv[oi]])
            dR = np.concatenate([dR[keep], pv[oi + 1]])
    nlm, err, qe, be, D = _state(n, C, c, F, scale, jumps, qr, qK, qG, settled, br, ba, bb, dL, dR)
    intervals = np.bincount(qr, minlength=n).astype(np.int64)
    return BudgetNLM(nlm=nlm, sd=np.sqrt(np.maximum(D, 0.0)), err=err, scale=scale, route=route,
                     intervals=intervals, predictions=made + k * n)


def _raise_scale(scale, rows, vals, f0):
    """scale[row] = max(scale[row], |f0| + |value - f0|) for the new values (several per row)."""
    np.maximum.at(scale, rows, np.abs(vals) + np.abs(f0[rows]))


def _gk_sums(Dv, u, wk, wg, a, b, c, F):
    """Kronrod and Gauss values of (S1, S2, N) on intervals [a, b]: ``Dv`` (21, I, C) values minus f(x)."""
    w = (b - a)[:, None]
    K = np.zeros((a.size, 3, Dv.shape[2]))
    G = np.zeros_like(K)
    for j in range(u.size):  # node by node, element-wise
        t = (a + u[j] * (b - a))[:, None]
        d = Dv[j]
        terms = np.stack([d, (d - c) ** 2, (d - t * F) ** 2], axis=1)
        K += (wk[j] * w)[:, :, None] * terms
        if wg[j]:
            G += (wg[j] * w)[:, :, None] * terms
    return K, G


def _state(n, C, c, F, scale, jumps, qr, qK, qG, settled, br, ba, bb, dL, dR):
    """Per row NLM and error (n, C); per sub-interval and per bracket error contributions (max over outputs)."""
    nlm = np.full((n, C), np.nan)
    err = np.zeros((n, C))
    D = np.zeros((n, C))
    qe = np.zeros(qr.size)
    be = np.zeros(br.size)
    if qr.size:
        TK, TG = _rowsum(qr, qK, n), _rowsum(qr, qG, n)
        vK, DK, ratio, undK = _nlm_of(TK, c, scale)
        vG, _, _, undG = _nlm_of(TG, c, scale)
        dq = qK - qG
        s1c = (TK[:, 0] - c)[qr]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            contrib = np.abs(dq[:, 2] - ratio[qr] * (dq[:, 1] - 2.0 * s1c * dq[:, 0])) / DK[qr]
        contrib = np.where(undK[qr], np.where(undG[qr], 0.0, np.inf), contrib)
        contrib[np.isnan(contrib)] = np.inf
        total = _rowsum(qr, contrib, n)
        e = np.maximum(np.abs(vK - vG), total)
        e = np.where(undK & undG, 0.0, e)
        e[np.isnan(e)] = np.inf
        rows = ~jumps
        nlm[rows], err[rows], D[rows] = vK[rows], e[rows], DK[rows]
        qe = contrib.max(axis=1)
    jr = jumps
    if jr.any():
        m = 0.5 * (ba + bb)
        est = settled.copy()
        if br.size:
            est += _rowsum(br, _segment(ba, m, dL, c[br], F[br]) + _segment(m, bb, dR, c[br], F[br]), n)
        v, Dj, ratio, und = _nlm_of(est, c, scale)
        hw = (0.5 * (bb - ba))[:, None]
        J = np.abs(dL - dR)
        e1 = J * hw
        e2 = J * np.abs(dL + dR - 2.0 * c[br]) * hw
        eN = J * hw * (np.abs(dL + dR - 2.0 * m[:, None] * F[br]) + np.abs(F[br]) * hw)
        E = _rowsum(br, np.stack([e1, e2, eN], axis=1), n)
        s1c = np.abs(est[:, 0] - c)
        ED = E[:, 1] + 2.0 * s1c * E[:, 0] + E[:, 0] ** 2
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            bound = (E[:, 2] + np.abs(ratio) * ED) / (Dj - ED)
            bound = np.where(Dj > ED, bound, np.inf)
            bound = np.where(E[:, 2] + ED == 0, 0.0, bound)  # no bracket: the closed form is exact
            contrib = (eN + np.abs(ratio[br]) * (e2 + 2.0 * s1c[br] * e1)) / np.abs(Dj[br])
        contrib[~np.isfinite(contrib)] = np.inf
        nlm[jr], err[jr], D[jr] = v[jr], bound[jr], Dj[jr]
        be = contrib.max(axis=1) if br.size else be
    return nlm, err, qe, be, D
