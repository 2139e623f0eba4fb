"""The report's automatic flags (checklist §1.1): rule, threshold, value, status, per effect.

Thresholds come from the config's ``flags:`` key with :data:`fme.report.inputs.specs.FLAG_DEFAULTS` filled
in; the report prints every threshold and its default. A flagged cell reads ``FLAG (!)``: the
status is text, never colour alone.
"""

from __future__ import annotations

from typing import Any

from ..._utils.numfmt import fmt_g, fmt_int, fmt_num, p_phrase
from ..inputs import measures
from ..inputs.quantities import written
from ..inputs.specs import FLAG_DEFAULTS, FLAG_MEANING, dispersion_covariance, scales_dispersion
from ..inputs.wording import count_words
from .partition_view import global_test_claim

__all__ = ["FLAG", "OK", "flag_rows", "model_flag_rows", "dispersion_text", "threshold_rows"]

FLAG, OK = "FLAG (!)", "ok"


def _status(flagged: bool) -> str:
    return FLAG if flagged else OK


def _sign(x: float | None) -> str:
    if x is None:
        return "-"
    return "+" if x > 0 else ("-" if x < 0 else "0")


def flag_rows(v: dict, cells: dict[str, str], label: str, t: dict) -> list[dict[str, str]]:
    """Flag rows of one effect variant (a display copy from :func:`fme.report.present.display.prepare_variant`)."""
    rows = []

    def add(rule: str, threshold: str, value: str, flagged: bool) -> None:
        rows.append({"effect": label, "rule": rule, "threshold": threshold, "value": value, "status": _status(flagged)})

    if v["detector"] is None:
        add("extrapolation checked", "yes", "not checked", True)
    elif v["policy"] == "exclude":
        q = measures.ep_share(v)
        assert q is not None  # a detector and policy exclude
        add(
            "share of extrapolation points",
            f"> {fmt_g(100 * t['ep_share'])}%",
            written(q),
            q.value is not None and q.value > t["ep_share"],
        )
    inc = v["ci_low"] is None or v["ci_low"] <= 0 <= v["ci_high"]
    ci = f"[{cells['ci_low']}, {cells['ci_high']}]"
    add("CI of the AME includes zero", "yes", ci, inc)
    if v.get("nlm") and v.get("anlm") is not None:
        anlm = measures.nlm_quantities(v)["anlm"]
        add("ANLM below threshold", f"< {fmt_g(t['anlm'])}", written(anlm), v["anlm"] < t["anlm"])
    elif v.get("nlm"):  # asked for, but no row has a defined NLM
        add("ANLM below threshold", f"< {fmt_g(t['anlm'])}", "not run: no evaluated row has a defined NLM", True)
    expected = v.get("expected_sign")
    if expected is not None:
        observed = _sign(v["ame"])
        add(
            "observed sign differs from expected",
            f"expected {expected}",
            f"{observed} (AME {cells['ame']})",
            observed != expected,
        )
        add("CI covers zero although a sign is expected", f"expected {expected}", ci, inc)
    mc = v.get("model_ci") or {}
    if v.get("inference") == "bootstrap" and mc.get("ci") == "percentile" and mc.get("n_resamples") is not None:
        k = int(mc["n_resamples"]) - int(mc.get("n_failed") or 0)
        if float(v.get("conf_level", 0.95)) >= 0.95:  # the tails rest on few refits
            add(
                "percentile bootstrap with few resamples",
                f"< {fmt_int(t['bootstrap_resamples'])} at {fmt_g(100 * float(v.get('conf_level', 0.95)))}%",
                f"{fmt_int(k)} successful refits",
                k < t["bootstrap_resamples"],
            )
    st = v.get("stability")
    ari_rule = "partition unstable across subsamples (median ARI)"
    if st and st.get("not_run"):
        add(ari_rule, f"< {fmt_g(t['ari'])}", f"not run: {st['not_run']}", True)
    elif st and (ari := measures.ari_median(v)) is not None:
        add(ari_rule, f"< {fmt_g(t['ari'])}", written(ari), st["ari_median"] < t["ari"])
    elif st:  # configured, but no refit succeeded: the check did not run, and the table says so
        add(
            ari_rule,
            f"< {fmt_g(t['ari'])}",
            f"not run: {fmt_int(st['n_failed'])} of {count_words(st['subsamples'], 'refits')} failed",
            True,
        )
    part = v.get("partition")
    _partition_rows(add, v, part, t)
    return rows


