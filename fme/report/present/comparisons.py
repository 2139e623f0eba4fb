"""The report's comparison tables: effect contracts, champion and challenger, interactions of two steps.

Every number is a :class:`~fme.report.inputs.quantities.Quantity` in the report's one unit (a classifier's
percentage points), so a difference table cannot drift to another scale than the AMEs it compares, and each
table names its unit and the rows it counts once, in its header or caption.
"""

from __future__ import annotations

from ..._utils.numfmt import count, fmt_int
from ..inputs.claims import Claim, p_cell, statistic_cell
from ..inputs.comparison_measures import interaction_quantities
from ..inputs.measures import challenger_ame, contract_quantities
from ..inputs.quantities import UNITLESS, Interval, Quantity, RowSet, Unit, interval_text, shown, written
from ..inputs.specs import CI_SHORT
from ..inputs.verdicts import contract_not_valid
from ..inputs.wording import count_words

__all__ = ["contract_cells", "challenger_cells", "interaction_cells"]


def contract_cells(groups: list[dict]) -> dict | None:
    """The effect contracts of the whole report as display rows, and a count of the verdicts. A contract whose
    test is not valid shows why in its statistic cell and no p-value."""
    rows = []
    for g in groups:
        for v in g["variants"]:
            evaluated = RowSet("evaluated rows", int(v.get("n") or 0))
            for i, r in enumerate(v.get("contracts") or []):
                q = contract_quantities(v["id"], r, i, evaluated)
                est = written(q["estimate"]) if r["estimate"] is not None else "-"
                interval = f"{interval_text(q['estimate'])} ({r['inference']})" if r["conf_low"] is not None else "-"
                why = contract_not_valid(r)
                valid = why is None
                rows.append(
                    {
                        "effect": v["id"],
                        "expected": r["expected"],
                        "estimate": est,
                        "interval": interval,
                        "statistic": written(q["statistic"])
                        if valid and "statistic" in q
                        else statistic_cell(r["statistic"], valid, why or ""),
                        "p": written(q["p_value"]) if valid and "p_value" in q else p_cell(r["p_value"], valid),
                        "p_adj": (
                            written(q["p_value_adj"])
                            if valid and "p_value_adj" in q
                            else p_cell(r["p_value_adj"], valid)
                        ),
                        "verdict": r["verdict"].upper() if r["verdict"] == "not met" else r["verdict"],
                    }
                )
    if not rows:
        return None
    counts = {k: sum(r["verdict"].lower() == k for r in rows) for k in ("met", "not met", "inconclusive")}
    return {
        "rows": rows,
        "sentence": (
            f"{count(len(rows), 'contract')}: {counts['met']} met, "
            f"{counts['not met']} not met, {counts['inconclusive']} inconclusive."
        ),
    }


def _cell(q: Quantity) -> str:
    """'2.4 [1.1, 3.7]': a value and its interval in the table's one unit."""
    return f"{shown(q)} {interval_text(q)}"


