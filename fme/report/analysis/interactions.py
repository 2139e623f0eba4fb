"""Interactions in reports: ``interactions:`` lists feature pairs with their steps, or
``auto`` screens every pair of the top k numeric features of the overview (k = 5 by default).

Each pair gets :func:`fme.interaction`: the average second difference f(x + h_a + h_b) - f(x + h_a) -
f(x + h_b) + f(x) with its interval (delta where the model has a parameter covariance, else the fixed-model
spread; the screen refits nothing) and the share of rows interacting by more than the tolerance. Rows are
ordered by |estimate| / standard error, the largest first, and each gets a sentence.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

import fme

from ..inputs.config import ReportConfig
from .effect_parts import json_num
from .model_view import dispersion_scaled, dispersion_threshold

__all__ = ["run_interactions", "DEFAULT_TOP"]

DEFAULT_TOP = 5


def _pairs(spec: Any, overview: dict | None, data: pd.DataFrame) -> list[tuple[dict, dict]]:
    if isinstance(spec, list):
        return [(dict(p["a"]), dict(p["b"])) for p in spec]
    k = DEFAULT_TOP if spec == "auto" else int(spec["auto"])
    ranked = []
    for r in (overview or {}).get("rows", []):
        f = r["feature"]
        if r.get("ame") is None or r.get("level") is not None or f in ranked or f not in data.columns:
            continue
        if pd.api.types.is_numeric_dtype(data[f]) and not isinstance(data[f].dtype, pd.CategoricalDtype):
            ranked.append(f)
    top = ranked[:k]
    step = (overview or {}).get("step", "sd")
    h = "sd" if step == "sd" else 1.0
    return [({a: h}, {b: h}) for i, a in enumerate(top) for b in top[i + 1 :]]


def _n_outside(
    model: Any, data: pd.DataFrame, reference: pd.DataFrame, a: dict, b: dict, n: int, target_class: Any
) -> int:
    """How many of the ``n`` rows the combined step takes outside the range of the reference data (any of x + h_a,
    x + h_b, x + h_a + h_b outside the envelope): the screen keeps them, the report counts them."""
    try:
        checked = fme.interaction(
            model,
            data,
            a,
            b,
            inference="sample",
            extrapolation="envelope",
            reference_data=reference,
            target_class=target_class,
        )
    except fme.FMEError:  # every row leaves the data
        return n
    return int(checked.iloc[0]["n_excluded"])


def run_interactions(
    model: Any,
    data: pd.DataFrame,
    reference: pd.DataFrame,
    cfg: ReportConfig,
    overview: dict | None,
    target_class: Any = None,
) -> dict | None:
    """The configured interactions as JSON-ready rows (None when the config has none)."""
    spec = cfg.interactions
    if not spec or hasattr(data, "npartitions"):
        return None
    method = cfg.inference["method"] if isinstance(cfg.inference, dict) else "auto"
    inference = "auto" if method == "bootstrap" else method  # no refits for a screen
    model, covariance = dispersion_scaled(model, dispersion_threshold(cfg))
    rows = []
    fixed_only = False
    for a, b in _pairs(spec, overview, data):
        # the library's warning on a fixed-model interval advises Python keywords; the report says it in its own
        # words, naming the screen and the config key (note below), and the warnings log keeps no duplicate
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", fme.FixedModelWarning)
            out = fme.interaction(
                model,
                data,
                a,
                b,
                inference=inference,
                conf_level=float(cfg.conf_level),
                target_class=target_class,
                reference_data=reference,
            )
        for w in caught:
            if issubclass(w.category, fme.FixedModelWarning):
                fixed_only = True
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        r = out.iloc[0]
        rows.append(
            {
                "steps_a": str(r["steps_a"]),
                "steps_b": str(r["steps_b"]),
                **{
                    c: json_num(r[c])
                    for c in (
                        "estimate",
                        "std_error",
                        "conf_low",
                        "conf_high",
                        "p_value",
                        "sd",
                        "tol",
                        "share_above_tol",
                    )
                },
                "inference": str(r["inference"])
                if covariance is None or r["inference"] != "delta"
                else f"delta ({covariance})",
                "n": int(r["n"]),
                "n_outside": _n_outside(model, data, reference, a, b, int(r["n"]), target_class),
            }
        )

    def strength(r: dict) -> float:
        # without uncertainty (zero SE: the model is additive in the pair, or fixed-model rows all alike) the
        # estimate itself decides: above the tolerance it is a sure interaction, at rounding level none
        est, se = abs(r["estimate"] or 0.0), r["std_error"]
        if se:
            return est / se
        return np.inf if est > (r["tol"] or 0.0) else 0.0

    rows.sort(key=lambda r: -strength(r))
    note = None
    if fixed_only:
        asked = "inference: bootstrap" if method == "bootstrap" else f"inference: {method}"
        note = (
            f"The interactions screen refits nothing: its intervals are fixed-model intervals over the rows "
            f"(the model's uncertainty is not in them) although the config asks for {asked} for the effects, "
            "whose intervals do include it. A model with a parameter covariance (statsmodels) gives delta-method "
            "intervals here; the config key interactions lists the pairs screened."
        )
    return {"auto": not isinstance(spec, list), "rows": rows, "note": note}
