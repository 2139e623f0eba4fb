"""Exact NLM for tree ensembles (paper §5.4).

Along the path gamma(t) = x + t h a tree ensemble is piecewise constant in t:
it changes only where a stepped feature crosses one of its split thresholds,
at t = (threshold - x_j) / h_j. Between consecutive such breakpoints
a_k < b_k the prediction is a constant c_k, so with d_k = c_k - f(x),
F = fME, width w_k = b_k - a_k and midpoint m_k = (a_k + b_k) / 2:

    int_0^1 f dt - f(x)          = sum_k w_k d_k                        (= mean)
    int_0^1 (f - g)^2 dt         = sum_k w_k (d_k - m_k F)^2 + F^2 w_k^3 / 12
    int_0^1 (f - fbar)^2 dt      = sum_k w_k (d_k - mean)^2

with the secant g(t) = f(x) + t F: no discretisation error. The candidate
breakpoints are the union of the split thresholds of every stepped feature
over all trees (read by the model's adapter, :mod:`fme._adapters`); segments that do not
change the prediction cost an evaluation but do not change the result. The
segment values are the model's own predictions at the segment midpoints,
made in stacked batches (rows x segments), so link functions (probabilities
of boosted classifiers) and pipelines need no special handling.

scikit-learn trees compare float32(v) <= threshold and XGBoost float32(v) <
split_condition: their breakpoints are the float64 boundaries of those sets
(:func:`float32_boundary`); XGBoost's segment values are its own float32 predictions.

:mod:`fme._nlm.tree_paths` computes the same segments for most tree models by
traversing their trees instead (only breakpoints a row's path reaches), XGBoost
regressors and binary classifiers included (with XGBoost's own float32 sums and
link: the same NLMs as this route's to rounding). This
module's midpoint route serves the others: pipelines, categorical splits
(HistGradientBoosting, LightGBM, XGBoost), XGBoost's multi-class, multi-output
and ``dart`` models.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .._adapters import adapt
from .._adapters.base import Unsupported
from .._adapters.forest import float32_boundary
from .._utils.progress import progress_bar
from ..nlm import CONSTANT_ULPS

__all__ = ["tree_thresholds", "exact_nlm", "exact_support", "float32_boundary", "Unsupported"]

#: Cells (segments x columns) of one stacked frame of midpoints.
_CELL_BUDGET = 20_000_000


def tree_thresholds(model: Any, features: list[str], columns: list[str]) -> dict[str, np.ndarray]:
    """Sorted distinct split thresholds of each stepped feature, in the input space of ``model``.

    The thresholds are read by the model's adapter (:meth:`fme._adapters.ModelAdapter.split_thresholds`:
    scikit-learn trees and Pipelines ending in one, LightGBM, XGBoost).

    Parameters
    ----------
    model : supported tree model or Pipeline ending in one
    features : list of str
        The stepped features.
    columns : list of str
        The columns passed to the model, in order.

    Raises
    ------
    Unsupported
        With the reason, when the model's path is not known to be piecewise constant.
    """
    raw = adapt(model).split_thresholds(features, columns)
    out = {}
    for f, t in raw.items():
        if np.isnan(t).any():
            raise Unsupported(f"{type(model).__name__} has categorical splits on the stepped feature {f!r}")
        out[f] = np.unique(t)
    return out


def exact_support(model: Any, features: list[str], columns: list[str]) -> tuple[dict[str, np.ndarray] | None, str]:
    """Thresholds and '' when the exact NLM applies, else (None, reason)."""
    if model is None:
        return None, "a callable or Predictor"
    try:
        return tree_thresholds(model, features, columns), ""
    except Unsupported as exc:
        return None, str(exc)


def _breakpoints(x: np.ndarray, s: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, t) for every threshold strictly inside each row's path."""
    lo, hi = np.minimum(x, x + s), np.maximum(x, x + s)
    a = np.searchsorted(T, lo, side="right")
    b = np.searchsorted(T, hi, side="left")
    k = np.maximum(b - a, 0)
    rows = np.repeat(np.arange(x.size), k)
    first = np.cumsum(k) - k
    pos = a[rows] + (np.arange(rows.size) - first[rows])
    return rows, (T[pos] - x[rows]) / s[rows]


