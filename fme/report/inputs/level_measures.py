"""Quantities of the numbers the three levels of an effect print beside their AMEs (paper §7's model level, the
learner and data levels): each level's standard error, the learner's AME refitted on all training rows, the
model's AME on the data level's rows, and the data level's largest weight and share of moved rows flagged.

The level AMEs themselves are typed where results.json is written (:mod:`fme.report.analysis.typed`); the
numbers here are printed beside them in the levels table and sentences (:mod:`fme.report.present.levels`), which
write each from its quantity (:func:`~fme.report.inputs.quantities.written`).
"""

from __future__ import annotations

import math
from typing import Any

from ..._utils.numfmt import MAX_DECIMALS, decimals_for
from .quantities import UNITLESS, Quantity, RowSet, Unit

__all__ = ["estimate_decimals", "level_quantities", "SE_FORM"]

#: The levels table writes every standard error to 4 decimals.
SE_FORM = "fixed:4"


def estimate_decimals(est: Any, low: Any, high: Any) -> int:
    """The decimals :func:`fme._utils.numfmt.fmt_est` writes ``est`` with beside the interval [low, high]: about
    2 significant figures of the half-width, 6 significant digits of ``est`` for an interval of zero width."""
    half = None if low is None or high is None else (float(high) - float(low)) / 2
    if half == 0.0 and est is not None and math.isfinite(float(est)) and float(est) != 0.0:
        return int(min(MAX_DECIMALS, max(3, 5 - math.floor(math.log10(abs(float(est)))))))
    return decimals_for(half)


def _beside(q: Quantity, value: Any, key: str, label: str, rows: RowSet) -> Quantity:
    """A value printed beside the AME ``q`` with the decimals of ``q``'s interval, in its unit."""
    _, low, high = q.display()
    shown = None if value is None else float(value) * q.unit.scale
    return Quantity(key, label, value, q.unit, rows, form=f"fixed:{estimate_decimals(shown, low, high)}")


def level_quantities(v: dict, ame: Quantity, levels: dict[str, Quantity]) -> dict[str, Quantity]:
    """The levels table's and sentences' numbers of one variant beside its AMEs: ``ame`` the model level's (its
    primary interval and SE), ``levels`` the learner- and data-level AMEs as typed ('learner', 'data'). Keyed
    'level_<name>_se', 'ame_learner_level_full', 'ame_data_level_model', 'level_data_max_weight',
    'level_data_share_extrapolated'."""
    lv = v.get("levels") or {}
    if not lv:
        return {}
    vid, step = ame.id.rsplit("/", 1)[0], v.get("step_label", ame.id)
    out = {
        "level_model_se": Quantity(
            f"{vid}/level_model_se",
            f"standard error of the AME of {step}",
            ame.std_error,
            ame.unit,
            ame.rows,
            form=SE_FORM,
        )
    }
    for name, q in levels.items():
        rec = lv.get(name) or {}
        out[f"level_{name}_se"] = Quantity(
            f"{vid}/level_{name}_se",
            f"standard error of the {name}-level AME",
            rec.get("std_error"),
            q.unit,
            q.rows,
            form=SE_FORM,
        )
    ln, dl = lv.get("learner") or {}, lv.get("data") or {}
    if "learner" in levels and ln.get("ame_full") is not None:
        training = RowSet("training rows", int(ln.get("n_rows") or 0))
        out["ame_learner_level_full"] = _beside(
            levels["learner"],
            ln["ame_full"],
            f"{vid}/ame_learner_level_full",
            "learner-level AME fitted on all training rows",
            training,
        )
    if "data" in levels:
        rows = levels["data"].rows
        if dl.get("model_ame") is not None:
            out["ame_data_level_model"] = _beside(
                levels["data"],
                dl["model_ame"],
                f"{vid}/ame_data_level_model",
                "the model's AME on the data level's rows",
                rows,
            )
        if dl.get("max_weight") is not None:
            out["level_data_max_weight"] = Quantity(
                f"{vid}/level_data_max_weight",
                "largest weight of the data level's one-step estimate",
                dl["max_weight"],
                UNITLESS,
                rows,
                form="fixed:1",
            )
        if dl.get("share_extrapolated") is not None:
            out["level_data_share_extrapolated"] = Quantity(
                f"{vid}/level_data_share_extrapolated",
                "share of the data level's moved rows flagged as extrapolation",
                dl["share_extrapolated"],
                Unit("percent", "%", 100.0),
                RowSet("moved rows", rows.n),
                form="percent:1",
            )
    return out
