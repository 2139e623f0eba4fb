"""The model adapter: everything fme needs to know about one backend, in one object.

In the manner of marginaleffects' ``ModelAbstract`` (``get_predict``/``get_coef``/``get_vcov``), a
:class:`ModelAdapter` states what a fitted model can do for fme, each capability a method:

==========================  ===============================================================  ==========
capability                  method / attribute                                               used by
==========================  ===============================================================  ==========
predictions                 :meth:`~ModelAdapter.prediction` (func, feature and output       predictors
                            names, description); :meth:`~ModelAdapter.check`
data preparation            :meth:`~ModelAdapter.prepare` (``C(x)`` columns, exposure),      engines
                            :meth:`~ModelAdapter.complete_columns`                           plan
delta method (not paper)    :meth:`~ModelAdapter.delta_support`,                             inference
                            :meth:`~ModelAdapter.fme_jacobian`,
                            :meth:`~ModelAdapter.predict_with_jacobian`
covariance choices          :meth:`~ModelAdapter.parameter_count`,                           inference
                            :meth:`~ModelAdapter.robust_covariance`,
                            :meth:`~ModelAdapter.with_covariance`
bootstrap refits            :meth:`~ModelAdapter.refit_support`,                             inference
                            :meth:`~ModelAdapter.bootstrap_training`,
                            :meth:`~ModelAdapter.refit`,
                            :meth:`~ModelAdapter.fit_releases_gil`,
                            :meth:`~ModelAdapter.trees_per_fit`
exact NLM (paper §5.4)      :meth:`~ModelAdapter.split_thresholds`,                          NLM
                            :meth:`~ModelAdapter.forest`
training levels             :meth:`~ModelAdapter.training_levels`                            steps
identity (fingerprint)      :meth:`~ModelAdapter.fingerprint`,                               report
                            :meth:`~ModelAdapter.canonical_text`
==========================  ===============================================================  ==========

A capability a backend lacks answers "no" with the reason (:class:`Support`), never by a type
check elsewhere. :func:`adapt` picks the adapter once, by the registered classes' own
:meth:`~ModelAdapter.accepts` (capability or module name; an optional backend is never imported at
module level). Adding a backend means one module with a subclass decorated by
:func:`register_adapter`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np
import pandas as pd

from .._utils.numfmt import count
from ..exceptions import ModelError, ParameterError
from .identity import Walk, canonical, estimator_text, pickle_text

__all__ = [
    "ModelAdapter",
    "Prediction",
    "OnArray",
    "Support",
    "Unsupported",
    "adapt",
    "register_adapter",
    "registered_adapters",
    "numerical_jacobian",
    "module_of",
    "check_vcov",
    "pick_output",
    "fingerprint",
]

#: Relative step of the central differences in the parameters (about cbrt(machine eps)).
REL_EPS = 6e-6


class Unsupported(Exception):
    """The model is not one whose path is provably piecewise constant (message: why)."""


class Support(NamedTuple):
    """Whether an adapter supports a capability, and if not why (``bool(support)`` is ``ok``)."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


class Prediction(NamedTuple):
    """How an adapter predicts: ``func(frame) -> array``, the columns it needs, its outputs, its name."""

    func: Callable[[pd.DataFrame], Any]
    feature_names: list[str] | None
    output_names: list[str] | None
    description: str
    #: The class (or outcome) whose probability a classifier's single output is, as the user wrote it; None
    #: for a model that is no classifier, or with one output per class.
    explained_class: str | None = None


class OnArray:
    """A prediction function of a frame given the frame's values as one array: a model fitted on an array
    receives what it was fitted on (a frame would make scikit-learn warn that the model has no feature names).
    A class, not a closure, so that it pickles for worker processes."""

    def __init__(self, on_frame: Callable[[Any], Any]) -> None:
        self.on_frame = on_frame

    def __call__(self, X: Any) -> Any:
        return self.on_frame(X.to_numpy() if isinstance(X, pd.DataFrame) else X)


def module_of(obj: Any) -> str:
    """The module of ``obj``'s class (``''`` if unknown): backends are recognised by it, never imported."""
    return type(obj).__module__ or ""


def label(value: Any) -> str:
    """A class label as the user wrote it: ``1``, ``lo``, ``True`` (no ``np.int64(1)``)."""
    return str(value.item() if isinstance(value, np.generic) else value)


