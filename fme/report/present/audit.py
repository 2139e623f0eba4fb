"""Audit appendix of a report: the second path to the headline numbers, input hashes, model version, platform,
resolved config.

Display strings only, from ``results.json`` and the build's ``build.json`` (:mod:`fme.report.build`), so a
report re-rendered by ``fme render`` shows the same appendix without the model or the data. The second path's
numbers are the quantities :mod:`fme.report.analysis.typed` wrote (``second_path_*`` of each variant, the
report-wide ``second_path``) and its statements the claims it verified.
"""

from __future__ import annotations

import json
from typing import Any

from ..._utils.numfmt import fmt_g
from ..inputs.claims import Claim
from ..inputs.config import ReportConfig
from ..inputs.quantities import Quantity

__all__ = ["audit_context", "hash_rows", "second_path_context"]

#: Row order and display names of the hashed inputs.
_INPUTS = (
    ("model", "Fitted model"),
    ("model module source", "Model entry point's module (source)"),
    ("challenger", "Challenger model"),
    ("data", "Evaluation data"),
    ("reference_data", "Reference data"),
    ("test_data", "Test data"),
    ("train_data", "Training data (refits)"),
    ("previous", "Previous results (change log)"),
    ("requirements.lock", "Dependency lock"),
)


def hash_rows(results: dict, build_info: dict) -> list[dict[str, str]]:
    """One row per input of the report: what was hashed and its sha256 (or why there is none)."""
    hashes = build_info.get("hashes") or {}
    cfg = results.get("config") or {}
    rows = []
    for key, name in _INPUTS:
        d = hashes.get(key)
        if d is not None:
            rows.append({"input": name, "of": d["of"], "sha256": d["sha256"] or "-"})
        elif key == "reference_data":
            source = (results.get("reference_data") or {}).get("source", "")
            rows.append(
                {
                    "input": name,
                    "of": source or "not configured",
                    "sha256": "in the model hash" if "entry point" in source else "same as the evaluation data",
                }
            )
        elif key == "test_data":
            rows.append({"input": name, "of": "not configured" if "test_data" not in cfg else "-", "sha256": "-"})
        elif key == "data":  # a build.json without hashes (older fme): the notebook's own record
            rows.append(
                {
                    "input": name,
                    "of": (results.get("data") or {}).get("source", "-"),
                    "sha256": (results.get("data") or {}).get("sha256", "-"),
                }
            )
        if key == "train_data":  # further training-data files named by single effects
            extra = sorted((k for k in hashes if k.startswith("train_data ")), key=lambda k: int(k.split()[1]))
            rows += [
                {"input": f"{name} {k.split()[1]}", "of": hashes[k]["of"], "sha256": hashes[k]["sha256"]} for k in extra
            ]
    if "results_sha256" in build_info:
        rows.append(
            {
                "input": "Results file",
                "of": "results.json (every number of this report, full precision)",
                "sha256": build_info["results_sha256"],
            }
        )
    return rows


def _value(q: dict | None, digits: int) -> str:
    """A quantity's value in its unit, to ``digits`` significant digits ('-' without one)."""
    if q is None:
        return "-"
    return fmt_g(Quantity.from_dict(q).display()[0], digits)


def second_path_context(results: dict) -> dict[str, Any] | None:
    """The audit appendix's table: per effect variant the report's AME and delta SE beside the second path's,
    their differences (from the variant's quantities) and the verdict of each claim; and the headline
    sentence with the largest differences. None for a results.json without the second path (an older fme)."""
    top = results.get("second_path")
    if top is None:
        return None
    claims = [Claim.from_dict(c) for c in results.get("claims") or []]

    def verdict(cited: str) -> str:
        """The words of the claim about the second path's quantity ``cited`` (agreement or not applicable)."""
        return next((c.text for c in claims if c.kind in ("agreement", "not_computed") and cited in c.cites), "-")

    rows, unit = [], None
    for g in results.get("effects") or []:
        for v in g.get("variants") or []:
            q = v.get("quantities") or {}
            if "ame" not in q:
                continue
            ame = q["ame"]
            unit = unit or Quantity.from_dict(ame).unit
            rows.append(
                {
                    "effect": v["id"],
                    "n": str(int(ame["rows"]["n"])),
                    "ame": _value(ame, 12),
                    "ame_second": _value(q.get("second_path_ame"), 12),
                    "ame_difference": _value(q.get("second_path_ame_difference"), 2),
                    "ame_verdict": verdict(f"{v['id']}/second_path_ame"),
                    "se": fmt_g(_se(ame), 10) if "second_path_se" in q else "-",
                    "se_second": _value(q.get("second_path_se"), 10),
                    "se_difference": _value(q.get("second_path_se_difference"), 2),
                    "se_verdict": verdict(f"{v['id']}/second_path_se"),
                }
            )
    if not rows:
        return None
    short = f" ({unit.short or unit.name})" if unit is not None and (unit.short or unit.name) else ""
    largest = top.get("largest_ame_difference")
    se_largest = top.get("largest_se_difference")
    ame_words = (
        "no AME could be recomputed"
        if largest is None
        else f"largest absolute difference of the AMEs {_value(largest, 2)}{short}"
        f" over {largest['rows']['n']} {'effect' if largest['rows']['n'] == 1 else 'effects'}"
        f" (tolerance {fmt_g(top['ame_tolerance'], 1)})"
    )
    se_words = (
        "no delta-method standard error to recompute (see the table)"
        if se_largest is None
        else f"largest relative difference of the delta SEs {_value(se_largest, 2)}"
        f" over {se_largest['rows']['n']} {'effect' if se_largest['rows']['n'] == 1 else 'effects'}"
        f" (tolerance {fmt_g(top['se_tolerance'], 1)})"
    )
    words = (unit.name + (f" of {unit.of}" if unit.of and unit.scale != 1.0 else "")) if unit and unit.name else ""
    return {
        "rows": rows,
        "unit": short,
        "unit_words": words or "the model's prediction units",
        "sentence": f"{ame_words}; {se_words}.",
    }


def _se(q: dict) -> float | None:
    """The standard error of a quantity in its unit (None without one)."""
    se = q.get("std_error")
    return None if se is None else float(se) * float(q["unit"]["scale"])


def audit_context(results: dict, cfg: ReportConfig, build_info: dict) -> dict[str, Any]:
    """Template context of the audit-trail appendix (merged into :func:`fme.report.present.context.build_context`)."""
    env = results.get("environment") or {}
    resolved = results.get("config") or cfg.to_dict()
    text = json.dumps(resolved, indent=1, sort_keys=True, ensure_ascii=False)
    import re

    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    model = (build_info.get("hashes") or {}).get("model")
    if model is None:  # a build.json of an older fme: the notebook's record
        model = {
            "sha256": (results.get("model") or {}).get("sha256") or "-",
            "of": (results.get("model") or {}).get("sha256_of") or "model file",
        }
    return {
        "audit": {
            "model_sha256": model["sha256"],
            "model_sha256_of": model["of"],
            "hashes": hash_rows(results, build_info),
            "model_version": str(cfg.model["version"])
            if cfg.model.get("version") not in (None, "")
            else "not stated in the config (model.version)",
            "os": f"{env.get('os', '?')} {env.get('os_release', '')}".strip(),
            "machine": env.get("machine", "?"),
            "resolved_config": text,
            "fence": "`" * max(3, longest + 1),
            "second_path": second_path_context(results),
        }
    }
