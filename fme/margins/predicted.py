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

import pandas as pd

from .._adapters import model_frame
from .._adapters.predictor import make_predictor
from .._core.averages import RowQuantity, average_table
from .._core.estimands import level_values
from .._core.groups import check_by
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
AVERAGE_COLUMNS = ["estimate", *INFERENCE_COLUMNS, "n"]


def _prepare(model: Any, data: Any, inference: str, bootstrap: Any, target_class: Any, name: str):
    """(the model's frame, or the Dask frame's _meta; method; the row quantity f(x))."""
    on_dask = is_dask_collection(data)
    frame = model_frame(model, data._meta if on_dask else check_data(data))
    predictor = make_predictor(model, target_class)
    if predictor.output_names is not None:
        raise ParameterError(f"{name} works on one output; pass one class (target_class=<label>).")
    method = resolve_method(inference, model, bootstrap)
    quantity = RowQuantity(partial(level_values, model=model, predictor=predictor, target_class=target_class))
    return frame, method, quantity


def predictions(model: Any, data: pd.DataFrame, *, inference: str = "auto", bootstrap: Any = None,
                conf_level: float = 0.95, target_class: Any = None, vcov: Any = None) -> pd.DataFrame:
    """The prediction of every row with its uncertainty, indexed like ``data``.

    Parameters
    ----------
    model, data, target_class, vcov :
        As in :func:`fme.ame`. ``data`` may be a Dask DataFrame: the result is then a lazy Dask DataFrame,
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
        ``covers``.
    """
    model, delta_label = with_vcov(model, vcov)
    frame, method, quantity = _prepare(model, data, inference, bootstrap, target_class, "predictions")
    conf_level = check_conf_level(conf_level)
    if is_dask_collection(data):
        return dask_vocab.predictions(model, data, quantity, method, bootstrap, delta_label, conf_level)
    return local_vocab.predictions(model, frame, quantity, method, bootstrap, delta_label, conf_level)


def avg_predictions(model: Any, data: pd.DataFrame, *, by: str | Sequence[str] | None = None,
                    inference: str = "auto", bootstrap: Any = None, conf_level: float = 0.95,
                    target_class: Any = None, vcov: Any = None, df: Any = None, wts: Any = None) -> pd.DataFrame:
    """The average prediction over the rows (or per ``by`` group) with its uncertainty.

    Parameters
    ----------
    model, data, by, target_class, vcov, df, wts :
        As in :func:`fme.ame`; ``data`` may be a Dask DataFrame (the rows' sums are taken chunk by chunk,
        :mod:`fme._dask.vocab`). With ``wts=`` each average is the weighted mean of the rows' predictions.
        ``vcov='unconditional'`` adds the rows' sampling (in memory, over the model's estimation sample).
    inference : {'auto', 'delta', 'bootstrap', 'sample'}
        ``delta``: the mean of the rows' Jacobians; ``bootstrap``: each refit's average prediction
        (``bootstrap={...}``); ``sample``: the spread over the rows with the model held fixed (t-based).
    bootstrap : dict, optional
        Training data and options of the refits (:mod:`fme.inference.bootstrap`).

    Returns
    -------
    EstimatesTable
        The ``by`` columns, ``estimate``, ``std_error``, ``statistic``, ``p_value``, ``conf_low``,
        ``conf_high``, ``inference``, ``covers``, ``n``; it keeps the rows' joint uncertainty for
        :func:`fme.hypotheses`.
    """
    model, delta_label = with_vcov(model, vcov, averages=True)
    t_df = residual_df(model, df)
    frame, method, quantity = _prepare(model, data, inference, bootstrap, target_class, "avg_predictions")
    conf_level = check_conf_level(conf_level)
    by_cols = check_by(frame.columns, by, AVERAGE_COLUMNS)
    on_dask = is_dask_collection(data)
    quantity = replace(quantity, unconditional=resolve_unconditional(model, vcov, frame, on_dask, method))
    weights = check_weights(wts, frame, on_dask)
    vocab = dask_vocab if on_dask else local_vocab
    est, counts, keys = vocab.average(model, data if on_dask else frame, quantity, method, by_cols, bootstrap, weights)
    return average_table(est, keys[by_cols], counts, t_df, delta_label, conf_level)
