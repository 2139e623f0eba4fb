"""Delta-method Jacobians of fMEs w.r.t. the model parameters (see :mod:`fme.inference`).

For row i with evaluation point x_i and stepped point x_i + h, the fME is
f(x_i + h; theta) - f(x_i; theta) (paper §3.2, Eq. multivariate_fME); its
Jacobian row is d f(x_i + h)/d theta - d f(x_i)/d theta.

* statsmodels results whose mean is mu(x' beta) (OLS/WLS/GLS, GLM, Logit,
  Probit, Poisson): analytic, mu'(eta) times the design row; exact, one
  design matrix per point set, no re-prediction.
* other statsmodels results (NegativeBinomial, ...): central differences of
  ``results.model.predict(params, exog)`` in each parameter.
* any other model following the protocol below: central differences of its
  prediction at perturbed parameters.

Protocol for other models (all three methods)::

    model.get_coef() -> array (k,)            # the parameters theta
    model.get_vcov() -> array (k, k)          # their covariance
    model.get_predict(params, data) -> array  # predictions at theta = params for a DataFrame
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd
from scipy import special, stats

from ..exceptions import DataError, FMEError, ModelError, PredictionError
from ._estimates import RowInference
from ..predictors import _is_statsmodels_results

__all__ = ["supports_delta", "delta_rows"]

#: Relative step of the central differences in the parameters (about cbrt(machine eps)).
_REL_EPS = 6e-6


def _is_protocol(model: Any) -> bool:
    return all(callable(getattr(model, m, None)) for m in ("get_coef", "get_vcov", "get_predict"))


def supports_delta(model: Any) -> bool:
    """True for statsmodels results with ``cov_params`` and for models following the protocol."""
    if _is_statsmodels_results(model):
        return callable(getattr(model, "cov_params", None)) and hasattr(model.model, "predict")
    return _is_protocol(model)


def _design(results: Any, frame: pd.DataFrame) -> np.ndarray:
    """The design matrix statsmodels' own ``results.predict(frame)`` would use."""
    exog, _ = results._transform_predict_exog(frame, transform=True)
    exog = np.asarray(exog, dtype=float)
    if exog.shape[0] != len(frame) or not np.isfinite(exog).all():
        raise DataError(
            "the model's design matrix has missing or non-finite values for some evaluated rows; drop or impute "
            "missing values in the model's input columns before asking for delta-method inference."
        )
    return exog


def _mean_derivative(results: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    """d mu / d eta for models whose mean is mu(x' beta), else None (numerical)."""
    from statsmodels.discrete.discrete_model import Logit, Poisson, Probit
    from statsmodels.genmod.generalized_linear_model import GLM
    from statsmodels.regression.linear_model import RegressionModel

    model = results.model
    if isinstance(model, RegressionModel):
        return lambda eta: np.ones_like(eta)
    if isinstance(model, GLM):
        return model.family.link.inverse_deriv
    if isinstance(model, Logit):
        return lambda eta: (p := special.expit(eta)) * (1.0 - p)
    if isinstance(model, Probit):
        return stats.norm.pdf
    if isinstance(model, Poisson):
        return np.exp
    return None


def _numerical(predict_at: Callable[[np.ndarray], np.ndarray], params: np.ndarray, n: int) -> np.ndarray:
    """Central differences of fME = p[n:] - p[:n] (stacked predictions) in each parameter."""
    k = params.size
    jac = np.empty((n, k))
    for j in range(k):
        eps = _REL_EPS * max(1.0, abs(params[j]))
        up, down = params.copy(), params.copy()
        up[j] += eps
        down[j] -= eps
        pu, pd_ = predict_at(up), predict_at(down)
        jac[:, j] = ((pu[n:] - pu[:n]) - (pd_[n:] - pd_[:n])) / (2.0 * eps)
    return jac


def _check_vcov(vcov: np.ndarray, k: int, name: str) -> np.ndarray:
    if vcov.shape != (k, k) or not np.isfinite(vcov).all():
        raise ModelError(
            f"{name}'s parameter covariance has shape {vcov.shape} (or non-finite entries) for {k} parameters; "
            "delta-method inference needs a finite k x k covariance. Use inference='bootstrap' or 'sample'."
        )
    return vcov


def evaluate_with_jacobian(results: Any, X0: pd.DataFrame, X1: pd.DataFrame
                           ) -> tuple[np.ndarray, np.ndarray, RowInference] | None:
    """f(X0), f(X1) and the delta ingredients from one design matrix per point set (no separate predict).

    For statsmodels results with an analytic mean derivative: the predictions are
    ``results.model.predict(params, design)``, which is what ``results.predict(frame)`` computes. None
    for other models (the caller predicts and uses :func:`delta_rows`).
    """
    if not _is_statsmodels_results(results):
        return None
    dmu = _mean_derivative(results)
    params = np.asarray(results.params, dtype=float)
    if dmu is None:
        return None
    D0, D1 = _design(results, X0), _design(results, X1)
    if D0.shape[1] != params.size:
        return None
    model = results.model
    f0 = np.asarray(model.predict(params, D0), dtype=float).reshape(-1)
    f1 = np.asarray(model.predict(params, D1), dtype=float).reshape(-1)
    if not (np.isfinite(f0).all() and np.isfinite(f1).all()):
        return None  # let the predictor raise its PredictionError naming the rows
    vcov = _check_vcov(np.asarray(results.cov_params(), dtype=float), params.size, type(model).__name__)
    if not np.allclose(dmu_mean(results, D0 @ params), f0, rtol=1e-9, atol=1e-12):
        return None  # an offset or exposure: not mu(x'beta)
    jac = dmu(D1 @ params)[:, None] * D1 - dmu(D0 @ params)[:, None] * D0
    return f0, f1, RowInference("delta", f1 - f0, jacobian=jac, vcov=vcov, info={"kernel": "analytic"})


def dmu_mean(results: Any, eta: np.ndarray) -> np.ndarray:
    """mu(eta) of the models :func:`_mean_derivative` knows."""
    from statsmodels.discrete.discrete_model import Logit, Poisson, Probit
    from statsmodels.genmod.generalized_linear_model import GLM

    model = results.model
    if isinstance(model, GLM):
        return model.family.link.inverse(eta)
    if isinstance(model, Logit):
        return special.expit(eta)
    if isinstance(model, Probit):
        return stats.norm.cdf(eta)
    if isinstance(model, Poisson):
        return np.exp(eta)
    return eta


def _statsmodels_rows(results: Any, X0: pd.DataFrame, X1: pd.DataFrame, f0: np.ndarray | None) -> RowInference:
    name = type(results.model).__name__
    params = np.asarray(results.params, dtype=float)
    vcov = _check_vcov(np.asarray(results.cov_params(), dtype=float), params.size, name)
    D0, D1 = _design(results, X0), _design(results, X1)
    n = len(X0)
    model = results.model
    dmu = _mean_derivative(results)
    if dmu is not None and D0.shape[1] == params.size:
        eta0, eta1 = D0 @ params, D1 @ params
        if f0 is not None:
            # The analytic mean must be what the model predicts (an offset or exposure would break it).
            mu0 = np.asarray(model.predict(params, D0), dtype=float)
            if not np.allclose(mu0, f0, rtol=1e-9, atol=1e-12):
                dmu = None
        if dmu is not None:
            jac = dmu(eta1)[:, None] * D1 - dmu(eta0)[:, None] * D0
            return RowInference("delta", np.empty(0), jacobian=jac, vcov=vcov, info={"kernel": "analytic"})
    D = np.vstack([D0, D1])
    jac = _numerical(lambda p: np.asarray(model.predict(p, D), dtype=float).reshape(-1), params, n)
    return RowInference("delta", np.empty(0), jacobian=jac, vcov=vcov, info={"kernel": "numerical"})


def _protocol_call(model: Any, method: str, *args: Any, stage: str) -> np.ndarray:
    """``model.<method>(*args)`` as a float array; its exceptions become library errors naming the model,
    the method and the stage, chained from the original."""
    name = type(model).__name__
    try:
        raw = getattr(model, method)(*args)
    except FMEError:
        raise
    except Exception as exc:
        raise PredictionError(f"{name}.{method}() raised {type(exc).__name__} at {stage}: {exc}.") from exc
    try:
        return np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{name}.{method}() returned non-numeric values ({type(raw).__name__}) at {stage}; "
                         "the delta-method protocol needs numbers (see fme.inference._delta).") from exc


