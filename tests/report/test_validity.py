"""A test that is not valid is never stated as a result: the global test of equal leaf cAMEs, the leaf
differences, the flags and the effect contracts print "cannot be computed here: <reason>" / "not valid:
<reason>", never a verdict or an 'ok'."""

from __future__ import annotations

import pytest

from fme.report.analysis.contracts import adjust_contracts, contract_rows
from fme.report.present.context import contract_cells
from fme.report.present.flags import FLAG, flag_rows
from fme.report.present.partition_view import leaf_test_cells


def _leaf(node, n, came):
    return {
        "node": node,
        "n": n,
        "came": came,
        "came_ci_low": came - 0.1,
        "came_ci_high": came + 0.1,
        "sd_fme": 0.2,
        "cov_fme": 0.3,
        "rule": f"x > {node}",
        "box": [],
    }


def _tests(statistic, p, se=0.05, note=None):
    g = {"statistic": statistic, "df": 1.0, "p_value": p}
    if note is not None:
        g["note"] = note
    return {
        "rows": [
            {
                "hypothesis": "[3] - [2]",
                "estimate": 0.135,
                "std_error": se,
                "p_value": p,
                "p_value_adj": p,
                "conf_low": 0.03,
                "conf_high": 0.24,
            }
        ],
        "global": g,
        "multcomp": "holm",
        "inference": "delta",
        "honest": True,
        "left_out": [],
    }


LEAVES = [_leaf(2, 40, 0.30), _leaf(3, 45, 0.435)]
NOT_IDENTIFIED = "the hypothesis is not identified (the contrasts lie in the span of the model's Jacobian)"


@pytest.mark.parametrize(
    "tests, reason",
    [
        (_tests(302.0000000137, 1e-67, note=NOT_IDENTIFIED), NOT_IDENTIFIED),
        (_tests(None, None), "the statistic is undefined"),
        (_tests(7.3e16, 0.0, se=6.7e-18), "SE at rounding level"),
    ],
)
def test_an_invalid_global_test_is_printed_as_not_computable(tests, reason):
    cells = leaf_test_cells(tests, 0.95, 7, LEAVES)
    assert f"cannot be computed here: {reason}" in cells["global"]
    assert "differ at" not in cells["global"] and "statistic 302" not in cells["global"]
    assert cells["claim"]["kind"] == "test_not_valid" and cells["claim"]["outcome"] == "not valid"
    v = {
        "detector": None,
        "policy": None,
        "ci_low": 0.1,
        "ci_high": 0.5,
        "ame": 0.3,
        "conf_level": 0.95,
        "partition": {"tests": tests, "leaves": LEAVES},
    }
    cells_v = {"ci_low": "0.1", "ci_high": "0.5", "ame": "0.3", "ep_share": "-"}
    row = next(
        r
        for r in flag_rows(
            v,
            cells_v,
            "x",
            {"ep_share": 0.05, "anlm": 0.9, "ari": 0.5, "leaf_n": 10, "leaf_anlm": 0.5, "bootstrap_resamples": 999},
        )
        if r["rule"].startswith("leaves not distinguishable")
    )
    assert row["value"].startswith(f"cannot be computed here: {reason}") and row["status"] == FLAG


def test_a_difference_whose_se_is_rounding_noise_shows_no_p_value():
    cells = leaf_test_cells(_tests(7.3e16, 0.0, se=6.7e-18), 0.95, 7, LEAVES)
    assert cells["rows"][0]["p"] == "not valid: SE at rounding level" and cells["rows"][0]["p_adj"] == "-"


def test_a_valid_global_test_keeps_its_verdict():
    cells = leaf_test_cells(_tests(9.0, 0.0027), 0.95, 7, LEAVES)
    assert "statistic 9.00, p = 0.003: the leaves' cAMEs differ at the 5% level" in cells["global"]
    assert cells["claim"]["kind"] == "test_result"


def _variant(se):
    return {
        "id": "e",
        "n": 100,
        "conf_level": 0.95,
        "intervals": [
            {
                "estimate": 0.49,
                "std_error": se,
                "conf_low": 0.49 - 2 * se,
                "conf_high": 0.49 + 2 * se,
                "inference": "delta",
            }
        ],
    }


def test_a_contract_whose_se_is_rounding_noise_is_not_valid():
    rows = adjust_contracts(contract_rows(_variant(6.7e-18), {"at_least": 0.1, "sign": "+"}))
    assert all(r["statistic"] is None and r["p_value"] is None for r in rows)
    assert {r["not_valid"] for r in rows} == {"SE at rounding level"}
    cells = contract_cells([{"variants": [{"id": "e", "contracts": rows}]}])
    assert {r["statistic"] for r in cells["rows"]} == {"not valid: SE at rounding level"}
    assert {r["p"] for r in cells["rows"]} == {"-"}
    ok = adjust_contracts(contract_rows(_variant(0.05), {"at_least": 0.1}))
    assert ok[0]["not_valid"] is None and ok[0]["statistic"] == pytest.approx(7.8)


def test_a_results_json_written_before_the_check_is_checked_when_shown():
    legacy = {
        "effect": "e",
        "contract": "at_least",
        "expected": "AME >= 0.1",
        "estimate": 0.49,
        "std_error": 6.7e-18,
        "conf_low": 0.49,
        "conf_high": 0.49,
        "inference": "delta",
        "statistic": 7.3e16,
        "p_value": 0.0,
        "p_value_adj": 0.0,
        "verdict": "met",
    }
    cells = contract_cells([{"variants": [{"id": "e", "contracts": [legacy]}]}])
    assert cells["rows"][0]["statistic"] == "not valid: SE at rounding level"


def test_a_statement_whose_claim_fails_is_printed_with_its_reason_and_flagged():
    from fme.report.inputs.claims import count_claim
    from fme.report.inputs.quantities import RowSet
    from fme.report.present.context import unstated_flags

    sample = RowSet("rows of the seeded sample", 500, of=RowSet("rows of the data", 1500))
    claim = count_claim(RowSet("extrapolation points", 57, of=sample), RowSet("evaluated rows", 1247))
    assert not claim.holds and claim.text.startswith("cannot be stated: ")
    (row,) = unstated_flags("x", ["fine", f"the figure: {claim.text}"])
    assert row["status"] == FLAG and row["value"] == claim.text and row["effect"] == "x"
