"""The method's stated constants: the fixed thresholds of the report's wording, typed as quantities.

The report's method section states, for instance, that a median adjusted Rand index of at least 0.8 reads
"stable". Such a number is not a result of the analysis and not a setting of the config, but the reader reads
it as a number of the report: it is a quantity of ``results.json`` too (``method.constants``, written by
:func:`fme.report.analysis.typed.typed_payload`), without a unit (an ANLM and an ARI are scale-free) and over no
rows, and the method section prints it as :func:`~fme.report.inputs.quantities.written` writes it. The
sentences that choose the words read the same tables (:data:`LINEARITY`, :data:`STABILITY`), so the stated
threshold is the one applied.
"""

from __future__ import annotations

import re
from typing import Any

from .quantities import UNITLESS, Quantity, RowSet, written

__all__ = ["LINEARITY", "STABILITY", "WORDINGS", "NO_ROWS", "constant_quantities", "wording_thresholds"]

#: ANLM thresholds of the wording (paper §5.4: an NLM of 1 is linear, at or below 0 strongly non-linear).
LINEARITY = ((0.9, "close to linear"), (0.5, "moderately non-linear"), (float("-inf"), "strongly non-linear"))
#: Median-ARI thresholds of the wording of the subspaces' stability across subsamples.
STABILITY = ((0.8, "stable"), (0.5, "moderately stable"), (float("-inf"), "unstable"))
#: Each wording: its thresholds and the measure it reads.
WORDINGS: dict[str, tuple[tuple[tuple[float, str], ...], str]] = {
    "linearity": (LINEARITY, "ANLM"),
    "stability": (STABILITY, "median adjusted Rand index"),
}
#: The rows of a constant: none (it is stated, not computed over rows).
NO_ROWS = RowSet("rows: none (a stated constant of the method)", 0)


def _slug(word: str) -> str:
    return re.sub(r"\W+", "_", word).strip("_")


def constant_quantities() -> dict[str, Quantity]:
    """Every finite wording threshold as a quantity, keyed '<wording>/<word>' ('stability/stable'), written to
    6 significant digits ('0.8')."""
    return {
        f"{name}/{_slug(word)}": Quantity(
            f"method/{name}/{_slug(word)}",
            f"{measure} at least which the report says {word!r}",
            t,
            UNITLESS,
            NO_ROWS,
            form="g:6",
        )
        for name, (table, measure) in WORDINGS.items()
        for t, word in table
        if t > float("-inf")
    }


def wording_thresholds(name: str, stated: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """The method section's list of one wording ('min' and 'word' of each finite threshold), each threshold
    written from its quantity: ``stated`` (``results.json``'s ``method.constants``), else (a results.json of an
    older fme) the quantities of :func:`constant_quantities`."""
    own = {k: q.to_dict() for k, q in constant_quantities().items()}
    table, _ = WORDINGS[name]
    out = []
    for t, word in table:
        if t == float("-inf"):
            continue
        key = f"{name}/{_slug(word)}"
        d = (stated or {}).get(key) or own[key]
        out.append({"min": written(Quantity.from_dict(d)), "word": word})
    return out
