"""The diagnostics' quantities (fme/report/inputs/measures.py) and the tables that print them: every value the
flags table, the contracts table, the feature dictionary and the extrapolation sentences print is the written
form of a quantity that results.json carries (read back through Quantity.from_dict)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from fme.report.analysis.typed import typed_payload
from fme.report.inputs import measures
from fme.report.inputs.quantities import Quantity, RowSet, Unit, written
from fme.report.inputs.specs import FLAG_DEFAULTS
from fme.report.present.flags import flag_rows, model_flag_rows

SCHEMA = Path(__file__).resolve().parents[2] / "fme" / "report" / "schemas" / "results.schema.json"


def _variant() -> dict:
    leaf = {"node": 2, "rule": "x2 <= 0", "n": 67, "came": 1.8, "came_ci_low": 1.7, "came_ci_high": 1.9}
    return {
        "id": "x1",
        "step_label": "x1 + 1",
        "ame": 2.039,
        "ci_low": 2.005,
        "ci_high": 2.074,
        "n": 258,
        "n_total": 300,
        "n_extrapolation": 42,
        "detector": "envelope",
        "policy": "exclude",
        "conf_level": 0.95,
        "inference": "delta",
        "intervals": [{"inference": "delta", "conf_low": 2.005, "conf_high": 2.074, "std_error": 0.0175}],
        "nlm": True,
        "anlm": 0.98812023,
        "anlm_ci_low": 0.98705071,
        "anlm_ci_high": 0.98918974,
        "median_nlm": 0.98823691,
        "share_linear": 1.0,
        "stability": {"ari_median": 0.85, "subsamples": 20, "n_failed": 0},
        "extrapolation_where": [
            {"feature": "x1", "kind": "outside range", "min": 9.09958961, "max": 9.97209935, "n": 42}
        ],
        "partition": {
            "root": {**leaf, "node": 1, "rule": "(all)", "n": 258, "canlm": 0.9999999, "canlm_ci_low": 0.9999998},
            "leaves": [
                {
                    **leaf,
                    "canlm": 0.98834553,
                    "canlm_ci_low": 0.9868497,
                    "canlm_ci_high": 0.98984137,
                    "cov_fme": 0.0904,
                },
                {
                    **leaf,
                    "node": 3,
                    "n": 68,
                    "canlm": 0.99,
                    "canlm_ci_low": 0.98,
                    "canlm_ci_high": 1.0,
                    "cov_fme": 0.07,
                },
            ],
            "tests": {"global": {"statistic": 212.2289, "p_value": 3.1e-48, "df": 1}, "rows": []},
        },
        "contracts": [
            {
                "contract": "at_least",
                "expected": "AME >= 1 EUR",
                "estimate": 2.039,
                "conf_low": 2.005,
                "conf_high": 2.074,
                "statistic": 58.7912,
                "p_value": 2.0e-30,
                "p_value_adj": 0.0123,
                "std_error": 0.0175,
                "verdict": "met",
                "inference": "delta",
            }
        ],
    }


def _payload() -> dict:
    return {
        "target": "y",
        "config": {"target_unit": "EUR", "conf_level": 0.95},
        "data": {"n_rows": 300},
        "model": {"dispersion": {"dispersion": 13.4912, "family": "Poisson", "cov_type": "nonrobust"}},
        "dictionary": [
            {"feature": "x1", "type": "numeric", "unit": "years", "min": 0.00300690107, "max": 9.972099, "sd": 2.98057}
        ],
        "effects": [{"variants": [_variant()]}],
    }


@pytest.fixture(scope="module")
def typed() -> dict:
    return typed_payload(_payload())


def _q(typed: dict, key: str) -> Quantity:
    return Quantity.from_dict(typed["effects"][0]["variants"][0]["quantities"][key])


def test_written_forms_are_exact():
    rows = RowSet("extrapolation points", 42, of=RowSet("rows the step was taken on", 300))
    pct = Unit("percent", "%", 100.0)
    assert written(Quantity("a", "share", 0.14, pct, rows, form="share")) == "14.0%"
    assert written(Quantity("b", "p", 3.1e-48, Unit(""), rows, form="p")) == "< 0.001"
    assert written(Quantity("c", "p", 0.01234, Unit(""), rows, form="p")) == "0.012"
    assert written(Quantity("d", "ari", 0.85, Unit(""), rows, form="fixed:3")) == "0.850"
    assert written(Quantity("e", "min", 9.09958961, Unit(""), rows, form="g:6")) == "9.09959"
    assert written(Quantity("f", "sd", 2980.57, Unit(""), rows, form="gt:4")) == "2,981"
    assert written(Quantity("f", "sd", 2980.57, Unit(""), rows, form="g:4")) == "2981"
    assert written(Quantity("g", "share", 1.0, pct, rows, form="percent:1")) == "100.0%"
    with pytest.raises(ValueError, match="unknown form 'odd'"):
        written(Quantity("h", "x", 1.0, Unit(""), rows, form="odd"))


def test_results_json_types_the_diagnostics_and_validates(typed):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(json.dumps(typed)), json.loads(SCHEMA.read_text(encoding="utf-8")))
    assert written(_q(typed, "anlm")) == "0.9881" and _q(typed, "anlm").interval.low == 0.98705071
    assert written(_q(typed, "ep_share")) == "14.0%"
    assert _q(typed, "ep_share").rows.n == 42 and _q(typed, "ep_share").rows.of.n == 300
    assert written(_q(typed, "ari_median")) == "0.850" and _q(typed, "ari_median").rows.n == 20
    assert written(_q(typed, "global_test_p")) == "< 0.001" and _q(typed, "global_test_p").rows.n == 135
    assert written(_q(typed, "global_test_statistic")) == "212.23"
    assert written(_q(typed, "canlm_leaf_2")) == "0.9883" and _q(typed, "canlm_leaf_2").rows.n == 67
    assert written(_q(typed, "share_leaf_3")) == "26.4%"  # 68 of the 258 evaluated rows (not honest)
    assert written(_q(typed, "cov_leaf_2")) == "0.09"
    assert written(_q(typed, "contract_0_statistic")) == "58.79"
    assert written(_q(typed, "contract_0_p_value")) == "< 0.001"
    assert written(_q(typed, "contract_0_p_value_adj")) == "0.012"
    assert written(_q(typed, "ep_range6_min_x1")) == "9.09959" and written(_q(typed, "ep_range4_max_x1")) == "9.972"
    assert written(_q(typed, "alpha_level")) == "0.05"
    disp = Quantity.from_dict(typed["model"]["quantities"]["dispersion"])
    assert written(disp) == "13.49" and disp.rows.n == 300
    d = {k: Quantity.from_dict(q) for k, q in typed["dictionary"][0]["quantities"].items()}
    assert [written(d[k]) for k in ("min", "max", "sd")] == ["0.0030069", "9.9721", "2.981"]
    assert d["sd"].unit.name == "years" and d["sd"].rows.n == 300


def test_flags_table_prints_the_quantities(typed):
    v = copy.deepcopy(_variant())
    cells = {"ci_low": "2.005", "ci_high": "2.074", "ame": "2.039"}
    rows = {r["rule"]: r for r in flag_rows(v, cells, "x1", dict(FLAG_DEFAULTS))}
    assert rows["share of extrapolation points"]["value"] == written(_q(typed, "ep_share")) == "14.0%"
    assert rows["ANLM below threshold"]["value"] == written(_q(typed, "anlm"))
    ari = rows["partition unstable across subsamples (median ARI)"]
    assert ari["value"] == written(_q(typed, "ari_median")) and ari["status"] == "ok"
    test = rows["leaves not distinguishable (global test of equal leaf cAMEs)"]
    assert test["value"] == "p " + written(_q(typed, "global_test_p"))
    assert test["threshold"] == "p >= " + written(_q(typed, "alpha_level"))
    worst = rows["non-linear cAME leaf (lowest cANLM)"]["value"]
    assert worst.startswith(written(_q(typed, "canlm_leaf_2")) + " (leaf 2;")
    (model,) = model_flag_rows(_payload()["model"], dict(FLAG_DEFAULTS))
    assert model["value"] == written(Quantity.from_dict(typed["model"]["quantities"]["dispersion"])) == "13.49"
    assert model["status"] == "FLAG (!)"


def test_a_share_of_no_rows_and_a_missing_diagnostic_are_not_quantities():
    v = _variant() | {"detector": None, "stability": None, "partition": None, "nlm": False}
    assert measures.ep_share(v) is None and measures.ari_median(v) is None
    assert measures.global_p(v) is None and measures.nlm_quantities(v) == {}
    assert measures.dispersion(None, 10) is None


def test_contracts_table_prints_the_quantities(typed):
    from fme.report.present.comparisons import contract_cells

    share = {
        "contract": "nlm_at_least",
        "expected": "ANLM >= 0.9",
        "estimate": 0.98812,
        "conf_low": None,
        "conf_high": None,
        "statistic": None,
        "p_value": None,
        "p_value_adj": None,
        "verdict": "met",
        "inference": "sample",
    }
    v = _variant()
    v["contracts"].append(share)
    (row, row_share) = contract_cells([{"variants": [v]}])["rows"]
    assert row["estimate"] == written(_q(typed, "contract_0_estimate")) == "2.039"
    assert row["interval"] == "[2.005, 2.074] (delta)"
    assert row["statistic"] == written(_q(typed, "contract_0_statistic")) == "58.79"
    assert (
        (row["p"], row["p_adj"])
        == ("< 0.001", "0.012")
        == (
            written(_q(typed, "contract_0_p_value")),
            written(_q(typed, "contract_0_p_value_adj")),
        )
    )
    assert (row_share["estimate"], row_share["statistic"], row_share["p"]) == ("0.988", "-", "-")
    q = measures.contract_quantities("x1", share, 1, RowSet("evaluated rows", 258))
    assert set(q) == {"estimate"} and written(q["estimate"]) == "0.988"


def test_a_contract_whose_test_is_not_valid_prints_why_and_no_p_value():
    from fme.report.present.comparisons import contract_cells

    v = _variant()
    v["contracts"][0].update(statistic=7.3e16, std_error=6.7e-18, p_value=0.0, p_value_adj=0.0)
    (row,) = contract_cells([{"variants": [v]}])["rows"]
    assert row["statistic"] == "not valid: SE at rounding level" and row["p"] == row["p_adj"] == "-"
    q = measures.contract_quantities("x1", v["contracts"][0], 0, RowSet("evaluated rows", 258))
    assert set(q) == {"estimate"}  # no statistic, no p-value of a test that is not valid


def test_feature_dictionary_prints_the_quantities(typed):
    from types import SimpleNamespace

    from fme.report.present.model_context import whole_model

    results = _payload()
    results["dictionary"].append({"feature": "x2", "type": "numeric", "unit": "", "min": None, "max": None, "sd": None})
    for r in results["dictionary"]:
        r.update(description="", n_missing=0)
    out = whole_model(results, SimpleNamespace(units={}, conf_level=0.95), 1.0, 1)
    (x1, x2) = out["dictionary"]
    q = {k: Quantity.from_dict(d) for k, d in typed["dictionary"][0]["quantities"].items()}
    assert x1["range"] == f"{written(q['min'])} to {written(q['max'])}" == "0.0030069 to 9.9721"
    assert x1["sd"] == written(q["sd"]) == "2.981"
    assert (x2["range"], x2["sd"]) == ("-", "-")


def test_challenger_table_prints_the_challengers_ame_quantity():
    from fme.report.inputs.quantities import interval_text, percentage_points
    from fme.report.present.comparisons import challenger_cells

    payload = _payload()
    payload.update(target_class="yes")
    c = {
        "ame": 0.06957110625814011,
        "ci_low": 0.04947889872779948,
        "ci_high": 0.08966331378848069,
        "n": 258,
        "n_common": 258,
        "difference": 0.0164,
        "difference_low": -0.0028,
        "difference_high": 0.0357,
        "difference_inference": "fixed model, paired over the rows",
        "direction": "+",
        "champion_direction": "+",
        "sign_disagrees": False,
        "root_split": None,
        "contracts": [],
    }
    payload["effects"][0]["variants"][0]["challenger"] = c
    q = Quantity.from_dict(typed_payload(payload)["effects"][0]["variants"][0]["quantities"]["challenger_ame"])
    assert q.unit == percentage_points("P(yes)") and q.rows.n == 258
    v = _variant() | {"challenger": c}
    (row,) = challenger_cells([{"variants": [v]}], percentage_points("P(yes)"))["rows"]
    assert row["challenger"] == f"{written(q)} {interval_text(q)}" == "7.0 [4.9, 9.0]"


def test_extrapolation_ranges_are_printed_from_their_quantities(typed):
    from fme.report.present.extrapolation_text import extrapolation_words
    from fme.report.present.model_context import causes_phrase

    v = _variant()
    six = [written(_q(typed, f"ep_range6_{end}_x1")) for end in ("min", "max")]
    four = [written(_q(typed, f"ep_range4_{end}_x1")) for end in ("min", "max")]
    assert six == ["9.09959", "9.9721"] and four == ["9.1", "9.972"]
    assert _q(typed, "ep_range6_min_x1").rows.n == 42
    assert causes_phrase(v["extrapolation_where"], 42) == (
        f"outside the reference data in x1 for 42: observed x1 from {six[0]} to {six[1]}"
    )
    fig = {"feature": "x1", "n_evaluated": 258, "n_extrapolation": 42}
    alt, cap = extrapolation_words(v, fig, {}, "x1 + 1", "rows", None)
    assert f"x1 from {four[0]} to {four[1]} over the 42 extrapolation points" in cap
    assert f"x1 from {four[0]} to {four[1]}" in alt


def test_a_joint_cause_and_a_range_cause_of_one_feature_keep_both_ranges():
    payload = _payload()
    payload["effects"][0]["variants"][0]["extrapolation_where"].append(
        {"feature": "x1", "kind": "joint", "min": 1234.5678, "max": 2345.25, "n": 3}
    )
    qs = typed_payload(payload)["effects"][0]["variants"][0]["quantities"]
    assert written(Quantity.from_dict(qs["ep_joint_range6_min_x1"])) == "1,234.57"
    assert written(Quantity.from_dict(qs["ep_joint_range4_max_x1"])) == "2345"
    assert written(Quantity.from_dict(qs["ep_range6_min_x1"])) == "9.09959"


def test_leaf_table_and_linearity_sentence_print_the_quantities(typed):
    from fme.report.present.partition_view import leaf_rows
    from fme.report.present.sentences import linearity_sentence

    v = _variant()
    part = v["partition"]
    rows = leaf_rows(part, 258, 30, "x1", 0.95)
    root, leaf2, leaf3 = rows
    assert leaf2["canlm"] == written(_q(typed, "canlm_leaf_2")) == "0.9883"
    assert leaf2["canlm_ci"] == "[0.9868, 0.9898]"
    assert (leaf2["share"], leaf3["share"]) == (written(_q(typed, "share_leaf_2")), written(_q(typed, "share_leaf_3")))
    assert leaf3["share"] == "26.4%" and leaf2["cov"] == written(_q(typed, "cov_leaf_2")) == "0.09"
    assert root["canlm"] == written(_q(typed, "canlm_root")) and root["cov"] == "-"
    text = linearity_sentence(v, {"level": "95%"})
    anlm = _q(typed, "anlm")
    assert f"(ANLM {written(anlm)}, 95% CI 0.9871 to 0.9892, over all 258 rows)" in text


def test_leaf_difference_p_values_and_the_estimation_rows_came_are_quantities():
    payload = _payload()
    v = payload["effects"][0]["variants"][0]
    v["partition"]["tests"]["rows"] = [
        {
            "hypothesis": "[3] - [2]",
            "estimate": 0.42,
            "conf_low": 0.37,
            "conf_high": 0.48,
            "std_error": 0.03,
            "p_value": 0.0701,
            "p_value_adj": 0.3,
        }
    ]
    v["partition"].update(
        honest=True,
        estimation_root={"node": 1, "rule": "(all)", "n": 135, "came": 0.94, "came_ci_low": 0.66, "came_ci_high": 1.22},
    )
    qs = {
        k: Quantity.from_dict(q) for k, q in typed_payload(payload)["effects"][0]["variants"][0]["quantities"].items()
    }
    p, p_adj = qs["leaf_difference_p_value_[3] - [2]"], qs["leaf_difference_p_value_adj_[3] - [2]"]
    assert (written(p), written(p_adj)) == ("0.070", "0.300") and p.rows.n == 135
    came = qs["came_estimation_root"]
    assert written(came) == "0.94" and came.interval.low == 0.66 and came.rows.n == 135
    assert written(qs["share_leaf_3"]) == "50.4%"  # of the 135 estimation rows of an honest partition


def test_the_estimation_rows_came_takes_the_primary_interval_where_computed():
    payload = _payload()
    root = {"node": 1, "rule": "(all)", "n": 136, "came": 0.5616, "came_ci_low": 0.549, "came_ci_high": 0.574}
    root.update(conf_low=0.4859, conf_high=0.6373, inference="delta")
    payload["effects"][0]["variants"][0]["partition"].update(honest=True, estimation_root=root)
    q = typed_payload(payload)["effects"][0]["variants"][0]["quantities"]["came_estimation_root"]
    assert q["interval"] == {"low": 0.4859, "high": 0.6373, "level": 0.95, "kind": "delta", "covers": ""}


def test_a_leafs_evaluated_ranges_are_printed_from_their_quantities():
    from fme.report.present.partition_view import where_came_holds

    payload = _payload()
    part = payload["effects"][0]["variants"][0]["partition"]
    box = {"feature": "x2", "kind": "numeric", "range": "(-0.0177422, 2.1188]", "restricted": True}
    part["leaves"][1]["box"] = [box | {"eval_min": -0.009858943, "eval_max": 2.118803}]
    part["leaves"][0]["box"] = [box | {"range": "[-3.89942, -0.0177422]", "eval_min": -3.8994217, "eval_max": -0.01774}]
    qs = typed_payload(payload)["effects"][0]["variants"][0]["quantities"]
    low = Quantity.from_dict(qs["eval_range_leaf_3_min_x2"])
    high = Quantity.from_dict(qs["eval_range_leaf_3_max_x2"])
    assert (written(low), written(high), low.rows.n) == ("-0.00985894", "2.1188", 68)
    text = " ".join(where_came_holds(part))
    assert f"x2 evaluated {written(low)} to {written(high)} (hyperrectangle (-0.0177422, 2.1188])" in text


def test_a_contract_in_percentage_points_keeps_its_unit_and_scale():
    r = _variant()["contracts"][0] | {"unit": "percentage points of P(yes)", "estimate": 8.602}
    q = measures.contract_quantities("x1", r, 0, RowSet("evaluated rows", 258))["estimate"]
    assert q.unit == Unit("percentage points", "pp", 1.0, "P(yes)") and written(q) == "8.602"
