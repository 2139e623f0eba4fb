"""Report layer units: markdown escaping through pandoc, number formatting, sentences, palette, notebook."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fme.report import sentences
from fme.report.context import effect_cells
from fme.report.figures import PALETTE
from fme.report.formatting import fmt_est, fmt_num, fmt_share

REPO = Path(__file__).resolve().parents[1]
NASTY = ['<script>alert(1)</script>', 'a|b', 'x*y*', '$cost$', '"quoted"', "it's", 'Größe µ', '_under_', '[link](x)',
         '# head', '`tick`', '1. item', '\\back']


def test_md_escape_is_literal_in_pandoc_html(tmp_path):
    pytest.importorskip("pypandoc")
    import html as htmllib

    from fme.report.render import md_escape, pandoc_path

    lines = [f"| {md_escape(s)} | {md_escape(s)} |" for s in NASTY]
    doc = "\n".join([md_escape(s) + "\n" for s in NASTY] + ["| a | b |", "|---|---|", *lines, ""])
    (tmp_path / "t.md").write_text(doc, encoding="utf-8")
    import subprocess

    out = subprocess.run([pandoc_path(), "t.md", "-t", "html5"], cwd=tmp_path, capture_output=True, text=True,
                         check=True).stdout
    assert "<script" not in out
    text = htmllib.unescape(re.sub(r"<[^>]+>", "\n", out))
    for s in NASTY:
        assert text.count(s) >= 3, s  # paragraph + two table cells


@pytest.mark.parametrize("x, d, want", [(0.0004, 3, "< 0.001"), (-0.0004, 3, "> -0.001"), (0.0, 3, "0.000"),
                                        (-0.0, 2, "0.00"), (12345.678, 1, "12,345.7"), (None, 2, "-")])
def test_fmt_num_no_false_zero(x, d, want):
    assert fmt_num(x, d) == want


def test_fmt_est_shares_decimals_of_halfwidth():
    assert fmt_est(1.27665, 1.19921, 1.35409) == ("1.277", "1.199", "1.354")
    assert fmt_est(-1.343, -1.578, -1.108) == ("-1.34", "-1.58", "-1.11")


@pytest.mark.parametrize("part, total, want", [(0, 10, "0%"), (10, 10, "100%"), (1, 10000, "< 0.1%"),
                                               (9999, 10000, "> 99.9%"), (400, 506, "79.1%")])
def test_fmt_share_never_rounds_to_extremes(part, total, want):
    assert fmt_share(part, total) == want


def _variant(lo, hi, detector="envelope", n_ep=0):
    return {"ame": (lo + hi) / 2, "ci_low": lo, "ci_high": hi, "n": 50, "n_total": 50 + n_ep, "conf_level": 0.95,
            "sd": 1.0, "q25": 0.0, "q75": 1.0, "step_label": "x + 1", "detector": detector,
            "policy": None if detector is None else "exclude", "n_extrapolation": None if detector is None else n_ep,
            "steps": {"x": 1.0}, "numeric": True, "nlm": False}


@pytest.mark.parametrize("lo, hi, word", [(0.5, 1.5, "raises"), (-1.5, -0.5, "lowers"),
                                          (-0.5, 1.5, "has no clear direction")])
def test_direction_word_only_when_ci_excludes_zero(lo, hi, word):
    v = _variant(lo, hi)
    text = sentences.effect_sentence(v, effect_cells(v), "y", "", "rows", {})
    assert word in text
    others = {"raises", "lowers", "has no clear direction"} - {word}
    assert not any(o in text for o in others)


def test_unchecked_is_never_zero_excluded():
    v = _variant(0.5, 1.5, detector=None)
    cells = effect_cells(v)
    text = sentences.effect_sentence(v, cells, "y", "", "rows", {})
    assert "not checked for extrapolation" in text and "0 left out" not in text
    assert cells["n_extrapolation"] == "not checked"
    checked = _variant(0.5, 1.5, n_ep=0)
    assert "no extrapolation points found" in sentences.effect_sentence(checked, effect_cells(checked), "y", "",
                                                                        "rows", {})


def _luminance(hex_colour: str) -> float:
    rgb = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


@pytest.mark.parametrize("name", sorted(PALETTE))
def test_palette_contrast_against_white(name):
    ratio = (1.05) / (_luminance(PALETTE[name]) + 0.05)
    assert ratio >= 3.0, (name, ratio)


def test_text_colours_in_css_meet_aa():
    css = (REPO / "templates" / "report.css").read_text()
    for var in ("--text", "--muted", "--accent"):
        colour = re.search(rf"{var}: (#[0-9a-fA-F]{{6}})", css).group(1)
        assert 1.05 / (_luminance(colour) + 0.05) >= 4.5, var


def test_notebook_parameters():
    papermill = pytest.importorskip("papermill")
    params = papermill.inspect_notebook(str(REPO / "templates" / "analysis.ipynb"))
    assert set(params) == {"config_path", "out_dir"}
    assert all(p["help"] for p in params.values())
