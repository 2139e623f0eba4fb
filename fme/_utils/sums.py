"""Sums whose order of additions does not matter, compiled and vectorised.

A finiteness check (:func:`fme._utils.threads.finite_sum`) reads only whether a sum is finite, and every order of
the additions gives a non-finite sum when a value is NaN or infinite (NaN and infinities propagate through every
addition). NumPy's ``add.reduce`` sums pairwise, in a fixed order, at about 20 GB/s on one core; allowing the
compiler to reassociate (LLVM's ``reassoc`` flag alone: NaN and infinities keep their IEEE meaning) lets it add
several lanes at once, at the memory's speed (about half the time on 10^6 values, benchmarks/README.md, "Sixth
pass"). Never for a number fme reports: those are summed in row order (:mod:`fme.inference.estimates`).

Imported where a check first runs, so that ``import fme`` does not import numba.
"""

from __future__ import annotations

import numpy as np

from .jit import njit

__all__ = ["any_order_sum", "difference_sum"]


@njit(nogil=True, fastmath={"reassoc"})
def any_order_sum(values: np.ndarray) -> float:
    """The sum of the 1-D float array ``values``, its additions in whatever order the compiler chooses: NaN or
    infinite when a value is; otherwise finite unless the total overflows (which orders may reach differently,
    so a caller that needs to know checks value by value then)."""
    total = 0.0
    for i in range(values.size):
        total += values[i]
    return total


@njit(nogil=True, fastmath={"reassoc"})
def difference_sum(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> float:
    """Write ``out = a - b`` (1-D float arrays of one length; each difference the IEEE one, as NumPy's) and return
    the sum of ``out`` in whatever order the compiler chooses (:func:`any_order_sum`): one pass where a subtraction
    and a finiteness check of its result would read the operands twice. The sum is non-finite when any ``a`` or
    ``b`` is (NaN minus anything is NaN, infinity minus a finite number or the other infinity is infinite, minus
    itself NaN), and when a difference or the total overflows; a caller that needs to know which settles it
    value by value."""
    total = 0.0
    for i in range(out.size):
        d = a[i] - b[i]
        out[i] = d
        total += d
    return total
