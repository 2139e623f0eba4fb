"""What identifies a fitted model: its canonical text (the fingerprint) and the packages it is made of.

Two identical fits (same data, same settings) must hash alike, so a report's build cache and audit trail
hash what identifies the fit, never its pickle (two identical statsmodels fits pickle to different bytes).
:func:`canonical` writes that text for any object; an object that is not a plain value (a model, an
estimator inside a pipeline, a fitted part) is described by the adapter that accepts it
(:meth:`fme._adapters.base.ModelAdapter.canonical_text`, passed in as ``describe``), so the special bytes
of a backend (a statsmodels design, a LightGBM model text, an XGBoost raw model) are known in its own
adapter module only:

* arrays, frames, lists, dicts and sets: dtype, shape and values (frames: columns, dtypes, index and values);
* a scikit-learn estimator (or any object with ``get_params``): its class, its parameters and every fitted
  attribute (private ones too: a HistGradientBoosting model keeps its trees in ``_predictors``), nested
  estimators described the same way (:func:`estimator_text`);
* anything else: its pickle (protocol 4).

:func:`model_modules` lists the top-level packages of a model's class and of the estimators and models
inside it, :func:`formula_categoricals` the ``C()`` columns of a statsmodels formula and :func:`glm_dispersion`
a Poisson or binomial GLM's Pearson dispersion (:func:`dispersion_scaled_copy`: a copy whose covariance is
scaled by it): they read the model's classes and attributes, which only this package does.

This module imports nothing else of :mod:`fme._adapters`.
"""

from __future__ import annotations

import copy
import hashlib
import pickle
import re
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "canonical",
    "array_text",
    "class_name",
    "class_path",
    "sha256_hex",
    "estimator_text",
    "pickle_text",
    "model_modules",
    "glm_dispersion",
    "dispersion_scaled_copy",
    "scaled_dispersion",
    "formula_categoricals",
]

#: Nesting depth below which an object is described by its pickle instead (a guard against cycles).
MAX_DEPTH = 20

Walk = Callable[[Any], str]


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def class_name(obj: Any) -> str:
    """The name of ``obj``'s class (``Pipeline``), as messages about a model name it."""
    return type(obj).__name__


def class_path(obj: Any) -> str:
    """``module.QualifiedName`` of ``obj``'s class."""
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


def array_text(a: Any) -> str:
    """dtype, shape and the sha256 of the values of an array (object arrays: each element's text)."""
    a = np.asarray(a)
    if a.dtype.kind == "O":
        return f"object{a.shape}[" + ",".join(canonical(x) for x in a.ravel()) + "]"
    dtype = a.dtype.str if a.dtype.fields is None else repr(a.dtype.descr)
    return f"{dtype}{a.shape}:{sha256_hex(np.ascontiguousarray(a).tobytes())}"


def _frame_text(f: pd.DataFrame | pd.Series) -> str:
    values = pd.util.hash_pandas_object(f, index=True).to_numpy()
    cols = list(f.columns) if isinstance(f, pd.DataFrame) else [f.name]
    dtypes = [str(t) for t in (f.dtypes if isinstance(f, pd.DataFrame) else [f.dtype])]
    return f"{type(f).__name__}({cols!r},{dtypes!r}):{sha256_hex(values.tobytes())}"


def pickle_text(obj: Any) -> str:
    """The text of an object nothing else describes: the sha256 of its pickle."""
    return f"pickle:{sha256_hex(pickle.dumps(obj, protocol=4))}"


def estimator_text(obj: Any, walk: Walk, booster: str | None = None) -> str:
    """An object with ``get_params``: its class, parameters, fitted attributes (and a booster's text)."""
    try:
        params = obj.get_params(deep=False)
    except Exception:  # noqa: BLE001 - a broken get_params: the fitted state still identifies it
        params = {}
    fitted = {k: v for k, v in vars(obj).items() if k not in params and not k.startswith("__")}
    return f"{class_path(obj)}(params={walk(params)},fitted={walk(fitted)},booster={booster})"


