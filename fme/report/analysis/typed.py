"""results.json's typed form: each effect variant's numbers as quantities and the report's claims.

:func:`typed_payload` runs once, where ``results.json`` is written (:func:`fme.report.analysis.run.write_results`):

* the fixed-model interval of an effect's AME leaves the unlabelled ``ci_low``/``ci_high`` for
  ``fixed_interval`` (kind ``fixed model``, level, what it covers), so no reader mistakes it for the interval
  the report shows (``intervals[0]``);
* ``quantities``: the AME with the report's primary interval and with the fixed-model one, each with its unit
  as the reader reads it (a classifier's percentage points) and the rows it is over;
* ``interactions.rows[].quantities`` and ``changes``: the interactions screen's p-values and shares of rows, and
  the change log's numbers against the previous build (:mod:`fme.report.analysis.comparisons_typed`);
* ``claims``: every claim the analysis verified (the direction of each AME, the global test of its cAME
  leaves, its contracts), with kind, cited quantity ids and outcome.

The in-memory summaries keep their working keys; only the file is typed. Its JSON Schema is
``fme/report/schemas/results.schema.json``.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any

from ..._utils.numfmt import decimals_for
from ..inputs import measures
from ..inputs.claims import (
    Claim,
    agreement,
    count_claim,
    direction,
    enters_predictions,
    not_applicable,
    not_computed,
    range_claim,
)
from ..inputs.constants import constant_quantities
from ..inputs.level_measures import level_quantities
from ..inputs.quantities import Interval, Quantity, RowSet, Unit, model_units, percentage_points
from ..inputs.specs import CI_COVERS
from .audit_paths import AME_TOLERANCE, SE_TOLERANCE
from .comparisons_typed import type_comparisons

__all__ = ["typed_payload", "report_unit"]


def report_unit(payload: dict) -> Unit:
    """The unit of the report's effect-scale numbers: percentage points of a class probability, else the
    config's ``target_unit`` (the model's own scale)."""
    cls = payload.get("target_class")
    if cls is not None:
        return percentage_points(f"P({cls})")
    config = payload.get("config") or {}
    return model_units(str(config.get("target_unit") or ""), str(payload.get("target") or ""))


def _extrapolation_claims(v: dict, noun: str, sample: dict | None, claims: list[dict]) -> None:
    """The count of a variant's extrapolation points ('253 of the 1,500 observations left out as extrapolation
    points') and the range of each feature they leave the data in, over the rows it was found on (on Dask data
    beyond ``sample_size`` the seeded sample's); cited as ``<id>/extrapolation_points`` and
    ``<id>/extrapolation_where/<feature>``, the ids the report's sentences look them up by."""
    if v.get("detector") is None:
        return
    vid = v["id"]
    whole = RowSet(noun, int(v.get("n_total") or 0))
    verb = "kept in the average" if v.get("policy") == "keep" else "left out"
    n_ep = int((v.get("n_flagged_kept") if v.get("policy") == "keep" else v.get("n_extrapolation")) or 0)
    c = count_claim(
        RowSet("extrapolation points", n_ep, of=whole),
        whole,
        f"{verb} as extrapolation points",
        (f"{vid}/extrapolation_points",),
    )
    if c.holds and n_ep == 1:
        c = dataclasses.replace(c, text=c.text.replace("as extrapolation points", "as an extrapolation point"))
    claims.append(c.to_dict())
    of_sample = " of the seeded sample" if sample and not sample.get("all_rows") else ""
    for w in v.get("extrapolation_where") or []:
        if w.get("kind", "outside range") != "outside range" or "min" not in w:
            continue
        eps = RowSet(
            f"extrapolation points{of_sample} outside the reference data in {w['feature']}", int(w.get("n") or 0)
        )
        cite = (f"{vid}/extrapolation_where/{w['feature']}",)
        claims.append(range_claim(w["feature"], w["min"], w["max"], eps, cite).to_dict())


