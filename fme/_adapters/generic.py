"""Plain callables and objects with ``predict``/``predict_proba``, and the delta-method protocol.

Protocol for the delta method (not in the paper; as marginaleffects' ``ModelAbstract``)::

    model.get_coef() -> array (k,)            # the parameters theta
    model.get_vcov() -> array (k, k)          # their covariance
    model.get_predict(params, data) -> array  # predictions at theta = params for a DataFrame

The Jacobian of an fME in theta is then taken by central differences of ``get_predict``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._utils.numfmt import count
from ..exceptions import FMEError, ModelError, ParameterError, PredictionError
from .base import (
    ModelAdapter,
    Prediction,
    Support,
    check_vcov,
    class_index,
    label,
    numerical_jacobian,
    register_adapter,
)

__all__ = ["ObjectAdapter", "estimator_prediction"]

_PROTOCOL = ("get_coef", "get_vcov", "get_predict")


def estimator_prediction(model: Any, target_class: Any, feature_names: Any = None) -> Prediction:
    """The prediction of an estimator-like object: P(class) of a classifier (``predict_proba`` and
    ``classes_``), else ``predict``. ``target_class`` as in :func:`fme._adapters.predictor.make_predictor`."""
    name = type(model).__name__
    if feature_names is None:
        feature_names = getattr(model, "feature_names_in_", None)
    feature_names = None if feature_names is None else [str(c) for c in feature_names]
    classes = getattr(model, "classes_", None)
    if hasattr(model, "predict_proba") and classes is not None:
        classes = np.asarray(classes)
        if isinstance(target_class, str) and target_class == "all":
            return Prediction(
                lambda X: model.predict_proba(X),
                feature_names,
                [str(c) for c in classes],
                f"{name}, P(class) for each class",
            )
        if target_class is None:
            if classes.size != 2:
                raise ParameterError(
                    f"{name} has {count(classes.size, 'class', 'classes')} {list(classes)}; "
                    "pass target_class=<one of them> "
                    "or target_class='all' for one output per class."
                )
            idx = 1
        else:
            idx = class_index(classes, target_class)
        return Prediction(
            lambda X: model.predict_proba(X)[:, idx],
            feature_names,
            None,
            f"{name}, P(class = {label(classes[idx])})",
            label(classes[idx]),
        )
    if target_class is not None:
        raise ParameterError(
            f"target_class={target_class!r} was given but {name} is not a classifier with predict_proba."
        )
    if hasattr(model, "predict") and callable(model.predict):
        return Prediction(model.predict, feature_names, None, f"{name}.predict")
    if callable(model):
        return Prediction(model, None, None, getattr(model, "__name__", "callable"))
    raise ModelError(
        f"cannot use a {name} as a model: it has neither predict nor predict_proba and is not callable; "
        "pass a fitted estimator or a function f(DataFrame) -> array."
    )


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
        raise ModelError(
            f"{name}.{method}() returned non-numeric values ({type(raw).__name__}) at {stage}; "
            "the delta-method protocol needs numbers (see fme._adapters.generic)."
        ) from exc


@register_adapter
class ObjectAdapter(ModelAdapter):
    """Any object with ``predict``/``predict_proba``, or a callable ``f(DataFrame) -> array``; the delta
    method when it follows the protocol of the module docstring. Asked last."""

    name = "object"
    priority = -100

    @classmethod
    def accepts(cls, model: Any) -> bool:
        return any(callable(getattr(model, m, None)) for m in ("predict", "predict_proba")) or callable(model)

    def _make_prediction(self) -> Prediction:
        return estimator_prediction(self.model, self.target_class)

    def delta_support(self) -> Support:
        missing = [m for m in _PROTOCOL if not callable(getattr(self.model, m, None))]
        if not missing:
            return Support(True)
        return Support(
            False,
            f"a {self.type_name} has no parameters and covariance (it lacks {', '.join(missing)} "
            "of the get_coef/get_vcov/get_predict protocol)",
        )

    def parameter_count(self) -> int | None:
        if not self.delta_support():
            return None
        return int(np.asarray(_protocol_call(self.model, "get_coef", stage="the parameters of vcov=")).size)

    def parameter_influence(self, frame: pd.DataFrame, cluster: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
        """The protocol's optional ``get_influence()`` (n x k, the rows of the estimation sample, which ``frame``
        must be); clusters from the column ``cluster`` of ``frame`` (the estimation sample itself)."""
        k = self.parameter_count()
        if k is None or not callable(getattr(self.model, "get_influence", None)):
            return super().parameter_influence(frame, cluster)
        A = np.asarray(_protocol_call(self.model, "get_influence", stage="the rows' parameter influence"), dtype=float)
        if A.shape != (len(frame), k) or not np.all(np.isfinite(A)):
            raise ModelError(
                f"get_influence() of the {self.type_name} must return a finite ({len(frame)}, {k}) "
                f"array, one row per averaged row (the estimation sample); got shape {A.shape}."
            )
        if cluster is None:
            return A, None
        if cluster not in frame.columns or frame[cluster].isna().any():
            raise ParameterError(
                f"the cluster column {cluster!r} must be a column of the data without missing "
                "values (the estimation sample's clusters)."
            )
        return A, frame[cluster].astype("category").cat.codes.to_numpy()

    def estimation_influence(self, cluster: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
        """``get_influence()`` before the rows are seen (Dask data: the engine checks their number); the clusters
        of a protocol model are a column of the data, which Dask data does not hold in memory."""
        k = self.parameter_count()
        if k is None or not callable(getattr(self.model, "get_influence", None)):
            return super().estimation_influence(cluster)
        if cluster is not None:
            raise ParameterError(
                f"vcov={{'unconditional': ..., 'cluster': {cluster!r}}} reads a protocol model's clusters from the "
                "data, in memory; compute the Dask frame (data.compute()) or drop 'cluster'."
            )
        A = np.asarray(_protocol_call(self.model, "get_influence", stage="the rows' parameter influence"), dtype=float)
        if A.ndim != 2 or A.shape[1] != k or not np.all(np.isfinite(A)):
            raise ModelError(
                f"get_influence() of the {self.type_name} must return a finite (n, {k}) array, one row per "
                f"row of the estimation sample; got shape {A.shape}."
            )
        return A, None

    def with_covariance(self, vcov: np.ndarray) -> Any:
        """The protocol model wrapped so that ``get_vcov`` returns ``vcov`` (coefficients and predictions
        unchanged)."""
        if self.parameter_count() is None:
            return super().with_covariance(vcov)
        return _GivenVcov(self.model, vcov)

    def level_jacobian(self, X: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """f(X) = get_predict(get_coef(), X) and its Jacobian by central differences in the parameters."""
        model, name = self.model, self.type_name
        params = _protocol_call(model, "get_coef", stage="the delta method's parameters").reshape(-1)
        vcov = check_vcov(_protocol_call(model, "get_vcov", stage="the delta method's covariance"), params.size, name)
        n = len(X)

        def at(p: np.ndarray) -> np.ndarray:
            out = _protocol_call(
                model, "get_predict", p, X.copy(deep=False), stage="the prediction's Jacobian"
            ).reshape(-1)
            if out.shape != (n,):
                raise ModelError(
                    f"{name}.get_predict returned {count(out.shape[0], 'value')} for {count(n, 'row')}; "
                    "it must return one prediction per row."
                )
            return out

        return at(params), numerical_jacobian(lambda p: np.concatenate([np.zeros(n), at(p)]), params, n), vcov

    def fme_jacobian(
        self, X0: pd.DataFrame, X1: pd.DataFrame, f0: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, str]:
        model, name = self.model, self.type_name
        params = _protocol_call(model, "get_coef", stage="the delta method's parameters").reshape(-1)
        vcov = check_vcov(_protocol_call(model, "get_vcov", stage="the delta method's covariance"), params.size, name)
        stacked = pd.concat([X0, X1], ignore_index=True)
        n = len(X0)

        def predict_at(p: np.ndarray) -> np.ndarray:
            # a fresh frame per call: a get_predict that modifies its input cannot leak into the next one
            out = _protocol_call(
                model,
                "get_predict",
                p,
                stacked.copy(deep=False),
                stage=f"the delta Jacobian (perturbed parameters; rows 0-{2 * n - 1} of x and x + h stacked)",
            ).reshape(-1)
            if out.shape != (2 * n,):
                raise ModelError(
                    f"{name}.get_predict returned {count(out.shape[0], 'value')} for {count(2 * n, 'row')}; "
                    "it must return one prediction per row."
                )
            return out

        return numerical_jacobian(predict_at, params, n), vcov, "numerical"


class _GivenVcov:
    """A protocol model with another covariance (its coefficients and predictions unchanged)."""

    def __init__(self, model: Any, vcov: np.ndarray) -> None:
        self._model, self._vcov = model, vcov

    def get_coef(self) -> np.ndarray:
        return self._model.get_coef()

    def get_vcov(self) -> np.ndarray:
        return self._vcov

    def get_predict(self, params: np.ndarray, data: Any) -> np.ndarray:
        return self._model.get_predict(params, data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)