def _plain(obj: Any, walk: Walk) -> str | None:
    """The text of a plain value (None for anything else)."""
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        return repr(obj)
    if isinstance(obj, np.generic):
        return f"{obj.dtype.str}:{obj.item()!r}"
    if isinstance(obj, np.ndarray):
        return array_text(obj)
    if isinstance(obj, (pd.DataFrame, pd.Series)):
        return _frame_text(obj)
    if isinstance(obj, pd.Index):
        return "Index" + array_text(obj.to_numpy())
    if isinstance(obj, dict):
        return "{" + ",".join(f"{walk(k)}:{walk(v)}" for k, v in sorted(obj.items(), key=lambda kv: repr(kv[0]))) + "}"
    if isinstance(obj, (list, tuple)):
        return type(obj).__name__ + "[" + ",".join(walk(x) for x in obj) + "]"
    if isinstance(obj, (set, frozenset)):
        return "set[" + ",".join(sorted(walk(x) for x in obj)) + "]"
    return None


def canonical(obj: Any, describe: Callable[[Any, Walk], str] | None = None, depth: int = 0) -> str:
    """The canonical text of ``obj``: equal for identical fits (see the module docstring).

    Parameters
    ----------
    obj : object
        A fitted model, or what travels with it (e.g. ``(model, training data)``).
    describe : callable, optional
        ``describe(x, walk)``: the text of an object that is not a plain value (the adapters' registry,
        :func:`fme._adapters.base.fingerprint`); ``walk(part)`` gives a part's text one level deeper.
        Without it, such an object is an estimator (:func:`estimator_text`) or its pickle.
    depth : int
        Nesting depth of ``obj`` (deeper than :data:`MAX_DEPTH`: its pickle).
    """
    if depth > MAX_DEPTH:
        return "deep:" + sha256_hex(pickle.dumps(obj, protocol=4))

    def walk(part: Any) -> str:
        return canonical(part, describe, depth + 1)

    text = _plain(obj, walk)
    if text is not None:
        return text
    if describe is not None:
        return describe(obj, walk)
    return estimator_text(obj, walk) if callable(getattr(obj, "get_params", None)) else pickle_text(obj)


# ------------------------------------------------------------------ the packages a model is made of
def _top(module: str | None) -> str | None:
    return module.split(".")[0] if module else None


def _estimator_modules(obj: Any, depth: int = 0) -> set[str]:
    out = set()
    if obj is None or depth > 6:
        return out
    top = _top(type(obj).__module__)
    if top and top not in {"builtins"}:
        out.add(top)
    params = {}
    if callable(getattr(obj, "get_params", None)):
        try:
            params = obj.get_params(deep=False)
        except Exception:  # noqa: BLE001
            params = {}
    inner = getattr(obj, "model", None)
    for value in list(params.values()) + [inner, getattr(inner, "family", None)]:
        if isinstance(value, (list, tuple)):  # Pipeline steps, ColumnTransformer transformers
            for item in value:
                for part in item if isinstance(item, tuple) else (item,):
                    if hasattr(part, "__dict__") and not isinstance(part, (str, type)):
                        out |= _estimator_modules(part, depth + 1)
        elif value is not None and hasattr(value, "__dict__") and not isinstance(value, type):
            out |= _estimator_modules(value, depth + 1)
    return out


def _formula_package(model: Any) -> set[str]:
    """The formula package behind a statsmodels formula result (patsy or formulaic)."""
    inner = getattr(model, "model", None)
    if getattr(inner, "formula", None) is None:
        return set()
    info = getattr(getattr(inner, "data", None), "design_info", None)
    top = _top(type(info).__module__) if info is not None else None
    return {top} if top in ("patsy", "formulaic") else {"patsy"} if "patsy" in sys.modules else set()


