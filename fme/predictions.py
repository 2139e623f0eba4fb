"""Adjusted predictions: marginaleffects' ``predictions``/``avg_predictions``, Stata's ``margins``.

:func:`predictions` gives the model's prediction for every row with its delta-method (where the model has a
parameter covariance) or bootstrap uncertainty; :func:`avg_predictions` averages them over the rows or ``by``
groups, with the delta method (the mean of the rows' Jacobians), the bootstrap (each refit's averages) or
the spread over the rows with the model held fixed (``sample``, t-based). Both take pandas or Dask data
(:mod:`fme._core.averages`, :mod:`fme._dask.vocab`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from ._adapters import adapt, model_frame
from ._core.averages import RowQuantity, average_in_memory, bootstrap_of, model_values, refit_draws
from ._dask.vocab import average_dask, dask_groups, predictions_dask
from .inference._bootstrap import check_bootstrap
from ._utils.validation import check_conf_level, check_data, is_dask_collection
from .exceptions import FeatureError, ModelError, ParameterError
from .inference._estimates import INFERENCE_COLUMNS, Estimates
from .inference._methods import resolve_method
from .inference._vcov import residual_df, with_vcov
from .inference.table import EstimatesTable
from .predictors import make_predictor

__all__ = ["predictions", "avg_predictions", "level_rows", "delta_table", "average_table"]


def level_rows(model: Any, X: pd.DataFrame, target_class: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """f(X), the n x k Jacobian of f(X) in the model's parameters and their k x k covariance (delta method)."""
    return adapt(model, target_class).level_jacobian(X)


def delta_table(est: Estimates, t_df: float | None, label: str, conf_level: float) -> tuple[Estimates, pd.DataFrame]:
    """``est`` with t degrees of freedom (delta method, when ``df=`` asked for them) and its table, whose
    ``inference`` column names the covariance used (``delta (HC3)``)."""
    if t_df is not None and est.method == "delta":
        est = replace(est, df=np.full(est.estimate.size, t_df))
    table = est.table(conf_level)
    if est.method == "delta":
        table["inference"] = label
    return est, table


def _by_codes(data: pd.DataFrame, by: Any) -> tuple[np.ndarray, pd.DataFrame, list]:
    if by is None:
        return np.zeros(len(data), dtype=np.int64), pd.DataFrame(index=[0]), []
    cols = [by] if isinstance(by, str) else list(by)
    missing = [c for c in cols if c not in data.columns]
    if missing:
        raise FeatureError(f"by column(s) {missing} are not columns of the data.")
    gb = data[cols].groupby(cols, sort=True, observed=True, dropna=False)
    return gb.ngroup().to_numpy(dtype=np.int64), gb.size().index.to_frame(index=False), cols


def _level_values(piece: pd.DataFrame, refit: Any, method: str, *, model: Any, predictor: Any,
                  target_class: Any) -> tuple:
    """Per-row values of :class:`~fme._core.averages.RowQuantity`: f(x) of the fitted model (``refit`` None,
    with its Jacobian for ``delta``) or of a refitted one, on a piece of the model's frame."""
    X = predictor.select(piece)
    if refit is None and method == "delta":
        f, jac, V = level_rows(model, X, target_class)
        return f[:, None], jac[:, None, :], V
    p = predictor if refit is None else make_predictor(refit, target_class)
    return p(X, stage="f(x)")[:, None], None, None


def _prepare(model: Any, data: Any, inference: str, bootstrap: Any, target_class: Any, name: str):
    """(the model's frame, or the Dask frame's _meta; predictor; method; the row quantity f(x))."""
    on_dask = is_dask_collection(data)
    frame = model_frame(model, data._meta if on_dask else check_data(data))
    predictor = make_predictor(model, target_class)
    if predictor.output_names is not None:
        raise ParameterError(f"{name} works on one output; pass one class (target_class=<label>).")
    method = resolve_method(inference, model, bootstrap)
    quantity = RowQuantity(partial(_level_values, model=model, predictor=predictor, target_class=target_class))
    return frame, predictor, method, quantity


