"""Audit trail of a report: input hashes, model version, platform, resolved config.

Display strings only, from ``results.json`` and the build's ``build.json`` (:mod:`fme.report.build`), so a
report re-rendered by ``fme render`` shows the same trail without the model or the data.
"""

from __future__ import annotations

import json
from typing import Any

from ..inputs.config import ReportConfig

__all__ = ["audit_context", "hash_rows"]

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
        }
    }
