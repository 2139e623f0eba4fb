"""The effect table's SD, Q1 and Q3, the stability table, the overview's steps, the levels' numbers and the
method section's wording thresholds: each is a quantity of results.json (typed_payload), validated by its JSON
Schema, and the present stage prints exactly its written form."""

from __future__ import annotations

import copy
import json
import types
from pathlib import Path

import pytest

from fme._utils.numfmt import fmt_est
from fme.report.analysis.typed import typed_payload
from fme.report.inputs import constants
from fme.report.inputs.level_measures import estimate_decimals
from fme.report.inputs.quantities import Quantity, written
from fme.report.present import sentences
from fme.report.present.display import prepare_variant
from fme.report.present.effect_tables import effect_cells, stability_cells
from fme.report.present.levels import level_rows, level_sentences
from fme.report.present.model_context import whole_model

SCHEMA = Path(__file__).resolve().parents[2] / "fme" / "report" / "schemas" / "results.schema.json"


def _variant() -> dict:
    return {
        "id": "x1",
        "step_label": "x1 + 1",
        "steps": {"x1": 1},
        "ame": 0.0860312,
        "ci_low": 0.0812,
        "ci_high": 0.0908,
        "se": 0.00245,
        "sd": 0.0389204,
        "q25": 0.0548149,
        "q75": 0.1241046,
        "n": 258,
        "n_total": 300,
        "n_extrapolation": 42,
        "detector": "envelope",
        "policy": "exclude",
        "conf_level": 0.95,
        "inference": "delta",
        "model_ci": {"std_error": 0.00301, "conf_low": 0.0801, "conf_high": 0.0919},
        "intervals": [{"inference": "delta", "conf_low": 0.0801, "conf_high": 0.0919, "std_error": 0.00301}],
        "nlm": False,
        "stability": {
            "subsamples": 20,
            "fraction": 0.5,
            "n_each": 129,
            "n_rows": 258,
            "of_sample": 1000,
            "ame_min": 0.080812,
            "ame_max": 0.088449,
            "ame_sd": 0.0024123,
            "n_same_sign": 20,
            "root_split": "x2",
            "n_leaves_full": 2,
            "n_refits": 20,
            "n_failed": 0,
            "errors": [],
            "n_same_root": 17,
            "ari_median": 0.85,
            "ari_min": 0.3912,
            "ari_max": 1.0,
            "leaves_median": 2.0,
            "leaves_min": 2,
            "leaves_max": 3,
        },
        "levels": {
            "learner": {
                "ame": 0.0362,
                "std_error": 0.000898,
                "conf_low": 0.0323,
                "conf_high": 0.0401,
                "ame_full": 0.035614,
                "inference": "learner",
                "n_splits": 3,
                "n_rows": 300,
                "n_test": 60,
                "n_train": 240,
                "n_failed": 0,
                "repeats": 3,
            },
            "data": {
                "ame": 0.0299,
                "std_error": 0.002535,
                "conf_low": 0.025,
                "conf_high": 0.0349,
                "model_ame": 0.035614,
                "ess": 243.2,
                "n": 300,
                "max_weight": 2.94,
                "share_extrapolated": 0.07,
                "positivity": "weak",
                "inference": "one-step",
                "folds": 2,
            },
        },
    }


def _payload(target_class: object = "yes") -> dict:
    return {
        "target": "y",
        "target_class": target_class,
        "config": {"target_unit": "", "conf_level": 0.95, "units": {"x1": "years"}},
        "data": {"n_rows": 300},
        "reference_data": {"n_rows": 250},
        "overview": {
            "step": "sd",
            "detector": {"method": "envelope"},
            "rows": [
                {"feature": "x1", "step": 2980.574, "level": None, "ame": 0.061, "conf_low": 0.059, "conf_high": 0.062,
                 "conf_level": 0.95, "inference": "delta", "n": 188, "n_excluded": 112, "error": None},
                {"feature": "k", "step": None, "level": "b", "ame": 0.0039, "conf_low": 0.0017, "conf_high": 0.0061,
                 "conf_level": 0.95, "inference": "delta", "n": 199, "n_excluded": 101, "error": None},
            ],
        },
        "effects": [{"variants": [_variant()]}],
    }  # fmt: skip


@pytest.fixture(scope="module")
def typed() -> dict:
    return typed_payload(_payload())