def _prediction_table(piece: pd.DataFrame, method: str, quantity: RowQuantity, model: Any, bootstrap: Any,
                      label: str, conf_level: float) -> pd.DataFrame:
    """The per-row table of :func:`predictions` for an in-memory piece of the model's frame."""
    values, jac, V = quantity.rows(piece, None, method)
    f = values[:, 0]
    if method == "delta":
        table = Estimates("delta", f, grad=jac[:, 0, :], vcov=V).table(conf_level)
        table["inference"] = label
    elif method == "bootstrap":
        errors: list[str] = []
        draws, info = refit_draws(model, check_bootstrap(bootstrap, model),
                                  lambda models: model_values(quantity, piece, models, errors), np.isfinite(f), errors)
        table = bootstrap_of(f, draws, info).table(conf_level)
    else:
        table = pd.DataFrame({c: np.nan for c in INFERENCE_COLUMNS}, index=range(len(f)))
        table["inference"] = "none"
    return pd.concat([pd.DataFrame({"estimate": f}), table], axis=1).set_axis(piece.index)


def _kept_refits(model: Any, spec: dict) -> tuple[list, dict]:
    """The successful refits of the bootstrap ``spec`` (the seeds, refit function and convergence rules of every
    bootstrap of fme) and their record; their predictions are made later, per chunk."""
    models: list = []

    def keep(fitted: list) -> np.ndarray:
        models.extend(fitted)
        return np.zeros((1, len(fitted)))

    _, info = refit_draws(model, spec, keep)
    return models, info


