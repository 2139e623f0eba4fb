"""The classic categorical AME of Dask data: ``fme.ame(..., categorical='classic')``.

The pandas path (:func:`fme._local.ame._categorical_specs`) sets every row to
the reference level c_ref, then to each other level c, and averages
f(x with c) - f(x with c_ref) over all rows (Eq. categorical_me; rows
already at c or with a missing value count too). On Dask data one pass does
the same: each partition is set to c_ref once and the batch kernel
(:func:`fme._core.kernel.evaluate_batch`) evaluates the categorical step "-> c"
on it for every other level (nothing is excluded: no row is at c or
missing), returning per level the mergeable :class:`~fme._core.summary.Summary`,
the ``by`` groups' sums (groups of the rows' own values, as pandas) and the
sorted fMEs for exact quartiles. The table rows then come from the same code
as the observation-wise rows (:func:`fme._dask.ame.ame`). Bootstrap draws
evaluate each refit on the data set to c_ref (:mod:`fme._dask.bootstrap`,
one seed for every level: the pandas path's shared refits).

Cost: each level's kernel call predicts f(x with c_ref) again (2 predictions
per row and level instead of 1 + 1/levels), the price of using the kernel
unchanged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import numpy as np
import pandas as pd

from .._core.kernel import evaluate_batch
from .._core.plan import Plan
from .._core.summary import summarise
from ..steps import Step, check_training_levels, set_level
from .common import ship, tree_reduce
from .result import DaskFMEResult

__all__ = ["classic_results"]


def _at_level(part: pd.DataFrame, feature: str, level: Any) -> pd.DataFrame:
    """A shallow copy of ``part`` with every row of ``feature`` set to ``level``."""
    out = part.copy(deep=False)
    out[feature] = set_level(part[feature], level, len(part))
    return out


def _classic_pass(part: pd.DataFrame, shipped: Any, feature: str, reference: Any, groups: Any) -> tuple[Any, ...]:
    """Per level: (Summary, sorted fMEs, per-group sorted fMEs) of one partition set to ``reference``
    (``shipped``: the levels' plans, :func:`fme._dask.common.ship`)."""
    plans = shipped.value
    codes = None
    if groups is not None:
        from .groups import group_codes, row_weights

        codes = group_codes(part, groups)  # the rows' own groups, before the level is overwritten
        weights = row_weights(part, groups)
    at_ref = _at_level(part, feature, reference)
    out: list[Any] = []
    for plan in plans:
        batch = evaluate_batch(plan, at_ref, with_rows=plan.method == "delta")
        summary = summarise(batch, plan)
        group_parts = None
        if groups is not None:
            from .groups import group_sums

            sums, group_parts = group_sums(batch, cast(np.ndarray, codes), groups.n_groups, weights)
            summary = replace(summary, groups=sums)
        fm = np.sort(batch.results["fme"].to_numpy(dtype=float))
        out += [summary, fm[~np.isnan(fm)], group_parts]
    return tuple(out)


def classic_results(
    plan: Plan,
    data: Any,
    feature: str,
    reference: Any,
    levels: list[Any],
    *,
    method: str,
    bootstrap: Any,
    conf_level: float,
    groups: Any,
) -> list[DaskFMEResult]:
    """One :class:`DaskFMEResult` per level other than ``reference`` (their summaries from one pass), under the
    front door's ``plan`` (its model, predictor, levels the model states, batch size and progress).

    ``levels``: the reference and the levels compared with it (:func:`fme.steps.classic_contrast`); ``groups``: the
    ``by`` groups
    (:class:`fme._dask.groups.GroupSpec`) or None.
    """
    if groups is not None and method == "bootstrap" and feature in groups.by:
        from ..exceptions import ParameterError

        raise ParameterError(
            f"categorical='classic' with bootstrap inference cannot group by the stepped feature "
            f"{feature!r} on Dask data; group by another column or use inference='delta'/'sample'."
        )
    from dask.base import persist
    from dask.delayed import delayed

    from .._utils.progress import dask_progress

    model, predictor, progress = plan.model, plan.predictor, plan.options.progress
    check_training_levels([Step(feature, "categorical", lv) for lv in levels], dict(plan.known_levels))
    others = [lv for lv in levels if lv != reference]
    # every row is set to each level: no detector, no exclusions beyond the model's own (as on pandas data)
    base = Plan(
        model=model,
        predictor=predictor,
        steps=(),
        settings=None,
        batch_size=plan.batch_size,
        method="sample" if method == "bootstrap" else method,
        target_class=plan.target_class,
        progress=False,
    )
    plans = [replace(base, steps=(Step(feature, "categorical", lv),)) for lv in others]
    if not plans:
        return []
    k = len(plans)
    shipped = ship(plans, shared=(model,))  # the plans go to each worker once, not into every task
    outs = [delayed(_classic_pass, nout=3 * k)(p, shipped, feature, reference, groups) for p in data.to_delayed()]
    trees = [tree_reduce([o[3 * j] for o in outs]) for j in range(k)]
    fms = [[o[3 * j + 1] for o in outs] for j in range(k)]
    gps = [[o[3 * j + 2] for o in outs] for j in range(k)] if groups is not None else [[] for _ in range(k)]
    flat = [x for j in range(k) for x in [trees[j], *fms[j], *gps[j]]]
    persisted = persist(*flat)  # type: ignore[no-untyped-call]  # dask's persist is untyped
    dask_progress(list(persisted), progress)
    at_ref = None
    results = []
    pos = 0
    for j, plan in enumerate(plans):
        summary = persisted[pos].compute()
        fm_p = list(persisted[pos + 1 : pos + 1 + len(fms[j])])
        gp_p = list(persisted[pos + 1 + len(fms[j]) : pos + 1 + len(fms[j]) + len(gps[j])])
        pos += 1 + len(fms[j]) + len(gps[j])
        boot = None
        if method == "bootstrap":
            from .bootstrap import bootstrap_draws

            if at_ref is None:
                at_ref = data.map_partitions(_at_level, feature, reference, meta=data._meta)
            counts = (
                summary.codes[:1]
                if groups is None
                else (summary.groups.fme.n if summary.groups.weighted is None else summary.groups.weighted.w)
            )
            boot = bootstrap_draws(model, at_ref, plan, bootstrap, counts, groups)
        results.append(
            DaskFMEResult(
                results=None,
                excluded=None,
                steps=plan.steps,
                summary_data=summary,
                model_description=predictor.description,
                explained_class=predictor.explained_class,
                inference_method=method,
                conf_level=conf_level,
                bootstrap_draws=boot,
                sorted_parts={"fme": fm_p, "nlm": []},
                plan=plan,
                groups=groups,
                group_parts=gp_p,
            )
        )
    return results