def _qs(typed: dict) -> dict[str, Quantity]:
    return {k: Quantity.from_dict(q) for k, q in typed["effects"][0]["variants"][0]["quantities"].items()}


def test_the_new_quantities_validate_against_the_schema(typed):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(json.dumps(typed)), json.loads(SCHEMA.read_text(encoding="utf-8")))


def test_the_fmes_sd_and_quartiles_are_quantities_in_the_ames_unit_and_the_table_prints_them(typed):
    qs = _qs(typed)
    assert [written(qs[f"fme_{k}"]) for k in ("sd", "q25", "q75")] == ["3.892", "5.481", "12.410"]
    assert qs["fme_sd"].unit.name == "percentage points" and qs["fme_sd"].unit.scale == 100.0
    assert qs["fme_q25"].rows.name == "evaluated rows" and qs["fme_q25"].rows.n == 258
    assert qs["fme_q75"].value == 0.1241046  # on the model's scale; the unit scales it
    v = prepare_variant(typed["effects"][0]["variants"][0], 100.0)
    cells = effect_cells(v)
    assert (cells["sd"], cells["q25"], cells["q75"]) == ("3.892", "5.481", "12.410")
    # a results.json without the quantities (an older fme) prints the same from the record
    old = copy.deepcopy(v)
    for k in ("fme_sd", "fme_q25", "fme_q75"):
        del old["quantities"][k]
    assert {k: effect_cells(old)[k] for k in ("sd", "q25", "q75")} == {k: cells[k] for k in ("sd", "q25", "q75")}


def test_the_stability_tables_numbers_are_quantities_and_printed_from_them(typed):
    qs = _qs(typed)
    assert written(qs["stability_share_each"]) == "50.0%"
    assert qs["stability_share_each"].rows.n == 129 and qs["stability_share_each"].rows.of.n == 258
    assert written(qs["stability_share_sample"]) == "25.8%" and qs["stability_share_sample"].rows.of.n == 1000
    assert written(qs["stability_leaves_median"]) == "2.0"
    assert (written(qs["stability_ari_min"]), written(qs["stability_ari_max"])) == ("0.391", "1.000")
    # the subsamples' AMEs in percentage points with the decimals of the AME's cell (8.60 [8.01, 9.19])
    assert fmt_est(*qs["ame"].display())[0] == "8.60"
    assert [written(qs[f"stability_ame_{k}"]) for k in ("min", "max", "sd")] == ["8.08", "8.84", "0.24"]
    v = prepare_variant(typed["effects"][0]["variants"][0], 100.0)
    rows = {r["quantity"]: r["value"] for r in stability_cells(v["stability"], 2, v["quantities"])["rows"]}
    assert rows["Subsamples"] == (
        "20 random subsamples of 129 rows each (50.0% of the 258 evaluated rows of the sample, itself 25.8% of all "
        "1,000 evaluated rows; drawn without replacement)"
    )
    assert rows["Subspaces (leaves)"].endswith("refits median 2.0 (range 2 to 3)")
    assert rows["Agreement with the sample partition (adjusted Rand index: 1 same grouping, 0 chance)"] == (
        "median 0.850 (range 0.391 to 1.000)"
    )
    assert rows["AME in the subsamples"] == "8.08 to 8.84 (SD 0.24); same sign as the AME in 20 of 20"
    # without the quantities, or with the subsamples' AMEs typed without a form (an older results.json), the
    # record prints the same
    rows_now = stability_cells(v["stability"], 2, v["quantities"])["rows"]
    assert stability_cells(v["stability"], 2)["rows"] == rows_now
    older = {k: {key: val for key, val in q.items() if key != "form"} for k, q in v["quantities"].items()}
    assert stability_cells(v["stability"], 2, older)["rows"][-2] == rows_now[-2]


