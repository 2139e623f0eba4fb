"""The in-memory (pandas) engine of :func:`fme.fme`: fit the plan's detector, evaluate every row, build
the :class:`~fme._core.results.FMEResult`. The Dask engine's counterpart is :mod:`fme._dask.effects`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from .._adapters import model_frame
from .._core.exclusions import check_evaluated
from .._core.kernel import Batch, evaluate_batch, evaluation_points
from .._core.plan import FMEOptions, Plan, resolve_plan
from .._core.results import FMEResult
from ..extrapolation.guards import call_detector, detector_name
from .._utils.validation import check_data
from ..exceptions import ParameterError

__all__ = ["fme", "points", "evaluate_frame", "result"]


def fme(model: Any, data: pd.DataFrame, steps: Any, options: FMEOptions) -> FMEResult:
    """:func:`fme.fme` on a pandas frame: validate into a plan (once; the workers trust it), evaluate, check
    that a row was evaluated, assemble the result."""
    data, reference, plan, conf_level = _planned(model, data, steps, options)
    batch = evaluate_frame(replace(plan, progress=options.progress), data, reference)
    check_evaluated(plan, batch.code, lambda: reference)
    return result(plan, batch, data, float(options.nlm_linear_threshold), conf_level)


def _planned(model: Any, data: Any, steps: Any, options: FMEOptions) -> tuple[pd.DataFrame, pd.DataFrame, Plan, float]:
    """The model's frame of ``data``, the reference rows, the validated plan and the confidence level."""
    # another data frame (polars, Arrow) converted once; C(x) of a statsmodels formula: x is categorical;
    # exposure=/offset= become the model's offset columns
    data = model_frame(model, check_data(data), exposure=options.exposure, offset=options.offset)
    reference_data = options.reference_data
    if reference_data is not None:
        reference_data = model_frame(model, check_data(reference_data, "reference_data"))
    reference = data if reference_data is None else reference_data
    plan, conf_level = resolve_plan(model, data, steps, reference, **options.plan_kwargs())
    if options.sample_size is not None:
        raise ParameterError("sample_size applies to Dask data only (the sample the detectors are fitted on); "
                             "a pandas frame is used whole.")
    return data, reference, plan, conf_level


def points(model: Any, data: pd.DataFrame, steps: Any, options: FMEOptions) -> tuple:
    """The points :func:`fme.fme` would evaluate on a pandas frame, without predicting them (the same
    validation, detector and exclusions as :func:`fme`): (x, x + h, the evaluated rows of the model's
    frame, the steps' description)."""
    data, reference, plan, _ = _planned(model, data, steps, options)
    if plan.detector is not None:
        call_detector(plan.detector, "fit", reference[plan.detector_cols], "fit(reference_data)")
    cand, X0, X1, code = evaluation_points(plan, data)
    check_evaluated(plan, code, lambda: reference)
    return X0, X1, data.iloc[cand], ", ".join(s.describe() for s in plan.steps)


def evaluate_frame(plan: Plan, data: pd.DataFrame, reference: pd.DataFrame) -> Batch:
    """Fit ``plan``'s detector on ``reference`` and evaluate every row of ``data`` at once (the kernel
    batches the predictions inside): exclusions, fMEs, NLMs and inference ingredients."""
    if plan.detector is not None:
        call_detector(plan.detector, "fit", reference[plan.detector_cols], "fit(reference_data)")
    return evaluate_batch(plan, data)


def result(plan: Plan, batch: Batch, data: pd.DataFrame, threshold: float, conf_level: float) -> FMEResult:
    """The :class:`FMEResult` of an evaluated ``batch`` with at least one evaluated row."""
    settings, names, predictor = plan.settings, plan.names, plan.predictor
    detector_name_ = None
    if plan.detector is not None:
        detector_name_ = detector_name(plan.detector)
    return FMEResult(
        results=batch.results,
        steps=plan.steps,
        excluded=batch.excluded,
        data=data,
        predictions=batch.predictions,
        model_description=predictor.description,
        output_names=None if names is None else tuple(names),
        nlm_method=None if settings is None else settings.method,
        nlm_nodes=None if settings is None else settings.nodes,
        nlm_tol=None if settings is None or settings.method != "gauss-kronrod" else settings.tol,
        nlm_linear_threshold=threshold,
        detector=detector_name_,
        on_extrapolation=plan.policy,
        model_features=None if predictor.feature_names is None else tuple(predictor.feature_names),
        inference_rows=batch.rows,
        conf_level=conf_level,
        positions=batch.cand,
        scale=None if predictor.adapter is None else predictor.adapter.scale_note(data.columns),
    )
