"""The cAME of each leaf of a partition with its CI: :class:`CAMEDisplay` (paper §5.5).

A dot plot, one row per leaf (``leaf <node>: <rule> (n = ...)``) under a first row for the AME of the rows the
leaves partition: all evaluated rows, or for an honest partition the rows that estimate the leaves. Beside the
tree of :class:`~fme.plotting.PartitionDisplay` it reads at any number of leaves; of more than ``max_leaves``
it draws the largest leaves by n. Drawn with matplotlib (error bars and two reference lines; see
:mod:`fme.plotting`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._utils.numfmt import count
from ..exceptions import ParameterError
from ._common import PlotStyle, new_axes, resolve_style, step_label, style_axes

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes

__all__ = ["CAMEDisplay", "largest_leaves"]


def largest_leaves(leaves: pd.DataFrame, max_leaves: int | None) -> pd.DataFrame:
    """The ``max_leaves`` leaves with the most rows (ties: node order), in node order; all when fewer."""
    if max_leaves is None or len(leaves) <= max_leaves:
        return leaves
    order = np.lexsort((leaves["node"].to_numpy(), -leaves["n"].to_numpy(dtype=float)))
    return leaves.iloc[np.sort(order[:max_leaves])]


class CAMEDisplay:
    """Dot plot of the leaves' cAMEs with their CIs and the AME they partition.

    Parameters
    ----------
    labels : sequence of str
        Row labels, top to bottom: the AME's row first, then one per leaf.
    estimates, lows, highs : array-like of shape (len(labels),)
        cAME (the AME in the first row) and CI bounds; a NaN bound draws no bar.
    step_text : str
        The step as labels show it (``rm + 1 rooms``).
    prediction_unit : str, optional
        Unit of the effects (x axis).
    n_leaves : int, optional
        Leaves of the partition (default the rows drawn less one); more than drawn names the selection.
    note : str, optional
        A legend line without a mark (e.g. which rows every row counts).
    root_name : str, default='all rows'
        The rows of the first row's AME, as its legend entry names them.

    Attributes
    ----------
    figure_, ax_ : Figure, Axes
    leaves_, root_ : ErrorbarContainer
        The leaves' points with bars, and the first row's.
    zero_line_, ame_line_ : Line2D
    legend_ : Legend or None
    n_rows_ : int
        Rows drawn (the leaves and the first row).
    style_ : PlotStyle

    See Also
    --------
    PartitionDisplay, fme.came
    """

    def __init__(
        self,
        *,
        labels: Sequence[str],
        estimates: Any,
        lows: Any,
        highs: Any,
        step_text: str,
        prediction_unit: str | None = None,
        n_leaves: int | None = None,
        note: str | None = None,
        root_name: str = "all rows",
    ) -> None:
        self.labels = [str(s) for s in labels]
        self.estimates, self.lows, self.highs = (np.asarray(a, dtype=float) for a in (estimates, lows, highs))
        if not len(self.labels) >= 1 or any(
            a.shape != (len(self.labels),) for a in (self.estimates, self.lows, self.highs)
        ):
            raise ParameterError(
                f"CAMEDisplay needs one estimate and CI per label ({len(self.labels)} labels, "
                f"{self.estimates.size} estimates); pass arrays of equal length."
            )
        self.step_text = step_text
        self.prediction_unit = prediction_unit
        self.n_leaves = len(self.labels) - 1 if n_leaves is None else int(n_leaves)
        self.note = note
        self.root_name = root_name

    @classmethod
    def from_partition(
        cls,
        part: Any,
        *,
        max_leaves: int | None = None,
        units: Mapping[str, str] | None = None,
        prediction_unit: str | None = None,
        ax: Axes | None = None,
        **plot_kw: Any,
    ) -> CAMEDisplay:
        """Build the display from a :func:`fme.came` partition and plot it.

        Parameters
        ----------
        part : PartitionResult
        max_leaves : int, optional
            Draw at most this many leaves, those with the most rows (ties: node order).
        units : dict, optional
            ``{feature: unit}`` for the step's label.
        prediction_unit : str, optional
            Unit of the effects (x axis).
        ax : Axes, optional
        **plot_kw
            Passed to :meth:`plot` (``style``).

        Returns
        -------
        CAMEDisplay
        """
        if not hasattr(part, "leaves") or not hasattr(part, "root"):
            raise ParameterError(
                f"CAMEDisplay.from_partition takes the result of fme.came, got {type(part).__name__}; "
                "pass fme.came(effects)."
            )
        leaves = largest_leaves(part.leaves, max_leaves)
        honest = bool(getattr(part, "honest", False))
        # honest: one set of rows, those that estimate the leaves: the first row is their AME, not all rows'
        root = part.estimation_root if honest else part.root
        first = "estimation rows" if honest else "all rows"
        labels = [f"{first} (n = {int(root['n'])})"] + [
            f"leaf {int(r['node'])}: {r['rule']} (n = {int(r['n'])})" for _, r in leaves.iterrows()
        ]
        note = f"Every row: the {count(int(root['n']), 'row')} that estimate the leaves (honest)" if honest else None
        display = cls(
            labels=labels,
            estimates=np.r_[root["came"], leaves["came"].to_numpy(dtype=float)],
            lows=np.r_[root["came_ci_low"], leaves["came_ci_low"].to_numpy(dtype=float)],
            highs=np.r_[root["came_ci_high"], leaves["came_ci_high"].to_numpy(dtype=float)],
            step_text=", ".join(step_label(s, dict(units or {})) for s in part.effects.steps),
            prediction_unit=prediction_unit,
            n_leaves=len(part.leaves),
            note=note,
            root_name=first,
        )
        return display.plot(ax=ax, **plot_kw)

    @property
    def value_label(self) -> str:
        """x-axis label: the cAME of the step, with the unit."""
        unit = f" ({self.prediction_unit})" if self.prediction_unit else ""
        return f"cAME of {self.step_text}{unit}"

    def plot(self, *, ax: Axes | None = None, style: PlotStyle | None = None) -> CAMEDisplay:
        """Draw the display.

        Parameters
        ----------
        ax : Axes, optional
            Default a new figure whose height grows with the rows.
        style : PlotStyle, optional
            Leaves in the ``came`` colour, the first row and its dashed line in ``reference``, zero in ``edge``.

        Returns
        -------
        self
        """
        st = self.style_ = resolve_style(style)
        self.n_rows_ = len(self.labels)
        ax = new_axes(ax, (6.4, 0.9 + 0.55 * (self.n_rows_ + 1)))
        self.ax_, self.figure_ = ax, ax.figure
        est, lo, hi = self.estimates, self.lows, self.highs
        y = np.arange(self.n_rows_)[::-1]
        err = np.vstack([est - lo, hi - est])
        self.leaves_ = ax.errorbar(
            est[1:], y[1:], xerr=err[:, 1:], fmt="o", color=st.color("came"), capsize=3, label="cAME with CI"
        )
        self.root_ = ax.errorbar(
            est[:1],
            y[:1],
            xerr=err[:, :1],
            fmt="D",
            color=st.color("reference"),
            capsize=3,
            label=f"AME ({self.root_name}) with CI",
        )
        self.zero_line_ = ax.axvline(0, color=st.color("edge"), linewidth=0.8, linestyle=st.zero_linestyle)
        self.ame_line_ = ax.axvline(est[0], color=st.color("reference"), linewidth=0.8, linestyle="--")
        ax.set_yticks(y, self.labels)
        style_axes(ax, self.value_label, "", st)
        from matplotlib.lines import Line2D

        handles, texts = ax.get_legend_handles_labels()
        extras = [self.note] if self.note else []
        if self.n_leaves > self.n_rows_ - 1:
            extras.append(f"the {self.n_rows_ - 1} largest of {count(self.n_leaves, 'leaf', 'leaves')}")
        for text in extras:  # legend lines without a mark
            handles.append(Line2D([], [], linestyle="none"))
            texts.append(text)
        # above the axes, one column (the row labels narrow the axes), never over a point or a bar
        self.legend_ = ax.legend(
            handles,
            texts,
            fontsize=st.size("legend"),
            loc="lower left",
            bbox_to_anchor=(0.0, 1.02),
            borderaxespad=0.0,
            frameon=False,
        )
        return self
