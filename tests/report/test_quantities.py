"""The typed core of the report: units, row sets, intervals and quantities, their words and their JSON form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fme.report.inputs.quantities import (
    COUNT,
    Interval,
    Quantity,
    RowSet,
    Unit,
    at_rounding_level,
    difference,
    interval_text,
    model_units,
    percentage_points,
    shown,
)
from fme.report.inputs.wording import count_words, singular, unit_after

SCHEMA = Path(__file__).resolve().parents[2] / "fme" / "report" / "schemas" / "results.schema.json"


@pytest.mark.parametrize(
    "plural, one",
    [
        ("extrapolation points", "extrapolation point"),
        ("pupils per teacher", "pupil per teacher"),
        ("absorbance units", "absorbance unit"),
        ("percentage points", "percentage point"),
        ("years", "year"),
        ("claims per policy-year", "claim per policy-year"),
        ("policy-years", "policy-year"),
        ("degrees Celsius", "degree Celsius"),
        ("thousands of dollars", "thousands of dollars"),
        ("%", "%"),
        ("mm", "mm"),
        ("MEDV", "MEDV"),
        ("evaluated rows", "evaluated row"),
        ("rows of the seeded sample", "row of the seeded sample"),
        ("cAME subspaces", "cAME subspace"),
        ("policies", "policy"),
        ("boxes", "box"),
        ("classes", "class"),
        ("status", "status"),
        ("people", "person"),
        ("extrapolation points left out", "extrapolation point left out"),
    ],
)
def test_singular_of_a_plural_noun_phrase_or_unit(plural, one):
    assert singular(plural) == one


def test_counts_and_amounts_take_the_number_of_their_noun():
    assert count_words(1, "extrapolation points") == "1 extrapolation point"
    assert count_words(0, "extrapolation points") == "0 extrapolation points"
    assert count_words(1500, "evaluated rows") == "1,500 evaluated rows"
    assert f"by 1 {unit_after('pupils per teacher', 1)}" == "by 1 pupil per teacher"
    assert f"by -1 {unit_after('absorbance units', -1.0)}" == "by -1 absorbance unit"
    assert f"by 2 {unit_after('absorbance units', 2)}" == "by 2 absorbance units"
    assert unit_after("", 1) == ""


def test_a_rowset_knows_its_lineage():
    data = RowSet("rows of the data", 1500)
    sample = RowSet("rows of the seeded sample", 500, of=data)
    eps = RowSet("extrapolation points", 57, of=sample)
    assert eps.within(sample) and eps.within(data) and not data.within(sample)
    assert eps.words() == "57 extrapolation points" and RowSet("rows", 1).words() == "1 row"


def test_a_quantity_shows_in_the_unit_the_reader_reads():
    pp = percentage_points("P(y = 1)")
    rows = RowSet("evaluated rows", 120)
    q = Quantity("e/ame", "AME of x1 + 1", 0.024, pp, rows, Interval(0.011, 0.037, 0.95, "delta"), 0.0066)
    assert shown(q) == "2.4" and interval_text(q) == "[1.1, 3.7]"
    assert shown(q, unit=True) == "2.4 percentage points"
    assert interval_text(q, brackets=False) == "95% CI 1.1 to 3.7, delta"
    one = Quantity("e/x", "x", 1.0, model_units("pupils per teacher"), rows)
    assert shown(one, unit=True) == "1.000 pupil per teacher"
    assert pp.header == " (pp)" and COUNT.header == ""


def test_a_difference_keeps_its_operands_unit_and_refuses_two_units():
    rows = RowSet("evaluated rows", 120)
    a = Quantity("a", "champion AME", 0.03, percentage_points(), rows)
    b = Quantity("b", "challenger AME", 0.006, percentage_points(), rows)
    d = difference(
        a,
        b,
        id="d",
        label="champion - challenger",
        value=0.024,
        interval=Interval(0.01, 0.038, 0.95, "paired bootstrap"),
    )
    assert d.unit == percentage_points() and shown(d) == "2.4"
    with pytest.raises(ValueError, match="units differ"):
        difference(a, Quantity("c", "raw", 0.1, Unit("probability"), rows), id="x", label="x", value=0.0)


def test_rounding_level_standard_errors():
    assert at_rounding_level(6.7e-18, 0.49)  # a quantity that does not vary
    assert at_rounding_level(0.0, 0.0) and at_rounding_level(None, 1.0) and at_rounding_level(float("nan"), 1.0)
    assert not at_rounding_level(0.0066, 0.024)
    assert not at_rounding_level(1e-9, 1e-6)  # small numbers, a real spread


def test_quantities_round_trip_through_json_and_validate_against_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    data = RowSet("rows of the data", 1500)
    q = Quantity(
        "e/ame",
        "AME",
        0.024,
        percentage_points("P(y = 1)"),
        RowSet("evaluated rows", 1247, of=data),
        Interval(0.011, float("nan"), 0.95, "bootstrap", "model uncertainty"),
        0.0066,
    )
    d = json.loads(json.dumps(q.to_dict()))
    jsonschema.validate(d, {**schema, "$ref": "#/$defs/quantity"})
    back = Quantity.from_dict(d)
    assert back.rows.of == data and back.interval.high is None and back.unit.scale == 100.0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**d, "unit": {"name": "pp"}}, {**schema, "$ref": "#/$defs/quantity"})
    # the schema forbids the unlabelled fixed-model interval beside the shown one
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"effects": [{"variants": [{"ci_low": 0.1, "ci_high": 0.2}]}]}, schema)
