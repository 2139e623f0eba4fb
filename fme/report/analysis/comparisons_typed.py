"""The comparisons' part of ``results.json``'s typed form: the interactions screen and the change log.

:func:`type_comparisons` runs inside :func:`fme.report.analysis.typed.typed_payload`, with the quantity
builders of :mod:`fme.report.inputs.comparison_measures` that the present stage calls on the same records.
"""

from __future__ import annotations

from typing import Any

from ..inputs.comparison_measures import change_log_quantities, compact, interaction_quantities
from ..inputs.quantities import Unit

__all__ = ["type_comparisons"]


def type_comparisons(out: dict[str, Any], unit: Unit, noun: str) -> None:
    """Type ``out`` (a copy of the payload of ``results.json``) in place: each pair of the interactions screen
    gets its average as ``quantity`` (in ``unit``, the effects') and its p-value and share of rows beyond the
    tolerance under ``quantities``; with a previous build (``previous.effects``, its compared numbers as
    :func:`fme.report.analysis.run.previous_record` read them), ``changes.effects`` gets the change log's
    quantities per effect variant both builds have, and the raw numbers leave ``previous``."""
    level = float((out.get("config") or {}).get("conf_level") or 0.95)
    for r in (out.get("interactions") or {}).get("rows") or []:
        qs = interaction_quantities(r, unit, noun, level)
        r["quantity"] = qs.pop("average").to_dict()
        r["quantities"] = {k: q.to_dict() for k, q in qs.items()}
    previous = out.get("previous") or {}
    if "effects" in previous:  # compared as the report shows them
        before = previous.pop("effects")
        typed = change_log_quantities(compact(out)["effects"], before, unit)
        out["changes"] = {"effects": {vid: {k: q.to_dict() for k, q in qs.items()} for vid, qs in typed.items()}}
