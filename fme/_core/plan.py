"""The resolved plan of an fME computation: what :func:`fme.fme` validated, for any engine.

A front door (:func:`fme.fme`, :func:`fme.ame`, ...) checks its arguments once and resolves them into
a :class:`Plan` (:func:`resolve_plan`: parsed steps, NLM method, unfitted detector, inference method);
the engines (in memory, :mod:`fme._local.effects`; Dask, :mod:`fme._dask.effects`) take the plan and
never validate again. :class:`FMEOptions` carries the keyword arguments of :func:`fme.fme` as one
record, so a caller that runs :func:`fme.fme`'s computation (``fme.ame`` on Dask data, one pass per
row of its table) passes the record on instead of re-reading a signature.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._nlm.evaluate import NLMSettings, resolve_method
from .._utils.validation import check_conf_level
from ..exceptions import ExtrapolationError, FeatureError, ParameterError, StepError
from ..extrapolation import make_detector
from ..inference.methods import resolve_method as resolve_inference
from ..nlm import QuadratureRule
from .._adapters.formula import formula_info
from .._adapters.statsmodels import is_statsmodels_results
from .._adapters.predictor import Predictor, make_predictor
from ..steps import Step, check_training_levels, parse_steps

__all__ = ["Plan", "FMEOptions", "resolve_plan", "check_batch_size", "ON_EXTRAPOLATION"]

ON_EXTRAPOLATION = ("exclude", "keep", "shrink")


@dataclass(frozen=True)
class FMEOptions:
    """The keyword arguments of :func:`fme.fme`, with its defaults, as one record (see the module docstring).

    :meth:`from_kwargs` builds one from a mapping and names an unknown key; :meth:`plan_kwargs` gives the
    arguments :func:`resolve_plan` validates.
    """

    nlm: bool = False
    nlm_method: str = "auto"
    nlm_points: Any = None
    nlm_intervals: Any = None
    nlm_tol: Any = None
    nlm_max_level: Any = None
    nlm_budget: Any = None
    nlm_flat_tol: Any = None
    nlm_linear_threshold: Any = 0.9
    extrapolation: Any = None
    reference_data: Any = None
    on_extrapolation: Any = None
    target_class: Any = None
    batch_size: Any = None
    random_state: Any = None
    inference: str = "auto"
    bootstrap: Any = None
    conf_level: Any = 0.95
    sample_size: Any = None
    progress: Any = None
    exposure: Any = None
    offset: Any = None

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any], caller: str = "fme.fme") -> "FMEOptions":
        """The record of ``kwargs``; a ParameterError names a key :func:`fme.fme` does not take."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise ParameterError(f"{caller}() got unknown keyword argument(s) {unknown}; the keywords passed on to "
                                 f"fme.fme are {sorted(names)}.")
        return cls(**kwargs)

    def replace(self, **changes: Any) -> "FMEOptions":
        return dataclasses.replace(self, **changes)

    def plan_kwargs(self) -> dict[str, Any]:
        """The arguments of :func:`resolve_plan` (all but ``reference_data``, ``sample_size``, ``progress`` and
        the ``exposure``/``offset`` the engines add to the data before planning)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name not in ("reference_data", "sample_size", "progress", "exposure", "offset")}


@dataclass(frozen=True, eq=False)
class Plan:
    """Everything :func:`fme.fme` resolved up front; the same for every batch.

    ``detector`` is already fitted on the reference data; ``spread`` (one
    value per output) fixes the scale of the flat-path test, None to take it
    from the batch.
    """

    model: Any
    predictor: Predictor
    steps: tuple[Step, ...]
    settings: NLMSettings | None
    batch_size: int | None
    method: str
    target_class: Any = None
    bootstrap: Any = None
    detector: Any = None
    detector_cols: list[str] | None = None
    policy: str | None = None
    spread: np.ndarray | None = None
    progress: bool | None = None
    #: Model inputs whose missing values leave a row out (code 4, "incomplete"): a statsmodels formula
    #: model's right-hand-side columns, as its fit leaves incomplete rows out (Stata's e(sample)).
    complete_cols: tuple = ()
    #: ((column, its levels as the fitted model states them), ...): a row at another level of such a column is
    #: left out (code 5, "unknown_level"); the model cannot represent it (most encoders predict it silently
    #: as "unknown").
    known_levels: tuple = ()

    @property
    def rule(self) -> QuadratureRule | None:
        return None if self.settings is None else self.settings.rule

    @property
    def names(self) -> list | None:
        return self.predictor.output_names


# ----------------------------------------------------------------- helpers
def check_batch_size(batch_size: Any) -> int | None:
    if batch_size is None:
        return None
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
        raise ParameterError(f"batch_size must be a positive integer or None, got {batch_size!r}.")
    return int(batch_size)


def _detector_columns(predictor: Predictor, data: pd.DataFrame, reference: pd.DataFrame) -> list[str]:
    cols = predictor.feature_names if predictor.feature_names is not None else [c for c in data.columns]
    missing = [c for c in cols if c not in reference.columns]
    if missing:
        raise ExtrapolationError(
            f"reference_data lacks the model feature(s) {missing}; pass the training data with all of {cols}."
        )
    return list(cols)


def _complete_columns(model: Any, data: pd.DataFrame, steps: tuple[Step, ...]) -> tuple:
    """The non-stepped model inputs whose missing values leave a row out: for a statsmodels formula model the
    right-hand-side columns (its fit dropped incomplete rows; its predict would drop them silently)."""
    info = formula_info(model) if is_statsmodels_results(model) else None
    if not info:
        return ()
    stepped = {s.feature for s in steps}
    return tuple(c for c in info[0] if c in data.columns and c not in stepped)


def _known_levels(predictor: Any, data: pd.DataFrame) -> tuple:
    """The model's stated levels of the data's columns (:meth:`ModelAdapter.training_levels`)."""
    adapter = getattr(predictor, "adapter", None)
    stated = adapter.training_levels() if adapter is not None else {}
    return tuple((c, tuple(v)) for c, v in stated.items() if c in data.columns)


def resolve_plan(model: Any, data: pd.DataFrame, steps: Mapping[str, Any], reference: pd.DataFrame, *,
                 nlm: bool, nlm_method: str, nlm_points: Any, nlm_intervals: Any, nlm_tol: Any, nlm_max_level: Any,
                 nlm_flat_tol: Any, nlm_linear_threshold: Any, extrapolation: Any, on_extrapolation: Any,
                 target_class: Any, batch_size: Any, inference: str, bootstrap: Any, conf_level: Any,
                 random_state: Any = None, nlm_budget: Any = None) -> tuple[Plan, float]:
    """Validate :func:`fme`'s arguments against ``data`` (any rows with the real columns and dtypes) and
    ``reference`` (rules, detector columns); the :class:`Plan` with an unfitted detector."""
    conf_level = check_conf_level(conf_level)
    predictor = make_predictor(model, target_class)
    method = resolve_inference(inference, model, bootstrap, predictor.output_names is not None)
    parsed = parse_steps(data, steps, rule_data=reference)
    if predictor.adapter is not None:
        check_training_levels(parsed, predictor.adapter.training_levels())
    if predictor.feature_names is not None:
        unused = [s.feature for s in parsed if s.feature not in predictor.feature_names]
        if unused:
            raise FeatureError(
                f"feature(s) {unused} are not inputs of the model (it was fitted on {predictor.feature_names}); "
                "their fME would be 0 by construction."
            )
    settings = None
    if nlm:
        categorical = [s.feature for s in parsed if not s.is_numeric]
        if categorical:
            raise StepError(
                f"the NLM is defined along a numeric path only; feature(s) {categorical} have categorical steps. "
                "Use nlm=False for categorical or mixed steps."
            )
        columns = list(predictor.select(data.iloc[:0]).columns)
        settings = resolve_method(None if isinstance(model, Predictor) else model, nlm_method, nlm_points,
                                  nlm_intervals, parsed, columns, nlm_tol, nlm_max_level, nlm_flat_tol,
                                  target_class=target_class, budget=nlm_budget)
    elif any(v is not None for v in (nlm_points, nlm_intervals, nlm_tol, nlm_max_level, nlm_flat_tol, nlm_budget)):
        raise ParameterError("nlm_points/nlm_intervals/nlm_tol/nlm_max_level/nlm_budget/nlm_flat_tol were given but "
                             "nlm=False; pass nlm=True.")
    if isinstance(nlm_linear_threshold, bool) or not isinstance(nlm_linear_threshold, numbers.Real) \
            or not np.isfinite(nlm_linear_threshold) or nlm_linear_threshold > 1:
        raise ParameterError(f"nlm_linear_threshold must be a finite number <= 1, got {nlm_linear_threshold!r}.")
    batch_size = check_batch_size(batch_size)
    if on_extrapolation is not None and on_extrapolation not in ON_EXTRAPOLATION:
        raise ParameterError(f"on_extrapolation must be one of {ON_EXTRAPOLATION}, got {on_extrapolation!r}.")
    if on_extrapolation is not None and extrapolation is None:
        raise ParameterError("on_extrapolation was given without a detector; pass extrapolation='envelope' (or another).")
    policy = None if extrapolation is None else (on_extrapolation or "exclude")
    if policy == "shrink" and any(not s.is_numeric for s in parsed):
        raise StepError(
            "on_extrapolation='shrink' is not defined for categorical steps (a level cannot be shrunk); "
            "use 'exclude' or 'keep'."
        )
    detector = cols = None
    if extrapolation is not None:
        detector = make_detector(extrapolation, random_state)
        cols = _detector_columns(predictor, data, reference)
    plan = Plan(model=model, predictor=predictor, steps=parsed, settings=settings, batch_size=batch_size,
                method=method, target_class=target_class, bootstrap=bootstrap, detector=detector,
                detector_cols=cols, policy=policy, complete_cols=_complete_columns(model, data, parsed),
                known_levels=_known_levels(predictor, data))
    return plan, conf_level
