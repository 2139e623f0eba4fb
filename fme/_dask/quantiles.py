"""Exact order statistics of values spread over Dask partitions.

Each partition keeps its values sorted on its worker; a quantile of the
union is found by two small rounds of counting (every ``_PIVOT_STEP``-th value
as pivots, then the values between the bracketing pivots), never by gathering
the values: the same number as ``numpy.quantile`` (linear interpolation) of
the pooled values.

A pass that sorts the values can take the pivots itself (:func:`pivots`,
:func:`store_pivots`) and hand them back with its summaries; :func:`select`
then finds the quantiles of any number of value sets kept in per-chunk stores
(dicts of sorted arrays) in one round: one task per chunk.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["order_statistics", "quantiles", "pivots", "store_pivots", "select"]

#: Every k-th value of each sorted partition is a pivot of the exact quantile selection.
_PIVOT_STEP = 1024

#: Per rank, pivots that bound its value from below and above (None: no bound).
_Bounds = list[tuple[float | None, float | None]]
#: A part's bracket of one rank: the count of its values below the window, and the window's distinct values
#: with their counts.
_Bracket = tuple[int, tuple[np.ndarray, np.ndarray]]

_EMPTY = (np.empty(0), 0)


def _pivots(a: np.ndarray, step: int) -> tuple[np.ndarray, int]:
    return a[::step].copy(), int(a.size)


def pivots(a: np.ndarray) -> tuple[np.ndarray, int]:
    """The pivots of one sorted array (every ``_PIVOT_STEP``-th value) and its length."""
    return _pivots(a, _PIVOT_STEP)


def store_pivots(store: dict[Any, np.ndarray]) -> dict[Any, tuple[np.ndarray, int]]:
    """:func:`pivots` of every sorted array of a chunk's store (same keys)."""
    return {key: pivots(a) for key, a in store.items()}


def _bracket(a: np.ndarray, bounds: _Bounds) -> list[_Bracket]:
    out = []
    for lo, hi in bounds:
        i = 0 if lo is None else int(np.searchsorted(a, lo, side="left"))
        j = a.size if hi is None else int(np.searchsorted(a, hi, side="left"))
        # distinct values and their counts: a heavily tied window (e.g. many fMEs of exactly 0) moves as one value
        out.append((i, np.unique(a[i:j], return_counts=True)))
    return out


def _bracket_store(store: dict[Any, np.ndarray], requests: list[tuple[Any, _Bounds]]) -> list[list[_Bracket]]:
    return [_bracket(store.get(key, np.empty(0)), bounds) for key, bounds in requests]


def _bounds(piv: list[tuple[np.ndarray, int]], ranks: list[int]) -> _Bounds:
    """For each rank, pivots that bound its value from below and above (None: no bound), from the
    pivots and lengths of every part."""
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
        bounds.append(
            (None if ok_lo.size == 0 else float(cand[ok_lo[-1]]), None if ok_hi.size == 0 else float(cand[ok_hi[0]]))
        )
    return bounds


def _values(got: list[list[_Bracket]], ranks: list[int]) -> np.ndarray:
    """The values of ``ranks`` from every part's brackets (``got[part][k]`` for rank k)."""
    out = np.empty(len(ranks))
    for k, r in enumerate(ranks):
        below = sum(g[k][0] for g in got)
        values = np.concatenate([g[k][1][0] for g in got])
        counts = np.concatenate([g[k][1][1] for g in got])
        order = np.argsort(values, kind="stable")
        ends = np.cumsum(counts[order])  # rank (exclusive) after each value in sorted order
        out[k] = values[order][int(np.searchsorted(ends, r - below, side="right"))]
    return out


def order_statistics(parts: list[Any], ranks: list[int]) -> np.ndarray:
    """The values of 0-based ``ranks`` among the union of sorted arrays ``parts`` (persisted Dask delayed
    objects), exactly: pivots bound each rank's value, then only the distinct values between the bounds
    (with their counts) move to the client."""
    from dask.base import compute
    from dask.delayed import delayed

    piv = compute(*[delayed(_pivots)(a, _PIVOT_STEP) for a in parts])  # type: ignore[no-untyped-call]  # dask: untyped
    bounds = _bounds(list(piv), ranks)
    got = compute(*[delayed(_bracket)(a, bounds) for a in parts])  # type: ignore[no-untyped-call]  # dask: untyped
    return _values(list(got), ranks)


def _ranks(n: int, probs: list[float]) -> list[int]:
    ranks: set[int] = set()
    for p in probs:
        pos = p * (n - 1)
        ranks.update({int(np.floor(pos)), int(np.ceil(pos))})
    return sorted(ranks)


def _interpolate(values: dict[int, float], n: int, probs: list[float]) -> dict[float, float]:
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


def quantiles(parts: list[Any], n: int, probs: list[float]) -> dict[float, float]:
    """np.quantile (linear) and np.median of the pooled values at ``probs``; 0.5 is the median."""
    if n == 0:
        return {p: float("nan") for p in probs}
    ordered = _ranks(n, probs)
    return _interpolate(dict(zip(ordered, order_statistics(parts, ordered))), n, probs)


def select(
    stores: list[Any],
    chunk_pivots: list[dict[Any, tuple[np.ndarray, int]]],
    problems: list[tuple[Any, int, list[float]]],
) -> list[dict[float, float]]:
    """:func:`quantiles` of several value sets in one round.

    ``stores``: per chunk, a (persisted) dict of sorted arrays; ``chunk_pivots``: per chunk, the computed
    :func:`store_pivots` of that dict; ``problems``: (key, n, probs), the values under ``key`` in every
    chunk's store (a missing key: no values there), ``n`` of them in all. Returns, per problem,
    ``{p: value}``, equal to :func:`quantiles` of the same values.
    """
    from dask.base import compute
    from dask.delayed import delayed

    todo = []  # (problem index, ranks, bounds)
    for i, (key, n, probs) in enumerate(problems):
        if n == 0:
            continue
        ranks = _ranks(n, probs)
        todo.append((i, ranks, _bounds([piv.get(key, _EMPTY) for piv in chunk_pivots], ranks)))
    out: list[dict[float, float]] = [{p: float("nan") for p in probs} for _, _, probs in problems]
    if not todo:
        return out
    requests = [(problems[i][0], bounds) for i, _, bounds in todo]
    got = compute(*[delayed(_bracket_store)(s, requests) for s in stores])  # type: ignore[no-untyped-call]  # dask: untyped
    for t, (i, ranks, _) in enumerate(todo):
        values = _values([g[t] for g in got], ranks)
        out[i] = _interpolate(dict(zip(ranks, values)), problems[i][1], problems[i][2])
    return out
