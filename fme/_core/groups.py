"""The ``by=`` groups of every averaging verb, for both engines: one validation, one order, one numbering.

:func:`fme.ame`, :func:`fme.avg_predictions`, :func:`fme.avg_slopes` and :func:`fme.avg_comparisons` (pandas or
Dask data) average per group of the ``by`` column(s). The rules, written once here:

* ``by`` is a column label of any hashable type (a string, an integer, ...) or a list/tuple of them;
  anything else, or a label that is not a column, raises an :class:`~fme.exceptions.FMEError` naming ``by``
  and the frame's columns (:func:`check_by`);
* the groups are the distinct values of the ``by`` columns, sorted as pandas'
  ``groupby(sort=True, observed=True, dropna=False)`` sorts them, a missing value a group of its own, listed
  last (:func:`sorted_keys`); group ``g`` is the ``g``-th key;
* in memory every row gets its group's code at once (:func:`frame_groups`); on Dask data the keys come from
  one reduction of the distinct values (:func:`fme._dask.groups.group_keys`) and each chunk's rows are matched
  to them (:func:`group_codes`), so both engines number the groups alike.

The per-group sums of the fMEs of one chunk (:func:`group_sums`, :class:`GroupSums`) merge across chunks;
group g's AME is Σ fME / n_g, its delta-method gradient Σ J / n_g (paper §3.2 defines the AME).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import sparse

from .._utils.validation import check_name_clash
from ..exceptions import FeatureError, ParameterError
from .summary import Moments, WMoments

__all__ = [
    "check_by",
    "sorted_keys",
    "frame_groups",
    "GroupSpec",
    "GroupSums",
    "one_group",
    "row_weights",
    "group_codes",
    "group_sums",
    "group_means",
    "indicator",
    "BY_FIX",
]

#: The way out of a ``by`` column named like one of the table's own columns.
BY_FIX = "Pass it under another name, e.g. data.assign({name}_group=data[{name!r}]) with by='{name}_group'."


def check_by(columns: Iterable[Any], by: Any, reserved: Iterable[Any] = ()) -> list[Any]:
    """The ``by`` columns as a list (empty for ``by=None``), checked against the frame's ``columns``.

    Parameters
    ----------
    columns : index-like
        The columns of the (model) frame, or of a Dask frame's ``_meta``.
    by : hashable, list or tuple of hashables, or None
        A column label of any hashable type, or several.
    reserved : iterable, optional
        The table's own column names: a ``by`` column named like one raises
        :class:`~fme.exceptions.NameClashError` (the table would hold two such columns).

    Raises
    ------
    ParameterError
        ``by`` is neither a label nor a list of labels (an unhashable entry, an empty list).
    FeatureError
        A label that is not a column of the frame.
    """
    if by is None:
        return []
    columns = list(columns)
    shown = columns[:20]
    cols = list(by) if isinstance(by, (list, tuple, np.ndarray, pd.Index)) else [by]
    if not cols or any(not isinstance(c, Hashable) or isinstance(c, tuple) for c in cols):
        raise ParameterError(
            f"by must be a column name or a list of column names (labels of any hashable type), "
            f"got {by!r}; use some of the data's columns {shown}."
        )
    missing = [c for c in cols if c not in columns]
    if missing:
        raise FeatureError(f"by column(s) {missing} are not columns of the data; use some of {shown}.")
    if len(set(cols)) != len(cols):
        raise ParameterError(f"by names a column twice ({by!r}); name each column once.")
    check_name_clash(cols, reserved, "by", BY_FIX)
    return cols


def sorted_keys(distinct: pd.DataFrame, by: list[Any]) -> pd.DataFrame:
    """The groups' keys (one row each, columns ``by``) from frame rows holding every distinct combination,
    sorted as ``groupby(sort=True, observed=True, dropna=False)`` (a missing value last)."""
    gb = distinct[by].groupby(by, sort=True, observed=True, dropna=False)
    return gb.size().index.to_frame(index=False)


@dataclass(frozen=True, eq=False)
class GroupSpec:
    """The ``by`` columns and their sorted distinct values (one row per group); ``by=[]``: one group of all
    rows. ``weights``: the column of the rows' weights (``wts=``), or None."""

    by: list[Any]
    keys: pd.DataFrame
    weights: Any = None

    @property
    def n_groups(self) -> int:
        return len(self.keys)


def frame_groups(data: pd.DataFrame, by: list[Any]) -> tuple[np.ndarray, GroupSpec]:
    """The group code of every row of an in-memory ``data`` and the groups (:func:`sorted_keys` order)."""
    if not by:
        return np.zeros(len(data), dtype=np.int64), one_group()
    gb = data[by].groupby(by, sort=True, observed=True, dropna=False)
    codes = gb.ngroup().to_numpy(dtype=np.int64)
    return codes, GroupSpec(list(by), gb.size().index.to_frame(index=False))