def test_the_overviews_sd_step_is_a_quantity_over_the_reference_rows_in_the_features_unit(typed):
    r, level_row = typed["overview"]["rows"]
    q = Quantity.from_dict(r["step_quantity"])
    assert q.id == "overview/x1/step" and q.value == 2980.574 and written(q) == "2,981"
    assert q.unit.name == "years" and q.rows.name == "rows of the reference data" and q.rows.n == 250
    cfg = types.SimpleNamespace(units={"x1": "years"}, conf_level=0.95)
    steps = [row["step"] for row in whole_model(typed, cfg, 1.0, 4)["overview"]["rows"]]
    assert steps == ["+2,981 years", "to level b"] and "step_quantity" not in level_row
    old = copy.deepcopy(typed)  # an older results.json: the same text from the record
    for row in old["overview"]["rows"]:
        row.pop("step_quantity", None)
    assert [row["step"] for row in whole_model(old, cfg, 1.0, 4)["overview"]["rows"]] == steps
    unit = typed_payload(_payload() | {"overview": {**_payload()["overview"], "step": "unit"}})
    one = Quantity.from_dict(unit["overview"]["rows"][0]["step_quantity"])
    assert one.rows == constants.NO_ROWS and one.label == "one unit of x1, the overview's step"


def test_the_methods_wording_thresholds_are_stated_quantities_and_the_sentences_apply_them(typed):
    stated = typed["method"]["constants"]
    assert {k: (q["value"], q["id"], q["form"]) for k, q in stated.items()} == {
        "linearity/close_to_linear": (0.9, "method/linearity/close_to_linear", "g:6"),
        "linearity/moderately_non_linear": (0.5, "method/linearity/moderately_non_linear", "g:6"),
        "stability/stable": (0.8, "method/stability/stable", "g:6"),
        "stability/moderately_stable": (0.5, "method/stability/moderately_stable", "g:6"),
    }
    assert all(q["rows"]["n"] == 0 and q["unit"]["name"] == "" for q in stated.values())
    assert constants.wording_thresholds("stability", stated) == [
        {"min": "0.8", "word": "stable"},
        {"min": "0.5", "word": "moderately stable"},
    ]
    assert constants.wording_thresholds("linearity") == constants.wording_thresholds("linearity", stated)
    # the sentences choose their words by the same thresholds the method section states
    assert sentences.STABILITY is constants.STABILITY and sentences.LINEARITY is constants.LINEARITY
    assert "are stable across" in sentences.stability_sentence({"ari_median": "0.800"}, 0.8, 3)
    assert "moderately stable" in sentences.stability_sentence({"ari_median": "0.799"}, 0.7999, 3)


def test_the_levels_numbers_are_quantities_and_the_table_and_sentences_print_them(typed):
    qs = _qs(typed)
    assert written(qs["level_model_se"]) == "0.3010" and qs["level_model_se"].rows.n == 258
    assert written(qs["level_learner_se"]) == "0.0898" and written(qs["level_data_se"]) == "0.2535"
    assert written(qs["ame_learner_level_full"]) == "3.56" and qs["ame_learner_level_full"].rows.n == 300
    assert written(qs["ame_data_level_model"]) == "3.56" and qs["ame_data_level_model"].unit.scale == 100.0
    assert written(qs["level_data_max_weight"]) == "2.9"
    assert written(qs["level_data_share_extrapolated"]) == "7.0%"
    v = prepare_variant(typed["effects"][0]["variants"][0], 100.0)
    cells = effect_cells(v)
    rows = level_rows(v, cells, "observations")
    assert [r["se"] for r in rows] == ["0.3010", "0.0898", "0.2535"]
    assert rows[2]["extrapolation"].startswith("7.0% of the moved rows flagged")
    learner, data = level_sentences(v, "x1 + 1", "percentage points", "observations")
    assert "Fitted on all 300 training observations, it gives 3.56 percentage points." in learner
    assert "largest weight 2.9, 7.0% of moved rows flagged" in data
    assert "the model predicts a change of 3.56 percentage points" in data
    old = copy.deepcopy(v)  # an older results.json: the records print the same
    old["quantities"] = {
        k: q for k, q in old["quantities"].items() if not k.startswith(("level_", "ame_learner_level_f"))
    }
    del old["quantities"]["ame_data_level_model"]
    assert level_rows(old, cells, "observations") == rows
    assert level_sentences(old, "x1 + 1", "percentage points", "observations") == [learner, data]


@pytest.mark.parametrize(
    ("est", "low", "high"),
    [(3.5614, 3.23, 4.01), (3.55901234, 3.55901234, 3.55901234), (0.001234, None, None), (-12.5, -13.0, -12.0)],
)
def test_estimate_decimals_are_those_fmt_est_writes(est, low, high):
    text = fmt_est(est, low, high)[0]
    assert (len(text.split(".")[1]) if "." in text else 0) == estimate_decimals(est, low, high)
