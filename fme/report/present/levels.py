"""The three levels of one effect as the report shows them: a table, one sentence per level, flags.

Reads a display copy of an effect variant (:func:`fme.report.present.display.prepare_variant`, numbers
already on the report's scale) whose ``levels`` record :mod:`fme.report.analysis.levels` wrote. Each level
answers its own question and the sentences keep them apart: the model level is what the fitted model
predicts ("the model predicts"), the learner level what retraining the algorithm on new data of the same
size would give, the data level how the outcome itself differs in the data ("in the data, the outcome").
"""

from __future__ import annotations

from typing import Any

from ..._utils.numfmt import count, fmt_est, fmt_int, fmt_level, fmt_num, fmt_percent
from ..inputs.quantities import Quantity, written
from .flags import FLAG, OK

__all__ = ["level_rows", "level_sentences", "level_flag_rows", "QUESTIONS"]

#: What each level answers (the table's second column).
QUESTIONS = {
    "model": "What does this fitted model predict when the step is taken?",
    "learner": "Would the algorithm, retrained on new data of the same size, show this effect?",
    "data": "Does the outcome itself change this way in the data (E[Y | X] moved by the step)?",
}


def _written(v: dict, key: str, fallback: str) -> str:
    """The variant's quantity ``key`` as results.json types it, written in its unit and form; ``fallback``
    (formatted from the display copy's record) for a results.json of an older fme."""
    q = (v.get("quantities") or {}).get(key)
    return fallback if q is None else written(Quantity.from_dict(q))


def _ci(est: Any, lo: Any, hi: Any) -> tuple[str, str]:
    e, a, b = fmt_est(est, lo, hi)
    return e, ("-" if lo is None or hi is None else f"[{a}, {b}]")


def _direction(lo: Any, hi: Any) -> str:
    if lo is None or hi is None:
        return "no interval"
    if lo > 0:
        return "positive"
    if hi < 0:
        return "negative"
    return "not distinguishable from zero"


def level_rows(v: dict, cells: dict[str, str], noun: str) -> list[dict[str, str]] | None:
    """Rows of the levels table (None when the effect asked for no other level): level, question, rows,
    AME, CI, std. error, inference."""
    lv = v.get("levels")
    if not lv:
        return None
    se = (v.get("model_ci") or {}).get("std_error") if v.get("ci_inference") != "sample" else v.get("se")
    rows = [
        {
            "level": "model",
            "question": QUESTIONS["model"],
            "rows": f"{cells['n']} evaluation {noun}",
            "ame": cells["ame"],
            "ci": f"[{cells['ci_low']}, {cells['ci_high']}]",
            "se": _written(v, "level_model_se", fmt_num(se, 4)),
            "inference": cells["ci_kind"],
            "extrapolation": _model_eps(v, cells),
        }
    ]
    for name in ("learner", "data"):
        rec = lv.get(name)
        if rec is None:
            continue
        if "error" in rec:
            rows.append(
                {
                    "level": name,
                    "question": QUESTIONS[name],
                    "rows": "-",
                    "ame": "not run",
                    "ci": "-",
                    "se": "-",
                    "inference": rec["error"],
                    "extrapolation": "-",
                }
            )
            continue
        typed = (v.get("quantities") or {}).get(f"ame_{name}_level")
        # the level's AME as results.json lists it (value and interval in the report's unit), else (an older
        # results.json) the record's own numbers
        ame, ci = (
            _ci(*Quantity.from_dict(typed).display()) if typed else _ci(rec["ame"], rec["conf_low"], rec["conf_high"])
        )
        if name == "learner":
            where = (
                f"test rows of {count(rec['n_splits'], 'split')} of {fmt_int(rec['n_rows'])} training {noun} "
                f"({fmt_int(rec['n_test'])} each)"
            )
            inference = rec["inference"]
        else:
            where = f"{fmt_int(rec['n'])} training {noun} ({fmt_int(rec['folds'])} folds)"
            inference = f"{rec['inference']}; positivity {rec['positivity']}"
            if rec["conf_low"] is None:
                ci = "withheld (positivity fails)"
        rows.append(
            {
                "level": name,
                "question": QUESTIONS[name],
                "rows": where,
                "ame": ame,
                "ci": ci,
                "se": _written(v, f"level_{name}_se", fmt_num(rec["std_error"], 4)),
                "inference": inference,
                "extrapolation": LEARNER_EPS if name == "learner" else _data_eps(v, rec),
            }
        )
    return rows


#: The learner level refits on splits of the training data and averages over each split's test rows; those rows
#: are not checked for extrapolation, and the levels table says so.
LEARNER_EPS = "not checked (each split's test rows are averaged as they are)"


