"""Build a few matrix configs and list the decimals of their HTML that map to no quantity, by section.

A working aid for the number check of ``test_matrix.py`` without building the whole matrix::

    PYTHONPATH=$PWD python -m tests.report.matrix.unmapped ols-contracts binary-strings

Each config is built once into a temporary folder (10-50 s each); the output lists, per section of the report
(its heading id), every decimal number that :func:`tests.report.matrix.checks.mapped_strings` does not know,
with its context, and the count of unmapped numbers of the PDF text.
"""

from __future__ import annotations

import collections
import re
import sys
import tempfile
import time
from pathlib import Path

from . import checks
from .builds import Matrix

__all__ = ["unmapped_by_section", "main"]


def unmapped_by_section(html: str, results: dict) -> dict[str, list[tuple[str, str]]]:
    """(number, context) of every unmapped decimal in the checked scope, grouped by the section it is in."""
    start = re.search(r'<h1 id="', html)
    end = html.find('<h1 id="reproducibility"')
    assert start is not None and end > start.start()
    ok = checks.mapped_strings(results)
    groups: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
    section = "?"
    for part in re.split(r'(<h[12] id="[^"]+")', html[start.start() : end]):
        head = re.match(r'<h[12] id="([^"]+)"', part)
        if head:
            section = head.group(1)
            continue
        for tok, ctx in checks.decimal_tokens(checks.visible_text(part)):
            if tok.lstrip("+") not in ok:
                groups[section].append((tok, ctx))
    return dict(groups)


def main(names: list[str]) -> None:
    matrix = Matrix(Path(tempfile.mkdtemp(prefix="fme-matrix-")))
    try:
        for name in names:
            t = time.perf_counter()
            b = matrix.build(name)
            groups = unmapped_by_section(b.html, b.results)
            print(f"=== {name}: built in {time.perf_counter() - t:.0f} s, {sum(map(len, groups.values()))} unmapped")
            for section, rows in groups.items():
                print(f"--- {section}: {len(rows)}")
                for tok, ctx in rows:
                    print(f"   {tok!r:14} | {ctx}")
            if b.pdf_path:
                pdf = checks.unmapped_numbers(checks.pdf_scope(checks.pdftotext(b.pdf_path)), b.results)
                print(f"pdf unmapped: {len(pdf)}")
    finally:
        matrix.close()


if __name__ == "__main__":
    main(sys.argv[1:] or ["ols-contracts", "binary-strings"])