def _overview(out: dict[str, Any], unit: Unit, claims: list[dict]) -> None:
    """The overview's AMEs as quantities (``quantity`` of each row) and its statements as claims: each column
    that enters every prediction beside the features, and each AME that could not be computed."""
    ov = out.get("overview") or {}
    units = (out.get("config") or {}).get("units") or {}
    n_reference = int((out.get("reference_data") or {}).get("n_rows") or 0)
    for r in ov.get("rows") or []:
        key = f"overview/{r['feature']}" + (f"/{r['level']}" if r.get("level") is not None else "")
        step = measures.overview_step(r, str(ov.get("step")), str(units.get(r["feature"]) or ""), n_reference)
        if step is not None:  # the step the table prints: one SD over the reference rows, or one unit
            r["step_quantity"] = step.to_dict()
        if r.get("error"):
            claims.append(not_computed(f"AME of {r['feature']}", str(r["error"]), (key,)).to_dict())
            continue
        step = f"to level {r['level']}" if r.get("level") is not None else f"{float(r['step']):+g}"
        r["quantity"] = Quantity(
            key,
            f"AME of {r['feature']} {step}",
            r.get("ame"),
            unit,
            RowSet("evaluated rows", int(r.get("n") or 0)),
            Interval(
                r.get("conf_low"), r.get("conf_high"), float(r.get("conf_level") or 0.95), str(r.get("inference"))
            ),
            r.get("std_error"),
        ).to_dict()
    for a in ov.get("prediction_columns") or []:
        claims.append(enters_predictions(a["column"], a["role"], True).to_dict())


