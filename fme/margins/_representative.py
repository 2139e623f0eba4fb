"""Marginal effects at representative values (MER) and at the means (MEM) (paper §3.2), and the typical values
(means, modes) MEM evaluates at.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._adapters import model_frame
from .._dask.margins import local_view
from .._utils.validation import (check_conf_level, check_data, check_name_clash, is_categorical, is_dask_collection,
                                 is_numeric)
from ..effects import fme
from ..exceptions import DataError, ExtrapolationError, FeatureError, ParameterError
from ..inference._estimates import COVERS, INFERENCE_COLUMNS
from ..inference._methods import resolve_method
from ..steps import _levels, _same_level, parse_steps
from ._ame import _DESCRIPTIVE

__all__ = ["mer", "mem", "typical_values"]

#: The columns mer()/mem() put beside the ``at`` columns (with ``step_<feature>`` under 'shrink').
_MER_COLUMNS = ["fme", *INFERENCE_COLUMNS, *_DESCRIPTIVE, "nlm", "nlm_status", "extrapolation", "extrapolation_point",
                "note"]
_AT_FIX = ("Rename that feature in the data (and refit the model on the renamed column), or evaluate your own grid "
           "rows with fme.fme(model, grid, steps): its results are indexed like grid, beside your columns.")


def typical_values(data: pd.DataFrame) -> pd.DataFrame:
    """One row of typical values: the mean of numeric columns, the mode of the others.

    Column dtypes are kept (categoricals stay categorical).
    """
    data = check_data(data)
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
    *,
    inference: str = "auto",
    bootstrap: Mapping[str, Any] | None = None,
    conf_level: float = 0.95,
    **fme_kwargs: Any,
) -> pd.DataFrame:
    """Forward marginal effects at representative values (MER, paper §3.2).

    Starts from :func:`typical_values` of ``data`` and overrides the features
    in ``at``; lists of values form a grid (every combination). Step rules
    (``"sd"``) are computed on ``data``. An ``at`` feature named like one of
    the table's own columns (``fme``, ``n``, ``note``, ...) raises
    :class:`~fme.exceptions.NameClashError`.

    Parameters
    ----------
    inference, bootstrap, conf_level :
        Uncertainty of each grid point's fME, as in :func:`fme.ame`. With
        ``sample`` (the fallback of ``auto`` for models without parameters) a
        single point has no interval: NaN.

    Returns
    -------
    DataFrame
        One row per grid point: the ``at`` columns, then ``fme``, std_error,
        statistic, p_value, conf_low, conf_high, inference, the descriptive
        sd (NaN), q25 = q75 = fme, n (1, or 0 if not evaluated), n_excluded,
        (and ``nlm``), NaN where a point was not evaluated (already at a
        categorical level, or an extrapolation point) with the reason in
        ``note``. For ``target_class='all'``: ``fme_<class>`` columns only.

    ``data`` (or ``reference_data``) may be a ``dask.dataframe.DataFrame``:
    the typical values, levels, step rules and the detector's reference come
    from reductions (:mod:`fme._dask.margins`; ``sample_size`` as in
    :func:`fme.fme`), then the grid is evaluated in memory.
    """
    base = None
    if is_dask_collection(data) or is_dask_collection(fme_kwargs.get("reference_data")):
        data, steps, base, fme_kwargs = local_view(model, data, steps, at, fme_kwargs)
    return _mer(model, data, steps, at, base, inference=inference, bootstrap=bootstrap, conf_level=conf_level,
                **fme_kwargs)


def _mer(model: Any, data: pd.DataFrame, steps: Mapping[str, Any], at: Mapping[str, Any] | None,
         base: pd.DataFrame | None, *, inference: str, bootstrap: Any, conf_level: float,
         **fme_kwargs: Any) -> pd.DataFrame:
    """:func:`mer` with the typical values ``base`` given (Dask data: from reductions) or taken from ``data``."""
    data = model_frame(model, check_data(data))
    conf_level = check_conf_level(conf_level)
    at = {} if at is None else dict(at)
    for f in at:
        if f not in data.columns:
            raise FeatureError(f"unknown feature {f!r} in `at`: not a column of the data.")
    base = typical_values(data) if base is None else base
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
    check_name_clash(keys, _MER_COLUMNS + [f"step_{s.feature}" for s in parsed], "at", _AT_FIX)
    numeric_steps = {s.feature: s.value for s in parsed}
    fme_kwargs.setdefault("reference_data", data)
    multi = isinstance(fme_kwargs.get("target_class"), str) and fme_kwargs.get("target_class") == "all"
    method = resolve_method(inference, model, bootstrap, multi)
    try:
        res = fme(model, frame, numeric_steps, inference=method, bootstrap=bootstrap, conf_level=conf_level,
                  **fme_kwargs)
    except (DataError, ExtrapolationError) as exc:
        # Nothing to evaluate (all at the level, or every grid point outside the data): NaN rows with the reason.
        out = frame[keys].assign(fme=np.nan)
        if not multi:
            for c in INFERENCE_COLUMNS:
                out[c] = {"inference": method, "covers": COVERS[method]}.get(c, np.nan)
            out = out.assign(sd=np.nan, q25=np.nan, q75=np.nan, n=0, n_excluded=1)
        out["note"] = str(exc)
        return out
    if multi:
        check_name_clash(keys, res.results.columns, "at", _AT_FIX)
        out = frame[keys].join(res.results)
    else:
        inf = res.inference_rows
        table = inf.average(np.arange(inf.n), inf.n).table(conf_level).set_index(res.results.index)
        fm = res.results["fme"]
        cols = {"fme": fm, **{c: table[c] for c in INFERENCE_COLUMNS},
                "sd": pd.Series(np.nan, index=fm.index), "q25": fm, "q75": fm,
                "n": pd.Series(1, index=fm.index), "n_excluded": pd.Series(0, index=fm.index)}
        out = frame[keys].join(pd.DataFrame(cols).join(res.results.drop(columns="fme")))
        out["n"] = out["n"].fillna(0).astype(int)
        out["n_excluded"] = out["n_excluded"].fillna(1).astype(int)
        out["inference"] = out["inference"].fillna(inf.method)
        out["covers"] = out["covers"].fillna(COVERS[inf.method])
    out["note"] = res.excluded["reason"].reindex(frame.index).fillna("")
    return out


def mem(model: Any, data: pd.DataFrame, steps: Mapping[str, Any], **fme_kwargs: Any) -> pd.DataFrame:
    """Forward marginal effect at the means (MEM, paper §3.2).

    Numeric features at their means, categorical ones at their modes. For a
    categorical step the stepped feature is evaluated at each other level
    (Williams' categorical MEM), since the mode may already be the target.
    Keywords (``inference``, ``bootstrap``, ``conf_level``, ...) and the
    columns are those of :func:`mer`.
    """
    base = None
    if is_dask_collection(data) or is_dask_collection(fme_kwargs.get("reference_data")):
        data, steps, base, fme_kwargs = local_view(model, data, steps, None, fme_kwargs)
    data = model_frame(model, check_data(data))
    parsed = parse_steps(data, steps)
    at = {s.feature: [lv for lv in _levels(data[s.feature]) if lv != s.value] for s in parsed if not s.is_numeric}
    kw = {k: fme_kwargs.pop(k) for k in ("inference", "bootstrap", "conf_level") if k in fme_kwargs}
    return _mer(model, data, steps, at, base, **{"inference": "auto", "bootstrap": None, "conf_level": 0.95, **kw},
                **fme_kwargs)
