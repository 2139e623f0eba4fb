"""Quantities of the report's comparisons: the interactions screen, the change log against a previous build and
the standard errors of an AME's intervals.

As in :mod:`fme.report.inputs.measures`, one builder per number kind: the analysis stage writes what a builder
returns into ``results.json`` (:func:`fme.report.analysis.typed.typed_payload`), the present stage calls the
same builder on the same record and prints :func:`~fme.report.inputs.quantities.written` of it, so the printed
text is the quantity's by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._utils.numfmt import decimals_for, fmt_g
from .quantities import UNITLESS, Interval, Quantity, RowSet, Unit, fixed_bounds

__all__ = [
    "interaction_quantities",
    "PERCENT",
    "change_decimals",
    "change_quantities",
    "compact",
    "change_log_quantities",
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


# ------------------------------------------------------------------ the records the change log compares
def _ep_share(v: dict) -> float | None:
    """Share of the evaluated rows left out as extrapolation points (None: not checked or not excluded)."""
    if v.get("detector") is None or v.get("policy") != "exclude" or v.get("n_extrapolation") is None:
        return None
    total = v["n"] + v["n_extrapolation"]
    return v["n_extrapolation"] / total if total else None


def _split_text(split: dict | None) -> str:
    if split is None:
        return "no split"
    if split.get("levels"):
        left = sorted(k for k, side in split["levels"].items() if side == 1)
        return f"{split['feature']} in {{{', '.join(left)}}}"
    return f"{split['feature']} <= {fmt_g(split['value'], 5)}"


def _primary(v: dict) -> tuple[str, Any, Any]:
    """(inference, conf_low, conf_high) of the report's primary interval: the model-uncertainty interval
    when it was computed, else the fixed-model one (also for results.json files written by an older fme).
    A delta interval computed with a scaled covariance is labelled ``delta (<covariance>)``."""
    mc = v.get("model_ci")
    if mc and mc.get("conf_low") is not None:
        method = v.get("inference", "sample")
        covariance = mc.get("covariance") if method == "delta" else None
        return (method if covariance is None else f"delta ({covariance})"), mc["conf_low"], mc["conf_high"]
    return ("sample", *fixed_bounds(v))


def compact(results: dict, title: Callable[[dict], str] = lambda g: str(g["id"])) -> dict[str, Any]:
    """The numbers of a results.json the change log compares, per effect variant id (``title``: an effect
    group's name in the report).

    ``ame``, ``inference``/``ci_low``/``ci_high`` (the report's primary interval) and ``fixed_ci_low``/
    ``fixed_ci_high`` (the fixed-model interval over the rows, present in every build) are on the scale the
    report shows its AMEs (a class probability's percentage points), as the change log's table says;
    ``first_split`` is the first split's rule and ``first_split_feature``/``first_split_at`` its numeric
    threshold (None for a split on levels).
    """
    out = {}
    scale = 100.0 if results.get("target_class") is not None else 1.0
    times = lambda x: None if x is None else x * scale  # noqa: E731
    for g in results["effects"]:
        for v in g["variants"]:
            p = v.get("partition")
            split = (p or {}).get("root_split")
            numeric = split is not None and not split.get("levels")
            method, lo, hi = _primary(v)
            fixed_lo, fixed_hi = fixed_bounds(v)
            lo, hi, fixed_lo, fixed_hi = times(lo), times(hi), times(fixed_lo), times(fixed_hi)
            out[v["id"]] = {
                "label": title(g) + (f": to level {v['level']}" if v.get("level") is not None else ""),
                "step": v["step_label"],
                "ame": times(v["ame"]),
                "inference": method,
                "conf_level": v.get("conf_level"),
                "ci_low": lo,
                "ci_high": hi,
                "fixed_ci_low": fixed_lo,
                "fixed_ci_high": fixed_hi,
                "n": v.get("n"),
                "n_extrapolation": v.get("n_extrapolation"),
                "ep_share": _ep_share(v),
                "first_split": None if not p else _split_text(split),
                "first_split_feature": split["feature"] if numeric else None,
                "first_split_at": split["value"] if numeric else None,
            }
    model = results.get("model") or {}
    version = ((results.get("config") or {}).get("model") or {}).get("version")
    return {
        "config_name": results.get("config_name"),
        "config_sha256": results.get("config_sha256"),
        "effects": out,
        "identity": {
            "model version": None if version in (None, "") else str(version),
            "model sha256": model.get("sha256"),
            "data sha256": (results.get("data") or {}).get("sha256"),
        },
    }


def change_log_quantities(now: dict, before: dict, unit: Unit) -> dict[str, dict[str, Quantity]]:
    """:func:`change_quantities` of every effect variant both builds' :func:`compact` records have, by id."""
    return {vid: change_quantities(vid, new, before[vid], unit) for vid, new in now.items() if vid in before}
