"""A second path to the report's headline numbers, written apart from fme's kernel: the report audits itself.

For every effect variant, :func:`second_path` recomputes

* the AME (paper §5.4, Eq. 9): the mean over the evaluated rows of the model's own ``predict`` (or
  ``predict_proba``, the explained class's column) at x + h minus at x, called on the model object as loaded,
  without fme's kernel or its predictor wrapper. A numeric step adds h (each row's own step where the step was
  shrunk); a categorical step switches every evaluated row to the level;
* the delta-method standard error of the AME (paper §6), where the report shows one: the gradient of that same
  AME in the model's parameters by central differences written here (not :mod:`fme.inference`), through the
  model's own ``model.predict(params, exog)`` on its own design, sandwiched with the model's own
  ``cov_params()`` (the report's copy of the model, so a covariance scaled by the Pearson dispersion is the one
  the report shows).

Each comparison is recorded with the absolute difference of the AMEs and the relative difference of the
standard errors; ``results.json`` turns them into quantities and "agrees to" claims verified against
:data:`AME_TOLERANCE` / :data:`SE_TOLERANCE` (:mod:`fme.report.analysis.typed`). Where there is
no second path (no covariance, a bootstrap or fixed-model interval, Dask data held out of core) the record says
why, and the report words it as "not applicable: <reason>".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "AME_TOLERANCE",
    "SE_TOLERANCE",
    "second_path",
    "audit_effect",
    "not_audited",
    "model_predictions",
    "offset_roles",
    "stepped",
]

#: The second path's AME agrees when it differs by at most this, in the unit the report shows it in.
AME_TOLERANCE = 1e-10
#: The second path's delta standard error agrees when it differs by at most this share of the report's.
SE_TOLERANCE = 1e-6


def _column(model: Any, target_class: Any) -> int | None:
    """The explained class's column of ``predict_proba`` (None: the model's ``predict`` is explained)."""
    if target_class is None or not hasattr(model, "predict_proba"):
        return None
    classes = [str(c) for c in getattr(model, "classes_", [])]
    if str(target_class) not in classes:
        raise ValueError(f"the explained class {target_class!r} is not one of the model's classes_ {classes}")
    return classes.index(str(target_class))


def _offsets(frame: pd.DataFrame, roles: dict[str, str]) -> dict[str, np.ndarray]:
    """The keywords statsmodels' ``predict`` takes for each row's exposure and offset (as observed; a column
    whose log is the model's offset, role 'log offset', enters as its log)."""
    out = {}
    for col, role in roles.items():
        values = frame[col].to_numpy(dtype=float)
        if role in ("exposure", "offset"):
            out[role] = values
        elif role == "log offset":
            out["offset"] = np.log(values)
    return out


def offset_roles(model: Any, data: pd.DataFrame, roles: dict[str, str]) -> dict[str, str]:
    """``roles`` with an offset column marked 'log offset' when the model was fitted with the log of that
    column as its offset: on the rows it was fitted on (the data, when they have as many rows) the log of the
    column, not the column, equals the offset the model stores."""
    stored = getattr(getattr(model, "model", None), "offset", None)
    out = dict(roles)
    for col, role in roles.items():
        if role != "offset" or stored is None or np.shape(stored) != (len(data),):
            continue
        values = pd.to_numeric(data[col], errors="coerce").to_numpy(dtype=float)
        stored_f = np.asarray(stored, dtype=float)
        if (values > 0).all() and np.allclose(np.log(values), stored_f) and not np.allclose(values, stored_f):
            out[col] = "log offset"
    return out


def model_predictions(model: Any, frame: pd.DataFrame, target_class: Any, roles: dict[str, str]) -> np.ndarray:
    """The model's own prediction of each row of ``frame``: ``predict_proba``'s explained-class column for a
    classifier, else ``predict`` (a statsmodels result with each row's exposure and offset as observed)."""
    j = _column(model, target_class)
    X = _inputs(model, frame)
    if j is not None:
        return np.asarray(model.predict_proba(X), dtype=float)[:, j]
    keywords = _offsets(frame, roles)
    if not hasattr(model, "predict") and callable(model):  # a prediction function: its own API is a call
        return np.asarray(model(X), dtype=float).reshape(len(frame))
    out = model.predict(X, **keywords) if keywords else model.predict(X)
    return np.asarray(out, dtype=float).reshape(len(frame))


def _inputs(model: Any, frame: pd.DataFrame) -> Any:
    """What the model's own predict reads: the columns it records (``feature_names_in_``), in its order; the
    values of every column as an array for an estimator fitted on an array (``n_features_in_`` only); else
    the frame (a formula names its columns itself)."""
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        return frame[[str(n) for n in names]]
    n = getattr(model, "n_features_in_", None)
    if isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n == frame.shape[1]:
        return frame.to_numpy()
    return frame


def stepped(frame: pd.DataFrame, steps: list[dict[str, Any]], per_row: dict[str, np.ndarray]) -> pd.DataFrame:
    """A copy of ``frame`` at x + h: each numeric step added (``per_row``: a row's own, shrunk step), each
    categorical step switching every row to its level (a categorical column keeps its categories)."""
    out = frame.copy()
    for s in steps:
        col = s["feature"]
        if s["numeric"]:
            h = per_row.get(col, float(s["value"]))
            out[col] = out[col].to_numpy(dtype=float) + h
        elif isinstance(out[col].dtype, pd.CategoricalDtype):
            out[col] = pd.Categorical([s["value"]] * len(out), categories=out[col].cat.categories)
        else:
            out[col] = pd.Series([s["value"]] * len(out), index=out.index, dtype=out[col].dtype)
    return out


def _design(model: Any, frame: pd.DataFrame) -> np.ndarray | None:
    """The model's own design matrix of ``frame``: its formula's (statsmodels' own transformation, the one its
    ``predict`` applies), else its exog columns by name ('const' a column of ones); None if neither is known."""
    inner = getattr(model, "model", None)
    if getattr(inner, "formula", None) is not None and callable(getattr(model, "_transform_predict_exog", None)):
        exog, _ = model._transform_predict_exog(frame, transform=True)
        return np.asarray(exog, dtype=float)
    names = [str(n) for n in (getattr(inner, "exog_names", None) or [])]
    if not names or any(n not in frame.columns and n != "const" for n in names):
        return None
    cols = [np.ones(len(frame)) if n not in frame.columns else frame[n].to_numpy(dtype=float) for n in names]
    return np.column_stack(cols)


def _central_gradient(fun: Any, params: np.ndarray) -> np.ndarray:
    """d fun / d params by central differences, one parameter at a time (step 1e-5 max(1, |b|): the truncation
    error, of order step^2, and the rounding error, of order 1e-16 / step, both stay near 1e-10)."""
    grad = np.empty(params.size)
    for j in range(params.size):  # one pass per parameter, each a vectorised prediction of every row
        e = 1e-5 * max(1.0, abs(float(params[j])))
        up, down = params.copy(), params.copy()
        up[j] += e
        down[j] -= e
        grad[j] = (fun(up) - fun(down)) / (2 * e)
    return grad


def _delta_se(model: Any, x0: pd.DataFrame, x1: pd.DataFrame, roles: dict[str, str]) -> tuple[float | None, str]:
    """(standard error, '') of the AME by the model's own covariance and a numerical gradient, or (None, why)."""
    if not callable(getattr(model, "cov_params", None)):
        return None, "the model has no covariance matrix (no cov_params())"
    params = np.asarray(model.params, dtype=float)
    if params.ndim != 1:
        return None, "a multinomial model's parameters form a matrix; the second path covers one-equation models"
    d0, d1 = _design(model, x0), _design(model, x1)
    if d0 is None or d1 is None:
        return None, "the model's design matrix is not known (no formula and no exog names)"
    keywords = _offsets(x0, roles)
    predict = model.model.predict

    def ame(p: np.ndarray) -> float:
        return float(np.mean(np.asarray(predict(p, d1, **keywords)) - np.asarray(predict(p, d0, **keywords))))

    direct = np.asarray(model.predict(x0, **keywords), dtype=float)
    if not np.allclose(np.asarray(predict(params, d0, **keywords), dtype=float), direct, rtol=1e-9, atol=1e-12):
        return None, "the model's prediction from its own design matrix differs from its predict(); not audited"
    g = _central_gradient(ame, params)
    cov = np.asarray(model.cov_params(), dtype=float)
    return float(math.sqrt(max(float(g @ cov @ g), 0.0))), ""


def not_audited(reason: str) -> dict[str, Any]:
    """The record of an effect without a second path (``reason`` says why)."""
    return {"ame": None, "ame_reason": reason, "se": None, "se_reason": reason}


def second_path(
    model: Any,
    data: pd.DataFrame,
    res: Any,
    summary: dict[str, Any],
    target_class: Any = None,
    roles: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The second path of one effect variant (see the module docstring).

    Parameters
    ----------
    model : object
        The fitted model the report explains (its dispersion-scaled copy where the report scales).
    data : DataFrame
        The evaluation data, as the report passed them to fme.
    res : fme.FMEResult
        The effect's result: which rows it evaluated (``positions``) and the resolved steps.
    summary : dict
        The effect's summary: its AME and primary interval (``intervals[0]``), read, not changed.
    target_class : label, optional
        The explained class of a classifier.
    roles : dict, optional
        Column -> role ('exposure', 'offset') of the columns every prediction reads beside the features.

    Returns
    -------
    dict
        ``n`` (evaluated rows), ``ame`` (second path), ``ame_report``, ``ame_difference`` (absolute, model
        scale), ``se``, ``se_report``, ``se_difference`` (relative); ``ame_reason``/``se_reason`` where a path
        does not apply. JSON-ready; whether the two paths agree is the claims'
        (:func:`fme.report.inputs.claims.agreement`, worded in :mod:`fme.report.analysis.typed`).
    """
    roles = roles or {}
    rows = data.iloc[np.asarray(res.positions, dtype=int)] if res.positions is not None else data.loc[res.results.index]
    steps = [{"feature": s.feature, "numeric": bool(s.is_numeric), "value": s.value} for s in res.steps]
    per_row = {
        s["feature"]: res.results[f"step_{s['feature']}"].to_numpy(dtype=float)
        for s in steps
        if f"step_{s['feature']}" in res.results.columns
    }
    x1 = stepped(rows, steps, per_row)
    out: dict[str, Any] = {"n": int(len(rows))}
    ame_report = summary.get("ame")
    if len(rows) == 0 or ame_report is None:
        return {**out, **not_audited("no evaluated rows")}
    ame = float(
        np.mean(model_predictions(model, x1, target_class, roles) - model_predictions(model, rows, target_class, roles))
    )
    out.update(ame=ame, ame_report=float(ame_report), ame_difference=abs(ame - float(ame_report)), ame_reason="")
    primary = (summary.get("intervals") or [{}])[0]
    kind = str(primary.get("inference") or "")
    se_report = primary.get("std_error")
    if not kind.startswith("delta") or se_report is None:
        shown = {"sample": "fixed-model", "bootstrap": "bootstrap"}.get(kind, kind or "no")
        why = f"the report's interval is a {shown} interval, not a delta-method one"
        if not callable(getattr(model, "cov_params", None)):
            why = f"the model has no covariance matrix (no cov_params()); the report's interval is a {shown} one"
        return {**out, "se": None, "se_reason": why}
    se, why = _delta_se(model, rows, x1, roles)
    if se is None:
        return {**out, "se": None, "se_reason": why}
    rel = abs(se - float(se_report)) / max(abs(float(se_report)), 1e-300)
    out.update(se=se, se_report=float(se_report), se_difference=rel, se_reason="")
    return out


def audit_effect(
    model: Any,
    data: pd.DataFrame,
    res: Any,
    summary: dict[str, Any],
    target_class: Any = None,
    roles: dict[str, str] | None = None,
) -> dict[str, Any]:
    """:func:`second_path`, or, when the model's own API cannot be called that way (a model whose ``predict``
    takes other inputs than the report's data), the record saying so: the audit never stops a build, and a
    path that did not run is never stated as an agreement."""
    try:
        return second_path(model, data, res, summary, target_class, roles)
    except Exception as exc:  # noqa: BLE001 - any failure of the model's own API is the record's reason
        why = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        return {"n": int(getattr(res, "n", 0) or 0), **not_audited(f"the model's own prediction failed ({why})")}