def _model_eps(v: dict, cells: dict[str, str]) -> str:
    """The model row's extrapolation points: left out, kept, or not checked (never silent)."""
    if v.get("detector") is None:
        return "not checked"
    if v.get("policy") == "keep":
        return f"{cells.get('n_flagged', '-')} kept in the average ({v['detector']})"
    return f"{cells.get('n_extrapolation', '-')} left out ({v['detector']})"


def _data_eps(v: dict, rec: dict) -> str:
    """The data row's: the moved rows flagged are kept in the estimate and weigh in its positivity verdict."""
    if rec.get("share_extrapolated") is None:
        return "not checked"
    return (
        f"{_written(v, 'level_data_share_extrapolated', fmt_percent(rec['share_extrapolated']))} of the moved rows "
        "flagged"
        + (f" ({rec['detector']})" if rec.get("detector") else "")
        + "; kept, weighed in the positivity verdict"
    )


def level_sentences(v: dict, label: str, unit: str, noun: str) -> list[str]:
    """One sentence per level beyond the model's: what it estimates, its interval in words, and (data level)
    whether the data can support the step."""
    lv = v.get("levels") or {}
    level = fmt_level(float(v.get("conf_level", 0.95)))
    unit_text = f" {unit}" if unit else ""
    out = []
    ln = lv.get("learner")
    if ln is not None and "error" not in ln:
        ame, lo, hi = fmt_est(ln["ame"], ln["conf_low"], ln["conf_high"])
        full = _written(v, "ame_learner_level_full", fmt_est(ln["ame_full"], ln["conf_low"], ln["conf_high"])[0])
        text = (
            f"Learner level: retrained on {fmt_int(ln['n_train'])} {noun} ({fmt_int(ln['n_splits'])} seeded splits "
            f"of the training data), the algorithm's AME of {label} is {ame}{unit_text} ({level} CI {lo} to {hi}, "
            f"Nadeau-Bengio corrected): {_direction(ln['conf_low'], ln['conf_high'])}. Fitted on all "
            f"{fmt_int(ln['n_rows'])} training {noun}, it gives {full}{unit_text}."
        )
        if ln.get("n_failed"):
            text += f" {fmt_int(ln['n_failed'])} of {count(ln['repeats'], 'split')} failed and are left out."
        out.append(text)
    elif ln is not None:
        out.append(f"Learner level: not run ({ln['error']}).")
    dl = lv.get("data")
    if dl is not None and "error" not in dl:
        ame, lo, hi = fmt_est(dl["ame"], dl["conf_low"], dl["conf_high"])
        model = _written(v, "ame_data_level_model", fmt_est(dl.get("model_ame"), dl["conf_low"], dl["conf_high"])[0])
        if dl["conf_low"] is None:
            interval = "no interval: the moved rows leave the support of the data"
        else:
            interval = f"{level} CI {lo} to {hi}: {_direction(dl['conf_low'], dl['conf_high'])}"
        shares = (
            f"effective sample size {fmt_int(round(dl['ess']))} of {fmt_int(dl['n'])}, largest weight "
            f"{_written(v, 'level_data_max_weight', fmt_num(dl['max_weight'], 1))}"
            if dl.get("ess") is not None
            else ""
        )
        if dl.get("share_extrapolated") is not None:
            share = _written(v, "level_data_share_extrapolated", fmt_percent(dl["share_extrapolated"]))
            shares += f", {share} of moved rows flagged as extrapolation"
        text = (
            f"Data level: in the data, the outcome changes by {ame}{unit_text} on average under the same step "
            f"(one-step estimate on {fmt_int(dl['n'])} training {noun}; {interval}); positivity "
            f"{dl['positivity']} ({shares}). On the same rows the model predicts a change of {model}{unit_text}."
        )
        if dl.get("note"):
            text += f" {dl['note']}"
        out.append(text)
    elif dl is not None:
        out.append(f"Data level: not run ({dl['error']}).")
    return out


def level_flag_rows(v: dict, label: str) -> list[dict[str, str]]:
    """Flags of the other levels: a level that did not run, failed learner splits, weak or failing positivity."""
    lv = v.get("levels") or {}
    rows = []

    def add(rule: str, threshold: str, value: str, flagged: bool) -> None:
        rows.append(
            {"effect": label, "rule": rule, "threshold": threshold, "value": value, "status": FLAG if flagged else OK}
        )

    ln = lv.get("learner")
    if ln is not None:
        if "error" in ln:
            add("learner-level AME computed", "yes", "not run", True)
        else:
            add(
                "learner-level splits failed",
                "> 0",
                f"{fmt_int(ln['n_failed'])} of {fmt_int(ln['repeats'])}",
                ln["n_failed"] > 0,
            )
    dl = lv.get("data")
    if dl is not None:
        if "error" in dl:
            add("data-level AME computed", "yes", "not run", True)
        else:
            add("positivity of the data-level step", "weak or fails", dl["positivity"], dl["positivity"] != "ok")
    return rows
