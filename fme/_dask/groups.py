"""Per-group sums of fMEs on Dask data: ``fme.ame(..., by=, hypothesis=)`` (issue 14).

The pandas path (:func:`fme.margins.ame`) averages the rows of each ``by``
group with a sparse averaging matrix (:func:`fme.inference.group_matrix`).
On Dask data every partition returns, for each group g, mergeable sums of its
evaluated rows in the same pass as the overall summary
(:func:`fme._dask.effects._partition_pass`): the row count of the group over all rows
(excluded ones too), the :class:`~fme._core.kernel.Moments` of its fMEs, the sum
of its rows' delta-method Jacobians, and its sorted fMEs (kept on the workers
for exact quartiles). The bootstrap sums each refit's fMEs per group
(:mod:`fme._dask.bootstrap`). Group g's AME is Σ fME / n_g, its delta-method
gradient Σ J / n_g and its bootstrap draw b Σ fME_b / n_g: the pandas figures
up to rounding (~1e-15 relative).

With ``wts=`` (a column of the data) each chunk also returns the groups'
weighted sums (:class:`fme._core.summary.WMoments`, the weighted Jacobian sums,
each refit's weighted sums), so the weighted AMEs and their uncertainty equal
the pandas ones up to rounding; without ``by`` all rows are one group.

Groups are the sorted distinct values of the ``by`` columns over all rows
(a missing ``by`` value is a group of its own, last, as in the pandas path), found by one
``drop_duplicates`` reduction and ordered by the same pandas ``groupby`` as
the pandas path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from .._core.summary import Moments, WMoments
from .._utils.validation import check_by_missing

__all__ = ["GroupSpec", "GroupSums", "group_keys", "group_codes", "group_sums", "group_sizes",
           "check_weights_dask", "one_group"]


@dataclass(frozen=True, eq=False)
class GroupSpec:
    """The ``by`` columns and their sorted distinct values (one row per group); ``by=[]``: one group of all
    rows. ``weights``: the column of the rows' weights (``wts=``), or None."""

    by: list[str]
    keys: pd.DataFrame
    weights: str | None = None

    @property
    def n_groups(self) -> int:
        return len(self.keys)


@dataclass(frozen=True, eq=False)
class GroupSums:
    """Mergeable per-group sums (arrays over groups); with weights, ``jacobian`` is the weighted sum and
    ``weighted`` the rows' weighted moments."""

    size_all: np.ndarray
    fme: Moments
    jacobian: np.ndarray | None = None
    weighted: WMoments | None = None

    def merge(self, other: "GroupSums") -> "GroupSums":
        jac = None if self.jacobian is None or other.jacobian is None else self.jacobian + other.jacobian
        wm = None if self.weighted is None else self.weighted.merge(other.weighted)
        return GroupSums(self.size_all + other.size_all, self.fme.merge(other.fme), jac, wm)


def one_group(weights: str | None = None) -> GroupSpec:
    """All rows as one group (``fme.ame(wts=)`` without ``by``)."""
    return GroupSpec([], pd.DataFrame(index=[0]), weights)


def _weight_checks(part: pd.DataFrame, column: str) -> np.ndarray:
    w = part[column].to_numpy(dtype=float)
    return np.array([np.sum(~np.isfinite(w)), np.sum(w < 0), np.sum(w > 0)], dtype=np.int64)


def check_weights_dask(data: Any, column: str) -> None:
    """The checks of the pandas path's weights (finite, non-negative, not all zero) over all rows, one
    reduction of the column."""
    import dask
    from dask import delayed

    from ..exceptions import ParameterError

    bad, negative, positive = np.sum(dask.compute(*[delayed(_weight_checks)(p, column)
                                                    for p in data.to_delayed()]), axis=0)
    if bad or negative or not positive:
        raise ParameterError(f"wts={column!r} must be finite, non-negative and not all zero ({bad} non-finite, "
                             f"{negative} negative, {positive} positive values).")


def row_weights(part: pd.DataFrame, spec: GroupSpec) -> np.ndarray | None:
    """The weights of the rows of ``part`` (None without ``wts=``)."""
    return None if spec.weights is None else part[spec.weights].to_numpy(dtype=float)


