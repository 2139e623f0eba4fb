"""Aggregations of forward marginal effects: AME, MEM, MER (paper §3.2) and the
derivative ME (dME) to compare against (paper §4.1, "Forward Difference versus
Derivative").
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._stats import describe
from ._validation import check_conf_level, check_data, check_feature_name, is_categorical, is_numeric
from .effects import FMEResult, fme
from .exceptions import DataError, ExtrapolationError, FeatureError, ParameterError, StepError
from ._models import model_frame
from .predictors import make_predictor
from .steps import _levels, _same_level, _set_level, parse_steps

__all__ = ["ame", "mem", "mer", "dme", "typical_values"]

_AME_COLUMNS = ["feature", "step", "level", "reference", "ame", "sd", "se", "ci_low", "ci_high", "q25", "q75",
                "n", "n_excluded"]


def _row(feature: str, step: float, level: Any, reference: Any, values: np.ndarray, n_excluded: int,
         conf_level: float) -> dict[str, Any]:
    d = describe(values, conf_level)
    return {"feature": feature, "step": step, "level": level, "reference": reference, "ame": d["mean"],
            "sd": d["sd"], "se": d["se"], "ci_low": d["ci_low"], "ci_high": d["ci_high"], "q25": d["q25"],
            "q75": d["q75"], "n": int(d["n"]), "n_excluded": n_excluded}


def ame(
    model: Any,
    data: pd.DataFrame,
    steps: Mapping[str, Any] | None = None,
    *,
    features: Sequence[str] | None = None,
    categorical: str = "observation",
    conf_level: float = 0.95,
    **fme_kwargs: Any,
) -> pd.DataFrame:
    """Average marginal effects, one row per feature (and per category).

    Each entry of ``steps`` is evaluated as its own *univariate* fME (use
    :func:`fme.fme` for a multivariate step). ``steps=None`` uses every
    feature in ``features`` (default: the model's inputs if it knows them,
    else every column of ``data``): numeric features get the unit step
    ``h = 1`` (paper §3.2), categorical features one row per level.

    Parameters
    ----------
    model, data :
        As in :func:`fme.fme`.
    steps : dict, optional
        ``{feature: h or rule}`` for numeric, ``{feature: level}`` or
        ``{feature: None}`` (every level) for categorical features.
    features : sequence of str, optional
        Features for ``steps=None``.
    categorical : {'observation', 'classic'}, default='observation'
        ``observation``: the observation-wise categorical ME (§5.1), rows
        already at the level are left out. ``classic``: every row is set to
        the reference level (the first level, or the value given in
        ``steps``), then to each other level (Eq. categorical_me).
    conf_level : float, default=0.95
        For the t-based CI of the mean fME (the model is taken as fixed; the
        CI describes the spread of effects over the data, paper §5.5).
    **fme_kwargs
        Passed to :func:`fme.fme` (``extrapolation``, ``reference_data``, ...).

    Returns
    -------
    DataFrame
        Columns feature, step (NaN for categorical), level (None for numeric),
        reference (classic only), ame, sd, se, ci_low, ci_high, q25, q75, n,
        n_excluded.
    """
    data = model_frame(model, check_data(data))
    conf_level = check_conf_level(conf_level)
    _check_single_output(fme_kwargs.get("target_class"), "ame")
    if categorical not in ("observation", "classic"):
        raise ParameterError(f"categorical must be 'observation' or 'classic', got {categorical!r}.")
    if steps is None:
        if features is None:
            names = make_predictor(model, fme_kwargs.get("target_class")).feature_names
            features = names if names is not None else list(data.columns)
        for f in features:
            if f not in data.columns:
                raise FeatureError(f"unknown feature {f!r}: not a column of the data.")
        steps = {f: (None if is_categorical(data[f]) else 1.0) for f in features}
    elif not isinstance(steps, Mapping) or len(steps) == 0:
        raise StepError("`steps` must be a non-empty dict such as {'age': 1, 'sex': None}, or None for all features.")
    rows = []
    for feature, value in steps.items():
        if feature not in data.columns:
            raise FeatureError(f"unknown feature {feature!r}: not a column of the data.")
        if is_categorical(data[feature]):
            rows.extend(_categorical_rows(model, data, feature, value, categorical, conf_level, fme_kwargs))
        else:
            res = fme(model, data, {feature: value}, **fme_kwargs)
            rows.append(_row(feature, res.steps[0].value, None, None, res.results["fme"].to_numpy(),
                             res.n_excluded, conf_level))
    return pd.DataFrame(rows, columns=_AME_COLUMNS)


def _check_single_output(target_class: Any, name: str) -> None:
    if isinstance(target_class, str) and target_class == "all":
        raise ParameterError(
            f"{name}() works on one output; target_class='all' is not supported here. Pass one class "
            "(target_class=<label>) per call, or use fme.fme(..., target_class='all') for every class at once."
        )


def _categorical_rows(model, data, feature, value, categorical, conf_level, fme_kwargs) -> list[dict]:
    levels = _levels(data[feature])
    if categorical == "observation":
        targets = levels if value is None else [parse_steps(data, {feature: value})[0].value]
        rows = []
        for level in targets:
            try:
                res = fme(model, data, {feature: level}, **fme_kwargs)
            except DataError:
                # Every row is already at this level: nothing to evaluate.
                rows.append(_row(feature, np.nan, level, None, np.empty(0), len(data), conf_level))
                continue
            rows.append(_row(feature, np.nan, level, None, res.results["fme"].to_numpy(), res.n_excluded,
                             conf_level))
        return rows
    reference = levels[0] if value is None else parse_steps(data, {feature: value})[0].value
    predictor = make_predictor(model, fme_kwargs.get("target_class"))
    X = predictor.select(data)

    def at_level(level: Any) -> pd.DataFrame:
        # a fresh frame per predict call: a model that modifies its input cannot leak into the next
        out = X.copy(deep=False)
        out[feature] = _set_level(data[feature], level, len(data))
        return out

    base = predictor(at_level(reference), stage=f"{feature} = {reference!r}")
    rows = []
    for level in levels:
        if level == reference:
            continue
        pred = predictor(at_level(level), stage=f"{feature} = {level!r}")
        rows.append(_row(feature, np.nan, level, reference, pred - base, 0, conf_level))
    return rows


def typical_values(data: pd.DataFrame) -> pd.DataFrame:
    """One row of typical values: the mean of numeric columns, the mode of the others.

    Column dtypes are kept (categoricals stay categorical).
    """
    check_data(data)
    out = {}
    for c in data.columns:
        col = data[c]
        if is_numeric(col):
            finite = col.to_numpy(dtype=float, na_value=np.nan)
            finite = finite[np.isfinite(finite)]
            if finite.size == 0:
                raise DataError(f"column {c!r} has no finite value; cannot take its mean.")
            out[c] = pd.Series([float(finite.mean())])
        else:
            counts = col.value_counts(sort=False)
            if counts.empty:
                raise DataError(f"column {c!r} has no non-missing value; cannot take its mode.")
            # nullable dtypes compare to <NA> on missing values: those rows are not the mode
            first = np.flatnonzero((col == counts.idxmax()).to_numpy(dtype=bool, na_value=False))[0]
            out[c] = col.iloc[[int(first)]].reset_index(drop=True)
    return pd.DataFrame(out)


def _check_at_values(data: pd.DataFrame, feature: str, values: Sequence[Any]) -> None:
    """Representative values must be levels of a categorical feature / real numbers for a numeric one."""
    if is_categorical(data[feature]):
        levels = _levels(data[feature])
        bad = [v for v in values if not any(_same_level(v, lv) for lv in levels)]
        if bad:
            raise ParameterError(
                f"`at` gives {bad} for the categorical feature {feature!r}; use its levels {levels[:20]}."
            )
        return
    bad = [v for v in values
           if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(float(v))]
    if bad:
        raise ParameterError(f"`at` gives {bad} for the numeric feature {feature!r}; use finite numbers.")


def mer(
    model: Any,
    data: pd.DataFrame,
    steps: Mapping[str, Any],
    at: Mapping[str, Any] | None = None,
    **fme_kwargs: Any,
) -> pd.DataFrame:
    """Forward marginal effects at representative values (MER, paper §3.2).

    Starts from :func:`typical_values` of ``data`` and overrides the features
    in ``at``; lists of values form a grid (every combination). Step rules
    (``"sd"``) are computed on ``data``.

    Returns
    -------
    DataFrame
        One row per grid point: the ``at`` columns, then ``fme`` (and ``nlm``),
        NaN where a point was not evaluated (already at a categorical level,
        or an extrapolation point) with the reason in ``note``.
    """
    data = model_frame(model, check_data(data))
    at = {} if at is None else dict(at)
    for f in at:
        if f not in data.columns:
            raise FeatureError(f"unknown feature {f!r} in `at`: not a column of the data.")
    base = typical_values(data)
    keys = list(at)
    values = [v if isinstance(v, (list, tuple, np.ndarray, pd.Index)) else [v] for v in at.values()]
    grid = list(itertools.product(*values)) if keys else [()]
    frame = base.loc[np.zeros(len(grid), dtype=int)].reset_index(drop=True)
    for f, vals in zip(keys, values):
        _check_at_values(data, f, vals)
    for j, f in enumerate(keys):
        col = [g[j] for g in grid]
        if isinstance(data[f].dtype, pd.CategoricalDtype):
            frame[f] = pd.Categorical(col, dtype=data[f].dtype)
        else:
            frame[f] = pd.Series(col, dtype=data[f].dtype if not is_numeric(data[f]) else float)
    parsed = parse_steps(data, steps)
    numeric_steps = {s.feature: s.value for s in parsed}
    fme_kwargs.setdefault("reference_data", data)
    try:
        res = fme(model, frame, numeric_steps, **fme_kwargs)
        out = frame[keys].join(res.results)
        note = res.excluded["reason"].reindex(frame.index).fillna("")
    except (DataError, ExtrapolationError) as exc:
        # Nothing to evaluate (all at the level, or every grid point outside the data): NaN rows with the reason.
        out = frame[keys].assign(fme=np.nan)
        note = pd.Series(str(exc), index=frame.index)
    out["note"] = note
    return out


def mem(model: Any, data: pd.DataFrame, steps: Mapping[str, Any], **fme_kwargs: Any) -> pd.DataFrame:
    """Forward marginal effect at the means (MEM, paper §3.2).

    Numeric features at their means, categorical ones at their modes. For a
    categorical step the stepped feature is evaluated at each other level
    (Williams' categorical MEM), since the mode may already be the target.
    """
    data = model_frame(model, check_data(data))
    parsed = parse_steps(data, steps)
    at = {s.feature: [lv for lv in _levels(data[s.feature]) if lv != s.value] for s in parsed if not s.is_numeric}
    return mer(model, data, steps, at=at, **fme_kwargs)


def dme(
    model: Any,
    data: pd.DataFrame,
    feature: str,
    *,
    eps: float | None = None,
    target_class: Any = None,
) -> pd.DataFrame:
    """Derivative marginal effects by central differences (paper §2.2, §3.1).

    dME(x) = (f(x_j + e, x_-j) - f(x_j - e, x_-j)) / (2 e), with
    ``e = 1e-4 * (max - min)`` of the feature by default (as marginaleffects).

    Returns
    -------
    DataFrame
        Indexed like ``data``; column ``dme``. Compare ``dme * h`` with the
        fME to see the derivative's interpretation error for a step ``h``.
    """
    check_data(data)
    check_feature_name(feature)
    if feature not in data.columns:
        raise FeatureError(f"unknown feature {feature!r}: not a column of the data.")
    if not is_numeric(data[feature]):
        kind = "is categorical" if is_categorical(data[feature]) else f"has dtype {data[feature].dtype}"
        raise StepError(f"feature {feature!r} {kind}; derivatives need a real numeric feature.")
    _check_single_output(target_class, "dme")
    if eps is not None and (isinstance(eps, (bool, np.bool_)) or not isinstance(eps, numbers.Real)
                            or not np.isfinite(eps) or eps <= 0):
        raise ParameterError(f"eps must be a positive finite number (or None for the default), got {eps!r}.")
    x = data[feature].to_numpy(dtype=float, na_value=np.nan)
    # Rows with a missing or infinite value in the feature get NaN (as fme() leaves them out).
    ok = np.isfinite(x)
    if not ok.any():
        raise DataError(
            f"feature {feature!r} has no finite value in any of the {len(x)} rows; dME needs at least one."
        )
    if eps is None:
        span = float(x[ok].max() - x[ok].min())
        eps = 1e-4 * (span if span > 0 else max(1.0, float(np.abs(x[ok]).max())))
    eps = float(eps)
    predictor = make_predictor(model, target_class)
    X = predictor.select(data)[ok]
    up = X.copy(deep=False)
    down = X.copy(deep=False)
    up[feature] = x[ok] + eps
    down[feature] = x[ok] - eps
    out = np.full(len(data), np.nan)
    out[ok] = (predictor(up, stage=f"{feature} + eps") - predictor(down, stage=f"{feature} - eps")) / (2.0 * eps)
    return pd.DataFrame({"dme": out}, index=data.index)
