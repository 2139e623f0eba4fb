"""What a fitted statsmodels result holds, read without predicting: whether an object is one, the design matrix
its own ``predict`` would build, its mean function mu(x' beta + offset) where it has one (the delta method's
analytic route; not in the paper), and the text that identifies the fit (the report's model hash). The adapter
(:mod:`fme._adapters.statsmodels`) predicts, prepares data and refits with them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

from ..exceptions import DataError
from .formula import spline_checked
from .identity import array_text, class_path

__all__ = ["is_statsmodels_results", "design_matrix", "mean_functions", "results_text"]


def is_statsmodels_results(model: Any) -> bool:
    """A fitted statsmodels results object (or one shaped like it: ``model``, ``params``, ``predict``)."""
    return hasattr(model, "model") and hasattr(model, "params") and hasattr(model, "predict")


def design_matrix(results: Any, frame: pd.DataFrame) -> np.ndarray:
    """The design matrix statsmodels' own ``results.predict(frame)`` would use."""
    exog, _ = spline_checked(results, results._transform_predict_exog, frame, transform=True)
    exog = np.asarray(exog, dtype=float)
    if exog.shape[0] != len(frame) or not np.isfinite(exog).all():
        raise DataError(
            "the model's design matrix has missing or non-finite values for some evaluated rows; drop or impute "
            "missing values in the model's input columns before asking for delta-method inference."
        )
    return exog


def mean_functions(results: Any) -> tuple[Callable, Callable] | None:
    """(mu, d mu / d eta) for models whose mean is mu(x' beta + offset), else None (numerical)."""
    from statsmodels.discrete.discrete_model import Logit, Poisson, Probit
    from statsmodels.genmod.generalized_linear_model import GLM
    from statsmodels.regression.linear_model import RegressionModel

    model = results.model
    if isinstance(model, RegressionModel):
        return (lambda eta: eta), (lambda eta: np.ones_like(eta))
    if isinstance(model, GLM):
        return model.family.link.inverse, model.family.link.inverse_deriv
    if isinstance(model, Logit):
        return special.expit, (lambda eta: (p := special.expit(eta)) * (1.0 - p))
    if isinstance(model, Probit):
        return stats.norm.cdf, stats.norm.pdf
    if isinstance(model, Poisson):
        return np.exp, np.exp
    return None


def results_text(res: Any) -> str:
    """What identifies a fitted statsmodels result: its class and the model's, the family and link (GLMs), the
    formula and the design (endogenous and exogenous names, the design's and the response's sha256), the
    parameters, their covariance and the covariance type, and the weights, offset and exposure when set."""
    model = res.model
    parts = [class_path(res), class_path(model)]
    family = getattr(model, "family", None)
    if family is not None:
        parts += [class_path(family), class_path(getattr(family, "link", None))]
    parts += [
        repr(getattr(model, "formula", None)),
        repr(list(getattr(model, "exog_names", None) or [])),
        repr(getattr(model, "endog_names", None)),
        "endog " + array_text(np.asarray(model.endog)),
        "exog " + (array_text(np.asarray(model.exog)) if getattr(model, "exog", None) is not None else "None"),
        "params " + array_text(np.asarray(res.params, dtype=float)),
        "cov_type " + repr(getattr(res, "cov_type", None)),
    ]
    try:
        parts.append("cov " + array_text(np.asarray(res.cov_params(), dtype=float)))
    except Exception:  # noqa: BLE001 - a result without a covariance (e.g. regularised fits)
        parts.append("cov None")
    for name in ("weights", "var_weights", "freq_weights", "offset", "exposure"):
        value = getattr(model, name, None)
        if value is not None and np.ndim(value) > 0:
            parts.append(f"{name} " + array_text(np.asarray(value, dtype=float)))
    return "statsmodels(" + "|".join(parts) + ")"
