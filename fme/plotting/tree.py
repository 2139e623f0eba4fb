"""The cAME tree: :class:`PartitionDisplay` and its layout, labels and drawing (paper §5.5, Figs. 11-12).

Split boxes with the test's p-value, edge conditions, and under each leaf its
label (n, share, cAME [CI], CoV, cANLM) and a histogram of its fMEs; all leaf
panels share one set of bin edges and one y scale (report checklist §2.7). The
numbers are the report's table cells (:mod:`fme._utils.numfmt` via
:func:`~fme.plotting._common.fmt_ci`).

Drawn with matplotlib, not seaborn (see :mod:`fme.plotting`): the leaf panels
are inset axes placed in the tree's data coordinates, which a seaborn
``FacetGrid`` (its own figure, a grid of facets) cannot give, and ``sns.histplot``
per inset would only take the shared edges of :mod:`fme.plotting.data` that
``ax.hist`` takes; a KDE per leaf would smooth leaves whose fMEs sit on a few
atoms (a tree model's piecewise-constant predictions give exactly that).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .._utils import numfmt as _shared
from ..exceptions import DataError, ParameterError
from ._common import PlotStyle, fmt_ci, fmt_num, fmt_p, measure_column, pyplot, resolve_style, step_label
from .data import histogram_edges

__all__ = [
    "PartitionDisplay",
    "STAGGER_FROM",
    "counts_from_leaves",
    "draw_tree",
    "edge_label",
    "inner_label",
    "leaf_label",
    "node_children",
    "tree_layout",
]

#: Vertical room (in tree-level units) below the leaf row: label, then histogram.
_LEAF_LABEL_HEIGHT = 0.62
_LEAF_HIST_HEIGHT = 0.85
_LEAF_HIST_WIDTH = 0.84
_MAX_LEVELS_SHOWN = 4
#: Space (tree-level units) between a leaf panel's tick labels and the staggered row below.
_LEAF_ROW_GAP = 0.4
#: From this many leaves on, leaf labels alternate between two rows.
STAGGER_FROM = 5


# ----------------------------------------------------------------- tree layout
def node_children(nodes: pd.DataFrame, node: int) -> tuple[int, ...]:
    kids = nodes.at[node, "children"]
    if kids is None or (isinstance(kids, float) and np.isnan(kids)):
        return ()
    return tuple(int(k) for k in kids)


def tree_layout(nodes: pd.DataFrame) -> dict[int, tuple[float, float]]:
    """(x, y) of every node: leaves on one bottom row, parents centred above.

    Parameters
    ----------
    nodes : DataFrame
        ``part.tree.nodes_``: indexed by node id, with ``parent``, ``depth``,
        ``is_leaf`` and ``children``.

    Returns
    -------
    dict
        Node id -> (x, y); leaves at x = 0, 1, ... in left-to-right order,
        y = -depth for inner nodes and -max depth for every leaf (aligned leaf
        panels are easier to compare).
    """
    roots = [int(i) for i, p in nodes["parent"].items() if pd.isna(p)]
    if len(roots) != 1:
        raise DataError(
            f"the tree must have exactly one root (a node with parent NA), found {roots}; pass the "
            "nodes of a cAME tree (PartitionResult.nodes)."
        )
    bottom = -float(nodes["depth"].max())
    pos: dict[int, tuple[float, float]] = {}
    next_leaf = [0.0]

    def place(node: int) -> float:
        kids = node_children(nodes, node)
        if not kids:
            x = next_leaf[0]
            next_leaf[0] += 1.0
            pos[node] = (x, bottom)
            return x
        xs = [place(k) for k in kids]
        x = (xs[0] + xs[-1]) / 2
        pos[node] = (x, -float(nodes.at[node, "depth"]))
        return x

    place(roots[0])
    return pos


def edge_label(nodes: pd.DataFrame, parent: int, child: int) -> str:
    """Split condition on the edge from ``parent`` to ``child``.

    Numeric splits send ``x <= value`` to the first child, categorical splits
    map each level to child 1 or 2 (``split_levels``).
    """
    kids = node_children(nodes, parent)
    position = kids.index(child) + 1
    levels = nodes.at[parent, "split_levels"]
    if isinstance(levels, Mapping) and levels:
        # a level absent from the parent node maps to no child (None; CTree)
        chosen = [str(lv) for lv, side in levels.items() if side is not None and int(side) == position]
        shown = chosen[:_MAX_LEVELS_SHOWN]
        more = ", …" if len(chosen) > len(shown) else ""
        return "{" + ", ".join(shown) + more + "}"
    value = nodes.at[parent, "split_value"]
    if value is None or pd.isna(value):
        return ""
    text = _shared.fmt_bound(float(value))
    return f"<= {text}" if position == 1 else f"> {text}"


def inner_label(nodes: pd.DataFrame, node: int, extra: str | None = None) -> str:
    """Box text of an inner node: split variable, p-value (and ``extra``)."""
    p_value = float(nodes.at[node, "p_value"])
    stat = float(nodes.at[node, "statistic"]) if "statistic" in nodes.columns else float("nan")
    # testtype="teststatistic" selects by the statistic itself and reports no p-value.
    test = fmt_p(p_value) if np.isfinite(p_value) else (f"statistic {fmt_num(stat)}" if np.isfinite(stat) else "")
    lines = [str(nodes.at[node, "split_feature"])] + ([test] if test else [])
    lines.append(f"n = {int(nodes.at[node, 'n']):,}")
    if extra:
        lines.append(extra)
    return "\n".join(lines)


def _get(row: Mapping[str, Any] | pd.Series, key: str) -> float:
    value = row.get(key, float("nan")) if hasattr(row, "get") else float("nan")
    return float("nan") if value is None or pd.isna(value) else float(value)


def leaf_label(row: Mapping[str, Any] | pd.Series, n_total: int | None = None) -> str:
    """Text under a leaf: node id, n (share), cAME [CI], CoV, cANLM [CI].

    Parameters
    ----------
    row : Series
        One row of ``part.leaves``.
    n_total : int, optional
        Rows in the root, for the share of the data in this leaf.

    Returns
    -------
    str
    """
    n = int(row["n"])
    share = f" ({_shared.fmt_share(n, n_total)})" if n_total else ""
    est, lo, hi = fmt_ci(_get(row, "came"), _get(row, "came_ci_low"), _get(row, "came_ci_high"))
    # a leaf of fewer than 2 rows has no interval (no spread to estimate it from): said as the report's table says
    ci = "- (fewer than 2 rows)" if n < 2 else f"[{lo}, {hi}]"
    lines = [f"Node {int(row['node'])}: n = {n:,}{share}", f"cAME {est} {ci}"]
    cov = _get(row, "cov_fme")
    if np.isfinite(cov):
        lines.append(f"CoV {_shared.fmt_num(cov, 2)}")  # 2 decimals, as the report's leaf table
    canlm = _get(row, "canlm")
    if np.isfinite(canlm):
        est, lo, hi = fmt_ci(canlm, _get(row, "canlm_ci_low"), _get(row, "canlm_ci_high"))
        lines.append(f"cANLM {est} [{lo}, {hi}]")
    return "\n".join(lines)


def _ame_text(row: Mapping[str, Any] | pd.Series) -> tuple[str, str]:
    """A root's AME as the figure prints it, alone and with its CI: ("5.43", "5.43 [5.10, 5.76]")."""
    est, lo, hi = fmt_ci(_get(row, "came"), _get(row, "came_ci_low"), _get(row, "came_ci_high"))
    return est, f"{est} [{lo}, {hi}]"


