"""A built report as a Model Card Toolkit model card: ``model_card.json``, schema 0.0.2.

The effects become quantitative-analysis entries (each AME with the report's primary interval and what
it covers; each cAME leaf as a slice; each effect contract with its verdict), the report's limitations and
the intervals' scope become considerations, and the audit trail's SHA-256 hashes (model, data, lock,
results) the version data. The schema ships with fme (``schemas/model_card.schema.json``, Apache-2.0).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["model_card", "write_model_card", "SCHEMA"]

SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "model_card.schema.json"


def _metric(kind: str, value: Any, low: Any = None, high: Any = None, slice_: str | None = None) -> dict:
    out: dict[str, Any] = {"type": kind, "value": "undefined" if value is None else f"{value:.6g}"}
    if slice_ is not None:
        out["slice"] = slice_
    if low is not None and high is not None:
        out["confidence_interval"] = {"lower_bound": f"{low:.6g}", "upper_bound": f"{high:.6g}"}
    return out


def model_card(results: dict, build_info: dict) -> dict:
    """The model card of a built report from its ``results.json`` and ``build.json``."""
    cfg = results.get("config") or {}
    metrics = []
    limitations = []
    for g in results["effects"]:
        for v in g["variants"]:
            iv = (v.get("intervals") or [{}])[0]
            name = f"AME of {v.get('step_label', v['id'])}"
            if iv:
                metrics.append(
                    _metric(
                        f"{name} ({iv.get('inference')}, {float(iv.get('conf_level') or 0.95):.0%} interval)",
                        iv.get("estimate"),
                        iv.get("conf_low"),
                        iv.get("conf_high"),
                        "all evaluated rows",
                    )
                )
                if iv.get("covers"):
                    limitations.append({"description": f"{name}: the interval covers {iv['covers']}."})
            part = v.get("partition") or {}
            for leaf in part.get("leaves") or []:
                metrics.append(
                    _metric(
                        f"cAME of {v.get('step_label', v['id'])}",
                        leaf.get("came"),
                        leaf.get("conf_low"),
                        leaf.get("conf_high"),
                        str(leaf.get("rule")),
                    )
                )
            if part.get("honesty"):
                limitations.append({"description": f"{name}: {part['honesty']}"})
            for r in v.get("contracts") or []:
                metrics.append(
                    _metric(
                        f"contract {r['expected']}: {r['verdict']}",
                        r.get("estimate"),
                        r.get("conf_low"),
                        r.get("conf_high"),
                        v["id"],
                    )
                )
    for r in (results.get("interactions") or {}).get("rows") or []:  # the Interactions section's numbers too
        metrics.append(
            _metric(
                f"interaction of {r['steps_a']} and {r['steps_b']} ({r.get('inference')} interval)",
                r.get("estimate"),
                r.get("conf_low"),
                r.get("conf_high"),
                f"{r['n']} evaluated rows" if r.get("n") is not None else "all evaluated rows",
            )
        )
    for w in results.get("warnings") or []:
        limitations.append({"description": str(w)})
    limitations.append(
        {
            "description": "The effects describe how the fitted model's predictions respond to changes in "
            "its inputs; they are not causal evidence about the world."
        }
    )
    hashes = build_info.get("hashes") or {}
    # build.json records each input as {"sha256": hex, "of": what was hashed} (older builds: the hex alone)
    diff = "; ".join(
        f"{k} sha256 {v['sha256'] if isinstance(v, dict) else v}"
        for k, v in sorted(hashes.items())
        if isinstance(v, (str, dict)) and (not isinstance(v, dict) or v.get("sha256"))
    )
    return {
        "schema_version": "0.0.2",
        "model_details": {
            "name": str(cfg.get("title", results.get("config_name", "model"))),
            "overview": str(cfg.get("intended_use", "")),
            "owners": [{"name": str(cfg.get("owner", ""))}],
            "version": {"name": f"build inputs {build_info.get('inputs_sha256', '')}", "diff": diff},
        },
        "quantitative_analysis": {"performance_metrics": metrics},
        "considerations": {
            "use_cases": [{"description": str(cfg.get("intended_use", ""))}],
            "limitations": limitations,
        },
    }


def write_model_card(folder: str | Path) -> Path:
    """``<folder>/model_card.json`` from the report's ``results.json`` and ``build.json`` in ``folder``."""
    folder = Path(folder)
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    build_info = json.loads((folder / "build.json").read_text(encoding="utf-8"))
    path = folder / "model_card.json"
    path.write_text(
        json.dumps(model_card(results, build_info), indent=1, sort_keys=True, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    return path
