"""The margins vocabulary in memory: averages of per-row quantities per ``by`` group, the comparisons on the rows
:func:`fme.fme` evaluates, and the per-row prediction table (the Dask mirror: :mod:`fme._dask.vocab`).

The quantities are the :mod:`fme._core.estimands`; the groups follow :mod:`fme._core.groups`; the estimates come
from the rows' sums (:class:`~fme._core.summary.RowSums`, :func:`fme._core.averages.estimates_of`), so both
engines give the same numbers up to rounding.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pandas as pd

from .._core.averages import (
    RowQuantity,
    bootstrap_of,
    draws_of_means,
    estimates_of,
    model_values,
    prediction_table,
    refit_draws,
    spread_values,
    unconditional_of,
)
from .._core.groups import frame_groups
from .._core.plan import Plan
from .._core.summary import RowSums
from ..inference.bootstrap import check_bootstrap
from ..inference.estimates import Estimates
from .effects import points

__all__ = ["average", "comparisons", "predictions", "row_comparisons"]


def _average_rows(
    quantity: RowQuantity,
    piece: Any,
    model: Any,
    method: str,
    codes: np.ndarray,
    n_groups: int,
    weights: np.ndarray | None,
    bootstrap: Any,
    rows: tuple[np.ndarray, int] | None = None,
) -> Estimates:
    """The groups' estimates of ``quantity`` over the rows of ``piece`` (codes: the rows' groups), under
    ``method`` ('delta', 'bootstrap' with the specification ``bootstrap``, or 'sample'); ``rows``: the rows'
    positions in the model's frame and its length (for ``vcov='unconditional'``)."""
    # None: the fitted model the quantity was built with
    values, jac, vcov = quantity.rows(piece, None, "delta" if method == "delta" else "sample")
    # the spread over the rows only for the fixed-model interval
    if method == "sample":
        values = spread_values(quantity, values)
    sums = RowSums.of(values, jac, codes, n_groups, weights, vcov, spread=method == "sample")
    if method != "bootstrap":
        est = estimates_of(quantity, sums, method)
        if method == "delta" and quantity.unconditional is not None:
            positions, n_rows = rows if rows is not None else (np.arange(len(codes)), len(codes))
            est = unconditional_of(quantity, est, values, sums.means, codes, weights, positions, n_rows)
        return est
    spec = check_bootstrap(bootstrap, model)
    errors: list[str] = []

    def evaluate(models: list[Any]) -> np.ndarray:
        many = model_values(quantity, piece, models, errors)
        return draws_of_means(
            quantity, RowSums.of(many, None, codes, n_groups, weights, spread=False).means, len(models)
        )

    estimate = quantity.of_means(sums.means, None)[0]
    draws, info = refit_draws(model, spec, evaluate, np.isfinite(estimate), errors)
    return bootstrap_of(estimate, draws, info)


def _weights(data: pd.DataFrame, weights: Any) -> np.ndarray | None:
    """The rows' weights (checked by the front door): a column of ``data`` or one value per row."""
    if weights is None:
        return None
    if isinstance(weights, np.ndarray):
        return weights
    return cast(np.ndarray, data[weights].to_numpy(dtype=float))


def average(
    model: Any,
    data: pd.DataFrame,
    quantity: RowQuantity,
    method: str,
    by: list[Any],
    bootstrap: Any,
    weights: Any = None,
) -> tuple[Estimates, np.ndarray, pd.DataFrame]:
    """The ``by`` groups' estimates of ``quantity`` over the rows of the model's frame ``data``, the groups'
    row counts and their keys (``weights``: a column of ``data`` or an array of one weight per row)."""
    codes, groups = frame_groups(data, by)
    est = _average_rows(quantity, data, model, method, codes, groups.n_groups, _weights(data, weights), bootstrap)
    return est, np.bincount(codes[codes >= 0], minlength=groups.n_groups), groups.keys


def comparisons(
    plan: Plan,
    data: pd.DataFrame,
    reference: pd.DataFrame,
    steps: Any,
    quantity: RowQuantity,
    method: str,
    by: list[Any],
    bootstrap: Any,
    weights: Any = None,
) -> tuple[Estimates, np.ndarray, pd.DataFrame, str]:
    """The ``by`` groups' comparisons on the rows :func:`fme.fme` evaluates (its exclusions and extrapolation
    policy; ``plan`` resolved by the front door on ``data`` and ``reference``), their row counts, keys and the
    steps' description (``weights``: a column of ``data`` or one weight per row of ``data``, checked)."""
    model = plan.model
    # the rows and points fme.fme evaluates, not predicted yet: each method predicts them once, its own way
    X0, X1, rows, described, cand = points(plan, data, reference, steps)
    codes, groups = frame_groups(rows, by)
    w = _weights(data, weights)
    where = None
    if quantity.unconditional is not None:
        # the evaluated rows' places in the frame pair each row's deviation with its share of the parameters
        where = (np.asarray(data.index.get_indexer(rows.index)), len(data))
    est = _average_rows(
        quantity,
        (X0, X1, None, None),
        model,
        method,
        codes,
        groups.n_groups,
        None if w is None else w[cand],
        bootstrap,
        where,
    )
    return est, np.bincount(codes, minlength=groups.n_groups), groups.keys, described


def predictions(
    model: Any, data: pd.DataFrame, quantity: RowQuantity, method: str, bootstrap: Any, label: str, conf_level: float
) -> pd.DataFrame:
    """The prediction of every row of the model's frame ``data`` with its uncertainty, indexed like ``data``."""
    return prediction_table(data, method, quantity, model, bootstrap, label, conf_level)


def row_comparisons(
    plan: Plan,
    data: pd.DataFrame,
    reference: pd.DataFrame,
    steps: Any,
    quantity: RowQuantity,
    method: str,
    bootstrap: Any,
    label: str,
    conf_level: float,
) -> tuple[pd.DataFrame, str]:
    """The comparison of every row :func:`fme.fme` evaluates (its exclusions and extrapolation policy) with its
    uncertainty, indexed like those rows of ``data``, and the steps' description: the per-row values
    :func:`comparisons` averages."""
    X0, X1, rows, described, _ = points(plan, data, reference, steps)
    table = prediction_table(
        (X0, X1, None, None), method, quantity, plan.model, bootstrap, label, conf_level, index=rows.index
    )
    return table, described