def counts_from_leaves(nodes: pd.DataFrame, leaves: pd.DataFrame) -> pd.DataFrame:
    """``nodes`` with each node's ``n`` the sum of its leaves' ``n`` (the rows that estimate them)."""
    out = nodes.copy()
    counts = pd.Series(0, index=out.index, dtype="int64")
    for node, n in zip(leaves["node"].astype(int), leaves["n"].astype(int)):
        while node in counts.index:  # up to the root: a handful of nodes, not rows
            counts[node] += n
            parent = out.at[node, "parent"]
            if pd.isna(parent):
                break
            node = int(parent)
    out["n"] = counts.astype(float)
    return out


# ----------------------------------------------------------------- drawing
def draw_tree(
    ax: Any,
    nodes: pd.DataFrame,
    leaves: pd.DataFrame,
    leaf_values: Mapping[int, np.ndarray],
    *,
    root_label: str | None,
    n_total: int | None,
    average: float,
    colors: Mapping[str, str],
    fontsize: float,
    bins: int,
    stagger: bool = False,
) -> dict[str, Any]:
    """Draw the tree into ``ax`` (axis off, data coordinates = layout units).

    ``stagger``: every second leaf's label and panel one row lower (joined to its leaf by a dotted line), so
    neighbouring leaves may be closer than a label is wide; large trees stay narrow enough for a page.

    Returns
    -------
    dict
        Artists: ``node_boxes``, ``edge_lines``, ``edge_labels`` (keyed by
        child id), ``leaf_axes``, ``leaf_labels``, ``leaf_hists``,
        ``leaf_came_lines`` (keyed by leaf id).
    """
    pos = tree_layout(nodes)
    leaf_ids = [int(i) for i in leaves["node"]]
    bottom = -float(nodes["depth"].max())
    out: dict[str, dict] = {
        k: {}
        for k in (
            "node_boxes",
            "edge_lines",
            "edge_labels",
            "leaf_axes",
            "leaf_labels",
            "leaf_hists",
            "leaf_came_lines",
        )
    }
    box = dict(boxstyle="round,pad=0.35", facecolor="white", edgecolor=colors["text"], linewidth=1.0)
    for node, (x, y) in pos.items():
        kids = node_children(nodes, node)
        for i, child in enumerate(kids):
            cx, cy = pos[child]
            (line,) = ax.plot([x, cx], [y, cy], color=colors["edge"], linewidth=1.2, zorder=1)
            out["edge_lines"][child] = line
            # siblings' conditions at different heights along their edges (1/3, 2/3): side by side they would
            # need a layout unit as wide as two labels
            f = (i + 1) / (len(kids) + 1)
            out["edge_labels"][child] = ax.text(
                x + f * (cx - x),
                y + f * (cy - y),
                edge_label(nodes, node, child),
                ha="center",
                va="center",
                fontsize=fontsize,
                color=colors["text"],
                zorder=3,
                bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none"),
            )
        if node_children(nodes, node):
            extra = root_label if pd.isna(nodes.at[node, "parent"]) else None
            out["node_boxes"][node] = ax.text(
                x,
                y,
                inner_label(nodes, node, extra),
                ha="center",
                va="center",
                fontsize=fontsize,
                zorder=4,
                bbox=box,
                color=colors["text"],
            )
    finite = np.concatenate([v[np.isfinite(v)] for v in leaf_values.values()] or [np.empty(0)])
    # One set of edges for all panels; a flat or float-unresolvable range gets one bar of visible width.
    edges = histogram_edges(finite, bins)
    lo, hi = float(edges[0]), float(edges[-1])
    top = 0.0
    row_height = _LEAF_LABEL_HEIGHT + _LEAF_HIST_HEIGHT + _LEAF_ROW_GAP
    order = {node: i for i, node in enumerate(sorted(leaf_ids, key=lambda n: pos[n][0]))}
    for _, row in leaves.iterrows():
        node = int(row["node"])
        x, _ = pos[node]
        y = bottom - (row_height if stagger and order[node] % 2 else 0.0)
        if y != bottom:
            ax.plot([x, x], [bottom, y], color=colors["edge"], linewidth=0.8, linestyle=":", zorder=1)
        out["leaf_labels"][node] = ax.text(
            x,
            y,
            leaf_label(row, n_total),
            ha="center",
            va="top",
            fontsize=fontsize,
            color=colors["text"],
            zorder=4,
            bbox=box,
        )
        inset = ax.inset_axes(
            [x - _LEAF_HIST_WIDTH / 2, y - _LEAF_LABEL_HEIGHT - _LEAF_HIST_HEIGHT, _LEAF_HIST_WIDTH, _LEAF_HIST_HEIGHT],
            transform=ax.transData,
        )
        values = np.asarray(leaf_values.get(node, np.empty(0)), dtype=float)
        values = values[np.isfinite(values)]
        _, _, bars = inset.hist(
            values, bins=edges, density=True, color=colors["bars"], edgecolor="white", linewidth=0.4
        )
        top = max(top, max((b.get_height() for b in bars), default=0.0))
        out["leaf_came_lines"][node] = inset.axvline(float(row["came"]), color=colors["came"], linewidth=1.8)
        inset.axvline(average, color=colors["text"], linestyle="--", linewidth=1.0)
        inset.tick_params(labelsize=fontsize)
        inset.set_yticks([])
        out["leaf_axes"][node] = inset
        out["leaf_hists"][node] = bars
    # Comparable panels share one scale (report checklist §2.7).
    for inset in out["leaf_axes"].values():
        inset.set_xlim(lo, hi)
        inset.set_ylim(0, top * 1.08 if top > 0 else 1.0)
    ax.set_xlim(-0.55, max(len(leaf_ids) - 0.45, 0.55))
    ax.set_ylim(bottom - (row_height if stagger else 0.0) - _LEAF_LABEL_HEIGHT - _LEAF_HIST_HEIGHT - 0.3, 0.45)
    ax.set_axis_off()
    return out


