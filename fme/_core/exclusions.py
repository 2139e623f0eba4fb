"""Exclusion bookkeeping of :func:`fme.fme`: which rows are left out, and why.

A row is not evaluated when a stepped feature is missing or infinite (no
finite step from there), when it is already at a categorical step's target
level (the observation-wise categorical ME of paper §5.1, Eq.
new_categorical_me, is taken over the other rows), or when x or x + h is an
extrapolation point (paper §4.2 and Appendix A.2; policy ``exclude`` or
``shrink``).

Each row gets an int8 code (0 evaluated, 1 missing or infinite, 2 already at
the level, 3 extrapolation, 4 a missing value in a non-stepped input of a
statsmodels formula model, left out as its fit left such rows out, Stata's
e(sample), 5 a categorical input at a level the fitted model never saw: the
order of the ``Summary.codes`` counts) and
only the rows left out get strings, as ``(positions, point, reason)`` notes:
object arrays over all rows would cost more than a cheap model's predict.
:func:`excluded_frame` turns codes and notes into ``FMEResult.excluded``.

These are private workers of :mod:`fme._core.kernel`; they trust the plan that
:func:`fme._core.plan.resolve_plan` and :meth:`~fme._core.plan.Plan.with_steps` validated.
"""

from __future__ import annotations

import functools
from typing import Any, cast

import numpy as np
import pandas as pd

from .._utils.columns import frame_of
from .._utils.numfmt import count
from .._utils.threads import finite_sum
from ..exceptions import DataError, ExtrapolationError
from ..extrapolation.guards import call_detector, check_flags, detector_name
from ..steps import MIN_STEP_FRACTION, Step, apply_steps
from .plan import Plan
from .shrink import shrink_steps

__all__ = [
    "check_evaluated",
    "code_of",
    "every_row",
    "excluded_frame",
    "N_CODES",
    "leave_out_incomplete",
    "counts_per_key",
]

#: ``reason_type`` of each exclusion code (code 0: evaluated, never shown).
_REASON_TYPES = np.array(["", "missing", "at_level", "extrapolation", "incomplete", "unknown_level"], dtype=object)


def code_of(reason_type: str) -> int:
    """The exclusion code of a ``reason_type`` of ``excluded`` (``"extrapolation"``: 3)."""
    return int(np.flatnonzero(_REASON_TYPES == reason_type)[0])


#: Number of exclusion codes (0 evaluated; 1 missing; 2 at level; 3 extrapolation; 4 incomplete model input;
#: 5 a level the fitted model never saw).
N_CODES = 6

Notes = list[tuple[np.ndarray, Any, Any]]

#: The positions of every row for the last row count asked (read-only): calls on the same data reuse them.
_EVERY_ROW: list[np.ndarray] = [np.arange(0)]


def every_row(n: int) -> np.ndarray:
    """The positions 0, 1, ..., ``n`` - 1 of a batch without exclusions (int64, read-only), the same array for
    calls with the same ``n``: a fresh 8 MB array per 10^6 rows costs about 1 ms of page faults in every fME
    call, more than its arithmetic. Read-only, so that no caller can change what the next call is given."""
    last = _EVERY_ROW[0]
    if last.size != n:
        last = np.arange(n)
        last.flags.writeable = False
        _EVERY_ROW[0] = last  # one slot, replaced whole: safe from several threads
    return last


def _unknown(col: pd.Series, levels: tuple[Any, ...]) -> np.ndarray:
    """Rows of ``col`` with a value that is none of ``levels`` (missing values aside); a value matches a level
    equal to it or written the same (a model may state its levels as text)."""
    known = pd.Index(list(levels), dtype=object)
    out: np.ndarray = ~col.isin(known).to_numpy() & col.notna().to_numpy()
    if out.any():  # only the unmatched values are compared as text
        text = col[out].astype(str).isin(known.astype(str)).to_numpy()
        out[np.flatnonzero(out)[text]] = False
    return out


def _all_finite(col: pd.Series) -> bool:
    """Whether ``col`` is a NumPy float column without a missing or infinite value, in one summing pass: the
    sum is finite unless some value is NaN or infinite (or the total overflows, which the element-wise check
    then clears). False for every other dtype (the caller's masks decide)."""
    if not isinstance(col.dtype, np.dtype) or col.dtype.kind != "f":
        return False
    values = col.to_numpy()
    return finite_sum(values) or bool(np.isfinite(values).all())