def challenger_cells(groups: list[dict], unit: Unit = UNITLESS) -> dict | None:
    """Champion and challenger side by side, effect by effect, and the sentences on their disagreements; every
    AME and difference in ``unit`` (the report's: a classifier's percentage points), named in ``unit``."""
    rows, notes, model = [], [], None
    for g in groups:
        for v in g["variants"]:
            c = v.get("challenger")
            if not c:
                continue
            model = c.get("model") or model
            iv = (v.get("intervals") or [{}])[0]
            level = float(v.get("conf_level") or 0.95)
            rows_v = RowSet("evaluated rows", int(v.get("n") or 0))
            champion = Quantity(
                f"{v['id']}/ame",
                "champion AME",
                iv.get("estimate"),
                unit,
                rows_v,
                Interval(iv.get("conf_low"), iv.get("conf_high"), level, str(iv.get("inference"))),
            )
            other = challenger_ame(v["id"], c, unit, level)  # as results.json types it
            common = RowSet("rows both models evaluated", int(c["n_common"]))
            diff = Quantity(
                f"{v['id']}/challenger/difference",
                "champion - challenger",
                c["difference"],
                unit,
                common,
                Interval(c["difference_low"], c["difference_high"], level, str(c["difference_inference"])),
            )
            split = lambda r: "-" if not r else r["feature"]  # noqa: E731 - the first split's feature
            rows.append(
                {
                    "effect": v["id"],
                    "champion": _cell(champion),
                    "challenger": _cell(other),
                    "difference": _cell(diff),
                    "basis": c["difference_inference"],
                    "n": fmt_int(common.n),
                    "splits": f"{split(v.get('partition', {}).get('root_split') if v.get('partition') else None)}"
                    f" / {split(c['root_split'])}",
                }
            )
            if c["sign_disagrees"]:
                notes.append(
                    f"{v['id']}: the two models disagree in sign (champion {c['champion_direction']}, "
                    f"challenger {c['direction']}, each by its interval)."
                )
            mine = {r["contract"]: r["verdict"] for r in v.get("contracts") or []}
            for r in c.get("contracts") or []:
                if r["contract"] in mine and mine[r["contract"]] != r["verdict"]:
                    notes.append(
                        f"{v['id']}: contract {r['expected']} is {mine[r['contract']]} for the champion "
                        f"and {r['verdict']} for the challenger."
                    )
    if not rows:
        return None
    identity = "the challenger model is not identified in this results.json (written by an older fme)"
    if model:
        identity = (
            f"challenger model: {model.get('kind') or 'model'} {model.get('source')}, sha256 "
            f"{model.get('sha256') or '-'}" + (f" ({model['sha256_of']})" if model.get("sha256_of") else "")
        )
    return {
        "rows": rows,
        "notes": notes or ["The two models agree in sign and in every contract verdict."],
        "unit": unit.header,
        "identity": identity,
    }


def interaction_cells(
    block: dict | None, unit: Unit = UNITLESS, noun: str = "rows", listed: dict[str, Claim] | None = None
) -> dict | None:
    """The interactions of the config as display rows and one sentence per pair: the average interaction in
    ``unit`` (the report's, named in the header), the rows it is over and how many of them the combined step
    takes outside the data (kept in the average, and said so)."""
    if not block or not block.get("rows"):
        return None
    rows, sentences_ = [], []
    for r in block["rows"]:
        kind = CI_SHORT.get(r["inference"], r["inference"])  # "sample" is the fixed-model interval: say so
        over = RowSet(noun, int(r["n"])) if r.get("n") is not None else None
        qs = interaction_quantities(r, unit, noun)  # as results.json types them
        q = qs["average"]
        est, ci = shown(q), interval_text(q)
        share = written(qs["share_above_tol"]) if "share_above_tol" in qs else "-"
        outside = "-"
        if r.get("n_outside") is not None and over is not None:
            outside = f"{fmt_int(r['n_outside'])} of {fmt_int(over.n)}"
        rows.append(
            {
                "a": r["steps_a"],
                "b": r["steps_b"],
                "estimate": est,
                "ci": ci,
                "p": written(qs["p_value"]),
                "share": share,
                "inference": kind,
                "n": "-" if over is None else fmt_int(over.n),
                "outside": outside,
            }
        )
        # an interval away from zero, and an average above the rounding-level tolerance (an additive model's
        # interactions are exactly 0 up to rounding, with a zero-width interval)
        clear = (
            r["conf_low"] is not None
            and (r["conf_low"] > 0 or r["conf_high"] < 0)
            and abs(r["estimate"]) > (r.get("tol") or 0.0)
        )
        by = shown(q, unit=True)
        text = f"{r['steps_a']} and {r['steps_b']}: " + (
            f"the effect of one step changes when the other is taken too, by {by} on average "
            f"(interval {ci}, {kind}); {share} of the rows interact beyond the tolerance."
            if clear
            else f"no clear interaction: {by} on average, interval {ci} ({kind})."
        )
        claim = (listed or {}).get(f"interaction/{r['steps_a']}/{r['steps_b']}/outside")
        if r.get("n_outside") and claim is not None:  # the count results.json lists
            text += f" {claim.text[0].upper()}{claim.text[1:]} (envelope; kept in the average)."
        elif r.get("n_outside"):  # a results.json of an older fme
            text += (
                f" Over {count_words(over.n, noun)}, of which {fmt_int(r['n_outside'])} "
                f"{'takes' if int(r['n_outside']) == 1 else 'take'} the combined step outside the range of the "
                "data (envelope; kept in the average)."
            )
        sentences_.append(text)
    return {
        "rows": rows,
        "sentences": sentences_,
        "auto": block.get("auto", False),
        "unit": unit.header,
        "note": block.get("note"),
    }
