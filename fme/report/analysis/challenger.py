"""Champion and challenger: every effect of a report for a second model on the same rows.

For each effect variant the challenger's fMEs are computed with the champion's settings (steps resolved to
the same numbers, detector, policy); on the rows both evaluated, the paired difference of the AMEs,
mean(fME_champion - fME_challenger), gets an interval, labelled by its kind:

* ``bootstrap``, when the effect's inference is bootstrap (``inference.train_data``) and both models can be
  refitted: both are refitted on the same resamples of the training data (the same seeds, so resample b draws
  the same rows for both), the difference of the two AMEs over the common rows is taken per resample, and its
  percentile (or normal, by ``inference.ci``) interval is the one shown. A resample counts only when both
  refits succeeded, so the difference is paired resample by resample as well as row by row;
* the delta method when both models have a parameter covariance (the two fits taken as independent: their
  Jacobian rows stacked with a block-diagonal covariance, labelled so);
* else the fixed-model paired t interval over the rows.

The first splits of the two cAME trees are compared, and a sentence says where the two models disagree in
sign (by their intervals) or in contract verdicts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

import fme

from ...inference import Estimates
from ...models import refit_support
from ..inputs.config import EffectConfig
from ..inputs.specs import bootstrap_kwargs, make_detector
from .checks import refit_columns
from .contracts import contract_rows
from .effect_parts import grow_partition, json_num, root_split

__all__ = ["challenger_summary"]


def _direction(low: Any, high: Any) -> str:
    if low is None or high is None:
        return "unclear"
    return "+" if low > 0 else ("-" if high < 0 else "unclear")


def _refittable(model: Any) -> bool:
    """True when the model's adapter can refit it on resamples (the bootstrap's recipe)."""
    return bool(refit_support(model))


def _paired_bootstrap(
    ra: Any,
    rb: Any,
    pa: np.ndarray,
    pb: np.ndarray,
    est: float,
    conf: float,
) -> tuple[float | None, float | None, float | None, int]:
    """(standard error, low, high, paired resamples) of the AME difference from two models' bootstrap draws.

    ``ra``, ``rb``: the two results' bootstrap :class:`~fme.inference.RowInference`, refitted on the same seeds;
    ``pa``, ``pb``: the positions of the common rows in each. Each draw is the difference of the two refits'
    AMEs over the common rows on one resample; only resamples where both refits succeeded are paired (their
    positions in the seed order are ``info['kept']``). Fewer than two paired resamples give no interval.
    """
    codes_a = np.full(ra.n, -1, dtype=np.int64)
    codes_a[pa] = 0
    codes_b = np.full(rb.n, -1, dtype=np.int64)
    codes_b[pb] = 0
    # one sparse product per model: each refit's AME over the common rows (no n x B copy)
    da, db = ra.average(codes_a, 1).draws[0], rb.average(codes_b, 1).draws[0]
    _, ja, jb = np.intersect1d(ra.info["kept"], rb.info["kept"], assume_unique=True, return_indices=True)
    if ja.size < 2:
        return None, None, None, int(ja.size)
    tab = Estimates("bootstrap", np.array([est]), draws=(da[ja] - db[jb])[None, :], ci=ra.ci).table(conf)
    return (
        float(tab["std_error"].iloc[0]),
        float(tab["conf_low"].iloc[0]),
        float(tab["conf_high"].iloc[0]),
        int(ja.size),
    )


def challenger_summary(
    champion: Any,
    challenger: Any,
    data: pd.DataFrame,
    reference: pd.DataFrame,
    eff: EffectConfig,
    v: dict,
    seed: int,
    target_class: Any = None,
    train: pd.DataFrame | None = None,
    target: str | None = None,
    champion_result: Any = None,
    refits: Any = None,
) -> dict:
    """The challenger's figures for the effect variant ``v`` of the champion (its JSON summary).

    Parameters
    ----------
    champion, challenger : fitted models
    data, reference : DataFrame
        The evaluation rows and the detector's reference data.
    eff : dict
        The effect variant's resolved config.
    v : dict
        The champion's JSON summary of the variant.
    seed : int
        The report's seed (detectors and, for bootstrap, the resamples of both models).
    target_class : label, optional
    train : DataFrame, optional
        The loaded ``train_data`` (features and ``target``) when the effect's inference is bootstrap.
    target : str, optional
        The target column of ``train``.
    champion_result : FMEResult, optional
        The champion's bootstrap result of this variant, computed with the same seed (its refits are reused
        instead of repeated).
    refits : fme.inference.RefitCache, optional
        The build's refits shared between effects: the challenger is refitted once for all of them.

    Returns
    -------
    dict
        The challenger's AME and interval, the paired difference with its interval and its label
        (``difference_inference``), the first split, directions and contract verdicts.
    """
    steps = {f: (float(x) if isinstance(x, (int, float)) else x) for f, x in v["steps"].items()}
    kwargs: dict[str, Any] = {
        "reference_data": reference,
        "random_state": seed,
        "target_class": target_class,
        "conf_level": float(eff.conf_level),
    }
    if eff.extrapolation["method"] != "none":
        kwargs.update(extrapolation=make_detector(eff.extrapolation, seed), on_extrapolation=eff.on_extrapolation)
    # bootstrap where both have training data: the same spec (seed, resamples, ci) for both models
    boot = (
        train is not None
        and eff.inference["method"] == "bootstrap"
        and _refittable(champion)
        and _refittable(challenger)
    )
    if boot:
        # each model is refitted on its own columns of the training data (the same rows, resample by resample)
        def bkw(model: Any) -> dict[str, Any]:
            return bootstrap_kwargs(eff.inference, train, target, seed, refits, refit_columns(model, train, target))

        a = (
            champion_result
            if champion_result is not None and champion_result.inference == "bootstrap"
            else fme.fme(champion, data, steps, **bkw(champion), **kwargs)
        )
        b = fme.fme(challenger, data, steps, **bkw(challenger), **kwargs)
    else:
        a = fme.fme(champion, data, steps, **kwargs)
        b = fme.fme(challenger, data, steps, **kwargs)
    common = a.results.index.intersection(b.results.index)
    fa = a.results.loc[common, "fme"].to_numpy(dtype=float)
    fb = b.results.loc[common, "fme"].to_numpy(dtype=float)
    d = fa - fb
    n = d.size
    conf = float(eff.conf_level)
    est = float(d.mean()) if n else None
    label = "fixed model, paired over the rows"
    se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else None
    q = stats.t.ppf(0.5 + conf / 2, max(n - 1, 1))
    ra, rb = a.inference_rows, b.inference_rows
    pa, pb = a.results.index.get_indexer(common), b.results.index.get_indexer(common)
    low = high = None
    n_paired = None
    if (
        n
        and ra is not None
        and rb is not None
        and ra.method == "bootstrap"
        and rb.method == "bootstrap"
        and "kept" in ra.info
        and "kept" in rb.info
    ):
        bse, blo, bhi, n_paired = _paired_bootstrap(ra, rb, pa, pb, est, conf)
        if bse is not None:
            se, low, high = bse, blo, bhi
            label = f"bootstrap, both models refitted on the same {n_paired} resamples (paired)"
        else:  # said, not hidden: the refits of the two models succeeded together fewer than twice
            label += f" (bootstrap: only {n_paired} resamples where both refits succeeded)"
    elif (
        ra is not None
        and rb is not None
        and ra.method == "delta"
        and rb.method == "delta"
        and ra.jacobian is not None
        and rb.jacobian is not None
    ):
        ga, gb = ra.jacobian[pa].mean(axis=0), rb.jacobian[pb].mean(axis=0)
        var = ga @ ra.vcov @ ga + gb @ rb.vcov @ gb
        se, q, label = float(np.sqrt(max(var, 0.0))), stats.norm.ppf(0.5 + conf / 2), "delta, fits taken as independent"
    if low is None and est is not None and se is not None:
        low, high = est - q * se, est + q * se
    lo_b, hi_b = b.conf_int(conf)
    part_b = grow_partition(b, eff, conf, random_state=seed)  # the same seed as the champion's tree
    summary = {
        "ame": json_num(b.ame),
        "ci_low": json_num(lo_b),
        "ci_high": json_num(hi_b),
        "inference": b.inference,
        "n": int(b.n),
        "n_common": int(n),
        "difference": json_num(est),
        "difference_low": json_num(low),
        "difference_high": json_num(high),
        "difference_inference": label,
        "difference_std_error": json_num(se),
        "difference_n_resamples": n_paired,
        "direction": _direction(lo_b, hi_b),
        "root_split": None if part_b is None else root_split(part_b),
    }
    champion_dir = _direction(*(((v.get("intervals") or [{}])[0].get(k)) for k in ("conf_low", "conf_high")))
    summary["champion_direction"] = champion_dir
    summary["sign_disagrees"] = (
        champion_dir in "+-" and summary["direction"] in "+-" and champion_dir != summary["direction"]
    )
    # the challenger's own contract verdicts (tested alone; the champion's are Holm-adjusted over the report)
    b_v = {
        "id": v["id"],
        "ame": b.ame,
        "intervals": [
            {"estimate": b.ame, "std_error": b.std_error, "conf_low": lo_b, "conf_high": hi_b, "inference": b.inference}
        ],
        "n": b.n,
        "conf_level": conf,
    }
    # the bounds on the scale the report shows (a class probability's: percentage points), as the champion's
    rows = contract_rows(
        b_v,
        eff.expect,
        scale=1.0 if target_class is None else 100.0,
        unit=None if target_class is None else f"percentage points of P({target_class})",
    )
    for r in rows:
        alpha = 1 - conf
        r["verdict"] = (
            (
                "met"
                if r["p_value"] is not None and r["p_value"] < alpha
                else "not met"
                if r["wrong_side"]
                else "inconclusive"
            )
            if r["deterministic"] is None
            else ("met" if r["deterministic"] else "not met")
        )
    summary["contracts"] = [
        {"contract": r["contract"], "expected": r["expected"], "verdict": r["verdict"]}
        for r in rows
        if r["contract"] in ("sign", "within", "at_least", "at_most")
    ]
    return summary
