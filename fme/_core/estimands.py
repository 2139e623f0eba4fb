"""The per-row quantities the averaging verbs average, for both engines (the *estimands*).

Each function below gives, for a piece of data (the whole frame in memory, one chunk on Dask), the per-row
values of one verb under the fitted model (``refit`` None; with their Jacobians in the model's parameters for
the delta method) or under a refitted one (the bootstrap), in the form of
:class:`fme._core.averages.RowQuantity`: ``(values (n, c), jacobian (n, c, k) or None, vcov or None)``.

* :func:`level_values`: the prediction f(x) (``predictions``, ``avg_predictions``);
* :func:`slope_values`: the derivative of f in a variable by a central difference and its elasticities
  (``avg_slopes``; the paper's §4.1 contrasts it with the forward difference);
* :func:`comparison_values`: f(x + h) compared with f(x) on another scale than the difference
  (``avg_comparisons``; the difference is the paper's fME, §3.2), per row or through the averages
  (:func:`finish_averages`).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pandas as pd

from .._adapters import adapt
from .._adapters.predictor import make_predictor
from ..exceptions import ParameterError
from ..inference.delta import evaluate_with_jacobian
from ..inference.methods import compute_rows

__all__ = [
    "comparison_form",
    "level_rows",
    "level_values",
    "slope_values",
    "difference_points",
    "SLOPES",
    "comparison_scale",
    "comparison_values",
    "finish_averages",
    "ROW_COMPARISONS",
    "COMPARISONS",
]

#: Slope types of ``avg_slopes``: the derivative and its elasticities.
SLOPES = ("dydx", "eyex", "eydx", "dyex")
#: Comparison scales per row; their ``...avg`` forms apply the scale to the averages.
ROW_COMPARISONS = ("difference", "ratio", "lnratio", "lnor", "lift")
#: The scale applied to the averages of f(x + h) and f(x) (marginaleffects' avg_comparisons; ``...avg`` says it
#: explicitly), and the average of the rows' values on that scale (``..._rows``; for the difference both agree).
COMPARISONS = (
    ROW_COMPARISONS + tuple(f"{c}avg" for c in ROW_COMPARISONS) + tuple(f"{c}_rows" for c in ROW_COMPARISONS[1:])
)


def comparison_form(comparison: str) -> tuple[str, bool]:
    """(the scale, whether it applies to the averages) of a name of :data:`COMPARISONS`: ``ratio`` and
    ``ratioavg`` the ratio of the averages, as marginaleffects' ``avg_comparisons``; ``ratio_rows`` the average
    of the rows' ratios; the difference is the average of the rows' differences either way."""
    if comparison.endswith("_rows"):
        return comparison[:-5], False
    kind = comparison[:-3] if comparison.endswith("avg") else comparison
    return kind, kind != "difference"


def level_rows(model: Any, X: pd.DataFrame, target_class: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """f(X), the n x k Jacobian of f(X) in the model's parameters and their k x k covariance (delta method)."""
    return adapt(model, target_class).level_jacobian(X)


