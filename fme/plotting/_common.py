"""Shared helpers of the plotting package: palette, fonts, axes set-up, labels and number formatting glue.

The lowest module of :mod:`fme.plotting`: it imports nothing from the displays
(:mod:`~fme.plotting.effects`, :mod:`~fme.plotting.nlm`, :mod:`~fme.plotting.secant`,
:mod:`~fme.plotting.tree`), which all import from here. No matplotlib at module level (``import fme.plotting``
stays free of it); :func:`pyplot` and :func:`centred_norm` import it when called.

Numbers printed in figures go through :mod:`fme._utils.numfmt`, the report's own
formatting, so a figure's cAME, CI, p-value or split threshold reads exactly as the
table cell beside it; :func:`fmt_num` (:func:`fme._utils.numfmt.fmt_sig`) is the
figures' 3-significant-digit form for numbers that have no table cell, and
:func:`fmt_p` is :func:`fme._utils.numfmt.p_phrase`. Both print a missing value as
the tables do (``-``, ``p undefined``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .._utils import numfmt as _shared
from .._utils.numfmt import fmt_sig as fmt_num
from .._utils.numfmt import p_phrase as fmt_p
from ..exceptions import ParameterError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes

    from .._core.results import FMEResult
    from ..steps import Step

__all__ = [
    "OKABE_ITO",
    "COLORS",
    "FONTSIZE",
    "CMAP_SEQUENTIAL",
    "CMAP_DIVERGING_FME",
    "CMAP_NLM",
    "CMAP_COUNTS",
    "PlotStyle",
    "DEFAULT_STYLE",
    "resolve_style",
    "pyplot",
    "new_axes",
    "style_axes",
    "legend_above",
    "step_label",
    "feature_label",
    "measure_column",
    "fmt_num",
    "fmt_ci",
    "fmt_p",
    "centred_norm",
    "place_arrow",
    "check_effects",
]

#: Okabe & Ito (2008) colour-blind-safe palette.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
}
#: Colour roles; data marks use only hues with >= 3:1 contrast on white (WCAG 1.4.11).
COLORS = {
    "points": OKABE_ITO["blue"],
    "average": OKABE_ITO["vermillion"],
    "negative": OKABE_ITO["vermillion"],
    "extrapolation": OKABE_ITO["green"],
    "arrow": OKABE_ITO["black"],
    "reference": "#595959",
    "text": "#222222",
    "edge": "#595959",
    "bars": OKABE_ITO["blue"],
    "came": OKABE_ITO["vermillion"],
}
FONTSIZE = {"label": 11, "tick": 10, "legend": 9, "note": 9}
#: Colormaps: sequential for one-signed values, diverging (centred at 0) otherwise.
CMAP_SEQUENTIAL = "viridis"
CMAP_DIVERGING_FME = "PuOr"
CMAP_NLM = "RdBu"  # red = negative NLM, as the paper's maps
CMAP_COUNTS = "Blues"


# ----------------------------------------------------------------- style
@dataclass(frozen=True)
class PlotStyle:
    """How the displays draw: colours, second encodings, font sizes, line widths and how many marks.

    Every display's ``plot`` takes ``style=``; the default, :data:`DEFAULT_STYLE`, is the displays' own look.
    A caller with a house style (the report passes its palette and font sizes) gives only what differs:
    ``PlotStyle(colors={"points": "#0072B2"})`` keeps every other role of :data:`COLORS`.

    Parameters
    ----------
    colors : mapping, optional
        Colour per role, merged over :data:`COLORS`; roles: ``points``, ``average``, ``negative``,
        ``extrapolation``, ``arrow``, ``reference``, ``text``, ``edge``, ``bars``, ``came``, ``rug``, ``fill``
        (histogram bars; default the ``points`` colour at ``fill_alpha``).
    fontsize : mapping, optional
        Font size (pt) per role, merged over the defaults (``FONTSIZE`` of ``fme.plotting._common``): ``label``,
        ``tick``, ``legend``, ``note``.
    hollow_points : bool, default=False
        Draw scatter points as outlined circles (a second encoding that survives greyscale printing and
        overplotting) instead of filled, semi-transparent ones.
    point_size : float, default=14
        Scatter marker area (points²).
    point_alpha : float, default=0.7
        Opacity of filled scatter points.
    fill_alpha : float, default=0.45
        Opacity of histogram bars.
    fill_edge : str, default='white'
        Edge colour of histogram bars.
    zero_linestyle : str, default=':'
        Line style of the reference line at 0.
    average_linewidth : float, default=1.8
        Width of the dashed AME/ANLM line.
    hatch : str, default='///'
        Hatch of bars that count rows left out (the second encoding beside their colour).
    max_points : int, optional
        Largest number of scatter points drawn: beyond it a seeded sample (``seed``) of rows, which the legend
        names; default every row.
    rug_points : int, default=2000
        Largest number of marks of a rug of observed values: beyond it evenly spaced quantiles of all rows.
    seed : int, default=0
        Seed of the sample of ``max_points`` rows.

    Raises
    ------
    ParameterError
        An unknown colour or font role, or a non-positive ``max_points``/``rug_points``.

    Examples
    --------
    >>> from fme.plotting import COLORS, PlotStyle
    >>> PlotStyle(colors={"points": "#000000"}).colors["average"] == COLORS["average"]
    True
    """

    colors: Mapping[str, str] = field(default_factory=dict)
    fontsize: Mapping[str, float] = field(default_factory=dict)
    hollow_points: bool = False
    point_size: float = 14.0
    point_alpha: float = 0.7
    fill_alpha: float = 0.45
    fill_edge: str = "white"
    zero_linestyle: str = ":"
    average_linewidth: float = 1.8
    hatch: str = "///"
    max_points: int | None = None
    rug_points: int = 2000
    seed: int = 0

    def __post_init__(self) -> None:
        for name, given, known in (("colors", self.colors, _COLOR_DEFAULTS), ("fontsize", self.fontsize, FONTSIZE)):
            unknown = sorted(set(given) - set(known))
            if unknown:
                raise ParameterError(f"PlotStyle({name}=...) has unknown roles {unknown}; use some of {sorted(known)}.")
            # frozen: the merged mapping replaces the partial one once, here
            object.__setattr__(self, name, {**known, **dict(given)})
        for name in ("max_points", "rug_points"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ParameterError(f"PlotStyle({name}={value!r}) must be a positive int; pass e.g. 2000.")

    def color(self, role: str) -> str:
        """The colour of ``role`` (one of the keys of :attr:`colors`)."""
        return str(self.colors[role])

    def size(self, role: str) -> float:
        """The font size of ``role`` (one of the keys of :attr:`fontsize`)."""
        return float(self.fontsize[role])

    def replace(self, **changes: Any) -> PlotStyle:
        """A copy with ``changes`` (``colors``/``fontsize`` merged over this style's)."""
        for name in ("colors", "fontsize"):
            if name in changes:
                changes[name] = {**getattr(self, name), **dict(changes[name])}
        return replace(self, **changes)

    @property
    def fill(self) -> str:
        """Face colour of histogram bars."""
        return self.color("fill") or self.color("points")


#: Roles a :class:`PlotStyle` colours: :data:`COLORS`, the rug of observed values and the histograms' fill
#: (empty: the ``points`` colour).
_COLOR_DEFAULTS: dict[str, str] = {**COLORS, "rug": COLORS["reference"], "fill": ""}
#: The displays' own look.
DEFAULT_STYLE = PlotStyle()


def resolve_style(style: PlotStyle | None) -> PlotStyle:
    """``style``, or :data:`DEFAULT_STYLE` for None.

    Raises
    ------
    ParameterError
        ``style`` is neither None nor a :class:`PlotStyle`.
    """
    if style is None:
        return DEFAULT_STYLE
    if not isinstance(style, PlotStyle):
        raise ParameterError(
            f"style must be a fme.plotting.PlotStyle, got {type(style).__name__}; pass PlotStyle(colors=...)."
        )
    return style


# ----------------------------------------------------------------- axes
def pyplot():
    """Import pyplot lazily with a helpful error (sklearn's check_matplotlib_support)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is a dependency
        raise ImportError("fme.plotting needs matplotlib: pip install matplotlib") from exc
    return plt


def new_axes(ax: Axes | None, figsize: tuple[float, float] = (6.4, 4.6)) -> Axes:
    """``ax``, or the axes of a new constrained-layout figure of ``figsize`` inches."""
    if ax is not None:
        return ax
    _, ax = pyplot().subplots(figsize=figsize, layout="constrained")
    return ax


def style_axes(ax: Axes, xlabel: str, ylabel: str, style: PlotStyle | None = None) -> None:
    """Axis labels and tick sizes of ``style`` (default ``FONTSIZE``); no top or right spine."""
    st = resolve_style(style)
    ax.set_xlabel(xlabel, fontsize=st.size("label"))
    ax.set_ylabel(ylabel, fontsize=st.size("label"))
    ax.tick_params(labelsize=st.size("tick"))
    ax.spines[["top", "right"]].set_visible(False)


# ----------------------------------------------------------------- labels
def legend_above(ax: Axes, handles: Sequence[Any], labels: Sequence[str], style: PlotStyle, ncols: int = 1) -> Any:
    """A frameless legend in a band above the axes, as wide as they are: inside, any corner may hold a point
    or the tallest bar."""
    return ax.legend(
        handles,
        labels,
        fontsize=style.size("legend"),
        loc="lower left",
        bbox_to_anchor=(0.0, 1.02, 1.0, 0.1),
        mode="expand",
        borderaxespad=0.0,
        ncols=ncols,
        frameon=False,
    )


def step_label(step: Step, units: Mapping[str, str]) -> str:
    """``rm + 1 rooms`` / ``crim − 5`` / ``chas → 1``: the step as shown in labels."""
    if not step.is_numeric:
        return f"{step.feature} → {step.value}"
    unit = units.get(step.feature)
    sign = "−" if step.value < 0 else "+"
    return f"{step.feature} {sign} {abs(step.value):.4g}" + (f" {unit}" if unit else "")


def feature_label(feature: str, units: Mapping[str, str]) -> str:
    """``rm (rooms)``: a feature's axis label with its unit, when one is given."""
    unit = units.get(feature)
    return f"{feature} ({unit})" if unit else feature


def measure_column(effects: FMEResult, measure: str, output: Any, who: str = "this display") -> str:
    """The results column of ``measure`` (``'fme'`` or ``'nlm'``) for ``output`` (a class, or None).

    Raises
    ------
    ParameterError
        Effects without NLMs asked for one, several classes without ``output``, or an unknown class; ``who``
        (the display) is named in the message.
    """
    cols = effects.fme_columns if measure == "fme" else effects.nlm_columns
    if not cols:
        raise ParameterError(
            f"{who} draws NLMs, but these effects have no NLM (fme.fme computes them only when "
            "asked); recompute with fme.fme(..., nlm=True)."
        )
    if output is None:
        if len(cols) > 1:
            raise ParameterError(
                f"the effects have one {measure} column per class {cols}; pass output=<class> to {who}."
            )
        return cols[0]
    col = f"{measure}_{output}"
    if col not in cols:
        raise ParameterError(
            f"output={output!r} is not one of the classes {list(effects.output_names or [])}; pass one of them."
        )
    return col


def check_effects(effects: Any, who: str) -> None:
    """Refuse anything but an in-memory :func:`fme.fme` result (the displays read its rows).

    Raises
    ------
    ParameterError
        Naming ``who`` (the display's constructor), what was given and what to pass instead.
    """
    from .._core.results import FMEResult

    if not isinstance(effects, FMEResult):
        hint = (
            " (on Dask data: compute the effects of a sample, e.g. fme.fme(model, ddf.sample(frac=...).compute(), ...))"
            if hasattr(effects, "npartitions") or "Dask" in type(effects).__name__
            else ""
        )
        raise ParameterError(
            f"{who} takes the result of fme.fme on a pandas DataFrame (an FMEResult), got "
            f"{type(effects).__name__}; pass fme.fme(model, data, steps){hint}."
        )


# ----------------------------------------------------------------- formatting
def fmt_ci(est: float, low: float, high: float) -> tuple[str, str, str]:
    """Estimate and bounds rounded to the CI precision (report checklist §2.4).

    The number of decimals gives the half-width two significant figures, and
    the estimate and both bounds share it, so "6.79 [6.58, 7.00]" never mixes
    precisions.

    Parameters
    ----------
    est, low, high : float
        Estimate and interval bounds.

    Returns
    -------
    tuple of str
        ``(estimate, low, high)`` as :func:`fme._utils.numfmt.fmt_est` (the report's table cells); without an
        interval the bounds are ``"-"`` (the tables' missing value) and the estimate gets three decimals.
    """
    # the report's own function: a figure's numbers equal its table cells
    if not (np.isfinite(low) and np.isfinite(high)):
        return _shared.fmt_est(est, None, None)[0], "-", "-"
    return _shared.fmt_est(est, low, high)


# ----------------------------------------------------------------- shared drawing helpers
def centred_norm(values: np.ndarray, *, vmax: float | None = None, vmin_floor: float | None = None):
    """TwoSlopeNorm centred at 0 (both sides kept non-empty so the centre is valid)."""
    from matplotlib.colors import TwoSlopeNorm

    finite = values[np.isfinite(values)]
    lo = float(finite.min()) if finite.size else -1.0
    hi = float(finite.max()) if finite.size else 1.0
    hi = vmax if vmax is not None else hi
    if vmin_floor is not None:
        lo = min(lo, vmin_floor)
    span = max(abs(lo), abs(hi), 1e-12)
    return TwoSlopeNorm(vcenter=0.0, vmin=min(lo, -1e-6 * span), vmax=max(hi, 1e-6 * span))


def place_arrow(ax: Any, h: Sequence[float], text: str, *, color: str, fontsize: float) -> tuple[Any, Any]:
    """One arrow of length ``h`` (data units) in the upper corner, as the paper's figures.

    ``h`` has one component (horizontal arrow; its height is in axes units so
    it sits above the points) or two (an arrow in the (x1, x2) plane). The
    limits are widened when the arrow would not fit, so its length stays exact.
    """
    ax.autoscale_view()
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    w, hgt = x1 - x0, y1 - y0
    hx = float(h[0])
    start_x = x0 + 0.05 * w if hx >= 0 else x1 - 0.05 * w
    end_x = start_x + hx
    if len(h) == 1:
        coords: Any = ("data", "axes fraction")
        start_y = end_y = 0.9
    else:
        # Above the data, so the arrow never hides hexagons; the y limit grows by |h2|.
        coords = "data"
        hy = float(h[1])
        start_y = y1 + 0.04 * hgt + max(-hy, 0.0)
        end_y = start_y + hy
        ax.set_ylim(y0, max(start_y, end_y) + 0.1 * hgt)
    ax.set_xlim(min(x0, end_x - 0.02 * w), max(x1, end_x + 0.02 * w))
    arrow = ax.annotate(
        "",
        xy=(end_x, end_y),
        xytext=(start_x, start_y),
        xycoords=coords,
        textcoords=coords,
        arrowprops=dict(arrowstyle="-|>", color=color, lw=2.0, shrinkA=0, shrinkB=0, mutation_scale=14),
        annotation_clip=False,
        zorder=5,
    )
    label = ax.annotate(
        text,
        xy=((start_x + end_x) / 2, max(start_y, end_y)),
        xycoords=coords,
        xytext=(0, 4),
        textcoords="offset points",
        ha="center",
        va="bottom",
        fontsize=fontsize,
        color=color,
        zorder=5,
    )
    return arrow, label
