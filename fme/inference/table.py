"""Tables of estimates that carry their joint uncertainty: :class:`EstimatesTable`.

The tables of :func:`fme.ame`, :func:`fme.avg_predictions`, :func:`fme.avg_slopes`,
:func:`fme.avg_comparisons`, :func:`fme.interaction` and :func:`fme.hypotheses` are ``EstimatesTable``
objects: pandas DataFrames (printed with the estimate and its interval first) that also hold the joint uncertainty of
their rows (an :class:`~fme.inference.Estimates`: delta gradients and the parameter covariance, the bootstrap
refits' draws, or the fixed-model standard errors; paper §3.2 and §5.5), so that :func:`fme.hypotheses`
can test any linear or non-linear combination of the rows later.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple, cast

import numpy as np
import pandas as pd

from .._utils.frames import ReadableFrame
from .._utils.numfmt import count
from ..exceptions import ParameterError
from .estimates import Estimates
from .wald import covariance

__all__ = ["EstimatesTable", "JointEstimates"]

#: A shown estimate may differ from its stored one by rounding only: this share of its standard error
#: (or, without one, of its magnitude) cannot change a test's result.
_SE_SHARE = 1e-6
_RTOL = 1e-9


class JointEstimates(NamedTuple):
    """The estimates :func:`fme.hypotheses` tests, as a result hands them over.

    Attributes
    ----------
    estimates : Estimates
        One estimate per row, in the order printed, with their joint uncertainty.
    labels : list of str
        ``b1``, ``b2``, ... (the names hypotheses use for the rows).
    undefined : ndarray of bool
        Rows whose estimate is undefined (an empty group: NaN standard error).
    conf_level : float
        The result's confidence level (hypotheses' default).
    """

    estimates: Estimates
    labels: list[str]
    undefined: np.ndarray
    conf_level: float


def _take(est: Estimates, positions: np.ndarray) -> Estimates:
    """The estimates at ``positions`` (repeats allowed), each with its own uncertainty and t degrees of freedom."""
    m = est.estimate.size

    def pick(a: Any) -> Any:
        return a if a is None or np.ndim(a) == 0 or np.shape(a)[0] != m else np.asarray(a)[positions]

    return replace(
        est,
        estimate=np.asarray(est.estimate)[positions],
        grad=pick(est.grad),
        draws=pick(est.draws),
        se=pick(est.se),
        df=pick(est.df),
    )


class EstimatesTable(ReadableFrame):
    """A DataFrame of estimates that keeps their joint uncertainty, for :func:`fme.hypotheses`.

    Indexed and computed with like any DataFrame; five public attributes ride along. Printed (repr,
    ``to_string``) with the labels, the estimate and its interval first, within the display width
    (:class:`~fme._utils.frames.ReadableFrame`); the columns themselves keep their order.

    Attributes
    ----------
    estimates : Estimates or None
        The joint uncertainty of the estimates (one per row of the table as produced). None when no
        joint covariance is known (rows of different inference methods, or a frame computed anew).
    estimates_index : list
        The index label of each estimate's row, in the order of ``estimates``: how rows find their
        estimate after a row selection or reordering.
    conf_level : float
        The confidence level of the table's intervals (:func:`fme.hypotheses`' default).
    bootstrap : dict or None
        Under the bootstrap, the refits' record: ``n_resamples``, ``n_failed``, ``n_nonconverged``,
        ``errors``.
    scale : str or None
        For a model with an exposure or offset, which scale the effects are on.

    Notes
    -----
    What keeps the link between rows and estimates: ``copy``, column selection (``t[["feature", "ame"]]``),
    row selection (``t.iloc[[2, 0]]``, ``t.loc[mask]``, ``head``), ``sort_values``/``sort_index`` (also with
    ``ignore_index=True``), ``reset_index``, ``set_index``, pickling, and ``pd.concat`` of pieces of one
    table (rows or columns). What drops it (``estimates`` None): ``pd.concat`` of different tables,
    ``merge``, and a plain ``pd.DataFrame(t)``. Relabelling rows by other means (assigning ``t.index``,
    ``rename``, ``sample(ignore_index=True)``) is caught when :meth:`joint_estimates` is called: rows
    whose labels are not among ``estimates_index``, or whose shown estimate (``ame`` or ``estimate``)
    is not theirs, are refused with a :class:`~fme.exceptions.ParameterError`; so is a table whose
    estimate column was changed.

    A table with more to carry is a subclass that names its typed attributes in ``_metadata`` (and returns
    itself from ``_constructor``), such as :func:`fme.learner_ame`'s ``learner`` and :func:`fme.interaction`'s
    ``per_row``: they ride along the operations above as these five do. pandas' ``DataFrame.attrs`` carries
    nothing of fme (it is experimental, and many operations drop it).
    """

    _metadata = ["estimates", "estimates_index", "conf_level", "bootstrap", "scale"]
    estimates: Estimates | None = None
    estimates_index: list[Any] | None = None
    conf_level: float = 0.95
    bootstrap: dict[str, Any] | None = None
    scale: str | None = None

    @property
    def _constructor(self) -> type[EstimatesTable]:
        return EstimatesTable

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        estimates: Estimates | None,
        *,
        conf_level: float = 0.95,
        bootstrap: dict[str, Any] | None = None,
        scale: str | None = None,
    ) -> EstimatesTable:
        """A table of ``frame`` (copied, with the metadata pandas itself carries from frame to frame) whose rows
        are ``estimates``, in order.

        Parameters
        ----------
        frame : DataFrame
            One row per estimate.
        estimates : Estimates or None
            Their joint uncertainty; None when it is not known.
        conf_level : float, default=0.95
        bootstrap, scale : optional
            The refits' record and the scale note (see the class's attributes).
        """
        if not isinstance(frame, pd.DataFrame):
            raise ParameterError(f"EstimatesTable.from_frame takes a DataFrame, got {type(frame).__name__}.")
        if estimates is not None and (not isinstance(estimates, Estimates) or estimates.estimate.size != len(frame)):
            got = (
                f"{estimates.estimate.size} estimates" if isinstance(estimates, Estimates) else type(estimates).__name__
            )
            raise ParameterError(
                f"EstimatesTable.from_frame needs one estimate per row of the frame ({count(len(frame), 'row')}"
                f"), got {got}; pass an fme.inference.Estimates of the rows in order, or None."
            )
        # pandas' own propagation: what the frame carries for its user stays with the table
        out = cls(frame.copy()).__finalize__(frame)
        out.estimates = estimates
        out.estimates_index = list(out.index)
        out.conf_level = float(conf_level)
        out.bootstrap = bootstrap
        out.scale = scale
        return out

    # ---------------------------------------------------------------- rows and estimates
    def _positions(self) -> np.ndarray | None:
        """The position in ``estimates`` of each row, or None when a row's estimate cannot be found."""
        source = self.estimates_index
        if self.estimates is None or source is None or len(source) != self.estimates.estimate.size:
            return None
        if list(self.index) == list(source):
            return np.arange(len(source))
        lookup = pd.Index(source)
        if not lookup.is_unique:
            return None
        pos = lookup.get_indexer(self.index)
        return None if (pos < 0).any() else pos

    def _aligned(self) -> Estimates | None:
        """The estimates of the rows as they stand (None without a link)."""
        pos = self._positions()
        if pos is None:
            return None
        est = cast(Estimates, self.estimates)  # a position found: the estimates are there
        return est if np.array_equal(pos, np.arange(est.estimate.size)) else _take(est, pos)

    def _relabel(self, target: Any, est: Estimates | None) -> None:
        """After an operation that kept the rows in order but gave them new labels: the estimates follow."""
        if isinstance(target, EstimatesTable):
            target.estimates = est
            target.estimates_index = None if est is None else list(target.index)

    def joint_estimates(self) -> JointEstimates:
        """The estimates of the rows as they stand (selected, reordered), for :func:`fme.hypotheses`.

        Raises
        ------
        ParameterError
            When the table keeps no joint covariance, or its rows are no longer those it describes.
        """
        if self.estimates is None:
            raise ParameterError(
                "this table keeps no joint covariance of its rows (its rows mix inference methods, or it was "
                "computed anew, e.g. by merge or by concatenating different tables); call fme.hypotheses on a "
                "table fme.ame (or avg_predictions, avg_slopes, avg_comparisons, interaction) returned."
            )
        est = self._aligned()
        shown_col = "ame" if "ame" in self.columns else "estimate" if "estimate" in self.columns else None
        if est is not None and shown_col is not None:
            shown = pd.to_numeric(self[shown_col], errors="coerce").to_numpy(dtype=float)
            with np.errstate(invalid="ignore"):
                se = np.sqrt(np.abs(np.diag(covariance(est)))) if est.estimate.size else np.empty(0)
            se = np.where(np.isfinite(se), se, 0.0)
            both = np.isfinite(shown) & np.isfinite(est.estimate)
            gap = np.abs(shown - est.estimate)[both]
            allowed = (_RTOL * np.maximum(np.abs(shown), np.abs(est.estimate)) + _SE_SHARE * se)[both]
            if np.any(gap > allowed):
                est = None
        if est is None:
            raise ParameterError(
                "the rows of this table are not those its joint covariance describes (rows were relabelled, "
                "e.g. by assigning the index or rename, or the estimates were changed); select and reorder rows "
                "with t.iloc/t.loc/sort_values/reset_index, or call fme.hypotheses on the table as returned and "
                "pick rows with a hypothesis (a matrix of weights)."
            )
        if "std_error" in self.columns:
            undefined = pd.to_numeric(self["std_error"], errors="coerce").isna().to_numpy()
        else:
            undefined = ~np.isfinite(est.table(self.conf_level)["std_error"].to_numpy(dtype=float))
        return JointEstimates(est, [f"b{k + 1}" for k in range(len(self))], undefined, float(self.conf_level))

    # ---------------------------------------------------------------- operations that relabel rows
    def reset_index(self, *args: Any, **kwargs: Any) -> Any:
        est = self._aligned()
        out = super().reset_index(*args, **kwargs)
        self._relabel(self if out is None else out, est)
        return out

    def set_index(self, *args: Any, **kwargs: Any) -> Any:
        est = self._aligned()
        out = super().set_index(*args, **kwargs)
        self._relabel(self if out is None else out, est)
        return out

    def sort_values(self, *args: Any, ignore_index: bool = False, **kwargs: Any) -> Any:
        # sorted with the labels first, so the rows find their estimates, then relabelled
        out = super().sort_values(*args, **kwargs)
        return out if not ignore_index else self._reset_sorted(out)

    def sort_index(self, *args: Any, ignore_index: bool = False, **kwargs: Any) -> Any:
        out = super().sort_index(*args, **kwargs)
        return out if not ignore_index else self._reset_sorted(out)

    def _reset_sorted(self, out: Any) -> Any:
        """``ignore_index=True`` of a sort: the sorted rows (``out``, or ``self`` in place) relabelled 0..n-1."""
        if out is None:
            self.reset_index(drop=True, inplace=True)
            return None
        return out.reset_index(drop=True)

    def __finalize__(self, other: Any, method: str | None = None, **kwargs: Any) -> EstimatesTable:
        out: EstimatesTable = super().__finalize__(other, method=method, **kwargs)
        if method == "merge":
            out._relabel(out, None)
        elif method == "concat" and hasattr(other, "objs"):
            _concat_link(out, list(other.objs))
        return out


