"""Delta-method Jacobians of fMEs w.r.t. the model parameters (see :mod:`fme.inference`).

For row i with evaluation point x_i and stepped point x_i + h, the fME is
f(x_i + h; theta) - f(x_i; theta) (paper §3.2, Eq. multivariate_fME); its
Jacobian row is d f(x_i + h)/d theta - d f(x_i)/d theta.

What a model supports, and how its Jacobian is taken, is its adapter's business
(:meth:`fme._adapters.ModelAdapter.delta_support`, ``fme_jacobian``,
``predict_with_jacobian``):

* statsmodels results whose mean is mu(x' beta + offset) (OLS/WLS/GLS, GLM, Logit,
  Probit, Poisson): analytic, mu'(eta) times the design row; exact, one
  design matrix per point set, no re-prediction (:mod:`fme._adapters.statsmodels`).
* other statsmodels results (NegativeBinomial, ...): central differences of
  ``results.model.predict(params, exog, offset=...)`` in each parameter.
* any other model following the protocol below: central differences of its
  prediction at perturbed parameters (:mod:`fme._adapters.generic`).

Protocol for other models (all three methods)::

    model.get_coef() -> array (k,)            # the parameters theta
    model.get_vcov() -> array (k, k)          # their covariance
    model.get_predict(params, data) -> array  # predictions at theta = params for a DataFrame
    model.get_influence() -> array (n, k)     # optional, for vcov='unconditional': each estimation-sample
                                              # row's share of theta_hat - theta (bread times score)

This module turns the adapter's ingredients into :class:`~fme.inference.estimates.RowInference`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from .._adapters import adapt
from .._adapters.base import check_vcov
from ..exceptions import ModelError
from .estimates import RowInference

__all__ = ["supports_delta", "delta_rows", "evaluate_with_jacobian"]


def supports_delta(model: Any) -> bool:
    """True when the model's adapter supports the delta method (statsmodels results with ``cov_params``,
    models following the protocol)."""
    return bool(adapt(model).delta_support())


def evaluate_with_jacobian(
    model: Any, X0: pd.DataFrame, X1: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray, RowInference] | None:
    """f(X0), f(X1) and the delta ingredients from one computation per point set (no separate predict).

    For statsmodels results with an analytic mean: the predictions are
    ``results.model.predict(params, design, offset=...)``, which is what ``results.predict(frame)``
    computes with the model's offset. None for other models (the caller predicts and uses
    :func:`delta_rows`).
    """
    got = adapt(model).predict_with_jacobian(X0, X1)
    if got is None:
        return None
    f0, f1, jac, vcov = got
    return f0, f1, RowInference("delta", f1 - f0, jacobian=jac, vcov=vcov, info={"kernel": "analytic"})


def delta_rows(
    model: Any,
    X0: pd.DataFrame,
    X1: pd.DataFrame,
    values: np.ndarray,
    f0: np.ndarray | None = None,
    target_class: Any = None,
) -> RowInference:
    """Delta-method ingredients for fMEs ``values`` = f(X1) - f(X0), row by row.

    Parameters
    ----------
    model : model or its adapter
        statsmodels results or a model following the protocol (module docstring).
    X0, X1 : DataFrame
        The evaluation points and the stepped points, aligned row by row.
    values : ndarray (n,)
        The fMEs.
    f0 : ndarray (n,), optional
        f(X0) as predicted; used to check the analytic mean of statsmodels models.
    target_class : label, optional
        The outcome of a multinomial model whose probability the fMEs are of.

    Returns
    -------
    RowInference
        ``method='delta'`` with the n x k Jacobian and the k x k covariance.
    """
    adapter = adapt(model, target_class)
    support = adapter.delta_support()
    if not support:
        raise ModelError(
            f"inference='delta' needs parameters and their covariance; {support.reason}. "
            "Use a statsmodels results object, implement get_coef/get_vcov/get_predict (see fme.inference.delta), "
            "or use inference='bootstrap' (refits) or 'sample' (fixed model)."
        )
    jac, vcov, kernel = adapter.fme_jacobian(X0, X1, f0)
    vcov = check_vcov(vcov, jac.shape[1], adapter.type_name)
    out = RowInference("delta", np.empty(0), jacobian=jac, vcov=vcov, info={"kernel": kernel})
    return replace(out, values=np.asarray(values, dtype=float))
