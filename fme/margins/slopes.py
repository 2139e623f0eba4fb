"""Average slopes (derivatives) and elasticities: marginaleffects' ``avg_slopes``, Stata's ``margins, dydx()``.

The paper (§4.1, "Forward Difference versus Derivative") contrasts the forward marginal effect with the
derivative marginal effect; :func:`avg_slopes` gives the derivative one with the vocabulary statisticians
expect: per row the partial derivative of the prediction in ``variable`` by a central difference

    dydx_i = (f(x_i + eps/2) - f(x_i - eps/2)) / eps,   eps = 1e-4 * (max - min of the variable)

(marginaleffects' default step; the central difference's error is O(eps^2); within eps/2 of the boundary
knots of a formula's B-spline, which cannot be evaluated beyond them, one-sided), transformed to
``eyex`` = dydx x / y, ``eydx`` = dydx / y or ``dyex`` = dydx x, and averaged over the rows (or ``by``
groups). Uncertainty: the delta method (the difference quotient's Jacobian rows, and for ``ey..`` the
prediction's own Jacobian), the bootstrap (every slope type: each refit's average slopes on the same rows,
:mod:`fme._core.averages`), or the spread over the rows with the model held fixed (``sample``). Pandas or Dask
data (the rows' sums chunk by chunk, :mod:`fme._dask.vocab`).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from .._adapters import model_frame
from .._adapters.predictor import named_predictor
from .._core.averages import RowQuantity, average_table
from .._core.estimands import SLOPES, difference_points, slope_values
from .._core.exclusions import counts_per_key, leave_out_incomplete
from .._core.groups import check_by
from .._core.result_base import with_class
from .._dask import vocab as dask_vocab
from .._local import vocab as local_vocab
from .._utils.numfmt import count
from .._utils.validation import (
    check_conf_level,
    check_data,
    check_feature_name,
    check_single_output,
    check_weights,
    is_categorical,
    is_dask_collection,
    is_numeric,
)
from ..exceptions import DataError, FeatureError, ParameterError, StepError
from ..inference.estimates import INFERENCE_COLUMNS
from ..inference.methods import resolve_method
from ..inference.unconditional import resolve_unconditional
from ..inference.vcov import residual_df, with_vcov
from .comparisons import joint_bootstrap

__all__ = ["avg_slopes", "slopes", "dme", "SLOPES"]

#: The columns of an :func:`avg_slopes` table beside the ``by`` columns.
SLOPE_COLUMNS = ["term", "slope", "estimate", *INFERENCE_COLUMNS, "n", "n_excluded"]


def avg_slopes(
    model: Any,
    data: pd.DataFrame,
    variables: str | Sequence[str] | None = None,
    *,
    slope: str = "dydx",
    eps: float | None = None,
    by: str | Sequence[str] | None = None,
    inference: str = "auto",
    bootstrap: Any = None,
    conf_level: float = 0.95,
    target_class: Any = None,
    vcov: Any = None,
    df: Any = None,
    wts: Any = None,
    feature_names: Any = None,
) -> pd.DataFrame:
    """Average derivatives (or elasticities) of the prediction, with their uncertainty (module docstring).

    Parameters
    ----------
    model, data, target_class, inference, bootstrap, conf_level :
        As in :func:`fme.ame`.
    feature_names : sequence of column labels, optional
        As in :func:`fme.fme`: the inputs of a model fitted on an array, in its order.
    variables : str or list of str, optional
        Numeric features (default: every numeric input of the model).
    slope : {'dydx', 'eyex', 'eydx', 'dyex'}, default='dydx'
    eps : float, optional
        Step of the central difference (default 1e-4 times the variable's range in ``data``). A variable the
        model cannot be evaluated beyond (a statsmodels formula's B-spline ``bs(x, ...)``, past its boundary
        knots: the training range) keeps both points within that range: a row within ``eps/2`` of a knot takes
        the one-sided difference over what remains of the interval (error O(eps) there), so the average slope
        is defined on every row within the knots; a row outside them raises :class:`~fme.DataError`, naming
        the knots.
    by : str or list of str, optional
        One row per group.
    vcov, df :
        The delta method's covariance and t degrees of freedom, as in :func:`fme.ame` (``'unconditional'``
        included: the rows' sampling added).
    wts : str or array, optional
        Weights of the rows, as in :func:`fme.ame`: each average is the weighted mean of the rows' slopes.

    Returns
    -------
    EstimatesTable
        ``term``, the ``by`` columns, ``slope``, ``estimate``, ``std_error``, ``statistic``, ``p_value``,
        ``conf_low``, ``conf_high``, ``inference``, ``n``, ``n_excluded`` (rows left out: a statsmodels formula
        model's rows with a missing input, as its fit and every verb leave them out).
    """
    model, delta_label = with_vcov(model, vcov, averages=True)
    t_df = residual_df(model, df)
    on_dask, frame, conf_level, predictor, method, variables, steps = _setup(
        model, data, variables, slope, eps, inference, bootstrap, conf_level, target_class, feature_names, "avg_slopes"
    )
    by_cols = check_by(frame.columns, by, SLOPE_COLUMNS)
    weights = check_weights(wts, frame, on_dask)
    # every variable in one pass over the rows (and one set of refits): one column of values each
    quantity = RowQuantity(
        partial(
            slope_values,
            model=model,
            predictor=predictor,
            variables=tuple(variables),
            steps=tuple(steps),
            slope=slope,
            target_class=target_class,
        ),
        unconditional=resolve_unconditional(model, vcov, frame, on_dask, method),
    )
    vocab = dask_vocab if on_dask else local_vocab
    # rows with a missing input of a formula model: left out and counted, as by every verb
    kept, excluded, keep = leave_out_incomplete(data if on_dask else frame, predictor)
    if keep is not None and isinstance(weights, np.ndarray):
        weights = weights[keep]
    est, counts, keys = vocab.average(model, kept, quantity, method, by_cols, bootstrap, weights)
    k = len(variables)
    out = average_table(
        est, pd.concat([keys[by_cols]] * k, ignore_index=True), np.tile(counts, k), t_df, delta_label, conf_level
    )
    out["n_excluded"] = np.tile(counts_per_key(excluded, keys, by_cols), k)
    out.insert(0, "term", np.repeat(np.asarray(variables, dtype=object), len(keys)))
    out.insert(1 + len(by_cols), "slope", slope)
    return with_class(out, predictor.explained_class)


def slopes(
    model: Any,
    data: pd.DataFrame,
    variables: str | Sequence[str] | None = None,
    *,
    slope: str = "dydx",
    eps: float | None = None,
    inference: str = "auto",
    bootstrap: Any = None,
    conf_level: float = 0.95,
    target_class: Any = None,
    vcov: Any = None,
    feature_names: Any = None,
) -> pd.DataFrame:
    """The derivative (or elasticity) of the prediction at every row, with its uncertainty: marginaleffects'
    per-row ``slopes`` (the rows :func:`avg_slopes` averages; module docstring).

    Parameters
    ----------
    model, data, variables, slope, eps, inference, bootstrap, conf_level, target_class, vcov, feature_names :
        As in :func:`avg_slopes`. ``inference='sample'`` (the fallback of ``auto`` for a model without
        parameters): one row has no spread, NaN uncertainty and ``inference='none'``.

    Returns
    -------
    DataFrame
        One block of rows per variable, each indexed like ``data`` (less the rows with a missing input of a
        statsmodels formula model, left out as by every verb): ``term``, ``slope``, ``estimate``,
        ``std_error``, ``statistic``, ``p_value``, ``conf_low``, ``conf_high``, ``inference``, ``covers`` (a
        classifier's: a ``class`` column first). On Dask data a lazy Dask DataFrame.
    """
    model, delta_label = with_vcov(model, vcov)
    on_dask, frame, conf_level, predictor, method, variables, steps = _setup(
        model, data, variables, slope, eps, inference, bootstrap, conf_level, target_class, feature_names, "slopes"
    )
    kept = leave_out_incomplete(data if on_dask else frame, predictor)[0]
    vocab = dask_vocab if on_dask else local_vocab
    blocks = []
    bootstrap = joint_bootstrap(bootstrap)  # every variable's draws from the same refits
    for v, step in zip(variables, steps):
        # the engines' per-row table of any row quantity (as fme.predictions): this variable's slope
        quantity = RowQuantity(
            partial(
                slope_values,
                model=model,
                predictor=predictor,
                variables=(v,),
                steps=(step,),
                slope=slope,
                target_class=target_class,
            )
        )
        table = vocab.predictions(model, kept, quantity, method, bootstrap, delta_label, conf_level)
        blocks.append(table.assign(term=v, slope=slope))
    if on_dask:
        import dask.dataframe as dd

        return with_class(dd.concat(blocks), predictor.explained_class)
    out = pd.concat(blocks)
    out = out[["term", "slope", *[c for c in out.columns if c not in ("term", "slope")]]]
    return with_class(out, predictor.explained_class)


def _setup(
    model: Any,
    data: Any,
    variables: Any,
    slope: str,
    eps: Any,
    inference: str,
    bootstrap: Any,
    conf_level: float,
    target_class: Any,
    feature_names: Any,
    name: str,
) -> tuple[Any, ...]:
    """What :func:`avg_slopes` and :func:`slopes` validate alike: (on Dask, the model's frame or the Dask frame's
    _meta, the confidence level, the predictor, the inference method, the variables, their steps)."""
    if slope not in SLOPES:
        raise ParameterError(f"slope must be one of {SLOPES}, got {slope!r}.")
    on_dask = is_dask_collection(data)
    # validated on the rows, or on the Dask frame's _meta (the engine sums the rows chunk by chunk)
    frame = model_frame(model, data._meta if on_dask else check_data(data))
    conf_level = check_conf_level(conf_level)
    predictor = named_predictor(model, target_class, feature_names)
    if predictor.output_names is not None:
        raise ParameterError(f"{name} works on one output; pass one class (target_class=<label>).")
    method = resolve_method(inference, model, bootstrap)
    if variables is None:
        names = predictor.feature_names or list(frame.columns)
        variables = [v for v in names if v in frame.columns and not is_categorical(frame[v])]
    elif isinstance(variables, str):
        variables = [variables]
    for v in variables:
        if v not in frame.columns:
            raise FeatureError(f"unknown variable {v!r}: not a column of the data.")
        if is_categorical(frame[v]):
            raise FeatureError(
                f"variable {v!r} is categorical: it has no derivative; use fme.ame(model, data, "
                f"{{{v!r}: None}}) for the effect of each level."
            )
    steps = []
    for v in variables:
        if eps is None:
            # marginaleffects' default: 1e-4 of the variable's range over all rows (one reduction on Dask data)
            span = (
                dask_vocab.column_range(data, v)
                if on_dask
                else float(np.nanmax(frame[v].to_numpy(dtype=float)) - np.nanmin(frame[v].to_numpy(dtype=float)))
            )
        step = float(eps) if eps is not None else 1e-4 * span
        if not np.isfinite(step) or step <= 0:
            raise ParameterError(f"eps must be a positive number (the range of {v!r} is 0: pass eps=...).")
        steps.append(step)
    return on_dask, frame, conf_level, predictor, method, list(variables), steps


def dme(
    model: Any,
    data: pd.DataFrame,
    feature: str,
    *,
    eps: float | None = None,
    target_class: Any = None,
    feature_names: Any = None,
) -> pd.DataFrame:
    """Derivative marginal effects by central differences (paper §2.2, §3.1).

    dME(x) = (f(x_j + e, x_-j) - f(x_j - e, x_-j)) / (2 e), with
    ``e = 1e-4 * (max - min)`` of the feature by default (as marginaleffects). Within ``e`` of the boundary
    knots of a statsmodels formula's B-spline (``bs(x, ...)``, which cannot be evaluated beyond them) the
    difference is one-sided, over what remains of the interval.

    Returns
    -------
    DataFrame
        Indexed like ``data``; column ``dme``. Compare ``dme * h`` with the
        fME to see the derivative's interpretation error for a step ``h``.
    """
    data = check_data(data)
    check_feature_name(feature)
    if feature not in data.columns:
        raise FeatureError(f"unknown feature {feature!r}: not a column of the data.")
    if not is_numeric(data[feature]):
        kind = "is categorical" if is_categorical(data[feature]) else f"has dtype {data[feature].dtype}"
        raise StepError(f"feature {feature!r} {kind}; derivatives need a real numeric feature.")
    check_single_output(target_class, "dme")
    if eps is not None and (
        isinstance(eps, (bool, np.bool_)) or not isinstance(eps, numbers.Real) or not np.isfinite(eps) or eps <= 0
    ):
        raise ParameterError(f"eps must be a positive finite number (or None for the default), got {eps!r}.")
    x = data[feature].to_numpy(dtype=float, na_value=np.nan)
    # Rows with a missing or infinite value in the feature get NaN (as fme() leaves them out).
    ok = np.isfinite(x)
    if not ok.any():
        raise DataError(
            f"feature {feature!r} has no finite value in any of the {count(len(x), 'row')}; dME needs at least one."
        )
    if eps is None:
        span = float(x[ok].max() - x[ok].min())
        eps = 1e-4 * (span if span > 0 else max(1.0, float(np.abs(x[ok]).max())))
    eps = float(eps)
    predictor = named_predictor(model, target_class, feature_names)
    X = predictor.select(data)[ok]
    up = X.copy(deep=False)
    down = X.copy(deep=False)
    # within eps of a bound of the model's inputs (a B-spline's knots): a one-sided difference
    bound = None if predictor.adapter is None else predictor.adapter.input_bounds().get(str(feature))
    down[feature], up[feature], width = difference_points(x[ok], eps, bound)
    out = np.full(len(data), np.nan)
    out[ok] = (predictor(up, stage=f"{feature} + eps") - predictor(down, stage=f"{feature} - eps")) / width
    return pd.DataFrame({"dme": out}, index=data.index)
