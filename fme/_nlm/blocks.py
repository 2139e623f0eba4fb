"""The blocks of rows of the budgeted NLM (:mod:`fme._nlm.budget`, paper §5.4): the memory they write and drop,
made once per call and taken in turn, and their level 0 beside the next block's predictions.

Level 0 of a block of 262,144 rows writes about 28 MB of per-row arrays (the centre, the Kronrod, Gauss and
hidden-jump sums, the cut, the quadrature state's D and per-interval errors) that no result keeps. Fresh memory of
that size is mapped anew by the operating system at every block, each page zeroed and faulted in before the
kernel's first write to it, and unmapped when the block ends. So one call maps them once, for its first (largest)
block, in float memory kept from call to call (:class:`fme._utils.memory.Scratch`), and every block writes into
views of them (:class:`BlockWork`). Nothing here may outlive its block: the budget's result is written into its
own arrays.

A block's level 0 is one compiled pass over its 21 nodes' predictions, and the model's calls for the next block's
nodes need the caller's thread alone: with a core to spare, :func:`start_level0` runs it on the spare cores while
the caller goes on to the next block, which then writes the second of two sets of memory. Every row's numbers are
its own, whichever thread computes them (``tests/_nlm/test_budget.py`` checks one after the other against beside).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._utils.memory import Scratch
from .._utils.numfmt import count
from .._utils.threads import chunks_beside
from ..nlm import gauss_kronrod_rules
from .budget_routes import LEVEL0_CONSTANTS
from .level0_kernel import TILE, level0, level0_work

__all__ = ["LEVEL0_CHUNK", "U", "WG", "WK", "Block", "BlockWork", "start_level0"]

#: Rows of a chunk of a level 0 beside the caller (a multiple of the kernel's tile; 1/16 of a block: the caller,
#: once it waits, shares what is left).
LEVEL0_CHUNK = 256 * TILE

#: The 21-node Kronrod rule on [0, 1]: its nodes and weights, and its embedded 10-node Gauss rule's weights (zero
#: off its nodes).
_KRONROD, _GAUSS = gauss_kronrod_rules(1)
U, WK, WG = _KRONROD.nodes, _KRONROD.weights, _GAUSS.weights


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


@dataclass
class Block:
    """A block of rows on its way: its data, per-row steps, f(x) and the fME (rows x outputs), its first row's
    position in the call, the views of the result's arrays it writes (a :class:`~fme._nlm.budget.BudgetNLM`) and
    the :class:`BlockWork` its level 0 writes; then its 21 nodes' predictions ``V`` and a function that waits for
    its level 0 (:func:`start_level0`)."""

    X: pd.DataFrame
    h: Any
    f0: np.ndarray
    F: np.ndarray
    offset: int
    out: Any
    work: BlockWork
    V: Any = None
    level0: Any = None


def start_level0(block: Block, helpers: int) -> Callable[[], tuple]:
    """Start the level 0 of ``block`` (:func:`~fme._nlm.level0_kernel.level0`: the level, the centre c (the level-0
    Kronrod mean, the fixed centre of S2), the route (exact ties between neighbouring values at t = 0, the nodes,
    t = 1, in every output) and the quadrature route's sums and hidden jumps of every row as one interval [0, 1])
    into the block's :class:`BlockWork` and its own level column: on ``helpers`` threads beside the caller, in chunks of
    :data:`LEVEL0_CHUNK` rows, which the caller shares once it waits (:func:`fme._utils.threads.chunks_beside`);
    with no helper, at once on every thread. Returns the function that waits for its arrays."""
    out = block.work.level0(len(block.X), block.out.scale)
    if helpers < 1:
        got = level0(block.V, block.f0, block.F, U, WK, WG, *LEVEL0_CONSTANTS, out=out)
        return lambda: got
    rows, outs = level0_work(block.V, block.f0, block.F, U, WK, WG, *LEVEL0_CONSTANTS, out=out)
    finish = chunks_beside(rows, len(block.X), LEVEL0_CHUNK, helpers)

    def wait() -> tuple:
        finish()
        return outs

    return wait
