"""Effect contracts: what a model release promises about its effects, tested.

Per effect, ``expect:`` in the config states any of ``sign`` (``+``/``-``), ``within: [low, high]`` (two
one-sided tests, TOST), ``at_least: x`` / ``at_most: x`` (non-inferiority / non-superiority),
``nlm_at_least: v`` (the ANLM), ``share_linear_at_least: s`` (share of rows with NLM >= 0.9) and
``max_extrapolated: s`` (share of extrapolation points). Each becomes a row: what was expected, the
estimate and the interval used (the report's primary one: model uncertainty where computed), the test
statistic and one-sided p-value, the p-value adjusted over all contracts of the report (Holm), and a
verdict: ``met`` (the adjusted test rejects the contract's null at the effect's level), ``not met`` (the
interval lies entirely on the wrong side) or ``inconclusive``. Shares are counts, not estimates: met or
not met, without a test. ``fme report --check`` exits with status 3 when a contract is not met.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from ...inference.wald import adjust_pvalues
from ..inputs.quantities import at_rounding_level

__all__ = ["CONTRACT_KEYS", "contract_rows", "adjust_contracts", "any_not_met"]

CONTRACT_KEYS = ("sign", "within", "at_least", "at_most", "nlm_at_least", "share_linear_at_least", "max_extrapolated")


def _primary(v: dict) -> tuple[float | None, float | None, float | None, float | None, str]:
    """(estimate, standard error, low, high, inference) of the report's primary interval of the AME."""
    iv = (v.get("intervals") or [{}])[0]
    if iv:
        return iv.get("estimate"), iv.get("std_error"), iv.get("conf_low"), iv.get("conf_high"), iv.get("inference")
    return v.get("ame"), v.get("se"), v.get("ci_low"), v.get("ci_high"), "sample"


def _dist(inference: str, n: int | None):
    return stats.t(max(int(n) - 1, 1)) if inference == "sample" and n else stats.norm


def _row(
    v: dict,
    kind: str,
    expected: str,
    estimate: Any,
    se: Any,
    low: Any,
    high: Any,
    inference: str,
    stat: Any = None,
    p: Any = None,
    wrong_side: bool = False,
    deterministic: bool | None = None,
) -> dict:
    return {
        "effect": v["id"],
        "contract": kind,
        "expected": expected,
        "estimate": estimate,
        "std_error": se,
        "conf_low": low,
        "conf_high": high,
        "inference": inference,
        "statistic": stat,
        "p_value": p,
        "p_value_adj": None,
        "wrong_side": bool(wrong_side),
        "deterministic": deterministic,
        "verdict": None,
        "not_valid": None,
    }


def _rounding_reason(se: Any, *values: Any) -> str | None:
    """'SE at rounding level' when a standard error is rounding noise next to what it is the error of: a
    statistic divided by it (7.3e16 for an SE of 6.7e-18 on a quantity that does not vary) is no statistic."""
    if se is None:
        return None
    magnitude = max((abs(float(x)) for x in values if x is not None), default=0.0)
    return "SE at rounding level" if at_rounding_level(se, magnitude) else None


def _times(x: Any, scale: float) -> Any:
    return None if x is None else float(x) * scale


