"""Where a step leaves the data: :class:`ExtrapolationDisplay` (paper §6's extrapolation points).

The values of one feature over the data's rows, stacked: the rows evaluated (solid) and the extrapolation
points (hatched, the second encoding beside the colour), as a histogram of a numeric feature or bars per level
of a categorical one. Non-finite values are counted in the legend. Drawn with matplotlib: a stacked, hatched
histogram (see :mod:`fme.plotting`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._utils.validation import is_categorical
from ..exceptions import FeatureError, ParameterError
from ._common import (
    PlotStyle,
    check_effects,
    feature_label,
    legend_above,
    new_axes,
    resolve_style,
    step_label,
    style_axes,
)
from .data import finite_part, histogram_edges

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes

    from .._core.results import FMEResult

__all__ = ["ExtrapolationDisplay"]


def _plural(n: int, noun: str) -> str:
    return f"{noun}{'' if n == 1 else 's'}: {n:,}"


class ExtrapolationDisplay:
    """A feature's values over the rows evaluated and the extrapolation points of a step, stacked.

    Parameters
    ----------
    values : Series
        The feature's values over the data's rows.
    extrapolation : ndarray of bool
        True for the extrapolation points among ``values`` (left out, or kept and flagged).
    evaluated : ndarray of bool, optional
        True for the rows evaluated and not extrapolation points; default every other row. Rows of neither kind
        (left out for another reason) are not drawn; their non-finite values are counted with the others.
    feature : str
    units : dict, optional
        ``{feature: unit}`` for the axis label.
    step_text : str, optional
        The step as labels show it.

    Attributes
    ----------
    figure_, ax_ : Figure, Axes
    bars_ : list
        The drawn bar containers (evaluated, extrapolation points).
    n_evaluated_, n_extrapolation_ : int
        Rows drawn of each kind (non-finite values included, counted in the legend).
    not_drawn_ : str or None
        What was left out (non-finite values), as the legend says it.
    legend_ : Legend
    style_ : PlotStyle

    See Also
    --------
    FMEDisplay, fme.fme
    """

    def __init__(
        self,
        *,
        values: pd.Series,
        extrapolation: np.ndarray,
        feature: str,
        evaluated: np.ndarray | None = None,
        units: Mapping[str, str] | None = None,
        step_text: str | None = None,
    ) -> None:
        self.values = values
        self.extrapolation = np.asarray(extrapolation, dtype=bool)
        self.evaluated = (
            ~self.extrapolation if evaluated is None else np.asarray(evaluated, dtype=bool) & ~self.extrapolation
        )
        if self.extrapolation.shape != (len(values),) or self.evaluated.shape != (len(values),):
            raise ParameterError(
                f"extrapolation and evaluated must hold one flag per value ({len(values)}), got shapes "
                f"{self.extrapolation.shape} and {self.evaluated.shape}."
            )
        self.feature = feature
        self.units = dict(units or {})
        self.step_text = step_text

    @classmethod
    def from_effects(
        cls,
        effects: FMEResult,
        *,
        feature: str | None = None,
        units: Mapping[str, str] | None = None,
        ax: Axes | None = None,
        **plot_kw: Any,
    ) -> ExtrapolationDisplay:
        """Build the display from :func:`fme.fme` output with an extrapolation check, and plot it.

        Parameters
        ----------
        effects : FMEResult
            Computed with ``extrapolation=...``; with ``on_extrapolation='keep'`` the flagged rows that were kept.
        feature : str, optional
            Default the first numeric stepped feature (else the first stepped one).
        units : dict, optional
        ax : Axes, optional
        **plot_kw
            Passed to :meth:`plot` (``style``, ``bins``).

        Raises
        ------
        ParameterError
            No extrapolation check ran on ``effects``.
        FeatureError
            ``feature`` is not a column of the effects' data.
        """
        check_effects(effects, "ExtrapolationDisplay.from_effects")
        if effects.detector is None:
            raise ParameterError(
                "ExtrapolationDisplay draws the extrapolation points, but these effects were not checked for "
                "them; recompute with fme.fme(..., extrapolation='envelope') (or another detector)."
            )
        data = effects.data
        steps = [s.feature for s in effects.steps]
        if feature is None:
            feature = next((f for f in steps if not is_categorical(data[f])), steps[0])
        if feature not in data.columns:
            raise FeatureError(f"feature {feature!r} is not a column of the effects' data; pick one of {steps}.")
        res = effects.results
        if "extrapolation" in res.columns:  # kept and flagged: evaluated rows that are extrapolation points
            flagged = res.index[res["extrapolation"].to_numpy(dtype=bool)]
        else:
            flagged = effects.extrapolated.index
        display = cls(
            values=data[feature],
            extrapolation=data.index.isin(flagged),
            evaluated=data.index.isin(res.index),
            feature=feature,
            units=units,
            step_text=", ".join(step_label(s, dict(units or {})) for s in effects.steps),
        )
        return display.plot(ax=ax, **plot_kw)

    def plot(self, *, ax: Axes | None = None, style: PlotStyle | None = None, bins: int = 30) -> ExtrapolationDisplay:
        """Draw the display.

        Parameters
        ----------
        ax : Axes, optional
        style : PlotStyle, optional
            Evaluated rows in the ``bars`` colour; extrapolation points outlined in ``extrapolation`` with
            ``style.hatch``.
        bins : int, default=30
            Histogram bins of a numeric feature.

        Returns
        -------
        self
        """
        st = self.style_ = resolve_style(style)
        ax = new_axes(ax, (6.4, 3.6))
        self.ax_, self.figure_ = ax, ax.figure
        ep, ev = self.extrapolation, self.evaluated
        self.n_evaluated_, self.n_extrapolation_ = int(ev.sum()), int(ep.sum())
        labels = [_plural(self.n_evaluated_, "evaluated row"), _plural(self.n_extrapolation_, "extrapolation point")]
        solid = dict(color=st.color("bars"))
        hatched = dict(color="white", edgecolor=st.color("extrapolation"), hatch=st.hatch)
        col = self.values
        self.not_drawn_ = None
        if is_categorical(col):
            levels = (
                list(col.cat.categories)
                if isinstance(col.dtype, pd.CategoricalDtype)
                else sorted(col.dropna().unique().tolist(), key=str)
            )
            x = np.arange(len(levels))
            v = col.to_numpy(dtype=object)
            a = np.array([int(((v == lv) & ev).sum()) for lv in levels])
            b = np.array([int(((v == lv) & ep).sum()) for lv in levels])
            self.bars_ = [ax.bar(x, a, label=labels[0], **solid), ax.bar(x, b, bottom=a, label=labels[1], **hatched)]
            ax.set_xticks(x, [str(lv) for lv in levels])
        else:
            v = col.to_numpy(dtype=float)
            fin = finite_part(v)
            ok = fin.mask
            _, _, self.bars_ = ax.hist(
                [v[ev & ok], v[ep & ok]],
                bins=histogram_edges(fin.values, bins),
                stacked=True,
                color=[st.color("bars"), "white"],
                edgecolor=[st.color("bars"), st.color("extrapolation")],
                hatch=[None, st.hatch],
                label=labels,
            )
            self.not_drawn_ = fin.note
        style_axes(ax, f"{feature_label(self.feature, self.units)}, observed value", "number of observations", st)
        handles, texts = ax.get_legend_handles_labels()
        if self.not_drawn_:
            from matplotlib.lines import Line2D

            handles.append(Line2D([], [], linestyle="none"))
            texts.append(self.not_drawn_)
        # above the axes: inside, a legend covered the tallest bins
        self.legend_ = legend_above(ax, handles, texts, st, ncols=2)
        return self
