"""The unit and the rows of a table that gathers AMEs of several effects, in words for its caption.

A table whose cells hold AMEs or their intervals (the flags, the plausibility check, the effect contracts, an
effect's confidence intervals) names once, in its caption, the unit its numbers are read in and the rows each
AME averages over, as the figures' captions do (:mod:`.figure_text`). The unit is the report's one
effect-scale :class:`~fme.report.inputs.quantities.Unit` (a classifier's percentage points, else the config's
``target_unit``); the rows are each effect's evaluated rows, the row set its AME is the mean over (the paper's
Section 3.2: the AME averages the fMEs of the n observations).
"""

from __future__ import annotations

from ..._utils.numfmt import fmt_int
from ..inputs.quantities import Unit
from ..inputs.wording import count_words

__all__ = ["unit_words", "rows_words", "table_scope", "changes_scope"]

#: The row set every AME of the report is the mean over (the same words as its figures' captions).
EVALUATED = "evaluated rows"


def unit_words(unit: Unit) -> str:
    """The unit as a caption names it: its name, or the model's own scale when the config names no unit."""
    return unit.name or "the model's prediction units"


def rows_words(rows: list[tuple[str, int]]) -> str:
    """The rows each AME of a table is over: 'over the 300 evaluated rows' when every effect has the same,
    else each effect's count ('each over its effect's evaluated rows: 300 for x1, 280 for x2').

    Parameters
    ----------
    rows : list of (str, int)
        (effect, its number of evaluated rows), in the table's order; an effect listed twice is named once.
    """
    seen: dict[str, int] = {}
    for label, n in rows:
        seen.setdefault(label, int(n))
    counts = set(seen.values())
    if len(counts) == 1:
        return f"over the {count_words(counts.pop(), EVALUATED)}"
    each = ", ".join(f"{fmt_int(n)} for {label}" for label, n in seen.items())
    return f"each over its effect's {EVALUATED}: {each}"


def table_scope(what: str, unit: Unit, rows: list[tuple[str, int]]) -> str:
    """A caption's sentence on a table's unit and rows: '<what> in <unit>, <rows_words>.'; '' for a table
    without rows (no effect to show)."""
    if not rows:
        return ""
    return f"{what} in {unit_words(unit)}, {rows_words(rows)}."


def changes_scope(unit: Unit) -> str:
    """The change log's unit and rows: its AMEs and their differences in the report's unit, each AME over the
    evaluated rows of its own report (the two reports may evaluate other rows)."""
    return f"AMEs, CIs and ΔAME in {unit_words(unit)}, each AME over the {EVALUATED} of its own report."
