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
over all trees (one adapter per model family below); segments that do not
change the prediction cost an evaluation but do not change the result. The
segment values are the model's own predictions at the segment midpoints,
made in stacked batches (rows x segments), so link functions (probabilities
of boosted classifiers) and pipelines need no special handling.

scikit-learn trees compare float32(v) <= threshold: their breakpoints are the
float64 boundaries of that set (:func:`float32_boundary`). Caveat: XGBoost
also compares in float32 and its breakpoints here are the raw split values,
exact up to the float32 rounding of x + t h (relative 6e-8 in t near it).

:mod:`fme._nlm.tree_paths` computes the same segments for most tree models by
traversing their trees instead (only breakpoints a row's path reaches);
this module's midpoint route serves the others (XGBoost, pipelines,
categorical HistGradientBoosting).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ._utils.progress import progress_bar
from .nlm import CONSTANT_ULPS

__all__ = ["tree_thresholds", "exact_nlm", "exact_support", "float32_boundary"]

#: Cells (segments x columns) of one stacked frame of midpoints.
_CELL_BUDGET = 20_000_000
_PER_FEATURE_SCALERS = ("StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler", "PowerTransformer",
                        "QuantileTransformer")


class Unsupported(Exception):
    """The model is not one whose path is provably piecewise constant (message: why)."""


def float32_boundary(threshold: np.ndarray) -> np.ndarray:
    """The float64 b with ``float32(v) <= threshold`` iff ``v < b`` (up to a tie exactly at b).

    float32(v) <= thr iff float32(v) <= a, a the largest float32 <= thr,
    iff v is below the midpoint between a and the next float32 (round to
    nearest). Exact in float64 (both neighbours and their mean are).
    """
    thr = np.asarray(threshold, dtype=np.float64)
    with np.errstate(over="ignore"):
        a = thr.astype(np.float32)
    down = a.astype(np.float64) > thr
    a[down] = np.nextafter(a[down], np.float32(-np.inf))
    b = np.nextafter(a, np.float32(np.inf))
    out = 0.5 * a.astype(np.float64) + 0.5 * b.astype(np.float64)
    # beyond float32 range (inf thresholds): the comparison is decided by the sign alone
    return np.where(np.isfinite(a) & np.isfinite(b), out, thr)



# ----------------------------------------------------------------- adapters: (feature index/name, thresholds)
def _sklearn_tree(tree) -> tuple[np.ndarray, np.ndarray]:
    # the tree compares float32(v) <= threshold: the path crosses at the float64 boundary of that set
    t = tree.tree_
    split = t.feature >= 0
    return t.feature[split].astype(np.int64), float32_boundary(t.threshold[split])


