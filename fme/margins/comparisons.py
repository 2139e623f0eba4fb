"""Comparisons on other scales than the difference: marginaleffects' ``avg_comparisons(comparison=...)``.

The paper's fME is a difference, f(x + h) - f(x) (§3.2). Risk ratios, log odds ratios and lifts compare
the same two predictions on other scales. As in marginaleffects' ``avg_comparisons``, a scale's plain name
(and its ``...avg`` spelling) applies it to the two averages; ``..._rows`` averages the rows' values on it:

==============  ======================================  =====================================
comparison      plain name and ``...avg``                ``..._rows`` (mean of the rows')
==============  ======================================  =====================================
difference      mean f1 - mean f0 (the AME)              (the same)
ratio           mean f1 / mean f0                        mean of f1 / f0
lnratio         log(mean f1 / mean f0)                   mean of log(f1 / f0)
lnor            log(odds(mean f1) / odds(mean f0))       mean of log(odds(f1) / odds(f0))
lift            (mean f1 - mean f0) / mean f0            mean of (f1 - f0) / f0
==============  ======================================  =====================================

with f0 = f(x), f1 = f(x + h) on the rows :func:`fme.fme` evaluates (its exclusions and extrapolation
policy), odds(p) = p / (1 - p). Uncertainty by the delta method, from the Jacobians of f0 and f1 in the
model's parameters (``vcov=``, ``df=`` as in :func:`fme.ame`), by the bootstrap (the comparison of each
refit's f0 and f1 on the same rows), or with the model held fixed: the spread over the rows of the rows'
values, or for a function g of the two averages of its linearisation d1 f1 + d0 f0 (d the gradient of g at
the averages). Pandas or Dask data (:mod:`fme._core.averages`, :mod:`fme._dask.vocab`). The NLM and the cAMEs
stay defined on the difference scale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from .._core.averages import RowQuantity, average_table
from .._core.estimands import COMPARISONS, ROW_COMPARISONS, comparison_form, comparison_values, finish_averages
from .._core.exclusions import counts_per_key
from .._core.groups import check_by
from .._core.plan import FMEOptions, front_plan
from .._core.result_base import with_class
from .._dask import vocab as dask_vocab
from .._local import vocab as local_vocab
from .._utils.validation import check_conf_level, check_data, check_weights, is_categorical, is_dask_collection
from ..exceptions import ParameterError
from ..inference.estimates import INFERENCE_COLUMNS
from ..inference.methods import resolve_method
from ..inference.table import EstimatesTable
from ..inference.unconditional import is_unconditional, resolve_unconditional
from ..inference.vcov import residual_df, with_vcov
from ..inference.wald import stack_estimates
from ..steps import levels, set_level

__all__ = ["avg_comparisons", "comparisons", "comparisons_by_step", "joint_bootstrap", "stacked", "COMPARISONS"]

#: The columns of an :func:`avg_comparisons` table beside the ``by`` columns.
COMPARISON_COLUMNS = ["step", "comparison", "estimate", *INFERENCE_COLUMNS, "n", "n_excluded"]


def avg_comparisons(
    model: Any,
    data: pd.DataFrame,
    steps: Mapping[str, Any],
    *,
    comparison: str = "difference",
    by: str | Sequence[str] | None = None,
    inference: str = "auto",
    bootstrap: Any = None,
    conf_level: float = 0.95,
    vcov: Any = None,
    df: Any = None,
    target_class: Any = None,
    wts: Any = None,
    **fme_kwargs: Any,
) -> pd.DataFrame:
    """The average comparison of ``model``'s predictions after a step, on the scale ``comparison``.

    Parameters
    ----------
    model, data, steps, target_class, **fme_kwargs :
        As in :func:`fme.fme` (one step specification: its features move together, as in §5.2). ``data``
        may be a Dask DataFrame: the comparisons' sums ride on the kernel's pass over the chunks
        (:mod:`fme._dask.vocab`).
    comparison : str, default='difference'
        One of :data:`COMPARISONS` (module docstring).

        ``steps={feature: None}`` for a categorical feature: every other level against the first (the
        reference), as marginaleffects contrasts a factor's levels: every row set to the reference level,
        then to the level (f0 and f1 of the table), one table row per level, jointly.
    by : str or list of str, optional
        One row per group.
    inference : {'auto', 'delta', 'bootstrap', 'sample'}
        ``delta`` (the default where the model has a parameter covariance), ``bootstrap`` (each refit's
        comparison on the same rows; ``bootstrap={...}`` as in :func:`fme.ame`) or ``sample`` (per-row forms
        only).
    bootstrap : dict, optional
        Training data and options of the refits (:mod:`fme.inference.bootstrap`).
    vcov, df :
        As in :func:`fme.ame` (``'unconditional'`` included: the rows' sampling added; with
        ``steps={feature: None}`` pass each level as its own step instead).
    wts : str or array, optional
        Weights of the rows, as in :func:`fme.ame` (a column of ``data``; pandas data also one number per row):
        the averages of the comparison (or of f(x + h) and f(x) for the scales of averages) are weighted means
        over the evaluated rows, under every inference method.

    Returns
    -------
    EstimatesTable
        ``step``, the ``by`` columns, ``comparison``, ``estimate``, ``std_error``, ``statistic``,
        ``p_value``, ``conf_low``, ``conf_high``, ``inference``, ``covers``, ``n``, ``n_excluded`` (the rows
        :func:`fme.fme` leaves out, as in :func:`fme.ame`); it keeps the rows'
        joint uncertainty for :func:`fme.hypotheses`.
    """
    if comparison not in COMPARISONS:
        raise ParameterError(f"comparison must be one of {COMPARISONS}, got {comparison!r}.")
    every = _every_level_feature(data, steps)
    if every is not None:
        return _every_level(
            model,
            data,
            every,
            comparison=comparison,
            by=by,
            inference=inference,
            bootstrap=bootstrap,
            conf_level=conf_level,
            vcov=vcov,
            df=df,
            target_class=target_class,
            wts=wts,
            **fme_kwargs,
        )
    if fme_kwargs.get("nlm"):
        raise ParameterError(
            "nlm=True: avg_comparisons does not compute the NLM. The NLM (paper §5.4) describes the prediction "
            "along the step's path on the difference scale, whatever `comparison`: ask fme.fme(model, data, steps, "
            "nlm=True) for the rows' NLMs (and .anlm for their average)."
        )
    model, delta_label = with_vcov(model, vcov, averages=True)
    t_df = residual_df(model, df)
    conf_level = check_conf_level(conf_level)
    method = resolve_method(inference, model, bootstrap)
    kind, averaged = comparison_form(comparison)
    quantity = RowQuantity(
        partial(comparison_values, model=model, kind=kind, averaged=averaged, target_class=target_class),
        partial(finish_averages, kind=kind) if averaged else None,
    )
    options = FMEOptions.from_kwargs(
        {**fme_kwargs, "target_class": target_class, "inference": "sample"}, "fme.avg_comparisons"
    )
    # validated once (the plan's fMEs: the evaluated rows, without inference); by= checked on the model's frame
    # (or the Dask frame's _meta); the engine finds the evaluated rows
    planned = front_plan(model, data, options, "fme.avg_comparisons")
    by_cols = check_by(planned.frame.columns, by, COMPARISON_COLUMNS)
    quantity = replace(
        quantity, unconditional=resolve_unconditional(model, vcov, planned.frame, planned.on_dask, method)
    )
    weights = check_weights(wts, planned.frame, planned.on_dask)
    vocab = dask_vocab if planned.on_dask else local_vocab
    est, counts, keys, described = vocab.comparisons(
        planned.plan, planned.data, planned.reference, steps, quantity, method, by_cols, bootstrap, weights
    )
    out = average_table(est, keys[by_cols], counts, t_df, delta_label, conf_level)
    # the rows fme.fme leaves out (a missing input, already at the level, extrapolation), as fme.ame counts them
    out["n_excluded"] = counts_per_key(planned.data, keys, by_cols) - counts
    out.insert(0, "step", described)
    out.insert(1 + len(by_cols), "comparison", comparison)
    return with_class(out, planned.plan.predictor.explained_class)


def comparisons(
    model: Any,
    data: pd.DataFrame,
    steps: Mapping[str, Any],
    *,
    comparison: str = "difference",
    inference: str = "auto",
    bootstrap: Any = None,
    conf_level: float = 0.95,
    vcov: Any = None,
    target_class: Any = None,
    **fme_kwargs: Any,
) -> pd.DataFrame:
    """The comparison of ``model``'s predictions after a step at every row, with its uncertainty: marginaleffects'
    per-row ``comparisons`` (the rows :func:`avg_comparisons` averages; on the difference scale the rows' fMEs).

    Parameters
    ----------
    model, data, steps, target_class, **fme_kwargs :
        As in :func:`fme.fme` (one step specification; its exclusions and extrapolation policy). pandas data
        (for Dask data, :func:`avg_comparisons` averages chunk by chunk).
    comparison : {'difference', 'ratio', 'lnratio', 'lnor', 'lift'}, default='difference'
        The scale of each row's comparison of f(x + h) with f(x) (module docstring).
    inference : {'auto', 'delta', 'bootstrap', 'sample'}
        ``delta``: each row's delta-method interval; ``bootstrap``: the refits' comparisons of each row
        (``bootstrap={...}``, as in :func:`fme.ame`); ``sample`` (the fallback of ``auto`` for a model without
        parameters): one row has no spread, NaN uncertainty and ``inference='none'``.
    bootstrap, conf_level, vcov :
        As in :func:`avg_comparisons`.

    Returns
    -------
    DataFrame
        One row per evaluated row, indexed like ``data``: ``step``, ``comparison``, ``estimate``,
        ``std_error``, ``statistic``, ``p_value``, ``conf_low``, ``conf_high``, ``inference``, ``covers`` (a
        classifier's: a ``class`` column first). Rows :func:`fme.fme` leaves out (a missing input, already at
        the level, extrapolation) have no row.
    """
    if comparison not in ROW_COMPARISONS:
        raise ParameterError(
            f"comparison must be one of {ROW_COMPARISONS} for per-row comparisons (the ...avg forms "
            f"compare averages: fme.avg_comparisons), got {comparison!r}."
        )
    if is_dask_collection(data) or is_dask_collection(fme_kwargs.get("reference_data")):
        raise ParameterError(
            "fme.comparisons takes pandas data (one row per data row comes back); on Dask data "
            "fme.avg_comparisons averages the rows' comparisons chunk by chunk, or pass "
            "data.compute() for the rows' own."
        )
    model, delta_label = with_vcov(model, vcov)
    conf_level = check_conf_level(conf_level)
    method = resolve_method(inference, model, bootstrap)
    quantity = RowQuantity(
        partial(comparison_values, model=model, kind=comparison, averaged=False, target_class=target_class)
    )
    options = FMEOptions.from_kwargs(
        {**fme_kwargs, "target_class": target_class, "inference": "sample"}, "fme.comparisons"
    )
    planned = front_plan(model, data, options, "fme.comparisons")
    if planned.plan.names is not None:
        raise ParameterError("fme.comparisons works on one output; pass one class (target_class=<label>).")
    out, described = local_vocab.row_comparisons(
        planned.plan, planned.data, planned.reference, steps, quantity, method, bootstrap, delta_label, conf_level
    )
    out.insert(0, "step", described)
    out.insert(1, "comparison", comparison)
    return with_class(out, planned.plan.predictor.explained_class)


def joint_bootstrap(bootstrap: Any) -> Any:
    """``bootstrap`` with one seed fixed for several calls (drawn here when it has none), so that their refits
    are the same resamples and their draws are joint."""
    if bootstrap is None or dict(bootstrap).get("random_state") is not None:
        return bootstrap
    return {**dict(bootstrap), "random_state": int(np.random.SeedSequence().entropy % (2**63))}


def stacked(tables: list, **meta: Any) -> EstimatesTable:
    """The rows of several tables as one, with their joint uncertainty (``meta``: as
    :meth:`EstimatesTable.from_frame`)."""
    return EstimatesTable.from_frame(
        pd.concat(tables, ignore_index=True), stack_estimates([t.estimates for t in tables]), **meta
    )


def _every_level_feature(data: Any, steps: Any) -> str | None:
    """The feature of ``steps={feature: None}`` when it is a categorical column of ``data`` (else None)."""
    if not isinstance(steps, Mapping) or len(steps) != 1:
        return None
    ((feature, value),) = steps.items()
    columns = data._meta if is_dask_collection(data) else data
    if value is not None or not isinstance(columns, pd.DataFrame) or feature not in columns.columns:
        return None
    return feature if is_categorical(columns[feature]) else None


def _at_level(data: Any, feature: str, level: Any) -> Any:
    """``data`` with every row's ``feature`` at ``level`` (its dtype kept), pandas or Dask."""

    def put(part: pd.DataFrame) -> pd.DataFrame:
        return part.assign(**{feature: set_level(part[feature], level, len(part))})

    return data.map_partitions(put, meta=data._meta) if is_dask_collection(data) else put(check_data(data))


def _every_level(model: Any, data: Any, feature: str, *, bootstrap: Any, **kwargs: Any) -> EstimatesTable:
    """:func:`avg_comparisons` of every level of ``feature`` but the first against the first: each row set to
    the reference level, then stepped to the level; one table keeping the rows' joint uncertainty."""
    if is_dask_collection(data):
        meta = data._meta[feature]
        known = isinstance(meta.dtype, pd.CategoricalDtype) and meta.cat.known
        found = levels(meta if known else data[feature].drop_duplicates().compute())
    else:
        found = levels(check_data(data)[feature])
    if len(found) < 2:
        raise ParameterError(f"feature {feature!r} has {len(found)} level(s): no level to compare with the reference.")
    if is_unconditional(kwargs.get("vcov")):
        # every row is set to the reference level first: those rows are not the model's estimation sample
        raise ParameterError(
            f"vcov={kwargs['vcov']!r} with steps={{{feature!r}: None}}: the rows are set to the "
            f"reference level first, so they are not the rows the model was fitted on. Pass one "
            f"level per call (steps={{{feature!r}: level}}) instead."
        )
    bootstrap = joint_bootstrap(bootstrap)
    reference = found[0]
    base = _at_level(data, feature, reference)
    # the rows as given stay the reference: they know every level, and the detectors fit on them
    kwargs.setdefault("reference_data", data)
    tables = []
    for level in found[1:]:
        t = avg_comparisons(model, base, {feature: level}, bootstrap=bootstrap, **kwargs)
        t["step"] = f"{feature}: {reference!r} -> {level!r}"
        tables.append(t)
    return stacked(tables, conf_level=tables[0].conf_level, bootstrap=tables[0].bootstrap)


def comparisons_by_step(
    model: Any, data: Any, steps: Mapping[str, Any], *, bootstrap: Any = None, **kwargs: Any
) -> pd.DataFrame:
    """:func:`avg_comparisons` of each step of ``steps`` on its own (as :func:`fme.ame` evaluates each entry),
    one :class:`~fme.EstimatesTable` keeping the rows' joint uncertainty (for :func:`fme.hypotheses`): the
    same parameter covariance, or under the bootstrap the same seeded refits for every step."""
    bootstrap = joint_bootstrap(bootstrap)
    tables = [avg_comparisons(model, data, {f: v}, bootstrap=bootstrap, **kwargs) for f, v in steps.items()]
    return stacked(tables, conf_level=tables[0].conf_level)