def contract_rows(v: dict, expect: dict | None, scale: float = 1.0, unit: str | None = None) -> list[dict]:
    """The contract rows of one effect variant ``v`` (its JSON summary), before the report-wide adjustment.

    The AME's bounds (``within``, ``at_least``, ``at_most``) are read on the scale the report shows the AME on:
    ``scale`` times the model's (100 for a class probability, shown in percentage points), named ``unit``; each
    row carries its estimate and interval on that scale with the ``unit``, so the table, ``results.json`` and
    ``--check`` use the number the report prints. The test statistics do not depend on the scale."""
    if not expect:
        return []
    rows = []
    *values, inference = _primary(v)
    est, se, low, high = (_times(x, scale) for x in values)
    in_unit = f" {unit}" if unit else ""
    dist = _dist(inference, v.get("n"))
    usable = est is not None and se is not None and se > 0
    invalid = _rounding_reason(se, est, low, high) if est is not None else None

    def one_sided(bound: float, above: bool) -> tuple[Any, Any]:
        if not usable or invalid:
            return None, None
        z = (est - bound) / se
        return float(z), float(dist.sf(z) if above else dist.cdf(z))

    if "sign" in expect:
        above = expect["sign"] == "+"
        z, p = one_sided(0.0, above)
        wrong = high is not None and (high < 0 if above else low > 0)
        rows.append(_row(v, "sign", f"AME {'> 0' if above else '< 0'}", est, se, low, high, inference, z, p, wrong))
    if "within" in expect:
        lo, hi = (float(b) for b in expect["within"])
        z1, p1 = one_sided(lo, True)
        z2, p2 = one_sided(hi, False)
        p = None if p1 is None else max(p1, p2)
        z = None if z1 is None else (z1 if p1 >= p2 else z2)
        wrong = high is not None and (high < lo or low > hi)
        rows.append(
            _row(v, "within", f"{lo:g} <= AME <= {hi:g}{in_unit} (TOST)", est, se, low, high, inference, z, p, wrong)
        )
    for key, above in (("at_least", True), ("at_most", False)):
        if key in expect:
            b = float(expect[key])
            z, p = one_sided(b, above)
            wrong = high is not None and (high < b if above else low > b)
            rows.append(
                _row(
                    v, key, f"AME {'>=' if above else '<='} {b:g}{in_unit}", est, se, low, high, inference, z, p, wrong
                )
            )
    if "nlm_at_least" in expect:
        b = float(expect["nlm_at_least"])
        a, lo_n, hi_n = v.get("anlm"), v.get("anlm_ci_low"), v.get("anlm_ci_high")
        se_n = v.get("anlm_se")
        z = p = None
        nlm_invalid = _rounding_reason(se_n, a, lo_n, hi_n) if a is not None else None
        if a is not None and se_n and not nlm_invalid:
            z = float((a - b) / se_n)
            p = float(_dist("sample", v.get("n_nlm") or v.get("n")).sf(z))
        wrong = hi_n is not None and hi_n < b
        rows.append(_row(v, "nlm_at_least", f"ANLM >= {b:g}", a, se_n, lo_n, hi_n, "sample", z, p, wrong))
        rows[-1]["not_valid"] = nlm_invalid
    if "share_linear_at_least" in expect:
        b = float(expect["share_linear_at_least"])
        s = v.get("share_linear")
        rows.append(
            _row(
                v,
                "share_linear_at_least",
                f"share of rows with NLM >= 0.9 >= {b:g}",
                s,
                None,
                None,
                None,
                "count",
                deterministic=s is not None and s >= b,
            )
        )
    if "max_extrapolated" in expect:
        b = float(expect["max_extrapolated"])
        n_ep = v.get("n_extrapolation")
        share = None if n_ep is None else n_ep / max(1, int(v.get("n", 0)) + int(n_ep))
        rows.append(
            _row(
                v,
                "max_extrapolated",
                f"share of extrapolation points <= {b:g}",
                share,
                None,
                None,
                None,
                "count",
                deterministic=share is not None and share <= b,
            )
        )
    for r in rows:
        if r["contract"] in ("sign", "within", "at_least", "at_most"):
            r["not_valid"] = invalid  # the test is not run: its statistic would be rounding noise
        r["conf_level"] = v.get("conf_level")
        r["unit"] = (unit or None) if r["contract"] in ("sign", "within", "at_least", "at_most") else None
    return rows


def adjust_contracts(rows: list[dict]) -> list[dict]:
    """Holm-adjust the p-values of all tested contracts of a report and give every row its verdict."""
    tested = [r for r in rows if r["p_value"] is not None]
    if tested:
        adj = adjust_pvalues(np.array([r["p_value"] for r in tested]), "holm")
        for r, a in zip(tested, adj):
            r["p_value_adj"] = float(a)
    for r in rows:
        alpha = 1 - float(r.get("conf_level") or 0.95)
        if r["deterministic"] is not None:
            r["verdict"] = "met" if r["deterministic"] else "not met"
        elif r["p_value_adj"] is not None and r["p_value_adj"] < alpha:
            r["verdict"] = "met"
        elif r["wrong_side"]:
            r["verdict"] = "not met"
        else:
            r["verdict"] = "inconclusive"
    return rows


def any_not_met(rows: list[dict]) -> bool:
    return any(r.get("verdict") == "not met" for r in rows)