def _variant(v: dict, unit: Unit, claims: list[dict]) -> None:
    """Type one variant in place (see the module docstring)."""
    level = float(v.get("conf_level") or 0.95)
    low, high = v.pop("ci_low", None), v.pop("ci_high", None)
    fixed = Interval(low, high, level, "fixed model", CI_COVERS["sample"])
    v["fixed_interval"] = fixed.to_dict()
    n, n_total = int(v.get("n") or 0), v.get("n_total")
    rows = RowSet("evaluated rows", n, of=None if n_total is None else RowSet("rows of the data", int(n_total)))
    vid, label = v["id"], f"AME of {v.get('step_label', v['id'])}"
    primary = (v.get("intervals") or [None])[0]
    if primary:
        shown = Interval(
            primary.get("conf_low"),
            primary.get("conf_high"),
            level,
            str(primary.get("inference")),
            str(primary.get("covers") or ""),
        )
        se = primary.get("std_error")
    else:
        shown, se = fixed, v.get("se")
    ame = Quantity(f"{vid}/ame", label, v.get("ame"), unit, rows, shown, se)
    ame_fixed = Quantity(f"{vid}/ame_fixed", label + " (fixed model)", v.get("ame"), unit, rows, fixed, v.get("se"))
    quantities = {"ame": ame, "ame_fixed": ame_fixed}
    fixed_kind = "fixed model"
    w = v.get("with_eps")
    if w:  # the AME over every evaluated row, extrapolation points included (fixed model)
        quantities["ame_with_eps"] = Quantity(
            f"{vid}/ame_with_eps",
            label + " with the extrapolation points",
            w.get("ame"),
            unit,
            RowSet("evaluated rows with the extrapolation points", int(w.get("n") or 0)),
            Interval(w.get("ci_low"), w.get("ci_high"), level, fixed_kind),
        )
    for r in v.get("sensitivity") or []:
        if r.get("ame") is None:
            continue
        key = f"ame_step_x{r['factor']:g}"
        quantities[key] = Quantity(
            f"{vid}/{key}",
            f"AME of {r.get('step_label')}",
            r["ame"],
            unit,
            RowSet("evaluated rows", int(r.get("n") or 0)),
            Interval(r.get("ci_low"), r.get("ci_high"), level, fixed_kind),
        )
    part = v.get("partition") or {}
    kind = str(primary.get("inference")) if primary else fixed_kind
    for leaf in part.get("leaves") or []:
        key = f"came_leaf_{leaf['node']}"
        low, high = (
            (leaf.get("conf_low"), leaf.get("conf_high"))
            if leaf.get("conf_low") is not None
            else (leaf.get("came_ci_low"), leaf.get("came_ci_high"))
        )
        quantities[key] = Quantity(
            f"{vid}/{key}",
            f"cAME of leaf {leaf['node']} ({leaf.get('rule')})",
            leaf.get("came"),
            unit,
            RowSet("rows of the leaf", int(leaf.get("n") or 0)),
            Interval(low, high, level, kind if leaf.get("conf_low") is not None else fixed_kind),
            leaf.get("std_error"),
        )
    n_of = {str(leaf["node"]): int(leaf.get("n") or 0) for leaf in part.get("leaves") or []}
    for r in (part.get("tests") or {}).get("rows") or []:
        key = f"leaf_difference_{r['hypothesis']}"
        pair = re.findall(r"\[(\d+)\]", str(r["hypothesis"]))  # "[3] - [2]": leaf 3 minus leaf 2
        two = RowSet("rows of the two leaves", sum(n_of.get(x, 0) for x in pair))
        for k, q in measures.leaf_difference_p(vid, r, two).items():
            quantities[f"leaf_difference_{k}_{r['hypothesis']}"] = q
        quantities[key] = Quantity(
            f"{vid}/{key}",
            f"difference of leaf cAMEs {r['hypothesis']}",
            r.get("estimate"),
            unit,
            RowSet("rows of the two leaves", sum(n_of.get(x, 0) for x in pair)),
            Interval(
                r.get("conf_low"), r.get("conf_high"), level, str((part.get("tests") or {}).get("inference") or kind)
            ),
            r.get("std_error"),
        )
    c = v.get("challenger")
    if c:
        quantities["challenger_difference"] = Quantity(
            f"{vid}/challenger_difference",
            "champion AME - challenger AME",
            c.get("difference"),
            unit,
            RowSet("rows both models evaluated", int(c.get("n_common") or 0)),
            Interval(c.get("difference_low"), c.get("difference_high"), level, str(c.get("difference_inference"))),
            c.get("difference_std_error"),
        )
    for name, rec in (v.get("levels") or {}).items():  # the learner- and data-level AMEs of the same step
        if name not in ("learner", "data") or not rec or "error" in rec:
            continue
        over = (
            RowSet(
                "test rows of one split",
                int(rec.get("n_test") or 0),
                of=RowSet("training rows", int(rec.get("n_rows") or 0)),
            )
            if name == "learner"
            else RowSet("training rows", int(rec.get("n") or 0))
        )
        quantities[f"ame_{name}_level"] = Quantity(
            f"{vid}/ame_{name}_level",
            f"{name}-level AME of {v.get('step_label', vid)}",
            rec.get("ame"),
            unit,
            over,
            Interval(rec.get("conf_low"), rec.get("conf_high"), level, name),
            rec.get("std_error"),
        )
    typed_levels = {k: quantities[f"ame_{k}_level"] for k in ("learner", "data") if f"ame_{k}_level" in quantities}
    quantities.update(level_quantities(v, ame, typed_levels))
    _, low, high = ame.display()  # the subsamples' AMEs take the decimals of the AME's cell
    half = None if low is None or high is None else (high - low) / 2
    quantities.update(measures.stability_quantities(v, unit, decimals_for(half)))
    if v.get("second_path"):
        _second_path(v["second_path"], ame, quantities, claims)
    quantities.update(_diagnostics(v, unit, level))
    v["quantities"] = {k: q.to_dict() for k, q in quantities.items()}
    claims.append(direction(ame).to_dict())
    tests = (v.get("partition") or {}).get("tests") or {}
    if tests.get("claim"):
        c = dict(tests["claim"])
        c["cites"] = [f"{vid}/{x}" for x in c.get("cites", [])]
        claims.append(c)
    for r in v.get("contracts") or []:
        why = r.get("not_valid")
        text = f"not valid: {why}" if why else str(r.get("verdict"))
        claims.append(
            Claim(
                "contract_verdict",
                (f"{vid}/ame",),
                True,
                f"contract {r['expected']}: {text}",
                "not valid" if why else str(r.get("verdict")),
                why or "",
            ).to_dict()
        )


#: Unit of the relative difference of two standard errors.
RELATIVE = Unit("relative difference", "relative", 1.0, "the report's standard error")