def class_index(classes: np.ndarray, target_class: Any) -> int:
    """Position of ``target_class`` among a classifier's ``classes_`` (by value or by its text)."""
    for i, c in enumerate(classes):
        if c == target_class or str(c) == str(target_class):
            return i
    raise ParameterError(f"target_class {target_class!r} is not one of the model's classes {list(classes)}.")


def numerical_jacobian(predict_at: Callable[[np.ndarray], np.ndarray], params: np.ndarray, n: int) -> np.ndarray:
    """Central differences of fME = p[n:] - p[:n] (stacked predictions at ``params``) in each parameter.

    One prediction of the 2 n stacked rows per perturbed parameter (a loop over parameters, not rows).
    """
    k = params.size
    jac = np.empty((n, k))
    for j in range(k):
        eps = REL_EPS * max(1.0, abs(params[j]))
        up, down = params.copy(), params.copy()
        up[j] += eps
        down[j] -= eps
        pu, pd_ = predict_at(up), predict_at(down)
        jac[:, j] = ((pu[n:] - pu[:n]) - (pd_[n:] - pd_[:n])) / (2.0 * eps)
    return jac


def check_vcov(vcov: np.ndarray, k: int, name: str) -> np.ndarray:
    """``vcov`` when it is a finite k x k covariance, else a :class:`~fme.ModelError` naming the fix."""
    vcov = np.asarray(vcov, dtype=float)
    if vcov.shape != (k, k) or not np.isfinite(vcov).all():
        raise ModelError(
            f"{name}'s parameter covariance has shape {vcov.shape} (or non-finite entries) for "
            f"{count(k, 'parameter')}; "
            "delta-method inference needs a finite k x k covariance. Use inference='bootstrap' or 'sample'."
        )
    return vcov


def target_column(n_out: int, target_class: Any, name: str) -> int | None:
    if target_class is None:
        return None
    if isinstance(target_class, (int, np.integer)) and not isinstance(target_class, bool) and 0 <= target_class < n_out:
        return int(target_class)
    raise ParameterError(
        f"target_class={target_class!r} for a raw {name}: give the output column index 0..{n_out - 1} "
        "(a Booster has no class labels)."
    )


def pick_output(out: Any, target_class: Any, name: str) -> np.ndarray:
    out = np.asarray(out)
    if out.ndim == 2 and out.shape[1] > 1:
        col = target_column(out.shape[1], target_class, name)
        if col is None:
            raise ParameterError(
                f"the {name} returns {count(out.shape[1], 'output')} per row (a multi-class objective); pass "
                "target_class=<output column index>."
            )
        return out[:, col]
    if target_class is not None:
        target_column(1, target_class, name)
    return out