def _concat_link(out: EstimatesTable, objs: list[Any]) -> None:
    """``pd.concat`` of pieces of one table keeps its estimates (rows: stacked in the new order; columns:
    the shared rows); of anything else, none."""
    first = objs[0] if objs else None
    same = (
        isinstance(first, EstimatesTable)
        and first.estimates is not None
        and all(
            isinstance(o, EstimatesTable)
            and o.estimates is first.estimates
            and o.estimates_index == first.estimates_index
            for o in objs
        )
    )
    positions: list[np.ndarray | None] = [o._positions() for o in objs] if same else [None]
    if not same or any(p is None for p in positions):
        out._relabel(out, None)
        return
    first = cast(EstimatesTable, first)  # same: the first piece is a table with estimates
    # the pieces' attributes are the table's (a subclass's own ones too); the estimates follow the rows below
    for name in out._metadata:
        if name not in ("estimates", "estimates_index"):
            setattr(out, name, getattr(first, name))
    if len(out) == sum(len(o) for o in objs):
        out.estimates = _take(
            cast(Estimates, first.estimates), np.concatenate(cast(list[np.ndarray], positions)).astype(np.int64)
        )
        out.estimates_index = list(out.index)
    elif all(o.index.equals(out.index) for o in objs):
        out.estimates, out.estimates_index = first.estimates, first.estimates_index
    else:
        out._relabel(out, None)
