"""Report layer units: markdown escaping through pandoc, number formatting, sentences, palette, notebook."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from fme._utils.numfmt import fmt_est, fmt_num, fmt_share
from fme.report.analysis.figures import PALETTE
from fme.report.present import sentences
from fme.report.present.context import effect_cells

REPO = Path(__file__).resolve().parents[2]
NASTY = [
    "<script>alert(1)</script>",
    "a|b",
    "x*y*",
    "$cost$",
    '"quoted"',
    "it's",
    "Größe µ",
    "_under_",
    "[link](x)",
    "# head",
    "`tick`",
    "1. item",
    "\\back",
]


def test_md_escape_is_literal_in_pandoc_html(tmp_path):
    pytest.importorskip("pypandoc")
    import html as htmllib

    from fme.report.render import md_escape, pandoc_path

    lines = [f"| {md_escape(s)} | {md_escape(s)} |" for s in NASTY]
    doc = "\n".join([md_escape(s) + "\n" for s in NASTY] + ["| a | b |", "|---|---|", *lines, ""])
    (tmp_path / "t.md").write_text(doc, encoding="utf-8")
    import subprocess

    out = subprocess.run(
        [pandoc_path(), "t.md", "-t", "html5"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    assert "<script" not in out
    text = htmllib.unescape(re.sub(r"<[^>]+>", "\n", out))
    for s in NASTY:
        assert text.count(s) >= 3, s  # paragraph + two table cells


@pytest.mark.parametrize(
    "x, d, want",
    [
        (0.0004, 3, "< 0.001"),
        (-0.0004, 3, "> -0.001"),
        (0.0, 3, "0.000"),
        (-0.0, 2, "0.00"),
        (12345.678, 1, "12,345.7"),
        (None, 2, "-"),
    ],
)
def test_fmt_num_no_false_zero(x, d, want):
    assert fmt_num(x, d) == want


def test_fmt_est_shares_decimals_of_halfwidth():
    assert fmt_est(1.27665, 1.19921, 1.35409) == ("1.277", "1.199", "1.354")
    assert fmt_est(-1.343, -1.578, -1.108) == ("-1.34", "-1.58", "-1.11")


@pytest.mark.parametrize(
    "part, total, want",
    [(0, 10, "0%"), (10, 10, "100%"), (1, 10000, "< 0.1%"), (9999, 10000, "> 99.9%"), (400, 506, "79.1%")],
)
def test_fmt_share_never_rounds_to_extremes(part, total, want):
    assert fmt_share(part, total) == want


def _variant(lo, hi, detector="envelope", n_ep=0):
    return {
        "ame": (lo + hi) / 2,
        "ci_low": lo,
        "ci_high": hi,
        "n": 50,
        "n_total": 50 + n_ep,
        "conf_level": 0.95,
        "sd": 1.0,
        "q25": 0.0,
        "q75": 1.0,
        "step_label": "x + 1",
        "detector": detector,
        "policy": None if detector is None else "exclude",
        "n_extrapolation": None if detector is None else n_ep,
        "steps": {"x": 1.0},
        "numeric": True,
        "nlm": False,
    }


@pytest.mark.parametrize(
    "lo, hi, word", [(0.5, 1.5, "raises"), (-1.5, -0.5, "lowers"), (-0.5, 1.5, "has no clear direction")]
)
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
    assert "no extrapolation points found" in sentences.effect_sentence(
        checked, effect_cells(checked), "y", "", "rows", {}
    )


def _luminance(hex_colour: str) -> float:
    rgb = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
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


# ------------------------------------------------------------------ §1.8 expected vs observed sign
from fme.report.inputs.specs import FLAG_DEFAULTS  # noqa: E402
from fme.report.present.context import report_id, sensitivity_rows, sign_agreement, with_eps_rows  # noqa: E402
from fme.report.present.flags import FLAG, flag_rows  # noqa: E402


@pytest.mark.parametrize(
    "expected, ame, lo, hi, observed, agree, differs",
    [
        ("+", 1.0, 0.5, 1.5, "+", "yes", False),  # whole CI above zero
        ("-", -1.0, -1.5, -0.5, "-", "yes", False),  # whole CI below zero
        ("+", -1.0, -1.5, -0.5, "-", "no", True),  # whole CI on the other side
        ("-", 1.0, 0.5, 1.5, "+", "no", True),
        ("+", 0.2, -0.1, 0.5, "+", "unclear", False),  # CI includes zero, point estimate on the expected side
        ("-", 0.2, -0.1, 0.5, "+", "unclear", True),  # CI includes zero, point estimate on the other side
        ("+", 0.3, 0.0, 0.6, "+", "unclear", False),  # a bound at exactly zero is not "entirely on one side"
        ("+", 0.3, None, None, "+", "unclear", False),  # no CI (n < 2)
        (None, 1.0, 0.5, 1.5, "+", "-", False),  # no expectation stated
    ],
)
def test_sign_agreement(expected, ame, lo, hi, observed, agree, differs):
    got = sign_agreement(expected, ame, lo, hi)
    assert (got["observed"], got["agree"], got["differs"]) == (observed, agree, differs)
    assert got["expected"] == (expected or "not stated")


@pytest.mark.parametrize(
    "expected, lo, hi, status",
    [("+", 0.5, 1.5, "ok"), ("-", 0.5, 1.5, FLAG), ("-", -0.5, 1.5, FLAG), ("+", -0.5, 1.5, "ok")],
)
def test_sign_flag_rule(expected, lo, hi, status):
    v = {**_variant(lo, hi), "expected_sign": expected}
    rows = [
        r
        for r in flag_rows(v, effect_cells(v), "x", FLAG_DEFAULTS)
        if r["rule"] == "observed sign differs from expected"
    ]
    assert len(rows) == 1 and rows[0]["status"] == status and rows[0]["threshold"] == f"expected {expected}"
    w = _variant(lo, hi)
    assert not [r for r in flag_rows(w, effect_cells(w), "x", FLAG_DEFAULTS) if "sign" in r["rule"]]


def test_report_id():
    assert (
        report_id("boston-svm", "325d49cebace9fc67d11a1831f6a7cac25853f9387e4af050f1a7d643b3d0bfc")
        == "boston-svm-325d49cebace"
    )


# ------------------------------------------------------------------ §1.6 / §1.7 sentences vs table cells
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _numbers_in_cells(rows: list[dict]) -> set[str]:
    return {m for r in rows for c in r.values() for m in _NUMBER.findall(str(c))}


def _sens_variant(rows):
    """A numeric effect whose AME at h/2, h, 2h is given as (ame, lo, hi, n)."""
    sens = [
        {
            "factor": f,
            "steps": {"x": f},
            "step_label": f"x + {f:g}",
            "n": n,
            "n_extrapolation": 3,
            "ame": a,
            "ci_low": lo,
            "ci_high": hi,
        }
        for f, (a, lo, hi, n) in zip((0.5, 1.0, 2.0), rows)
    ]
    return sens, sensitivity_rows({"sensitivity": sens}, "95%")


@pytest.mark.parametrize(
    "rows, what",
    [
        ([(0.51, 0.41, 0.61, 40), (1.02, 0.9, 1.14, 38), (2.1, 1.8, 2.4, 30)], None),  # all "raises"
        ([(0.05, -0.02, 0.12, 40), (0.31, 0.2, 0.42, 38), (0.7, 0.5, 0.9, 30)], "direction"),  # word changes
        ([(0.05, -0.02, 0.12, 40), (-0.31, -0.42, -0.2, 38), (-1234.5, -1500.25, -969.0, 30)], "sign"),  # sign flips
    ],
)
def test_sensitivity_sentence_only_on_change_and_numbers_are_cells(rows, what):
    sens, cells = _sens_variant(rows)
    assert [c["size"] for c in cells] == ["h/2", "h", "2h"]
    text = sentences.sensitivity_sentence(sens, cells)
    if what is None:
        assert text is None
        return
    assert ("sign of the AME" in text) == (what == "sign")
    for c in cells:
        assert f"({c['step']}) the AME is {c['ame']} (95% CI {c['ci_low']} to {c['ci_high']}; {c['direction']})" in text
    allowed = _numbers_in_cells(cells) | {"95"}
    for num in _NUMBER.findall(text):
        assert num in allowed, (num, text)


def test_sensitivity_direction_words():
    _, cells = _sens_variant([(0.05, -0.02, 0.12, 40), (0.3, 0.2, 0.4, 38), (-0.7, -0.9, -0.5, 30)])
    assert [c["direction"] for c in cells] == ["no clear direction", "raises", "lowers"]
    assert sensitivity_rows({"sensitivity": None}, "95%") is None  # categorical step


@pytest.mark.parametrize("n_ep", [21, 0])
def test_with_eps_phrase_numbers_are_cells(n_ep):
    v = {
        **_variant(5.1, 5.8, n_ep=n_ep),
        "with_eps": {"n": 50 + n_ep, "n_extrapolation": n_ep, "ame": 5.651, "ci_low": 5.31, "ci_high": 5.99},
    }
    cells = effect_cells(v)
    rows = with_eps_rows(v, cells)
    assert [r["n"] for r in rows] == ["50", f"{50 + n_ep}"] and [r["n_extrapolation"] for r in rows] == ["0", str(n_ep)]
    assert rows[0]["ame"] == cells["ame"] and rows[0]["ci"] == f"[{cells['ci_low']}, {cells['ci_high']}]"
    text = sentences.with_eps_phrase(rows[1], "rows", 7)
    allowed = _numbers_in_cells(rows) | {"95", "7"}
    for num in _NUMBER.findall(text):
        assert num in allowed, (num, text)
    if n_ep:
        assert f"the AME would be {rows[1]['ame']} (95% CI {rows[1]['ci_low']} to {rows[1]['ci_high']}" in text
    else:
        assert "no extrapolation points" in text
    assert with_eps_rows({**v, "with_eps": None}, cells) is None


def test_postprocess_adds_scope_to_th_but_not_thead():
    from fme.report.render.documents import _postprocess_html

    out = _postprocess_html(
        '<table><thead><tr><th>a</th><th style="x">b</th><th scope="row">c</th></tr></thead></table>'
    )
    assert "<thead>" in out and '"ead' not in out
    assert out.count('scope="col"') == 2 and out.count('scope="row"') == 1


# --------------------------------------------------------------------- renderer choice
def _fake_quarto(bin_dir: Path, log: Path) -> None:
    """A stand-in `quarto` that records its arguments and writes the requested output."""
    script = bin_dir / "quarto"
    script.write_text(
        "#!/usr/bin/env python3\n"
        "import sys, pathlib\n"
        f"pathlib.Path({str(log)!r}).open('a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "src = pathlib.Path(sys.argv[2])\n"
        "to = sys.argv[sys.argv.index('--to') + 1]\n"
        "if to == 'html':\n"
        "    src.with_suffix('.html').write_text('<table><thead><tr><th>a</th></tr></thead></table>')\n"
        "else:\n"
        "    src.with_suffix('.pdf').write_bytes(b'%PDF-1.7 fake')\n"
    )
    script.chmod(0o755)


def test_auto_renderer_uses_quarto_when_on_path(tmp_path, monkeypatch) -> None:
    from fme.report import render

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.txt"
    _fake_quarto(bin_dir, log)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    qmd = tmp_path / "report.qmd"
    qmd.write_text("# t\n")
    html, pdf, used = render.render_documents(qmd, {}, pdf=True, renderer="auto")
    assert used == "quarto"
    assert log.read_text().splitlines() == [
        "render report.qmd --to html -M embed-resources:true",
        "render report.qmd --to typst",
    ]
    assert pdf.read_bytes().startswith(b"%PDF")
    # the same accessibility post-processing as the pandoc route: header cells get a scope
    assert '<th scope="col">a</th>' in html.read_text() and "<thead>" in html.read_text()


def test_renderer_choice_is_validated(tmp_path, monkeypatch) -> None:
    from fme.report import render

    monkeypatch.setenv("PATH", str(tmp_path))  # no quarto (nor anything else) on PATH
    qmd = tmp_path / "report.qmd"
    qmd.write_text("# t\n")
    with pytest.raises(FileNotFoundError, match="quarto is not on PATH"):
        render.render_documents(qmd, {}, renderer="quarto")
    with pytest.raises(ValueError, match="renderer must be one of"):
        render.render_documents(qmd, {}, renderer="latex")


# ---------------------------------------------------------------- stability across subsamples (§1.7)
def _stab(ari_median, n_failed=0):
    st = {
        "subsamples": 20,
        "fraction": 0.5,
        "n_each": 253,
        "n_rows": 506,
        "ame_min": 5.137166,
        "ame_max": 6.094918,
        "ame_sd": 0.2231,
        "n_same_sign": 20,
        "root_split": "lstat",
        "n_leaves_full": 10,
        "n_refits": 20 - n_failed,
        "n_failed": n_failed,
        "errors": ["n_partitions=6 but the grown tree has only 3 leaves"] if n_failed else [],
    }
    if n_failed < 20:
        st.update(
            n_same_root=17,
            ari_median=ari_median,
            ari_min=0.2294,
            ari_max=0.5895,
            leaves_median=6.0,
            leaves_min=4,
            leaves_max=8,
        )
    return st


@pytest.mark.parametrize("ari, word", [(0.3601, "unstable"), (0.62, "moderately stable"), (0.91, "stable")])
def test_stability_rows_and_sentence_numbers_are_cells(ari, word):
    from fme.report.present.context import stability_cells

    sc = stability_cells(_stab(ari), 2)
    values = {r["quantity"]: r["value"] for r in sc["rows"]}
    assert values["First split (lstat in the full data)"] == "the same in 17 of 20 refits"
    assert values["Subspaces (leaves)"] == "full data 10; refits median 6.0 (range 4 to 8)"
    assert values["AME in the subsamples"] == "5.14 to 6.09 (SD 0.22); same sign as the AME in 20 of 20"
    assert "253 rows each (50.0% of the 506 evaluated rows; drawn" in values["Subsamples"]
    assert values["Refits that failed"] == "0"
    text = sentences.stability_sentence(sc["cells"], ari, 9)
    assert text.startswith(f"The subspaces are {word} across subsamples")
    assert ("with care" in text) == (word != "stable")
    allowed = _numbers_in_cells(sc["rows"]) | {"9"}
    for num in _NUMBER.findall(text):
        assert num in allowed, (num, text)


def test_stability_flag_and_failed_refits():
    v = {**_variant(5.1, 5.8), "stability": _stab(0.36)}
    flag = [r for r in flag_rows(v, effect_cells(v), "rm", FLAG_DEFAULTS) if r["rule"].startswith("partition unstable")]
    assert flag == [
        {
            "effect": "rm",
            "rule": "partition unstable across subsamples (median ARI)",
            "threshold": "< 0.5",
            "value": "0.360",
            "status": FLAG,
        }
    ]
    v["stability"] = _stab(0.8)
    rows = flag_rows(v, effect_cells(v), "rm", FLAG_DEFAULTS)
    assert [r["status"] for r in rows if r["rule"].startswith("partition")] == ["ok"]
    from fme.report.present.context import stability_cells

    sc = stability_cells(_stab(None, n_failed=20), 2)
    values = {r["quantity"]: r["value"] for r in sc["rows"]}
    assert "First split (lstat in the full data)" not in values
    assert values["Refits that failed"].startswith("20: n_partitions=6")
    assert "unknown" in sentences.stability_sentence(sc["cells"], None, 4)


# ------------------------------------------------------------------ the PDF says what the HTML says
MARKER_CELLS = [
    "+ (AME 5.43)",
    "- (AME -1.34)",
    "-",
    "+",
    "1. item",
    "2.",
    "= head",
    "/ term",
    "-1.34",
    "#x",
    "$cost$",
    "a|b",
    "Extrapolation points left out",
]


def test_typst_reads_no_cell_as_a_list_marker(tmp_path):
    pytest.importorskip("pypandoc")
    pytest.importorskip("typst")
    import shutil
    import subprocess

    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    from fme.report.render import md_escape, render_pdf

    rows = [f"| {md_escape(c)} | n |" for c in MARKER_CELLS]
    paras = [md_escape(c) + "\n" for c in MARKER_CELLS if c != "-"]  # pdftotext joins a line "-" to the next
    doc = "\n".join(paras + ["| Cell | n |", "|---|---:|", *rows, ""])
    (tmp_path / "report.qmd").write_text(doc, encoding="utf-8")
    pdf = render_pdf(tmp_path / "report.qmd")
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    text = text.replace("\u2212", "-").replace("\u00ad\n", "")
    lines = [" ".join(line.split()) for line in text.splitlines()]
    for cell in MARKER_CELLS:
        assert lines.count(cell) == (1 if cell == "-" else 2), (cell, lines)  # paragraph and table cell, literally
    assert not any(line.startswith(("1. (AME", "• ")) for line in lines)
    assert "•" not in text and "1. (AME" not in text


# ------------------------------------------------------------------ alt text, captions in the PDF
def _typst_pdf(tmp_path, qmd: str):
    pytest.importorskip("pypandoc")
    pytest.importorskip("typst")
    from fme.report.render import render_pdf

    (tmp_path / "report.qmd").write_text(qmd, encoding="utf-8")
    return render_pdf(tmp_path / "report.qmd")


def test_pdf_figures_carry_their_alt_text(tmp_path):
    from fme.report.render import attr_escape, md_escape
    from tests.report.pdf_struct import struct_elements

    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20" '
        'fill="#0072B2"/></svg>'
    )
    (tmp_path / "a.svg").write_text(svg, encoding="utf-8")
    alts = [
        'Scatter plot of "a|b" against $cost$: the AME is -1.34 (dashed line)',
        "Histogram of Größe µ with a back\\slash and (parentheses)",
    ]
    qmd = "\n".join(
        f'![Figure {i}: {md_escape(a)}](a.svg){{#fig-{i} fig-alt="{attr_escape(a)}" alt="{attr_escape(a)}"}}\n'
        for i, a in enumerate(alts, 1)
    )
    pdf = _typst_pdf(tmp_path, qmd)
    figures = [e for e in struct_elements(pdf.read_bytes()) if e["role"] == "Figure"]
    assert [f["alt"] for f in figures] == alts


def test_pdf_table_caption_never_alone_at_a_page_foot(tmp_path):
    """The caption sits above its table; with text filling the page up to it, it moves with the table."""
    import shutil
    import subprocess

    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    rows = "\n".join(f"| {i} | {i * 2} |" for i in range(60))
    orphans_possible = 0
    for words in range(40, 58):  # paragraphs of filler so that the caption lands near the page foot
        filler = "\n\n".join(" ".join(["word"] * 60) for _ in range(words // 2 + 1)) + "\n\n"
        filler += " ".join(["more"] * (20 * (words % 2))) + "\n\n"
        qmd = filler + "| Head A | Head B |\n|---|---:|\n" + rows + "\n\n: Table 9: CAPTIONTEXT of the table.\n"
        sub = tmp_path / f"w{words}"
        sub.mkdir()
        pdf = _typst_pdf(sub, qmd)
        n_pages = int(
            re.search(
                r"Pages:\s+(\d+)", subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
            ).group(1)
        )
        for page in range(1, n_pages + 1):
            text = subprocess.run(
                ["pdftotext", "-f", str(page), "-l", str(page), str(pdf), "-"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            if "CAPTIONTEXT" in text:
                assert "Head A" in text.split("CAPTIONTEXT", 1)[1], (words, page)
                assert re.search(r"^0\s*$", text.split("CAPTIONTEXT", 1)[1], flags=re.M), (words, page)
                orphans_possible += page > 1
    assert orphans_possible >= 1  # the sweep did push the table (and its caption) to the next page


# ------------------------------------------------------------------ precision, titles, layout
@pytest.mark.parametrize(
    "x, d, want",
    [
        (0.9999999979, 6, "0.999999998"),
        (-0.9999999979, 6, "-0.999999998"),
        (1.0, 6, "1.000000"),
        (0.99999999999999, 6, "< 1.000000"),
        (2.0000001, 6, "2.0000001"),
        (5.0004, 2, "5.00"),
        (12345.0001, 1, "12,345.0"),
    ],
)
def test_fmt_num_never_shows_a_whole_number_the_value_is_not(x, d, want):
    """At the decimals cap (6) a value is never shown as a whole number it is not; below the cap the CI's
    precision rules (5.0004 with a CI half-width of 0.3 is 5.00)."""
    assert fmt_num(x, d) == want


def test_anlm_interval_just_below_one_is_not_printed_as_one():
    v = {
        **_variant(0.5, 1.5),
        "nlm": True,
        "anlm": 0.9999999971,
        "anlm_ci_low": 0.9999999963,
        "anlm_ci_high": 0.9999999979,
        "median_nlm": 1.0,
        "share_linear": 1.0,
        "n_nlm_flat": 0,
        "n_nlm_constant": 0,
    }
    c = effect_cells(v)
    assert "1.000000" not in (c["anlm"], c["anlm_ci_low"], c["anlm_ci_high"])
    # at most 4 decimals (an NLM's integration error is rarely below 1e-6), and never a false 1
    assert (c["anlm"], c["anlm_ci_low"], c["anlm_ci_high"]) == ("> 0.9999", "> 0.9999", "> 0.9999")


def test_default_effect_title_uses_feature_names_as_written():
    from fme.report.present.context import effect_title

    group = {"id": "_b_radius__b_", "config": {"steps": {"<b>radius</b>": 1, "a|b": -2}}}
    assert effect_title(group) == "<b>radius</b> and a|b"
    assert effect_title({**group, "title": "Given"}) == "Given"


def test_effect_cells_nlm_method_median_and_share_beside_anlm():
    from fme.report.present.context import effect_cells

    base = {
        "ame": 1.0,
        "ci_low": 0.5,
        "ci_high": 1.5,
        "n": 10,
        "n_total": 12,
        "conf_level": 0.95,
        "sd": 1.0,
        "q25": 0.1,
        "q75": 2.0,
        "step_label": "x + 1",
        "detector": None,
        "n_extrapolation": None,
        "policy": "exclude",
    }
    nlm = {
        "nlm": True,
        "anlm": 0.8,
        "anlm_ci_low": 0.7,
        "anlm_ci_high": 0.9,
        "median_nlm": 0.95123,
        "share_linear": 0.6,
        "n_nlm_flat": 0,
        "n_nlm_constant": 0,
    }
    c = effect_cells({**base, **nlm, "nlm_method": "gauss-legendre", "nlm_nodes": 16})
    assert (c["anlm"], c["nlm_method"], c["median_nlm"], c["share_linear"]) == (
        "0.80",
        "gauss-legendre",
        "0.951",
        "60.0%",
    )
    assert effect_cells({**base, **nlm, "nlm_method": "exact", "nlm_nodes": None})["nlm_method"] == "exact"
    none = effect_cells({**base, "nlm": False})
    assert (none["anlm"], none["nlm_method"], none["median_nlm"], none["share_linear"]) == (
        "-",
        "not computed",
        "-",
        "-",
    )


# ---------------------------------------------------------------- one formatter for tables, sentences and figures
@pytest.mark.parametrize(
    "x, kwargs, want",
    [
        (0.5, {}, "0.5"),
        (30, {}, "30"),
        (1e-7, {}, "1e-07"),
        (1234567.891, {}, "1.23457e+06"),
        (2.5, {"digits": 4, "sign": True, "thousands": True}, "+2.5"),
        (-1234.5678, {"digits": 6, "thousands": True}, "-1,234.57"),
        (14.438345, {"digits": 5}, "14.438"),
        (None, {}, "-"),
    ],
)
def test_fmt_g_is_the_general_form(x, kwargs, want):
    from fme._utils.numfmt import fmt_g

    assert fmt_g(x, **kwargs) == want


def test_fmt_percent_rounds_plainly_and_signs_differences():
    from fme._utils.numfmt import fmt_percent

    assert [fmt_percent(s) for s in (0.0, 0.12345, 0.99951, 1.0, None)] == ["0.0%", "12.3%", "100.0%", "100.0%", "-"]
    assert (
        fmt_percent(0.015, sign=True, suffix=" pp") == "+1.5 pp"
        and fmt_percent(-0.2, sign=True, suffix=" pp") == "-20.0 pp"
    )


def test_figures_print_missing_values_as_the_tables_do():
    """plotting's fmt_num/fmt_p are numfmt's fmt_sig/p_phrase: a figure's missing number is '-' and its missing
    p-value 'p undefined', as in the tables and sentences (they were 'NA' and 'p = NA')."""
    from fme._utils.numfmt import count, fmt_sig, p_phrase
    from fme.plotting._common import fmt_num, fmt_p

    assert fmt_num is fmt_sig and fmt_p is p_phrase
    assert [fmt_sig(x) for x in (float("nan"), None, 0.0, 1234.5678, 0.000123456, -2.0)] == [
        "-",
        "-",
        "0",
        "1,235",
        "0.000123",
        "-2.00",
    ]
    assert fmt_sig(0.1, trim=True) == "0.1" and fmt_sig(float("inf")) == "-"
    assert [fmt_p(p) for p in (None, float("nan"), 0.0004, 0.0123)] == [
        "p undefined",
        "p undefined",
        "p < 0.001",
        "p = 0.012",
    ]
    assert (count(1, "point"), count(2, "point"), count(1234, "subspace"), count(2, "leaf", "leaves")) == (
        "1 point",
        "2 points",
        "1,234 subspaces",
        "2 leaves",
    )


def test_stabilise_replaces_the_machine_paths(tmp_path):
    import nbformat

    from fme.report._notebook import stabilise

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell('config_path = "/home/u/proj/reports/c.yaml"\\nout_dir = "/tmp/x/.r.partial"')
    cell.metadata["tags"] = ["injected-parameters"]
    cell.outputs = [
        nbformat.v4.new_output(
            "stream", name="stderr", text="/venv/lib/python3.11/site-packages/fme/x.py:1: Warning\\n"
        )
    ]
    nb.cells.append(cell)
    nb.metadata["papermill"] = {
        "parameters": {"config_path": "/home/u/proj/reports/c.yaml"},
        "output_path": "/tmp/x/.r.partial/analysis.ipynb",
    }
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, path)
    stabilise(
        path,
        {
            "/tmp/x/.r.partial": "<report folder>",
            "/home/u/proj/reports": "<config folder>",
            "/venv": "<python>",
            "/home/u": "<home>",
        },
    )
    text = path.read_text(encoding="utf-8")
    assert "/home/u" not in text and "/tmp/x" not in text and "/venv" not in text
    assert "<config folder>/c.yaml" in text and "<report folder>/analysis.ipynb" in text
    assert "<python>/lib/python3.11" in text
