"""Covariance choices for the delta method: robust, cluster-robust or given.

:func:`with_vcov` returns the model with the requested parameter covariance and a label for the
``inference`` column, never modifying the caller's object: a statsmodels results object is copied (its
parameters unchanged) with ``cov_params_default`` set to the new matrix, which is what its
``cov_params()`` then returns; a model following the get_coef/get_vcov/get_predict protocol is wrapped.

* ``"HC0"`` .. ``"HC3"``: heteroskedasticity-consistent (statsmodels' own sandwich, by
  ``get_robustcov_results`` for linear models, else by refitting with ``cov_type`` from the same
  parameters and keeping only the covariance);
* ``{"cluster": column}``: cluster-robust by the column of the model's training data;
* a k x k array: that matrix.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ..exceptions import ModelError, ParameterError

__all__ = ["with_vcov", "residual_df", "HC_TYPES"]

HC_TYPES = ("HC0", "HC1", "HC2", "HC3")


def _is_statsmodels(model: Any) -> bool:
    return type(model).__module__.startswith("statsmodels") and hasattr(model, "params") and hasattr(model, "model")


def _robust(results: Any, cov_type: str, cov_kwds: dict | None) -> np.ndarray:
    if hasattr(results, "get_robustcov_results"):
        robust = results.get_robustcov_results(cov_type=cov_type, **(cov_kwds or {}))
    else:
        kwargs = {"cov_type": cov_type, "start_params": np.asarray(results.params)}
        if cov_kwds:
            kwargs["cov_kwds"] = cov_kwds
        try:
            robust = results.model.fit(disp=0, **kwargs)
        except TypeError:
            robust = results.model.fit(**kwargs)
    return np.asarray(robust.cov_params(), dtype=float)


def _cluster_groups(results: Any, column: Any) -> np.ndarray:
    data = getattr(results.model, "data", None)
    frame = getattr(data, "frame", None)
    if frame is None or column not in frame.columns:
        raise ParameterError(f"vcov={{'cluster': {column!r}}} needs the column in the model's training data; fit "
                             "the model with the formula API on a frame that has it.")
    rows = getattr(data, "row_labels", None)
    groups = frame[column] if rows is None else frame.loc[rows, column]
    if groups.isna().any():
        raise ParameterError(f"the cluster column {column!r} has missing values on training rows.")
    return groups.astype("category").cat.codes.to_numpy()


def with_vcov(model: Any, vcov: Any) -> tuple[Any, str]:
    """``model`` with the parameter covariance ``vcov`` (see the module docstring) and its label."""
    if vcov is None:
        return model, "delta"
    if _is_statsmodels(model):
        k = np.asarray(model.params).size
        if isinstance(vcov, str):
            if vcov not in HC_TYPES:
                raise ParameterError(f"vcov must be one of {HC_TYPES}, {{'cluster': column}} or a k x k array; "
                                     f"got {vcov!r}.")
            V, label = _robust(model, vcov, None), f"delta ({vcov})"
        elif isinstance(vcov, dict):
            if set(vcov) != {"cluster"}:
                raise ParameterError(f"a vcov dict takes one key, 'cluster': {{'cluster': column}}; got {vcov!r}.")
            groups = _cluster_groups(model, vcov["cluster"])
            V, label = _robust(model, "cluster", {"groups": groups}), f"delta (cluster: {vcov['cluster']})"
        else:
            V, label = _check_matrix(vcov, k), "delta (given covariance)"
        inner = copy.copy(model._results) if hasattr(model, "_results") else copy.copy(model)
        inner.cov_params_default = V
        return (type(model)(inner) if hasattr(model, "_results") else inner), label
    if all(callable(getattr(model, m, None)) for m in ("get_coef", "get_vcov", "get_predict")):
        if isinstance(vcov, (str, dict)):
            raise ParameterError("robust and cluster covariances need a statsmodels results object; pass the "
                                 "k x k matrix itself for a model of the get_coef/get_vcov/get_predict protocol.")
        k = np.asarray(model.get_coef()).size
        return _GivenVcov(model, _check_matrix(vcov, k)), "delta (given covariance)"
    raise ModelError(f"vcov= applies to models with a parameter covariance (statsmodels results or the "
                     f"get_coef/get_vcov/get_predict protocol); a {type(model).__name__} has none.")


def _check_matrix(vcov: Any, k: int) -> np.ndarray:
    V = np.asarray(vcov, dtype=float)
    if V.shape != (k, k) or not np.all(np.isfinite(V)) or not np.allclose(V, V.T, rtol=1e-10, atol=1e-14):
        raise ParameterError(f"vcov must be a finite symmetric {k} x {k} matrix (one row per parameter), "
                             f"got shape {V.shape}.")
    return V


class _GivenVcov:
    """A protocol model with another covariance (its coefficients and predictions unchanged)."""

    def __init__(self, model: Any, vcov: np.ndarray) -> None:
        self._model, self._vcov = model, vcov

    def get_coef(self) -> np.ndarray:
        return self._model.get_coef()

    def get_vcov(self) -> np.ndarray:
        return self._vcov

    def get_predict(self, params: np.ndarray, data: Any) -> np.ndarray:
        return self._model.get_predict(params, data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


def residual_df(model: Any, df: Any) -> float | None:
    """Degrees of freedom for t quantiles: a positive number, ``"residual"`` (the model's ``df_resid``) or None
    (normal quantiles)."""
    if df is None:
        return None
    if isinstance(df, str):
        if df != "residual":
            raise ParameterError(f"df must be a positive number, 'residual' or None, got {df!r}.")
        value = getattr(model, "df_resid", None)
        if value is None:
            raise ParameterError(f"df='residual' needs a model with df_resid; a {type(model).__name__} has none.")
        return float(value)
    if isinstance(df, bool) or not isinstance(df, (int, float, np.integer, np.floating)) or not df > 0:
        raise ParameterError(f"df must be a positive number, 'residual' or None, got {df!r}.")
    return float(df)
