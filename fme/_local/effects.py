"""The in-memory (pandas) engine of :func:`fme.fme`: fit the plan's detector, evaluate every row, build
the :class:`~fme._core.results.FMEResult`. The Dask engine's counterpart is :mod:`fme._dask.effects`.

The front door validated the data and resolved the plan without steps (:func:`fme._core.plan.front_plan`);
:func:`evaluate` derives each step specification's plan from it (:meth:`~fme._core.plan.Plan.with_steps`),
so a caller with several (the rows of an :func:`fme.ame` table) validates the data once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._core.exclusions import check_evaluated
from .._core.kernel import Batch, evaluate_batch, evaluation_points
from .._core.plan import Plan
from .._core.results import FMEResult
from ..extrapolation.guards import call_detector, detector_name

__all__ = ["fme", "fit_detector", "evaluate", "points", "result"]


def fme(plan: Plan, data: pd.DataFrame, reference: pd.DataFrame, steps: Any) -> FMEResult:
    """:func:`fme.fme` on the model's frame ``data`` (``reference``: the rows the detector is fitted on and step
    rules are computed from), with ``plan`` resolved by the front door: fit the detector, evaluate, check that a
    row was evaluated, assemble the result."""
    return evaluate(fit_detector(plan, reference), data, reference, steps)


def fit_detector(plan: Plan, reference: pd.DataFrame) -> Plan:
    """``plan`` with its detector fitted on ``reference`` (once for every step specification of a call)."""
    if plan.detector is not None:
        call_detector(plan.detector, "fit", reference[plan.detector_cols], "fit(reference_data)")
    return plan


def evaluate(plan: Plan, data: pd.DataFrame, reference: pd.DataFrame, steps: Any) -> FMEResult:
    """The :class:`FMEResult` of the step specification ``steps`` under ``plan`` (its detector fitted,
    :func:`fit_detector`): every row of ``data`` at once (the kernel batches the predictions inside)."""
    stepped = plan.with_steps(data, steps, reference)
    batch = evaluate_batch(stepped, data, with_excluded=True)
    if not batch.cand.size:  # some row evaluated: nothing to count
        check_evaluated(stepped, batch.code, lambda: reference)
    return result(stepped, batch, data)


def points(
    plan: Plan, data: pd.DataFrame, reference: pd.DataFrame, steps: Any
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, str, np.ndarray]:
    """The points :func:`fme.fme` would evaluate on a pandas frame, without predicting them (the same
    detector and exclusions as :func:`fme`): (x, x + h, the evaluated rows of the model's frame, the steps'
    description, the evaluated rows' positions in ``data``)."""
    stepped = fit_detector(plan, reference).with_steps(data, steps, reference)
    cand, X0, X1, code = evaluation_points(stepped, data)
    check_evaluated(stepped, code, lambda: reference)
    return X0, X1, data.iloc[cand], ", ".join(s.describe() for s in stepped.steps), cand


def result(plan: Plan, batch: Batch, data: pd.DataFrame) -> FMEResult:
    """The :class:`FMEResult` of an evaluated ``batch`` with at least one evaluated row."""
    settings, names, predictor = plan.settings, plan.names, plan.predictor
    return FMEResult(
        results=batch.results,
        steps=plan.steps,
        excluded=batch.excluded,
        data=data,
        predictions=batch.predictions,
        model_description=predictor.description,
        explained_class=predictor.explained_class,
        output_names=None if names is None else tuple(names),
        nlm_method=None if settings is None else settings.method,
        nlm_nodes=None if settings is None else settings.nodes,
        nlm_tol=None if settings is None or settings.method != "gauss-kronrod" else settings.tol,
        nlm_linear_threshold=float(plan.options.nlm_linear_threshold),
        detector=None if plan.detector is None else detector_name(plan.detector),
        on_extrapolation=plan.policy,
        model_features=None if predictor.feature_names is None else tuple(predictor.feature_names),
        inference_rows=batch.rows,
        conf_level=plan.conf_level,
        positions=batch.cand,
        scale=None if predictor.adapter is None else predictor.adapter.scale_note(data.columns),
    )
