"""Choosing and running the NLM method of :func:`fme.fme` (paper §5.4).

* :func:`resolve_method`: ``nlm_method="auto"`` -> ``"exact"`` for the tree
  models of :mod:`fme._nlm.exact`, ``"gauss-kronrod"`` otherwise. The exact
  NLM traverses the trees (:mod:`fme._nlm.tree_paths`) where it can read them,
  else predicts at segment midpoints (:func:`fme._nlm.exact.exact_nlm`).
* :func:`adaptive_nlm` / :func:`fme._nlm.budget.budget_nlm`: Gauss-Kronrod (10, 21) NLM with a
  per-row error estimate; the rows above ``nlm_tol`` share a budget of ``nlm_budget`` predictions
  per row on average (adaptive bisection, or jump location for piecewise-constant paths).
* :func:`classify`: per-row status ``ok``, ``constant`` (NLM 0/0: the path
  varies by at most :data:`fme.nlm.CONSTANT_ULPS` eps times its own level),
  ``flat`` (NLM set to NaN: it varies by at most :data:`fme.nlm.FLAT_ULPS`
  eps times its own level, the rounding of its own values, so the NLM is
  rounding noise; or, only when ``nlm_flat_tol`` > 0 is given, by at most
  that fraction of the spread of all predictions) or ``inaccurate`` (error
  estimate above ``nlm_tol`` after the budget).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .._utils.stats import median
from .._utils.threads import beside
from ..exceptions import ParameterError
from ..nlm import DEFAULT_MAX_LEVEL, DEFAULT_NLM_TOL, FLAT_ULPS, NLM_METHODS, QuadratureRule, quadrature_rule
from ..steps import Step
from .budget import BASE_COST, DEFAULT_BUDGET, ROUTES, budget_nlm
from .exact import exact_nlm, exact_support
from .status import NLM_STATUS, prediction_spread, statuses
from .tree_paths import read_forest, traverse_nlm

__all__ = [
    "NLMSummaryMixin",
    "nlm_values",
    "NLMSettings",
    "resolve_method",
    "adaptive_nlm",
    "classify",
    "NLM_STATUS",
    "DEFAULT_FLAT_TOL",
]

#: Default ``nlm_flat_tol``: 0, no relative rule. With a value > 0 a path is also flat when the SD of f
#: along it is at most this times the SD of the predictions f(x), f(x + h) over all evaluated rows (the
#: earlier default rule, which discarded well-defined NLMs of small-scale paths, e.g. a logit's
#: probabilities near 3e-8). Undefined by default means: varies only by rounding (:data:`fme.nlm.FLAT_ULPS`).
DEFAULT_FLAT_TOL = 0.0
_STATUS_LABELS = np.asarray(NLM_STATUS, dtype=object)
_ROUTE_LABELS = np.asarray(ROUTES, dtype=object)
_UNKNOWN = object()


class NLMSettings:
    """The resolved NLM method: name, fixed rule (quadrature methods), thresholds (exact)."""

    def __init__(
        self,
        method: str,
        rule: QuadratureRule | None = None,
        thresholds: dict | None = None,
        tol: float = DEFAULT_NLM_TOL,
        max_level: int = DEFAULT_MAX_LEVEL,
        flat_tol: float = DEFAULT_FLAT_TOL,
        forest=None,
        budget: float = DEFAULT_BUDGET,
    ):
        self.method, self.rule, self.thresholds = method, rule, thresholds
        #: the model's trees (fme._nlm.tree_paths.Forest) when the exact NLM traverses them, else None (midpoints)
        self.forest = forest
        self.tol, self.max_level, self.flat_tol = tol, max_level, flat_tol
        #: predictions per evaluated row on average for the error-controlled NLM (f(x), f(x + h) included)
        self.budget = budget

    @property
    def nodes(self) -> int | None:
        if self.rule is not None:
            return int(self.rule.nodes.size)
        return 21 if self.method == "gauss-kronrod" else None


def _nonneg(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0:
        raise ParameterError(f"{name} must be a finite number >= 0, got {value!r}.")
    return float(value)


def resolve_method(
    model: Any,
    method: str,
    points: int | None,
    intervals: int | None,
    steps: tuple[Step, ...],
    columns: list[str],
    tol: Any,
    max_level: Any,
    flat_tol: Any,
    target_class: Any = _UNKNOWN,
    budget: Any = None,
) -> NLMSettings:
    """Validate the NLM arguments and pick the method (``auto`` resolved here).

    ``target_class`` (as given to :func:`fme._adapters.predictor.make_predictor`) lets the exact method traverse the
    trees of a classifier; without it classifiers use the midpoint route.
    """
    if method not in NLM_METHODS:
        raise ParameterError(f"unknown nlm_method {method!r}; use one of {', '.join(NLM_METHODS)}.")
    tol = DEFAULT_NLM_TOL if tol is None else _nonneg(tol, "nlm_tol")
    flat_tol = DEFAULT_FLAT_TOL if flat_tol is None else _nonneg(flat_tol, "nlm_flat_tol")
    if max_level is None:
        max_level = DEFAULT_MAX_LEVEL
    elif isinstance(max_level, bool) or not isinstance(max_level, numbers.Integral) or not 0 <= max_level <= 12:
        raise ParameterError(f"nlm_max_level must be an integer in [0, 12], got {max_level!r}.")
    if budget is None:
        budget = DEFAULT_BUDGET
    elif (
        isinstance(budget, bool)
        or not isinstance(budget, numbers.Real)
        or not np.isfinite(budget)
        or budget < BASE_COST
    ):
        raise ParameterError(
            f"nlm_budget must be a finite number >= {BASE_COST} (predictions per row on average: "
            f"f(x), f(x + h) and the 21 Gauss-Kronrod nodes), got {budget!r}; the default is "
            f"{DEFAULT_BUDGET:g}."
        )
    kw = dict(tol=tol, max_level=int(max_level), flat_tol=flat_tol, budget=float(budget))
    if method == "auto":  # a fixed-rule argument means that rule
        method = "gauss-legendre" if points is not None else "simpson38" if intervals is not None else "auto"
    if method in ("gauss-legendre", "simpson38"):
        return NLMSettings(method, rule=quadrature_rule(method, points, intervals), **kw)
    if points is not None or intervals is not None:
        raise ParameterError(
            f"nlm_points/nlm_intervals do not apply to nlm_method={method!r}; use "
            "'gauss-legendre' (nlm_points) or 'simpson38' (nlm_intervals)."
        )
    if method == "gauss-kronrod":
        return NLMSettings(method, **kw)
    thresholds, why = exact_support(model, [s.feature for s in steps], columns)
    if thresholds is not None:
        forest = (
            None
            if target_class is _UNKNOWN and hasattr(model, "classes_")
            else read_forest(model, None if target_class is _UNKNOWN else target_class)
        )
        return NLMSettings("exact", thresholds=thresholds, forest=forest, **kw)
    if method == "exact":
        name = type(model).__name__ if model is not None else "this model"
        raise ParameterError(
            f"nlm_method='exact' is not available for {name} ({why}): it needs a scikit-learn tree or tree "
            "ensemble, LightGBM or XGBoost (or a Pipeline ending in one after pass-through/monotone per-feature "
            "steps); use nlm_method='auto' or 'gauss-kronrod'."
        )
    return NLMSettings("gauss-kronrod", **kw)


def adaptive_nlm(
    predictor,
    X: pd.DataFrame,
    steps: tuple[Step, ...],
    h,
    f0: np.ndarray,
    f1: np.ndarray,
    tol: float,
    max_level: int,
    batch_size: int | None = None,
    progress: bool | None = False,
    budget: float = DEFAULT_BUDGET,
):
    """Gauss-Kronrod NLM with error control within ``budget`` predictions per row (:mod:`fme._nlm.budget`).

    Returns
    -------
    nlm, sd, err : ndarrays like ``f0`` (err: the final error estimate, or bound on the jump route)
    intervals : ndarray of shape (n,), the quadrature sub-intervals per row (0 on the jump route)
    """
    got = budget_nlm(predictor, X, steps, h, f0, f1, tol, budget, max_level, batch_size, progress)
    return got.nlm, got.sd, got.err, got.intervals


def classify(
    nlm: np.ndarray,
    sd: np.ndarray,
    f0: np.ndarray,
    f1: np.ndarray,
    flat_tol: float,
    err: np.ndarray | None = None,
    tol: float = np.inf,
    spread: np.ndarray | None = None,
    scale: np.ndarray | None = None,
    codes: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """NLMs with flat paths set to NaN, and the status per row (and output column).

    ``codes``: the status as int8 indices into :data:`~fme._nlm.status.NLM_STATUS` instead of its labels (an
    object array of 10^6 strings costs more than the classification itself; the result frame builds its column
    from the codes).

    Flat (paper §5.4's NLM is rounding noise): ``sd <= FLAT_ULPS * eps * scale``, ``scale`` the path's own
    level |f(x)| + max |f - f(x)| (from the quadrature or closed forms; None skips this rule). With
    ``flat_tol`` > 0 also ``sd <= flat_tol * spread``: ``spread`` is the SD of all predictions f(x),
    f(x + h) (per output) when it is known beyond these rows (a Dask partition); by default that of
    ``f0`` and ``f1`` (:func:`fme._nlm.status.prediction_spread`). Otherwise ``inaccurate`` where ``err`` is
    given and not ``<= tol``. One compiled pass applies the rules (:func:`fme._nlm.status.statuses`).
    """
    limit = None
    if flat_tol > 0:
        limit = flat_tol * (prediction_spread(f0, f1) if spread is None else spread)
    ulps = FLAT_ULPS * np.finfo(float).eps
    out, status = statuses(nlm, sd, scale, ulps, limit, err, tol)
    return out, status if codes else _STATUS_LABELS[status]


def _traversable(forest, X: pd.DataFrame) -> bool:
    """The forest was read and ``X`` is the all-numeric matrix its feature indices refer to."""
    if forest is None or X.shape[1] != forest.n_features:
        return False
    return all(pd.api.types.is_numeric_dtype(dt) for dt in X.dtypes)


def nlm_values(
    settings: NLMSettings,
    predictor,
    X: pd.DataFrame,
    steps: tuple[Step, ...],
    h: Mapping[str, np.ndarray] | None,
    f0: np.ndarray,
    f1: np.ndarray,
    batch_size: int | None,
    spread: np.ndarray | None = None,
    return_sd: bool = False,
    progress: bool | None = False,
    codes: bool = False,
):
    """(nlm, status) by the resolved method: exact or error-controlled Gauss-Kronrod (fixed rules: in the kernel).

    ``codes``: the status as int8 indices into :data:`~fme._nlm.status.NLM_STATUS` and the route into
    :data:`fme._nlm.budget.ROUTES` (:func:`classify`), instead of their labels.

    ``return_sd``: (nlm, status, sd, extra): also the SD of f along each path (the relative flat-path
    test's numerator; a Dask pass classifies those at its end) and the extra result columns of the method
    (Gauss-Kronrod: ``err``, the error estimate like ``nlm``, and ``route``, per row, see
    :mod:`fme._nlm.budget`). ``progress``: bars over the method's batches when there are several.
    """
    extra: dict[str, np.ndarray] = {}
    if spread is None and settings.flat_tol > 0 and len(X):
        # the relative flat-path test's scale needs only the predictions: on a spare core while the method runs
        # (which calls the model from this thread), ready when the NLMs are classified
        pending = beside(lambda: prediction_spread(f0, f1))
    else:
        pending = lambda: spread  # noqa: E731 - known (or not needed): nothing to wait for
    if settings.method == "exact":
        shifts = {
            s.feature: np.broadcast_to(
                np.asarray(h[s.feature] if h is not None and s.feature in h else s.value, dtype=float), (len(X),)
            )
            for s in steps
        }
        if _traversable(settings.forest, X):
            nlm, sd, _, scale = traverse_nlm(settings.forest, X, shifts, f0, f1, progress=progress, return_scale=True)
        else:
            nlm, sd, _, scale = exact_nlm(
                predictor, X, shifts, settings.thresholds, f0, f1, progress=progress, return_scale=True
            )
        out = classify(nlm, sd, f0, f1, settings.flat_tol, spread=pending(), scale=scale, codes=codes)
    else:
        got = budget_nlm(
            predictor, X, steps, h, f0, f1, settings.tol, settings.budget, settings.max_level, batch_size, progress
        )
        sd = got.sd
        out = classify(
            got.nlm,
            sd,
            f0,
            f1,
            settings.flat_tol,
            got.err,
            settings.tol,
            spread=pending(),
            scale=got.scale,
            codes=codes,
        )
        extra.update(err=got.err, route=got.route if codes else _ROUTE_LABELS[got.route])
    return (*out, sd, extra) if return_sd else out


class NLMSummaryMixin:
    """Robust NLM figures of :class:`fme.effects.FMEResult` (paper §5.4)."""

    @property
    def status_columns(self) -> list[str]:
        cols = ["nlm_status"] if self.output_names is None else [f"nlm_status_{c}" for c in self.output_names]
        return [c for c in cols if c in self.results.columns]

    def _reduce_nlm(self, fn) -> Any:
        """``fn`` of each NLM column's values; NaN without NLMs or where no NLM is defined."""
        if not self.has_nlm:
            return float("nan")
        return self._reduce(self.nlm_columns, lambda v: fn(v) if np.isfinite(v).any() else float("nan"))

    def _count_status(self, status: str) -> int:
        if not self.status_columns:
            return 0
        return int((self.results[self.status_columns] == status).any(axis=1).sum())

    @property
    def median_nlm(self) -> Any:
        """Median of the defined NLMs: robust to the unbounded-below tail (one row cannot dominate it)."""
        return self._reduce_nlm(lambda v: median(v[~np.isnan(v)]))

    @property
    def share_linear(self) -> Any:
        """Share of the defined NLMs >= ``nlm_linear_threshold`` (default 0.9; paper §5.4's "approximately linear")."""
        t = self.nlm_linear_threshold
        return self._reduce_nlm(lambda v: float(np.mean(v[~np.isnan(v)] >= t)))

    @property
    def n_nlm_flat(self) -> int:
        """Rows whose path is flat: varies, but negligibly (``nlm_flat_tol``); NLM undefined."""
        return self._count_status("flat")

    @property
    def n_nlm_constant(self) -> int:
        """Rows whose prediction is exactly constant along the path (NLM 0/0)."""
        return self._count_status("constant")

    @property
    def n_nlm_inaccurate(self) -> int:
        """Rows whose Gauss-Kronrod error estimate stayed above ``nlm_tol``."""
        return self._count_status("inaccurate")