def lazy_group_keys(data: Any, by: list[str], missing: str = "group") -> dict[str, Any]:
    """What :func:`group_keys` reads of the Dask ``data``, not yet computed (a verb computes it with its
    other small reductions in one round trip): the distinct ``by`` rows, and with ``missing='raise'`` the
    missing values per column and the row count (for the error's message)."""
    lazy = {"distinct": data[by].drop_duplicates(split_out=1)}  # a tree reduction, not a shuffle
    if missing == "raise":
        lazy.update({("missing", c): data[c].isna().sum() for c in by})
        lazy["rows"] = data.shape[0]
    return lazy


def group_keys(data: Any, by: list[str], missing: str = "group", fetched: dict | None = None) -> GroupSpec:
    """The groups of the Dask ``data`` by ``by``: as the pandas path's ``groupby(sort=True, observed=True,
    dropna=False)`` (a missing value is a group, last); ``missing='raise'``: a DataError if there is one.
    ``fetched``: the computed :func:`lazy_group_keys` (computed here when None)."""
    if fetched is None:
        import dask

        lazy = lazy_group_keys(data, by, missing)
        fetched = dict(zip(lazy, dask.compute(*lazy.values())))
    distinct = fetched["distinct"]
    if missing == "raise" and distinct.isna().any().any():
        check_by_missing({c: int(fetched[("missing", c)]) for c in by}, int(fetched["rows"]))
    gb = distinct.groupby(by, sort=True, observed=True, dropna=False)
    return GroupSpec(list(by), gb.size().index.to_frame(index=False))


def group_codes(part: pd.DataFrame, spec: GroupSpec) -> np.ndarray:
    """The group of every row of ``part`` (a missing ``by`` value matches the missing key, as pandas merges)."""
    if not spec.by:
        return np.zeros(len(part), dtype=np.int64)
    right = spec.keys.assign(__fme_group=np.arange(spec.n_groups))
    left = part[spec.by].reset_index(drop=True)
    # the keys are unique and hold no missing value: a left merge keeps the rows and their order
    merged = left.merge(right, how="left", on=spec.by, sort=False)
    return merged["__fme_group"].fillna(-1).to_numpy(dtype=np.int64)


def _indicator(codes: np.ndarray, n_groups: int, weights: np.ndarray | None = None) -> sparse.csr_matrix:
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


def group_sums(batch: Any, codes_all: np.ndarray, n_groups: int,
               weights_all: np.ndarray | None = None) -> tuple[GroupSums, dict[int, np.ndarray]]:
    """A partition's :class:`GroupSums` and, per group, its sorted fMEs (NaN dropped); ``weights_all``: the
    weights of the partition's rows (weighted sums beside the unweighted spread)."""
    size_all = np.bincount(codes_all[codes_all >= 0], minlength=n_groups).astype(np.int64)
    codes = codes_all[batch.cand]
    fm = batch.results["fme"].to_numpy(dtype=float)
    w = None if weights_all is None else weights_all[batch.cand]
    jac = None
    rows = batch.rows
    if rows is not None and rows.method == "delta":
        jac = np.asarray(_indicator(codes, n_groups, w) @ rows.jacobian)
    weighted = None
    if w is not None:
        # the rows the unweighted moments count (a NaN fME is left out of both)
        weighted = WMoments.of(fm, np.where(np.isnan(fm), -1, codes), w, n_groups)
    sums = GroupSums(size_all, _moments(fm, codes, n_groups), jac, weighted)
    ok = (codes >= 0) & ~np.isnan(fm)
    order = np.lexsort((fm[ok], codes[ok]))
    c, v = codes[ok][order], fm[ok][order]
    cuts = np.searchsorted(c, np.arange(n_groups + 1))
    parts = {g: v[cuts[g]:cuts[g + 1]] for g in range(n_groups) if cuts[g + 1] > cuts[g]}
    return sums, parts


def _sizes(part: pd.DataFrame, spec: GroupSpec) -> np.ndarray:
    codes = group_codes(part, spec)
    return np.bincount(codes[codes >= 0], minlength=spec.n_groups).astype(np.int64)


def group_sizes(data: Any, spec: GroupSpec) -> np.ndarray:
    """Rows per group over all of ``data`` (for a table row nothing could be evaluated on)."""
    import dask
    from dask import delayed

    return np.sum(dask.compute(*[delayed(_sizes)(p, spec) for p in data.to_delayed()]), axis=0)