def model_modules(model: Any) -> set[str]:
    """Top-level modules of ``model``'s class, of every estimator and model inside it (a pipeline's steps, a
    statsmodels result's model and family) and of a statsmodels formula's engine (patsy or formulaic)."""
    return _estimator_modules(model) | _formula_package(model)


# ------------------------------------------------------------------ a formula's categorical columns
def formula_categoricals(model: Any) -> dict[str, str]:
    """``{column: encoding}`` of the columns a statsmodels formula wraps in ``C()``: they are categorical in the
    model whatever their dtype (``C(idp)`` of a 0/1 integer column); empty for a model without a formula."""

    formula = getattr(getattr(model, "model", None), "formula", None)
    if not isinstance(formula, str):
        return {}
    out = {}
    for m in re.finditer(r"\bC\(\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(?:,\s*([^)]*))?\)", formula):
        name, extra = m.group(1), (m.group(2) or "").strip()
        coding = "treatment coding" if not extra or "Treatment" in extra else f"coding {extra}"
        out[name] = f"{coding} (C() in the model formula)"
    return out


# ------------------------------------------------------------------ a GLM's dispersion
#: Families (or discrete models) whose variance fixes the dispersion at 1.
_UNIT_DISPERSION = ("Poisson", "Binomial", "Logit", "Probit")


def glm_dispersion(model: Any) -> dict | None:
    """Pearson chi2 / residual df of a statsmodels Poisson or binomial GLM (or a discrete Poisson/Logit/Probit
    result), whose family fixes the dispersion at 1; None for other models.

    Returns
    -------
    dict or None
        ``family``, ``pearson_chi2``, ``df_resid``, ``dispersion`` (their ratio) and ``cov_type``.
    """
    inner = getattr(model, "model", None)
    family = getattr(inner, "family", None)
    name = type(family).__name__ if family is not None else type(inner).__name__
    if name not in _UNIT_DISPERSION:
        return None
    try:
        chi2 = float(getattr(model, "pearson_chi2", None) or np.sum(np.asarray(model.resid_pearson) ** 2))
        df = float(model.df_resid)
    except Exception:  # noqa: BLE001 - a result without Pearson residuals: nothing to report
        return None
    if not df > 0:
        return None
    return {
        "family": name,
        "pearson_chi2": chi2,
        "df_resid": df,
        "dispersion": chi2 / df,
        "cov_type": str(getattr(model, "cov_type", "nonrobust")),
    }


#: Attribute of a copy made by :func:`dispersion_scaled_copy`: the dispersion it was scaled by.
_SCALED_BY = "fme_dispersion_scale"


def dispersion_scaled_copy(model: Any, dispersion: float) -> Any:
    """A copy of a statsmodels results object whose ``cov_params()`` is ``dispersion`` times the model's.

    The quasi-likelihood covariance of a Poisson or binomial model with Pearson dispersion phi (what GLM's
    ``fit(scale='X2')`` states for the same parameters); parameters and predictions are unchanged, the
    caller's object is not modified. A copy made here is returned as it is (never scaled twice):
    :func:`scaled_dispersion` reads what it was scaled by.
    """
    if scaled_dispersion(model) is not None:
        return model
    cov = np.asarray(model.cov_params(), dtype=float) * float(dispersion)
    wrapped = hasattr(model, "_results")
    inner = copy.copy(model._results if wrapped else model)
    inner._cache = {}  # standard errors cached from the unit-dispersion covariance must not be read again
    inner.cov_params_default = cov  # what cov_params() returns from now on
    setattr(inner, _SCALED_BY, float(dispersion))
    return type(model)(inner) if wrapped else inner


def scaled_dispersion(model: Any) -> float | None:
    """The dispersion a :func:`dispersion_scaled_copy` was scaled by (None for any other model)."""
    return getattr(model, _SCALED_BY, None)
