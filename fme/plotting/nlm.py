"""NLMs of one step (:class:`NLMDisplay`, in the layouts of :class:`~fme.plotting.effects.FMEDisplay`) and the
paper's fME | NLM pair (:class:`EffectsDisplay`, :func:`plot_fme_nlm`).

An NLM display is an fME display of another measure: it keeps the layouts and changes only what an NLM needs
(NLM <= 1, a reference line at 1, negative values marked, undefined NLMs counted); the pair draws both displays
side by side. Drawn with matplotlib, not seaborn (see :mod:`fme.plotting`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exceptions import ParameterError
from ._common import CMAP_NLM, centred_norm, pyplot
from .data import finite_rows
from .effects import FMEDisplay

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes

    from .._core.results import FMEResult

__all__ = ["NLMDisplay", "EffectsDisplay", "plot_fme_nlm"]


class NLMDisplay(FMEDisplay):
    """NLMs of one step in the layouts of :class:`FMEDisplay`.

    NLM = 1 means the prediction is linear along the step; values <= 0 mean
    strongly non-linear. Negative values are vermillion in scatters and red on
    maps (a diverging map centred at 0, like the paper's figures); undefined
    (NaN) NLMs are counted in the legend.

    See Also
    --------
    FMEDisplay, plot_fme_nlm
    """

    measure = "nlm"
    _average_name = "ANLM"

    @property
    def value_label(self) -> str:
        return f"NLM of {self.step_text}"

    @property
    def measure_name(self) -> str:
        return "NLM"

    def _point_colors(self, y: np.ndarray) -> Any:
        return np.where(y < 0, self.style_.color("negative"), self.style_.color("points"))

    def _colour_keys(self) -> list[tuple[Any, str]]:
        if self.scatter_ is None or self.kind_ != "scatter":
            return []
        y = np.asarray(self.scatter_.get_offsets(), dtype=float)[:, 1]
        return [
            (self._key(self.style_.color("points")), f"NLM ≥ 0: {int((y >= 0).sum())}"),
            (self._key(self.style_.color("negative")), f"NLM < 0 (strongly non-linear): {int((y < 0).sum())}"),
        ]

    def _reference_lines(self, ax: Axes, vertical: bool) -> None:
        super()._reference_lines(ax, vertical)
        line = ax.axvline if vertical else ax.axhline
        self.linear_line_ = line(
            1.0,
            color=self.style_.color("reference"),
            linewidth=0.8,
            linestyle=(0, (1, 1)) if self.style_.zero_linestyle == "-" else "-",
            zorder=1,
            label="NLM = 1 (linear)",
        )

    def _map_norm_cmap(self, values: np.ndarray) -> tuple[Any, str]:
        # NLM <= 1: the positive side ends at 1, the negative side at least at -1.
        return centred_norm(values, vmax=1.0, vmin_floor=-1.0), CMAP_NLM

    def _not_drawn_notes(self) -> list[str]:
        # An undefined NLM (constant path) is NaN by definition: counted as such, not as "non-finite".
        defined = ~np.isnan(self.values)
        other = finite_rows(*(c[defined] for c in self._drawn_columns())).note
        return [other] if other else []

    def _legend_extras(self) -> list[str]:
        n_nan = int(np.isnan(self.values).sum())
        return super()._legend_extras() + [f"NLM undefined (NaN): {n_nan}"]


class EffectsDisplay:
    """fME (left) and NLM (right) panels side by side, as the paper's §7/§8 figures.

    Parameters
    ----------
    fme_display : FMEDisplay
    nlm_display : NLMDisplay

    Attributes
    ----------
    figure_ : Figure
    axes_ : ndarray of Axes, shape (2,)
    """

    def __init__(self, fme_display: FMEDisplay, nlm_display: NLMDisplay) -> None:
        self.fme_display = fme_display
        self.nlm_display = nlm_display

    @classmethod
    def from_effects(
        cls,
        effects: FMEResult,
        *,
        features: Sequence[str] | None = None,
        output: Any = None,
        units: Mapping[str, str] | None = None,
        prediction_unit: str | None = None,
        axes: Sequence[Axes] | None = None,
        ax: Any = None,
        **plot_kw: Any,
    ) -> EffectsDisplay:
        """Build both panels from an :class:`~fme.FMEResult` with NLMs and plot them (``ax``/``axes`` as in
        :meth:`plot`)."""
        args = (effects, features, output, units, prediction_unit, "EffectsDisplay.from_effects")
        # both panels are checked before either is drawn: effects without NLMs fail here, not half-drawn
        return cls(FMEDisplay._from_result(*args), NLMDisplay._from_result(*args)).plot(axes=axes, ax=ax, **plot_kw)

    def plot(self, *, axes: Sequence[Axes] | None = None, ax: Any = None, **plot_kw: Any) -> EffectsDisplay:
        """Draw into two axes (new figure by default); ``plot_kw`` go to both panels.

        ``ax`` is taken as every display takes it: two Axes (the fME and the NLM panel), or one Axes whose
        place is split into the two panels (as scikit-learn's ``PartialDependenceDisplay`` splits its ``ax``);
        ``axes`` is the same as two Axes."""
        if ax is not None and axes is not None:
            raise ParameterError("pass either ax= or axes=, not both.")
        if ax is not None:
            axes = _split_axes(ax)
        if axes is None:
            _, axes = pyplot().subplots(1, 2, figsize=(12, 4.6), layout="constrained")
        if len(axes) != 2:
            raise ParameterError(
                f"axes must hold two Axes (fME, NLM), got {len(axes)}; pass two, or one Axes to split in two."
            )
        self.fme_display.plot(ax=axes[0], **plot_kw)
        self.nlm_display.plot(ax=axes[1], **plot_kw)
        self.axes_ = np.asarray(axes, dtype=object)
        self.figure_ = axes[0].figure
        return self


def plot_fme_nlm(effects: FMEResult, *, axes: Sequence[Axes] | None = None, **kw: Any):
    """Figure with the fMEs (left) and NLMs (right) of ``effects``.

    Parameters
    ----------
    effects : FMEResult
        Computed with ``nlm=True``.
    axes : pair of Axes, optional
    **kw
        Passed to :meth:`EffectsDisplay.from_effects` (``units``, ``kind``, ...).

    Returns
    -------
    Figure
        Use :class:`EffectsDisplay` directly to keep the artists.
    """
    return EffectsDisplay.from_effects(effects, axes=axes, **kw).figure_


def _split_axes(ax: Any) -> Sequence[Axes]:
    """Two Axes from ``ax``: a sequence of two as given, or one Axes replaced by two side by side in its place."""
    if isinstance(ax, (list, tuple, np.ndarray)):
        return list(np.asarray(ax, dtype=object).ravel())
    spec = ax.get_subplotspec()
    fig = ax.figure
    if spec is None:  # an Axes placed by hand: split its rectangle
        x0, y0, w, h = ax.get_position().bounds
        ax.remove()
        return [fig.add_axes((x0, y0, w * 0.45, h)), fig.add_axes((x0 + w * 0.55, y0, w * 0.45, h))]
    inner = spec.subgridspec(1, 2)
    ax.remove()
    return [fig.add_subplot(inner[0, 0]), fig.add_subplot(inner[0, 1])]
