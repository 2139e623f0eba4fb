"""The fitted CTree in words, as partykit prints it: a split's condition, a node's rules and the whole tree.

:class:`fme._trees.ctree.CTree` owns the tree (its node table ``nodes_``, the splits and the covariates they use,
keyed by node and by covariate index); this module writes them out: numbers as R's ``format`` shows them
(:func:`fmt_num`, :func:`fmt_break`), factor levels in braces, ordered factors at their level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from . import ctree_stats as S

__all__ = ["fmt_break", "fmt_num", "split_condition", "node_rules", "tree_text"]


def fmt_break(x: float) -> str:
    """Numeric break as partykit prints it: rounded to 5 decimals, then R's 7 digits."""
    return fmt_num(round(float(x), 5), 7)


def fmt_num(x: float, digits: int = 5) -> str:
    """Format like R's ``format(x, digits = 5)`` (significant digits, no trailing zeros)."""
    if not np.isfinite(x):
        return str(x)
    s = f"{x:.{digits}g}"
    if "e" in s:
        mant, exp = s.split("e")
        s = f"{mant}e{exp[0]}{exp[1:].lstrip('0').rjust(2, '0')}"
    return s


def split_condition(nodes: pd.DataFrame, splits: Mapping[int, dict], covs: Sequence[Any], nid: int) -> str:
    """Condition that sends rows from the parent of ``nid`` into ``nid`` (``nodes``: the tree's node table;
    ``splits``: node id -> its split; ``covs``: the covariates a split's ``var`` indexes)."""
    par = nodes.at[nid, "parent"]
    split = splits[int(par)]
    cv = covs[split["var"]]
    first = nodes.at[int(par), "children"][0] == nid
    if cv.kind == S.FACTOR:
        lv = [str(level) for level, c in zip(cv.levels, split["map"]) if c == (1 if first else 2)]
        return f"{cv.name} in {{{', '.join(lv)}}}"
    if cv.kind == S.ORDERED:
        lvl = str(cv.levels[int(split["break"]) - 1])
        return f"{cv.name} {'<=' if first else '>'} {lvl}"
    return f"{cv.name} {'<=' if first else '>'} {fmt_break(split['break'])}"


def node_rules(nodes: pd.DataFrame, splits: Mapping[int, dict], covs: Sequence[Any], node: int) -> str:
    """Conjunction of split conditions leading from the root to ``node`` (a node of ``nodes``); ``"(all)"`` for
    the root."""
    parts = []
    cur = int(node)
    while not pd.isna(nodes.at[cur, "parent"]):
        parts.append(split_condition(nodes, splits, covs, cur))
        cur = int(nodes.at[cur, "parent"])
    return " & ".join(reversed(parts)) if parts else "(all)"


def tree_text(nodes: pd.DataFrame, splits: Mapping[int, dict], covs: Sequence[Any]) -> str:
    """partykit-like print of a fitted tree."""
    nd = nodes
    lines = ["Conditional inference tree (partykit-compatible)", ""]

    def leaf_txt(i: int) -> str:
        mean = nd.at[i, "mean"]  # a tuple for a response of several columns
        shown = ", ".join(f"{v:.3f}" for v in mean) if isinstance(mean, tuple) else f"{mean:.3f}"
        return f": {shown} (n = {fmt_num(nd.at[i, 'n'], 7)}, err = {nd.at[i, 'err']:.1f})"

    def walk(i: int, depth: int) -> None:
        label = "root" if depth == 0 else split_condition(nd, splits, covs, i).replace("{", "").replace("}", "")
        txt = "|   " * depth + f"[{i}] {label}"
        if nd.at[i, "is_leaf"]:
            txt += leaf_txt(i)
        lines.append(txt)
        for c in nd.at[i, "children"]:
            walk(c, depth + 1)

    walk(1, 0)
    n_leaf = int(nd["is_leaf"].sum())
    lines += ["", f"Number of inner nodes:    {len(nd) - n_leaf}", f"Number of terminal nodes: {n_leaf}"]
    return "\n".join(lines)
