"""results.json + config -> the template context (plain dicts of display strings).

Templates only place these strings; they never compute or format numbers.
Table cells and generated sentences share the same formatted strings.

:func:`build_context` assembles the context from the concepts' own modules (an effect's cells in
:mod:`.effect_tables`, the extrapolation words in :mod:`.extrapolation_text`, the figures' alt text and
captions in :mod:`.figure_text`, the report's id and environment in :mod:`.provenance`) and re-exports the
names that callers read from here.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from ..._utils.numfmt import decimals_for, fmt_level
from ..inputs.claims import CANNOT
from ..inputs.config import ReportConfig
from ..inputs.constants import wording_thresholds

# the default flag thresholds (a config's ``flags:`` overrides them)
from ..inputs.specs import FLAG_DEFAULTS as FLAG_THRESHOLDS
from ..inputs.wording import count_words
from . import audit, changelog, sentences
from .comparisons import challenger_cells, contract_cells, interaction_cells
from .display import (
    ci_method_text,
    effect_title,
    interval_rows,
    model_ci_scope,
    prepare_variant,
    scale_of,
    target_phrase,
    value_unit,
)
from .effect_tables import (  # noqa: F401 - re-exported: an effect's cells are read from here
    effect_cells,
    eps_intervals,
    level_label,
    sensitivity_rows,
    sign_agreement,
    stability_cells,
    with_eps_rows,
)
from .extrapolation_text import ep_line, listed_claims
from .figure_text import figure_entries
from .flags import FLAG, dispersion_text, flag_rows, model_flag_rows, threshold_rows
from .joint_regions import joint_context
from .levels import level_flag_rows, level_rows, level_sentences
from .model_context import causes_phrase, detector_text, effective_step_rows, fit_text, whole_model
from .partition_view import (  # noqa: F401
    MAX_LEAVES_SHOWN,
    boxes,
    head_rows,
    honesty_sentence,
    leaf_rows,
    leaf_test_cells,
    shown_leaves,
    splits_sentence,
    where_came_holds,
)
from .provenance import (  # noqa: F401
    cluster_phrase,
    environment_line,
    rebuild_command,
    report_id,
    sample_note,
)
from .table_scope import changes_scope, table_scope

__all__ = [
    "build_context",
    "effect_cells",
    "FLAG_THRESHOLDS",
    "with_eps_rows",
    "sensitivity_rows",
    "stability_cells",
    "sign_agreement",
    "report_id",
]


def unstated_flags(label: str, texts: list[str]) -> list[dict[str, str]]:
    """A flag for every statement whose claim failed its verifier ('cannot be stated: <reason>'): the report
    prints the reason instead of the statement, and the flags table points a reviewer to it."""
    return [
        {
            "effect": label,
            "rule": "statement verified before it is printed",
            "threshold": "holds",
            "value": t[t.index(CANNOT) :],
            "status": FLAG,
        }
        for t in texts
        if CANNOT in t
    ]


def build_context(results: dict, cfg: ReportConfig, config_text: str, build_info: dict) -> dict[str, Any]:
    """Everything the report template needs, as display strings."""
    target, unit, prediction_scale = target_phrase(results, cfg)
    scale = scale_of(results)
    thresholds = cfg.flags or dict(FLAG_THRESHOLDS)
    # tables are numbered in reading order, one counter for the whole document (the template places them in
    # this order; tests/test_report_typed.py reads the rendered captions back)
    table_no = [0]

    def next_table() -> int:
        table_no[0] += 1
        return table_no[0]

    table_signoff = next_table()
    contracts = contract_cells(results["effects"])
    table_contracts = next_table() if contracts else None
    value = value_unit(results, cfg)
    challenger = challenger_cells(results["effects"], value)
    table_challenger = next_table() if challenger else None
    table_overview, table_flags, table_thresholds = next_table(), next_table(), next_table()
    model_view = whole_model(results, cfg, scale, table_no[0] + 1)
    table_no[0] = model_view["table_dictionary"]
    noun = cfg.observations
    units = cfg.units
    fig_counter = [0]
    effects, summary, overview, flags, plausibility = [], [], [], [], []
    # (effect, its evaluated rows): the rows each AME of the flags, plausibility and contracts tables is over
    shown_rows: list[tuple[str, int]] = []
    contract_rows: list[tuple[str, int]] = []
    ci_methods: set[str] = set()
    listed = listed_claims(results.get("claims") or [])
    ci_captions: set[str] = set()
    for group in results["effects"]:
        variants = []
        for v in group["variants"]:
            if "error" in v:  # results.json of an older fme: the analysis now fails loudly instead
                raise ValueError(f"effect {v['id']} was not computed ({v['error']}); rebuild the report")
            v = prepare_variant(v, scale)
            v["listed_claims"] = {k: c for k, c in listed.items() if k.startswith(f"{v['id']}/")}
            v["level_label"] = level_label(v)
            v["expected_sign"] = group.get("config", {}).get("expected_sign")
            cells = effect_cells(v)
            ci_methods.add(v["ci_inference"])
            ci_captions.add(cells["ci_kind"])
            sentence = sentences.effect_sentence(v, cells, target, unit, noun, units)
            lin = sentences.linearity_sentence(v, cells)
            label = effect_title(group)
            if v.get("level") is not None:
                label = f"{label}: to level {v['level']}"
            summary.append({"text": sentence + (" " + lin if lin else ""), "anchor": f"sec-{v['id']}"})
            overview.append({"label": label, **cells})
            shown_rows.append((label, int(v["n"])))
            if v.get("contracts"):
                contract_rows.append((v["id"], int(v["n"])))
            flags.extend(flag_rows(v, cells, label, thresholds))
            flags.extend(level_flag_rows(v, label))
            plausibility.append(
                {
                    "label": label,
                    "ame": cells["ame"],
                    "ci": f"[{cells['ci_low']}, {cells['ci_high']}]",
                    **sign_agreement(v["expected_sign"], v["ame"], v["ci_low"], v["ci_high"]),
                }
            )
            eps = with_eps_rows(v, cells)
            sens = sensitivity_rows(v, cells["level"])
            sens_sentence = sentences.sensitivity_sentence(v["sensitivity"], sens) if sens else None
            var = {
                "id": v["id"],
                "label": label,
                "error": None,
                "partition": None,
                "cells": cells,
                "sentence": sentence,
                "linearity": lin,
                "heading": f"Level {v['level']}" if v.get("level") is not None else None,
                "detector": v["detector"],
                "policy": v["policy"],
                "nlm": v.get("nlm"),
                "nlm_method": v.get("nlm_method"),
                "nlm_nodes": v.get("nlm_nodes"),
                "where": causes_phrase(
                    v["extrapolation_where"], v.get("n_extrapolation") or v.get("n_flagged_kept") or 0
                ),
                "with_eps": eps,
                "table_eps": next_table() if eps else None,
                "table_effect": next_table(),
                "intervals": interval_rows(v, cells["level"]),
                "table_intervals": next_table(),
                "intervals_scope": table_scope("CIs and standard errors", value, [(label, int(v["n"]))]),
                "effective_steps": effective_step_rows(v),
                "table_shrink": next_table() if v.get("effective_steps") else None,
                "levels": level_rows(v, cells, noun),
                "table_levels": next_table() if v.get("levels") else None,
                "level_sentences": level_sentences(v, label, unit, noun),
                "sensitivity": sens,
                "sensitivity_sentence": sens_sentence,
                "table_sensitivity": next_table() if sens else None,
                "figures": figure_entries(v, cells, cfg, fig_counter, unit, results["data"].get("sample")),
            }
            var["with_eps_phrase"] = sentences.with_eps_phrase(eps[1], noun, var["table_eps"]) if eps else None
            var["eps_intervals"] = eps_intervals(eps) if eps else None
            var["ep_line"] = ep_line(v, noun, var["where"], results["data"].get("sample"))
            flags.extend(
                unstated_flags(
                    label,
                    [
                        var["ep_line"] or "",
                        *(f["alt"] for f in var["figures"]),
                        *(f["caption"] for f in var["figures"]),
                    ],
                )
            )
            if v.get("partition"):
                p, omitted = shown_leaves(v["partition"], v["id"])
                var["partition"] = {
                    "method": p["method"],
                    "omitted": omitted,
                    "params": ", ".join(f"{k} = {val}" for k, val in sorted(p["params"].items()) if k != "method")
                    or "defaults",
                    "rows": leaf_rows(p, v["n"], thresholds["leaf_n"], v["id"], float(v.get("conf_level") or 0.95)),
                    "boxes": boxes(p),
                    "notes": p["notes"],
                    "holds": where_came_holds(p, noun, results["data"].get("sample")),
                    "table_leaves": next_table(),
                    "table_boxes": None,
                    "stability": None,
                    "honesty": honesty_sentence(p),
                    "tests": None,
                    "splits": splits_sentence(p.get("splits")),
                    "star": head_rows(p)[1],
                }
                if p.get("tests"):
                    var["partition"]["tests"] = leaf_test_cells(
                        p["tests"], float(v.get("conf_level", 0.95)), next_table(), v["partition"]["leaves"]
                    )
                var["partition"]["table_boxes"] = next_table()  # after the differences, as the template reads
                if v.get("stability"):
                    half = None if v["ci_low"] is None else (v["ci_high"] - v["ci_low"]) / 2
                    sc = stability_cells(v["stability"], decimals_for(half), v.get("quantities"))
                    tab = next_table()
                    var["partition"]["stability"] = {
                        "rows": sc["rows"],
                        "table": tab,
                        "sentence": sentences.stability_sentence(sc["cells"], v["stability"].get("ari_median"), tab),
                        # the rows each subsample's AME averages over, for the caption
                        "scope": ""
                        if "n_each" not in sc["cells"]
                        else f", each over the {count_words(v['stability']['n_each'], 'rows')} of one subsample",
                    }
            variants.append(var)
        effects.append({"id": group["id"], "title": effect_title(group), "why": group["why"], "variants": variants})
    # the joint-regions section follows the effects (its tables and figure numbered after theirs)
    joint = joint_context(results, next_table, fig_counter)
    flags.extend(model_flag_rows(results.get("model") or {}, thresholds))
    flags.extend(unstated_flags("the report", [c["text"] for c in results.get("claims") or [] if not c["holds"]]))
    interactions = interaction_cells(results.get("interactions"), value, noun, listed)
    table_interactions = next_table() if interactions else None
    table_plausibility = next_table()
    changes = changelog.changelog(results, build_info.get("previous"), value)
    table_changes = next_table() if changes and changes["rows"] else None
    n_fig_tables = table_no[0]
    versions = [{"name": k, "version": val} for k, val in sorted(results["versions"].items())]
    versions += [{"name": k, "version": val} for k, val in sorted(build_info.get("tools", {}).items())]
    fence = "`" * max(3, _longest_backtick_run(config_text) + 1)
    env = results.get("environment") or {}
    ctx = {
        "title": cfg.title,
        "owner": cfg.owner,
        "status": cfg.status,
        "intended_use": cfg.intended_use,
        "out_of_scope": cfg.out_of_scope,
        "target": target,
        "target_unit": unit,
        "prediction_scale": prediction_scale,
        "target_class": results.get("target_class"),
        "whole_model": model_view,
        "threshold_rows": threshold_rows(thresholds),
        "table_thresholds": table_thresholds,
        "ci_method": ci_method_text(ci_methods, fmt_level(cfg.conf_level)),
        "ci_caption": "; ".join(sorted(ci_captions)),
        "only_fixed": ci_methods == {"sample"},
        "model_ci_scope": model_ci_scope(ci_methods),
        "dispersion": dispersion_text((results.get("model") or {}).get("dispersion"), thresholds),
        "extrapolation_method": detector_text([e.extrapolation for e in cfg.effects]),
        "model": {"description": cfg.model.get("description", ""), **results["model"]},
        "data": results["data"],
        "reference": results["reference_data"],
        "test_fit": fit_text(results["test_fit"]),
        "config_name": results["config_name"],
        "config_sha256": results["config_sha256"],
        "inputs_sha256": build_info.get("inputs_sha256", ""),
        "seed": cfg.seed,
        "conf_level": fmt_level(cfg.conf_level),
        "versions": versions,
        "summary": summary,
        "contracts": contracts,
        "table_contracts": table_contracts,
        "contracts_scope": table_scope("Estimates and intervals", value, contract_rows),
        "challenger": challenger,
        "table_challenger": table_challenger,
        "interactions": interactions,
        "table_interactions": table_interactions,
        "joint": joint,
        "overview": overview,
        "flags": flags,
        "effects": effects,
        "warnings": results["warnings"],
        "config_text": config_text,
        "fence": fence,
        "thresholds": thresholds,
        # the method section's wording thresholds, written from the constants results.json states
        "linearity": wording_thresholds("linearity", (results.get("method") or {}).get("constants")),
        "stability_words": wording_thresholds("stability", (results.get("method") or {}).get("constants")),
        "generated": (_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC") if cfg.timestamp else None),
        "rebuild": rebuild_command(results, build_info),
        "table_signoff": table_signoff,
        "table_overview": table_overview,
        "table_flags": table_flags,
        "flags_scope": table_scope("Value column: AMEs and CIs", value, shown_rows),
        "table_plausibility": table_plausibility,
        "plausibility_scope": table_scope("AMEs and CIs", value, shown_rows),
        "table_versions": n_fig_tables + 1,
        "table_hashes": n_fig_tables + 2,
        "table_second_path": n_fig_tables + 3,
        "report_id": report_id(results["config_name"], results["config_sha256"]),
        "signoff": [{"role": r["role"], "name": r.get("name", "")} for r in cfg.signoff],
        "changes": changes,
        "table_changes": table_changes,
        "changes_scope": changes_scope(value),
        "plausibility": plausibility,
        "any_expected": any(p["expected"] != "not stated" for p in plausibility),
        "fme_version": results["versions"].get("forward-marginal-effects", results["versions"].get("fme", "")),
        "environment": environment_line(env),
        "sample_note": sample_note(results["data"]),
    }
    ctx.update(audit.audit_context(results, cfg, build_info))
    return ctx


def _longest_backtick_run(text: str) -> int:
    best = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        best = max(best, run)
    return best
