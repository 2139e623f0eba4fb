"""Covariance choices for the delta method: robust, cluster-robust or given.

:func:`with_vcov` returns the model with the requested parameter covariance and a label for the
``inference`` column, never modifying the caller's object: the model's adapter makes the copy
(:meth:`~fme._adapters.ModelAdapter.with_covariance`: a statsmodels results object is copied, its parameters
unchanged, with ``cov_params_default`` set to the new matrix, which is what its ``cov_params()`` then returns;
a model following the get_coef/get_vcov/get_predict protocol is wrapped) and computes the robust ones
(:meth:`~fme._adapters.ModelAdapter.robust_covariance`).

* ``"HC0"`` .. ``"HC3"``: heteroskedasticity-consistent (statsmodels' own sandwich, by
  ``get_robustcov_results`` for linear models, else by refitting with ``cov_type`` from the same
  parameters and keeping only the covariance);
* ``{"cluster": column}``: cluster-robust by the column of the model's training data;
* a k x k array: that matrix;
* ``"unconditional"`` or ``{"unconditional": "HC0" | "HC1", "cluster": column}``: for averages, the rows'
  sampling added to the parameters' (:mod:`fme.inference.unconditional`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._adapters import adapt
from ..exceptions import ModelError, ParameterError
from .unconditional import is_unconditional, unconditional_label

__all__ = ["with_vcov", "residual_df", "HC_TYPES"]

HC_TYPES = ("HC0", "HC1", "HC2", "HC3")


def with_vcov(model: Any, vcov: Any, averages: bool = False) -> tuple[Any, str]:
    """``model`` with the parameter covariance ``vcov`` (see the module docstring) and its label; the model's
    adapter says whether it has a parameter covariance, computes a robust one and makes the copy
    (:meth:`~fme._adapters.ModelAdapter.with_covariance`).

    ``vcov='unconditional'`` (:mod:`fme.inference.unconditional`) leaves the model as it is: the averaging verbs
    (``averages=True``) add the rows' sampling themselves; any other verb refuses it."""
    if vcov is None:
        return model, "delta"
    if is_unconditional(vcov):
        if not averages:
            raise ParameterError(
                f"vcov={vcov!r} is the variance of an average over sampled rows; it applies to "
                "fme.ame, avg_predictions, avg_comparisons and avg_slopes (and hypotheses on "
                "their tables), not to one row's effect or prediction. Use vcov='HC0' here."
            )
        return model, unconditional_label(vcov)
    adapter = adapt(model)
    k = adapter.parameter_count()
    if k is None:
        raise ModelError(
            f"vcov= applies to models with a parameter covariance (statsmodels results or the "
            f"get_coef/get_vcov/get_predict protocol); a {adapter.type_name} has none."
        )
    if isinstance(vcov, str):
        if vcov not in HC_TYPES:
            raise ParameterError(
                f"vcov must be one of {HC_TYPES}, 'unconditional', {{'cluster': column}} or a "
                f"k x k array; got {vcov!r}."
            )
        V, label = adapter.robust_covariance(vcov), f"delta ({vcov})"
    elif isinstance(vcov, dict):
        if set(vcov) != {"cluster"}:
            raise ParameterError(f"a vcov dict takes one key, 'cluster': {{'cluster': column}}; got {vcov!r}.")
        V, label = adapter.robust_covariance("cluster", vcov["cluster"]), f"delta (cluster: {vcov['cluster']})"
    else:
        V, label = _check_matrix(vcov, k), "delta (given covariance)"
    return adapter.with_covariance(V), label


def _check_matrix(vcov: Any, k: int) -> np.ndarray:
    V = np.asarray(vcov, dtype=float)
    if V.shape != (k, k) or not np.all(np.isfinite(V)) or not np.allclose(V, V.T, rtol=1e-10, atol=1e-14):
        raise ParameterError(
            f"vcov must be a finite symmetric {k} x {k} matrix (one row per parameter), got shape {V.shape}."
        )
    return V


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