def _second_path(sp: dict, ame: Quantity, quantities: dict[str, Quantity], claims: list[dict]) -> None:
    """The audit's second path of one variant as quantities, and its claims: 'agrees to <tolerance>' verified
    here (a difference above it is "cannot be stated", a flag), 'not applicable: <reason>' where there is no
    second path."""
    vid, rows = ame.id.rsplit("/", 1)[0], RowSet("evaluated rows", int(sp.get("n") or 0))
    what = ame.label.replace("AME of ", "the AME of ", 1)
    if sp.get("ame") is None:
        claims.append(
            not_applicable(
                f"{what} by a second path", sp.get("ame_reason") or "", (ame.id, f"{vid}/second_path_ame")
            ).to_dict()
        )
    else:
        q = Quantity(f"{vid}/second_path_ame", ame.label + " (second path)", sp["ame"], ame.unit, rows)
        d = Quantity(f"{vid}/second_path_ame_difference", "|AME - second path|", sp["ame_difference"], ame.unit, rows)
        quantities.update(second_path_ame=q, second_path_ame_difference=d)
        shown = float(sp["ame_difference"]) * ame.unit.scale  # the tolerance is in the unit the report shows
        claims.append(agreement("second path", shown, AME_TOLERANCE, (ame.id, q.id, d.id), False).to_dict())
    if sp.get("se") is None:
        claims.append(
            not_applicable(
                f"the delta SE of {what} by a second path", sp.get("se_reason") or "", (ame.id, f"{vid}/second_path_se")
            ).to_dict()
        )
        return
    se = Quantity(f"{vid}/second_path_se", "delta SE (second path)", sp["se"], ame.unit, rows)
    rel = Quantity(
        f"{vid}/second_path_se_difference", "relative difference of the delta SEs", sp["se_difference"], RELATIVE, rows
    )
    quantities.update(second_path_se=se, second_path_se_difference=rel)
    claims.append(agreement("second path", sp["se_difference"], SE_TOLERANCE, (ame.id, se.id, rel.id), True).to_dict())


def _largest(out: dict[str, Any], unit: Unit) -> dict[str, Any]:
    """The largest differences of the second path over every variant (the audit appendix's headline)."""
    variants = [v for g in out.get("effects") or [] for v in g.get("variants") or [] if "quantities" in v]
    ame = [
        v["quantities"]["second_path_ame_difference"]
        for v in variants
        if "second_path_ame_difference" in v["quantities"]
    ]
    se = [
        v["quantities"]["second_path_se_difference"] for v in variants if "second_path_se_difference" in v["quantities"]
    ]
    res: dict[str, Any] = {"ame_tolerance": AME_TOLERANCE, "se_tolerance": SE_TOLERANCE}
    for key, qs, u, label in (
        ("largest_ame_difference", ame, unit, "largest |AME - second path|"),
        ("largest_se_difference", se, RELATIVE, "largest relative difference of the delta SEs"),
    ):
        top = max((float(q["value"]) for q in qs), default=None)
        res[key] = (
            None
            if top is None
            else Quantity(f"second_path/{key}", label, top, u, RowSet("effects audited", len(qs))).to_dict()
        )
    return res


def _outside_claim(r: dict, noun: str) -> Claim:
    """'110 of the 300 observations take the combined step outside the range of the data': a count of the
    rows an interaction averages over, cited as ``interaction/<a>/<b>/outside``."""
    over = RowSet(noun, int(r["n"]))
    k = int(r["n_outside"])
    c = count_claim(
        RowSet(noun, k, of=over),
        over,
        "take the combined step outside the range of the data",
        (f"interaction/{r['steps_a']}/{r['steps_b']}/outside",),
    )
    return dataclasses.replace(c, text=c.text.replace(" take the ", " takes the ")) if c.holds and k == 1 else c