@dataclass(frozen=True, eq=False)
class GroupSums:
    """Mergeable per-group sums (arrays over groups); with weights, ``jacobian`` is the weighted sum and
    ``weighted`` the rows' weighted moments."""

    size_all: np.ndarray
    fme: Moments
    jacobian: np.ndarray | None = None
    weighted: WMoments | None = None

    def merge(self, other: GroupSums) -> GroupSums:
        # a chunk without evaluated rows has no Jacobian rows: it adds nothing
        jac = (
            other.jacobian
            if self.jacobian is None
            else self.jacobian
            if other.jacobian is None
            else self.jacobian + other.jacobian
        )
        wm = None if self.weighted is None else self.weighted.merge(cast(WMoments, other.weighted))  # both weighted
        return GroupSums(self.size_all + other.size_all, self.fme.merge(other.fme), jac, wm)


def one_group(weights: Any = None) -> GroupSpec:
    """All rows as one group (no ``by``; with ``wts=``, the weights' column)."""
    return GroupSpec([], pd.DataFrame(index=[0]), weights)


def row_weights(part: pd.DataFrame, spec: GroupSpec) -> np.ndarray | None:
    """The weights of the rows of ``part`` (None without ``wts=``)."""
    return None if spec.weights is None else part[spec.weights].to_numpy(dtype=float)


def group_codes(part: pd.DataFrame, spec: GroupSpec) -> np.ndarray:
    """The group of every row of ``part`` (a missing ``by`` value matches the missing key, as pandas merges;
    a value that is not a key gets -1)."""
    if not spec.by:
        return np.zeros(len(part), dtype=np.int64)
    code = "__fme_group"
    right = spec.keys.assign(**{code: np.arange(spec.n_groups)})
    left = part[spec.by].reset_index(drop=True)
    # the keys are unique: a left merge keeps the rows and their order
    merged = left.merge(right, how="left", on=spec.by, sort=False)
    return cast(np.ndarray, merged[code].fillna(-1).to_numpy(dtype=np.int64))


def indicator(codes: np.ndarray, n_groups: int, weights: np.ndarray | None = None) -> sparse.csr_matrix:
    """Sparse (groups x rows) sums: 1 (or the row's weight) where the row is in the group."""
    used = np.flatnonzero(codes >= 0)
    w = np.ones(used.size) if weights is None else np.asarray(weights, dtype=float)[used]
    return sparse.csr_matrix((w, (codes[used], used)), shape=(n_groups, codes.size))


def _moments(values: np.ndarray, codes: np.ndarray, n_groups: int) -> Moments:
    """Per-group count, mean and sum of squared deviations of ``values`` (codes < 0 and NaN left out)."""
    ok = (codes >= 0) & ~np.isnan(values)
    c, v = codes[ok], values[ok]
    n = np.bincount(c, minlength=n_groups).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, np.bincount(c, weights=v, minlength=n_groups) / np.maximum(n, 1), 0.0)
    m2 = np.bincount(c, weights=(v - mean[c]) ** 2, minlength=n_groups)
    return Moments(n, mean, m2)


def group_means(values: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """The mean of ``values`` in each of ``n_groups`` groups (``codes`` from :func:`frame_groups` or
    :func:`group_codes`; a NaN value and a code < 0 left out); NaN for a group without a value.

    Each group's mean is ``numpy.nanmean`` of its values in row order, so that one group of all rows gives
    the very float of ``numpy.nanmean(values)`` (a bincount would round differently)."""
    values = np.asarray(values, dtype=float)
    codes = np.asarray(codes, dtype=np.int64)
    order = np.argsort(codes, kind="stable")  # each group's rows stay in row order
    cuts = np.searchsorted(codes[order], np.arange(n_groups + 1))
    out = np.full(n_groups, np.nan)
    for g in range(n_groups):
        part = values[order[cuts[g] : cuts[g + 1]]]
        if not np.isnan(part).all():  # an empty group, or one of NaNs only, stays NaN
            out[g] = float(np.nanmean(part))
    return out


def group_sums(
    batch: Any, codes_all: np.ndarray, n_groups: int, weights_all: np.ndarray | None = None
) -> tuple[GroupSums, dict[int, np.ndarray]]:
    """A chunk's :class:`GroupSums` and, per group, its sorted fMEs (NaN dropped); ``weights_all``: the
    weights of the chunk's rows (weighted sums beside the unweighted spread)."""
    size_all = np.bincount(codes_all[codes_all >= 0], minlength=n_groups).astype(np.int64)
    codes = codes_all[batch.cand]
    fm = batch.results["fme"].to_numpy(dtype=float)
    w = None if weights_all is None else weights_all[batch.cand]
    jac = None
    rows = batch.rows
    if rows is not None and rows.method == "delta":
        jac = np.asarray(indicator(codes, n_groups, w) @ rows.jacobian)
    weighted = None
    if w is not None:
        # the rows the unweighted moments count (a NaN fME is left out of both)
        weighted = WMoments.of(fm, np.where(np.isnan(fm), -1, codes), w, n_groups)
    sums = GroupSums(size_all, _moments(fm, codes, n_groups), jac, weighted)
    ok = (codes >= 0) & ~np.isnan(fm)
    order = np.lexsort((fm[ok], codes[ok]))
    c, v = codes[ok][order], fm[ok][order]
    cuts = np.searchsorted(c, np.arange(n_groups + 1))
    parts = {g: v[cuts[g] : cuts[g + 1]] for g in range(n_groups) if cuts[g + 1] > cuts[g]}
    return sums, parts
