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

__all__ = ["any_order_sum"]


@njit(nogil=True, fastmath={"reassoc"})
def any_order_sum(values: np.ndarray) -> float:
    """The sum of the 1-D float array ``values``, its additions in whatever order the compiler chooses: NaN or
    infinite when a value is; otherwise finite unless the total overflows (which orders may reach differently,
    so a caller that needs to know checks value by value then)."""
    total = 0.0
    for i in range(values.size):
        total += values[i]
    return total
