"""fMEs of one step: :class:`FMEDisplay`, the layouts that :class:`~fme.plotting.nlm.NLMDisplay` extends.

The paper's §7/§8 figures: the fME (or NLM) against the feature with an arrow
of the step length (a scatter, or log-count hexagons above ``hexbin_threshold``
rows), a map of the mean over two features, or a histogram with a kernel
density for three or more features and categorical steps.

Drawn with matplotlib, not seaborn (see :mod:`fme.plotting` for the whole
argument): the density layout takes its bin edges and its KDE from
:mod:`fme.plotting.data` (one bar and no curve for flat fMEs, at most
:data:`~fme.plotting.data.MAX_BINS` bins, non-finite values counted in the
legend), which ``sns.histplot``/``sns.kdeplot`` would replace with their own
rules; the maps need a diverging norm centred at 0 (NLM capped at 1) with a
colorbar, and the hexbins a log count norm, neither of which seaborn's
``hue`` legends give; and the arrow and every legend number are ours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..exceptions import FeatureError, ParameterError
from ._common import (
    CMAP_COUNTS,
    CMAP_DIVERGING_FME,
    CMAP_SEQUENTIAL,
    PlotStyle,
    centred_norm,
    check_effects,
    feature_label,
    fmt_num,
    legend_above,
    measure_column,
    new_axes,
    place_arrow,
    resolve_style,
    step_label,
    style_axes,
)
from .data import finite_rows, histogram_edges, kde_curve, subsample
from .rugs import RUG_SIZE, left_out_rug, observed_rug

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes

    from .._core.results import FMEResult
    from ..steps import Step

__all__ = ["KINDS", "RUG_SIZE", "FMEDisplay"]

#: Layouts of ``plot(kind=...)``.
KINDS = ("auto", "scatter", "hexbin", "map", "density")


def _resolve_kind(
    kind: str, steps: Sequence[Step], features: Sequence[str], numeric: Sequence[bool], n: int, hexbin_threshold: int
) -> str:
    """The layout: paper §7/§8: one feature -> scatter, two -> map, else density."""
    if kind not in KINDS:
        raise ParameterError(f"kind must be one of {KINDS}, got {kind!r}.")
    categorical = any(not s.is_numeric for s in steps)
    if kind == "auto":
        if categorical or not all(numeric) or len(features) > 2:
            return "density"
        if len(features) == 2:
            return "map"
        return "hexbin" if n > hexbin_threshold else "scatter"
    if kind in ("scatter", "hexbin") and (len(features) != 1 or not all(numeric)):
        raise ParameterError(
            f"kind={kind!r} plots against one numeric feature; got features {list(features)}. "
            "Pass features=[<one numeric feature>] or kind='density'."
        )
    if kind == "map" and (len(features) != 2 or not all(numeric)):
        raise ParameterError(
            f"kind='map' needs two numeric features; got {list(features)}. Pass "
            "features=[<numeric>, <numeric>] or kind='density'."
        )
    return kind


# ----------------------------------------------------------------- fME / NLM
class FMEDisplay:
    """fMEs of one step: against the feature, as a hexagon map, or as a density.

    Parameters
    ----------
    values : ndarray of shape (n,)
        fME (or NLM) per evaluated row.
    feature_values : DataFrame of shape (n, k)
        The plotted features of the evaluated rows.
    steps : tuple of Step
        All steps of the effect (the arrow and labels come from them).
    average : float
        AME (or ANLM) drawn as a reference line.
    extrapolated : DataFrame
        Plotted feature values of the rows left out as extrapolation points.
    extrapolation_checked : bool, default=True
        False when no detector ran ("not checked" is not "0 found").
    kept_extrapolation : ndarray of bool, optional
        Rows kept although flagged (``on_extrapolation='keep'``).
    units : dict, optional
        ``{feature: unit}`` for axis labels.
    prediction_unit : str, optional
        Unit of the prediction (and so of the fME).
    column : str, default='fme'
        Name of the plotted column.
    observed : DataFrame, optional
        Plotted feature values of all rows of the data, for ``plot(rug=True)``.

    Attributes
    ----------
    figure_, ax_ : Figure, Axes
    kind_ : str
        Layout drawn: ``'scatter'``, ``'hexbin'``, ``'map'`` or ``'density'``.
    scatter_, hexbin_, colorbar_, hist_, kde_line_ : artists or None
    arrow_, arrow_label_ : Annotation or None
        The step arrow; ``arrow_.xy - arrow_.xyann`` equals h.
    ame_line_, zero_line_ : Line2D or None
    extrapolation_, extrapolation_kept_ : PathCollection or None
    rug_ : Line2D or None
        The rug of observed values (``plot(rug=True)``); ``rug_quantiles_`` says whether it draws quantiles.
    not_drawn_ : str or None
        What the figure leaves out (non-finite values), as its legend says it.
    n_drawn_ : int
        Scatter points drawn (fewer than the rows when ``style.max_points`` samples them).
    style_ : PlotStyle
    legend_ : Legend or None

    See Also
    --------
    NLMDisplay, plot_fme_nlm, fme.fme
    """

    measure = "fme"
    _average_name = "AME"

    def __init__(
        self,
        *,
        values: np.ndarray,
        feature_values: pd.DataFrame,
        steps: tuple[Step, ...],
        average: float,
        extrapolated: pd.DataFrame,
        extrapolation_checked: bool = True,
        kept_extrapolation: np.ndarray | None = None,
        units: Mapping[str, str] | None = None,
        prediction_unit: str | None = None,
        column: str = "fme",
        observed: pd.DataFrame | None = None,
    ) -> None:
        self.values = np.asarray(values, dtype=float)
        self.feature_values = feature_values
        self.steps = tuple(steps)
        self.average = float(average)
        self.extrapolated = extrapolated
        self.extrapolation_checked = extrapolation_checked
        self.kept_extrapolation = kept_extrapolation
        self.units = dict(units or {})
        self.prediction_unit = prediction_unit
        self.column = column
        self.observed = observed

    # ------------------------------------------------------------- building
    @classmethod
    def _from_result(
        cls,
        effects: FMEResult,
        features: Sequence[str] | None,
        output: Any,
        units: Mapping[str, str] | None,
        prediction_unit: str | None,
        who: str | None = None,
    ):
        who = who or f"{cls.__name__}.from_effects"
        check_effects(effects, who)
        column = measure_column(effects, cls.measure, output, who)
        if isinstance(features, str):
            features = [features]
        features = [s.feature for s in effects.steps] if features is None else list(features)
        unknown = [f for f in features if f not in effects.data.columns]
        if unknown:
            raise FeatureError(
                f"features {unknown} are not columns of the effects' data; pick from {list(effects.data.columns)[:20]}."
            )
        average = effects.ame if cls.measure == "fme" else effects.anlm
        if isinstance(average, pd.Series):
            average = average[column.split("_", 1)[1]]
        kept = effects.results["extrapolation"].to_numpy(bool) if "extrapolation" in effects.results else None
        return cls(
            values=effects.results[column].to_numpy(dtype=float),
            feature_values=effects.data.loc[effects.results.index, features],
            steps=effects.steps,
            average=float(average),
            extrapolated=effects.data.loc[effects.extrapolated.index, features],
            extrapolation_checked=effects.detector is not None,
            kept_extrapolation=kept,
            units=units,
            prediction_unit=prediction_unit,
            column=column,
            observed=effects.data[features],
        )

    @classmethod
    def from_effects(
        cls,
        effects: FMEResult,
        *,
        features: Sequence[str] | None = None,
        output: Any = None,
        units: Mapping[str, str] | None = None,
        prediction_unit: str | None = None,
        ax: Axes | None = None,
        **plot_kw: Any,
    ):
        """Build the display from :func:`fme.fme` output and plot it.

        Parameters
        ----------
        effects : FMEResult
        features : sequence of str, optional
            Features on the axes; default the stepped features. Give two
            (e.g. a stepped and an unstepped one) for a map over both.
        output : class label, optional
            Which class's column for ``target_class='all'`` results.
        units, prediction_unit : optional
            Units for the labels.
        ax : Axes, optional
        **plot_kw
            Passed to :meth:`plot` (``kind``, ``hexbin_threshold``, ...).

        Returns
        -------
        display
        """
        display = cls._from_result(effects, features, output, units, prediction_unit)
        return display.plot(ax=ax, **plot_kw)

    # ------------------------------------------------------------- labels
    @property
    def step_text(self) -> str:
        """All steps as shown in labels, e.g. ``crim − 5, nox − 0.1``."""
        return ", ".join(step_label(s, self.units) for s in self.steps)

    @property
    def value_label(self) -> str:
        """Axis label of the plotted measure, with the step and the unit."""
        unit = f" ({self.prediction_unit})" if self.prediction_unit else ""
        return f"fME of {self.step_text}{unit}"

    def _step_vector(self) -> list[float]:
        h = {s.feature: float(s.value) for s in self.steps if s.is_numeric}
        return [h.get(f, 0.0) for f in self.feature_values.columns]

    # ------------------------------------------------------------- plotting
    def plot(
        self,
        *,
        ax: Axes | None = None,
        kind: str = "auto",
        hexbin_threshold: int = 5000,
        gridsize: int = 30,
        bins: int | str = "auto",
        show_arrow: bool = True,
        show_legend: bool = True,
        scatter_kw: Mapping[str, Any] | None = None,
        style: PlotStyle | None = None,
        rug: bool = False,
        value_range: tuple[float, float] | None = None,
        kde: bool = True,
    ):
        """Draw the display.

        Parameters
        ----------
        ax : Axes, optional
            Draw into this axes; default a new figure.
        kind : {'auto', 'scatter', 'hexbin', 'map', 'density'}, default='auto'
            ``auto``: scatter for one numeric feature (hexbin above
            ``hexbin_threshold`` rows), map for two, density for three or more
            or any categorical step.
        hexbin_threshold : int, default=5000
        gridsize : int, default=30
            Hexagons across the x axis (hexbin and map).
        bins : int or str, default='auto'
            Histogram bins of the density layout.
        show_arrow, show_legend : bool, default=True
        scatter_kw : dict, optional
            Extra keywords for ``ax.scatter``.
        style : PlotStyle, optional
            Colours, fonts, line widths and point limits; default :data:`~fme.plotting.DEFAULT_STYLE`.
        rug : bool, default=False
            Scatter: a rug of the feature's values over all rows of the data (the model's support), at most
            ``style.rug_points`` marks.
        value_range : (float, float), optional
            Density: bins over this range; values outside it are drawn at the nearer bound (the axis label
            says so).
        kde : bool, default=True
            Density: draw the kernel density over the histogram.

        Returns
        -------
        self
        """
        features = list(self.feature_values.columns)
        numeric = [
            pd.api.types.is_numeric_dtype(self.feature_values[f])
            and not pd.api.types.is_bool_dtype(self.feature_values[f])
            for f in features
        ]
        self.kind_ = _resolve_kind(kind, self.steps, features, numeric, len(self.values), hexbin_threshold)
        self.style_ = resolve_style(style)
        ax = new_axes(ax)
        self.ax_, self.figure_ = ax, ax.figure
        for name in (
            "scatter_",
            "hexbin_",
            "colorbar_",
            "hist_",
            "kde_line_",
            "arrow_",
            "arrow_label_",
            "ame_line_",
            "zero_line_",
            "extrapolation_",
            "extrapolation_kept_",
            "legend_",
            "rug_",
            "rug_quantiles_",
        ):
            setattr(self, name, None)
        self.n_drawn_ = 0
        self.drawn_ = finite_rows(*self._drawn_columns())
        if self.kind_ == "density":
            self._plot_density(ax, bins, value_range, kde)
        elif self.kind_ == "map":
            self._plot_map(ax, gridsize)
        else:
            self._plot_against_feature(ax, gridsize, dict(scatter_kw or {}), rug)
        if show_arrow and self.kind_ != "density":
            h = self._step_vector()
            shown = h if self.kind_ == "map" else h[:1]
            text = f"h = {shown[0]:.4g}" if len(shown) == 1 else "h = (" + ", ".join(f"{v:.4g}" for v in shown) + ")"
            self.arrow_, self.arrow_label_ = place_arrow(
                ax,
                h if self.kind_ == "map" else h[:1],
                text,
                color=self.style_.color("arrow"),
                fontsize=self.style_.size("note"),
            )
        notes = self._not_drawn_notes()
        self.not_drawn_ = notes[0] if notes else None
        if show_legend:
            self._legend(ax)
        return self

    def _finite(self) -> np.ndarray:
        """Rows drawn: the value and every plotted feature value finite (the rest are counted)."""
        return self.drawn_.mask

    def _drawn_columns(self) -> list[np.ndarray]:
        """The plotted value and the feature columns on the axes (all must be finite to draw a row)."""
        shown = [] if self.kind_ == "density" else list(self.feature_values.columns)[: 2 if self.kind_ == "map" else 1]
        return [self.values] + [self.feature_values[f].to_numpy(dtype=float) for f in shown]

    def _not_drawn_notes(self) -> list[str]:
        note = self.drawn_.note
        return [note] if note else []

    def _average_line(self, ax: Axes, vertical: bool) -> None:
        if not np.isfinite(self.average):  # e.g. an ANLM with every NLM undefined
            return
        line = ax.axvline if vertical else ax.axhline
        self.ame_line_ = line(
            self.average,
            color=self.style_.color("average"),
            linestyle="--",
            linewidth=self.style_.average_linewidth,
            zorder=4,
            label=f"{self._average_name} = {fmt_num(self.average)}",
        )

    def _point_colors(self, y: np.ndarray) -> Any:
        return self.style_.color("points")

    def _reference_lines(self, ax: Axes, vertical: bool) -> None:
        line = ax.axvline if vertical else ax.axhline
        self.zero_line_ = line(
            0.0,
            color=self.style_.color("reference"),
            linewidth=0.8,
            linestyle=self.style_.zero_linestyle,
            zorder=1,
            label=f"{self.measure_name} = 0",
        )

    def _plot_against_feature(self, ax: Axes, gridsize: int, scatter_kw: dict, rug: bool) -> None:
        feature = self.feature_values.columns[0]
        ok = self._finite()
        x = self.feature_values[feature].to_numpy(dtype=float)
        y = self.values
        if self.kind_ == "hexbin" and ok.any():
            from matplotlib import colormaps
            from matplotlib.colors import ListedColormap, LogNorm

            # Drop the near-white low end so single-point hexagons stay visible on white.
            cmap = ListedColormap(colormaps[CMAP_COUNTS](np.linspace(0.3, 1.0, 256)))
            self.hexbin_ = ax.hexbin(
                x[ok], y[ok], gridsize=gridsize, mincnt=1, cmap=cmap, norm=LogNorm(), linewidths=0.2
            )
            self.colorbar_ = ax.figure.colorbar(self.hexbin_, ax=ax)
            self.colorbar_.set_label("observations per hexagon", fontsize=self.style_.size("label"))
        elif self.kind_ == "scatter" or not ok.any():
            st = self.style_
            # a seeded sample of the drawable rows when there are more than style.max_points
            rows = np.flatnonzero(ok)
            ok = np.zeros_like(ok)
            ok[rows[subsample(rows.size, st.max_points, st.seed)]] = True
            self.n_drawn_ = int(ok.sum())
            kw: dict[str, Any] = dict(s=st.point_size, zorder=2)
            colors = self._point_colors(y[ok])
            if st.hollow_points:
                kw.update(facecolors="none", edgecolors=colors, linewidths=0.9)
            else:
                kw.update(alpha=st.point_alpha, linewidths=0, c=colors)
            kw.update(scatter_kw)
            self.scatter_ = ax.scatter(x[ok], y[ok], **kw)
            if self.kept_extrapolation is not None and self.kept_extrapolation.any():
                kept = self.kept_extrapolation & ok
                self.extrapolation_kept_ = ax.scatter(
                    x[kept],
                    y[kept],
                    s=40,
                    facecolors="none",
                    edgecolors=self.style_.color("extrapolation"),
                    linewidths=1.0,
                    zorder=3,
                    label=f"kept, flagged as extrapolation: {int(kept.sum())}",
                )
        self._reference_lines(ax, vertical=False)
        self._average_line(ax, vertical=False)
        if len(self.extrapolated):
            self.extrapolation_ = left_out_rug(ax, self.extrapolated[feature].to_numpy(dtype=float), self.style_)
        if rug and self.observed is not None:
            self.rug_, self.rug_quantiles_ = observed_rug(ax, self.observed[feature].to_numpy(dtype=float), self.style_)
        y0, y1 = ax.get_ylim()
        ax.set_ylim(y0 - 0.08 * (y1 - y0), y1 + 0.18 * (y1 - y0))  # room for the rug and the arrow
        style_axes(ax, feature_label(feature, self.units), self.value_label, self.style_)

    def _map_norm_cmap(self, values: np.ndarray) -> tuple[Any, str]:
        finite = values[np.isfinite(values)]
        if finite.size and finite.min() < 0 < finite.max():
            return centred_norm(values), CMAP_DIVERGING_FME
        return None, CMAP_SEQUENTIAL

    def _plot_map(self, ax: Axes, gridsize: int) -> None:
        f1, f2 = self.feature_values.columns
        ok = self._finite()
        x = self.feature_values[f1].to_numpy(dtype=float)[ok]
        y = self.feature_values[f2].to_numpy(dtype=float)[ok]
        c = self.values[ok]
        if c.size:
            norm, cmap = self._map_norm_cmap(c)
            self.hexbin_ = ax.hexbin(
                x,
                y,
                C=c,
                reduce_C_function=np.mean,
                gridsize=gridsize,
                mincnt=1,
                cmap=cmap,
                norm=norm,
                edgecolors="#b0b0b0",
                linewidths=0.3,
            )  # near-0 cells stay visible
            self.colorbar_ = ax.figure.colorbar(self.hexbin_, ax=ax)
            self.colorbar_.set_label(f"mean {self.value_label}", fontsize=self.style_.size("label"))
            self.colorbar_.ax.tick_params(labelsize=self.style_.size("tick"))
        if len(self.extrapolated):
            self.extrapolation_ = ax.scatter(
                self.extrapolated[f1].to_numpy(dtype=float),
                self.extrapolated[f2].to_numpy(dtype=float),
                marker="x",
                s=22,
                linewidths=1.2,
                color=self.style_.color("extrapolation"),
                zorder=4,
                label=f"left out (extrapolation): {len(self.extrapolated)}",
            )
        style_axes(ax, feature_label(f1, self.units), feature_label(f2, self.units), self.style_)

    def _plot_density(
        self, ax: Axes, bins: int | str, value_range: tuple[float, float] | None = None, kde: bool = True
    ) -> None:
        st = self.style_
        v = self.values[self._finite()]
        label = self.value_label
        if value_range is not None:
            lo, hi = (float(b) for b in value_range)
            # the axis label names each bound that some value passes
            outside = [f"values below {lo:g} shown at {lo:g}"] * bool((v < lo).any())
            outside += [f"values above {hi:g} shown at {hi:g}"] * bool((v > hi).any())
            label += f" ({'; '.join(outside)})" if outside else ""
            v = np.clip(v, lo, hi)
            bins = 40 if isinstance(bins, str) else bins
        # (Nearly) constant effects: one bar of visible width and no KDE (fme.plotting.data).
        _, _, self.hist_ = ax.hist(
            v,
            bins=histogram_edges(v, bins, value_range),
            density=v.size > 0,
            color=st.fill,
            alpha=st.fill_alpha,
            edgecolor=st.fill_edge,
            linewidth=0.5,
            label="histogram",
        )
        curve = kde_curve(v) if kde else None
        if curve is not None:
            (self.kde_line_,) = ax.plot(*curve, color=st.color("points"), linewidth=2.0, label="kernel density")
        self._reference_lines(ax, vertical=True)
        self._average_line(ax, vertical=True)
        style_axes(ax, label, "density", st)

    def _legend_extras(self) -> list[str]:
        """Legend lines without an artist of their own (counts only)."""
        extras = self._not_drawn_notes()
        if not self.extrapolation_checked:
            extras.append("extrapolation: not checked")
        elif self.extrapolation_ is None:
            extras.append(f"left out (extrapolation): {len(self.extrapolated)}")
        return extras

    def _colour_keys(self) -> list[tuple[Any, str]]:
        """Legend keys of the points' colours (a colorbar explains hexagons instead)."""
        if self.scatter_ is None or self.kind_ != "scatter":
            return []
        return [(self._key(self.style_.color("points")), f"{self.measure_name} of a row: {self._drawn_text()}")]

    def _key(self, color: str) -> Any:
        """A legend key drawn as the points are (hollow or filled)."""
        from matplotlib.lines import Line2D

        face = "none" if self.style_.hollow_points else color
        return Line2D([], [], marker="o", linestyle="none", color=color, markerfacecolor=face)

    def _drawn_text(self) -> str:
        """``120``, or ``2,000 of 100,000 drawn`` when ``style.max_points`` sampled the rows (seeded)."""
        total = int(self.drawn_.mask.sum())
        if self.n_drawn_ < total:
            return f"{self.n_drawn_:,} of {total:,} drawn"
        return f"{self.n_drawn_:,}"

    @property
    def measure_name(self) -> str:
        """The plotted measure as the legend names it (``fME``, ``NLM``)."""
        return "fME"

    def _legend(self, ax: Axes) -> None:
        from matplotlib.lines import Line2D

        keys = self._colour_keys()
        handles, labels = ax.get_legend_handles_labels()
        handles, labels = [h for h, _ in keys] + handles, [t for _, t in keys] + labels
        for text in self._legend_extras():
            handles.append(Line2D([], [], linestyle="none"))
            labels.append(text)
        if handles:
            # Above the axes: inside, even the emptiest corner ("best") may hold the most extreme point.
            self.legend_ = legend_above(ax, handles, labels, self.style_, ncols=2)