def _concat(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if not parts:
        return np.empty(0, dtype=np.int64), np.empty(0)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _sklearn_splits(model) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.ensemble import (ExtraTreesClassifier, ExtraTreesRegressor, GradientBoostingClassifier,
                                  GradientBoostingRegressor, HistGradientBoostingClassifier,
                                  HistGradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor)
    from sklearn.tree import BaseDecisionTree

    if isinstance(model, BaseDecisionTree):
        return _sklearn_tree(model)
    if isinstance(model, (RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier, ExtraTreesRegressor)):
        return _concat([_sklearn_tree(t) for t in model.estimators_])
    if isinstance(model, (GradientBoostingClassifier, GradientBoostingRegressor)):
        init = getattr(model, "init_", None)
        if not (init == "zero" or type(init).__name__ == "DummyClassifier" or type(init).__name__ == "DummyRegressor"):
            raise Unsupported(f"{type(model).__name__} has a non-constant init estimator {type(init).__name__}")
        return _concat([_sklearn_tree(t) for t in np.ravel(model.estimators_)])
    if isinstance(model, (HistGradientBoostingClassifier, HistGradientBoostingRegressor)):
        nodes = np.concatenate([p.nodes for it in model._predictors for p in it])
        split = nodes["is_leaf"] == 0
        cat = split & (nodes["is_categorical"] == 1)
        feats = nodes["feature_idx"][split & ~cat].astype(np.int64)
        cat_feats = np.unique(nodes["feature_idx"][cat]).astype(np.int64)
        pre = getattr(model, "_preprocessor", None)
        if pre is not None:  # categorical columns are encoded and moved first: map back to input positions
            perm = np.zeros(model.n_features_in_, dtype=np.int64)
            for name, _, cols in pre.transformers_:
                idx = np.arange(model.n_features_in_)[cols]
                perm[pre.output_indices_[name]] = idx
            feats, cat_feats = perm[feats], perm[cat_feats]
        if getattr(model, "is_categorical_", None) is not None:  # input order
            cat_feats = np.union1d(cat_feats, np.flatnonzero(model.is_categorical_))
        # categorical splits: mark with NaN thresholds (rejected if a stepped feature has one)
        return (np.concatenate([feats, cat_feats]),
                np.concatenate([nodes["num_threshold"][split & ~cat], np.full(cat_feats.size, np.nan)]))
    raise Unsupported(type(model).__name__)


def _lightgbm_splits(booster) -> tuple[list[Any], np.ndarray]:
    dump = booster.dump_model()
    names = list(dump.get("feature_names", []))
    feats, thr = [], []
    for info in dump["tree_info"]:
        stack = [info["tree_structure"]]
        while stack:  # loop over nodes of the fitted model, not over rows
            node = stack.pop()
            if "split_feature" not in node:
                if "leaf_coeff" in node:
                    raise Unsupported("LightGBM with linear_tree=True (leaves are linear, not constant)")
                continue
            feats.append(names[node["split_feature"]] if names else node["split_feature"])
            thr.append(float(node["threshold"]) if node.get("decision_type", "<=") != "==" else np.nan)
            stack.extend((node["left_child"], node["right_child"]))
    return feats, np.asarray(thr, dtype=float)


def _xgboost_splits(booster) -> tuple[list[Any], np.ndarray]:
    try:
        df = booster.trees_to_dataframe()
    except Exception as exc:  # gblinear has no trees
        raise Unsupported(f"XGBoost booster without trees ({exc})") from exc
    split = df["Feature"] != "Leaf"
    split_val = df.loc[split, "Split"].to_numpy(dtype=float)  # NaN for categorical splits
    return list(df.loc[split, "Feature"]), split_val


def _model_splits(model) -> tuple[list[Any] | np.ndarray, np.ndarray, list[str] | None]:
    """(feature ids, thresholds, the model's own feature names or None) of any supported model."""
    mod = type(model).__module__
    if mod.startswith("lightgbm"):
        booster = model.booster_ if hasattr(model, "booster_") else model
        if type(booster).__name__ != "Booster":
            raise Unsupported(type(model).__name__)
        f, t = _lightgbm_splits(booster)
        return f, t, booster.feature_name()
    if mod.startswith("xgboost"):
        booster = model.get_booster() if hasattr(model, "get_booster") else model
        if type(booster).__name__ != "Booster":
            raise Unsupported(type(model).__name__)
        if getattr(model, "booster", None) == "gblinear":
            raise Unsupported("XGBoost gblinear")
        f, t = _xgboost_splits(booster)
        return f, t, booster.feature_names
    if mod.startswith("sklearn"):
        f, t = _sklearn_splits(model)
        return f, t, None
    raise Unsupported(type(model).__name__)


def _per_feature(feats, thr, columns: list[str], own_names: list[str] | None) -> dict[str, np.ndarray]:
    """Map split features to column names; thresholds per column (NaN marks a categorical split)."""
    out: dict[str, list[np.ndarray]] = {}
    feats = list(feats)
    if feats and isinstance(feats[0], str):
        by_name = own_names is not None and set(own_names) <= set(columns)
        if by_name:
            keys = feats
        else:  # model fitted on arrays: names are positional (Column_3, f3)
            pos = {n: i for i, n in enumerate(own_names or [])}
            keys = [columns[pos[f]] if f in pos else columns[int(str(f).lstrip("fColumn_"))] for f in feats]
    else:
        keys = [columns[int(i)] for i in feats]
    keys_arr = np.asarray(keys, dtype=object)
    for name in set(keys):
        out[name] = thr[keys_arr == name]
    return {k: v for k, v in out.items()}


# ----------------------------------------------------------------- pipelines
def _feature_map(transformer, feature: str, columns: list[str]):
    """(output position, inverse map of output-space values to input values) for one stepped feature."""
    identity = type(transformer).__name__ == "FunctionTransformer" and transformer.func is None
    if transformer is None or identity or (isinstance(transformer, str) and transformer == "passthrough"):
        return columns.index(feature), (lambda v: v)
    name = type(transformer).__name__
    if name in _PER_FEATURE_SCALERS:
        j = columns.index(feature)

        def inverse(v, tr=transformer, j=j, m=len(columns)):
            arr = np.zeros((v.size, m))
            arr[:, j] = v
            return tr.inverse_transform(arr)[:, j]

        return j, inverse
    if name == "ColumnTransformer":
        found = []
        names_in = list(transformer.feature_names_in_) if hasattr(transformer, "feature_names_in_") else columns
        for tname, tr, cols in transformer.transformers_:
            if isinstance(tr, str) and tr == "drop":
                continue
            sel = np.arange(len(names_in))[cols] if not isinstance(cols, (list, tuple)) or (
                cols and not isinstance(cols[0], str)) else [names_in.index(c) for c in cols]
            sel_names = [names_in[i] for i in np.atleast_1d(sel)]
            if feature in sel_names:
                found.append((tname, tr, sel_names))
        if not found:
            return None, None
        if len(found) > 1:
            raise Unsupported(f"ColumnTransformer uses {feature!r} in several transformers")
        tname, tr, sel_names = found[0]
        inner = _feature_map(tr, feature, sel_names)
        if inner[0] is None:
            return None, None
        return transformer.output_indices_[tname].start + inner[0], inner[1]
    raise Unsupported(f"pipeline step {name} (not a pass-through or monotone per-feature transform of {feature!r})")


def _pipeline_thresholds(pipe, features: list[str], columns: list[str]) -> dict[str, np.ndarray]:
    steps = [s for _, s in pipe.steps]
    final = steps[-1]
    maps = {}
    for f in features:
        pos, inverses, cols = f, [], list(columns)
        for tr in steps[:-1]:
            j, inv = _feature_map(tr, pos if isinstance(pos, str) else cols[pos], cols)
            if j is None:
                maps[f] = None
                break
            inverses.append(inv)
            out_cols = [str(c) for c in tr.get_feature_names_out()] if hasattr(tr, "get_feature_names_out") else cols
            cols, pos = out_cols, j
        else:
            maps[f] = (cols[pos] if not isinstance(pos, str) else pos, cols, inverses)
    out = {}
    for f, m in maps.items():
        if m is None:
            out[f] = np.empty(0)
            continue
        name, cols, inverses = m
        inner = tree_thresholds(final, [name], cols)[name]
        for inv in reversed(inverses):
            inner = np.asarray(inv(inner), dtype=float) if inner.size else inner
        out[f] = inner
    return out


# ----------------------------------------------------------------- public helpers
def tree_thresholds(model: Any, features: list[str], columns: list[str]) -> dict[str, np.ndarray]:
    """Sorted distinct split thresholds of each stepped feature, in the input space of ``model``.

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
    if type(model).__name__ == "Pipeline" and type(model).__module__.startswith("sklearn"):
        raw = _pipeline_thresholds(model, features, columns)
    else:
        feats, thr, own = _model_splits(model)
        per = _per_feature(feats, thr, columns, own)
        raw = {f: per.get(f, np.empty(0)) for f in features}
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
    for start, stop in progress_bar(spans, total=len(spans), desc="exact NLM (segment midpoints, chunks of rows)",
                                    progress=progress):
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
        c = predictor(frame, stage="the exact-NLM segment midpoints along " + ", ".join(map(str, shifts)),
                      rows=(sl.start, sl.stop, len(X)))
        total += r.size
        first = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
        nl, sd, sc = _closed_forms(c, r, first, w, mid, f0[sl], f1[sl])
        nlm_parts.append(nl)
        sd_parts.append(sd)
        scale_parts.append(sc)
    out = (np.concatenate(nlm_parts), np.concatenate(sd_parts), total)
    return (*out, np.concatenate(scale_parts)) if return_scale else out


def _closed_forms(c, r, first, w, mid, f0, f1):
    """Closed-form integrals of piecewise-constant paths, segments sorted by row: (nlm, sd, scale)."""
    if c.ndim == 2:
        cols = [_closed_forms(c[:, j], r, first, w, mid, f0[:, j], f1[:, j]) for j in range(c.shape[1])]
        return tuple(np.column_stack([x[i] for x in cols]) for i in range(3))
    F = f1 - f0
    d = c - f0[r]
    mean = np.add.reduceat(w * d, first)
    num = np.add.reduceat(w * (d - mid * F[r]) ** 2 + (F[r] ** 2) * w ** 3 / 12.0, first)
    den = np.add.reduceat(w * (d - mean[r]) ** 2, first)
    scale = np.maximum(np.maximum.reduceat(np.abs(d), first), np.abs(F)) + np.abs(f0)
    with np.errstate(over="ignore"):
        undefined = den <= (CONSTANT_ULPS * np.finfo(float).eps * scale) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - num / den
    out[undefined] = np.nan
    return out, np.sqrt(den), scale