def exact_nlm(
    predictor,
    X: pd.DataFrame,
    shifts: Mapping[str, np.ndarray],
    thresholds: Mapping[str, np.ndarray],
    f0: np.ndarray,
    f1: np.ndarray,
    cell_budget: int = _CELL_BUDGET,
    progress: bool | None = False,
    return_scale: bool = False,
) -> tuple[np.ndarray, np.ndarray, int] | tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """Exact NLMs of piecewise-constant paths (paper §5.4), all rows at once.

    Parameters
    ----------
    predictor : Predictor
        Evaluated at the segment midpoints, in stacked batches.
    X : DataFrame
        The rows (model columns).
    shifts : dict feature -> ndarray of shape (n,)
        Each row's numeric step.
    thresholds : dict feature -> sorted ndarray
        From :func:`tree_thresholds`.
    f0, f1 : ndarray of shape (n,) or (n, c)
        f(x) and f(x + h).
    cell_budget : int
        Cells (segments x columns) of one stacked prediction frame.
    progress : bool or None, default=False
        A bar over the chunks of rows when there are several
        (:func:`fme._utils.progress.progress_bar`; None: on a terminal).

    Returns
    -------
    nlm : ndarray like ``f0``; NaN where the path is constant.
    sd : ndarray like ``f0``; the SD of f along the path (sqrt of the second integral).
    n_segments : int
        Predictions made.
    scale : ndarray like ``f0``, with ``return_scale`` only
        |f(x)| + max |f - f(x)| over the path (the rounding scale of :data:`fme.nlm.FLAT_ULPS`).
    """
    n = len(X)
    xs = {f: X[f].to_numpy(dtype=float) for f in shifts}
    counts = np.zeros(n, dtype=np.int64)
    for f, s in shifts.items():
        T = thresholds[f]
        x = xs[f]
        lo, hi = np.minimum(x, x + s), np.maximum(x, x + s)
        counts += np.maximum(np.searchsorted(T, hi, side="left") - np.searchsorted(T, lo, side="right"), 0)
    per_row = counts + 1
    limit = max(1, cell_budget // max(1, X.shape[1]))
    cum = np.cumsum(per_row)
    bounds = [0]
    while bounds[-1] < n:  # row chunks of about `limit` segments (loop over batches, not rows)
        start = bounds[-1]
        base = cum[start - 1] if start else 0
        stop = int(np.searchsorted(cum, base + limit, side="right"))
        bounds.append(min(n, max(stop, start + 1)))
    nlm_parts, sd_parts, scale_parts, total = [], [], [], 0
    float_frame = all(isinstance(dt, np.dtype) and np.issubdtype(dt, np.floating) for dt in X.dtypes)
    spans = list(zip(bounds[:-1], bounds[1:]))
    for start, stop in progress_bar(
        spans, total=len(spans), desc="exact NLM (segment midpoints, chunks of rows)", progress=progress
    ):
        sl = slice(start, stop)
        m = stop - start
        rows, ts = [np.arange(m), np.arange(m)], [np.zeros(m), np.ones(m)]
        for f, s in shifts.items():
            r, t = _breakpoints(xs[f][sl], s[sl], thresholds[f])
            rows.append(r)
            ts.append(np.clip(t, 0.0, 1.0))
        rows_a, ts_a = np.concatenate(rows), np.concatenate(ts)
        order = np.lexsort((ts_a, rows_a))
        rows_a, ts_a = rows_a[order], ts_a[order]
        seg = (rows_a[:-1] == rows_a[1:]) & (ts_a[1:] > ts_a[:-1])
        a, b, r = ts_a[:-1][seg], ts_a[1:][seg], rows_a[:-1][seg]
        mid = 0.5 * (a + b)
        w = b - a
        Xb = X.iloc[sl]
        if float_frame:
            arr = Xb.to_numpy(dtype=float)[r]
            for f, s in shifts.items():
                j = X.columns.get_loc(f)
                arr[:, j] = xs[f][sl][r] + mid * s[sl][r]
            frame = pd.DataFrame(arr, columns=X.columns, copy=False)
        else:
            frame = Xb.take(r)
            frame.index = pd.RangeIndex(r.size)
            for f, s in shifts.items():
                frame[f] = xs[f][sl][r] + mid * s[sl][r]
        c = predictor(
            frame,
            stage="the exact-NLM segment midpoints along " + ", ".join(map(str, shifts)),
            rows=(sl.start, sl.stop, len(X)),
        )
        total += r.size
        first = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
        nl, sd, sc = closed_forms(c, r, first, w, mid, f0[sl], f1[sl])
        nlm_parts.append(nl)
        sd_parts.append(sd)
        scale_parts.append(sc)
    out = (np.concatenate(nlm_parts), np.concatenate(sd_parts), total)
    return (*out, np.concatenate(scale_parts)) if return_scale else out


def closed_forms(c, r, first, w, mid, f0, f1):
    """Closed-form integrals of piecewise-constant paths, segments sorted by row: (nlm, sd, scale)."""
    if c.ndim == 2:
        cols = [closed_forms(c[:, j], r, first, w, mid, f0[:, j], f1[:, j]) for j in range(c.shape[1])]
        return tuple(np.column_stack([x[i] for x in cols]) for i in range(3))
    F = f1 - f0
    d = c - f0[r]
    mean = np.add.reduceat(w * d, first)
    num = np.add.reduceat(w * (d - mid * F[r]) ** 2 + (F[r] ** 2) * w**3 / 12.0, first)
    den = np.add.reduceat(w * (d - mean[r]) ** 2, first)
    scale = np.maximum(np.maximum.reduceat(np.abs(d), first), np.abs(F)) + np.abs(f0)
    with np.errstate(over="ignore"):
        undefined = den <= (CONSTANT_ULPS * np.finfo(float).eps * scale) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - num / den
    out[undefined] = np.nan
    return out, np.sqrt(den), scale
