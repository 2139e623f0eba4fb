"""Champion and challenger (issue 27 item 2): every effect of a report for a second model on the same rows.

For each effect variant the challenger's fMEs are computed with the champion's settings (steps resolved to
the same numbers, detector, policy); on the rows both evaluated, the paired difference of the AMEs,
mean(fME_champion - fME_challenger), gets an interval: the delta method when both models have a parameter
covariance (the two fits taken as independent: their Jacobian rows stacked with a block-diagonal
covariance, labelled so), else the fixed-model paired t interval over the rows (labelled; bootstrap refits
of both models are not done here). The first splits of the two cAME trees are compared, and a sentence
says where the two models disagree in sign (by their intervals) or in contract verdicts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

import fme

from .contracts import contract_rows
from .effect_parts import _grow_partition, _num, _root_split
from .specs import make_detector

__all__ = ["challenger_summary"]


def _direction(low: Any, high: Any) -> str:
    if low is None or high is None:
        return "unclear"
    return "+" if low > 0 else ("-" if high < 0 else "unclear")


def challenger_summary(champion: Any, challenger: Any, data: pd.DataFrame, reference: pd.DataFrame, eff: dict,
                       v: dict, seed: int, target_class: Any = None) -> dict:
    """The challenger's figures for the effect variant ``v`` of the champion (its JSON summary)."""
    steps = {f: (float(x) if isinstance(x, (int, float)) else x) for f, x in v["steps"].items()}
    kwargs: dict[str, Any] = {"reference_data": reference, "random_state": seed, "target_class": target_class,
                              "conf_level": float(eff["conf_level"])}
    if eff["extrapolation"]["method"] != "none":
        kwargs.update(extrapolation=make_detector(eff["extrapolation"], seed), on_extrapolation=eff["on_extrapolation"])
    a = fme.fme(champion, data, steps, **kwargs)
    b = fme.fme(challenger, data, steps, **kwargs)
    common = a.results.index.intersection(b.results.index)
    fa = a.results.loc[common, "fme"].to_numpy(dtype=float)
    fb = b.results.loc[common, "fme"].to_numpy(dtype=float)
    d = fa - fb
    n = d.size
    conf = float(eff["conf_level"])
    est = float(d.mean()) if n else None
    label = "fixed model, paired over the rows"
    se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else None
    q = stats.t.ppf(0.5 + conf / 2, max(n - 1, 1))
    ra, rb = a.inference_rows, b.inference_rows
    if (ra is not None and rb is not None and ra.method == "delta" and rb.method == "delta"
            and ra.jacobian is not None and rb.jacobian is not None):
        pa, pb = a.results.index.get_indexer(common), b.results.index.get_indexer(common)
        ga, gb = ra.jacobian[pa].mean(axis=0), rb.jacobian[pb].mean(axis=0)
        var = ga @ ra.vcov @ ga + gb @ rb.vcov @ gb
        se, q, label = float(np.sqrt(max(var, 0.0))), stats.norm.ppf(0.5 + conf / 2), "delta, fits taken as independent"
    low = None if est is None or se is None else est - q * se
    high = None if est is None or se is None else est + q * se
    lo_b, hi_b = b.conf_int(conf)
    part_b = _grow_partition(b, eff, conf)
    summary = {"ame": _num(b.ame), "ci_low": _num(lo_b), "ci_high": _num(hi_b), "inference": b.inference,
               "n": int(b.n), "n_common": int(n), "difference": _num(est), "difference_low": _num(low),
               "difference_high": _num(high), "difference_inference": label,
               "direction": _direction(lo_b, hi_b),
               "root_split": None if part_b is None else _root_split(part_b)}
    champion_dir = _direction(*(((v.get("intervals") or [{}])[0].get(k)) for k in ("conf_low", "conf_high")))
    summary["champion_direction"] = champion_dir
    summary["sign_disagrees"] = champion_dir in "+-" and summary["direction"] in "+-" and champion_dir != summary[
        "direction"]
    # the challenger's own contract verdicts (tested alone; the champion's are Holm-adjusted over the report)
    b_v = {"id": v["id"], "ame": b.ame, "intervals": [{"estimate": b.ame, "std_error": b.std_error, "conf_low": lo_b,
                                                       "conf_high": hi_b, "inference": b.inference}],
           "n": b.n, "conf_level": conf}
    rows = contract_rows(b_v, eff.get("expect"))
    for r in rows:
        alpha = 1 - conf
        r["verdict"] = ("met" if r["p_value"] is not None and r["p_value"] < alpha else
                        "not met" if r["wrong_side"] else "inconclusive") if r["deterministic"] is None else (
            "met" if r["deterministic"] else "not met")
    summary["contracts"] = [{"contract": r["contract"], "expected": r["expected"], "verdict": r["verdict"]}
                            for r in rows if r["contract"] in ("sign", "within", "at_least", "at_most")]
    return summary
