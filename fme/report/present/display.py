"""Prepare an effect's numbers for display: the scale (percentage points for probabilities) and the
interval that decides (model uncertainty when it was computed).

:func:`prepare_variant` returns a copy of one ``results.json`` effect variant in which

* every effect-scale number (AME, SD, quartiles, CIs, cAMEs, the with/without-EP and step-size
  AMEs, the stability range, the learner- and data-level estimates) is multiplied by ``scale`` (100 for a
  classifier: probabilities become percentage points; NLMs, counts and shares are scale-free and stay);
* ``ci_low``/``ci_high`` (and each leaf's ``came_ci_low``/``came_ci_high``) are the interval of the
  inference method actually used: the model-uncertainty interval (delta method, bootstrap) when
  one was computed, else the fixed-model interval. The fixed-model interval is kept in
  ``fixed_ci_low``/``fixed_ci_high``; ``ci_inference`` names which one ``ci_low`` is.

So sentences, direction words, flags and the plausibility check, which all read ``ci_low`` and
``ci_high``, use the model-uncertainty interval whenever it exists.
"""

from __future__ import annotations

import copy

from ..._utils.numfmt import count, fmt_est
from ..inputs.config import ReportConfig
from ..inputs.quantities import Quantity, Unit, fixed_bounds, model_units, percentage_points, written_se
from ..inputs.specs import CI_COVERS, CI_SHORT, ci_short

__all__ = [
    "prepare_variant",
    "scale_of",
    "target_phrase",
    "interval_rows",
    "ci_method_text",
    "model_ci_scope",
    "value_unit",
]

#: What each model-uncertainty interval covers and what it does not (limitations section).
MODEL_CI_SCOPE = {
    "delta": (
        "CIs marked model (delta method) have the standard error sqrt(g'Vg): g is the gradient of the AME "
        "with respect to the model's parameters, V their estimated covariance, and the evaluation rows are "
        "held fixed. They cover the uncertainty of the estimated parameters under the model's own "
        "assumptions (e.g. a GLM's variance function); they do not cover which rows were evaluated, a "
        "misspecified model form or variance (a robust covariance, e.g. cov_type HC0, covers the "
        "latter), or the choice of features."
    ),
    "bootstrap": (
        "CIs marked model (bootstrap refits) refit the model on resamples of the training data with the "
        "evaluation rows held fixed. They cover the variability of fitting the model to other training "
        "samples with its settings fixed; they do not cover which rows were evaluated, nor the choice "
        "of the model class, its hyper-parameters or its features."
    ),
}

_EFFECT_KEYS = ("ame", "sd", "se", "ci_low", "ci_high", "q25", "q75")
# the learner- and data-level records (fme.report.analysis.levels)
_LEVEL_KEYS = {
    "learner": ("ame", "std_error", "conf_low", "conf_high", "ame_full"),
    "data": ("ame", "std_error", "conf_low", "conf_high", "plug_in", "correction", "model_ame"),
}
_LEAF_KEYS = ("came", "sd_fme", "came_ci_low", "came_ci_high", "std_error", "conf_low", "conf_high")


def _mul(d: dict, keys: tuple, factor: float) -> None:
    for k in keys:
        if d.get(k) is not None:
            d[k] = d[k] * factor


def scale_of(results: dict) -> float:
    """100 when the report explains a class probability (shown in percentage points), else 1."""
    return 100.0 if results.get("target_class") is not None else 1.0


def value_unit(results: dict, cfg: ReportConfig) -> Unit:
    """The one unit of the report's effect-scale numbers (AMEs, cAMEs, their differences, interactions,
    challenger): a class probability's percentage points, else the config's ``target_unit``."""
    cls = results.get("target_class")
    if cls is not None:
        return percentage_points(target_phrase(results, cfg)[0])
    return model_units(cfg.target_unit or "", results.get("target", ""))


def target_phrase(results: dict, cfg: ReportConfig) -> tuple[str, str, str]:
    """(what the model predicts, unit of the AMEs, prediction scale) as the report words them."""
    cls = results.get("target_class")
    if cls is None:
        return (results["target"], cfg.target_unit, cfg.model.get("prediction_scale", "the model's prediction"))
    named = cfg.model.get("prediction_scale")
    scale = named or f"predicted probability of class {cls}"
    # the class as the config names it ('P(vote = Dole)'), not its label in the model ('1'); the sentences say
    # "the model's predicted ...", so a leading 'predicted' of the config's words is not repeated
    target = f"probability of {cls}"
    if named:
        target = named[len("predicted ") :] if named.lower().startswith("predicted ") else named
    return target, "percentage points", f"{scale}; effects in percentage points"


def _partition_rows(p: dict) -> list[dict]:
    """The root, the estimation rows' root (results.json of honest cAMEs) and the leaves of a partition."""
    return [p["root"], *([p["estimation_root"]] if p.get("estimation_root") else []), *p["leaves"]]