def _fit_width(ax: Any, boxes: list, gap_inches: float = 0.15, rounds: int = 4, min_width: float = 6.4) -> None:
    """Set the figure's width to what its boxed texts need.

    Any two boxes that share a vertical extent must be ``gap_inches`` apart; their distance in layout
    units is fixed by the tree, so the width of one layout unit follows from the tightest pair. The
    x-limits leave room for the outermost boxes. Neither too wide (a page scales a wide figure and its
    text down) nor overlapping; at least ``min_width`` inches.
    """
    fig = ax.figure
    for _ in range(rounds):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        to_data = ax.transData.inverted()
        unit = abs(ax.transData.transform((1.0, 0.0))[0] - ax.transData.transform((0.0, 0.0))[0])
        items = []
        for t in boxes:
            patch = t.get_bbox_patch()
            if patch is None:
                continue
            ext = patch.get_window_extent(renderer)
            x = float(to_data.transform(((ext.x0 + ext.x1) / 2, 0))[0])
            items.append((x, ext.width, ext.y0, ext.y1))
        gap = gap_inches * fig.dpi
        needed = 0.0
        for i, a in enumerate(items):
            for b in items[i + 1 :]:
                dx = abs(a[0] - b[0])
                if dx > 1e-9 and a[2] < b[3] and b[2] < a[3]:  # side by side: the width of a unit separates them
                    needed = max(needed, ((a[1] + b[1]) / 2 + gap) / dx)
        x_lo, x_hi = ax.get_xlim()
        left = min((x - w / 2 / max(needed, 1e-9) for x, w, _, _ in items), default=x_lo)
        right = max((x + w / 2 / max(needed, 1e-9) for x, w, _, _ in items), default=x_hi)
        pad = gap / 2 / max(needed, 1e-9)
        ax.set_xlim(min(-0.55, left - pad), max(x_hi if x_hi <= 0.55 else 0.55, right + pad))
        if needed <= 0 or unit <= 0:
            return
        width, height = fig.get_size_inches()
        span = ax.get_xlim()[1] - ax.get_xlim()[0]
        axes_share = ax.get_window_extent(renderer).width / (width * fig.dpi)
        target = max(min_width, needed * span / fig.dpi / max(axes_share, 1e-9) * 1.01)
        if abs(target - width) < 0.01 * width:
            return
        fig.set_size_inches(target, height)


