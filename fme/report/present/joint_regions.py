"""The joint-regions section as display strings: the tree figure, the per-effect leaf table, the heterogeneity
table and the section's claims, built only from the quantities and claims of ``results.json``
(:mod:`fme.report.analysis.joint_typed`), so every number reads in its unit and every statement as verified.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..._utils.numfmt import fmt_int, fmt_sig
from ..inputs.claims import p_cell, statistic_cell
from ..inputs.quantities import Quantity, interval_text, shown
from ..inputs.wording import count_words

__all__ = ["joint_context"]


def _q(section: dict, key: str) -> Quantity | None:
    d = (section.get("quantities") or {}).get(key)
    return None if d is None else Quantity.from_dict(d)


def _variance(q: Quantity | None) -> str:
    """A variance in its unit (3 significant figures: it has no interval to round by)."""
    if q is None:
        return "-"
    return fmt_sig(q.display()[0], 3)


def _joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _leaf_rows(section: dict) -> tuple[list[dict[str, str]], str]:
    """One row per (region, effect), region-major; the region's rule and n on its first row; and the unit
    header of the cAME column."""
    rows, header, seen = [], "", set()
    for leaf in section.get("leaves") or []:
        q = _q(section, f"{leaf['effect']}/came_leaf_{leaf['node']}")
        if q is None:
            continue
        header = q.unit.header
        first = leaf["node"] not in seen
        seen.add(leaf["node"])
        rows.append(
            {
                "node": str(leaf["node"]) if first else "",
                "rule": str(leaf.get("rule") or "") if first else "",
                "n": fmt_int(q.rows.n) if first else "",
                "effect": f"{leaf['effect']} ({leaf['label']})",
                "came": shown(q) if q.value is not None else "-",
                "ci": interval_text(q),
                "kind": q.interval.kind if q.interval is not None and q.interval.computed else "-",
            }
        )
    return rows, header


def _heterogeneity_rows(section: dict, verdicts: dict[str, dict]) -> tuple[list[dict[str, str]], str]:
    """One row per effect: rows, regions, variance and within-region variance in the unit squared, the explained
    share with its interval and the F test, whose cells hold numbers only when its claim found it valid
    (``verdicts``: the claims of results.json by the share's quantity id); and the variance header."""
    rows, header = [], ""
    for row in section.get("heterogeneity") or []:
        eid = row["effect"]
        share = _q(section, f"{eid}/share_explained")
        total, within = _q(section, f"{eid}/variance"), _q(section, f"{eid}/within_variance")
        header = total.unit.header if total is not None else header
        claim = verdicts.get(f"joint/{eid}/share_explained") or {}
        why = (
            None
            if claim.get("kind") == "explained_share" and claim.get("holds")
            else (claim.get("reason") or "not verified")
        )
        rows.append(
            {
                "effect": f"{eid} ({row['label']})",
                "n": fmt_int(row.get("n")),
                "regions": fmt_int(row.get("n_leaves")),
                "variance": _variance(total),
                "within": _variance(within),
                # a share is stated only as its claim states it: with its interval and a valid F test
                "share": "-" if share is None or share.value is None or why is not None else shown(share),
                "ci": "-" if share is None or why is not None else interval_text(share),
                "statistic": statistic_cell(row.get("statistic"), why is None, why or ""),
                "p": p_cell(row.get("p_value"), why is None),
            }
        )
    return rows, header


def _figure(section: dict, counter: list[int], labels: list[str]) -> dict | None:
    fig = section.get("figure")
    if not fig:
        return None
    counter[0] += 1
    k = int(section.get("n_leaves") or 0)
    ranges = []
    for eid, label in zip(section["effects"], labels):
        qs = [
            _q(section, f"{eid}/came_leaf_{leaf['node']}")
            for leaf in section.get("leaves") or []
            if leaf["effect"] == eid
        ]
        values = [q for q in qs if q is not None and q.value is not None]
        if values:
            lo, hi = min(values, key=lambda q: q.value), max(values, key=lambda q: q.value)  # type: ignore[arg-type, return-value]
            ranges.append(f"{label} from {shown(lo)} to {shown(hi, unit=True)}")
    alt = (
        f"Tree diagram of the {count_words(k, 'joint regions')} of {_joined(labels)}; each leaf box gives its "
        f"rows and, per effect, the cAME with its interval. The leaf cAMEs range: {'; '.join(ranges)}."
    )
    cap = (
        f"Joint regions of {_joined(labels)} ({section['method']}): one tree for all the effects; each leaf "
        "shows n and, per effect, the cAME with its CI in the report's unit (the effect's model-uncertainty "
        "interval where it has one); the next table gives the same numbers."
    )
    if section.get("honest"):
        cap += (
            f" Every count and figure is over the {count_words(section['n_estimated'], 'rows')} that estimate the "
            f"leaves (honest; the tree grew on the other {fmt_int(section['n_grown'])})."
        )
    return {
        "svg": fig["svg"],
        "png": fig["png"],
        "alt": alt,
        "caption": f"Figure {counter[0]}: {cap}",
        "id": "fig-joint-regions-tree",
        "pdf_page": fig.get("pdf_page"),
        "pdf_width": fig.get("pdf_width_in"),
    }


def _settings(section: dict) -> str:
    params = {k: v for k, v in sorted((section.get("params") or {}).items())}
    # in the config's own words: 'honest: false, max_depth: 2'
    text = ", ".join(f"{k}: {json.dumps(v)}" for k, v in params.items() if k != "standardize") or "defaults"
    if params.get("standardize", True):
        text += "; each effect's fMEs scaled to SD 1 before growing, so that no effect decides the splits by its unit"
    return text


def _honesty(section: dict) -> str:
    """Which rows grew the joint tree and which estimated its leaves, in the report's words."""
    if section.get("honest"):
        return (
            f"Honest regions: the tree was grown on {fmt_int(section['n_grown'])} of the rows and every region's "
            f"cAMEs, intervals, variances and tests use only the other {fmt_int(section['n_estimated'])} (chosen by "
            "a seeded hash of the row labels), so the intervals hold for the regions the tree chose. The leaves' n "
            "counts those estimation rows."
        )
    return (
        "Not honest (joint_regions: honest: false): the tree was grown and its leaves estimated on the same rows, "
        "so the leaf intervals are not adjusted for the tree's choice of splits and are too narrow, and the "
        "explained shares are biased upwards."
    )


def joint_context(results: dict, next_table: Callable[[], int], fig_counter: list[int]) -> dict[str, Any] | None:
    """The section's display strings (None without ``joint_regions`` in ``results.json``); ``next_table`` and
    ``fig_counter`` number its tables and its figure in reading order, after the effects' own."""
    section = results.get("joint_regions")
    if not section:
        return None
    ids = list(section["effects"])
    labels = [f"{i} ({section['labels'].get(i, i)})" for i in ids]
    claims = [
        c
        for c in results.get("claims") or []
        if any(str(x).startswith("joint/") or x == "joint_regions" for x in c.get("cites", []))
    ]
    rows = section.get("rows") or {}
    over = f"over the {count_words(rows.get('n', 0), 'rows')} that every one of them evaluated"
    if rows.get("recomputed"):
        each = "; ".join(f"{i}: {fmt_int(n)}" for i, n in (rows.get("by_effect") or {}).items())
        over += (
            f" (the effects left out different rows, so each was computed again, with the same steps, model and "
            f"inference, on the rows all of them evaluated; each effect's own evaluated rows: {each})"
        )
    intro = (
        f"One tree grown on the fMEs of {_joined(labels)} together ({section['method']}; {_settings(section)}), "
        f"so that in each region all of them are homogeneous at once, {over}. The share of an effect's "
        "heterogeneity that the regions explain is the between-region part of the variance of its fMEs over "
        "the rows that estimate the leaves (Herbinger et al. 2024), with its unified (Feldman-Cousins) interval "
        "from the noncentral F distribution of the one-way ANOVA (it holds its level also where the true share "
        "is 0) and the F test that the regions explain none."
    )
    out: dict[str, Any] = {
        "title": section.get("title") or "Joint regions",
        "intro": intro,
        "not_computed": None,
        "claims": [c["text"] for c in claims],
    }
    if section.get("not_computed"):
        out["not_computed"] = f"Joint regions of {_joined(labels)}: not computed: {section['not_computed']}"
        return out
    verdicts = {str(c["cites"][0]): c for c in claims if c.get("cites")}
    out["figure"] = _figure(section, fig_counter, labels)
    out["leaf_rows"], out["unit"] = _leaf_rows(section)
    out["table_leaves"] = next_table()
    out["het_rows"], out["variance_unit"] = _heterogeneity_rows(section, verdicts)
    out["table_heterogeneity"] = next_table()
    out["honesty"] = _honesty(section)
    out["notes"] = list(section.get("notes") or [])
    out["level"] = f"{100 * float(section.get('conf_level') or 0.95):g}%"
    return out