def prepare_variant(v: dict, scale: float) -> dict:
    """A display copy of one effect variant (see the module docstring)."""
    v = copy.deepcopy(v)
    # the display copy's working keys: results.json keeps the fixed-model interval labelled (fixed_interval)
    v["ci_low"], v["ci_high"] = fixed_bounds(v)
    if scale != 1.0:
        _mul(v, _EFFECT_KEYS, scale)
        if v.get("model_ci"):
            _mul(v["model_ci"], ("std_error", "conf_low", "conf_high"), scale)
        if v.get("with_eps"):
            _mul(v["with_eps"], ("ame", "ci_low", "ci_high"), scale)
        for r in v.get("sensitivity") or []:
            _mul(r, ("ame", "ci_low", "ci_high"), scale)
        if v.get("stability"):
            _mul(v["stability"], ("ame_min", "ame_max", "ame_sd"), scale)
        if v.get("partition"):
            for leaf in _partition_rows(v["partition"]):
                _mul(leaf, _LEAF_KEYS, scale)
            # the differences of leaf cAMEs are in the cAMEs' unit (their p-values and statistics are not)
            for r in (v["partition"].get("tests") or {}).get("rows") or []:
                _mul(r, ("estimate", "std_error", "conf_low", "conf_high"), scale)
            if v["partition"].get("splits"):
                _mul(v["partition"]["splits"], ("came_min", "came_max"), scale)
        for name, keys in _LEVEL_KEYS.items():
            if (v.get("levels") or {}).get(name):
                _mul(v["levels"][name], keys, scale)
    v["fixed_ci_low"], v["fixed_ci_high"] = v.get("ci_low"), v.get("ci_high")
    method = v.get("inference", "sample")
    mc = v.get("model_ci")
    if mc and mc.get("conf_low") is not None:
        v["ci_low"], v["ci_high"] = mc["conf_low"], mc["conf_high"]
        v["ci_inference"] = method
        if v.get("partition"):
            for leaf in _partition_rows(v["partition"]):
                if leaf.get("conf_low") is not None:
                    leaf["came_ci_low"], leaf["came_ci_high"] = leaf["conf_low"], leaf["conf_high"]
    else:
        v["ci_inference"] = "sample"
    return v


def _se_cell(v: dict, key: str) -> str | None:
    """The standard error of the variant's quantity ``key`` of results.json as the interval table writes it
    (:func:`~fme.report.inputs.quantities.written_se`); None for a results.json of an older fme."""
    d = (v.get("quantities") or {}).get(key)
    return None if d is None else written_se(Quantity.from_dict(d))


def interval_rows(v: dict, level: str) -> list[dict[str, str]]:
    """Display rows (interval, covers, CI, SE) of the AME's intervals: the deciding one first."""
    rows = []
    mc = v.get("model_ci")
    if mc and mc.get("conf_low") is not None:
        _, lo, hi = fmt_est(v["ame"], mc["conf_low"], mc["conf_high"])
        extra = ""
        if v["inference"] == "bootstrap":
            extra = f" ({count(mc['n_resamples'], 'resample')}, {count(mc['n_failed'], 'failed refit')}, {mc['ci']})"
        se = _se_cell(v, "ame") or fmt_est(mc["std_error"], mc["conf_low"], mc["conf_high"])[0]
        covariance = mc.get("covariance") if v["inference"] == "delta" else None  # a scaled delta covariance
        label = v["inference"] if covariance is None else f"delta ({covariance})"
        covers = CI_COVERS[v["inference"]] if covariance is None else v["intervals"][0]["covers"]
        rows.append(
            {"interval": ci_short(label) + extra, "covers": covers, "ci": f"[{lo}, {hi}]", "se": se, "used": "yes"}
        )
    _, lo, hi = fmt_est(v["ame"], v["fixed_ci_low"], v["fixed_ci_high"])
    se = _se_cell(v, "ame_fixed") or fmt_est(v.get("se"), v["fixed_ci_low"], v["fixed_ci_high"])[0]
    rows.append(
        {
            "interval": CI_SHORT["sample"],
            "covers": CI_COVERS["sample"],
            "ci": f"[{lo}, {hi}]",
            "se": se,
            "used": "no" if rows else "yes",
        }
    )
    return rows


def model_ci_scope(methods: set[str]) -> str:
    """The limitations' sentences on the model-uncertainty intervals used (delta method, bootstrap)."""
    return " ".join(MODEL_CI_SCOPE[m] for m in ("delta", "bootstrap") if m in methods)


def ci_method_text(methods: set[str], level: str) -> str:
    """The method section's sentence on confidence intervals for the inference methods used."""
    parts = []
    if "delta" in methods:
        parts.append(
            "delta method: the gradient of the AME with respect to the model's parameters and their "
            "covariance (z statistics, normal quantiles), the evaluation rows held fixed; this covers the "
            "uncertainty of estimating the model's parameters under its own assumptions, not which rows "
            "were evaluated nor a misspecified model"
        )
    if "bootstrap" in methods:
        parts.append(
            "bootstrap: the model is refitted on resamples of the training data and the AME recomputed "
            "for each refit on the same evaluation rows (percentile or normal interval, as configured); "
            "this covers the variability of fitting the model to other training samples, not which rows "
            "were evaluated nor the choice of model class or hyper-parameters"
        )
    fixed = (
        f"fixed model: t-based, mean ± t × SD / √n over the evaluated rows at the {level} level; this "
        "describes the spread of the effects over the data given the fitted model and does not include "
        "the uncertainty of fitting the model"
    )
    if not parts:
        return (
            f"{fixed}. No model-uncertainty interval was computed for any effect (config key inference: "
            "the model supports no delta method and no bootstrap was configured), so the direction words and "
            "the plausibility check rest on the fixed-model interval only."
        )
    return (
        "; ".join(parts) + ". Where one of these was computed it is the interval shown beside the AME and the "
        "one the direction words, flags and plausibility check use; the " + fixed + ", is shown beside it. "
        "Effects without one use the fixed-model interval, and say so."
    )


def effect_title(group: dict) -> str:
    """The configured title, else the stepped features as written in the config ("a|b and Größe"), never the
    id (which replaces every character outside [A-Za-z0-9_-] by "_": "<b>radius</b>" became "_b_radius__b_")."""
    if group.get("title"):
        return group["title"]
    steps = (group.get("config") or {}).get("steps")
    return " and ".join(str(f) for f in steps) if steps else group["id"]