def value_exclusions(
    data: pd.DataFrame,
    steps: tuple[Step, ...],
    complete_cols: tuple[Any, ...] = (),
    known_levels: tuple[tuple[Any, tuple[Any, ...]], ...] = (),
) -> tuple[np.ndarray, Notes]:
    """Codes 1 (missing or infinite value in a stepped feature), 2 (already at the target level), 4
    (missing value in one of ``complete_cols``, the model inputs a statsmodels formula needs complete) and 5
    (a value of one of ``known_levels``' columns that the fitted model never saw: it cannot predict there).

    A row keeps the first code it gets, in the order of ``steps``, then ``complete_cols``, ``known_levels``.
    """
    code = np.zeros(len(data), dtype=np.int8)
    notes: Notes = []
    nothing = np.empty(0, dtype=np.intp)
    for s in steps:
        col = data[s.feature]
        if s.is_numeric and _all_finite(col):
            # the usual float column: one read-only pass settles it, no masks over all rows
            notes.append((nothing, "", f"missing value in {s.feature}"))
            notes.append((nothing, "", f"infinite value in {s.feature}"))
            continue
        miss = col.isna().to_numpy() & (code == 0)
        code[miss] = 1
        notes.append((np.flatnonzero(miss), "", f"missing value in {s.feature}"))
        if s.is_numeric:
            # +-inf: no finite step from there; left out and counted like a missing value
            inf = np.isinf(col.to_numpy(dtype=float, na_value=np.nan)) & (code == 0)
            code[inf] = 1
            notes.append((np.flatnonzero(inf), "", f"infinite value in {s.feature}"))
        if not s.is_numeric:
            # nullable dtypes ("string", "boolean") compare to <NA> on missing values
            at = (col == s.value).to_numpy(dtype=bool, na_value=False) & (code == 0)
            code[at] = 2
            notes.append((np.flatnonzero(at), "", f"{s.feature} already at level {s.value!r}"))
    for c in complete_cols:
        miss = data[c].isna().to_numpy() & (code == 0)
        if miss.any():
            code[miss] = 4
            notes.append((np.flatnonzero(miss), "", f"missing value in {c} (a model input)"))
    for c, levels in known_levels:
        unknown = _unknown(data[c], levels) & (code == 0)
        if unknown.any():
            code[unknown] = 5
            notes.append((np.flatnonzero(unknown), "", f"{c} at a level the model never saw when it was fitted"))
    return code, notes


def extrapolation_exclusions(
    plan: Plan,
    X: pd.DataFrame,
    cand: np.ndarray,
    code: np.ndarray,
    notes: Notes,
) -> tuple[np.ndarray, pd.DataFrame, dict[str, np.ndarray] | None, dict[str, np.ndarray]]:
    """Apply ``plan``'s fitted detector and policy to the candidate rows ``X`` (positions ``cand``).

    Both x and x + h are flagged. ``exclude``/``shrink`` set code 3 and a note
    on ``code``/``notes`` (in place) for the rows left out; ``shrink`` also
    gives each remaining row's effective steps ``h``; ``keep`` only adds the
    ``extrapolation`` and ``extrapolation_point`` columns.

    Returns
    -------
    cand, X : the rows still to evaluate (positions in the batch and their model columns)
    h : dict of per-row numeric steps, or None (the plan's steps)
    extra_cols : dict of extra ``results`` columns (``keep`` only)
    """
    parsed = plan.steps
    h = None
    extra_cols: dict[str, np.ndarray] = {}
    if plan.detector is not None and cand.size:
        detector, cols, policy = plan.detector, plan.detector_cols, plan.policy
        flag_x = check_flags(call_detector(detector, "flag", X[cols], "x"), len(X), detector)
        moved = apply_steps(X, parsed)[cols]
        flag_xh = check_flags(call_detector(detector, "flag", moved, "x + h"), len(X), detector)
        if policy == "shrink":
            h = shrink_steps(detector, cast(list[str], cols), X, parsed, flag_xh & ~flag_x)
            flag_xh = flag_xh & ~flag_x & (np.abs(np.column_stack(list(h.values()))).max(axis=1) == 0)
        ep = flag_x | flag_xh
        pts = np.where(flag_x & flag_xh, "x and x+h", np.where(flag_x, "x", np.where(flag_xh, "x+h", "")))
        why = _explain(detector, X[cols], flag_x)
        why_h = _explain(detector, moved, flag_xh)
        why = np.where(flag_x & flag_xh, why + " | x+h: " + why_h, np.where(flag_xh, why_h, why))
        if policy == "shrink":
            why = np.where(flag_xh & ~flag_x, f"no step of at least {MIN_STEP_FRACTION:g} h stays inside", why)
        if policy == "keep":
            extra_cols["extrapolation"] = ep
            extra_cols["extrapolation_point"] = pts
        else:
            code[cand[ep]] = 3
            notes.append((cand[ep], pts[ep], why[ep]))
            keep = ~ep
            cand, X = cand[keep], X.iloc[keep]
            if h is not None:
                h = {k: v[keep] for k, v in h.items()}
    elif plan.detector is not None:  # no candidate rows: the same columns, empty
        if plan.policy == "shrink":
            h = {s.feature: np.empty(0) for s in parsed}
        if plan.policy == "keep":
            extra_cols = {"extrapolation": np.empty(0, dtype=bool), "extrapolation_point": np.empty(0, dtype=object)}
    return cand, X, h, extra_cols


