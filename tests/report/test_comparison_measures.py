"""The comparisons' quantities (fme/report/inputs/comparison_measures.py): every number the interactions table,
the change log and an AME's interval table print is the written form of a quantity results.json carries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fme.report.analysis.typed import typed_payload
from fme.report.inputs.comparison_measures import change_quantities, interaction_quantities
from fme.report.inputs.quantities import Interval, Quantity, RowSet, Unit, percentage_points, written, written_se
from fme.report.present.comparisons import interaction_cells

SCHEMA = Path(__file__).resolve().parents[2] / "fme" / "report" / "schemas" / "results.schema.json"


def _pair(**kw) -> dict:
    return {
        "steps_a": "x1 + 1",
        "steps_b": "x3 + 0.2",
        "estimate": 0.004527,
        "std_error": 0.000487,
        "conf_low": 0.003572,
        "conf_high": 0.005482,
        "p_value": 0.0004,
        "sd": 0.01,
        "tol": 1e-8,
        "share_above_tol": 0.81333,
        "inference": "sample",
        "n": 300,
        "n_outside": 92,
    } | kw


def _payload(rows: list[dict], target_class=None) -> dict:
    return {
        "effects": [],
        "target_class": target_class,
        "config": {"conf_level": 0.9, "observations": "policies"},
        "interactions": {"auto": False, "rows": rows, "note": None},
    }


def _schema_valid(doc: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(json.dumps(doc)), json.loads(SCHEMA.read_text(encoding="utf-8")))


def test_interactions_share_and_p_value_are_quantities_and_the_table_prints_them():
    out = typed_payload(_payload([_pair(), _pair(steps_b="x2 + 1", p_value=0.0342, share_above_tol=0.05)]))
    _schema_valid(out)
    first, second = out["interactions"]["rows"]
    qs = {k: Quantity.from_dict(d) for k, d in first["quantities"].items()}
    assert set(qs) == {"p_value", "share_above_tol"}
    assert qs["share_above_tol"].id == "interaction/x1 + 1/x3 + 0.2/share_above_tol"
    assert qs["share_above_tol"].unit.name == "percent" and qs["share_above_tol"].rows.of == RowSet("policies", 300)
    assert qs["share_above_tol"].rows.n == 244  # 81.3% of the 300 policies
    assert (written(qs["share_above_tol"]), written(qs["p_value"])) == ("81.3%", "< 0.001")
    average = Quantity.from_dict(first["quantity"])
    assert average.rows == RowSet("policies", 300) and average.interval.level == 0.9
    assert written(Quantity.from_dict(second["quantities"]["p_value"])) == "0.034"
    assert written(Quantity.from_dict(second["quantities"]["share_above_tol"])) == "5.0%"
    cells = interaction_cells(out["interactions"], Unit("EUR"), "policies")
    assert [(r["p"], r["share"]) for r in cells["rows"]] == [("< 0.001", "81.3%"), ("0.034", "5.0%")]
    assert "; 81.3% of the rows interact beyond the tolerance." in cells["sentences"][0]


def test_interaction_without_a_share_or_p_value_prints_dashes():
    qs = interaction_quantities(_pair(share_above_tol=None, p_value=None), Unit("EUR"), "rows")
    assert "share_above_tol" not in qs and written(qs["p_value"]) == "-"
    cells = interaction_cells({"rows": [_pair(share_above_tol=None, p_value=None)]}, Unit("EUR"), "rows")
    assert (cells["rows"][0]["p"], cells["rows"][0]["share"]) == ("-", "-")


def test_a_classifiers_interactions_share_is_of_rows_and_its_average_in_percentage_points():
    out = typed_payload(_payload([_pair()], target_class="yes"))
    average = Quantity.from_dict(out["interactions"]["rows"][0]["quantity"])
    share = Quantity.from_dict(out["interactions"]["rows"][0]["quantities"]["share_above_tol"])
    assert average.unit == percentage_points("P(yes)") and average.display()[0] == pytest.approx(0.4527)
    assert share.unit.name == "percent" and written(share) == "81.3%"


# ------------------------------------------------------------------ the change log
def _record(ame, lo, hi, *, n=258, n_ep=42, split=None, inference="delta") -> dict:
    return {
        "step": "x1 + 1",
        "ame": ame,
        "ci_low": lo,
        "ci_high": hi,
        "inference": inference,
        "conf_level": 0.95,
        "n": n,
        "n_extrapolation": n_ep,
        "ep_share": n_ep / (n + n_ep),
        "first_split_at": split,
    }


def test_change_quantities_write_what_the_change_log_prints():
    old = _record(2.03914, 2.00466, 2.07362, n=258, n_ep=42, split=-0.0177421)
    new = _record(1.94712, 1.91107, 1.98317, n=272, n_ep=28, split=0.0388971)
    qs = change_quantities("x1", new, old, Unit("EUR"))
    assert set(qs) == {
        "previous_ame",
        "ame",
        "ame_difference",
        "previous_ep_share",
        "ep_share",
        "ep_share_difference",
        "previous_split",
        "split",
    }
    assert qs["previous_ame"].form == "fixed:3" and qs["previous_ame"].interval.kind == "delta"
    from fme.report.inputs.quantities import written_bounds

    assert (written(qs["previous_ame"]), *written_bounds(qs["previous_ame"])) == ("2.039", "2.005", "2.074")
    assert written(qs["ame_difference"]) == "-0.092"
    assert (written(qs["previous_ep_share"]), written(qs["ep_share"])) == ("14.0%", "9.3%")
    assert written(qs["ep_share_difference"]) == "-4.7" and qs["ep_share_difference"].unit.short == "pp"
    assert qs["previous_ep_share"].rows == RowSet(
        "extrapolation points", 42, of=RowSet("rows the step was taken on", 300)
    )
    assert (written(qs["previous_split"]), written(qs["split"])) == ("-0.017742", "0.038897")


def test_change_quantities_of_a_classifier_are_on_the_model_scale_in_percentage_points():
    old = _record(8.6012, 8.1203, 9.0801)  # the change log's records keep the displayed scale (pp)
    new = _record(8.6012, 8.1203, 9.0801, n_ep=42)
    qs = change_quantities("x1", new, old, percentage_points("P(yes)"))
    assert qs["ame"].value == pytest.approx(0.086012) and written(qs["ame"]) == "8.60"
    assert written(qs["ame_difference"]) == "0.00" and written(qs["ep_share_difference"]) == "+0.0"


def test_an_intervals_standard_error_is_written_in_the_intervals_decimals():
    q = Quantity(
        "x/ame_fixed",
        "AME",
        3.530139,
        Unit("EUR"),
        RowSet("rows", 5),
        Interval(3.530139, 3.530139, 0.95, "fixed model"),
        1.6e-16,
    )
    assert written_se(q) == "1.6e-16"  # a zero-width interval: not '< 0.000001'
    q = Quantity("x/ame", "AME", 2.039, Unit("EUR"), RowSet("rows", 5), Interval(2.005, 2.074, 0.95, "delta"), 0.01752)
    assert written_se(q) == "0.018"
    assert written_se(Quantity("x/a", "AME", 1.0, Unit("EUR"), RowSet("rows", 5))) == "-"


def _variant(vid: str, ame: float, lo: float, hi: float, n: int, n_ep: int, split: float) -> dict:
    return {
        "id": vid,
        "step_label": "x1 + 1",
        "ame": ame,
        "ci_low": lo,
        "ci_high": hi,
        "se": 0.01,
        "conf_level": 0.95,
        "n": n,
        "n_total": n + n_ep,
        "n_extrapolation": n_ep,
        "detector": "envelope",
        "policy": "exclude",
        "inference": "sample",
        "partition": {"root_split": {"feature": "x2", "value": split, "levels": None}, "leaves": []},
    }


def test_results_json_types_the_change_log_and_the_change_log_prints_its_quantities():
    from fme.report.inputs.comparison_measures import compact
    from fme.report.present.changelog import changelog
    from fme.report.present.changelog import compact as shown_compact

    old = {"effects": [{"id": "x1", "variants": [_variant("x1", 2.03914, 2.00466, 2.07362, 258, 42, -0.0177421)]}]}
    new = _variant("x1", 1.94712, 1.91107, 1.98317, 272, 28, 0.0388971)
    payload = {"effects": [{"id": "x1", "variants": [new]}], "target_class": None, "config": {"target_unit": "EUR"}}
    payload["previous"] = {"path": "previous.json", "sha256": "0" * 64, "effects": compact(old)["effects"]}
    out = typed_payload(payload)
    _schema_valid(out)
    assert out["previous"] == {"path": "previous.json", "sha256": "0" * 64}  # the numbers moved to `changes`
    qs = {k: Quantity.from_dict(d) for k, d in out["changes"]["effects"]["x1"].items()}
    assert qs["ame_difference"].unit.name == "EUR" and qs["ame_difference"].rows.n == 272
    (row,) = changelog(out, {"path": "p", "sha256": "0", **shown_compact(old)}, qs["ame"].unit)["rows"]
    assert row["previous"] == f"{written(qs['previous_ame'])} [2.005, 2.074]" == "2.039 [2.005, 2.074]"
    assert row["now"] == "1.947 [1.911, 1.983]" and row["delta"] == written(qs["ame_difference"]) == "-0.092"
    assert row["ep_share"] == "-4.7 pp (14.0% to 9.3%)"
    assert row["first_split"] == "changed: x2 <= -0.017742 to x2 <= 0.038897"
    assert written(qs["previous_split"]) == "-0.017742" and written(qs["ep_share_difference"]) == "-4.7"


# ------------------------------------------------------------------ an AME's intervals and their SEs
def _bootstrapped(se_fixed: float, lo: float, hi: float) -> dict:
    return {
        "id": "x1",
        "step_label": "x1 + 1",
        "ame": 3.530139,
        "ci_low": lo,
        "ci_high": hi,
        "se": se_fixed,
        "conf_level": 0.95,
        "n": 265,
        "n_total": 300,
        "n_extrapolation": 35,
        "detector": None,
        "inference": "bootstrap",
        "model_ci": {
            "std_error": 0.0512,
            "conf_low": 3.47,
            "conf_high": 3.664,
            "n_resamples": 20,
            "n_failed": 0,
            "ci": "percentile",
        },
        "intervals": [
            {"inference": "bootstrap", "conf_low": 3.47, "conf_high": 3.664, "std_error": 0.0512, "covers": "m"},
            {"inference": "sample", "conf_low": lo, "conf_high": hi, "std_error": se_fixed, "covers": "rows"},
        ],
    }


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_the_interval_tables_standard_errors_are_written_from_the_ame_quantities(scale):
    from fme.report.present.display import interval_rows, prepare_variant

    variant = _bootstrapped(1.6e-16, 3.530139, 3.530139)  # a zero-width fixed-model interval
    # a classifier's results.json (a target class): its quantities are read in percentage points
    out = typed_payload(
        {"target_class": None if scale == 1.0 else "yes", "effects": [{"id": "x1", "variants": [variant]}]}
    )
    v = out["effects"][0]["variants"][0]
    model, fixed = interval_rows(prepare_variant(v, scale), "95%")
    ame, ame_fixed = (Quantity.from_dict(v["quantities"][k]) for k in ("ame", "ame_fixed"))
    assert (model["se"], fixed["se"]) == (written_se(ame), written_se(ame_fixed))
    assert (model["se"], fixed["se"]) == (("0.051", "1.6e-16") if scale == 1.0 else ("5.1", "1.6e-14"))
    # a results.json of an older fme (no quantities): the same cells from the summary's numbers
    del v["quantities"]
    old_model, old_fixed = interval_rows(prepare_variant(v, scale), "95%")
    assert (old_model["se"], old_fixed["se"]) == (model["se"], fixed["se"])


def test_the_previous_record_carries_the_compared_numbers_and_results_json_only_their_quantities(tmp_path):
    from fme.report.analysis.run import previous_record
    from fme.report.inputs.config import load_config

    old = {"effects": [{"id": "x1", "variants": [_variant("x1", 2.03914, 2.00466, 2.07362, 258, 42, -0.0177421)]}]}
    (tmp_path / "old.json").write_text(json.dumps(old), encoding="utf-8")
    (tmp_path / "c.yaml").write_text(
        "title: t\nowner: o\nintended_use: u\nmodel: {joblib: m.joblib}\ndata: {path: d.csv}\ntarget: y\n"
        "effects:\n  - {id: x1, steps: {x1: 1}}\nprevious: old.json\n",
        encoding="utf-8",
    )
    record = previous_record(load_config(tmp_path / "c.yaml"))
    assert record["path"] == "old.json" and len(record["sha256"]) == 64
    assert record["effects"]["x1"]["ame"] == 2.03914 and record["effects"]["x1"]["first_split_at"] == -0.0177421
    new = _variant("x1", 2.03914, 2.00466, 2.07362, 258, 42, -0.0177421)
    out = typed_payload({"effects": [{"id": "x1", "variants": [new]}], "previous": record})
    assert set(out["previous"]) == {"path", "sha256"}
    changes = out["changes"]["effects"]["x1"]
    assert changes["ame_difference"]["value"] == 0.0 and changes["ep_share_difference"]["value"] == 0.0
    (tmp_path / "old.json").write_text('{"effects": [{"id": 1}]}', encoding="utf-8")  # nothing to compare
    assert "effects" not in previous_record(load_config(tmp_path / "c.yaml"))
