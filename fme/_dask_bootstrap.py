"""Bootstrap inference of the AME on Dask data (issue 14 on top of issue 12's :mod:`fme._bootstrap`).

The refits use the same seeds, resamples and refit function as the pandas
path (:func:`fme._bootstrap._refit`; the training data stay in memory on the
client). Their fMEs are then evaluated per partition: each partition returns,
for every refit b, the sum of fME_b over its evaluated rows, and the sums are
added up, so AME_b = sum / n equals the pandas draw to ~1e-15 relative. The
refits go to the workers in chunks of :data:`CHUNK` models (one pass over the
data per chunk), which bounds the models held at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ._bootstrap import check_refits

__all__ = ["CHUNK", "bootstrap_draws"]

#: Refitted models sent to the workers per pass over the data.
CHUNK = 50


def _refit_or_error(kind: str, template: Any, train: Any, n_train: int, seed: np.random.SeedSequence):
    from ._bootstrap import _refit

    idx = np.random.default_rng(seed).integers(0, n_train, n_train)  # as fme._bootstrap._one_resample
    try:
        return _refit(kind, template, train, idx), None
    except Exception as exc:  # counted and reported like the pandas path
        return None, f"{type(exc).__name__}: {exc}"


def _sums(part: pd.DataFrame, plan: Any, models: list, target_class: Any) -> np.ndarray:
    """Per refit: the sum of its fMEs over the partition's evaluated rows (NaN if its predict fails)."""
    from ._kernel import evaluate_batch
    from .predictors import make_predictor
    from .steps import apply_steps

    batch = evaluate_batch(plan, part, with_rows=False)
    out = np.zeros(len(models))
    if batch.cand.size == 0:
        return out
    X = plan.predictor.select(part).iloc[batch.cand]
    h = None
    if any(f"step_{s.feature}" in batch.results.columns for s in plan.steps):
        h = {s.feature: batch.results[f"step_{s.feature}"].to_numpy(dtype=float) for s in plan.steps}
    frame = pd.concat([X, apply_steps(X, plan.steps, h)], ignore_index=True)
    n = len(X)
    for b, model in enumerate(models):
        try:
            pred = make_predictor(model, target_class)(frame)
        except Exception:  # noqa: BLE001 - a failed refit prediction: left out below, like a failed refit
            out[b] = np.nan
            continue
        out[b] = float(np.sum(pred[n:] - pred[:n]))
    return out


def bootstrap_draws(model: Any, data: Any, plan: Any, bootstrap: Any, n: int) -> tuple[np.ndarray, dict]:
    """AME_b of every successful refit over all ``n`` evaluated rows of the Dask ``data``; and info."""
    import dask
    from dask import delayed
    from joblib import Parallel
    from joblib import delayed as jdelayed

    from ._bootstrap import check_bootstrap
    from ._progress import progress_bar

    spec = check_bootstrap(bootstrap, model)
    if spec["kind"] == "sklearn":
        from sklearn.base import clone

        template, train, n_train = clone(model), (spec["X"], spec["y"]), len(spec["X"])
    else:
        template, train, n_train = model, spec["data"], len(spec["data"])
    B = int(spec["n_resamples"])
    seeds = np.random.SeedSequence(spec["random_state"]).spawn(B)
    draws = np.full(B, np.nan)
    errors: list[str] = []
    parts = data.to_delayed()
    starts = range(0, B, CHUNK)
    for start in progress_bar(starts, total=len(starts), desc="bootstrap refits (chunks)", progress=spec["progress"]):
        chunk = seeds[start:start + CHUNK]
        fits = Parallel(n_jobs=spec["n_jobs"])(
            jdelayed(_refit_or_error)(spec["kind"], template, train, n_train, s) for s in chunk)
        models = [m for m, _ in fits if m is not None]
        where = [start + j for j, (m, _) in enumerate(fits) if m is not None]
        errors += [e for _, e in fits if e is not None and e not in errors][:5 - len(errors)]
        if not models:
            continue
        sums = dask.compute(*[delayed(_sums)(p, plan, models, plan.target_class) for p in parts])
        draws[where] = np.sum(sums, axis=0) / n
        del models, fits
    ok = np.isfinite(draws)
    n_failed = check_refits(B, int(ok.sum()), errors)
    info = {"n_resamples": B, "random_state": spec["random_state"], "n_ok": int(ok.sum()), "n_failed": n_failed,
            "ci": spec["ci"], "errors": tuple(errors)}
    return draws[ok], info
