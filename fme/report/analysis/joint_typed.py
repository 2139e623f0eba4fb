"""The joint-regions section of ``results.json`` in its typed form: quantities and verified claims.

:func:`type_joint_regions` runs where ``results.json`` is written (:func:`fme.report.analysis.typed.typed_payload`)
and adds to the section ``quantities`` (id -> quantity):

* ``joint/<effect>/came_leaf_<node>``: each effect's cAME per region with the interval the report shows (the
  effect's model-uncertainty interval where it has one, else the fixed-model t interval), over the rows that
  estimate the leaf;
* ``joint/<effect>/share_explained``: the share of the effect's fME variance the regions explain (in %), with
  its unified (Feldman-Cousins) interval from the noncentral F distribution (the kind the heterogeneity table
  names);
* ``joint/<effect>/variance`` and ``joint/<effect>/within_variance``: the fMEs' variance over the estimation
  rows and its part within the regions, in the effect's unit squared;

and returns one claim per effect (:func:`fme.report.inputs.claims.explained_share`: stated only with its interval
and only when its F test is valid; a single region is "not computed"), which ``results.json`` lists with the
report's other claims.
"""

from __future__ import annotations

from typing import Any

from ..inputs.claims import Claim, TestRecord, explained_share, not_computed
from ..inputs.quantities import Interval, Quantity, RowSet, Unit
from ..inputs.specs import CI_COVERS

__all__ = ["type_joint_regions", "share_unit", "variance_unit", "SHARE_KIND", "NOT_HONEST"]

#: What the explained share's interval is, where the heterogeneity table does not say: the unified
#: (Feldman-Cousins) interval of the one-way ANOVA's noncentral F noncentrality (Steiger 2004 for the share).
SHARE_KIND = "unified (Feldman-Cousins)"
#: Why the F test of a partition that is not honest is not valid: its regions were chosen on the same rows.
NOT_HONEST = (
    "the regions were chosen on the rows that estimate them (honest: false), and the F test and the share's "
    "interval assume fixed regions"
)


def share_unit() -> Unit:
    """The unit of an explained share: per cent of the fMEs' variance."""
    return Unit("%", "%", 100.0, "the variance of the fMEs")


def variance_unit(unit: Unit) -> Unit:
    """The unit of a variance of values read in ``unit`` (its square; '' for a unit without a name)."""
    short = unit.short or unit.name
    return Unit(f"squared {unit.name}" if unit.name else "", f"{short}²" if short else "", unit.scale**2, unit.of)


def _leaf_interval(leaf: dict, level: float) -> Interval:
    """The interval a leaf's cAME is shown with: its model-uncertainty interval when computed, else the
    fixed-model t interval."""
    if leaf.get("conf_low") is not None and leaf.get("inference") != "sample":
        return Interval(
            leaf.get("conf_low"),
            leaf.get("conf_high"),
            level,
            str(leaf.get("inference")),
            str(leaf.get("covers") or ""),
        )
    if leaf.get("conf_low") is not None:  # inference 'sample': the fixed-model interval, named so
        return Interval(leaf.get("conf_low"), leaf.get("conf_high"), level, "fixed model", CI_COVERS["sample"])
    return Interval(leaf.get("came_ci_low"), leaf.get("came_ci_high"), level, "fixed model", CI_COVERS["sample"])


def type_joint_regions(section: dict[str, Any], unit: Unit) -> list[dict]:
    """Add ``quantities`` to the joint-regions ``section`` (in place) and return its claims (dicts)."""
    if section.get("not_computed"):
        return [
            not_computed(
                f"joint regions of {', '.join(section['effects'])}", section["not_computed"], ("joint_regions",)
            ).to_dict()
        ]
    level = float(section.get("conf_level") or 0.95)
    quantities: dict[str, Quantity] = {}
    for leaf in section.get("leaves") or []:
        key = f"{leaf['effect']}/came_leaf_{leaf['node']}"
        quantities[key] = Quantity(
            f"joint/{key}",
            f"cAME of {leaf['label']} in region {leaf['node']} ({leaf.get('rule')})",
            leaf.get("came"),
            unit,
            RowSet("rows that estimate the leaf", int(leaf.get("n") or 0)),
            _leaf_interval(leaf, level),
            leaf.get("std_error") if leaf.get("conf_low") is not None else None,
        )
    claims: list[dict] = []
    alpha = 1.0 - level
    leaf_n = {int(leaf["node"]): int(leaf.get("n") or 0) for leaf in section.get("leaves") or []}
    for row in section.get("heterogeneity") or []:
        eid = row["effect"]
        rows = RowSet("estimation rows", int(row.get("n") or 0))
        share = Quantity(
            f"joint/{eid}/share_explained",
            f"share of the heterogeneity of {row['label']} explained by the regions",
            row.get("share_explained"),
            share_unit(),
            rows,
            Interval(row.get("share_ci_low"), row.get("share_ci_high"), level, row.get("interval") or SHARE_KIND),
        )
        quantities[f"{eid}/share_explained"] = share
        for key, what in (("variance", "variance of the fMEs"), ("within_variance", "within-region variance")):
            quantities[f"{eid}/{key}"] = Quantity(
                f"joint/{eid}/{key}", f"{what} of {row['label']}", row.get(key), variance_unit(unit), rows
            )
        if int(row.get("n_leaves") or 0) < 2:
            claims.append(
                not_computed(
                    f"share of the heterogeneity of {row['label']} explained by the regions",
                    "the joint tree has a single region (no split)",
                    (share.id,),
                ).to_dict()
            )
            continue
        test = TestRecord(
            id=f"joint/{eid}/f_test",
            statistic=row.get("statistic"),
            p_value=row.get("p_value"),
            df=row.get("df1"),
            n_per_group=tuple(n for n in leaf_n.values() if n > 0),
            note="" if section.get("honest", True) else NOT_HONEST,
        )
        claim: Claim = explained_share(share, test, row.get("df2"), alpha, str(row["label"]))
        claims.append(claim.to_dict())
    section["quantities"] = {k: q.to_dict() for k, q in quantities.items()}
    return claims
