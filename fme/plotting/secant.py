"""Secant against tangent: :class:`SecantTangentDisplay`, the fME against dME·h (paper §4.1, Fig. 3).

Drawn with matplotlib, not seaborn (see :mod:`fme.plotting`): one scatter and
the identity line on equal axes, and a legend line with the mean
interpretation error in the figures' number format; ``sns.scatterplot`` would
add nothing but its own labels from column names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..exceptions import DataError, ParameterError, StepError
from ._common import PlotStyle, check_effects, fmt_num, legend_above, new_axes, resolve_style, step_label, style_axes
from .data import finite_rows

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes

    from .._core.results import FMEResult
    from ..steps import Step

__all__ = ["SecantTangentDisplay", "ZERO_SLOPE_SHARE"]

#: Above this share of rows with dME·h exactly 0 but a non-zero fME the prediction is read as piecewise
#: constant along the step (a smooth prediction is flat at isolated points only).
ZERO_SLOPE_SHARE = 0.5


class SecantTangentDisplay:
    """fME (secant) against the dME's linear extrapolation dME·h (tangent), paper §4.1.

    On the identity line the derivative read as "change for a step h" would be
    right; the vertical distance of a point from it is the interpretation error
    of the dME for that observation.

    Parameters
    ----------
    fme_values : ndarray of shape (n,)
    tangent_values : ndarray of shape (n,)
        dME · h of the same rows.
    step : Step
    units : dict, optional
    prediction_unit : str, optional

    piecewise_constant : bool, optional
        Whether the prediction is piecewise constant along the step (a tree ensemble): no tangent is drawn.
        None: read from the values (:attr:`piecewise_constant`).

    Attributes
    ----------
    figure_, ax_ : Figure, Axes
    scatter_, identity_line_, legend_ : artists, or None without a tangent
        The legend stands above the axes, clear of every point.
    note_ : Text or None
        Why no tangent is drawn (a piecewise constant prediction).
    """

    def __init__(
        self,
        *,
        fme_values: np.ndarray,
        tangent_values: np.ndarray,
        step: Step,
        units: Mapping[str, str] | None = None,
        prediction_unit: str | None = None,
        piecewise_constant: bool | None = None,
    ) -> None:
        self.fme_values = np.asarray(fme_values, dtype=float)
        self.tangent_values = np.asarray(tangent_values, dtype=float)
        self.step = step
        self.units = dict(units or {})
        self.prediction_unit = prediction_unit
        self._piecewise_constant = piecewise_constant

    @property
    def zero_slope_share(self) -> float:
        """Share of the rows (finite in both) whose fME is not 0 but whose dME·h is exactly 0: the prediction
        is flat where the derivative is taken, yet moves over the step (NaN without such rows)."""
        ok = np.isfinite(self.fme_values) & np.isfinite(self.tangent_values)
        if not ok.any():
            return float("nan")
        flat = (self.tangent_values[ok] == 0.0) & (self.fme_values[ok] != 0.0)
        return float(flat.mean())

    @property
    def piecewise_constant(self) -> bool:
        """Whether the prediction is piecewise constant along the step (a tree ensemble), so that the tangent
        says nothing of the effect: as the model's adapter told :meth:`from_model` (or the effects' exact NLM
        told :meth:`from_effects`), else when more than half the rows have a zero slope and a non-zero fME
        (:attr:`zero_slope_share`)."""
        if self._piecewise_constant is not None:
            return bool(self._piecewise_constant)
        share = self.zero_slope_share
        return bool(np.isfinite(share) and share > ZERO_SLOPE_SHARE)

    @property
    def mean_abs_error(self) -> float:
        """Mean |fME − dME·h|: the average interpretation error of the derivative."""
        diff = np.abs(self.fme_values - self.tangent_values)
        diff = diff[np.isfinite(diff)]
        return float(diff.mean()) if diff.size else float("nan")

    @classmethod
    def from_effects(
        cls,
        effects: FMEResult,
        dme_frame: pd.DataFrame,
        *,
        units: Mapping[str, str] | None = None,
        prediction_unit: str | None = None,
        piecewise_constant: bool | None = None,
        ax: Axes | None = None,
        **plot_kw: Any,
    ):
        """From an univariate numeric fME and :func:`fme.dme` output (aligned on the index).

        ``piecewise_constant``: whether the model's prediction is piecewise constant along the step (then no
        tangent is drawn); None: True when the effects' NLM was computed exactly for a tree ensemble, else
        read from the slopes (:attr:`piecewise_constant`).

        Raises
        ------
        ParameterError
            For anything but an :func:`fme.fme` result, or a multi-output one.
        StepError
            For multivariate or categorical steps.
        DataError
            For a dME frame that is not :func:`fme.dme` output or misses evaluated rows.
        """
        who = "SecantTangentDisplay.from_effects"
        check_effects(effects, who)
        if len(effects.steps) != 1 or not effects.steps[0].is_numeric:
            raise StepError(
                f"secant vs tangent needs one numeric step, got {effects.describe_steps()!r}; compute "
                "fme.fme with one numeric step, e.g. {feature: 1.0}."
            )
        if effects.output_names is not None:
            raise ParameterError(
                "secant vs tangent needs a single-output fME (not target_class='all'); pass target_class=<class>."
            )
        if not isinstance(dme_frame, pd.DataFrame) or "dme" not in dme_frame.columns:
            got = (
                f"a DataFrame with columns {list(dme_frame.columns)[:8]}"
                if isinstance(dme_frame, pd.DataFrame)
                else type(dme_frame).__name__
            )
            raise DataError(
                f"{who} needs fme.dme's output (a DataFrame with a 'dme' column) as dme_frame, got {got}; "
                "pass fme.dme(model, data, feature)."
            )
        missing = effects.results.index.difference(dme_frame.index)
        if len(missing):
            raise DataError(
                f"dme_frame lacks {len(missing)} evaluated rows (e.g. {list(missing[:3])}); compute "
                "fme.dme on the same data."
            )
        step = effects.steps[0]
        tangent = dme_frame.loc[effects.results.index, "dme"].to_numpy(dtype=float) * float(step.value)
        if piecewise_constant is None and effects.nlm_method == "exact":
            piecewise_constant = True  # the exact NLM is computed only for a tree ensemble's paths
        disp = cls(
            fme_values=effects.results["fme"].to_numpy(dtype=float),
            tangent_values=tangent,
            step=step,
            units=units,
            prediction_unit=prediction_unit,
            piecewise_constant=piecewise_constant,
        )
        return disp.plot(ax=ax, **plot_kw)

    @classmethod
    def from_model(
        cls,
        model: Any,
        data: pd.DataFrame,
        feature: str,
        step: Any,
        *,
        eps: float | None = None,
        units: Mapping[str, str] | None = None,
        prediction_unit: str | None = None,
        ax: Axes | None = None,
        plot_kw: Mapping[str, Any] | None = None,
        **fme_kw: Any,
    ):
        """Compute ``fme.fme(model, data, {feature: step})`` and ``fme.dme`` and plot.

        ``fme_kw`` go to :func:`fme.fme` (``extrapolation``, ``target_class`` ...). The figure shows no
        interval, so the effects are computed with ``inference='sample'`` unless ``fme_kw`` names another (the
        automatic choice would warn about an interval nobody sees). The model's adapter says whether its
        prediction is piecewise constant in ``feature`` (a tree ensemble): then no tangent is drawn.
        """
        from .._nlm.exact import exact_support
        from ..effects import fme
        from ..margins.marginal import dme

        effects = fme(model, data, {feature: step}, **{"inference": "sample", **fme_kw})
        derivative = dme(model, data, feature, eps=eps, target_class=fme_kw.get("target_class"))
        columns = list(effects.model_features or effects.data.columns)
        thresholds, _ = exact_support(model, [feature], columns)
        return cls.from_effects(
            effects,
            derivative,
            units=units,
            prediction_unit=prediction_unit,
            piecewise_constant=True if thresholds is not None else None,
            ax=ax,
            **dict(plot_kw or {}),
        )

    def plot(
        self, *, ax: Axes | None = None, scatter_kw: Mapping[str, Any] | None = None, style: PlotStyle | None = None
    ):
        """Scatter of (dME·h, fME) with the identity line, or, for a piecewise constant prediction, no tangent
        and a note saying why (``note_``); ``style`` (a :class:`~fme.plotting.PlotStyle`) gives the colours and
        font sizes; returns self."""
        st = self.style_ = resolve_style(style)
        ax = new_axes(ax, figsize=(5.2, 4.8))
        self.ax_, self.figure_ = ax, ax.figure
        self.scatter_ = self.identity_line_ = self.legend_ = self.note_ = None
        self.drawn_ = finite_rows(self.tangent_values, self.fme_values)
        unit = f" ({self.prediction_unit})" if self.prediction_unit else ""
        text = step_label(self.step, self.units)
        style_axes(ax, f"dME · h, tangent for {text}{unit}", f"fME of {text}, secant{unit}", st)
        if self.piecewise_constant:
            self._plot_without_tangent(ax, text)
            return self
        kw = dict(s=14, alpha=0.7, linewidths=0, color=st.color("points"), zorder=2)
        kw.update(scatter_kw or {})
        ok = self.drawn_.mask
        self.scatter_ = ax.scatter(self.tangent_values[ok], self.fme_values[ok], **kw)
        both = np.concatenate([self.tangent_values[ok], self.fme_values[ok]])
        lo, hi = (both.min(), both.max()) if both.size else (0.0, 1.0)
        pad = 0.05 * (hi - lo) if hi > lo else 0.5
        (self.identity_line_,) = ax.plot(
            [lo - pad, hi + pad],
            [lo - pad, hi + pad],
            color=st.color("average"),
            linestyle="--",
            linewidth=1.5,
            zorder=3,
            label="fME = dME · h",
        )
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(lo - pad, hi + pad)
        ax.set_aspect("equal", adjustable="box")
        from matplotlib.lines import Line2D

        handles, labels = ax.get_legend_handles_labels()
        handles.append(Line2D([], [], linestyle="none"))
        labels.append(f"mean |fME − dME · h| = {fmt_num(self.mean_abs_error)}")
        if self.drawn_.note:
            handles.append(Line2D([], [], linestyle="none"))
            labels.append(self.drawn_.note)
        # Above the axes, where no point can be: inside, a corner may hold the only point (one row, or all
        # rows equal, sit in the middle of a legend-sized square).
        self.legend_ = legend_above(ax, handles, labels, st)
        return self

    def _plot_without_tangent(self, ax: Axes, text: str) -> None:
        """The note that replaces the scatter: a piecewise constant prediction has a tangent of slope 0 (or
        none, on a jump), which says nothing of the change over the step."""
        ax.set_xticks([])
        ax.set_yticks([])
        share = self.zero_slope_share
        finite = self.fme_values[np.isfinite(self.fme_values)]
        mean = f": mean {fmt_num(float(finite.mean()))}" if finite.size else ""
        seen = f" (dME · h = 0 on {100 * share:.0f}% of the rows)" if np.isfinite(share) and share > 0 else ""
        self.note_ = ax.text(
            0.5,
            0.5,
            f"No tangent drawn: the model's prediction is piecewise constant along {self.step.feature} "
            f"(a tree ensemble){seen}, so its derivative is 0 or undefined and says nothing of the effect of "
            f"{text}.\nThe fME is the effect{mean}; see FMEDisplay.",
            transform=ax.transAxes,
            ha="center",
            va="center",
            wrap=True,
            fontsize=self.style_.size("note"),
            color=self.style_.color("text"),
        )
