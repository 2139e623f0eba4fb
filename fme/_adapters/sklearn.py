"""scikit-learn estimators and Pipelines (and estimators following scikit-learn's API: ``fit``,
``get_params``, ``predict``/``predict_proba``).

* predictions: raw feature columns go in (a Pipeline does its own encoding); classifiers give the
  probability of ``target_class``;
* delta method: not supported (no parameter covariance);
* bootstrap: ``sklearn.base.clone(model).fit(X[idx], y[idx])`` on ``{"X": X_train, "y": y_train}``;
* exact NLM: the trees of :mod:`fme._adapters._sktrees` (also at the end of a Pipeline);
* training levels: ``categories_`` of a One-Hot/Ordinal encoder in a Pipeline or ColumnTransformer, and of
  HistGradientBoosting's own encoder of pandas categorical columns.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._utils.numfmt import count
from ..exceptions import DataError, NotFittedError, ParameterError
from ._sktrees import per_feature, pipeline_thresholds, read_sklearn_forest, sklearn_splits
from .base import ModelAdapter, Prediction, Support, module_of, register_adapter
from .generic import estimator_prediction
from .identity import Walk, class_path

__all__ = ["SklearnAdapter", "take_rows"]

_ENCODERS = ("OneHotEncoder", "OrdinalEncoder")


def take_rows(a: Any, idx: np.ndarray) -> Any:
    """Rows ``idx`` of a frame, series or array (positional)."""
    return a.iloc[idx] if isinstance(a, (pd.DataFrame, pd.Series)) else np.asarray(a)[idx]


def _is_pipeline(model: Any) -> bool:
    return type(model).__name__ == "Pipeline" and module_of(model).startswith("sklearn")


def _encoder_levels(transformer: Any, columns: Sequence[Any] | None) -> dict[str, list]:
    """column -> levels of the One-Hot/Ordinal encoders inside ``transformer`` (a ColumnTransformer, an
    encoder, or a Pipeline whose first step is one of them), for the input columns ``columns``."""
    name = type(transformer).__name__
    if name in _ENCODERS and hasattr(transformer, "categories_"):
        cols = getattr(transformer, "feature_names_in_", columns)
        if cols is None:
            return {}
        return {str(c): list(cats) for c, cats in zip(cols, transformer.categories_)}
    if name == "ColumnTransformer" and hasattr(transformer, "transformers_"):
        names_in = list(getattr(transformer, "feature_names_in_", columns if columns is not None else []))
        out: dict[str, list] = {}
        for _, tr, cols in transformer.transformers_:
            if isinstance(tr, str) or not names_in:
                continue
            if isinstance(cols, (list, tuple)) and cols and isinstance(cols[0], str):
                sel = list(cols)
            else:
                sel = [names_in[i] for i in np.atleast_1d(np.arange(len(names_in))[cols])]
            out.update(_encoder_levels(tr, sel))
        return out
    if _is_pipeline(transformer):
        return _encoder_levels(transformer.steps[0][1], columns)
    return {}


@register_adapter
class SklearnAdapter(ModelAdapter):
    """scikit-learn estimators and Pipelines, and other estimators with ``fit`` and ``get_params``."""

    name = "sklearn"
    priority = 0

    @classmethod
    def accepts(cls, model: Any) -> bool:
        if module_of(model).startswith("sklearn"):
            return True
        return (
            callable(getattr(model, "fit", None))
            and callable(getattr(model, "get_params", None))
            and any(callable(getattr(model, m, None)) for m in ("predict", "predict_proba"))
        )

    @classmethod
    def canonical_text(cls, obj: Any, walk: Walk) -> str:
        """An estimator by its class, parameters and fitted attributes; a fitted part of scikit-learn without
        ``get_params`` (a tree's arrays, a binner) by its state."""
        if (
            not callable(getattr(obj, "get_params", None))
            and module_of(obj).startswith("sklearn")
            and hasattr(obj, "__dict__")
        ):
            return f"{class_path(obj)}({walk(dict(vars(obj)))})"
        return super().canonical_text(obj, walk)

    def check(self) -> None:
        try:
            from sklearn.base import BaseEstimator
            from sklearn.exceptions import NotFittedError as SkNotFitted
            from sklearn.utils.validation import check_is_fitted
        except ImportError:  # pragma: no cover - scikit-learn is a dependency
            return
        if isinstance(self.model, BaseEstimator):
            try:
                check_is_fitted(self.model)
            except SkNotFitted as exc:
                raise NotFittedError(
                    f"the {self.type_name} passed as the model is not fitted; call .fit(X, y) on it first."
                ) from exc
            except TypeError:
                return  # not an estimator check_is_fitted understands (e.g. a meta-object without fit)

    def _make_prediction(self) -> Prediction:
        return estimator_prediction(self.model, self.target_class)

    # ------------------------------------------------------------- inference
    def delta_support(self) -> Support:
        return Support(
            False, f"a {self.type_name} has no parameter covariance (scikit-learn estimators do not state one)"
        )

    def refit_support(self) -> Support:
        if callable(getattr(self.model, "fit", None)) and callable(getattr(self.model, "get_params", None)):
            return Support(True)
        return super().refit_support()

    def bootstrap_training(self, spec: dict[str, Any]) -> tuple[Any, int]:
        if not self.refit_support():
            return super().bootstrap_training(spec)
        if "X" not in spec or "y" not in spec:
            raise ParameterError("bootstrap of a scikit-learn model needs {'X': X_train, 'y': y_train}.")
        for key, ndim in (("X", 2), ("y", 1)):
            value = spec[key]
            shape = np.shape(value) if not isinstance(value, (str, bytes)) else ()
            if isinstance(value, (str, bytes)) or len(shape) not in ((2,) if ndim == 2 else (1, 2)):
                raise ParameterError(
                    f"bootstrap {key} must be {'a DataFrame or 2-d array' if ndim == 2 else 'a Series or 1-d array'} "
                    f"of training {'features' if ndim == 2 else 'targets'}, got {type(value).__name__}"
                    f"{'' if not shape else f' of shape {shape}'}."
                )
        if len(spec["X"]) != len(spec["y"]) or len(spec["X"]) < 2:
            raise DataError(
                f"bootstrap X has {count(len(spec['X']), 'row')} and y {len(spec['y'])}; they must match (>= 2)."
            )
        return (spec["X"], spec["y"]), len(spec["X"])

    def refit(self, train: Any, idx: np.ndarray) -> Any:
        from sklearn.base import clone

        X, y = train
        return clone(self.model).fit(take_rows(X, idx), take_rows(y, idx))

    def for_workers(self) -> ModelAdapter:
        """An unfitted clone of the model (a worker process receives its parameters, not the fitted model, which
        the refits never read) with every ``n_jobs`` of a scikit-learn estimator in it set to 1.

        The workers are the parallelism: a forest's own threads beside them would oversubscribe the cores.
        scikit-learn's ``n_jobs`` never changes the fitted numbers (forests seed their trees before dispatching
        them), so the refits equal the sequential ones; other libraries' thread settings are left alone.
        """
        from sklearn.base import clone

        try:
            template = clone(self.model)
        except Exception:  # noqa: BLE001 - every refit clones too and reports the same error, counted as failed
            return self
        params = template.get_params(deep=True)
        single = {
            k: 1
            for k, v in params.items()
            if k.rpartition("__")[2] == "n_jobs"
            and v not in (None, 1)
            and module_of(params[k.rpartition("__")[0]] if "__" in k else template).startswith("sklearn")
        }
        if single:
            template.set_params(**single)
        return type(self)(template, self.target_class)

    def _final(self) -> Any:
        """The estimator that fits last: a Pipeline's final step, else the model."""
        model = self.model
        return model.steps[-1][1] if _is_pipeline(model) and model.steps else model

    def fit_releases_gil(self) -> bool:
        """scikit-learn's trees and forests build their trees without the GIL."""
        return module_of(self._final()).startswith(("sklearn.tree", "sklearn.ensemble._forest"))

    def trees_per_fit(self) -> int:
        trees = getattr(self._final(), "n_estimators", 1)
        return int(trees) if isinstance(trees, numbers.Integral) and trees > 0 else 1

    # ------------------------------------------------------------- exact NLM
    def split_thresholds(self, features: Sequence[str], columns: Sequence[str]) -> dict[str, np.ndarray]:
        if _is_pipeline(self.model):
            return pipeline_thresholds(self.model, list(features), list(columns))
        feats, thr = sklearn_splits(self.model)
        per = per_feature(feats, thr, list(columns), None)
        return {f: per.get(f, np.empty(0)) for f in features}

    def forest(self) -> Any:
        if _is_pipeline(self.model) or not module_of(self.model).startswith("sklearn"):
            return None
        return read_sklearn_forest(self.model, self.target_class)

    # ------------------------------------------------------------- levels
    def training_levels(self) -> dict[str, list]:
        model = self.model
        names = getattr(model, "feature_names_in_", None)
        if _is_pipeline(model):
            return _encoder_levels(model.steps[0][1], names)
        pre = getattr(model, "_preprocessor", None)  # HistGradientBoosting's encoder of categorical columns
        if pre is not None:
            return _encoder_levels(pre, names)
        return _encoder_levels(model, names)


class BoosterAdapter(SklearnAdapter):
    """Boosting libraries with a native ``Booster`` beside their scikit-learn wrappers (LightGBM, XGBoost):
    recognised by ``module_prefix``; a wrapper is checked as any scikit-learn estimator, a Booster is not.
    Not registered itself: each library's subclass is."""

    module_prefix = "\0"  # no module starts with it: subclasses set theirs
    priority = 10

    @classmethod
    def accepts(cls, model: Any) -> bool:
        return module_of(model).startswith(cls.module_prefix)

    @property
    def is_booster(self) -> bool:
        return type(self.model).__name__ == "Booster"

    def check(self) -> None:
        if not self.is_booster:
            super().check()
