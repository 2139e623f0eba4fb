"""The report's automatic flags (checklist §1.1): rule, threshold, value, status, per effect.

Thresholds come from the config's ``flags:`` key with :data:`fme.report.specs.FLAG_DEFAULTS` filled
in; the report prints every threshold and its default. A flagged cell reads ``FLAG (!)``: the
status is text, never colour alone.
"""

from __future__ import annotations

from .formatting import fmt_est, fmt_int, fmt_num
from .specs import FLAG_DEFAULTS, FLAG_MEANING

__all__ = ["FLAG", "OK", "flag_rows", "threshold_rows"]

FLAG, OK = "FLAG (!)", "ok"


def _status(flagged: bool) -> str:
    return FLAG if flagged else OK


def _sign(x: float | None) -> str:
    if x is None:
        return "-"
    return "+" if x > 0 else ("-" if x < 0 else "0")


def flag_rows(v: dict, cells: dict[str, str], label: str, t: dict) -> list[dict[str, str]]:
    """Flag rows of one effect variant (a display copy from :func:`fme.report.display.prepare_variant`)."""
    rows = []

    def add(rule: str, threshold: str, value: str, flagged: bool) -> None:
        rows.append({"effect": label, "rule": rule, "threshold": threshold, "value": value,
                     "status": _status(flagged)})

    if v["detector"] is None:
        add("extrapolation checked", "yes", "not checked", True)
    elif v["policy"] == "exclude":
        n_ep = v["n_extrapolation"] or 0
        share = n_ep / (v["n"] + n_ep)
        add("share of extrapolation points", f"> {100 * t['ep_share']:g}%", cells["ep_share"], share > t["ep_share"])
    inc = v["ci_low"] is None or v["ci_low"] <= 0 <= v["ci_high"]
    ci = f"[{cells['ci_low']}, {cells['ci_high']}]"
    add("CI of the AME includes zero", "yes", ci, inc)
    if v.get("nlm") and v.get("anlm") is not None:
        add("ANLM below threshold", f"< {t['anlm']:g}", cells["anlm"], v["anlm"] < t["anlm"])
    expected = v.get("expected_sign")
    if expected is not None:
        observed = _sign(v["ame"])
        add("observed sign differs from expected", f"expected {expected}", f"{observed} (AME {cells['ame']})",
            observed != expected)
        add("CI covers zero although a sign is expected", f"expected {expected}", ci, inc)
    st = v.get("stability")
    if st and st.get("ari_median") is not None:
        add("partition unstable across subsamples (median ARI)", f"< {t['ari']:g}", fmt_num(st["ari_median"], 3),
            st["ari_median"] < t["ari"])
    part = v.get("partition")
    if part:
        small = min(int(leaf["n"]) for leaf in part["leaves"])
        add("smallest cAME leaf", f"n < {fmt_int(t['leaf_n'])}", fmt_int(small), small < t["leaf_n"])
        with_nlm = [leaf for leaf in part["leaves"] if leaf.get("canlm") is not None]
        if with_nlm:
            worst = min(with_nlm, key=lambda leaf: leaf["canlm"])
            below = sum(leaf["canlm"] < t["leaf_anlm"] for leaf in with_nlm)
            est = fmt_est(worst["canlm"], worst.get("canlm_ci_low"), worst.get("canlm_ci_high"))[0]
            add("non-linear cAME leaf (lowest cANLM)", f"< {t['leaf_anlm']:g}",
                f"{est} (leaf {worst['node']}; {fmt_int(below)} of {fmt_int(len(with_nlm))} leaves below)",
                below > 0)
    return rows


def threshold_rows(t: dict) -> list[dict[str, str]]:
    """Every flag threshold used, its default and meaning (printed under the flags table)."""
    return [{"key": k, "value": f"{t[k]:g}", "default": f"{FLAG_DEFAULTS[k]:g}", "meaning": FLAG_MEANING[k],
             "changed": "yes" if t[k] != FLAG_DEFAULTS[k] else "no"} for k in FLAG_DEFAULTS]