def level_values(
    piece: pd.DataFrame, refit: Any, method: str, *, model: Any, predictor: Any, target_class: Any
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Per-row f(x) of the fitted model (``refit`` None, with its Jacobian for ``delta``) or of a refitted one,
    on a piece of the model's frame."""
    X = predictor.select(piece)
    if refit is None and method == "delta":
        f, jac, V = level_rows(model, X, target_class)
        return f[:, None], jac[:, None, :], V
    p = predictor if refit is None else make_predictor(refit, target_class)
    return p(X, stage="f(x)")[:, None], None, None


def difference_points(
    x: np.ndarray, half: float, bound: tuple[float, float] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The points x - half and x + half of a central difference, each kept within ``bound`` (the closed range
    outside which the model cannot predict: a formula's B-spline knots, ``ModelAdapter.input_bounds``), and
    the width to divide by (2 half exactly where no point moved, as marginaleffects divides by its eps).

    A row within ``half`` of a bound gets a one-sided difference over what remains of the interval (its error
    O(half) instead of O(half^2), with half 1e-4 of the range by default); a row outside the range keeps its
    points, so that the prediction names it."""
    down, up = x - half, x + half
    width = np.full(np.shape(x), 2.0 * half)
    if bound is None:
        return down, up, width
    lo, hi = bound
    inside = (x >= lo) & (x <= hi)
    moved = inside & ((down < lo) | (up > hi))
    down = np.where(moved, np.maximum(down, lo), down)
    up = np.where(moved, np.minimum(up, hi), up)
    return down, up, np.where(moved, up - down, width)


def slope_values(
    piece: pd.DataFrame,
    refit: Any,
    method: str,
    *,
    model: Any,
    predictor: Any,
    variables: tuple[Any, ...],
    steps: tuple[float, ...],
    slope: str,
    target_class: Any,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Per-row slopes of each variable (one column each) on a piece of the model's frame: the central difference
    dydx = (f(x + eps/2) - f(x - eps/2)) / eps (one-sided within eps/2 of a bound of the model's inputs,
    :func:`difference_points`), transformed to ``eyex`` = dydx x / y, ``eydx`` = dydx / y or
    ``dyex`` = dydx x; under the fitted model (``refit`` None; with their Jacobians for ``delta``) or a refitted
    one."""
    X = predictor.select(piece)
    p = predictor if refit is None else make_predictor(refit, target_class)
    delta = refit is None and method == "delta"
    n = len(X)
    f = f0 = jf = vcov = None
    if slope in ("eyex", "eydx"):
        if delta:  # f(x) and its Jacobian from one design matrix
            f0, jf, vcov = level_rows(model, X, target_class)
            f = f0
        else:
            f = p(X, stage="f(x)")
    values, jacs = [], []
    # a column the model cannot be evaluated beyond (a B-spline's knots): the rows at its ends differ one-sidedly
    bounds = {} if p.adapter is None else p.adapter.input_bounds()
    for v, step in zip(variables, steps):
        x = piece[v].to_numpy(dtype=float)
        lo, hi = X.copy(deep=False), X.copy(deep=False)
        down, up, width = difference_points(x, step / 2, bounds.get(str(v)))
        # set by item, not assign(**): a column label need not be a string
        lo[v], hi[v] = down, up
        # statsmodels GLM-type models: both predictions and the difference's Jacobian from one design matrix
        # per point set (no separate predict); other models predict, then differentiate
        fast = evaluate_with_jacobian(model, lo, hi) if delta else None
        if fast is None:
            both = p(pd.concat([lo, hi], ignore_index=True), stage=f"f(x -+ eps/2) of {v}")
            s = (both[n:] - both[:n]) / width
        else:
            s = (fast[1] - fast[0]) / width
        values.append(
            {
                "dydx": s,
                "dyex": s * x,
                "eydx": s / f if f is not None else None,
                "eyex": s * x / f if f is not None else None,
            }[slope]
        )
        if not delta:
            continue
        d = (
            fast[2]
            if fast is not None
            else compute_rows("delta", model, [(lo, hi)], [s * width], target_class=target_class)[0]
        )
        js, vcov = cast(np.ndarray, d.jacobian) / width[:, None], d.vcov
        if slope in ("eyex", "eydx"):
            # d (s / f) = ds / f - s / f^2 df, with f's own Jacobian
            js = js / cast(np.ndarray, f0)[:, None] - (s / cast(np.ndarray, f0) ** 2)[:, None] * jf
        jacs.append(js * x[:, None] if slope in ("eyex", "dyex") else js)
    return np.column_stack(values), np.stack(jacs, axis=1) if delta else None, vcov


def comparison_scale(kind: str, f1: np.ndarray, f0: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The comparison ``kind`` of f1 = f(x + h) with f0 = f(x) and its partial derivatives in f1 and f0."""
    with np.errstate(all="ignore"):
        if kind == "difference":
            return f1 - f0, np.ones_like(f1), -np.ones_like(f0)
        if kind == "ratio":
            return f1 / f0, 1 / f0, -f1 / f0**2
        if kind == "lnratio":
            return np.log(f1 / f0), 1 / f1, -1 / f0
        if kind == "lnor":
            return (np.log(f1 / (1 - f1)) - np.log(f0 / (1 - f0)), 1 / (f1 * (1 - f1)), -1 / (f0 * (1 - f0)))
        return (f1 - f0) / f0, 1 / f0, -f1 / f0**2  # lift


def comparison_values(
    piece: tuple[Any, ...], refit: Any, method: str, *, model: Any, kind: str, averaged: bool, target_class: Any
) -> tuple[np.ndarray, np.ndarray | list[np.ndarray] | None, np.ndarray | None]:
    """Per-row values of the comparison on the evaluated rows ``piece = (X0, X1, f(X0), f(X1))`` (the
    predictions None: not made yet): the per-row scale (one column), or f(x + h) and f(x) (two columns, their
    Jacobians as a list) for the ``...avg`` forms; under the fitted model (``refit`` None: with the level
    Jacobians for ``delta``) or a refitted one."""
    X0, X1, f0, f1 = piece
    j0 = j1 = V = None
    if refit is None and method == "delta":
        f0, j0, V = level_rows(model, X0, target_class)
        f1, j1, _ = level_rows(model, X1, target_class)
    elif refit is not None or f0 is None:
        # a refit, or the fitted model's points not predicted yet (the Dask kernel hands its predictions)
        m = model if refit is None else refit
        both = make_predictor(m, target_class)(pd.concat([X0, X1], ignore_index=True), "f(x), f(x + h)")
        f0, f1 = both[: len(X0)], both[len(X0) :]
    if kind == "lnor" and (np.any((f0 <= 0) | (f0 >= 1)) or np.any((f1 <= 0) | (f1 >= 1))):
        raise ParameterError("comparison='lnor' needs predicted probabilities strictly between 0 and 1.")
    if averaged:
        return np.column_stack([f1, f0]), None if j0 is None else [cast(np.ndarray, j1), j0], V
    c, d1, d0 = comparison_scale(kind, f1, f0)
    jac = None if j0 is None else (d1[:, None] * j1 + d0[:, None] * j0)[:, None, :]
    return c[:, None], jac, V


def finish_averages(
    means: np.ndarray, mean_jacobian: np.ndarray | None, *, kind: str
) -> tuple[np.ndarray, np.ndarray | None]:
    """The ``...avg`` forms: the scale applied to the groups' means of f(x + h) and f(x) (columns 0 and 1), its
    gradient by the chain rule through the mean Jacobians."""
    value, d1, d0 = comparison_scale(kind, means[:, 0], means[:, 1])
    if mean_jacobian is None:
        return value, None
    return value, d1[:, None] * mean_jacobian[:, 0, :] + d0[:, None] * mean_jacobian[:, 1, :]