class ModelAdapter(abc.ABC):
    """One fitted model as fme sees it; subclass per backend and register with :func:`register_adapter`.

    Parameters
    ----------
    model : object
        The user's fitted model (never modified).
    target_class : label, 'all' or None
        For classifiers: the class whose probability is predicted (see
        :func:`fme._adapters.predictor.make_predictor`); checked when the prediction is first asked for.

    Attributes
    ----------
    name : str
        The backend's name (``"sklearn"``, ``"statsmodels"``, ...); ``bootstrap``'s ``kind``.
    priority : int
        Higher is asked first by :func:`adapt` (a specific backend before a generic one).
    """

    name: ClassVar[str] = "object"
    priority: ClassVar[int] = 0

    def __init__(self, model: Any, target_class: Any = None) -> None:
        self.model = model
        self.target_class = target_class
        self._prediction: Prediction | None = None

    # ------------------------------------------------------------- choosing
    @classmethod
    def accepts(cls, model: Any) -> bool:
        """True when this adapter is the one for ``model`` (capability or module name; no import)."""
        return False

    def check(self) -> None:
        """Raise a library exception naming the fix when the model cannot predict as given (e.g. unfitted)."""

    @property
    def type_name(self) -> str:
        return type(self.model).__name__

    # ------------------------------------------------------------- predictions
    def prediction(self) -> Prediction:
        """The prediction function with its feature and output names (validated ``target_class``)."""
        if self._prediction is None:
            self._prediction = self._make_prediction()
        return self._prediction

    @abc.abstractmethod
    def _make_prediction(self) -> Prediction:
        """The backend's prediction function and names: every adapter module defines it."""

    def predict(self, frame: pd.DataFrame) -> np.ndarray:
        """The model's predictions for ``frame`` (the adapter's columns), as a float array."""
        return np.asarray(self.prediction().func(frame), dtype=float)

    @property
    def feature_names(self) -> list[str] | None:
        return self.prediction().feature_names

    def unnamed_inputs(self) -> int | None:
        """How many inputs the model takes by position when it does not name them (an estimator fitted on an
        array: ``n_features_in_`` without ``feature_names_in_``), else None: such a model reads a frame's columns
        in the frame's order, whatever they are."""
        n = getattr(self.model, "n_features_in_", None)
        if self.feature_names is not None or isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            return None
        return int(n)

    def name_inputs(self, names: Sequence[Any], as_array: bool = False) -> None:
        """Pass the model the columns ``names``, in that order (a model fitted on an array: the user names its
        inputs with ``feature_names=``). ``as_array``: the model was fitted on an array, so it receives the
        columns' values as one (a frame would make scikit-learn warn that the model has no feature names)."""
        prediction = self.prediction()
        if as_array and not isinstance(prediction.func, OnArray):  # never wrapped twice
            prediction = prediction._replace(func=OnArray(prediction.func))
        self._prediction = prediction._replace(feature_names=[str(c) for c in names])

    @property
    def output_names(self) -> list[str] | None:
        return self.prediction().output_names

    def columns_for(self, columns: Sequence[Any]) -> list[str] | None:
        """The columns of a frame with ``columns`` that predictions need, in order: the feature names and any
        auxiliary column (an offset); None when the model does not say (all columns are passed)."""
        return self.feature_names

    def prepare(self, data: Any, exposure: Any = None, offset: Any = None) -> Any:
        """``data`` as the model reads it (e.g. ``C(x)`` columns as categoricals, the ``exposure=``/``offset=``
        keywords as columns); ``data`` itself when nothing changes. Never modifies ``data``."""
        for kind, value in (("exposure", exposure), ("offset", offset)):
            if value is not None:
                raise ParameterError(
                    f"{kind}= applies to statsmodels results fitted with an {kind}; a "
                    f"{self.type_name} has none. Drop {kind}=."
                )
        return data

    def input_bounds(self) -> dict[str, tuple[float, float]]:
        """column -> (low, high): the closed range of an input column outside which the model cannot predict (a
        B-spline's boundary knots in a statsmodels formula); {} by default (no bound). Difference quotients
        (:func:`fme.avg_slopes`, :func:`fme.dme`) keep their points within it."""
        return {}

    def complete_columns(self) -> list[str]:
        """The input columns whose missing values leave a row out of the evaluation, as the model's own fit left
        such rows out (a statsmodels formula's right-hand-side columns: Stata's ``e(sample)``); none by
        default (a missing value is the model's to predict at)."""
        return []

    def scale_note(self, columns: Sequence[Any] | None = None) -> str | None:
        """A sentence on the scale of the predictions when it is not the model's plain ``predict``
        (an offset or exposure taken into account), else None."""
        return None

    # ------------------------------------------------------------- delta method
    def delta_support(self) -> Support:
        """Whether the delta method applies (parameters, their covariance, predictions at other parameters)."""
        return Support(False, f"a {self.type_name} exposes no parameters and covariance")

    def fme_jacobian(
        self, X0: pd.DataFrame, X1: pd.DataFrame, f0: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, str]:
        """(n x k Jacobian of f(X1) - f(X0) in the parameters, k x k covariance, ``'analytic'``/``'numerical'``)."""
        raise ModelError(self.delta_support().reason)

    def level_jacobian(self, X: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(f(X), n x k Jacobian of f(X) itself in the parameters, k x k covariance): what predictions,
        slopes and elasticities need beyond the fME's Jacobian."""
        raise ModelError(self.delta_support().reason)

    def predict_with_jacobian(
        self, X0: pd.DataFrame, X1: pd.DataFrame
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """(f(X0), f(X1), Jacobian, covariance) from one computation per point set, or None (predict separately)."""
        return None

    # ------------------------------------------------------------- covariance choices (vcov=)
    def parameter_count(self) -> int | None:
        """The number of parameters whose covariance ``vcov=`` may replace (:mod:`fme.inference.vcov`); None when
        the model states no parameter covariance."""
        return None

    def robust_covariance(self, cov_type: str, cluster: Any = None) -> np.ndarray:
        """The k x k heteroskedasticity-robust covariance of the parameters (``cov_type`` ``'HC0'`` .. ``'HC3'``),
        or with ``cov_type='cluster'`` the cluster-robust one by the column ``cluster`` of the training data."""
        raise ParameterError(
            "robust and cluster covariances need a statsmodels results object; pass the k x k "
            f"matrix itself for a {self.type_name} (vcov=<array>)."
        )

    def with_covariance(self, vcov: np.ndarray) -> Any:
        """A model that predicts as this one and whose delta method uses the parameter covariance ``vcov`` (a
        checked k x k matrix); never the caller's object modified."""
        raise ModelError(
            f"vcov= applies to models with a parameter covariance (statsmodels results or the "
            f"get_coef/get_vcov/get_predict protocol); a {self.type_name} has none."
        )

    def parameter_influence(self, frame: pd.DataFrame, cluster: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Each estimation-sample row's share of the parameter estimate and, with ``cluster``, the rows' clusters.

        Returns ``(A, codes)``: A (n x k) with theta_hat - theta ~ sum_i a_i (the model's bread times row i's
        score, so sum_i a_i a_i' is the HC0 sandwich), one row per row of ``frame``, which must be the
        estimation sample in its order; ``codes`` the integer cluster of each row by the training column
        ``cluster`` (None without). The unconditional variance of averages needs both
        (:mod:`fme.inference.unconditional`)."""
        raise ModelError(self._no_influence())

    def _no_influence(self) -> str:
        return (
            f"vcov='unconditional' needs each training row's score and the model's Hessian (its "
            f"estimating equations); a {self.type_name} does not state them. Use a statsmodels "
            "results object (OLS, WLS, GLM, Logit, Probit, Poisson), give a get_coef/get_vcov/"
            "get_predict model a get_influence() (n x k: each row's share of theta_hat - theta), "
            "or use vcov=None for the interval that holds the rows fixed."
        )

    def estimation_influence(self, cluster: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
        """:meth:`parameter_influence` of the whole estimation sample, before its rows are seen (Dask data, whose
        chunks :meth:`check_estimation_rows` checks as they are evaluated): ``(A, codes)``, the clusters from the
        model's own training data."""
        raise ModelError(self._no_influence())

    def check_estimation_rows(self, frame: pd.DataFrame, positions: np.ndarray) -> None:
        """Raise :class:`~fme.ModelError` when the rows of ``frame`` are not the estimation sample's rows at
        ``positions`` (what can be compared: a statsmodels model's design rows); nothing to compare by default."""

    # ------------------------------------------------------------- bootstrap
    def refit_support(self) -> Support:
        """Whether bootstrap refits are possible."""
        return Support(
            False,
            f"cannot refit a {self.type_name}: bootstrap needs a scikit-learn estimator/pipeline "
            "(clone + fit) or a statsmodels formula result",
        )

    def bootstrap_training(self, spec: dict[str, Any]) -> tuple[Any, int]:
        """Check the training data of a ``bootstrap`` specification; (training data, number of rows)."""
        raise ModelError(self.refit_support().reason + ". Use inference='delta' or 'sample'.")

    def refit(self, train: Any, idx: np.ndarray) -> Any:
        """A new fitted model on the training rows ``idx`` (drawn with replacement); never touches ``model``."""
        raise ModelError(self.refit_support().reason)

    def for_workers(self) -> ModelAdapter:
        """The adapter whose :meth:`refit` the parallel refits (worker threads or processes) call: the same
        refits, possibly lighter to send and without the model's own parallelism. By default this one."""
        return self

    def fit_releases_gil(self) -> bool:
        """Whether a refit runs mostly without Python's GIL (scikit-learn's tree building), so that threads
        refit side by side without starting processes; False by default (:mod:`fme.inference.execution`)."""
        return False

    def trees_per_fit(self) -> int:
        """The trees one refit grows (each costs Python work that holds the GIL); 1 for a model without trees."""
        return 1

    # ------------------------------------------------------------- exact NLM
    def split_thresholds(self, features: Sequence[str], columns: Sequence[str]) -> dict[str, np.ndarray]:
        """Split thresholds of each stepped feature in the model's input space (NaN: a categorical split);
        raises :class:`Unsupported` with the reason when the model is not a readable tree model."""
        raise Unsupported(self.type_name)

    def forest(self) -> Any:
        """The model's trees as a :class:`fme._adapters.forest.Forest` for the traversal, or None."""
        return None

    # ------------------------------------------------------------- categorical levels
    def training_levels(self) -> dict[str, list]:
        """Levels of categorical input columns as the fitted model states them (column -> levels)."""
        return {}

    # ------------------------------------------------------------- identity
    def fingerprint(self) -> bytes:
        """The canonical serialisation of the fitted model: equal bytes for identical fits.

        Identical fits (same data and settings) give the same bytes even where their pickles differ, and a
        changed parameter, fitted value or training design changes them; a report's build cache and audit
        trail hash it. Each backend writes what identifies its fits (:meth:`canonical_text`).

        Returns
        -------
        bytes
            UTF-8 text; see :func:`fingerprint` for an object that is not a model (e.g. a model and its
            training data).
        """
        return fingerprint(self.model)

    @classmethod
    def canonical_text(cls, obj: Any, walk: Walk) -> str:
        """The canonical text of ``obj``, an object this adapter accepts (the base class: any object that is
        not a plain value); ``walk(part)`` gives the text of a part (a nested estimator, fitted attributes).

        Default: an object with ``get_params`` (scikit-learn's API) is its class, its parameters and every
        fitted attribute; anything else is the sha256 of its pickle.
        """
        return estimator_text(obj, walk) if callable(getattr(obj, "get_params", None)) else pickle_text(obj)


_REGISTRY: list[type[ModelAdapter]] = []


def register_adapter(cls: type[ModelAdapter]) -> type[ModelAdapter]:
    """Class decorator: make :func:`adapt` consider ``cls`` (by ``priority``, later registrations first on ties)."""
    if not (isinstance(cls, type) and issubclass(cls, ModelAdapter)):
        raise TypeError(f"register_adapter needs a ModelAdapter subclass, got {cls!r}")
    if cls in _REGISTRY:
        _REGISTRY.remove(cls)
    _REGISTRY.insert(0, cls)
    _REGISTRY.sort(key=lambda c: -c.priority)  # stable: ties keep the newest first
    return cls


def unregister_adapter(cls: type[ModelAdapter]) -> None:
    """Remove ``cls`` from the registry (tests)."""
    if cls in _REGISTRY:
        _REGISTRY.remove(cls)


def registered_adapters() -> list[type[ModelAdapter]]:
    """The registered adapter classes in the order :func:`adapt` asks them."""
    return list(_REGISTRY)


def _describe(obj: Any, walk: Walk) -> str:
    """The text of an object that is not a plain value: by the first registered adapter that accepts it."""
    for cls in _REGISTRY:
        if cls.accepts(obj):
            return cls.canonical_text(obj, walk)
    return ModelAdapter.canonical_text(obj, walk)


def fingerprint(obj: Any) -> bytes:
    """The canonical serialisation of a fitted model and what travels with it (e.g. ``(model, training data)``).

    Plain values (arrays, frames, lists, dicts) are written by :func:`fme._adapters.identity.canonical`;
    every other object (the model, the estimators and fitted parts inside it) by the adapter that accepts
    it (:meth:`ModelAdapter.canonical_text`). Identical fits give identical bytes.
    """
    return canonical(obj, _describe).encode("utf-8")


def adapt(model: Any, target_class: Any = None) -> ModelAdapter:
    """The adapter of ``model``: the first registered class whose ``accepts(model)`` is true.

    Parameters
    ----------
    model : fitted model, callable, or a :class:`ModelAdapter` (returned as is)
    target_class : label, 'all' or None
        For classifiers (see :func:`fme._adapters.predictor.make_predictor`).

    Raises
    ------
    ModelError
        For a model class instead of a fitted instance, or an object no adapter accepts (no ``predict``,
        not callable); :class:`~fme.NotFittedError` for an unfitted estimator.
    """
    if isinstance(model, ModelAdapter):
        if target_class is None or target_class is model.target_class:
            return model
        return type(model)(model.model, target_class)
    if isinstance(model, type):
        raise ModelError(
            f"the model {model.__name__} is a class, not a fitted model; pass an instance fitted on the data, "
            f"e.g. {model.__name__}().fit(X, y)."
        )
    for cls in _REGISTRY:
        if cls.accepts(model):
            adapter = cls(model, target_class)
            adapter.check()
            return adapter
    raise ModelError(
        f"cannot use a {type(model).__name__} as a model: it has neither predict nor predict_proba and is not "
        "callable; pass a fitted estimator or a function f(DataFrame) -> array."
    )
