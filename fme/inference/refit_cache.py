"""Refitted models kept between bootstrap calls: several effects of one model, one set of refits.

A report asks for the bootstrap interval of several effects of the same model, each a call of :func:`fme.fme`
with the same ``bootstrap`` training data and seed, so each call draws the same resamples and refits the
same models. A :class:`RefitCache` passed in every call's ``bootstrap={..., "cache": cache}`` keeps the
refitted models of the first call (within its memory budget), and each refit's predictions of the evaluation
points; a later call on the same model, training data, seed and number of resamples then only predicts its own
stepped points with them (and its evaluation points, when they differ). The refitted models are the same
objects and every call with a cache predicts x and x + h in separate calls, so a later call's draws equal
those of refitting again, bit for bit; a refit that failed fails again in the same words (its error is kept).
Against a call without a cache, which predicts x and x + h in one call, the draws are equal for models whose
rows are computed independently (trees, linear models, plain functions) and agree to a few units in the last
place for models whose predictions go through BLAS matrix products, which do not promise a row the same bits
at another place in the matrix.

It is used by the bootstrap of :func:`fme.fme`, :func:`fme.ame` and the verbs built on them, in memory and on
Dask data, and by the margins vocabulary (:mod:`fme.inference.refit_chunks`: the refitted models only).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from .._adapters import canonical

__all__ = ["RefitCache"]

#: Default memory budget of a cache (bytes of the pickled refitted models).
CACHE_LIMIT = 512 * 2**20


@dataclass
class _Entry:
    model: Any
    key: tuple[str, int, int]  # (training data's canonical text, random_state, n_resamples)
    results: dict[int, tuple[Any, str | None, str | None]] = field(default_factory=dict)
    size_each: int | None = None  # bytes of the first refitted model, pickled: the size of every one
    keeping: bool = True
    # (evaluation points, resample) -> the refit's predictions of the points (x, before the step)
    base: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)

    def complete(self, n_resamples: int) -> bool:
        return self.keeping and len(self.results) == n_resamples


class RefitCache:
    """Refitted models of bootstrap calls, reused by later calls on the same model and resamples.

    Parameters
    ----------
    memory_limit : int, default=512 MiB
        Bytes of pickled refitted models the cache keeps at most. When a call's refits would exceed it, the
        cache keeps none of that call's models (later calls refit, with the same numbers), and
        :attr:`skipped` counts it.

    Attributes
    ----------
    reused : int
        Refits a call took from the cache instead of fitting again.
    fitted : int
        Refits the cache received from calls that fitted them.
    skipped : int
        Calls whose refits did not fit in ``memory_limit``.

    Notes
    -----
    A call finds its refits when it passes the same model object, training data of equal content (their
    canonical text: columns, dtypes, index and a SHA-256 of the values), the same ``random_state`` and
    ``n_resamples``. Pass it as ``bootstrap={"X": X_train, "y": y_train, "random_state": 0, "cache": cache}``;
    ``random_state`` must be set (with None each call draws new resamples, and nothing can be reused).
    Calls on Dask data and the margins vocabulary (:func:`fme.predictions`, :func:`fme.avg_predictions`,
    :func:`fme.avg_comparisons`, :func:`fme.avg_slopes`) use the same entries (their refits are those of
    ``fme.fme``); they keep the refitted models, not predictions.
    """

    def __init__(self, memory_limit: int = CACHE_LIMIT) -> None:
        self.memory_limit = int(memory_limit)
        self._entries: list[_Entry] = []
        self.reused = self.fitted = self.skipped = 0
        self._used = 0  # bytes kept, counted as models and predictions are kept (a running total, not a scan)

    @property
    def nbytes(self) -> int:
        """Bytes kept: the pickled refitted models and the kept predictions."""
        return self._used

    def entry(self, model: Any, spec: dict[str, Any]) -> _Entry:
        """The entry of ``model`` refitted on the resamples ``spec`` draws (a new, empty one the first time)."""
        # the training data's canonical text (columns, dtypes, index and a SHA-256 of the values), as a model's
        # identity names them
        train = canonical(spec["data"]) if "data" in spec else canonical((spec["X"], spec["y"]))
        key = (train, int(spec["random_state"]), int(spec["n_resamples"]))
        for e in self._entries:
            if e.model is model and e.key == key:
                return e
        e = _Entry(model, key)
        self._entries.append(e)
        return e

    @staticmethod
    def points_key(points: pd.DataFrame, target_class: Any) -> str:
        """The key of a call's evaluation points (and explained class) for the kept predictions."""
        return canonical((points, target_class))

    def keep_base(self, entry: _Entry, points: str, b: int, base: np.ndarray | None) -> None:
        """Keep refit ``b``'s predictions of the evaluation points ``points`` (within the memory budget): a later
        call on the same points predicts only the stepped ones."""
        if base is None or (points, b) in entry.base or self._used + base.nbytes > self.memory_limit:
            return
        entry.base[(points, b)] = base
        self._used += base.nbytes

    def keep(self, entry: _Entry, b: int, fitted: Any, err: str | None, note: str | None, n_resamples: int) -> None:
        """Keep resample ``b``'s refit (or its error) in ``entry``, within the memory budget."""
        if not entry.keeping:
            return
        if fitted is not None and entry.size_each is None:
            # the first refit's size stands for all of them (pickling each would cost a refit's worth for big
            # models): when all would exceed the budget, none is kept
            entry.size_each = len(pickle.dumps(fitted, protocol=pickle.HIGHEST_PROTOCOL))
            if self._used + entry.size_each * n_resamples > self.memory_limit:
                entry.keeping = False
                entry.results.clear()  # only failed refits so far: no bytes counted
                self.skipped += 1
                return
        already = entry.results.get(b, (None,))[0] is not None  # a call interrupted before: counted then
        entry.results[b] = (fitted, err, note)
        if fitted is not None and not already:
            self.fitted += 1
            self._used += cast(int, entry.size_each)  # set by the first refit kept
