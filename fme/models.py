"""What fme knows of a model: its identity, its packages, its formula and its dispersion.

A backend is known in one place, the model adapters (``fme/_adapters``, one module per backend); these thin
functions are their public face for code outside the library's core, such as a report that hashes a model,
lists the packages it is made of or scales a GLM's covariance. Every answer comes from the
adapter that accepts the model, so no caller tests a model's class or module itself.

* :func:`fingerprint`: what identifies a fit (equal bytes for identical fits, unlike their pickles);
* :func:`model_modules`: the top-level packages the model is made of;
* :func:`class_name`: the name of the model's class, as messages name it;
* :func:`formula_categoricals`: the ``C()`` columns of a statsmodels formula;
* :func:`glm_dispersion`, :func:`dispersion_scaled_copy`, :func:`scaled_dispersion`: a Poisson or binomial
  model's Pearson dispersion and a copy whose covariance is scaled by it;
* :func:`refit_support`: whether the model can be refitted on resamples (the bootstrap's recipe);
* :func:`feature_names`: the input columns the model reads, as its adapter names them.
"""

from __future__ import annotations

from typing import Any

from . import _adapters
from ._adapters import Support

__all__ = [
    "Support",
    "fingerprint",
    "model_modules",
    "class_name",
    "formula_categoricals",
    "glm_dispersion",
    "dispersion_scaled_copy",
    "scaled_dispersion",
    "refit_support",
    "auxiliary_inputs",
    "feature_names",
]


def fingerprint(model: Any) -> bytes:
    """The canonical serialisation of a fitted model and of what travels with it.

    Identical fits (same data and settings) give the same bytes even where their pickles differ (two identical
    statsmodels fits pickle differently); a changed parameter, fitted value or training design changes them.

    Parameters
    ----------
    model : object
        A fitted model, or a tuple of a model and what travels with it (e.g. ``(model, training_data)``);
        arrays and frames are described by their dtype, shape and values.

    Returns
    -------
    bytes
        UTF-8 text, for a hash (a report's build cache and audit trail hash it with sha256).
    """
    return _adapters.fingerprint(model)


def model_modules(model: Any) -> set[str]:
    """The top-level packages a model is made of.

    Parameters
    ----------
    model : object
        A fitted model.

    Returns
    -------
    set of str
        The packages of the model's class, of every estimator and model inside it (a pipeline's steps, a
        statsmodels result's model and family) and of a statsmodels formula's engine (patsy or formulaic).
    """
    return _adapters.model_modules(model)


def class_name(model: Any) -> str:
    """The name of the model's class (``"Pipeline"``), as messages about a model name it.

    Parameters
    ----------
    model : object

    Returns
    -------
    str
    """
    return _adapters.class_name(model)


def formula_categoricals(model: Any) -> dict[str, str]:
    """The columns a statsmodels formula wraps in ``C()``, with their coding.

    Such a column is categorical in the model whatever its dtype (``C(idp)`` of a 0/1 integer column).

    Parameters
    ----------
    model : object
        A fitted model.

    Returns
    -------
    dict
        ``{column: encoding}``, e.g. ``{"idp": "treatment coding (C() in the model formula)"}``; empty for a
        model without a formula.
    """
    return _adapters.formula_categoricals(model)


def glm_dispersion(model: Any) -> dict[str, Any] | None:
    """The Pearson dispersion of a model whose family fixes the dispersion at 1.

    Parameters
    ----------
    model : object
        A fitted model; a statsmodels Poisson or binomial GLM, or a discrete Poisson, Logit or Probit result,
        has one.

    Returns
    -------
    dict or None
        ``family``, ``pearson_chi2``, ``df_resid``, ``dispersion`` (Pearson chi2 / residual df) and
        ``cov_type``; None for any other model.
    """
    return _adapters.glm_dispersion(model)


def dispersion_scaled_copy(model: Any, dispersion: float) -> Any:
    """A copy of a statsmodels results object whose ``cov_params()`` is ``dispersion`` times the model's.

    The quasi-likelihood covariance of a Poisson or binomial model with Pearson dispersion phi (what a GLM's
    ``fit(scale='X2')`` states for the same parameters). Parameters and predictions are unchanged and the
    caller's object is not modified; a copy made here is returned as it is (never scaled twice).

    Parameters
    ----------
    model : statsmodels results
    dispersion : float
        The factor, e.g. ``glm_dispersion(model)["dispersion"]``.

    Returns
    -------
    statsmodels results
    """
    return _adapters.dispersion_scaled_copy(model, dispersion)


def scaled_dispersion(model: Any) -> float | None:
    """The dispersion a :func:`dispersion_scaled_copy` was scaled by.

    Parameters
    ----------
    model : object

    Returns
    -------
    float or None
        None for a model :func:`dispersion_scaled_copy` did not make.
    """
    return _adapters.scaled_dispersion(model)


def refit_support(model: Any) -> Support:
    """Whether the model can be refitted on resamples, as ``inference="bootstrap"`` refits it.

    Parameters
    ----------
    model : object
        A fitted model.

    Returns
    -------
    Support
        ``(ok, reason)``; ``bool(support)`` is ``ok`` and ``reason`` says why not (e.g. a plain callable).
    """
    return _adapters.adapt(model, None).refit_support()


def feature_names(model: Any) -> list[str] | None:
    """The input columns the model reads, as the adapter that accepts it names them.

    Parameters
    ----------
    model : object
        A fitted model.

    Returns
    -------
    list of str or None
        The column names in the model's order; None for a model that does not name its inputs (a plain
        callable).

    Raises
    ------
    Exception
        Whatever the adapters raise for a model none of them reads.
    """
    return _adapters.adapt(model).feature_names


def auxiliary_inputs(model: Any, columns: list[Any]) -> dict[str, str]:
    """The columns among ``columns`` that every prediction of ``model`` reads beside its features, with their
    role: a statsmodels GLM's ``"exposure"`` or ``"offset"``, else ``"auxiliary input"``.

    Each row's value of such a column enters its prediction as observed; it is no feature to step.

    Parameters
    ----------
    model : object
        A fitted model fme reads.
    columns : list
        The data's column labels.

    Returns
    -------
    dict
        Column label (as text) -> role, in the order the model reads them; empty for a model whose adapter
        names no such column, or that no adapter reads.
    """
    try:
        ad = _adapters.adapt(model, None)
        need, feats = ad.columns_for(list(columns)), ad.feature_names
    except Exception:  # noqa: BLE001 - a model the adapters do not read: no column is singled out
        return {}
    if need is None or feats is None:
        return {}
    roles: dict[str, str] = {}
    sources = getattr(ad, "offset_sources", None)  # only adapters of models with an offset have one
    if callable(sources):
        try:
            roles = {str(col): kind for kind, (col, _) in sources(list(columns)).items()}
        except Exception:  # noqa: BLE001 - the offset cannot be matched: the effects say so loudly
            roles = {}
    known = set(map(str, feats))
    return {str(c): roles.get(str(c), "auxiliary input") for c in need if str(c) not in known}
