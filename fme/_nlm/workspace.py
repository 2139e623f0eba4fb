"""The arrays of one block of rows that the budgeted NLM (:mod:`fme._nlm.budget`, paper §5.4) writes and drops,
made once per call and reused by every block.

Level 0 of a block of 262,144 rows writes about 28 MB of per-row arrays (the centre, the Kronrod, Gauss and
hidden-jump sums, the cut, the quadrature state's D and per-interval errors) that no result keeps. Fresh memory of
that size is mapped anew by the operating system at every block, each page zeroed and faulted in before the
kernel's first write to it, and unmapped when the block ends; on the machines of benchmarks/README.md a page fault
costs more than the kernel's arithmetic on it. So one call maps them once, for its first (largest) block, in
float memory kept from call to call (:class:`fme._utils.memory.Scratch`), and every block writes into views of
them. Nothing here may outlive its block: the budget's result is written into its own arrays.
"""

from __future__ import annotations

import numpy as np

from .._utils.memory import Scratch
from .._utils.numfmt import count

__all__ = ["BlockWork"]


class BlockWork:
    """Reused arrays for blocks of at most ``rows`` rows and ``C`` outputs: :meth:`level0` the outputs of
    :func:`fme._nlm.level0_kernel.level0` but the level ``scale`` (which the result keeps), :meth:`state` those of
    :func:`fme._nlm.level0_kernel.quad_state` but the NLM and its error, for a block of ``m`` rows. Each call of a
    method hands out the same memory: the previous block's arrays must be dropped by then. :meth:`close` returns
    the float memory (kept for the next call if nothing refers to it)."""

    #: Float cells per row and output: the centre c, D, and the Kronrod, Gauss and hidden-jump sums (3 each).
    _PER_OUTPUT = 11
    #: Float cells per row: the cut and the per-interval error and its hidden-jump part.
    _PER_ROW = 3

    def __init__(self, rows: int, C: int) -> None:
        self.rows, self.C = rows, C
        self._scratch = Scratch()
        self._floats: np.ndarray | None = self._scratch.take(rows * (self._PER_OUTPUT * C + self._PER_ROW))
        self._bools = np.empty((2, rows), dtype=np.bool_)

    def _carve(self, m: int) -> list[np.ndarray]:
        """The float arrays of a block of ``m`` rows, views of the shared memory in a fixed order."""
        if self._floats is None or m > self.rows:
            raise ValueError(f"a block of {count(m, 'row')} does not fit a workspace of {count(self.rows, 'row')}")
        C, out, at = self.C, [], 0
        for shape in ((m, C), (m, 3, C), (m, 3, C), (m, 3, C), (m,), (m, C), (m,), (m,)):
            size = int(np.prod(shape))
            out.append(self._floats[at : at + size].reshape(shape))
            at += size
        return out

    def level0(self, m: int, scale: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(scale, c, jumps, K, G, P, cut, iso)`` for :func:`~fme._nlm.level0_kernel.level0`'s ``out``: the
        given ``scale`` (m, C), the rest reused."""
        c, K, G, P, cut, *_ = self._carve(m)
        return scale, c, self._bools[0, :m], K, G, P, cut, self._bools[1, :m]

    def state(self, m: int, nlm: np.ndarray, err: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(nlm, err, D, qe, qh)`` for :func:`~fme._nlm.level0_kernel.quad_state`'s ``out`` when the block's
        ``m`` rows are its sub-intervals: the given ``nlm`` and ``err`` (m, C), the rest reused."""
        *_, D, qe, qh = self._carve(m)
        return nlm, err, D, qe, qh

    def close(self) -> None:
        """Return the float memory (kept for the next call if no array of it is still referred to)."""
        self._floats = None
        self._scratch.give_back()
