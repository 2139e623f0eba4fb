"""The matrix's checks on one built report: claims, numbers against quantities, units and rows, input hashes.

Numbers against quantities (:func:`unmapped_numbers`), the rule:

* **Which text.** The visible text of the HTML (style, script and svg elements removed, entities decoded) and
  the text of the PDF (``pdftotext -layout``, minus signs and zero-width break points normalised), from the
  first section heading ("Identity and sign-off") up to the "Reproducibility" heading. Left out: the title block
  before it (report ID, package versions, environment) and the Reproducibility appendix after it (hashes,
  versions, environment, the config's text and the resolved config as JSON): none of them is a result.
* **Which numbers.** Every *decimal* number: digits with a decimal point (thousands separators, a sign, an
  exponent and a trailing % allowed), not part of a dotted run such as a version 6.18.44. Whole numbers (counts,
  ranks, table and figure numbers, years) are not checked here.
* **What maps.** A number maps when its text is one of the strings a quantity of ``results.json`` is shown as, in
  the quantity's own unit (its ``unit.scale`` applied, so a probability shown as 0.024 does not map to a
  quantity in percentage points that reads 2.4): the value and the interval bounds as
  :func:`fme._utils.numfmt.fmt_est` writes them (:func:`fme._utils.numfmt.fmt_nlm` for an NLM; the bounds of a
  value written with fixed decimals in those, :func:`fme.report.inputs.quantities.written_bounds`), the standard
  error with the value's decimals (and as an interval table writes it,
  :func:`fme.report.inputs.quantities.written_se`), and the numbers written in the quantity's label (the step of
  "AME of x2 - 0.5"), and the value in the quantity's own ``form``
  (:func:`fme.report.inputs.quantities.written`: a p-value as ``< 0.001``, a share of rows as ``14.0%``, a data
  range to 6 significant digits). Quantities are found anywhere in ``results.json`` (a mapping with ``id``,
  ``value``, ``unit`` and ``rows``). A number the config itself gives (a step, a flag threshold, a contract bound,
  ``conf_level``), printed as the config gives it, maps too: it is an input, not a result. Nothing else maps.
"""

from __future__ import annotations

import html as htmllib
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fme._utils.numfmt import fmt_est, fmt_nlm, fmt_num
from fme.report.inputs.claims import KINDS
from fme.report.inputs.quantities import Quantity, written, written_bounds, written_se

__all__ = [
    "quantities",
    "claims",
    "displayed",
    "mapped_strings",
    "decimal_tokens",
    "html_scope",
    "pdf_scope",
    "unmapped_numbers",
    "config_numbers",
    "visible_text",
    "results_text",
    "html_tables",
    "html_figures",
    "pdftotext",
]

_DECIMAL = re.compile(
    r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)\.\d+(?:e[-+]?\d+)?%?(?![\w]|\.\d)",
)


def _walk(value: Any) -> Iterator[dict]:
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)


def quantities(results: dict) -> list[dict]:
    """Every quantity of ``results.json`` (a mapping with ``id``, ``value``, ``unit`` and ``rows``)."""
    return [d for d in _walk(results) if {"id", "value", "unit", "rows"} <= set(d)]


def claims(results: dict) -> list[dict]:
    """Every claim of ``results.json`` (a mapping with a known ``kind``, ``cites`` and ``holds``)."""
    return [d for d in _walk(results) if {"kind", "cites", "holds"} <= set(d) and d["kind"] in KINDS]


