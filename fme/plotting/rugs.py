"""Rugs on the bottom edge of a scatter: the rows left out as extrapolation points, and the observed values.

Shared by :class:`~fme.plotting.FMEDisplay` (and so :class:`~fme.plotting.NLMDisplay`); imports only the
helpers (:mod:`~fme.plotting._common`, :mod:`~fme.plotting.data`), no display.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._common import PlotStyle
from .data import rug_values

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes

__all__ = ["RUG_SIZE", "left_out_rug", "observed_rug"]

#: Marker area (points²) of the rug of rows left out as extrapolation points.
RUG_SIZE = 160.0


def left_out_rug(ax: Axes, values: np.ndarray, style: PlotStyle) -> Any:
    """Ticks at the feature values of the rows left out as extrapolation points (they have no fME).

    The ticks are lifted by half their height (in points, whatever the layout) and the x range takes them in,
    so the rug stays inside the axes and is clipped to them like every other mark. Returns the collection.
    """
    from matplotlib.transforms import blended_transform_factory, offset_copy

    xe = np.asarray(values, dtype=float)
    trans = offset_copy(
        blended_transform_factory(ax.transData, ax.transAxes), fig=ax.figure, y=np.sqrt(RUG_SIZE) / 2, units="points"
    )
    rug = ax.scatter(
        xe,
        np.zeros(xe.size),
        transform=trans,
        marker="|",
        s=RUG_SIZE,
        linewidths=1.5,
        color=style.color("extrapolation"),
        zorder=4,
        label=f"left out (extrapolation): {xe.size}",
    )
    finite = xe[np.isfinite(xe)]
    if finite.size:
        ax.dataLim.update_from_data_xy(
            np.column_stack([finite, np.zeros(finite.size)]), ignore=False, updatex=True, updatey=False
        )
        ax.autoscale_view()
    return rug


def observed_rug(ax: Axes, values: np.ndarray, style: PlotStyle) -> tuple[Any, bool]:
    """Short ticks on the bottom edge at the feature's values over all rows (where the model has data), at
    most ``style.rug_points`` (:func:`~fme.plotting.data.rug_values`). Returns the line and whether it draws
    quantiles rather than every distinct value."""
    marks, label = rug_values(values, style.rug_points)
    (line,) = ax.plot(
        marks,
        np.zeros(marks.size),
        "|",
        color=style.color("rug"),
        markersize=8,
        alpha=0.6,
        transform=ax.get_xaxis_transform(),
        zorder=3,
        label=label,
    )
    return line, "quantiles" in label
