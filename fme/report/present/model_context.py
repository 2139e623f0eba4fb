"""Display strings for the report's model-wide parts and new per-effect details.

* :func:`whole_model` : the ranked AME of every model feature and the feature dictionary;
* :func:`fit_text` : the model's fit on test data (regression or classification metrics);
* :func:`causes_phrase` : where the extrapolation points are, by the features that caused them;
* :func:`effective_step_rows` : the distribution of effective steps under ``shrink``;
* :func:`detector_text` : the method section's description of every detector used.
"""

from __future__ import annotations

from typing import Any

from ..._utils.numfmt import count, fmt_est, fmt_g, fmt_int, fmt_level, fmt_num, fmt_share
from ..inputs.claims import enters_predictions
from ..inputs.config import ReportConfig
from ..inputs.measures import RANGE_FORMS, feature_quantities, range_quantities
from ..inputs.quantities import Quantity, RowSet, written
from ..inputs.specs import ci_short, describe_detector
from ..inputs.wording import count_words

__all__ = ["whole_model", "fit_text", "causes_phrase", "effective_step_rows", "detector_text"]

#: What each detector checks (method section).
DETECTOR_TEXT = {
    "envelope": "a point outside the per-feature [min, max] of the reference data, or with an unseen level "
    "(it cannot see empty regions inside the box)",
    "hull": "a point outside the convex hull of the (standardised) reference data",
    "mcec": "Monte-Carlo extrapolation classification: a classifier tells the reference rows from uniform "
    "background points; a point is flagged when its estimated extrapolation risk exceeds the threshold",
    "cert": "a classification tree separating the reference rows from uniform background points; a point is "
    "flagged when its leaf's extrapolation risk exceeds the threshold",
    "isolation_forest": "an isolation forest fitted on the reference data; the given contamination share of "
    "the reference is treated as outlying",
    "lof": "the local outlier factor against the reference data (n_neighbors, contamination)",
}


def _step_text(r: dict, units: dict) -> str:
    if r["level"] is not None:
        return f"to level {r['level']}"
    if r["step"] is None:
        return "-"
    if r.get("step_quantity"):  # as results.json types it: its value in the feature's unit, written alike
        q = Quantity.from_dict(r["step_quantity"])
        text = ("+" if (q.value or 0) > 0 else "") + written(q)
        return f"{text} {q.unit.name}" if q.unit.name else text
    u = f" {units[r['feature']]}" if units.get(r["feature"]) else ""  # a results.json of an older fme
    return f"{fmt_g(r['step'], 4, sign=True, thousands=True)}{u}"


def whole_model(results: dict, cfg: ReportConfig, scale: float, first_table: int) -> dict[str, Any] | None:
    """Ranked overview rows and feature-dictionary rows, with their table numbers."""
    ov = results.get("overview")
    dic = results.get("dictionary") or []
    units = cfg.units
    level = fmt_level(cfg.conf_level)
    out: dict[str, Any] = {"overview": None, "dictionary": [], "table_dictionary": first_table}
    if ov:
        rows = []
        for rank, r in enumerate(ov["rows"], start=1):
            if r["error"]:
                rows.append(
                    {
                        "rank": "-",
                        "feature": r["feature"],
                        "step": "-",
                        "n": "0",
                        "n_excluded": "-",
                        "ame": "-",
                        "ci": "-",
                        "covers": f"not computed: {r['error']}",
                    }
                )
                continue
            if r.get("quantity"):  # the typed AME results.json lists: value, interval and rows in its unit
                q = Quantity.from_dict(r["quantity"])
                ame, clo, chi = fmt_est(*q.display())
                n = q.rows.n
            else:  # a results.json of an older fme
                lo = None if r["conf_low"] is None else r["conf_low"] * scale
                hi = None if r["conf_high"] is None else r["conf_high"] * scale
                ame, clo, chi = fmt_est(r["ame"] * scale, lo, hi)
                n = r["n"]
            rows.append(
                {
                    "rank": fmt_int(rank),
                    "feature": r["feature"],
                    "step": _step_text(r, units),
                    "n": fmt_int(n),
                    "n_excluded": fmt_int(r["n_excluded"]),
                    "ame": ame,
                    "ci": f"[{clo}, {chi}]",
                    "covers": ci_short(r["inference"]),
                }
            )
        what = "one standard deviation (of the reference data)" if ov["step"] == "sd" else "one unit"
        out["overview"] = {
            "rows": rows,
            "step": what,
            "detector": describe_detector(ov["detector"]),
            "level": level,
            "table": first_table,
            # the claims results.json lists (an older results.json: built here alike)
            "inputs": [c["text"] for c in results.get("claims") or [] if c.get("kind") == "enters_predictions"]
            or [enters_predictions(a["column"], a["role"], True).text for a in ov.get("prediction_columns") or []],
        }
        out["table_dictionary"] = first_table + 1
    n_rows = int((results.get("data") or {}).get("n_rows") or 0)
    for r in dic:
        if r["type"] == "categorical":
            rng = ", ".join(r["levels"][:12]) + (
                f", ... ({count(len(r['levels']), 'level')})" if len(r["levels"]) > 12 else ""
            )
            sd = "-"
        else:
            q = feature_quantities(r, n_rows)  # minimum, maximum and SD as results.json types them
            rng = f"{written(q['min'])} to {written(q['max'])}" if "min" in q and "max" in q else "-"
            sd = written(q["sd"]) if "sd" in q else "-"
        kind = r["type"] + (f" ({r['encoding']})" if r.get("encoding") else "")
        out["dictionary"].append(
            {
                "feature": r["feature"],
                "type": kind,
                "unit": r["unit"] or "not stated",
                "description": r["description"] or "not stated",
                "range": rng,
                "sd": sd,
                "missing": fmt_int(r["n_missing"]),
            }
        )
    # the caption names the rows the ranges and SDs are over, and each stated unit
    stated = [f"{r['feature']} in {r['unit']}" for r in dic if r["type"] != "categorical" and r.get("unit")]
    out["dictionary_scope"] = (
        f"over the {count_words(n_rows, 'rows')} of the evaluation data; ranges and SDs in each feature's own unit"
        + (f" ({'; '.join(stated)})" if stated else " (none stated in the config)")
    )
    return out