def _numbers_in(text: str) -> set[str]:
    return {t.lstrip("+") for t in re.findall(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?", text)}


def displayed(q: dict) -> set[str]:
    """The strings a quantity is shown as (see the module docstring)."""
    quantity = Quantity.from_dict(q)
    v, lo, hi = quantity.display()
    out: set[str] = set()
    triples = [fmt_est(v, lo, hi)]
    if "NLM" in quantity.label:
        triples.append(fmt_nlm(v, lo, hi))
    for triple in triples:
        out.update(s for s in triple if s != "-")
    if quantity.std_error is not None and v is not None:
        text = fmt_est(v, lo, hi)[0]
        decimals = len(text.split(".")[1]) if "." in text else 0
        out.add(fmt_num(float(quantity.std_error) * quantity.unit.scale, decimals))
    out |= _numbers_in(quantity.label)
    out.update(tok for tok, _ in decimal_tokens(written(quantity)))  # its form: '< 0.001', '14.0%', '9.09959'
    out.update(s for s in written_bounds(quantity) if s != "-")  # the bounds of a 'fixed:<decimals>' value
    if quantity.std_error is not None:  # an interval table's SE: in the interval's decimals
        out.add(written_se(quantity))
    return out


def config_numbers(value: Any) -> set[str]:
    """The numbers a config gives (its steps, thresholds, bounds), as it may print them."""
    out: set[str] = set()
    if isinstance(value, bool):
        return out
    if isinstance(value, (int, float)):
        out |= {str(value), f"{value:g}", f"{value:,}"}
    elif isinstance(value, dict):
        for v in value.values():
            out |= config_numbers(v)
    elif isinstance(value, list):
        for v in value:
            out |= config_numbers(v)
    return out


def mapped_strings(results: dict) -> set[str]:
    """Every number string a quantity of ``results`` is shown as, and the config's own numbers."""
    out: set[str] = set()
    for q in quantities(results):
        out |= displayed(q)
    out |= config_numbers(results.get("config") or {})
    return {s.lstrip("+") for s in out}


def decimal_tokens(text: str) -> list[tuple[str, str]]:
    """(number, its context) for every decimal number of ``text``."""
    flat = " ".join(text.split())
    return [(m.group(0), flat[max(0, m.start() - 60) : m.end() + 30]) for m in _DECIMAL.finditer(flat)]


def visible_text(html: str) -> str:
    body = re.sub(r"<(style|svg|script)\b.*?</\1>", " ", html, flags=re.S)
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", body))


def html_scope(html: str) -> str:
    """The visible text from the first section heading to the Reproducibility heading."""
    start = re.search(r'<h1 id="', html)
    end = html.find('<h1 id="reproducibility"')
    assert start is not None and end > start.start(), "no section headings or no Reproducibility section"
    return visible_text(html[start.start() : end])


def pdftotext(pdf: Path) -> str:
    if shutil.which("pdftotext") is None:
        import pytest

        pytest.skip("pdftotext (poppler-utils) is not installed")
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    return text.replace("\u2212", "-").replace("\u200b", "")


def pdf_scope(text: str) -> str:
    """The PDF's text from the "Identity and sign-off" heading to the "Reproducibility" heading (a line of its own)."""
    lines = text.splitlines()
    heads = [i for i, line in enumerate(lines) if re.fullmatch(r"\s*(\d+\.?\s+)?Reproducibility\s*", line)]
    starts = [i for i, line in enumerate(lines) if re.fullmatch(r"\s*(\d+\.?\s+)?Identity and sign-off\s*", line)]
    assert heads and starts, "no 'Identity and sign-off' or 'Reproducibility' heading in the PDF text"
    return "\n".join(lines[starts[0] : heads[-1]])


def unmapped_numbers(text: str, results: dict) -> list[tuple[str, str]]:
    """The decimal numbers of ``text`` that map to no quantity of ``results`` (see the module docstring)."""
    ok = mapped_strings(results)
    return [(tok, ctx) for tok, ctx in decimal_tokens(text) if tok.lstrip("+") not in ok]


# ------------------------------------------------------------------ tables and figures
def _cells(fragment: str) -> list[str]:
    return [" ".join(visible_text(c).split()) for c in re.findall(r"<t[hd]\b.*?</t[hd]>", fragment, flags=re.S)]


def html_tables(html: str) -> list[dict]:
    """Each ``<table>``: its caption, header cells, body cells (visible text)."""
    out = []
    for t in re.findall(r"<table\b.*?</table>", html, flags=re.S):
        cap = re.search(r"<caption\b.*?</caption>", t, flags=re.S)
        head = re.search(r"<thead\b.*?</thead>", t, flags=re.S)
        body = re.search(r"<tbody\b.*?</tbody>", t, flags=re.S)
        out.append(
            {
                "caption": " ".join(visible_text(cap.group(0)).split()) if cap else "",
                "header": _cells(head.group(0)) if head else [],
                "cells": _cells(body.group(0) if body else t),
            }
        )
    return out


def html_figures(html: str) -> list[dict]:
    """Each ``<figure>``: its id, caption and alt text."""
    out = []
    for f in re.findall(r"<figure\b.*?</figure>", html, flags=re.S):
        fid = re.search(r'id="([^"]+)"', f)
        cap = re.search(r"<figcaption\b.*?</figcaption>", f, flags=re.S)
        alt = re.search(r'alt="([^"]*)"', f)
        out.append(
            {
                "id": fid.group(1) if fid else "",
                "caption": " ".join(visible_text(cap.group(0)).split()) if cap else "",
                "alt": htmllib.unescape(alt.group(1)) if alt else "",
            }
        )
    return out


def results_text(out: Path) -> str:
    return (out / "results.json").read_text(encoding="utf-8")


def load(out: Path) -> dict:
    return json.loads(results_text(out))
