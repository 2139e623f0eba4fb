"""Plots of forward marginal effects, NLMs and cAME trees (scikit-learn Display style).

Each Display stores numbers already computed by :func:`fme.fme` (or a cAME
partition); ``from_effects`` / ``from_model`` / ``from_partition`` build one and
call ``plot``, which draws, keeps the artists in trailing-underscore
attributes and returns ``self``. matplotlib is imported inside ``plot`` only,
so ``import fme`` stays free of it. The figures follow the paper (§7, §8):
fME against the feature with an arrow of the step length, hexagon maps for two
features, densities for three or more, and the cAME tree. Figures carry no
title: captions come from the report.

Modules, one per display family; imports go one way, displays -> helpers:

* :mod:`~fme.plotting.effects`: :class:`FMEDisplay`;
* :mod:`~fme.plotting.nlm`: :class:`NLMDisplay` (an :class:`FMEDisplay` of the NLMs: the
  one display that imports another), :class:`EffectsDisplay`, :func:`plot_fme_nlm`;
* :mod:`~fme.plotting.secant`: :class:`SecantTangentDisplay`;
* :mod:`~fme.plotting.came`: :class:`CAMEDisplay` (the leaves' cAMEs with CIs, a dot plot);
* :mod:`~fme.plotting.extrapolation`: :class:`ExtrapolationDisplay` (where a step leaves the data);
* :mod:`~fme.plotting.tree`: :class:`PartitionDisplay` (layout, labels, drawing);
* :mod:`~fme.plotting.joint_tree`: :class:`JointPartitionDisplay` (a joint partition's tree, one line per
  effect in each leaf; layout and labels from :mod:`~fme.plotting.tree`);
* :mod:`~fme.plotting._common`: palette, fonts, :class:`PlotStyle`, axes set-up, labels, number
  formatting glue (imports no display); :mod:`~fme.plotting.rugs`: the scatter's rugs;
* :mod:`~fme.plotting.data`: pure NumPy rules for what a figure may draw
  (finite rows, histogram edges, KDE), also used by :mod:`fme.report.analysis.figures`.

Why matplotlib and not seaborn
------------------------------
Every figure of the displays and of the report (:mod:`fme.report.analysis.figures`) is
drawn with matplotlib directly; seaborn is not a dependency. Checked per figure
against seaborn 0.13.2 (the version the lock pinned):

* Histogram + density of fMEs (``FMEDisplay``/``NLMDisplay`` ``kind='density'``,
  the report's fME density): a linear model's fMEs differ by ~1e-16 relative;
  ``sns.histplot`` raises ``ValueError: Too many bins for data range`` on them
  and ``sns.kdeplot`` draws a spike of bandwidth ~1e-16, where
  :func:`~fme.plotting.data.histogram_edges` gives one bar of visible width
  and :func:`~fme.plotting.data.kde_curve` no curve. seaborn drops NaN and
  ±inf silently; these figures count them in the legend and the caption.
* NLM histogram (report) and NLM densities: NLM <= 1 with an atom at 1 (a
  linear path). ``sns.kdeplot``'s default ``cut=3`` puts density above 1 (a
  third of the mass for a sample with 60 % of NLMs equal to 1), and a KDE
  smooths the atom into a hump; the report's NLM figure is a histogram on fixed
  bins over [-1, 1] with no KDE at all, and the displays draw their KDE only
  over a histogram and within the data's range (plus 5 %).
* Scatter against the feature / coloured by NLM (``FMEDisplay``/``NLMDisplay``
  scatter, hexbin and map): ``sns.scatterplot(hue=...)`` gives a legend of
  seaborn-chosen ticks (``−0.8, −0.4, 0.0, ...``) instead of a colorbar on a
  norm centred at 0 (the NLM side capped at 1) or a log count norm, and names
  the axes after the frame's columns; the labels, the step arrow and the
  legend numbers (:func:`~fme.plotting._common.fmt_num`) are ours either way.
  seaborn has no hexbin outside ``jointplot``, a figure-level function without
  ``ax=``, which would break the ``plot(ax=)`` contract.
* Per-leaf distributions (``PartitionDisplay``): the leaf histograms are inset
  axes placed in the tree's data coordinates with shared bin edges and one y
  scale; ``FacetGrid``/``displot`` make their own figure and grid, and
  ``sns.histplot`` per inset would take the same edges ``ax.hist`` takes. Its
  numbers are the report's table cells via :mod:`fme._utils.numfmt`.
* Secant vs tangent, cAME dot plot, extrapolation histogram: one scatter with
  an identity line, error bars, a stacked hatched histogram; nothing seaborn
  does better.
* ``make paper`` and ``make report`` must stay byte-identical: even
  with the same bin edges, ``sns.histplot`` writes a different SVG from
  ``ax.hist`` (16 206 vs 21 354 bytes in the check above).

Styling: every display's ``plot`` takes ``style=`` (a :class:`PlotStyle`: colours per role, hollow or
filled points, font sizes, line styles, the hatch of left-out rows, how many points and rug marks); the
default is :data:`DEFAULT_STYLE`. The report draws its figures with these displays and its own style.

>>> from fme.plotting import FMEDisplay             # doctest: +SKIP
>>> disp = FMEDisplay.from_effects(fme.fme(model, X, {"rm": 1}), units={"rm": "rooms"})  # doctest: +SKIP
>>> disp.figure_.savefig("fme_rm.png")              # doctest: +SKIP
"""

from ._common import COLORS, DEFAULT_STYLE, OKABE_ITO, PlotStyle
from .came import CAMEDisplay
from .effects import FMEDisplay
from .extrapolation import ExtrapolationDisplay
from .joint_tree import JointPartitionDisplay
from .nlm import EffectsDisplay, NLMDisplay, plot_fme_nlm
from .secant import SecantTangentDisplay
from .tree import PartitionDisplay

__all__ = [
    "OKABE_ITO",
    "COLORS",
    "PlotStyle",
    "DEFAULT_STYLE",
    "FMEDisplay",
    "NLMDisplay",
    "EffectsDisplay",
    "SecantTangentDisplay",
    "PartitionDisplay",
    "JointPartitionDisplay",
    "CAMEDisplay",
    "ExtrapolationDisplay",
    "plot_fme_nlm",
]
