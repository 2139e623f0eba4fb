"""The joint cAME tree (:class:`JointPartitionDisplay`): one tree for several effects, one line per effect in
each leaf's box (its cAME and CI in its own unit). Layout, edge conditions and split boxes are those of
:class:`~fme.plotting.PartitionDisplay` (:mod:`fme.plotting.tree`); a histogram per effect and leaf would make
a grid of panels per leaf, so the leaves carry numbers only.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..exceptions import ParameterError
from ._common import PlotStyle, fmt_ci, pyplot, resolve_style
from .tree import counts_from_leaves, edge_label, inner_label, node_children, tree_layout

__all__ = ["JointPartitionDisplay", "joint_leaf_label"]


def joint_leaf_label(rows: pd.DataFrame) -> str:
    """Text of a leaf's box: node id and n, then ``effect: cAME [CI]`` per effect (rows of ``part.leaves``)."""
    first = rows.iloc[0]
    lines = [f"Node {int(first['node'])}: n = {int(first['n']):,}"]
    for _, r in rows.iterrows():
        if int(r["n"]) < 2:
            lines.append(f"{r['effect']}: - (fewer than 2 rows)")
            continue
        est, lo, hi = fmt_ci(float(r["came"]), float(r["came_ci_low"]), float(r["came_ci_high"]))
        lines.append(f"{r['effect']}: {est} [{lo}, {hi}]")
    return "\n".join(lines)


class JointPartitionDisplay:
    """The tree of a joint partition (:func:`fme.came` of several effects).

    Parameters
    ----------
    nodes : DataFrame
        The reduced tree's node table (``part.nodes``).
    leaves : DataFrame
        ``part.leaves``: one row per (leaf, effect).
    conf_level : float
    rows_text : str, optional
        Which rows the counts and figures hold (an honest partition: the rows that estimate the leaves).

    Attributes
    ----------
    figure_, ax_ : Figure, Axes
    node_boxes_, edge_lines_, edge_labels_ : dict
        Keyed by inner node id / child id.
    leaf_labels_ : dict
        Leaf id -> its box (one line per effect).
    note_ : Text
    """

    def __init__(
        self, *, nodes: pd.DataFrame, leaves: pd.DataFrame, conf_level: float, rows_text: str | None = None
    ) -> None:
        self.nodes = nodes
        self.leaves = leaves
        self.conf_level = float(conf_level)
        self.rows_text = rows_text

    @classmethod
    def from_partition(cls, part: Any, *, ax: Any = None, **plot_kw: Any) -> JointPartitionDisplay:
        """Build from a joint partition and plot. An honest partition's counts are those of the rows that
        estimate the leaves, as its figures."""
        if not hasattr(part, "effect_labels"):
            raise ParameterError(
                f"JointPartitionDisplay takes the result of fme.came([...]) of several effects, got "
                f"{type(part).__name__}; draw a one-effect partition with PartitionDisplay."
            )
        nodes = part.nodes
        rows_text = None
        if part.honest:
            nodes = counts_from_leaves(nodes, part.leaves.drop_duplicates("node"))
            rows_text = "Counts and figures: the rows that estimate the leaves (honest)."
        return cls(nodes=nodes, leaves=part.leaves, conf_level=part.conf_level, rows_text=rows_text).plot(
            ax=ax, **plot_kw
        )

    def plot(self, *, ax: Any = None, fontsize: float = 9.0, style: PlotStyle | None = None) -> JointPartitionDisplay:
        """Draw the tree top-down (a new figure sized to the tree by default); ``style`` (a
        :class:`~fme.plotting.PlotStyle`) gives the ``text`` and ``edge`` colours; returns self."""
        st = self.style_ = resolve_style(style)
        nodes = self.nodes
        pos = tree_layout(nodes)
        leaf_ids = list(dict.fromkeys(int(v) for v in self.leaves["node"]))
        n_effects = len(self.leaves) // max(len(leaf_ids), 1)
        if ax is None:
            depth = float(nodes["depth"].max())
            _, ax = pyplot().subplots(
                figsize=(max(6.4, 2.6 * len(leaf_ids)), 1.5 * depth + 1.5 + 0.35 * n_effects), layout="constrained"
            )
        self.ax_, self.figure_ = ax, ax.figure
        box = dict(boxstyle="round,pad=0.35", facecolor="white", edgecolor=st.color("text"), linewidth=1.0)
        self.node_boxes_, self.edge_lines_, self.edge_labels_, self.leaf_labels_ = {}, {}, {}, {}
        for node, (x, y) in pos.items():
            kids = node_children(nodes, node)
            for i, child in enumerate(kids):
                cx, cy = pos[child]
                (self.edge_lines_[child],) = ax.plot([x, cx], [y, cy], color=st.color("edge"), linewidth=1.2, zorder=1)
                f = (i + 1) / (len(kids) + 1)
                self.edge_labels_[child] = ax.text(
                    x + f * (cx - x),
                    y + f * (cy - y),
                    edge_label(nodes, node, child),
                    ha="center",
                    va="center",
                    fontsize=fontsize,
                    zorder=3,
                    bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none"),
                )
            if kids:
                self.node_boxes_[node] = ax.text(
                    x, y, inner_label(nodes, node), ha="center", va="center", fontsize=fontsize, zorder=4, bbox=box
                )
        for leaf in leaf_ids:
            x, y = pos[leaf]
            rows = self.leaves[self.leaves["node"] == leaf]
            self.leaf_labels_[leaf] = ax.text(
                x, y, joint_leaf_label(rows), ha="center", va="top", fontsize=fontsize, zorder=4, bbox=box
            )
        bottom = -float(nodes["depth"].max())
        ax.set_xlim(-0.6, max(len(leaf_ids) - 0.4, 0.6))
        ax.set_ylim(bottom - 0.4 - 0.25 * n_effects, 0.45)
        ax.set_axis_off()
        level = f"{100 * self.conf_level:g}%"
        self.note_ = ax.text(
            0.0,
            0.0,
            f"Leaves: cAME per effect, each in its own unit, with its {level} CI."
            + (f" {self.rows_text}" if self.rows_text else ""),
            transform=ax.transAxes,
            ha="left",
            va="top",
            wrap=True,
            fontsize=fontsize,
            color=st.color("text"),
        )
        return self
