"""Tables of AMEs name their unit and the rows each AME is over, in their caption (the flags, the plausibility
check, the effect contracts, each effect's confidence intervals and the change log)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fme.report.inputs.quantities import Unit, model_units, percentage_points
from fme.report.present.table_scope import changes_scope, rows_words, table_scope, unit_words

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_one_count_for_every_effect_is_said_once_and_in_the_number_it_takes():
    assert rows_words([("x1", 300), ("x2", 300)]) == "over the 300 evaluated rows"
    assert rows_words([("x1", 1)]) == "over the 1 evaluated row"
    assert rows_words([("x1", 1500)]) == "over the 1,500 evaluated rows"


def test_different_counts_are_given_effect_by_effect_in_the_tables_order():
    assert rows_words([("x2", 261), ("x1", 258), ("x2", 261)]) == (
        "each over its effect's evaluated rows: 261 for x2, 258 for x1"
    )


@pytest.mark.parametrize(
    ("unit", "words"),
    [
        (percentage_points("P(yes)"), "percentage points"),
        (model_units("EUR", "y"), "EUR"),
        (model_units("", "y"), "the model's prediction units"),
        (Unit("claims per policy-year"), "claims per policy-year"),
    ],
)
def test_the_unit_is_the_reports_one_effect_scale_unit(unit, words):
    assert unit_words(unit) == words
    assert table_scope("AMEs and CIs", unit, [("x", 300)]) == f"AMEs and CIs in {words}, over the 300 evaluated rows."


def test_the_change_log_names_the_unit_and_that_each_report_has_its_own_rows():
    assert changes_scope(model_units("EUR", "y")) == (
        "AMEs, CIs and ΔAME in EUR, each AME over the evaluated rows of its own report."
    )
    assert "in percentage points," in changes_scope(percentage_points("P(yes)"))


def test_a_table_without_effects_gets_no_scope_sentence():
    assert table_scope("AMEs and CIs", model_units("EUR"), []) == ""


def test_the_caption_keys_of_the_tables_follow_the_template():
    """Each table's caption line places its scope sentence (so a rendered caption carries it)."""
    report = (TEMPLATES / "report.qmd.j2").read_text(encoding="utf-8")
    intervals = (TEMPLATES / "partials" / "effect-intervals.qmd.j2").read_text(encoding="utf-8")
    changes = (TEMPLATES / "partials" / "changelog.qmd.j2").read_text(encoding="utf-8")
    for key, text in (
        ("table_contracts", report),
        ("table_flags", report),
        ("table_plausibility", report),
        ("v.table_intervals", intervals),
        ("table_changes", changes),
    ):
        (line,) = [s for s in text.splitlines() if s.startswith(f": Table {{{{ {key} }}}}:")]
        scope = {
            "table_contracts": "contracts_scope",
            "table_flags": "flags_scope",
            "table_plausibility": "plausibility_scope",
            "v.table_intervals": "v.intervals_scope",
            "table_changes": "changes_scope",
        }[key]
        assert re.search(rf"\{{\{{ {re.escape(scope)} \}}\}}$", line), line
