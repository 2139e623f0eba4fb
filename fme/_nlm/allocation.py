"""A round's picks of the error-controlled NLM (paper §5.4; the rounds: :mod:`fme._nlm.budget`).

Each round of refinement spends its share of what is left of the budget on the quadrature route's sub-intervals
(cut into two, :data:`QUAD_COST` predictions each) and the jump route's open brackets (one probe each, or up to
:data:`MAX_PROBES` by need): every candidate when the share covers them all, else greedily by error per
prediction (:func:`greedy_prefix`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_PROBES", "QUAD_COST", "allocate", "greedy_prefix"]

#: Cutting a sub-interval: 21 nodes on each part and the value at the cut (every sub-interval knows its ends).
QUAD_COST = 43
#: At most this many probes per bracket and round ((k + 1)-section).
MAX_PROBES = 15


def allocate(spend, left, rounds_left, qcand, bcand, qe, be, br, n, tol, first):
    """This round's picks: quadrature sub-intervals, brackets and probes per bracket (module docstring)."""
    cost_all = QUAD_COST * qcand.size + bcand.size
    if cost_all <= spend:
        kk = np.ones(bcand.size, dtype=np.int64)
        if bcand.size:  # probes by need: (k + 1)-section reaching nlm_tol over the rounds left
            nb = np.bincount(br[bcand], minlength=n)[br[bcand]]
            need = np.log2(np.maximum(be[bcand] * nb / max(tol, 1e-300), 1.0))
            kk = np.clip(np.ceil(2.0 ** (need / rounds_left)) - 1, 1, MAX_PROBES).astype(np.int64)
            room = spend - QUAD_COST * qcand.size
            if kk.sum() > room:  # scale down to this round's share (at least one probe each)
                kk = np.maximum(1, np.floor(kk * room / kk.sum())).astype(np.int64)
        return qcand, bcand, kk
    cap = max(spend, min(left, QUAD_COST))
    bprio = 0.5 * be[bcand]
    qprio = qe[qcand] / QUAD_COST
    if bcand.size:
        # a quadrature row's first bisection comes before any bracket: its Kronrod estimate is no bound on a
        # path with a jump in every level-0 interval, and the bisection's 43 values show such a path
        finite = bprio[np.isfinite(bprio)]
        qprio = qprio + first * (finite.max() if finite.size else 0.0)
    prio = np.r_[qprio, bprio]
    cost = np.r_[np.full(qcand.size, QUAD_COST), np.ones(bcand.size)]
    # greedy by error per prediction: every pick costs >= 1, so the picks are among the `cap` largest
    # priorities; a partition finds those (linear time), and only they are sorted
    if not qcand.size:  # brackets only, one prediction each: the floor(cap) largest priorities, no sort needed
        take = np.arange(prio.size) if int(cap) >= prio.size else np.argpartition(-prio, int(cap))[: int(cap)]
    else:
        top = np.arange(prio.size)
        if int(cap) < prio.size:
            top = np.argpartition(-prio, int(cap))[: int(cap) + 1]
        take = greedy_prefix(prio, cost, cap, top)
    sel = np.zeros(prio.size, dtype=bool)  # in candidate order (a linear pass instead of a sort)
    sel[take] = True
    take = np.flatnonzero(sel)
    qpick, bpick = qcand[take[take < qcand.size]], bcand[take[take >= qcand.size] - qcand.size]
    return qpick, bpick, np.ones(bpick.size, dtype=np.int64)


def greedy_prefix(prio: np.ndarray, cost: np.ndarray, cap: float, top: np.ndarray) -> np.ndarray:
    """The candidates ``top`` taken greedily by priority while their costs add up to at most ``cap``: the prefix of
    ``top`` sorted stably by decreasing ``prio`` (ties in their order in ``top``, NaN last) whose running cost stays
    within ``cap``, the same set as that stable sort gives. The costs are small whole numbers, so every running
    sum is exact whatever the order of its terms: an unstable sort (several times quicker) finds the priority at
    which the cost first passes ``cap``, and only the candidates of that priority are ordered by their place."""
    key = -prio[top]
    c_top = cost[top]
    order = np.argsort(key)  # ties in any order: only the tie the cap falls into is ordered below
    running = np.cumsum(c_top[order])
    cut = int(np.searchsorted(running, cap, side="right"))  # the first candidate over the cap, in this order
    if cut >= order.size:
        return top
    ks = key[order]
    tied = np.isnan(ks) if np.isnan(ks[cut]) else ks == ks[cut]  # contiguous: equal keys sort together
    first = int(np.argmax(tied))
    last = first + int(np.argmin(tied[first:])) if not tied[first:].all() else order.size
    spent = running[first - 1] if first else 0.0  # every candidate of a higher priority, taken
    group = np.sort(order[first:last])  # the tie in its order in top, as the stable sort keeps it
    kept = group[spent + np.cumsum(c_top[group]) <= cap]
    return top[np.concatenate([order[:first], kept])]
