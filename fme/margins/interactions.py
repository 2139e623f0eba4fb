"""Interactions of two steps: the per-row second difference of the prediction .

For steps ``a`` and ``b`` (each one or several features, numeric or categorical, as in :func:`fme.fme`)

    I(x) = f(x + h_a + h_b) - f(x + h_a) - f(x + h_b) + f(x) = fME_b(x + h_a) - fME_b(x),

the change of b's forward marginal effect (paper §3.2) when a moves too: zero for every row of a model
additive in the two, so it is the finite-difference analogue of a cross partial. Its average over the
rows gets the uncertainty of :mod:`fme.inference` (delta: the difference of the two fMEs' Jacobian rows;
bootstrap: the same refits for both fMEs; sample: the spread over the rows with the model held fixed),
and ``share_above_tol`` says how many rows interact by more than ``tol``. Four point sets are predicted
in one batched call; no row is predicted on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .._adapters import model_frame
from .._adapters.predictor import make_predictor
from .._dask import interactions as dask_interactions
from .._local import interactions as local_interactions
from .._utils.validation import check_conf_level, check_data, is_dask_collection
from ..exceptions import ParameterError, StepError
from ..extrapolation import make_detector
from ..inference.estimates import INFERENCE_COLUMNS
from ..inference.methods import resolve_method
from ..inference.table import EstimatesTable
from ..steps import parse_steps

__all__ = ["interaction", "InteractionTable"]


class InteractionTable(EstimatesTable):
    """:func:`interaction`'s table: an :class:`~fme.EstimatesTable` (printed, indexed and tested with
    :func:`fme.hypotheses` alike) with the per-row interactions as a typed attribute.

    Attributes
    ----------
    per_row : Series or None
        I(x) of every row that entered the average, indexed like ``data`` (None on Dask data, where the rows
        stay in their chunks); not ``values``, the DataFrame's own array. It rides along where the table's
        joint covariance does (copy, column and row selection, sorting, ``reset_index``, pickling,
        ``pd.concat`` of pieces of the table); a frame computed anew (``merge`` with another frame,
        ``pd.concat`` of different tables, ``pd.DataFrame(t)``) has none (None).
    """

    _metadata = [*EstimatesTable._metadata, "per_row"]
    per_row: pd.Series | None = None

    @property
    def _constructor(self) -> type[InteractionTable]:
        return InteractionTable


def _has_rules(*specs: Mapping[str, Any]) -> bool:
    """Whether a step is a rule such as 'sd' (resolved from the reference rows, here the first rows)."""
    return any(isinstance(v, str) for spec in specs for v in dict(spec).values())


def interaction(
    model: Any,
    data: pd.DataFrame,
    steps_a: Mapping[str, Any],
    steps_b: Mapping[str, Any],
    *,
    inference: str = "auto",
    bootstrap: Mapping[str, Any] | None = None,
    conf_level: float = 0.95,
    tol: float | None = None,
    target_class: Any = None,
    extrapolation: Any = None,
    reference_data: pd.DataFrame | None = None,
    random_state: Any = None,
) -> InteractionTable:
    """The average interaction of two steps, with its uncertainty (see the module docstring).

    Parameters
    ----------
    model, data, target_class, inference, bootstrap, conf_level, extrapolation, reference_data, random_state :
        As in :func:`fme.fme`. With a detector, a row is left out when any of x, x + h_a, x + h_b and
        x + h_a + h_b is an extrapolation point.
    steps_a, steps_b : dict
        Two step specifications on disjoint features.
    tol : float, optional
        Rows with |I(x)| > ``tol`` count in ``share_above_tol`` (default: 1e-8 times the largest |f|).

    Returns
    -------
    InteractionTable
        One row: ``steps_a``, ``steps_b``, ``estimate`` (the average interaction), ``std_error``,
        ``statistic``, ``p_value``, ``conf_low``, ``conf_high``, ``inference``, ``sd``, ``n``,
        ``n_excluded``, ``tol``, ``share_above_tol``. ``per_row`` (:attr:`InteractionTable.per_row`): the
        per-row interactions (indexed like ``data``; None on Dask data); the table works with
        :func:`fme.hypotheses` (e.g. ``equivalence=``).
    """
    on_dask = is_dask_collection(data)
    frame = data if on_dask else model_frame(model, check_data(data))
    conf_level = check_conf_level(conf_level)
    predictor = make_predictor(model, target_class)
    if predictor.output_names is not None:
        raise ParameterError("fme.interaction works on one output; pass one class (target_class=<label>).")
    method = resolve_method(inference, model, bootstrap)
    if tol is not None and (isinstance(tol, bool) or not np.isfinite(tol) or tol < 0):
        raise ParameterError(f"tol must be a non-negative number, got {tol!r}.")
    detector = reference = None
    if on_dask:
        if method == "bootstrap" or extrapolation is not None:
            raise ParameterError(
                "fme.interaction on Dask data takes inference='delta' or 'sample' without a "
                "detector; compute bootstrap or extrapolation checks on a pandas sample."
            )
        if _has_rules(steps_a, steps_b):
            raise ParameterError(
                "step rules such as 'sd' need all rows; on Dask data give numeric steps (e.g. the "
                "SD computed with data[feature].std().compute()) or levels."
            )
        probe = model_frame(model, data.head(1000, npartitions=min(data.npartitions, 8)))
        sa, sb = parse_steps(probe, steps_a), parse_steps(probe, steps_b)
    else:
        reference = (
            frame if reference_data is None else model_frame(model, check_data(reference_data, "reference_data"))
        )
        sa = parse_steps(frame, steps_a, rule_data=reference)
        sb = parse_steps(frame, steps_b, rule_data=reference)
        detector = None if extrapolation is None else make_detector(extrapolation, random_state)
    shared = sorted({s.feature for s in sa} & {s.feature for s in sb})
    if shared:
        raise StepError(
            f"steps_a and steps_b share the feature(s) {shared}; an interaction needs two steps on different features."
        )
    engine = dask_interactions if on_dask else local_interactions
    got = engine.interaction(
        model,
        frame,
        tuple(sa),
        tuple(sb),
        method=method,
        conf_level=conf_level,
        tol=tol,
        target_class=target_class,
        bootstrap=bootstrap,
        detector=detector,
        reference=reference,
    )
    t = got["table"]
    out = pd.DataFrame(
        [
            {
                "steps_a": ", ".join(s.describe() for s in sa),
                "steps_b": ", ".join(s.describe() for s in sb),
                "estimate": got["estimate"],
                **{c: t[c] for c in INFERENCE_COLUMNS},
                "sd": got["sd"],
                "n": got["n"],
                "n_excluded": got["n_rows"] - got["n"],
                "tol": got["tol"],
                "share_above_tol": got["share_above_tol"],
            }
        ]
    )
    out = InteractionTable.from_frame(out, got["estimates"], conf_level=conf_level)
    out.per_row = got["values"]
    return out