def fit_text(fit: dict | None) -> str | None:
    """One clause with the model's fit on the test data (None without test data)."""
    if fit is None:
        return None
    if fit.get("kind") == "classification":
        auc = fmt_num(fit["auc"], 3) if fit["auc"] is not None else "not defined (one class only)"
        return (
            f"n = {fmt_int(fit['n'])} ({fmt_int(fit['n_target'])} of class {fit['target_class']}); on the "
            f"probability scale: AUC of class {fit['target_class']} against the rest {auc}, Brier score "
            f"{fmt_num(fit['brier'], 4)}, log loss {fmt_num(fit['log_loss'], 4)} "
            f"({count(fit['n_classes'], 'class', 'classes')})"
        )
    return f"n = {fmt_int(fit['n'])}, RMSE {fmt_num(fit['rmse'], 3)}, R² {fmt_num(fit['r2'], 3)}"


def _observed(c: dict, prefix: bool = True) -> str:
    """Observed data values of the extrapolation points of one cause, as the data hold them (the range's
    quantities, 6 significant digits, no padded decimals): one value when the range is a single value ('1,680',
    not 'from 1,680.000 to 1,680.000')."""
    rows = RowSet("extrapolation points", int(c.get("n") or 0))
    q = range_quantities("", c["feature"], c["min"], c["max"], rows, "range", RANGE_FORMS[0])
    a, b = written(q["range_min"]), written(q["range_max"])
    if a == b:
        return a
    return f"from {a} to {b}" if prefix else f"{a} to {b}"


def causes_phrase(causes: list[dict], n_ep: int) -> str | None:
    """'x + h leaves the reference range in crim for 400 of them (observed crim 0.006 to 4.9); ...'."""
    if not causes or not n_ep:
        return None
    parts = []
    for c in causes:
        if c["kind"] == "outside range":
            rng = f": observed {c['feature']} {_observed(c)}" if "min" in c else ""
            parts.append(f"outside the reference data in {c['feature']} for {fmt_int(c['n'])}{rng}")
    joint = [c for c in causes if c["kind"] == "joint"]
    if joint:
        n = joint[0]["n"]
        named = [c for c in joint if c["feature"] is not None]
        text = f"{fmt_int(n)} inside every feature's range, flagged for the combination of features"
        if named:
            text += (
                " (they differ most from the evaluated rows in "
                + ", ".join(f"{c['feature']}: {_observed(c, prefix=False)}" for c in named)
                + ")"
            )
        parts.append(text)
    return "; ".join(parts)


def effective_step_rows(v: dict) -> list[dict[str, str]] | None:
    """Display rows of the effective steps (share of h) under ``shrink``; None otherwise."""
    rows = v.get("effective_steps")
    if not rows:
        return None
    out = []
    for r in rows:
        out.append(
            {
                "feature": r["feature"],
                "h": fmt_g(r["h"], 6, sign=True, thousands=True),
                **{k: fmt_num(r[k], 3) for k in ("min", "q25", "median", "q75", "max")},
                "n_shrunk": f"{fmt_int(r['n_shrunk'])} of {fmt_int(r['n'])} ({fmt_share(r['n_shrunk'], r['n'])})",
                "min_fraction": fmt_g(r["min_fraction"]),
            }
        )
    return out


def detector_text(specs: list[dict]) -> str:
    """Every detector used in the report, with all its parameters and what it flags."""
    seen: dict[str, str] = {}
    for s in specs:
        if s and s["method"] != "none":
            seen.setdefault(describe_detector(s), DETECTOR_TEXT[s["method"]])
    if not seen:
        return 'no effect was checked for extrapolation ("not checked" is shown as such, never as zero).'
    return "; ".join(f"{name}: {what}" for name, what in seen.items()) + "."
