"""Bootstrap inference of the AME on Dask data (on top of :mod:`fme.inference.bootstrap`).

The refits use the same seeds, resamples and refit function as the pandas
path (:func:`fme.inference.bootstrap.refit_on`; the training data stay in memory on the
client). Their fMEs are then evaluated per partition: each partition returns,
for every refit b, the sum of fME_b over its evaluated rows, and the sums are
added up, so AME_b = sum / n equals the pandas draw to ~1e-15 relative. The
refits go to the workers in chunks of :data:`CHUNK` models (one pass over the
data per chunk), which bounds the models held at once. With ``bootstrap["cache"]``
(:class:`fme.inference.RefitCache`) a chunk whose refits the cache holds (kept by a
pandas or Dask call on the same model and resamples) is not refitted, and refits
made here are kept there.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pandas as pd

from ..inference.bootstrap import RefitTally, check_refits
from ..inference.refit_chunks import chunk_refits

__all__ = ["CHUNK", "bootstrap_draws"]

#: Refitted models sent to the workers per pass over the data.
CHUNK = 50


def _sums(part: pd.DataFrame, shipped: Any, target_class: Any, groups: Any = None) -> np.ndarray:
    """Per refit: the sum of its fMEs over the partition's evaluated rows (NaN if its predict fails);
    ``shipped``: the plan and the refitted models (:func:`fme._dask.common.ship`).

    With ``groups`` (:class:`fme._dask.groups.GroupSpec`): a (groups + 1) x refits matrix, the sums
    over each group's evaluated rows, then over all of them.
    """
    from .._adapters.predictor import make_predictor
    from .._core.kernel import evaluate_batch
    from ..steps import apply_steps

    plan, models = shipped.value
    batch = evaluate_batch(plan, part, with_rows=False)
    n_groups = 0 if groups is None else groups.n_groups
    out = np.zeros(len(models)) if groups is None else np.zeros((n_groups + 1, len(models)))
    if batch.cand.size == 0:
        return out
    if groups is not None:
        from .groups import group_codes, indicator, row_weights

        codes = group_codes(part, groups)[batch.cand]
        w = row_weights(part, groups)
        w = None if w is None else w[batch.cand]
        # one row for the total: all evaluated rows, whatever their group (weighted sums with wts=)
        total = np.vstack(
            [indicator(codes, n_groups, w).toarray(), np.ones((1, codes.size)) if w is None else w[None, :]]
        )
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
            out[..., b] = np.nan
            continue
        diff = pred[n:] - pred[:n]
        if groups is None:
            out[b] = float(np.sum(diff))
        else:
            out[:, b] = total @ diff
    return out


def bootstrap_draws(
    model: Any, data: Any, plan: Any, bootstrap: Any, n: Any, groups: Any = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """AME_b of every successful refit over the evaluated rows of the Dask ``data``; and info.

    ``n``: the number of evaluated rows, or with ``groups`` the array of each
    group's (with weights, each group's sum of weights: the draws are weighted
    means); the groups' draws (groups x successful refits, 0 for a group
    without evaluated rows, as the pandas averaging matrix gives) are then
    ``info["group_draws"]``.
    """
    from dask.base import compute
    from dask.delayed import delayed

    from .._utils.progress import progress_bar
    from ..inference.bootstrap import check_bootstrap, refit_setup
    from .common import ship

    spec = check_bootstrap(bootstrap, model)
    adapter, train, n_train = refit_setup(model, spec)
    B = int(spec["n_resamples"])
    seeds = np.random.SeedSequence(spec["random_state"]).spawn(B)
    counts = np.atleast_1d(np.asarray(n, dtype=float))
    total_n = float(counts.sum()) if groups is None else None
    draws = np.full(B, np.nan)
    group_draws = None if groups is None else np.full((groups.n_groups, B), np.nan)
    tally = RefitTally(spec["keep_nonconverged"])
    execution: dict[str, Any] = {}
    parts = data.to_delayed()
    starts = range(0, B, CHUNK)
    for start in progress_bar(starts, total=len(starts), desc="bootstrap refits (chunks)", progress=spec["progress"]):
        chunk = seeds[start : start + CHUNK]
        fits = chunk_refits(model, spec, chunk, start, B, (adapter, train, n_train), execution)
        keep = [tally.keep(e, note) for _, e, note in fits]
        models = [m for (m, _, _), k in zip(fits, keep) if k]
        where = [start + j for j, k in enumerate(keep) if k]
        if not models:
            continue
        # the plan and this chunk of refits go to each worker once, not into every task
        shipped = ship((plan, models), shared=(plan.model,))
        tasks = [delayed(_sums)(p, shipped, plan.target_class, groups) for p in parts]
        sums = np.sum(compute(*tasks), axis=0)  # type: ignore[no-untyped-call]  # dask's compute is untyped
        if groups is None:
            draws[where] = sums / total_n
        else:
            draws[where] = sums[-1] / counts.sum()
            with np.errstate(invalid="ignore", divide="ignore"):
                cast(np.ndarray, group_draws)[:, where] = np.where(
                    counts[:, None] > 0, sums[:-1] / counts[:, None], 0.0
                )
        del models, fits
    ok = np.isfinite(draws)
    n_failed = check_refits(B, int(ok.sum()), tally)
    info = {
        "n_resamples": B,
        "random_state": spec["random_state"],
        "n_ok": int(ok.sum()),
        "n_failed": n_failed,
        "n_nonconverged": tally.n_nonconverged,
        "ci": spec["ci"],
        "errors": tuple(tally.errors),
        "execution": execution,
    }
    if groups is not None:
        info["group_draws"] = cast(np.ndarray, group_draws)[:, ok]
    return draws[ok], info
