"""Counts are written with their noun's number: ``count`` and the messages, notes and labels that use it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from fme._utils.numfmt import count

PACKAGE = Path(__file__).resolve().parents[2] / "fme"
#: Plural nouns that follow a count in fme's texts.
NOUNS = (
    "rows|columns|inputs|features|levels|effects|leaves|points|steps|values|subspaces|nodes|refits|draws|classes|"
    "observations|splits|categories|outputs|samples|weights|groups|clusters|entries|tests|hypotheses|parameters|"
    "predictions|records|partitions|repetitions|workers|files|cases"
)
#: Expressions before such a noun that are not counts (a dtype, a label, a step's description).
NOT_COUNTS = re.compile(r"dtype|describe|^step$|feature|^who$|^rows$")


def _bare_counts(path: Path) -> list[str]:
    """``{expr} noun`` in an f-string where expr is a count not written by :func:`count`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.JoinedStr):
            continue
        parts = node.values
        for value, text in zip(parts, parts[1:]):
            if not isinstance(value, ast.FormattedValue) or not isinstance(text, ast.Constant):
                continue
            expr = ast.unparse(value.value)
            if re.match(rf" ({NOUNS})\b", str(text.value)) and not NOT_COUNTS.search(expr):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {{{expr}}}{str(text.value)[:20]}")
    return found


@pytest.mark.parametrize(("n", "text"), [(0, "0 rows"), (1, "1 row"), (2, "2 rows"), (1234, "1,234 rows")])
def test_count_writes_the_noun_in_its_number(n, text):
    assert count(n, "row") == text


def test_count_takes_an_irregular_plural():
    assert count(1, "leaf", "leaves") == "1 leaf" and count(3, "leaf", "leaves") == "3 leaves"


def test_no_text_of_fme_writes_a_count_before_a_plural_noun_without_count():
    """'1 rows' is impossible where every count before a noun goes through count(): the library's messages,
    warnings, notes and labels, and the report's sentences, captions and notes."""
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _bare_counts(path)]
    assert not found, "\n".join(found)


def test_the_check_finds_a_bare_count(tmp_path):
    """The check above can fail: it finds '{n} rows' and accepts count(n, 'row')."""
    bad = tmp_path / "m.py"
    bad.write_text('n = 1\nA = f"{n} rows left"\nB = f"{len(x)} leaves"\nC = f"{count(n, \'row\')} left"\n')
    hits = [h.split(": ", 1)[1] for h in _bare_counts_at(bad)]
    assert hits == ["{n} rows left", "{len(x)} leaves"]


def _bare_counts_at(path: Path) -> list[str]:
    """:func:`_bare_counts` for a file outside the package (its path shown as is)."""
    global PACKAGE
    saved, PACKAGE = PACKAGE, path.parent
    try:
        return _bare_counts(path)
    finally:
        PACKAGE = saved
