"""A matrix of model families, each built once into a report (families.py has the table of configs and features).

For every build: every claim of ``results.json`` verifies; every decimal number of the HTML and of the PDF maps
to a quantity of ``results.json`` shown in the same unit (the rule: checks.py); every table and figure names its
unit and its rows; every input's SHA-256 (the challenger's included) is in the report and in ``results.json``;
for three configs, a rebuild from another working directory through a relative config path is byte-identical.

A check that fails on a real fault of the report that is not fixed here is marked ``xfail(strict=True)`` with the
fault in its reason (:data:`KNOWN`): it turns into a failure once the fault is fixed, so the marker goes then.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("papermill")
pytest.importorskip("pypandoc")
pytest.importorskip("typst")
pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

from fme._utils.numfmt import fmt_est  # noqa: E402
from fme.report.inputs.quantities import Quantity  # noqa: E402

from . import checks  # noqa: E402
from .families import FAMILIES, NAMES  # noqa: E402

pytestmark = pytest.mark.slow

#: (check, config) -> why it fails today (a fault of the report, not of the check). Empty: every check holds on
#: every config; a fault found later is listed here with its reason until it is fixed (a strict xfail).
KNOWN: dict[tuple[str, str], str] = {}


def cases(check: str, names: tuple[str, ...] = NAMES) -> list:
    return [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN[(check, n)])) if (check, n) in KNOWN else n
        for n in names
    ]


def _listing(rows: list, limit: int = 40) -> str:
    shown = "\n".join(f"  {r}" for r in rows[:limit])
    return f"{len(rows)} found:\n{shown}" + (f"\n  ... and {len(rows) - limit} more" if len(rows) > limit else "")


# ------------------------------------------------------------------ the matrix itself
def test_every_listed_feature_has_a_config():
    assert len(FAMILIES) >= 16
    doc = __import__("tests.report.matrix.families", fromlist=["x"]).__doc__
    for name in NAMES:
        assert re.search(rf"^{re.escape(name)}\s", doc, flags=re.M), name
    for feature in (
        "Gaussian identity",
        "exposure",
        "offset",
        "Gamma",
        "var_weights",
        "bs()",
        "scikit-learn regressor",
        "string labels",
        "3-class",
        "Pipeline",
        "delta",
        "bootstrap",
        "over-dispersion",
        "challenger",
        "interactions",
        "contracts met",
        "not met",
        "change log",
        "learner and data levels",
        "paper-mode",
        "honest",
        "sample_size below the rows",
        "local cluster",
        "``scheduler:`` address",
    ):
        assert feature in " ".join(doc.split()), feature


# ------------------------------------------------------------------ (a) claims
@pytest.mark.parametrize("name", cases("claims"))
def test_every_claim_verifies(matrix, name):
    b = matrix.build(name)
    found = checks.claims(b.results)
    assert found, "results.json lists no claim"
    failed = [(c["kind"], c["cites"], c["text"]) for c in found if c["holds"] is not True]
    assert not failed, _listing(failed)


# ------------------------------------------------------------------ (b) numbers are quantities
@pytest.mark.parametrize("name", cases("html numbers"))
def test_html_numbers_are_quantities(matrix, name):
    b = matrix.build(name)
    bad = checks.unmapped_numbers(checks.html_scope(b.html), b.results)
    assert not bad, "decimal numbers of the HTML that are no quantity of results.json: " + _listing(bad)


@pytest.mark.parametrize("name", cases("pdf numbers"))
def test_pdf_numbers_are_quantities(matrix, name):
    b = matrix.build(name)
    assert b.pdf_path is not None and b.pdf_path.is_file()
    bad = checks.unmapped_numbers(checks.pdf_scope(checks.pdftotext(b.pdf_path)), b.results)
    assert not bad, "decimal numbers of the PDF that are no quantity of results.json: " + _listing(bad)


def _shown_everywhere(text: str, results: dict) -> list:
    """The AMEs (value and interval bounds, as the tables show them) that ``text`` does not print."""
    tokens = {tok.lstrip("+") for tok, _ in checks.decimal_tokens(text)}
    missing = []
    for g in results.get("effects") or []:
        for v in g.get("variants") or []:
            q = (v.get("quantities") or {}).get("ame")
            if q is None:
                continue
            for s in fmt_est(*Quantity.from_dict(q).display()):
                if "." in s and s.lstrip("+") not in tokens:
                    missing.append((q["id"], s))
    return missing


@pytest.mark.parametrize("name", cases("ames shown"))
def test_every_ame_quantity_is_shown_in_its_unit_in_html_and_pdf(matrix, name):
    """The other direction of the numbers check: each AME quantity, in its own unit, is printed by both documents
    (a table or sentence on another scale would print other digits)."""
    b = matrix.build(name)
    assert b.pdf_path is not None
    html = checks.html_scope(b.html)
    pdf = checks.pdf_scope(checks.pdftotext(b.pdf_path))
    missing = [("report.html",) + m for m in _shown_everywhere(html, b.results)]
    missing += [("report.pdf",) + m for m in _shown_everywhere(pdf, b.results)]
    assert not missing, _listing(missing)


# ------------------------------------------------------------------ (c) units and rows
_ROWS = re.compile(r"\bn = [\d,]+|\b[\d,]+ (?:[\w-]+ ){0,4}(?:rows|observations|points)\b|\bn\b|\brows\b", re.I)


def _units_by_string(results: dict) -> dict[str, set[str]]:
    """Each shown number string -> the units of the quantities shown so (value and bounds)."""
    out: dict[str, set[str]] = {}
    for q in checks.quantities(results):
        quantity = Quantity.from_dict(q)
        for s in fmt_est(*quantity.display()):
            if s != "-":
                out.setdefault(s, set()).add(quantity.unit.name)
    return out


def _unit_named(text: str, units: set[str], results: dict) -> bool:
    words = {u for u in units if u}
    for q in checks.quantities(results):
        if q["unit"]["name"] in words and q["unit"].get("short"):
            words.add(q["unit"]["short"])
    return any(w in text for w in words)


@pytest.mark.parametrize("name", cases("tables"))
def test_every_table_names_its_unit_and_rows(matrix, name):
    b = matrix.build(name)
    by_string = _units_by_string(b.results)
    inputs = checks.config_numbers(b.results.get("config") or {})  # a threshold or a step is no result
    bad = []
    for t in checks.html_tables(b.html):
        if not t["caption"]:
            bad.append(("no caption", t["header"][:4]))
            continue
        units = set()
        for cell in t["cells"]:
            for tok, _ in checks.decimal_tokens(cell.strip("[]")):
                kinds = by_string.get(tok.lstrip("+"), set()) if tok.lstrip("+") not in inputs else set()
                if len(kinds) == 1:  # the number is one of quantities of one unit only
                    units |= kinds
        if not units - {""}:
            continue
        around = t["caption"] + " | " + " | ".join(t["header"])
        if not _unit_named(around, units, b.results):
            bad.append(("unit not named", sorted(units), t["caption"][:90]))
        if not _ROWS.search(around):
            bad.append(("rows not named", t["caption"][:90]))
    assert not bad, _listing(bad)


#: Figures whose values are on the effects' scale (their caption must name the unit).
EFFECT_SCALE = ("fme", "came")


@pytest.mark.parametrize("name", cases("figures"))
def test_every_figure_names_its_unit_and_rows(matrix, name):
    b = matrix.build(name)
    kinds = {
        "fig-" + Path(f["svg"]).stem: f.get("kind", "")
        for g in b.results.get("effects") or []
        for v in g.get("variants") or []
        for f in v.get("figures") or []
        if f.get("svg")
    }
    from fme.report.analysis.typed import report_unit

    unit = report_unit(b.results)
    bad = []
    figures = checks.html_figures(b.html)
    assert figures, "no figure"
    for f in figures:
        if not f["caption"]:
            bad.append((f["id"], "no caption"))
            continue
        if not re.search(r"\bn = [\d,]+|\b[\d,]+ (?:[\w-]+ ){0,4}(?:rows|observations|points)\b", f["caption"]):
            bad.append((f["id"], "rows not named", f["caption"][:100]))
        if kinds.get(f["id"], "").startswith(EFFECT_SCALE) and unit.name:
            if unit.name not in f["caption"] and (unit.short or unit.name) not in f["caption"]:
                bad.append((f["id"], f"unit {unit.name!r} not named", f["caption"][:100]))
    assert not bad, _listing(bad)


# ------------------------------------------------------------------ (d) input hashes
@pytest.mark.parametrize("name", cases("hashes"))
def test_every_input_hash_is_in_the_report_and_results(matrix, name):
    b = matrix.build(name)
    text = "".join(checks.visible_text(b.html).split()).replace("\u200b", "")
    results = checks.results_text(b.out)
    hashes = b.build_info["hashes"]
    if FAMILIES[name].write.__name__ in ("ridge_bootstrap", "binary_strings"):
        assert "challenger" in hashes
    missing = [
        (label, where)
        for label, d in sorted(hashes.items())
        for where, body in (("report.html", text), ("results.json", results))
        if d["sha256"] not in body
    ]
    assert not missing, _listing(missing)


# ------------------------------------------------------------------ (e) rebuilds
REBUILT = ("ols-contracts", "binary-strings", "poisson-exposure")


@pytest.mark.parametrize("name", cases("rebuild", REBUILT))
def test_rebuild_elsewhere_through_a_relative_path_is_byte_identical(matrix, name, monkeypatch):
    from fme.report.build import build_report

    b = matrix.build(name)
    skip = {"analysis.ipynb", "kernel.log"}  # the executed notebook and the kernel's own log record the run
    before = {
        p.relative_to(b.out).as_posix(): p.read_bytes() for p in b.out.rglob("*") if p.is_file() and p.name not in skip
    }
    elsewhere = b.folder.parent / f"{name}-elsewhere"
    elsewhere.mkdir(exist_ok=True)
    monkeypatch.chdir(elsewhere)
    rel = Path(os.path.relpath(b.config, elsewhere))
    assert not rel.is_absolute() and rel.parts[0] == ".."
    res = build_report(rel, rel.parent / "c", force=True, log=lambda s: None, progress=False)
    out = Path(res["out_dir"]).resolve()
    assert out == b.out.resolve()
    after = {
        p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name not in skip
    }
    assert sorted(after) == sorted(before)
    differ = [k for k in sorted(before) if before[k] != after[k]]
    assert not differ, differ


# ------------------------------------------------------------------ what the matrix found beside its checks
def test_a_challenger_fitted_on_some_of_the_training_columns_is_bootstrapped(tmp_path):
    """As ridge-bootstrap, but the challenger reads x1 and x3 (the stepped features) of the training data's x1, x2
    and x3: each of its bootstrap refits fits on those two."""
    import joblib
    from sklearn.linear_model import LinearRegression

    from fme.report.analysis import run_effects
    from fme.report.inputs.config import load_config

    from .families import ridge_bootstrap

    ridge_bootstrap(tmp_path, {})
    d = pd.read_csv(tmp_path / "train.csv")
    joblib.dump(LinearRegression().fit(d[["x1", "x3"]], d["y"]), tmp_path / "challenger.joblib")
    cfg = load_config(tmp_path / "c.yaml")
    X = d[["x1", "x2", "x3"]]
    groups = run_effects(joblib.load(tmp_path / "model.joblib"), X, X, cfg, tmp_path / "out")
    assert [g["variants"][0]["challenger"]["difference_inference"].startswith("bootstrap") for g in groups] == [
        True,
        True,
    ]
