"""MEM and MER of Dask data: reductions first, then the small grid in memory.

:func:`fme.mem` and :func:`fme.mer` evaluate a handful of grid rows; what
they need of the data is small once reduced:

* the typical values (paper §3.2): the mean of each numeric column's finite
  values from merged sums and counts, the mode of every other column from
  merged ``value_counts`` (partitions in order, so ties go to the value seen
  first, as with pandas);
* the levels of the categorical columns that are stepped or in ``at``
  (distinct values; a pandas categorical's own categories);
* step rules (``"sd"``, ``"iqr"``, ...): the stepped column is computed, as
  for :func:`fme.fme` on Dask data;
* the reference data of an extrapolation detector: for the envelope a small
  frame with the same min/max and levels (identical to pandas); for every
  other detector a seeded sample of at most ``sample_size`` reference rows
  (all rows when there are no more), as :func:`fme.fme` on Dask data.

:func:`local_view` returns a small pandas stand-in of the data with those
figures, and the grid is then evaluated by the pandas path.
"""

from __future__ import annotations

import warnings
from typing import Any, cast

import numpy as np
import pandas as pd

from .._utils.validation import is_categorical, is_numeric
from ..exceptions import DataError

__all__ = ["typical_values_dask", "local_view"]


def _known(data: Any) -> Any:
    """``data`` with every categorical column's categories known (one pass if some are not)."""
    from dask.dataframe.utils import has_known_categories

    meta = data._meta
    known: Any = has_known_categories  # dask: untyped
    unknown = [c for c in meta.columns if isinstance(meta[c].dtype, pd.CategoricalDtype) and not known(data[c])]
    return data.categorize(columns=unknown) if unknown else data


def _typical_parts(
    part: pd.DataFrame, numeric: list[str], others: list[str]
) -> tuple[np.ndarray, np.ndarray, dict[str, pd.Series]]:
    num = part[numeric].to_numpy(dtype=float, na_value=np.nan) if numeric else np.empty((len(part), 0))
    ok = np.isfinite(num)
    sums = np.where(ok, num, 0.0).sum(axis=0)
    counts = ok.sum(axis=0)
    # sort=False: categories in their order, other values in order of first appearance (as pandas' mode)
    vc = {c: part[c].value_counts(sort=False) for c in others}
    return sums, counts, vc


def typical_values_dask(data: Any) -> pd.DataFrame:
    """:func:`fme.margins.marginal.typical_values` of a Dask DataFrame (with known categories), from reductions."""
    from dask.base import compute
    from dask.delayed import delayed

    meta = data._meta
    numeric = [c for c in meta.columns if is_numeric(meta[c])]
    others = [c for c in meta.columns if c not in numeric]
    tasks = [delayed(_typical_parts)(p, numeric, others) for p in data.to_delayed()]
    parts = compute(*tasks)  # type: ignore[no-untyped-call]  # dask's compute is untyped
    sums = np.sum([p[0] for p in parts], axis=0)
    counts = np.sum([p[1] for p in parts], axis=0)
    out = {}
    for j, c in enumerate(numeric):
        if counts[j] == 0:
            raise DataError(f"column {c!r} has no finite value; cannot take its mean.")
        out[c] = float(sums[j] / counts[j])
    for c in others:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # concat of empty counts
            counts_c = pd.concat([p[2][c] for p in parts]).groupby(level=0, sort=False, observed=True).sum()
        counts_c = counts_c[counts_c > 0] if not isinstance(meta[c].dtype, pd.CategoricalDtype) else counts_c
        if counts_c.empty or counts_c.max() == 0:
            raise DataError(f"column {c!r} has no non-missing value; cannot take its mode.")
        out[c] = counts_c.idxmax()
    return pd.DataFrame({c: pd.Series([out[c]], dtype=float if c in numeric else meta[c].dtype) for c in meta.columns})


def _distinct(data: Any, column: str) -> list[Any]:
    return cast(list[Any], data[column].dropna().drop_duplicates().compute().tolist())


def local_view(
    model: Any, data: Any, steps: Any, at: Any, fme_kwargs: dict[str, Any]
) -> tuple[pd.DataFrame, dict[Any, Any], pd.DataFrame, dict[str, Any]]:
    """``(local, steps, base, fme_kwargs)`` for the pandas MER of Dask ``data`` (see the module docstring).

    ``local`` holds every column of the data with its dtype: the typical value
    for numeric columns, every level for the categorical columns that are
    stepped or in ``at``. Rule steps are returned as numbers; a Dask
    ``reference_data`` (or, with a detector, the data itself) is replaced by a
    pandas frame the detector is fitted on.
    """
    from .._utils.validation import seed_of
    from ..exceptions import StepError
    from ..extrapolation import EnvelopeDetector
    from ..steps import parse_steps
    from .common import as_dask, check_sample_size, envelope_frame, model_frames, reference_sample

    fme_kwargs = dict(fme_kwargs)
    sample_size = check_sample_size(fme_kwargs.pop("sample_size", None))
    data = _known(model_frames(model, as_dask(data, "data")))
    meta = data._meta
    base = typical_values_dask(data)
    if not hasattr(steps, "items"):
        raise StepError(
            f"`steps` must be a dict mapping feature names to steps, e.g. {{'age': 1}}, got {type(steps).__name__}."
        )
    named = [f for f in list(steps) + list(at or {}) if f in meta.columns]
    levels = {
        f: _distinct(data, f)
        for f in dict.fromkeys(named)
        if is_categorical(meta[f]) and not isinstance(meta[f].dtype, pd.CategoricalDtype)
    }
    size = max([1] + [len(v) for v in levels.values()])
    local = {}
    for c in meta.columns:
        if c in levels and levels[c]:
            vals = levels[c] + [levels[c][0]] * (size - len(levels[c]))
            local[c] = pd.Series(vals, dtype=meta[c].dtype)
        else:
            local[c] = pd.Series(np.repeat(base[c].to_numpy(), size), dtype=base[c].dtype)
    local = pd.DataFrame(local)
    resolved = dict(steps)
    for f, v in steps.items():
        if isinstance(v, str) and f in meta.columns and is_numeric(meta[f]):
            resolved[f] = parse_steps(data[[f]].compute(), {f: v})[0].value
    detector = fme_kwargs.get("extrapolation")
    reference = fme_kwargs.get("reference_data")
    if detector is not None or reference is not None and _is_dask(reference):
        ref = data if reference is None else _known(model_frames(model, as_dask(reference, "reference_data")))
        if detector is None or detector == "envelope" or isinstance(detector, EnvelopeDetector):
            # without a detector only the levels of the reference matter, which this frame has too
            fme_kwargs["reference_data"] = envelope_frame(ref)
        else:
            seed = seed_of(fme_kwargs.get("random_state"))
            fme_kwargs["reference_data"] = reference_sample(ref, sample_size, seed)[0]
    return local, resolved, base, fme_kwargs


def _is_dask(obj: Any) -> bool:
    from .._utils.validation import is_dask_collection

    return is_dask_collection(obj)