def _diagnostics(v: dict, unit: Unit, level: float) -> dict[str, Quantity]:
    """The quantities of an effect's diagnostics (:mod:`fme.report.inputs.measures`): NLMs, the share of
    extrapolation points and their range, the partition's ARI, global p-value, cANLMs and spreads, contract
    statistics and p-values, the challenger's own AME."""
    vid = v["id"]
    out: dict[str, Quantity] = dict(measures.nlm_quantities(v)) | measures.fme_spread(v, unit)
    for key, q in (
        ("ep_share", measures.ep_share(v)),
        ("ari_median", measures.ari_median(v)),
        ("global_test_p", measures.global_p(v)),
        ("global_test_statistic", measures.global_statistic(v)),
        ("alpha_level", measures.alpha_level(v)),
    ):
        if q is not None:
            out[key] = q
    part = v.get("partition") or {}
    heads = [("root", part.get("root")), ("estimation_root", part.get("estimation_root"))]
    honest = bool(part.get("honest") and part.get("estimation_root"))
    # the leaf table's shares are of the estimation rows of an honest partition, else of all evaluated rows
    total = (
        RowSet("estimation rows", int(part["estimation_root"]["n"]))
        if honest
        else RowSet("evaluated rows", int(v.get("n") or 0))
    )
    for key, leaf in heads + [(None, leaf) for leaf in part.get("leaves") or []]:
        if not leaf:
            continue
        share = None if key == "root" and honest else measures.leaf_share(vid, leaf, total, key)
        if key == "estimation_root" and leaf.get("came") is not None:  # the leaf table's + row
            primary = leaf.get("conf_low") is not None  # as the leaf cAMEs: the primary interval where computed
            out["came_estimation_root"] = Quantity(
                f"{vid}/came_estimation_root",
                "cAME of the estimation rows (all leaves)",
                leaf["came"],
                unit,
                RowSet("estimation rows", int(leaf.get("n") or 0)),
                Interval(
                    leaf.get("conf_low" if primary else "came_ci_low"),
                    leaf.get("conf_high" if primary else "came_ci_high"),
                    level,
                    str(leaf.get("inference")) if primary else "fixed model",
                ),
                leaf.get("std_error"),
            )
        for q in (measures.leaf_canlm(vid, leaf, level, key), measures.leaf_cov(vid, leaf, key), share):
            if q is not None:
                out[q.id.split("/", 1)[1]] = q
    for leaf in part.get("leaves") or []:  # where each leaf's cAME was evaluated, beside its hyperrectangle
        for key, q in measures.evaluated_ranges(vid, leaf).items():
            out[key] = q
    rows = RowSet("evaluated rows", int(v.get("n") or 0))
    for i, r in enumerate(v.get("contracts") or []):
        for key, q in measures.contract_quantities(vid, r, i, rows).items():
            out[f"contract_{i}_{key}"] = q
    for w in v.get("extrapolation_where") or []:
        if "min" in w and w.get("feature") is not None:
            eps = RowSet("extrapolation points", int(w.get("n") or 0))
            for form in measures.RANGE_FORMS:
                joint = "joint_" if w.get("kind") == "joint" else ""  # a feature may be named by both kinds
                prefix = f"ep_{joint}range{form.split(':')[1]}"
                qs = measures.range_quantities(vid, w["feature"], w["min"], w["max"], eps, prefix, form)
                out.update({f"{k}_{w['feature']}": q for k, q in qs.items()})
    c = v.get("challenger")
    if c and c.get("ame") is not None:
        out["challenger_ame"] = measures.challenger_ame(vid, c, unit, level)
    return out


def typed_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A copy of the payload of ``results.json`` in its typed form (see the module docstring)."""
    out = copy.deepcopy(payload)
    unit = report_unit(out)
    claims: list[dict] = []
    noun = str((out.get("config") or {}).get("observations") or "observations")
    sample = (out.get("data") or {}).get("sample")
    for g in out.get("effects") or []:
        for v in g.get("variants") or []:
            if "error" not in v:
                _variant(v, unit, claims)
                _extrapolation_claims(v, noun, sample, claims)
    _overview(out, unit, claims)
    inter = out.get("interactions") or {}
    for r in inter.get("rows") or []:  # how many rows the combined step of a pair takes outside the data
        if r.get("n_outside") and r.get("n") is not None:
            claims.append(_outside_claim(r, noun).to_dict())
    type_comparisons(out, unit, noun)  # the interactions screen and the change log
    if out.get("joint_regions"):  # the joint-regions section's quantities and claims
        from .joint_typed import type_joint_regions

        claims.extend(type_joint_regions(out["joint_regions"], unit))
    model = out.get("model") or {}
    q = measures.dispersion(model.get("dispersion"), int((out.get("data") or {}).get("n_rows") or 0))
    if q is not None:
        model["quantities"] = {"dispersion": q.to_dict()}
    n_rows = int((out.get("data") or {}).get("n_rows") or 0)
    for r in out.get("dictionary") or []:
        if isinstance(r, dict) and "feature" in r:
            r["quantities"] = {k: q.to_dict() for k, q in measures.feature_quantities(r, n_rows).items()}
    out["claims"] = claims
    # the thresholds the method section states: numbers the reader reads, typed like every other
    out["method"] = {"constants": {k: q.to_dict() for k, q in constant_quantities().items()}}
    out["second_path"] = _largest(out, unit)
    return out