def _protocol_rows(model: Any, X0: pd.DataFrame, X1: pd.DataFrame) -> RowInference:
    name = type(model).__name__
    params = _protocol_call(model, "get_coef", stage="the delta method's parameters").reshape(-1)
    vcov = _check_vcov(_protocol_call(model, "get_vcov", stage="the delta method's covariance"), params.size, name)
    stacked = pd.concat([X0, X1], ignore_index=True)
    n = len(X0)

    def predict_at(p: np.ndarray) -> np.ndarray:
        # a fresh frame per call: a get_predict that modifies its input cannot leak into the next one
        out = _protocol_call(model, "get_predict", p, stacked.copy(deep=False),
                             stage=f"the delta Jacobian (perturbed parameters; rows 0-{2 * n - 1} of x and x + h "
                                   f"stacked)").reshape(-1)
        if out.shape != (2 * n,):
            raise ModelError(f"{name}.get_predict returned {out.shape[0]} values for {2 * n} rows; "
                             "it must return one prediction per row.")
        return out

    jac = _numerical(predict_at, params, n)
    return RowInference("delta", np.empty(0), jacobian=jac, vcov=vcov, info={"kernel": "numerical"})


def delta_rows(model: Any, X0: pd.DataFrame, X1: pd.DataFrame, values: np.ndarray,
               f0: np.ndarray | None = None) -> RowInference:
    """Delta-method ingredients for fMEs ``values`` = f(X1) - f(X0), row by row.

    Parameters
    ----------
    model : statsmodels results or a model following the protocol (module docstring)
    X0, X1 : DataFrame
        The evaluation points and the stepped points, aligned row by row.
    values : ndarray (n,)
        The fMEs.
    f0 : ndarray (n,), optional
        f(X0) as predicted; used to check the analytic mean of statsmodels models.

    Returns
    -------
    RowInference
        ``method='delta'`` with the n x k Jacobian and the k x k covariance.
    """
    if _is_statsmodels_results(model):
        out = _statsmodels_rows(model, X0, X1, f0)
    elif _is_protocol(model):
        out = _protocol_rows(model, X0, X1)
    else:
        raise ModelError(
            f"inference='delta' needs parameters and their covariance; a {type(model).__name__} has neither. "
            "Use a statsmodels results object, implement get_coef/get_vcov/get_predict (see fme.inference._delta), "
            "or use inference='bootstrap' (refits) or 'sample' (fixed model)."
        )
    from dataclasses import replace

    return replace(out, values=np.asarray(values, dtype=float))
