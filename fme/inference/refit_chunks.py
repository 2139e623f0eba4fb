"""Chunks of bootstrap refits through a :class:`~fme.inference.RefitCache` (the refitted models only).

The AME tables of Dask data and the margins vocabulary refit the model in chunks of resamples and evaluate
each chunk's models at once. :func:`chunk_refits` gives such a chunk: from the cache when it holds every refit
of it (kept by any bootstrap call on the same model, training data, seed and number of resamples, the
in-memory ``fme.fme`` included), else refitted with the seeds, refit function, convergence checks and parallel
execution of every bootstrap of fme (:func:`fme.inference.execution.run_refits`), and kept there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from .bootstrap import refit_one
from .execution import run_refits

if TYPE_CHECKING:  # pragma: no cover - typing only
    import numpy as np

    from .refit_cache import RefitCache

__all__ = ["chunk_refits"]


def chunk_refits(
    model: Any,
    spec: dict[str, Any],
    chunk: list[np.random.SeedSequence],
    start: int,
    n_resamples: int,
    args: tuple[Any, ...],
    execution: dict[str, Any],
) -> list[tuple[Any, str | None, str | None]]:
    """(fitted model or None, error, non-convergence note) of the resamples ``start, start + 1, ...`` whose
    seeds are ``chunk``; ``args`` = (adapter, training data, n_train) of :func:`~fme.inference.bootstrap.refit_setup`
    and ``spec`` the checked bootstrap spec (its ``cache``, if any)."""
    cache: RefitCache | None = spec.get("cache")
    entry = None if cache is None else cache.entry(model, spec)
    idx = range(start, start + len(chunk))
    if entry is not None and entry.keeping and all(b in entry.results for b in idx):
        fits = [entry.results[b] for b in idx]
        cache = cast("RefitCache", cache)  # entry came from it
        cache.reused += sum(f[0] is not None for f in fits)
        execution.update({"mode": "cached", "workers": 1, "reused": execution.get("reused", 0) + len(fits)})
        return fits
    fits = list(
        run_refits(
            refit_one, chunk, args, n_jobs=spec["n_jobs"], backend=spec["backend"], model=model, execution=execution
        )
    )
    if entry is not None:
        cache = cast("RefitCache", cache)  # entry came from it
        for b, fit in zip(idx, fits):
            cache.keep(entry, b, *fit, n_resamples)
    return fits
