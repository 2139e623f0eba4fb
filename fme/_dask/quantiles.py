"""Exact order statistics of values spread over Dask partitions (issue 14).

Each partition keeps its values sorted on its worker; a quantile of the
union is found by two small rounds of counting (every ``_PIVOT_STEP``-th value
as pivots, then the values between the bracketing pivots), never by gathering
the values: the same number as ``numpy.quantile`` (linear interpolation) of
the pooled values.
"""

from __future__ import annotations

import numpy as np

__all__ = ["order_statistics", "quantiles"]

#: Every k-th value of each sorted partition is a pivot of the exact quantile selection.
_PIVOT_STEP = 1024


def _pivots(a: np.ndarray, step: int) -> tuple[np.ndarray, int]:
    return a[::step].copy(), int(a.size)


def _bracket(a: np.ndarray, bounds: list[tuple[float | None, float | None]]) -> list[tuple[int, tuple]]:
    out = []
    for lo, hi in bounds:
        i = 0 if lo is None else int(np.searchsorted(a, lo, side="left"))
        j = a.size if hi is None else int(np.searchsorted(a, hi, side="left"))
        # distinct values and their counts: a heavily tied window (e.g. many fMEs of exactly 0) moves as one value
        out.append((i, np.unique(a[i:j], return_counts=True)))
    return out


def order_statistics(parts: list, ranks: list[int]) -> np.ndarray:
    """The values of 0-based ``ranks`` among the union of sorted arrays ``parts`` (persisted Dask delayed
    objects), exactly: pivots bound each rank's value, then only the distinct values between the bounds
    (with their counts) move to the client."""
    import dask
    from dask import delayed

    piv = dask.compute(*[delayed(_pivots)(a, _PIVOT_STEP) for a in parts])
    cand = np.unique(np.concatenate([p for p, _ in piv] + [np.empty(0)]))
    lower = np.zeros(cand.size, dtype=np.int64)  # bounds on #values < candidate, summed over parts
    upper = np.zeros(cand.size, dtype=np.int64)
    for p, length in piv:
        a = np.searchsorted(p, cand, side="left")
        lower += np.where(a >= 1, (a - 1) * _PIVOT_STEP + 1, 0)
        upper += np.minimum(a * _PIVOT_STEP, length)
    bounds = []
    for r in ranks:
        ok_lo = np.flatnonzero(upper <= r)
        ok_hi = np.flatnonzero(lower > r)
        bounds.append((None if ok_lo.size == 0 else float(cand[ok_lo[-1]]),
                       None if ok_hi.size == 0 else float(cand[ok_hi[0]])))
    got = dask.compute(*[delayed(_bracket)(a, bounds) for a in parts])
    out = np.empty(len(ranks))
    for k, r in enumerate(ranks):
        below = sum(g[k][0] for g in got)
        values = np.concatenate([g[k][1][0] for g in got])
        counts = np.concatenate([g[k][1][1] for g in got])
        order = np.argsort(values, kind="stable")
        ends = np.cumsum(counts[order])  # rank (exclusive) after each value in sorted order
        out[k] = values[order][int(np.searchsorted(ends, r - below, side="right"))]
    return out


def quantiles(parts: list, n: int, probs: list[float]) -> dict[float, float]:
    """np.quantile (linear) and np.median of the pooled values at ``probs``; 0.5 is the median."""
    if n == 0:
        return {p: float("nan") for p in probs}
    ranks: set[int] = set()
    for p in probs:
        pos = p * (n - 1)
        ranks.update({int(np.floor(pos)), int(np.ceil(pos))})
    ordered = sorted(ranks)
    values = dict(zip(ordered, order_statistics(parts, ordered)))
    out = {}
    for p in probs:
        pos = p * (n - 1)
        a, b = values[int(np.floor(pos))], values[int(np.ceil(pos))]
        if p == 0.5:
            out[p] = float(a) if n % 2 else float(np.median(np.array([a, b])))
        else:
            # the same interpolation np.quantile applies between the two order statistics
            out[p] = float(np.quantile(np.array([a, b]), pos - np.floor(pos)))
    return out
