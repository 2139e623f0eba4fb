"""Cross-fitting plumbing of the data-level AME (:mod:`fme.levels.dgp`): fold labels, a float design of any
frame, fresh seeded copies of the learners, class probabilities and the classification estimate of a density
ratio."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from .._utils.validation import is_categorical
from ..exceptions import ModelError, ParameterError
from ..steps import levels

__all__ = [
    "CLIP",
    "Design",
    "fold_labels",
    "default_outcome",
    "default_classifier",
    "fit_learner",
    "class_proba",
    "predict_mu",
    "by_fold",
    "ratio_weights",
]

#: Classifier probabilities are kept this far from 0 and 1, so that a weight is finite (at most 1e9); the
#: positivity verdict reports such weights, never hides them.
CLIP = 1e-9


def fold_labels(folds: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    """A fold number 0, ..., k - 1 per row: ``rng.permutation(n) % folds`` for a number of folds, else the given
    labels renumbered."""
    if isinstance(folds, (int, np.integer)) and not isinstance(folds, bool):
        if not 2 <= folds <= n // 2:
            raise ParameterError(f"folds must be between 2 and n / 2 = {n // 2}, got {folds}.")
        return rng.permutation(n) % int(folds)
    labels = np.asarray(folds)
    if labels.shape != (n,) or not np.issubdtype(labels.dtype, np.integer):
        raise ParameterError(f"folds must be an int or one integer fold label per row ({n}), got {folds!r:.80}.")
    _, codes = np.unique(labels, return_inverse=True)
    if codes.max() < 1:
        raise ParameterError("folds= labels name a single fold; cross-fitting needs at least two.")
    return codes


class Design:
    """Features as one float matrix for any learner: numeric columns as they are, categorical ones one-hot on the
    levels of X (so that a moved frame is encoded like the observed one)."""

    def __init__(self, X: pd.DataFrame) -> None:
        self.columns = list(X.columns)
        self.levels = {c: levels(X[c]) for c in self.columns if is_categorical(X[c])}

    def encode(self, frame: pd.DataFrame, drop: Any = None) -> np.ndarray:
        parts: list[np.ndarray] = []
        for c in self.columns:
            if c == drop:
                continue
            if c in self.levels:
                col = frame[c].to_numpy(dtype=object)
                parts.extend((col == lv).astype(float) for lv in self.levels[c][1:])
            else:
                parts.append(frame[c].to_numpy(dtype=float))
        return np.column_stack(parts) if parts else np.empty((len(frame), 0))


def default_outcome(proba: bool) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    return HistGradientBoostingClassifier(max_iter=100) if proba else HistGradientBoostingRegressor(max_iter=100)


def default_classifier() -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    # A density ratio needs calibrated probabilities, not sharp decisions: smaller, slower-learning trees than the
    # defaults (on X ~ N(0, S) moved by half an SD the defaults' ratios had 3x the error and half the true ESS).
    return HistGradientBoostingClassifier(max_iter=100, learning_rate=0.05, max_leaf_nodes=8, min_samples_leaf=40)


def fit_learner(template: Any, A: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> Any:
    """A fresh copy of ``template`` (never the caller's object) fitted on (A, b), seeded from ``rng`` when it has
    an unset ``random_state``."""
    seed = int(rng.integers(2**31 - 1))
    try:
        from sklearn.base import clone

        est = clone(template)
    except Exception:  # not a scikit-learn estimator: a deep copy keeps the caller's object unfitted
        est = copy.deepcopy(template)
    if hasattr(est, "get_params") and est.get_params().get("random_state", 0) is None:
        est.set_params(random_state=seed)
    if not callable(getattr(est, "fit", None)):
        raise ModelError(
            f"the learner {type(template).__name__} has no fit method; pass a scikit-learn style estimator."
        )
    return est.fit(A, b)


def class_proba(clf: Any, A: np.ndarray) -> np.ndarray:
    """P(label 1) of a fitted binary classifier."""
    if not callable(getattr(clf, "predict_proba", None)):
        raise ModelError(
            f"the ratio learner {type(clf).__name__} has no predict_proba; pass a probabilistic "
            "classifier (e.g. LogisticRegression, HistGradientBoostingClassifier)."
        )
    p = np.asarray(clf.predict_proba(A), dtype=float)
    classes = list(getattr(clf, "classes_", [0, 1]))
    return p[:, classes.index(1)]


def predict_mu(est: Any, A: np.ndarray, proba: bool) -> np.ndarray:
    if proba:
        return class_proba(est, A)
    return np.asarray(est.predict(A), dtype=float).reshape(-1)


def by_fold(
    fn: Callable[[Any, np.ndarray], np.ndarray], fitted: list[Any], fold: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """``fn(fitted[j], rows of fold j)`` for every fold, in one array (NaN outside ``rows``)."""
    out = np.full(fold.size, np.nan)
    for j, est in enumerate(fitted):
        sel = (fold == j) & rows
        if sel.any():
            out[sel] = fn(est, sel)
    return out


def ratio_weights(
    Ex: np.ndarray, Es: np.ndarray, fold: np.ndarray, D: np.ndarray, learner: Any, rng: np.random.Generator
) -> np.ndarray:
    """Cross-fitted density ratio of the moved rows ``D`` to every observed row, at the observed rows."""
    r = np.zeros(fold.size)
    # Observed rows (label 0) against the moved rows evaluated (label 1): c / (1 - c) is then
    # p(x - h) 1{x - h evaluated} / p(x) over every observed row, the weight of the correction for the effect on
    # the evaluated rows (the share evaluated, n_1 / n_0, cancels against its estimate in theta's denominator).
    # Left-out rows (exclude, shrink) keep their residuals: mu at x + h may be learnt from them.
    for j in range(int(fold.max()) + 1):
        train, test = fold != j, fold == j
        moved = train & D
        clf = fit_learner(
            learner, np.vstack([Ex[train], Es[moved]]), np.repeat([0, 1], [int(train.sum()), int(moved.sum())]), rng
        )
        cj = np.clip(class_proba(clf, Ex[test]), 0.0, 1.0 - CLIP)
        r[test] = cj / (1.0 - cj)
    return r
