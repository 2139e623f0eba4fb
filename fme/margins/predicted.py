"""Adjusted predictions: marginaleffects' ``predictions``/``avg_predictions``, Stata's ``margins``.

:func:`predictions` gives the model's prediction for every row with its delta-method (where the model has a
parameter covariance) or bootstrap uncertainty; :func:`avg_predictions` averages them over the rows or ``by``
groups, with the delta method (the mean of the rows' Jacobians), the bootstrap (each refit's averages) or
the spread over the rows with the model held fixed (``sample``, t-based). Both take pandas or Dask data: the
front doors validate, then hand the resolved arguments to the in-memory engine (:mod:`fme._local.vocab`) or
the Dask one (:mod:`fme._dask.vocab`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from .._adapters import model_frame
from .._adapters.predictor import named_predictor
from .._core.averages import RowQuantity, average_table
from .._core.estimands import level_values
from .._core.exclusions import counts_per_key, leave_out_incomplete
from .._core.groups import check_by
from .._core.result_base import with_class
from .._dask import vocab as dask_vocab
from .._local import vocab as local_vocab
from .._utils.validation import check_conf_level, check_data, check_weights, is_dask_collection
from ..exceptions import ParameterError
from ..inference.estimates import INFERENCE_COLUMNS
from ..inference.methods import resolve_method
from ..inference.unconditional import resolve_unconditional
from ..inference.vcov import residual_df, with_vcov

__all__ = ["predictions", "avg_predictions"]

#: The columns of an :func:`avg_predictions` table beside the ``by`` columns.
AVERAGE_COLUMNS = ["estimate", *INFERENCE_COLUMNS, "n", "n_excluded"]


def _prepare(
    model: Any, data: Any, inference: str, bootstrap: Any, target_class: Any, name: str, feature_names: Any = None
):
    """(the model's frame, or the Dask frame's _meta; method; the row quantity f(x))."""
    on_dask = is_dask_collection(data)
    frame = model_frame(model, data._meta if on_dask else check_data(data))
    predictor = named_predictor(model, target_class, feature_names)
    if predictor.output_names is not None:
        raise ParameterError(f"{name} works on one output; pass one class (target_class=<label>).")
    method = resolve_method(inference, model, bootstrap)
    quantity = RowQuantity(partial(level_values, model=model, predictor=predictor, target_class=target_class))
    return frame, method, quantity, predictor


def predictions(
    model: Any,
    data: pd.DataFrame,
    *,
    inference: str = "auto",
    bootstrap: Any = None,
    conf_level: float = 0.95,
    target_class: Any = None,
    vcov: Any = None,
    feature_names: Any = None,
) -> pd.DataFrame:
    """The prediction of every row with its uncertainty, indexed like ``data``.

    Parameters
    ----------
    model, data, target_class, vcov, feature_names :
        As in :func:`fme.ame` (``feature_names``: as in :func:`fme.fme`). ``data`` may be a Dask DataFrame: the
        result is then a lazy Dask DataFrame,
        each chunk's rows computed when asked for.
    inference : {'auto', 'delta', 'bootstrap', 'sample'}
        ``delta``: the prediction's delta-method interval (models with a parameter covariance);
        ``bootstrap``: the refits' predictions of each row (``bootstrap={...}``, as in :func:`fme.ame`;
        standard error and percentile or normal interval; on Dask data the refits are fitted once and each
        chunk's task gets them); ``sample``: no interval (one row has
        no spread over rows): NaN uncertainty and ``inference='none'``.
    bootstrap : dict, optional
        Training data and options of the refits (:mod:`fme.inference.bootstrap`).

    Returns
    -------
    DataFrame
        ``estimate``, ``std_error``, ``statistic``, ``p_value``, ``conf_low``, ``conf_high``, ``inference``,
        ``covers`` (a classifier's: a ``class`` column first). Rows with a missing input of a statsmodels
        formula model are left out (as its fit, and every verb, leaves them out; marginaleffects drops them).
    """
    model, delta_label = with_vcov(model, vcov)
    frame, method, quantity, predictor = _prepare(
        model, data, inference, bootstrap, target_class, "predictions", feature_names
    )
    conf_level = check_conf_level(conf_level)
    # rows with a missing input of a formula model are left out, as by every verb (marginaleffects drops them)
    kept = leave_out_incomplete(data if is_dask_collection(data) else frame, predictor)[0]
    if is_dask_collection(data):
        return with_class(
            dask_vocab.predictions(model, kept, quantity, method, bootstrap, delta_label, conf_level),
            predictor.explained_class,
        )
    return with_class(
        local_vocab.predictions(model, kept, quantity, method, bootstrap, delta_label, conf_level),
        predictor.explained_class,
    )


def avg_predictions(
    model: Any,
    data: pd.DataFrame,
    *,
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
    """The average prediction over the rows (or per ``by`` group) with its uncertainty.

    Parameters
    ----------
    model, data, by, target_class, vcov, df, wts, feature_names :
        As in :func:`fme.ame` (``feature_names``: as in :func:`fme.fme`); ``data`` may be a Dask DataFrame (the rows'
        sums are taken chunk by chunk,
        :mod:`fme._dask.vocab`). With ``wts=`` each average is the weighted mean of the rows' predictions.
        ``vcov='unconditional'`` adds the rows' sampling (over the model's estimation sample; pandas or Dask).
    inference : {'auto', 'delta', 'bootstrap', 'sample'}
        ``delta``: the mean of the rows' Jacobians; ``bootstrap``: each refit's average prediction
        (``bootstrap={...}``); ``sample``: the spread over the rows with the model held fixed (t-based).
    bootstrap : dict, optional
        Training data and options of the refits (:mod:`fme.inference.bootstrap`).

    Returns
    -------
    EstimatesTable
        The ``by`` columns, ``estimate``, ``std_error``, ``statistic``, ``p_value``, ``conf_low``,
        ``conf_high``, ``inference``, ``covers``, ``n``, ``n_excluded`` (rows left out: a statsmodels formula
        model's rows with a missing input, as its fit left them out); it keeps the rows' joint uncertainty for
        :func:`fme.hypotheses`.
    """
    model, delta_label = with_vcov(model, vcov, averages=True)
    t_df = residual_df(model, df)
    frame, method, quantity, predictor = _prepare(
        model, data, inference, bootstrap, target_class, "avg_predictions", feature_names
    )
    conf_level = check_conf_level(conf_level)
    by_cols = check_by(frame.columns, by, AVERAGE_COLUMNS)
    on_dask = is_dask_collection(data)
    quantity = replace(quantity, unconditional=resolve_unconditional(model, vcov, frame, on_dask, method))
    weights = check_weights(wts, frame, on_dask)
    # rows with a missing input of a formula model: left out and counted, as by every verb
    kept, excluded, keep = leave_out_incomplete(data if on_dask else frame, predictor)
    if keep is not None and isinstance(weights, np.ndarray):
        weights = weights[keep]
    vocab = dask_vocab if on_dask else local_vocab
    est, counts, keys = vocab.average(model, kept, quantity, method, by_cols, bootstrap, weights)
    out = average_table(est, keys[by_cols], counts, t_df, delta_label, conf_level)
    out["n_excluded"] = counts_per_key(excluded, keys, by_cols)
    return with_class(out, predictor.explained_class)
