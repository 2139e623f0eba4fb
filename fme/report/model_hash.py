"""What identifies a fitted model, hashed the same way for identical fits (issue 22 item 3).

Two identical statsmodels fits pickle to different bytes, so a hash of the pickle changed every build and
the build cache rebuilt unchanged inputs. :func:`model_fingerprint` serialises what identifies the fitted
model instead:

* a statsmodels result: its class and the model's class, the family and link (GLMs), the formula and the
  design (endogenous and exogenous names, the design's sha256), the parameters, their covariance and the
  covariance type, and the weights, offset and exposure when set;
* a LightGBM booster or scikit-learn wrapper: the booster's model text (``model_to_string``) and the
  wrapper's parameters; an XGBoost booster: its raw JSON model;
* a scikit-learn estimator (or any object with ``get_params``): its class, its parameters and every fitted
  attribute (private ones too: a HistGradientBoosting model keeps its trees in ``_predictors``), nested
  estimators and scikit-learn's fitted parts serialised the same way;
* arrays, frames, lists and dicts: dtype, shape and values (frames: columns, dtypes, index and values);
* anything else: its pickle (protocol 4), as before.
"""

from __future__ import annotations

import hashlib
import pickle
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["model_fingerprint", "model_sha256"]


def _h(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _array(a: np.ndarray) -> str:
    a = np.asarray(a)
    if a.dtype.kind == "O":
        return f"object{a.shape}[" + ",".join(_canon(x) for x in a.ravel()) + "]"
    dtype = a.dtype.str if a.dtype.fields is None else repr(a.dtype.descr)
    return f"{dtype}{a.shape}:{_h(np.ascontiguousarray(a).tobytes())}"


def _frame(f: pd.DataFrame | pd.Series) -> str:
    values = pd.util.hash_pandas_object(f, index=True).to_numpy()
    cols = list(f.columns) if isinstance(f, pd.DataFrame) else [f.name]
    dtypes = [str(t) for t in (f.dtypes if isinstance(f, pd.DataFrame) else [f.dtype])]
    return f"{type(f).__name__}({cols!r},{dtypes!r}):{_h(values.tobytes())}"


def _class(obj: Any) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


def _statsmodels(res: Any) -> str:
    model = res.model
    parts = [_class(res), _class(model)]
    family = getattr(model, "family", None)
    if family is not None:
        parts += [_class(family), _class(getattr(family, "link", None))]
    parts += [repr(getattr(model, "formula", None)), repr(list(getattr(model, "exog_names", None) or [])),
              repr(getattr(model, "endog_names", None)), "endog " + _array(np.asarray(model.endog)),
              "exog " + (_array(np.asarray(model.exog)) if getattr(model, "exog", None) is not None else "None"),
              "params " + _array(np.asarray(res.params, dtype=float)),
              "cov_type " + repr(getattr(res, "cov_type", None))]
    try:
        parts.append("cov " + _array(np.asarray(res.cov_params(), dtype=float)))
    except Exception:  # noqa: BLE001 - a result without a covariance (e.g. regularised fits)
        parts.append("cov None")
    for name in ("weights", "var_weights", "freq_weights", "offset", "exposure"):
        value = getattr(model, name, None)
        if value is not None and np.ndim(value) > 0:
            parts.append(f"{name} " + _array(np.asarray(value, dtype=float)))
    return "statsmodels(" + "|".join(parts) + ")"


def _canon(obj: Any, depth: int = 0) -> str:
    """A canonical text of ``obj`` (see the module docstring); equal for identical fits."""
    if depth > 20:
        return "deep:" + _h(pickle.dumps(obj, protocol=4))
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        return repr(obj)
    if isinstance(obj, (np.generic,)):
        return f"{obj.dtype.str}:{obj.item()!r}"
    if isinstance(obj, np.ndarray):
        return _array(obj)
    if isinstance(obj, (pd.DataFrame, pd.Series)):
        return _frame(obj)
    if isinstance(obj, pd.Index):
        return "Index" + _array(obj.to_numpy())
    if isinstance(obj, dict):
        return "{" + ",".join(f"{_canon(k, depth + 1)}:{_canon(v, depth + 1)}"
                              for k, v in sorted(obj.items(), key=lambda kv: repr(kv[0]))) + "}"
    if isinstance(obj, (list, tuple)):
        return type(obj).__name__ + "[" + ",".join(_canon(x, depth + 1) for x in obj) + "]"
    if isinstance(obj, (set, frozenset)):
        return "set[" + ",".join(sorted(_canon(x, depth + 1) for x in obj)) + "]"
    module = type(obj).__module__ or ""
    if module.startswith("statsmodels") and hasattr(obj, "model") and hasattr(obj, "params"):
        return _statsmodels(obj)
    if callable(getattr(obj, "model_to_string", None)):  # lightgbm.Booster
        return f"{_class(obj)}({_h(obj.model_to_string().encode('utf-8'))})"
    if module.startswith("xgboost") and callable(getattr(obj, "save_raw", None)):  # xgboost.Booster
        return f"{_class(obj)}({_h(bytes(obj.save_raw('json')))})"
    if callable(getattr(obj, "get_params", None)):  # scikit-learn API (lightgbm/xgboost wrappers too)
        try:
            params = obj.get_params(deep=False)
        except Exception:  # noqa: BLE001
            params = {}
        fitted = {k: v for k, v in vars(obj).items() if k not in params and not k.startswith("__")}
        booster = None
        if module.startswith("lightgbm") and getattr(obj, "_Booster", None) is not None:
            booster = _canon(obj._Booster, depth + 1)
        elif module.startswith("xgboost") and callable(getattr(obj, "get_booster", None)):
            try:
                booster = _canon(obj.get_booster(), depth + 1)
            except Exception:  # noqa: BLE001 - not fitted
                booster = None
        return (f"{_class(obj)}(params={_canon(params, depth + 1)},fitted={_canon(fitted, depth + 1)},"
                f"booster={booster})")
    if module.startswith("sklearn") and hasattr(obj, "__dict__"):  # fitted parts (trees, binners): their state
        return f"{_class(obj)}({_canon(dict(vars(obj)), depth + 1)})"
    return f"pickle:{_h(pickle.dumps(obj, protocol=4))}"


def model_fingerprint(obj: Any) -> bytes:
    """The canonical serialisation of a fitted model (and what travels with it, e.g. training data)."""
    return _canon(obj).encode("utf-8")


def model_sha256(obj: Any) -> str:
    return _h(model_fingerprint(obj))