def _refits_table(piece: pd.DataFrame, quantity: RowQuantity, models: list, info: dict,
                  conf_level: float) -> pd.DataFrame:
    """:func:`_prediction_table` under the bootstrap from refits fitted beforehand (a Dask chunk). A refit whose
    prediction fails here is an error: on pandas data it would be left out of every row, which one chunk cannot
    do for the others."""
    f = np.asarray(quantity.rows(piece, None, "sample")[0], dtype=float).reshape(len(piece), -1)[:, 0]
    errors: list[str] = []
    draws = model_values(quantity, piece, models, errors)
    bad = ~np.all(np.isfinite(draws[np.isfinite(f)]), axis=0)
    if bad.any():
        raise ModelError(f"the prediction of {int(bad.sum())} of {len(models)} refitted models failed on a chunk of the "
                       f"Dask data ({errors[0] if errors else 'a non-finite prediction'}); compute the predictions "
                       "of these rows on a pandas frame, where such refits are left out and counted.")
    table = bootstrap_of(f, draws, info).table(conf_level)
    return pd.concat([pd.DataFrame({"estimate": f}), table], axis=1).set_axis(piece.index)


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
        Training data and options of the refits (:mod:`fme.inference._bootstrap`).

    Returns
    -------
    DataFrame
        ``estimate``, ``std_error``, ``statistic``, ``p_value``, ``conf_low``, ``conf_high``, ``inference``,
        ``covers``.
    """
    model, delta_label = with_vcov(model, vcov)
    frame, predictor, method, quantity = _prepare(model, data, inference, bootstrap, target_class, "predictions")
    conf_level = check_conf_level(conf_level)
    table = partial(_prediction_table, method=method, quantity=quantity, model=model, bootstrap=bootstrap,
                    label=delta_label, conf_level=conf_level)
    if is_dask_collection(data):
        if method == "bootstrap":
            # refit once, here: every chunk's task gets the same fitted refits (a chunk that refitted would
            # repeat all B fits per chunk)
            models, info = _kept_refits(model, check_bootstrap(bootstrap, model))
            table = partial(_refits_table, quantity=quantity, models=models, info=info, conf_level=conf_level)
        meta = pd.DataFrame({"estimate": pd.Series(dtype=float),
                             **{c: pd.Series(dtype=object if c in ("inference", "covers") else float)
                                for c in INFERENCE_COLUMNS}}, index=frame.index[:0])
        return predictions_dask(model, data, table, meta)
    return table(frame)


def avg_predictions(model: Any, data: pd.DataFrame, *, by: str | Sequence[str] | None = None,
                    inference: str = "auto", bootstrap: Any = None, conf_level: float = 0.95,
                    target_class: Any = None, vcov: Any = None, df: Any = None) -> pd.DataFrame:
    """The average prediction over the rows (or per ``by`` group) with its uncertainty.

    Parameters
    ----------
    model, data, by, target_class, vcov, df :
        As in :func:`fme.ame`; ``data`` may be a Dask DataFrame (the rows' sums are taken chunk by chunk,
        :mod:`fme._dask.vocab`).
    inference : {'auto', 'delta', 'bootstrap', 'sample'}
        ``delta``: the mean of the rows' Jacobians; ``bootstrap``: each refit's average prediction
        (``bootstrap={...}``); ``sample``: the spread over the rows with the model held fixed (t-based).
    bootstrap : dict, optional
        Training data and options of the refits (:mod:`fme.inference._bootstrap`).

    Returns
    -------
    EstimatesTable
        The ``by`` columns, ``estimate``, ``std_error``, ``statistic``, ``p_value``, ``conf_low``,
        ``conf_high``, ``inference``, ``covers``, ``n``; it keeps the rows' joint uncertainty for
        :func:`fme.hypotheses`.
    """
    model, delta_label = with_vcov(model, vcov)
    t_df = residual_df(model, df)
    frame, predictor, method, quantity = _prepare(model, data, inference, bootstrap, target_class,
                                                  "avg_predictions")
    conf_level = check_conf_level(conf_level)
    est, counts, keys, by_cols = grouped_average(model, data, frame, quantity, method, by, bootstrap)
    return average_table(est, keys[by_cols] if by_cols else keys.iloc[:, :0], counts, t_df, delta_label,
                         conf_level)


def grouped_average(model: Any, data: Any, frame: pd.DataFrame, quantity: RowQuantity, method: str, by: Any,
                    bootstrap: Any) -> tuple[Estimates, np.ndarray, pd.DataFrame, list]:
    """The averages of ``quantity`` per ``by`` group on either engine: (estimates, rows per group, the groups'
    keys, the ``by`` columns). Dask data are reduced per chunk, a pandas ``frame`` in memory."""
    if is_dask_collection(data):
        by_cols = _by_columns(frame, by)
        groups, keys = dask_groups(data, by_cols)
        est, counts = average_dask(model, data, quantity, method, groups, bootstrap)
        return est, counts, keys, by_cols
    codes, keys, by_cols = _by_codes(frame, by)
    est = average_in_memory(quantity, frame, model, method, codes, len(keys), None, bootstrap)
    return est, np.bincount(codes[codes >= 0], minlength=len(keys)), keys, by_cols


def _by_columns(frame: pd.DataFrame, by: Any) -> list:
    """The ``by`` columns, checked against the (model) frame's columns."""
    if by is None:
        return []
    cols = [by] if isinstance(by, str) else list(by)
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise FeatureError(f"by column(s) {missing} are not columns of the data.")
    return cols


def average_table(est: Estimates, keys: pd.DataFrame, counts: np.ndarray, t_df: float | None, label: str,
                  conf_level: float, head: dict | None = None) -> pd.DataFrame:
    """The table of averaged estimates: ``head`` columns, the ``by`` keys, ``estimate``, the inference columns and
    ``n``: an :class:`~fme.EstimatesTable` keeping the joint uncertainty (for :func:`fme.hypotheses`) and the
    bootstrap's record."""
    est, table = delta_table(est, t_df, label, conf_level)
    m = est.estimate.size
    out = pd.concat([pd.DataFrame({k: [v] * m for k, v in (head or {}).items()}), keys.reset_index(drop=True),
                     pd.DataFrame({"estimate": est.estimate}), table, pd.DataFrame({"n": counts})], axis=1)
    out = EstimatesTable.from_frame(out, est, conf_level=conf_level)
    if est.method == "bootstrap":
        out.bootstrap = {"n_resamples": int(est.draws.shape[1] + est.n_failed), "n_failed": est.n_failed,
                         "n_nonconverged": est.n_nonconverged, "errors": list(est.errors)}
    return out
