"""Sphinx extension: the paper's section and equation citations in docstrings link to the paper page.

A docstring that cites "paper §5.4", "§5.5", "Eq. 11" or an equation by its label in the paper's source
("Eq. multivariate_fME") gets a link to the entry of docs/paper.md that says what the paper defines there and
which code implements it. Citations of other documents are left as text: those of the report checklist
("checklist §2.4") and of the partykit algorithm that :class:`fme.CTree` follows (its docstrings number
partykit's sections, not the paper's).

The docstrings are written to be read as plain text too (``|f(x)|`` for an absolute value, ``x_-j`` for "x
without feature j"). Outside literals, math and tables, such text is escaped here so that reStructuredText does
not read it as a substitution or a link.
"""

from __future__ import annotations

import re

#: Sections and numbered equations of the paper with an entry (a MyST label) on docs/paper.md.
SECTIONS = {"1", "2", "2.1", "2.2", "3", "3.1", "3.2", "4", "4.1", "4.2", "4.3", "4.4", "5", "5.1", "5.2", "5.3",
            "5.4", "5.5", "6", "7", "7.1", "7.2", "7.3", "7.4", "8", "9"}
EQUATIONS = {"11", "12", "categorical_me", "new_categorical_me", "multivariate_fME", "extrapolation_risk",
             "cert_hypervolume"}
_NOT_THE_PAPER = ("checklist", "SVG", "Nadeau", "partykit", "libcoin")
_SECTION = re.compile(r"§ ?(\d+(?:\.\d+)?)(?![\d]|\.\d)")
_EQUATION = re.compile(r"\bEq\.(\s+)(\w+)")
_ROLE_OR_LITERAL = re.compile(r"(``.*?``|:\w+:`[^`]*`|`[^`]*`_?)")
_LONE_STAR = re.compile(r"(?<=\S\s)\*(?=[\s,.;:)]|$)|\*(?=\.\w)")  # "marked *," and "*.j2", not a bullet
_REF_LIKE = re.compile(r"(?<![\\`\w])(\w+)_(?=[-\s),.;:/]|$)")


def _escape_plain(text: str) -> str:
    """Escape ``|`` and ``name_`` outside inline literals and roles (they are not substitutions or links)."""
    pieces = _ROLE_OR_LITERAL.split(text)
    for i in range(0, len(pieces), 2):  # even pieces are outside literals and roles
        piece = _REF_LIKE.sub(r"\1\\_", pieces[i].replace("|", "\\|"))
        pieces[i] = _LONE_STAR.sub(r"\\*", piece)  # "marked *," is a star, not emphasis
    return "".join(pieces)


def _link(text: str) -> str:
    pieces = _ROLE_OR_LITERAL.split(text)
    for i in range(0, len(pieces), 2):

        def section(match: re.Match[str], piece: str = pieces[i]) -> str:
            number, before = match.group(1), piece[max(0, match.start() - 40): match.start()]
            if number not in SECTIONS or any(w in before for w in _NOT_THE_PAPER):
                return match.group(0)
            return f":ref:`§{number} <paper-s{number}>`"

        def equation(match: re.Match[str]) -> str:
            label = match.group(2)
            if label not in EQUATIONS:
                return match.group(0)
            # "equation", not "Eq.": autosummary ends a summary at a full stop, which would cut the link in two
            return f":ref:`equation{match.group(1)}{label} <paper-eq-{label.lower()}>`"

        pieces[i] = _EQUATION.sub(equation, _SECTION.sub(section, pieces[i]))
    return "".join(pieces)


_BORDER = re.compile(r"^\s*(=+( +=+)+|[-=~^]{3,}|\+[-=+]+\+)\s*$")


def _plain_spans(lines: list[str]) -> list[tuple[int, int]]:
    """(start, stop) index ranges of paragraphs of running text: not directives, literal blocks, doctests,
    tables or line blocks, which are left as they are."""
    spans, i, n = [], 0, len(lines)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if re.match(r"\.\. [\w:-]+::", stripped) or stripped.endswith("::") or stripped.startswith(">>>"):
            j = i + 1  # the block: everything indented deeper (or the doctest's lines)
            while j < n:
                nxt = lines[j]
                if stripped.startswith(">>>"):
                    if not nxt.strip():
                        break
                elif nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                    break
                j += 1
            i = j
            continue
        if not stripped:
            i += 1
            continue
        j = i
        while j < n and lines[j].strip() and not re.match(r"\.\. [\w:-]+::", lines[j].strip()) \
                and not lines[j].strip().startswith(">>>"):
            j += 1
            if lines[j - 1].strip().endswith("::"):
                break
        paragraph = lines[i:j]
        tabular = any(_BORDER.match(x) or x.strip().startswith(("| ", "+-", "+=")) for x in paragraph)
        if not tabular:
            spans.append((i, j))
        i = j
    return spans


def _process(app, what, name, obj, options, lines) -> None:  # noqa: ANN001
    paper = not (name.startswith("fme.CTree") or name.startswith("fme._trees.ctree"))
    for start, stop in _plain_spans(lines):
        block = "\n".join(_escape_plain(line) for line in lines[start:stop])
        if paper:
            block = _link(block)
        new = block.split("\n")
        lines[start:stop] = new  # a link joins no lines, so the count stays


def setup(app):  # noqa: ANN001, ANN201
    app.connect("autodoc-process-docstring", _process, priority=600)  # after numpydoc (priority 500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
