"""Bootstrap refits for the model uncertainty of fMEs (see :mod:`fme.inference`).

Each resample b draws n_train training rows with replacement (its own seed,
spawned from ``random_state`` by :class:`numpy.random.SeedSequence`, so the
numbers do not depend on ``n_jobs``), refits the model and predicts the
evaluation points and the stepped points in one call; only the n fMEs are
kept (never the refitted model), written into an n x B matrix. Refits that
raise are counted, their messages kept, and reported by a warning; fewer
than two successful refits is an error.

``bootstrap`` specification (a dict):

* scikit-learn estimators and pipelines: ``{"X": X_train, "y": y_train}``;
  each refit is ``sklearn.base.clone(model).fit(X[idx], y[idx])``.
* statsmodels formula results: ``{"data": train_frame}``; each refit uses the
  same model class, formula and family.
* common keys: ``n_resamples`` (200), ``random_state`` (None: fresh entropy,
  recorded in the result), ``n_jobs`` (None: sequential; joblib semantics),
  ``ci`` (``"percentile"`` or ``"normal"``), ``progress`` (None: a tqdm bar
  when stderr is a terminal, unless ``FME_PROGRESS=0``).
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .exceptions import DataError, ModelError, ParameterError
from .inference import BOOTSTRAP_CIS, RowInference
from .predictors import _is_statsmodels_results, make_predictor

__all__ = ["check_bootstrap", "bootstrap_rows"]

_KEYS = {"X", "y", "data", "n_resamples", "random_state", "n_jobs", "ci", "progress"}


def check_bootstrap(spec: Any, model: Any) -> dict[str, Any]:
    """Validate a ``bootstrap`` specification against the model; returns a normalised copy."""
    if not isinstance(spec, Mapping):
        raise ParameterError(
            "inference='bootstrap' needs bootstrap={'X': X_train, 'y': y_train, ...} (scikit-learn) or "
            f"{{'data': train_frame, ...}} (statsmodels formula results); got {type(spec).__name__}."
        )
    unknown = set(spec) - _KEYS
    if unknown:
        raise ParameterError(f"unknown bootstrap key(s) {sorted(unknown)}; allowed: {sorted(_KEYS)}.")
    out = {"n_resamples": 200, "random_state": None, "n_jobs": None, "ci": "percentile", "progress": None}
    out.update(spec)
    b = out["n_resamples"]
    if isinstance(b, bool) or not isinstance(b, numbers.Integral) or b < 2:
        raise ParameterError(f"bootstrap n_resamples must be an integer >= 2, got {b!r}.")
    if out["ci"] not in BOOTSTRAP_CIS:
        raise ParameterError(f"bootstrap ci must be one of {BOOTSTRAP_CIS}, got {out['ci']!r}.")
    if _is_statsmodels_results(model):
        if not isinstance(out.get("data"), pd.DataFrame):
            raise ParameterError("bootstrap of a statsmodels result needs {'data': <training DataFrame>}.")
        if getattr(model.model, "formula", None) is None:
            raise ModelError(
                f"bootstrap refits of statsmodels results need the formula API (smf.{type(model.model).__name__.lower()}"
                "(formula, data)); this result was fitted from arrays."
            )
        for attr in ("offset", "exposure"):
            if getattr(model.model, attr, None) is not None:
                raise ModelError(f"bootstrap refits of a {type(model.model).__name__} with {attr} are not supported; "
                                 "use inference='delta'.")
        for attr in ("weights", "freq_weights", "var_weights"):
            w = getattr(model.model, attr, None)
            if w is not None and np.ndim(w) > 0 and not np.all(np.asarray(w) == 1):
                raise ModelError(f"bootstrap refits of a {type(model.model).__name__} with {attr} are not "
                                 "supported; use inference='delta'.")
        out["kind"] = "statsmodels"
    elif callable(getattr(model, "fit", None)) and callable(getattr(model, "get_params", None)):
        if "X" not in out or "y" not in out:
            raise ParameterError("bootstrap of a scikit-learn model needs {'X': X_train, 'y': y_train}.")
        if len(out["X"]) != len(out["y"]) or len(out["X"]) < 2:
            raise DataError(f"bootstrap X has {len(out['X'])} rows and y {len(out['y'])}; they must match (>= 2).")
        out["kind"] = "sklearn"
    else:
        raise ModelError(
            f"cannot refit a {type(model).__name__}: bootstrap needs a scikit-learn estimator/pipeline "
            "(clone + fit) or a statsmodels formula result. Use inference='delta' or 'sample'."
        )
    if out["random_state"] is None:
        out["random_state"] = int(np.random.SeedSequence().entropy % (2 ** 63))
    return out


def _take(a: Any, idx: np.ndarray) -> Any:
    return a.iloc[idx] if isinstance(a, (pd.DataFrame, pd.Series)) else np.asarray(a)[idx]


def _refit(kind: str, template: Any, train: Any, idx: np.ndarray) -> Any:
    if kind == "sklearn":
        from sklearn.base import clone

        X, y = train
        return clone(template).fit(_take(X, idx), _take(y, idx))
    from statsmodels.discrete.discrete_model import DiscreteModel
    from statsmodels.genmod.generalized_linear_model import GLM

    model = template.model
    kw = {"family": model.family} if isinstance(model, GLM) else {}
    fitted = type(model).from_formula(model.formula, data=train.iloc[idx].reset_index(drop=True), **kw)
    return fitted.fit(disp=0) if isinstance(fitted, DiscreteModel) else fitted.fit()


def _one_resample(kind: str, template: Any, train: Any, n_train: int, seed: np.random.SeedSequence,
                  frame: pd.DataFrame, n: int, target_class: Any) -> tuple[np.ndarray | None, str | None]:
    """fMEs of one refit: predictions of [X0; X1] differenced; (None, message) if the refit fails."""
    idx = np.random.default_rng(seed).integers(0, n_train, n_train)
    try:
        fitted = _refit(kind, template, train, idx)
        pred = make_predictor(fitted, target_class)(frame)
    except Exception as exc:  # a failed refit is counted and reported, never silently dropped
        return None, f"{type(exc).__name__}: {exc}"
    return pred[n:] - pred[:n], None


def bootstrap_rows(model: Any, pairs: Sequence[tuple[pd.DataFrame, pd.DataFrame]], values: Sequence[np.ndarray],
                   spec: dict[str, Any], target_class: Any = None) -> list[RowInference]:
    """Bootstrap ingredients for several sets of fMEs, all from the same refits.

    Parameters
    ----------
    model : fitted scikit-learn estimator/pipeline or statsmodels formula result
    pairs : sequence of (X0, X1)
        Evaluation points and stepped points per set (one set per AME row).
    values : sequence of ndarray
        The fitted model's fMEs per set.
    spec : dict
        From :func:`check_bootstrap`.
    target_class : label, optional
        For classifiers, as in :func:`fme.fme`.

    Returns
    -------
    list of RowInference
        ``method='bootstrap'``, one per set, with the n_i x B_ok draws.
    """
    from joblib import Parallel, delayed

    from ._progress import progress_bar

    if spec["kind"] == "sklearn":
        from sklearn.base import clone

        template, train, n_train = clone(model), (spec["X"], spec["y"]), len(spec["X"])
    else:
        template, train, n_train = model, spec["data"], len(spec["data"])
    sizes = [len(x0) for x0, _ in pairs]
    n = int(sum(sizes))
    frame = pd.concat([x0 for x0, _ in pairs] + [x1 for _, x1 in pairs], ignore_index=True)
    B = int(spec["n_resamples"])
    seeds = np.random.SeedSequence(spec["random_state"]).spawn(B)
    draws = np.empty((n, B))
    ok = np.zeros(B, dtype=bool)
    errors: list[str] = []
    jobs = (delayed(_one_resample)(spec["kind"], template, train, n_train, s, frame, n, target_class) for s in seeds)
    results = Parallel(n_jobs=spec["n_jobs"], return_as="generator")(jobs)
    # a bar on a terminal only, off with progress=False or FME_PROGRESS=0 (fme._progress)
    bar = progress_bar(results, total=B, desc="bootstrap refits", progress=spec["progress"])
    for b, (fmes, err) in enumerate(bar):
        if err is None:
            draws[:, b] = fmes
            ok[b] = True
        elif err not in errors and len(errors) < 5:
            errors.append(err)
    n_failed = int(B - ok.sum())
    if ok.sum() < 2:
        raise ModelError(f"{n_failed} of {B} bootstrap refits failed (first: {errors[0] if errors else '?'}); "
                         "check the training data passed in bootstrap=.")
    if n_failed:
        warnings.warn(f"{n_failed} of {B} bootstrap refits failed and are left out (first error: {errors[0]}); "
                      f"the intervals use the {B - n_failed} successful refits.", RuntimeWarning, stacklevel=3)
    draws = draws[:, ok]
    info = {"n_resamples": B, "random_state": spec["random_state"], "n_ok": int(ok.sum())}
    out, start = [], 0
    for size, v in zip(sizes, values):
        out.append(RowInference("bootstrap", np.asarray(v, dtype=float), draws=draws[start:start + size],
                                ci=spec["ci"], n_failed=n_failed, errors=tuple(errors), info=info))
        start += size
    return out
