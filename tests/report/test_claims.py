"""Each claim kind's verifier and its one wording template (singular/plural from the quantities)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fme.report.inputs.claims import (
    KINDS,
    Claim,
    TestRecord,
    contract_verdict,
    count_claim,
    direction,
    enters_predictions,
    not_computed,
    range_claim,
    statistic_cell,
    test_claim,
    test_validity,
)
from fme.report.inputs.quantities import Interval, Quantity, RowSet, Unit, percentage_points

SCHEMA = Path(__file__).resolve().parents[2] / "fme" / "report" / "schemas" / "results.schema.json"
ROWS = RowSet("evaluated rows", 120)


def _q(value, low, high, kind="delta", se=None, unit=None):
    return Quantity("e/ame", "AME", value, unit or percentage_points(), ROWS, Interval(low, high, 0.95, kind), se)


def test_direction_only_when_the_interval_excludes_zero_and_names_its_kind():
    assert direction(_q(0.02, 0.01, 0.03)).text == "raises (delta interval)"
    assert direction(_q(-0.02, -0.03, -0.01, "bootstrap")).outcome == "lowers"
    c = direction(_q(0.02, -0.01, 0.05, "fixed model"))
    assert c.outcome == "no clear direction" and "fixed model" in c.text
    assert direction(Quantity("x", "x", 0.1, Unit(""), ROWS)).outcome == "no clear direction"


GLOBAL = dict(
    name="Global test that all leaf cAMEs are equal (Wald, chi-squared)",
    differ="the leaves' cAMEs differ",
    no_difference="the data do not show that the leaves' cAMEs differ",
)


def test_a_valid_test_states_its_result():
    t = TestRecord("p/global", 12.5, 0.002, 2, (0.1, 0.12), 0.5, (40, 41, 39))
    c = test_claim(t, 0.05, **GLOBAL)
    assert c.kind == "test_result" and c.outcome == "differ"
    assert c.text.endswith("the leaves' cAMEs differ at the 5% level") and "with 2 df" in c.text
    c = test_claim(TestRecord("p/global", 1.0, 0.6, 2, (0.1,), 0.5, (40, 41)), 0.05, **GLOBAL)
    assert c.outcome == "no difference"


@pytest.mark.parametrize(
    "record, reason",
    [
        (TestRecord("g", float("nan"), float("nan"), 0), "the statistic is undefined"),
        (TestRecord("g", None, None), "the statistic is undefined"),
        (
            TestRecord(
                "g", 302.0000000137, 0.0, 1, note="the contrasts lie in the span of the Jacobian: not identified"
            ),
            "not identified",
        ),
        (TestRecord("g", 5.0, 0.02, 1, (0.1,), 0.5, (1, 30)), "fewer than 2 rows"),
        (TestRecord("g", 7.3e16, 0.0, 1, (6.7e-18,), 0.49, (30, 30)), "SE at rounding level"),
    ],
)
def test_an_invalid_test_is_never_a_verdict(record, reason):
    assert reason in test_validity(record)
    c = test_claim(record, 0.05, **GLOBAL)
    assert c.kind == "test_not_valid" and c.outcome == "not valid"
    assert "cannot be computed here: " in c.text and reason in c.text
    assert "differ at" not in c.text and "ok" not in c.text.split()


def test_a_count_names_rows_of_one_lineage():
    data = RowSet("rows of the data", 1500)
    left_out = RowSet("extrapolation points", 253, of=data)
    assert count_claim(left_out, data, "left out").text == "253 of the 1,500 rows of the data left out"
    sample = RowSet("rows of the seeded sample", 500, of=data)
    in_sample = RowSet("extrapolation points", 57, of=sample)
    bad = count_claim(in_sample, RowSet("evaluated rows", 1500))
    assert not bad.holds and bad.text.startswith("cannot be stated: 57 extrapolation points are not counted")
    assert count_claim(RowSet("extrapolation points", 1, of=data), data).text == "1 of the 1,500 rows of the data"
    one = RowSet("extrapolation points", 1)
    assert count_claim(one, one).text == "1 extrapolation point"


def test_a_range_says_whose_range_it_is():
    sample = RowSet("rows of the seeded sample", 500)
    c = range_claim("x", 0.1, 4.9, RowSet("extrapolation points", 57, of=sample))
    assert c.text == "x from 0.1 to 4.9 over the 57 extrapolation points"
    assert range_claim("x", 2.0, 2.0, RowSet("extrapolation points", 1)).text == "x 2 over the 1 extrapolation point"
    assert not range_claim("x", None, None, sample).holds


def test_enters_predictions():
    assert (
        enters_predictions("t", "exposure", True).text == "predictions use each row's exposure (column t), as observed"
    )
    assert enters_predictions("w", "weight", False).outcome == "not used"
    assert not enters_predictions("t", "exposure", None).holds


def test_contract_verdicts_need_one_unit_and_a_real_standard_error():
    q = _q(0.49, 0.49, 0.49, se=6.7e-18, unit=Unit("probability"))
    c = contract_verdict(q, Unit("probability"), "met", 7.3e16, 0.0)
    assert c.outcome == "not valid" and c.text == "not valid: SE at rounding level"
    assert statistic_cell(7.3e16, False, c.reason) == "not valid: SE at rounding level"
    ok = contract_verdict(_q(0.02, 0.01, 0.03, se=0.005), percentage_points(), "met", 4.0, 0.0001)
    assert ok.holds and ok.text == "met (p < 0.001)"
    wrong = contract_verdict(_q(0.02, 0.01, 0.03, se=0.005), Unit("probability"), "met", 4.0, 0.0001)
    assert not wrong.holds and wrong.text.startswith("cannot be stated: the bound is in probability")


def test_not_computed_and_unknown_kinds():
    assert (
        not_computed("the interactions", "a single numeric feature").text
        == "the interactions: not computed: a single numeric feature"
    )
    with pytest.raises(ValueError, match="unknown claim kind"):
        Claim("causes", (), True, "x")


def test_every_kind_serialises_and_validates():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert set(schema["$defs"]["claim"]["properties"]["kind"]["enum"]) == set(KINDS)
    claims = [
        direction(_q(0.02, 0.01, 0.03)),
        test_claim(TestRecord("g", None, None), 0.05, **GLOBAL),
        count_claim(RowSet("a", 1, of=ROWS), ROWS),
        not_computed("x", "y"),
    ]
    for c in claims:
        d = json.loads(json.dumps(c.to_dict()))
        jsonschema.validate(d, {**schema, "$ref": "#/$defs/claim"})
        assert Claim.from_dict(d) == c
