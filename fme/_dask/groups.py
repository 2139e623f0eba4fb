"""The ``by`` groups of Dask data: their keys over all rows and their sizes (the rules: :mod:`fme._core.groups`).

On Dask data every partition returns, for each group g, mergeable sums of its
evaluated rows in the same pass as the overall summary
(:func:`fme._dask.effects._chunk_pass`): the row count of the group over all rows
(excluded ones too), the :class:`~fme._core.summary.Moments` of its fMEs, the sum
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

from typing import Any, cast

import numpy as np
import pandas as pd

from .._core.groups import (  # noqa: F401
    GroupSpec,
    GroupSums,
    group_codes,
    group_sums,
    indicator,  # noqa: F401 - public here for the bootstrap's sums
    one_group,
    row_weights,
    sorted_keys,
)
from .._utils.validation import check_by_missing

__all__ = [
    "GroupSpec",
    "GroupSums",
    "group_keys",
    "group_codes",
    "group_sums",
    "group_sizes",
    "check_weights_dask",
    "one_group",
    "indicator",
    "row_weights",
]


def _weight_checks(part: pd.DataFrame, column: str) -> np.ndarray:
    w = part[column].to_numpy(dtype=float)
    return np.array([np.sum(~np.isfinite(w)), np.sum(w < 0), np.sum(w > 0)], dtype=np.int64)


def check_weights_dask(data: Any, column: str) -> None:
    """The checks of the pandas path's weights (finite, non-negative, not all zero) over all rows, one
    reduction of the column."""
    from dask.base import compute
    from dask.delayed import delayed

    from ..exceptions import ParameterError

    checks = [delayed(_weight_checks)(p, column) for p in data.to_delayed()]
    bad, negative, positive = np.sum(compute(*checks), axis=0)  # type: ignore[no-untyped-call]  # dask: untyped
    if bad or negative or not positive:
        raise ParameterError(
            f"wts={column!r} must be finite, non-negative and not all zero ({bad} non-finite, "
            f"{negative} negative, {positive} positive values)."
        )


def lazy_group_keys(data: Any, by: list[str], missing: str = "group") -> dict[str, Any]:
    """What :func:`group_keys` reads of the Dask ``data``, not yet computed (a verb computes it with its
    other small reductions in one round trip): the distinct ``by`` rows, and with ``missing='raise'`` the
    missing values per column and the row count (for the error's message)."""
    lazy = {"distinct": data[by].drop_duplicates(split_out=1)}  # a tree reduction, not a shuffle
    if missing == "raise":
        lazy.update({("missing", c): data[c].isna().sum() for c in by})
        lazy["rows"] = data.shape[0]
    return lazy


def group_keys(data: Any, by: list[str], missing: str = "group", fetched: dict[Any, Any] | None = None) -> GroupSpec:
    """The groups of the Dask ``data`` by ``by``: as the pandas path's ``groupby(sort=True, observed=True,
    dropna=False)`` (a missing value is a group, last); ``missing='raise'``: a DataError if there is one.
    ``fetched``: the computed :func:`lazy_group_keys` (computed here when None)."""
    if fetched is None:
        from dask.base import compute

        lazy = lazy_group_keys(data, by, missing)
        fetched = dict(zip(lazy, compute(*lazy.values())))  # type: ignore[no-untyped-call]  # dask's compute is untyped
    distinct = fetched["distinct"]
    if missing == "raise" and distinct.isna().any().any():
        check_by_missing({c: int(fetched[("missing", c)]) for c in by}, int(fetched["rows"]))
    return GroupSpec(list(by), sorted_keys(distinct, list(by)))


def _sizes(part: pd.DataFrame, spec: GroupSpec) -> np.ndarray:
    codes = group_codes(part, spec)
    return np.bincount(codes[codes >= 0], minlength=spec.n_groups).astype(np.int64)


def group_sizes(data: Any, spec: GroupSpec) -> np.ndarray:
    """Rows per group over all of ``data`` (for a table row nothing could be evaluated on)."""
    from dask.base import compute
    from dask.delayed import delayed

    sizes = [delayed(_sizes)(p, spec) for p in data.to_delayed()]
    return cast(np.ndarray, np.sum(compute(*sizes), axis=0))  # type: ignore[no-untyped-call]  # dask: untyped
