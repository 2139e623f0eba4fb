"""The sums of one group of every row that an AME table's row needs, in two compiled passes (paper §3.2, §5.5).

An AME table of one group of every row (no ``by``, no weights) with the fixed-model interval gives each row its
estimate and standard error (the row-order sums :meth:`fme.inference.estimates.RowInference.average` takes, the
same bits as every averaging route) and its descriptive mean, SD and quartiles (NumPy's pairwise sums, as
:func:`fme._utils.stats.describe` takes them). :func:`one_group_sums` computes both kinds of sum in the same two
passes over the fMEs, the quartiles selected meanwhile on a helper thread (:func:`selecting_quartiles` starts
that selection as soon as the fMEs are known).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._utils.jit import njit
from .._utils.stats import quartiles
from .._utils.threads import beside
from .estimates import KERNEL_ROWS, Estimates

__all__ = ["OneGroupSums", "one_group_sums", "selecting_quartiles"]


@dataclass(frozen=True)
class OneGroupSums:
    """The sums of one group of every row (no weights) that an AME table's row needs, from two compiled passes
    over its fMEs (:func:`one_group_sums`): ``mean`` and ``ss`` as :meth:`RowInference.average` sums them (row
    order: the averaging matrix's product, ``np.bincount``'s sum of squares), ``total`` and ``sum_sq`` as
    ``np.add.reduce`` sums the values and their squared deviations from ``total / n`` (NumPy's pairwise order:
    :func:`fme._utils.stats.describe`'s mean and SD), the ``quartiles`` (:func:`fme._utils.stats.quartiles`,
    selected on a second thread meanwhile) and the ``count`` of values."""

    mean: float
    ss: float
    total: float
    sum_sq: float
    quartiles: tuple[float, float]
    count: int

    def estimates(self) -> Estimates:
        """The group's ``sample`` :class:`Estimates`, :meth:`RowInference.average`'s numbers."""
        count = np.array([float(self.count)])
        with np.errstate(invalid="ignore", divide="ignore"):
            sd = np.sqrt(np.array([self.ss]) / (count - 1.0))
            se = np.where(count >= 2, sd / np.sqrt(count), np.nan)
        return Estimates("sample", np.array([self.mean]), se=se, df=np.maximum(count - 1.0, 1.0))


def selecting_quartiles(values: np.ndarray) -> Callable[[], tuple[float, float]] | None:
    """The quartiles of ``values`` (:func:`fme._utils.stats.quartiles`) selected on a helper thread from now on,
    for :func:`one_group_sums` of the same values (a caller that knows it will ask for them starts the selection,
    the longer of the two tasks, before its other work); None where :func:`one_group_sums` would give None for
    their count."""
    v = np.ascontiguousarray(values, dtype=float)
    return beside(lambda: quartiles(v)) if v.size >= KERNEL_ROWS else None  # on its own copy of the values


def one_group_sums(
    values: np.ndarray, selected: Callable[[], tuple[float, float]] | None = None
) -> OneGroupSums | None:
    """:class:`OneGroupSums` of ``values`` in two passes (NumPy's in seven, over fresh temporaries), the quartiles
    selected meanwhile on a second thread (the passes' sums run in row order, one addition waiting for the last:
    a core beside them is free; ``selected``: that selection, started earlier by :func:`selecting_quartiles` on
    these values); None below :data:`KERNEL_ROWS` values (NumPy's sums cost less than a compile there) or when
    the values' sum is NaN (a NaN, or infinities of both signs: the callers' own routes treat those)."""
    v = np.ascontiguousarray(values, dtype=float)
    n = v.size
    if n < KERNEL_ROWS:
        return None
    if selected is None:
        selected = beside(lambda: quartiles(v))  # on its own copy of the values
    acc = np.zeros(2)
    total = _pairwise_pass(v, 1.0 / float(n), acc, np.nan)
    if np.isnan(total):
        selected()  # not waited for by anyone else; its numbers are not used
        return None
    sum_sq = _pairwise_pass(v, 1.0, acc, float(total) / n)
    return OneGroupSums(float(acc[0]), float(acc[1]), float(total), float(sum_sq), selected(), n)


@njit(nogil=True, error_model="numpy")
def _pairwise_pass(
    a: np.ndarray, w: float, acc: np.ndarray, mean: float
) -> float:  # pragma: no cover - compiled (tests/inference/test_one_group.py checks it against NumPy)
    """One pass over ``a``, returning ``np.add.reduce`` of its terms as NumPy sums a contiguous float array
    (pairwise: a block of at most 128 terms by eight accumulators, longer runs halved at a multiple of 8 and
    the halves' sums added; the recursion unrolled onto a stack, so the blocks come in row order), while the
    same rows are summed in row order into ``acc`` as :func:`fme.inference.estimates._one_group_sums` adds them.
    First pass (``mean`` NaN): the terms are the values and ``acc[0] += w * a[i]``. Second pass: the terms are
    ``(a[i] - mean)^2`` and ``acc[1] += (a[i] - acc[0])^2``."""
    first = np.isnan(mean)
    t = np.empty(128)
    # the stack of runs still open: start, length, phase (0 new, 1 left half pending, 2 right half pending)
    lo_s = np.empty(64, dtype=np.int64)
    n_s = np.empty(64, dtype=np.int64)
    ph_s = np.empty(64, dtype=np.int64)
    left_s = np.empty(64)
    lo_s[0], n_s[0], ph_s[0] = 0, a.size, 0
    sp = 1
    result = -0.0
    row = acc[0] if first else acc[1]
    centre = acc[0]
    while sp > 0:
        top = sp - 1
        lo, n, ph = lo_s[top], n_s[top], ph_s[top]
        if n > 128:
            half = n // 2
            half -= half % 8
            if ph == 0:
                ph_s[top] = 1
                lo_s[sp], n_s[sp], ph_s[sp] = lo, half, 0
            else:
                ph_s[top] = 2
                lo_s[sp], n_s[sp], ph_s[sp] = lo + half, n - half, 0
            sp += 1
            continue
        if first:
            for i in range(n):
                x = a[lo + i]
                row += w * x
                t[i] = x
        else:
            for i in range(n):
                x = a[lo + i]
                d = x - centre
                row += d * d
                e = x - mean
                t[i] = e * e
        if n < 8:
            res = -0.0
            for i in range(n):
                res += t[i]
        else:
            r0, r1, r2, r3, r4, r5, r6, r7 = t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]
            stop = n - n % 8
            for i in range(8, stop, 8):
                r0 += t[i]
                r1 += t[i + 1]
                r2 += t[i + 2]
                r3 += t[i + 3]
                r4 += t[i + 4]
                r5 += t[i + 5]
                r6 += t[i + 6]
                r7 += t[i + 7]
            res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
            for i in range(stop, n):
                res += t[i]
        # hand the block's sum up: a left half waits for its right one, a right half completes its run
        sp -= 1
        while True:
            if sp == 0:
                result = res
                break
            parent = sp - 1
            if ph_s[parent] == 1:
                left_s[parent] = res
                break
            res = left_s[parent] + res
            sp -= 1
    if first:
        acc[0] = row
    else:
        acc[1] = row
    return result
