"""Quantities of the report's comparisons: the interactions screen, the change log against a previous build and
the standard errors of an AME's intervals.

As in :mod:`fme.report.inputs.measures`, one builder per number kind: the analysis stage writes what a builder
returns into ``results.json`` (:func:`fme.report.analysis.typed.typed_payload`), the present stage calls the
same builder on the same record and prints :func:`~fme.report.inputs.quantities.written` of it, so the printed
text is the quantity's by construction.
"""

from __future__ import annotations

from typing import Any

from ..._utils.numfmt import decimals_for
from .quantities import UNITLESS, Interval, Quantity, RowSet, Unit

__all__ = [
    "interaction_quantities",
    "PERCENT",
    "change_decimals",
    "change_quantities",
]

#: A share of rows written as a percentage ('81.3%').
PERCENT = Unit("percent", "%", 100.0)


def interaction_quantities(r: dict, unit: Unit, noun: str, level: float = 0.95) -> dict[str, Quantity]:
    """One pair of the interactions screen: the average interaction with its interval (in the effects' unit,
    over the rows it averages), the p-value of 'no interaction on average' and the share of those rows whose
    interaction exceeds the tolerance (one decimal), keyed 'average', 'p_value' and 'share_above_tol'."""
    base = f"interaction/{r['steps_a']}/{r['steps_b']}"
    over = RowSet(noun, int(r.get("n") or 0))
    out = {
        "average": Quantity(
            base,
            "average interaction",
            r.get("estimate"),
            unit,
            over,
            Interval(r.get("conf_low"), r.get("conf_high"), float(level), str(r.get("inference"))),
            r.get("std_error"),
        ),
        "p_value": Quantity(
            f"{base}/p_value", "p-value of no average interaction", r.get("p_value"), UNITLESS, over, form="p"
        ),
    }
    share = r.get("share_above_tol")
    if share is not None:
        above = RowSet(f"{noun} interacting beyond the tolerance", int(round(float(share) * over.n)), of=over)
        out["share_above_tol"] = Quantity(
            f"{base}/share_above_tol",
            "share of the rows interacting beyond the tolerance",
            share,
            PERCENT,
            above,
            form="percent:1",
        )
    return out


def change_decimals(*rows: dict) -> int:
    """The decimals the change log writes both builds' AMEs in: about 2 significant figures of the narrower
    precision of their intervals' half-widths (on the displayed scale), so the two read alike; 3 without one."""
    halves = [(r["ci_high"] - r["ci_low"]) / 2 for r in rows if r["ci_low"] is not None and r["ci_high"] is not None]
    return max((decimals_for(h) for h in halves), default=3)


def _ame(vid: str, key: str, rec: dict, unit: Unit, label: str, d: int, rows: str) -> Quantity:
    """An AME of a change-log record (kept on the displayed scale) with its primary interval, on the model's
    scale in ``unit``, written with ``d`` decimals."""
    s = unit.scale
    back = lambda x: None if x is None else float(x) / s  # noqa: E731 - the record keeps the displayed scale
    return Quantity(
        f"changes/{vid}/{key}",
        label,
        back(rec.get("ame")),
        unit,
        RowSet(rows, int(rec.get("n") or 0)),
        Interval(
            back(rec.get("ci_low")),
            back(rec.get("ci_high")),
            float(rec.get("conf_level") or 0.95),
            str(rec.get("inference") or "sample"),
        ),
        form=f"fixed:{d}",
    )


def change_quantities(vid: str, new: dict, old: dict, unit: Unit) -> dict[str, Quantity]:
    """The numbers one row of the change log prints, from the two builds' records of an effect variant
    (:func:`fme.report.present.changelog.compact`, on the displayed scale): both AMEs with their primary
    intervals and their difference (now - previous), written with the shared decimals of
    :func:`change_decimals`; both shares of extrapolation points (one decimal) and their difference in
    percentage points; both first splits' thresholds (5 significant digits). Keyed 'previous_ame', 'ame',
    'ame_difference', 'previous_ep_share', 'ep_share', 'ep_share_difference', 'previous_split', 'split'."""
    d = change_decimals(new, old)
    step = new.get("step") or vid
    out = {
        "previous_ame": _ame(vid, "previous_ame", old, unit, f"AME of {step}, previous build", d, "evaluated rows"),
        "ame": _ame(vid, "ame", new, unit, f"AME of {step}", d, "evaluated rows"),
    }
    if new.get("ame") is not None and old.get("ame") is not None:
        out["ame_difference"] = Quantity(
            f"changes/{vid}/ame_difference",
            f"AME of {step}: now - previous build",
            (float(new["ame"]) - float(old["ame"])) / unit.scale,
            unit,
            RowSet("evaluated rows", int(new.get("n") or 0)),
            form=f"fixed:{d}",
        )
    shares = {}
    for key, rec, when in (("previous_ep_share", old, ", previous build"), ("ep_share", new, "")):
        if rec.get("ep_share") is None:
            continue
        n_ep, n = rec.get("n_extrapolation"), rec.get("n")
        total = RowSet("rows the step was taken on", int((n or 0) + (n_ep or 0)))
        shares[key] = out[key] = Quantity(
            f"changes/{vid}/{key}",
            f"share of extrapolation points{when}",
            rec["ep_share"],
            PERCENT,
            RowSet("extrapolation points", int(n_ep or 0), of=total),
            form="percent:1",
        )
    if len(shares) == 2:
        out["ep_share_difference"] = Quantity(
            f"changes/{vid}/ep_share_difference",
            "share of extrapolation points: now - previous build",
            float(new["ep_share"]) - float(old["ep_share"]),
            Unit("percentage points", "pp", 100.0, "the share of extrapolation points"),
            shares["ep_share"].rows,
            form="signed:1",
        )
    for key, rec, when in (("previous_split", old, ", previous build"), ("split", new, "")):
        at: Any = rec.get("first_split_at")
        if at is not None:
            out[key] = Quantity(
                f"changes/{vid}/{key}",
                f"threshold of the first split{when}",
                at,
                UNITLESS,
                RowSet("evaluated rows", int(rec.get("n") or 0)),
                form="g:5",
            )
    return out
