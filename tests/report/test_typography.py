"""Typography and wording of report numbers: signed values never shown as '< 0.001', a single observed value
not shown as a range, units after a step of 1, the interactions' interval named."""

from __future__ import annotations

import pytest

from fme._utils.numfmt import fmt_est, fmt_num
from fme.report.present.context import interaction_cells
from fme.report.present.model_context import causes_phrase
from fme.report.present.sentences import step_phrase, unit_for


@pytest.mark.parametrize(
    "args, want",
    [
        ((0.0123, -0.0004, 0.00025), ("0.01230", "-0.00040", "0.00025")),  # an interval's upper end above zero
        ((3e-12, 1e-13, 5e-12), ("3.0e-12", "1.0e-13", "5.0e-12")),
        ((0.5, -4e-7, 1.0), ("0.50", "-4.0e-07", "1.00")),
        ((0.0, -0.1, 0.1), ("0.00", "-0.10", "0.10")),
    ],
)
def test_estimates_and_bounds_keep_their_sign(args, want):
    assert fmt_est(*args) == want


def test_magnitudes_keep_the_bound_form_and_signed_values_show_digits():
    assert fmt_num(0.0004, 3) == "< 0.001" and fmt_num(-0.0004, 3) == "> -0.001"
    assert fmt_num(4.5e-5, 4, signed=True) == "0.000045" and fmt_num(-4.5e-5, 4, signed=True) == "-0.000045"


@pytest.mark.parametrize(
    "unit, one, two",
    [
        ("pupils per teacher", "pupil per teacher", "pupils per teacher"),
        ("years", "year", "years"),
        ("cities", "city", "cities"),
        ("thousands of dollars", "thousands of dollars", "thousands of dollars"),
        ("%", "%", "%"),
        ("mm", "mm", "mm"),
        ("bus", "bus", "bus"),
        ("absorbance units", "absorbance unit", "absorbance units"),
        ("degrees Celsius", "degree Celsius", "degrees Celsius"),
    ],
)
def test_a_step_of_one_takes_the_singular_unit(unit, one, two):
    assert unit_for(unit, 1) == one and unit_for(unit, -1.0) == one and unit_for(unit, 2) == two


def test_step_phrase_reads_with_its_unit():
    assert step_phrase({"ptratio": 1}, True, {"ptratio": "pupils per teacher"}) == (
        "Raising ptratio by 1 pupil per teacher"
    )
    assert step_phrase({"ptratio": -2}, True, {"ptratio": "pupils per teacher"}) == (
        "Lowering ptratio by 2 pupils per teacher"
    )


def test_a_single_observed_value_is_not_a_range():
    causes = [
        {"kind": "outside range", "feature": "tax", "n": 3, "min": 1680.0, "max": 1680.0},
        {"kind": "outside range", "feature": "crim", "n": 2, "min": 0.00632, "max": 88.9762},
    ]
    assert causes_phrase(causes, 5) == (
        "outside the reference data in tax for 3: observed tax 1,680; outside the "
        "reference data in crim for 2: observed crim from 0.00632 to 88.9762"
    )


def test_the_interactions_name_the_fixed_model_interval():
    block = {
        "rows": [
            {
                "steps_a": "a + 1",
                "steps_b": "b + 1",
                "estimate": 0.5,
                "conf_low": 0.4,
                "conf_high": 0.6,
                "p_value": 1e-5,
                "share_above_tol": 1.0,
                "inference": "sample",
                "tol": 1e-8,
            }
        ]
    }
    cells = interaction_cells(block)
    assert cells["rows"][0]["inference"] == "fixed model (rows)"
    assert cells["sentences"][0].endswith(
        "(interval [0.40, 0.60], fixed model (rows)); 100.0% of the rows interact beyond the tolerance."
    )


@pytest.mark.parametrize(
    "args, want",
    [
        ((0.9999999, 0.9999999, 0.9999999), ("> 0.999", "> 0.999", "> 0.999")),  # a zero-width interval near 1
        ((0.9999999, 0.9999990, 1.0), ("> 0.9999", "> 0.9999", "1.0000")),
        ((0.953, 0.941, 0.965), ("0.953", "0.941", "0.965")),
        ((0.5, None, None), ("0.500", "-", "-")),
    ],
)
def test_an_nlm_average_shows_at_most_four_decimals_and_never_a_false_one(args, want):
    from fme._utils.numfmt import fmt_nlm

    assert fmt_nlm(*args) == want


def test_pdf_tables_never_hyphenate_feature_names_nor_run_them_into_the_next_cell(tmp_path):
    """The report's typst header on a table of narrow columns: 'LOWINC' stays whole (hyphenated it reads as
    another name, 'LOW-INC'), a long name breaks without a hyphen instead of overflowing its cell."""
    import shutil
    import subprocess
    from pathlib import Path

    typst = pytest.importorskip("typst")
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    header = (Path(__file__).resolve().parents[2] / "templates" / "partials" / "typst-header.typ").read_text()
    (tmp_path / "t.typ").write_text(
        header + "\n#table(columns: (8%, 8%, 30%), [LOWINC], [PERBLACK + 5], "
        "[an extraordinarily long explanation], [PERBLACKPERBLACK], [x], [y])\n"
    )
    typst.compile(str(tmp_path / "t.typ"), output=str(tmp_path / "t.pdf"))
    text = subprocess.run(
        ["pdftotext", "-layout", str(tmp_path / "t.pdf"), "-"], capture_output=True, text=True, check=True
    ).stdout
    lines = [line.split() for line in text.splitlines() if line.strip()]
    assert lines[0][:2] == ["LOWINC", "PERBLACK"]  # whole, each in its own cell
    assert "\u00ad" not in "".join(w for line in lines for w in line if w[:3].isupper())  # no hyphen in a name
    assert ["PERB", "x", "y"] in [[w.replace("\u200b", "") for w in line] for line in lines]  # broken, not run on


def test_every_number_in_the_pdf_has_the_same_minus_glyph(tmp_path):
    """typst draws an unescaped hyphen before a digit as U+2212 and pandoc's escaped one (a cell's start) as a
    hyphen: the PDF route's filter makes every hyphen that starts a number U+2212, and leaves words, dates and
    exponents alone."""
    import subprocess

    from fme.report.render.documents import TYPST_ESCAPE_LUA, pandoc_path

    (tmp_path / "f.lua").write_text(TYPST_ESCAPE_LUA, encoding="utf-8")
    (tmp_path / "m.md").write_text(
        "| a | b |\n|---|---|\n| -1.34 | \\[-1.58, -1.11\\] |\n\nAME -1.34 (CI -1.58 to "
        "-1.11); 2026-11-27, boston-svm-0815, 1.0e-07, x-1.\n",
        encoding="utf-8",
    )
    typ = subprocess.run(
        [
            pandoc_path(),
            str(tmp_path / "m.md"),
            "--from",
            "markdown",
            "--to",
            "typst",
            "--lua-filter",
            str(tmp_path / "f.lua"),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    flat = " ".join(typ.split())
    assert "[−1.34], [\\[−1.58, −1.11\\]]" in flat
    assert "AME −1.34 (CI −1.58 to −1.11); 2026-11-27, boston-svm-0815, 1.0e-07, x-1." in flat
