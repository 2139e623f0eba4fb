"""Adjusted predictions: marginaleffects' ``predictions``/``avg_predictions``, Stata's ``margins``.

:func:`predictions` gives the model's prediction for every row with its delta-method uncertainty (where
the model has a parameter covariance); :func:`avg_predictions` averages them over the rows or ``by``
groups, with the delta method (the mean of the rows' Jacobians) or the spread over the rows with the
model held fixed (``sample``, t-based).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ._adapters import adapt, model_frame
from ._utils.validation import check_conf_level, check_data, is_dask_collection
from .exceptions import FeatureError, ParameterError
from .inference._estimates import INFERENCE_COLUMNS, Estimates, RowInference, sample_inference
from .inference._methods import resolve_method
from .inference._vcov import residual_df, with_vcov
from .predictors import make_predictor

__all__ = ["predictions", "avg_predictions", "level_rows", "delta_table"]


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


def _prepare(model: Any, data: Any, inference: str, bootstrap: Any, target_class: Any, name: str):
    if is_dask_collection(data):
        raise ParameterError(f"{name} takes a pandas frame.")
    data = model_frame(model, check_data(data))
    predictor = make_predictor(model, target_class)
    if predictor.output_names is not None:
        raise ParameterError(f"{name} works on one output; pass one class (target_class=<label>).")
    method = resolve_method(inference, model, bootstrap)
    if method == "bootstrap":
        raise ParameterError(f"{name} has no bootstrap intervals yet; use inference='delta' (models with a "
                             "parameter covariance) or 'sample' (the spread over the rows, model held fixed).")
    return data, predictor, method


def predictions(model: Any, data: pd.DataFrame, *, inference: str = "auto", conf_level: float = 0.95,
                target_class: Any = None, vcov: Any = None) -> pd.DataFrame:
    """The prediction of every row with its uncertainty (delta method), indexed like ``data``.

    Returns
    -------
    DataFrame
        ``estimate``, ``std_error``, ``statistic``, ``p_value``, ``conf_low``, ``conf_high``, ``inference``
        (NaN uncertainty and ``inference='none'`` when the model has no parameter covariance).
    """
    model, delta_label = with_vcov(model, vcov)
    data, predictor, method = _prepare(model, data, inference, None, target_class, "predictions")
    conf_level = check_conf_level(conf_level)
    X = predictor.select(data)
    if method == "delta":
        f, jac, V = level_rows(model, X, target_class)
        table = Estimates("delta", f, grad=jac, vcov=V).table(conf_level)
        table["inference"] = delta_label
    else:
        f = predictor(X, stage="f(x)")
        table = pd.DataFrame({c: np.nan for c in INFERENCE_COLUMNS}, index=range(len(f)))
        table["inference"] = "none"
    return pd.concat([pd.DataFrame({"estimate": f}), table], axis=1).set_axis(data.index)


def avg_predictions(model: Any, data: pd.DataFrame, *, by: str | Sequence[str] | None = None,
                    inference: str = "auto", conf_level: float = 0.95, target_class: Any = None,
                    vcov: Any = None, df: Any = None) -> pd.DataFrame:
    """The average prediction over the rows (or per ``by`` group) with its uncertainty.

    Returns
    -------
    DataFrame
        The ``by`` columns, ``estimate``, ``std_error``, ``statistic``, ``p_value``, ``conf_low``,
        ``conf_high``, ``inference``, ``n``.
    """
    model, delta_label = with_vcov(model, vcov)
    t_df = residual_df(model, df)
    data, predictor, method = _prepare(model, data, inference, None, target_class, "avg_predictions")
    conf_level = check_conf_level(conf_level)
    codes, keys, by_cols = _by_codes(data, by)
    X = predictor.select(data)
    if method == "delta":
        f, jac, V = level_rows(model, X, target_class)
        inf = RowInference("delta", f, jacobian=jac, vcov=V)
    else:
        inf = sample_inference(predictor(X, stage="f(x)"))
    est, table = delta_table(inf.average(codes, len(keys)), t_df, delta_label, conf_level)
    counts = np.bincount(codes, minlength=len(keys))
    out = pd.concat([keys.reset_index(drop=True)[by_cols], pd.DataFrame({"estimate": est.estimate}), table,
                     pd.DataFrame({"n": counts})], axis=1)
    return out