def _explain(detector: Any, points: pd.DataFrame, flags: np.ndarray) -> np.ndarray:
    """Reason per point, asked of the detector for the flagged points only (strings are costly)."""
    out = np.full(len(points), "", dtype=object)
    idx = np.flatnonzero(flags)
    if idx.size == 0:
        return out
    if hasattr(detector, "explain"):
        out[idx] = np.asarray(detector.explain(points.iloc[idx], np.ones(idx.size, dtype=bool)), dtype=object)
    else:
        out[idx] = f"flagged by {detector_name(detector)}"
    return out


def excluded_frame(code: np.ndarray, notes: Notes, index: pd.Index) -> pd.DataFrame:
    """The ``excluded`` table from per-row codes and (positions, point, reason) notes."""
    if not code.any():  # none excluded: no index pass, and the empty text columns made once per process
        empty = _empty_text()
        return frame_of({"reason_type": empty, "point": empty, "reason": empty}, index[:0])
    ex = np.flatnonzero(code)
    point = np.full(ex.size, "", dtype=object)
    reason = np.full(ex.size, "", dtype=object)
    if notes and ex.size:  # each row's slot among the excluded: an array over all rows, only when one is excluded
        slot = np.full(code.size, -1)
        slot[ex] = np.arange(ex.size)
        for pos, pts, why in notes:
            point[slot[pos]] = pts
            reason[slot[pos]] = why
    return frame_of(
        {"reason_type": _REASON_TYPES[code[ex]].astype(str), "point": point.astype(str), "reason": reason.astype(str)},
        index[ex],
    )


@functools.cache
def _empty_text() -> Any:
    """An empty column of text as the frame of :func:`excluded_frame` holds it (pandas' string dtype, an Arrow
    array: immutable, so every empty table may hold the same one)."""
    return pd.Series(np.array([], dtype=object).astype(str)).array


def _all_excluded_message(steps: tuple[Step, ...], reference: pd.DataFrame, n: int) -> str:
    ranges = []
    for s in steps:
        if s.is_numeric and s.feature in reference.columns:
            col = reference[s.feature]
            ranges.append(f"{s.feature} in [{col.min():.6g}, {col.max():.6g}]")
    where = f" (reference range: {', '.join(ranges)})" if ranges else ""
    return (
        f"all {count(n, 'row')} are extrapolation points for the step {', '.join(s.describe() for s in steps)}{where}; "
        "use a smaller step, on_extrapolation='shrink', or check reference_data."
    )


def check_evaluated(plan: Plan, code: np.ndarray | None, reference: Any, counts: np.ndarray | None = None) -> None:
    """Raise when no row at all was evaluated (``counts``: rows per exclusion code, if ``code`` is None).

    ``reference`` is a callable giving the reference data, called only then
    (on Dask data it is a computation), for the range named in the message.
    """
    counts = np.bincount(cast(np.ndarray, code), minlength=N_CODES) if counts is None else counts
    if counts[0] > 0:
        return
    label = ", ".join(s.describe() for s in plan.steps)
    if counts[3] == 0:
        raise DataError(
            f"no row can be evaluated for the step {label}: every row has a "
            "missing or infinite value in a stepped feature or is already at the target level"
            + (f", or a missing value in a model input ({count(int(counts[4]), 'row')})." if counts[4] else ".")
        )
    raise ExtrapolationError(_all_excluded_message(plan.steps, reference(), int(counts[3])))


def leave_out_incomplete(data: Any, predictor: Any) -> tuple[Any, Any, np.ndarray | None]:
    """(the rows of ``data`` whose model inputs are complete, the others, pandas: which rows are kept, to subset
    per-row weights with; Dask: None): the one rule of every verb for a
    statsmodels formula model's rows with a missing input (code 4, "incomplete": its fit left such rows out,
    Stata's ``e(sample)``, marginaleffects drops them). pandas or Dask data (lazily); ``data`` itself and an
    empty frame when the model states no such columns."""
    adapter = predictor.adapter
    columns = [] if adapter is None else [c for c in adapter.complete_columns() if c in data.columns]
    if not columns:
        return data, data.iloc[:0] if isinstance(data, pd.DataFrame) else data._meta, None
    missing = data[columns].isna().any(axis=1)
    keep = None if not isinstance(data, pd.DataFrame) else ~missing.to_numpy(dtype=bool)
    return data[~missing], data[missing], keep


def counts_per_key(rows: Any, keys: pd.DataFrame, by: list[Any]) -> np.ndarray:
    """How many of ``rows`` (pandas or Dask: then counted in one pass) fall in each group of ``keys`` (the
    ``by`` groups of a table, in its order; one group without ``by``)."""
    if not by:
        return np.array([len(rows)], dtype=np.int64)
    sizes = rows[by].groupby(by, dropna=False).size()
    sizes = sizes.compute() if not isinstance(sizes, pd.Series) else sizes
    found = sizes.rename("_n").reset_index()
    merged = keys[by].reset_index(drop=True).merge(found, on=by, how="left") if len(found) else None
    if merged is None:
        return np.zeros(len(keys), dtype=np.int64)
    return np.asarray(merged["_n"].fillna(0).to_numpy(dtype=np.int64), dtype=np.int64)
