"""Step rules of Dask data resolved by reductions: no stepped column is gathered for ``sd``.

:func:`fme._dask.effects.fme` needs the numbers behind rules such as ``"sd"`` or ``"-2*sd"``
(paper §4.2) before the passes over the data. Before this module, the stepped columns of the
reference data were gathered into memory for them; the ``sd`` and ``unit`` rules now come from
merged per-partition moments, and the levels of a text column from its distinct values
(:func:`rule_frame`); ``iqr`` and ``mad`` from exact order statistics of the column's sorted
partitions (:mod:`fme._dask.quantiles`: only the values near the quartiles or the median move).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pandas as pd

__all__ = ["column_sd_steps", "rule_frame", "sd_columns", "lazy_moments", "text_levels"]


def finite_moments(part: pd.DataFrame, cols: list[str]) -> Any:
    from .._core.summary import Moments

    v = part[cols].to_numpy(dtype=float, na_value=np.nan)
    return Moments.of(np.where(np.isfinite(v), v, np.nan))


def _sorted_finite(part: pd.DataFrame, col: str) -> np.ndarray:
    v = part[col].to_numpy(dtype=float, na_value=np.nan)
    return np.sort(v[np.isfinite(v)])


def _sorted_abs_dev(a: np.ndarray, centre: float) -> np.ndarray:
    return np.sort(np.abs(a - centre))


def _spread_by_order(reference: Any, col: str, rule: str) -> float:
    """``iqr`` (np.quantile 0.75 - 0.25) or ``mad`` (scipy's median_abs_deviation, scale 1) of the
    finite values of ``col``, exactly, from per-partition sorted values kept on the workers."""
    from dask.base import compute, persist
    from dask.delayed import delayed

    from .quantiles import quantiles

    parts = list(persist(*[delayed(_sorted_finite)(p, col) for p in reference.to_delayed()]))  # type: ignore[no-untyped-call]  # dask: untyped
    n = int(sum(compute(*[delayed(len)(p) for p in parts])))  # type: ignore[no-untyped-call]  # dask: untyped
    if n < 2:
        return float("nan")
    if rule == "iqr":
        q = quantiles(parts, n, [0.25, 0.75])
        return float(q[0.75] - q[0.25])
    med = quantiles(parts, n, [0.5])[0.5]
    dev = list(persist(*[delayed(_sorted_abs_dev)(p, med) for p in parts]))  # type: ignore[no-untyped-call]  # dask: untyped
    return float(quantiles(dev, n, [0.5])[0.5])


def _rule_groups(steps: Any, meta: pd.DataFrame, features: list[str]) -> dict[str, tuple[Any, ...]]:
    """``{feature: (sign, multiplier, rule)}`` of the numeric features whose step is a rule."""
    from .._utils.validation import is_categorical
    from ..steps import RULE_RE

    todo = {}
    for f in features:
        v = steps[f]
        m = RULE_RE.match(v) if isinstance(v, str) else None
        if m is not None and not is_categorical(meta[f]):
            todo[f] = m.groups()
    return todo


def sd_columns(steps: Any, reference: Any, features: list[str]) -> list[str]:
    """The features among ``features`` whose step is an ``sd`` rule (their SD comes from merged moments)."""
    return [f for f, g in _rule_groups(steps, reference._meta, features).items() if g[2].lower() == "sd"]


def lazy_moments(reference: Any, cols: list[str]) -> Any:
    """The merged :class:`~fme._core.summary.Moments` of the finite values of ``cols``, not yet computed
    (a verb computes it with its other small reductions in one round trip)."""
    from dask.delayed import delayed

    from .common import tree_reduce

    return tree_reduce([delayed(finite_moments)(p, cols) for p in reference.to_delayed()])


def column_sd_steps(
    steps: Any, reference: Any, features: list[str], moments: Any = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """``steps`` with their ``sd``/``unit``/``iqr``/``mad`` rules (e.g. ``"-2*sd"``) turned into numbers.

    The SD (n - 1) of the finite reference values, as :func:`fme.steps.step_size` computes it, from
    per-partition moments merged exactly (Chan et al.): equal to the in-memory SD to ~1e-15 relative,
    without gathering the column; the IQR and the MAD from exact order statistics
    (:func:`_spread_by_order`), equal to the in-memory ones. ``moments``: the computed
    :func:`lazy_moments` of :func:`sd_columns` (computed here when None). Returns the new steps and
    ``{feature: rule text}`` of those resolved; a rule giving no valid step (fewer than 2 values, no
    spread) is left to the usual path and its error.
    """
    from dask.base import compute

    todo = _rule_groups(steps, reference._meta, features)
    if not todo:
        return steps, {}
    sd_cols = [f for f, g in todo.items() if g[2].lower() == "sd"]
    sd = {}
    if sd_cols:
        merged = compute(lazy_moments(reference, sd_cols))[0] if moments is None else moments  # type: ignore[no-untyped-call]  # dask: untyped
        sd = dict(zip(sd_cols, merged.sd(ddof=1)))
    out, rules = dict(steps), {}
    for f, (sign, mult, rule) in todo.items():
        kind = rule.lower()
        base = (
            1.0
            if kind == "unit"
            else float(sd.get(f, np.nan))
            if kind == "sd"
            else _spread_by_order(reference, f, kind)
        )
        scale = (float(mult) if mult else 1.0) * (-1.0 if sign == "-" else 1.0)  # as fme.steps._parse_numeric
        h = base * scale
        if np.isfinite(h) and h != 0:
            out[f], rules[f] = h, steps[f].strip()
    return out, rules


def text_levels(reference: Any, features: list[str]) -> dict[str, Any]:
    """The distinct values of the text (categorical, not pandas-categorical) columns among ``features``,
    not yet computed: ``{feature: lazy unique values}`` for :func:`rule_frame`."""
    from .._utils.validation import is_categorical

    # split_out=1: a tree reduction (a handful of levels), not a shuffle
    return {f: reference[f].dropna().unique(split_out=1) for f in features if is_categorical(reference._meta[f])}


def rule_frame(reference: Any, features: list[str], levels: dict[str, Any] | None = None) -> pd.DataFrame:
    """The reference columns ``features`` as step rules read them: the distinct values of a text (non-
    categorical dtype) column, repeated to the frame's length (its level set is what counts); numeric
    columns (a rule :func:`column_sd_steps` could not resolve, for its error message) in full. Other
    columns of ``reference`` are empty (NaN). ``levels``: the computed :func:`text_levels` (computed here
    when None)."""
    from dask.base import compute

    from .._utils.validation import is_categorical

    text = [f for f in features if is_categorical(reference._meta[f])]
    numeric = [f for f in features if f not in text]
    if levels is None:
        lazy = text_levels(reference, text)
        levels = dict(zip(lazy, compute(*lazy.values())))  # type: ignore[no-untyped-call]  # dask: untyped
    levels = {f: levels[f] for f in text}
    full = reference[numeric].compute() if numeric else None
    length = max([len(full) if full is not None else 0] + [len(v) for v in levels.values()] + [1])
    cols = {}
    for f in features:
        if f in levels:
            v = pd.Series(levels[f]).reset_index(drop=True)
            cols[f] = (
                v.iloc[np.arange(length) % len(v)].reset_index(drop=True)
                if len(v)
                else pd.Series([None] * length, dtype=reference._meta[f].dtype)
            )
        else:
            cols[f] = cast(pd.DataFrame, full)[f].reset_index(drop=True)  # numeric columns: computed
    return pd.DataFrame(cols).reindex(columns=list(reference.columns))