def _partition_rows(add: Any, v: dict, part: dict | None, t: dict) -> None:
    """The flags of the cAME partition; a check that could not run says so ("not run: why"), it never
    disappears from the table."""
    rule_test = "leaves not distinguishable (global test of equal leaf cAMEs)"
    level = measures.alpha_level(v)
    alpha, at = float(level.value or 0.05), f"p >= {written(level)}"
    if part is None:
        why = v.get("partition_not_run")
        if why:  # configured, but no tree: every check of it is a row that says so
            add(rule_test, at, f"not run: {why}", True)
            add("smallest cAME leaf", f"n < {fmt_int(t['leaf_n'])}", f"not run: {why}", True)
        return
    tests = part.get("tests")
    if tests is None:
        add(rule_test, at, "not run: a single subspace (no leaves to compare)", False)
    else:
        claim = global_test_claim(tests, 1 - alpha, part["leaves"])
        if claim.kind == "test_not_valid":  # never an 'ok' for a test that is not valid
            add(rule_test, at, f"cannot be computed here: {claim.reason}", True)
        else:
            # a tree whose leaves the data cannot tell apart describes noise, not subgroups
            p = measures.global_p(v)
            text = p_phrase(None) if p is None else measures.p_words(p)
            add(rule_test, at, text, p is not None and p.value is not None and p.value >= alpha)
    small = min(int(leaf["n"]) for leaf in part["leaves"])
    add("smallest cAME leaf", f"n < {fmt_int(t['leaf_n'])}", fmt_int(small), small < t["leaf_n"])
    with_nlm = [leaf for leaf in part["leaves"] if leaf.get("canlm") is not None]
    if with_nlm:  # ties broken by node number, the same in both engines
        worst = min(with_nlm, key=lambda leaf: (leaf["canlm"], int(leaf["node"])))
        below = sum(leaf["canlm"] < t["leaf_anlm"] for leaf in with_nlm)
        canlm = measures.leaf_canlm(str(v.get("id", "effect")), worst, float(v.get("conf_level", 0.95)))
        est = "-" if canlm is None else written(canlm)
        add(
            "non-linear cAME leaf (lowest cANLM)",
            f"< {fmt_g(t['leaf_anlm'])}",
            f"{est} (leaf {worst['node']}; {fmt_int(below)} of {count_words(len(with_nlm), 'leaves')} below)",
            below > 0,
        )


def dispersion_text(d: dict | None, t: dict) -> str | None:
    """The model section's sentence on a Poisson/binomial GLM's dispersion and how to get robust intervals."""
    if not d:
        return None
    text = (
        f"{d['family']} model: Pearson chi2 / residual df = {fmt_num(d['pearson_chi2'], 1)} / "
        f"{fmt_int(d['df_resid'])} = {fmt_num(d['dispersion'], 2)} (1 under the model; covariance "
        f"{d['cov_type']})."
    )
    if scales_dispersion(d, t["dispersion"]):  # the analysis scaled the delta covariance on the same rule
        text += (
            " Above the threshold: the model's own covariance assumes a dispersion of 1, so the report's "
            "delta-method intervals, and the direction words, contracts and change log that read them, use "
            f"it scaled by the dispersion (quasi-likelihood, as GLM fit(scale='X2'); labelled delta "
            f"({dispersion_covariance(d)})): their standard errors are {fmt_num(d['dispersion'] ** 0.5, 2)} "
            "times the model's. Alternatives: a sandwich covariance (statsmodels: fit(cov_type='HC0')), a "
            "negative binomial family, or inference: bootstrap."
        )
    return text


def model_flag_rows(model_info: dict, t: dict) -> list[dict[str, str]]:
    """Flags of the model as a whole: a Poisson or binomial GLM's overdispersion (Pearson chi2 / df)."""
    d = (model_info or {}).get("dispersion")
    if not d:
        return []
    flagged = d["dispersion"] > t["dispersion"] and d["cov_type"] == "nonrobust"
    return [
        {
            "effect": "the model",
            "rule": f"dispersion of the {d['family']} model (Pearson chi2 / df)",
            "threshold": f"> {fmt_g(t['dispersion'])}",
            "value": written(q) if (q := measures.dispersion(d, 0)) is not None else "-",
            "status": _status(flagged),
        }
    ]


def threshold_rows(t: dict) -> list[dict[str, str]]:
    """Every flag threshold used, its default and meaning (printed under the flags table)."""
    return [
        {
            "key": k,
            "value": fmt_g(t[k]),
            "default": fmt_g(FLAG_DEFAULTS[k]),
            "meaning": FLAG_MEANING[k],
            "changed": "yes" if t[k] != FLAG_DEFAULTS[k] else "no",
        }
        for k in FLAG_DEFAULTS
    ]