# ----------------------------------------------------------------- display
class PartitionDisplay:
    """The cAME tree: split boxes, edge conditions, and per leaf a histogram of fMEs.

    Parameters
    ----------
    nodes : DataFrame
        ``part.tree.nodes_`` (indexed by node id, root 1, pre-order).
    leaves : DataFrame
        ``part.leaves`` (one row per leaf: node, n, came, CI, cov, canlm ...).
    leaf_values : dict
        Leaf id -> ndarray of that leaf's fMEs.
    average : float
        The root's AME, dashed in every leaf panel (:meth:`from_partition`: of all evaluated rows, or of an
        honest partition's estimation rows).
    n_total : int
        Rows in the root (the leaves' shares are of these).
    conf_level : float
    step_text : str
        The step, for the note under the tree.
    root_label : str, optional
        Extra line in the root box (default: the AME with CI).
    average_text : str, optional
        The global AME as printed in the note under the tree (default: 3 significant digits;
        :meth:`from_partition` passes the root label's estimate, so both read alike).
    rows_text : str, optional
        Which rows the boxes' and leaves' counts and the leaf panels hold, said in the note under the tree
        (:meth:`from_partition`: of an honest partition, the rows that estimate the leaves).
    average_name : str, default='global AME'
        What the dashed line is, in the note (:meth:`from_partition` of an honest partition:
        ``"the estimation rows' AME"``, the AME of the rows that estimate the leaves, as the root box shows).

    Attributes
    ----------
    figure_, ax_ : Figure, Axes
        ``ax_`` is the (axis-off) tree canvas.
    node_boxes_, edge_lines_, edge_labels_ : dict
        Keyed by inner node id / child id.
    leaf_axes_, leaf_labels_, leaf_hists_, leaf_came_lines_ : dict
        Keyed by leaf id; ``leaf_axes_`` are inset axes of ``ax_``.
    note_ : Text
    """

    def __init__(
        self,
        *,
        nodes: pd.DataFrame,
        leaves: pd.DataFrame,
        leaf_values: Mapping[int, np.ndarray],
        average: float,
        n_total: int,
        conf_level: float,
        step_text: str,
        root_label: str | None = None,
        average_text: str | None = None,
        rows_text: str | None = None,
        average_name: str = "global AME",
    ) -> None:
        self.average_name = average_name
        self.average_text = average_text if average_text is not None else fmt_num(float(average))
        self.rows_text = rows_text
        self.nodes = nodes
        self.leaves = leaves
        self.leaf_values = dict(leaf_values)
        self.average = float(average)
        self.n_total = int(n_total)
        self.conf_level = float(conf_level)
        self.step_text = step_text
        self.root_label = root_label

    @classmethod
    def from_partition(
        cls, part: Any, *, output: Any = None, units: Mapping[str, str] | None = None, ax: Any = None, **plot_kw: Any
    ) -> PartitionDisplay:
        """Build from a cAME partition (``fme.came`` output) and plot.

        Uses only ``part.nodes`` (the reduced tree; ``part.tree.nodes_`` when absent), ``part.leaves``, ``part.root``,
        ``part.effects``, ``part.leaf_of_row`` and ``part.conf_level``; of an honest partition also
        ``part.estimation_root``, ``part.estimated_on`` and ``part.estimation_sample`` (Dask data).

        An honest partition's figure counts one set of rows, those that estimate the leaves: the boxes' counts,
        the leaves' shares, cAMEs and CIs, the root's AME and its dashed line, and the panels' fMEs (on Dask data
        a seeded sample of them when they exceed ``sample_size``); the note names them and gives the AME of all
        evaluated rows beside.
        """
        missing = [
            name for name in ("effects", "leaves", "root", "leaf_of_row", "conf_level") if not hasattr(part, name)
        ]
        if missing:
            raise ParameterError(
                f"PartitionDisplay.from_partition takes the result of fme.came (a PartitionResult), "
                f"got {type(part).__name__} without {missing}; pass fme.came(model, data, steps)."
            )
        effects = part.effects
        column = measure_column(effects, "fme", output, "PartitionDisplay.from_partition")
        values = effects.results[column]
        nodes = getattr(part, "nodes", part.tree.nodes_)
        root = part.root.iloc[0] if isinstance(part.root, pd.DataFrame) else part.root
        est, all_rows = _ame_text(root)
        n_all = int(root["n"])
        root_label, rows_text, n_total, average = f"AME {all_rows}", None, n_all, float(root["came"])
        average_name = "global AME"
        leaf_of_row = part.leaf_of_row
        if getattr(part, "honest", False):
            # one set of rows: counts, shares, cAMEs, the root's AME, its line and the panels are all over the rows
            # that estimate the leaves; the note names them and gives the AME of all rows beside
            sample = getattr(part, "estimation_sample", None)
            if sample is not None:  # Dask: the estimation rows (or a seeded sample of them) the engine kept
                values, leaf_of_row = sample["fme"], sample["node"]
            else:
                values = values[values.index.isin(part.estimated_on)]
            sub = part.estimation_root
            est, sub_text = _ame_text(sub)
            nodes = counts_from_leaves(nodes, part.leaves)
            n_total, average = int(sub["n"]), float(sub["came"])
            average_name = "the estimation rows' AME"
            root_label = f"AME {sub_text}\nof these {_shared.count(n_total, 'row')}"
            kept = f"a seeded sample of {len(values):,} of them" if len(values) < n_total else f"all {len(values):,}"
            rows_text = (
                f"Rows: the {n_total:,} that estimate the leaves (honest; the tree grew on "
                f"{n_all - n_total:,} others): every count, share, cAME and CI, and the panels ({kept}). "
                f"The AME of all {n_all:,} evaluated rows is {all_rows}."
            )
        elif getattr(part, "dask_effects", None) is not None and getattr(part, "grown_on_sample", False):
            rows_text = (
                f"Panels: the {len(values):,} sampled rows the tree grew on; leaf counts and figures: all "
                "evaluated rows."
            )
        leaf_of_row = leaf_of_row.reindex(values.index)
        leaf_values = {int(node): values[leaf_of_row == node].to_numpy(dtype=float) for node in part.leaves["node"]}
        display = cls(
            nodes=nodes,
            leaves=part.leaves,
            leaf_values=leaf_values,
            average=average,
            n_total=n_total,
            conf_level=float(part.conf_level),
            step_text=", ".join(step_label(s, dict(units or {})) for s in effects.steps),
            root_label=root_label,
            average_text=est,
            rows_text=rows_text,
            average_name=average_name,
        )
        return display.plot(ax=ax, **plot_kw)

    def plot(
        self, *, ax: Any = None, bins: int = 20, fontsize: float = 9.0, style: PlotStyle | None = None
    ) -> PartitionDisplay:
        """Draw the tree top-down (new figure sized to the tree by default); returns self.

        ``style`` (a :class:`~fme.plotting.PlotStyle`) gives the colours: ``text`` (boxes, labels), ``edge``
        (branches), ``bars`` (leaf histograms), ``came`` (each leaf's cAME line); ``fontsize`` the text size.
        """
        self.style_ = resolve_style(style)
        own_figure = ax is None
        if ax is None:
            depth = float(self.nodes["depth"].max())
            n_leaves = len(self.leaves)
            stagger = n_leaves >= STAGGER_FROM
            height = 1.5 * depth + 3.2 + (2.5 if stagger else 0.0)
            _, ax = pyplot().subplots(figsize=(max(6.4, 1.2 * n_leaves), height), layout="constrained")
        else:
            stagger = False
        self.ax_, self.figure_ = ax, ax.figure
        artists = draw_tree(
            ax,
            self.nodes,
            self.leaves,
            self.leaf_values,
            root_label=self.root_label,
            n_total=self.n_total,
            average=self.average,
            colors=self.style_.colors,
            fontsize=fontsize,
            bins=bins,
            stagger=stagger,
        )
        for name, value in artists.items():
            setattr(self, f"{name}_", value)
        if own_figure:
            _fit_width(
                ax,
                list(self.leaf_labels_.values()) + list(self.node_boxes_.values()) + list(self.edge_labels_.values()),
            )
        level = f"{100 * self.conf_level:g}%"
        self.note_ = ax.text(
            0.0,
            0.0,
            f"Leaf panels: fME of {self.step_text} (shared axes). Solid line: cAME; dashed: "
            f"{self.average_name} {self.average_text}. Intervals: {level} CI."
            + (f" {self.rows_text}" if self.rows_text else ""),
            transform=ax.transAxes,
            ha="left",
            va="top",
            wrap=True,
            fontsize=fontsize,
            color=self.style_.color("text"),
        )
        return self
