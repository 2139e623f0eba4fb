"""The NLM's flat-path test on Dask data, decided at the end of the one pass.

A path is *flat* when the SD of f along it is at most ``nlm_flat_tol`` times
the SD of all predictions f(x), f(x + h) over the evaluated rows
(:func:`fme._nlm.evaluate.classify`, paper §5.4): a scale that is known only after
every partition has been evaluated. Instead of a first pass over the data for
that scale (the model's f(x), f(x + h) and the partition's reading or
generation once more: 10-20 % of a linear model's fME + NLM time), each
partition is evaluated once with the scale 0, which classifies as flat only the
rows with SD 0 (flat under any scale), and keeps on its worker the rows whose
class is still open: their NLMs (sorted, for the exact median), their path SDs
and whether their error estimate was above ``nlm_tol``. When the pass has
merged the scale, :func:`finish` classifies those rows exactly as the
in-memory path does and gives the NLM figures of the partition and its sorted
defined NLMs.

Memory: 17 bytes per row with a defined NLM while the pass runs (the NLM, its
SD and a flag), against the 8 bytes of the sorted NLMs kept afterwards.
Multi-output models keep the first pass (:func:`fme._dask.effects.fme`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from .._core.exclusions import N_CODES
from .._core.kernel import Batch
from .._core.summary import Moments, Summary

__all__ = ["PendingNLM", "pending", "finish", "flat_scale"]


@dataclass(frozen=True)
class PendingNLM:
    """The rows of one partition whose NLM class waits for the flat-path scale.

    ``nlm`` sorted ascending; ``sd`` and ``inaccurate`` in the same order.
    """

    nlm: np.ndarray
    sd: np.ndarray
    inaccurate: np.ndarray
    n_constant: int
    n_flat: int


def pending(batch: Batch) -> PendingNLM:
    """The open rows of ``batch``, evaluated with the flat-path scale 0 (single output)."""
    v = batch.results["nlm"].to_numpy(dtype=float)
    st = batch.results["nlm_status"].to_numpy()
    sd = np.asarray(batch.nlm_sd, dtype=float).reshape(-1)
    open_ = (st == "ok") | (st == "inaccurate")
    order = np.argsort(v[open_], kind="stable")
    return PendingNLM(
        nlm=v[open_][order],
        sd=sd[open_][order],
        inaccurate=(st[open_] == "inaccurate")[order],
        n_constant=int((st == "constant").sum()),
        n_flat=int((st == "flat").sum()),
    )


def flat_scale(spread: Moments) -> np.ndarray:
    """The flat-path test's scale per output: the (population) SD of all f(x), f(x + h) of the pass."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return cast(np.ndarray, np.sqrt(spread.m2 / np.maximum(spread.n, 1)))


def finish(p: PendingNLM, scale: float, flat_tol: float, threshold: float) -> tuple[Summary, np.ndarray]:
    """The NLM figures of a partition (a :class:`Summary` holding only them) and its sorted defined NLMs.

    The same rule as :func:`fme._nlm.evaluate.classify`: flat when
    ``sd <= flat_tol * scale``; inaccurate only when not flat.
    """
    flat = p.sd <= flat_tol * scale
    defined = ~flat
    nl = p.nlm[defined]
    n_inaccurate = int((p.inaccurate & defined).sum())
    status = np.array(
        [[nl.size - n_inaccurate], [p.n_constant], [p.n_flat + int(flat.sum())], [n_inaccurate]], dtype=np.int64
    )
    with np.errstate(invalid="ignore"):
        n_linear = np.array([(nl >= threshold).sum()], dtype=np.int64)
    pieces = Summary(
        codes=np.zeros(N_CODES, dtype=np.int64),
        fme=Moments.of(np.empty(0)),
        nlm=Moments.of(nl),
        n_linear=n_linear,
        status=status,
    )
    return pieces, nl
