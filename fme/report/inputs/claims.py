"""Typed claims: every statement the report makes about its numbers, verified before it is worded.

A :class:`Claim` has a kind (:data:`KINDS`), the ids of the quantities it cites, the verifier's outcome and
its words. Each kind has one builder here, which runs the kind's verifier and words the claim by the kind's
one template (units, row words and singular/plural from :mod:`.quantities` and :mod:`.wording`). A claim
whose verifier fails is worded "cannot be stated: <reason>" and ``holds`` is False: the report then raises a
flag, and never prints the statement as true. ``results.json`` lists the claims the analysis made
(:meth:`Claim.to_dict`: kind, cited quantity ids, outcome), so a validator can audit each one.

==================  ============================================  ===============================================
kind                says                                          verified when
==================  ============================================  ===============================================
direction           raises / lowers / no clear direction          the interval's side of zero; its kind is named
test_result         "... differ at the 5% level"                  the test is valid (:func:`test_validity`)
test_not_valid      "... cannot be computed here: <reason>"       the test is not valid, with its reason
count               "253 of the 1,500 evaluated rows"             the part's lineage contains the whole
range               "x from 0.1 to 4.9 over 57 ... points"        the range names the rows it is over
enters_predictions  "predictions use each row's exposure"         the column's role is known
contract_verdict    met / not met / inconclusive                  one unit for bound and estimate; the SE is not
                                                                  at rounding level
not_computed        "not computed: <reason>"                      the reason comes from the code that declined
explained_share     "the regions explain 42 % (CI ...) of ..."    its F test is valid (:func:`test_validity`) and
                                                                  the share has an interval
agreement           "agrees to 1e-10" (the audit's second path)   the two paths differ by at most the tolerance
==================  ============================================  ===============================================
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..._utils.numfmt import fmt_g, fmt_int, fmt_num, fmt_p, p_phrase
from .quantities import Interval, Quantity, RowSet, Unit, at_rounding_level
from .wording import count_words

__all__ = [
    "KINDS",
    "Claim",
    "TestRecord",
    "test_validity",
    "direction",
    "test_claim",
    "count_claim",
    "range_claim",
    "enters_predictions",
    "contract_verdict",
    "not_computed",
    "CANNOT",
    "statistic_cell",
    "p_cell",
    "interval_kind_words",
    "explained_share",
    "agreement",
    "not_applicable",
]

KINDS = (
    "direction",
    "test_result",
    "test_not_valid",
    "count",
    "range",
    "enters_predictions",
    "contract_verdict",
    "not_computed",
    "explained_share",
    "agreement",
)
#: How a claim whose verifier failed is printed.
CANNOT = "cannot be stated"


@dataclass(frozen=True)
class Claim:
    """A verified statement and its words.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    cites : tuple of str
        The ids of the quantities (or tests) it is about.
    holds : bool
        The verifier's outcome: False prints ``text`` as "cannot be stated: <reason>" and raises a flag.
    text : str
        The words.
    outcome : str
        The kind's verdict in one word ('raises', 'differ', 'not valid', 'met', ...).
    reason : str
        Why it cannot be stated (or why a test is not valid); '' otherwise.
    """

    kind: str
    cites: tuple[str, ...]
    holds: bool
    text: str
    outcome: str = ""
    reason: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown claim kind {self.kind!r}; known: {', '.join(KINDS)}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "cites": list(self.cites),
            "holds": self.holds,
            "outcome": self.outcome,
            "reason": self.reason,
            "text": self.text,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Claim:
        return cls(
            kind=d["kind"],
            cites=tuple(d.get("cites", ())),
            holds=bool(d["holds"]),
            text=d.get("text", ""),
            outcome=d.get("outcome", ""),
            reason=d.get("reason", ""),
        )


def _cannot(kind: str, cites: Sequence[str], reason: str) -> Claim:
    return Claim(kind, tuple(cites), False, f"{CANNOT}: {reason}", "cannot be stated", reason)


# ------------------------------------------------------------------ direction
def direction(q: Quantity) -> Claim:
    """'raises' / 'lowers' when the whole interval lies on one side of zero, else 'no clear direction';
    the interval's kind goes into the words, so the sentence says which uncertainty decided."""
    iv = q.interval
    if iv is None or not iv.computed:
        return Claim(
            "direction", (q.id,), True, "no clear direction (no interval)", "no clear direction", "no interval"
        )
    side = iv.excludes_zero()
    word = {1: "raises", -1: "lowers", 0: "no clear direction"}[side]
    return Claim("direction", (q.id,), True, f"{word} ({iv.kind} interval)", word)


# ------------------------------------------------------------------ tests
@dataclass(frozen=True)
class TestRecord:
    """A hypothesis test as ``results.json`` keeps it.

    Parameters
    ----------
    id : str
        'crim-1/partition/global'.
    statistic, p_value, df : float or None
        NaN and inf are kept as None by ``results.json``; both mean: not computed.
    std_errors : sequence of float or None
        The standard errors the statistic divides by (one per contrast).
    magnitude : float
        The size of what the standard errors are errors of (the largest |estimate| involved), for the
        rounding-level check.
    n_per_group : sequence of int
        The rows behind each group compared (leaves, effects); empty when not applicable.
    note : str
        The library's reason why the hypothesis is not identified ('' when it is).
    """

    __test__ = False  # not a pytest class

    id: str
    statistic: float | None
    p_value: float | None
    df: float | None = None
    std_errors: tuple[float | None, ...] = ()
    magnitude: float = 0.0
    n_per_group: tuple[int, ...] = ()
    note: str = ""


def _finite(x: Any) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(float(x))


def test_validity(t: TestRecord) -> str | None:
    """Why the test is not valid (None when it is): the library's note (a hypothesis that is not identified),
    no finite statistic or p-value, fewer than 2 rows in a group, or a standard error at rounding level."""
    if t.note:
        return t.note
    if not _finite(t.statistic) or not _finite(t.p_value):
        return "the statistic is undefined (no finite value)"
    small = [n for n in t.n_per_group if int(n) < 2]
    if small:
        return f"{count_words(len(small), 'groups')} of fewer than 2 rows (no spread to test against)"
    if t.std_errors and any(at_rounding_level(se, t.magnitude) for se in t.std_errors):
        return "SE at rounding level (the quantity does not vary, so a statistic divided by it means nothing)"
    return None


test_validity.__test__ = False  # type: ignore[attr-defined]


def test_claim(t: TestRecord, alpha: float, name: str, differ: str, no_difference: str) -> Claim:
    """The result of a valid test ("<name>: statistic 5.21, p = 0.022: <differ> at the 5% level"), else the
    test_not_valid claim "<name> cannot be computed here: <reason>" (never a verdict, never 'ok').

    ``differ``/``no_difference``: the two verdicts in the report's words ('the leaves' cAMEs differ', 'the
    data do not show that the leaves' cAMEs differ').
    """
    why = test_validity(t)
    if why is not None:
        return Claim("test_not_valid", (t.id,), True, f"{name} cannot be computed here: {why}", "not valid", why)
    rejects = float(t.p_value) < alpha
    df = f" with {fmt_int(t.df)} df" if _finite(t.df) else ""
    text = (
        f"{name}{df}: statistic {fmt_num(t.statistic, 2)}, {p_phrase(t.p_value)}: "
        f"{differ if rejects else no_difference} at the {fmt_num(100 * alpha, 0)}% level"
    )
    return Claim("test_result", (t.id,), True, text, "differ" if rejects else "no difference")


test_claim.__test__ = False  # type: ignore[attr-defined]


# ------------------------------------------------------------------ counts and ranges
def count_claim(part: RowSet, whole: RowSet, what: str = "", cites: Sequence[str] = ()) -> Claim:
    """'253 of the 1,500 evaluated rows <what>': only when ``whole`` is in ``part``'s lineage, so a count of a
    sample is never put over a total of the whole data."""
    ids = tuple(cites) or (part.name, whole.name)
    if not part.within(whole):
        return _cannot(
            "count",
            ids,
            f"{count_words(part.n, part.name)} are not counted among the "
            f"{count_words(whole.n, whole.name)} (different row sets)",
        )
    if part.n > whole.n:
        return _cannot("count", ids, f"{fmt_int(part.n)} is more than the {count_words(whole.n, whole.name)}")
    text = f"{fmt_int(part.n)} of the {count_words(whole.n, whole.name)}" + (f" {what}" if what else "")
    if part is whole or (part.name == whole.name and part.n == whole.n):
        text = count_words(whole.n, whole.name) + (f" {what}" if what else "")
    return Claim("count", ids, True, text, "counted")


def range_claim(feature: str, low: float | None, high: float | None, rows: RowSet, cites: Sequence[str] = ()) -> Claim:
    """'x from 0.1 to 4.9 over the 57 extrapolation points of the seeded sample': a range says whose it is."""
    ids = tuple(cites) or (feature,)
    if low is None or high is None:
        return _cannot("range", ids, f"no value of {feature} among the {rows.words()}")
    span = f"{fmt_g(low, 4)}" if low == high else f"from {fmt_g(low, 4)} to {fmt_g(high, 4)}"
    return Claim("range", ids, True, f"{feature} {span} over the {rows.words()}", "range")


# ------------------------------------------------------------------ model inputs
#: How each column role reads in "predictions use each row's <role>".
ROLES = ("exposure", "offset", "weight")


def enters_predictions(column: str, role: str, used: bool | None) -> Claim:
    """Whether a column that is not a feature enters every prediction ('predictions use each row's exposure
    (column t)'); ``used`` None: the adapter does not say, so nothing is claimed."""
    if used is None:
        return _cannot(
            "enters_predictions", (column,), f"the model's adapter does not say whether {column} enters its predictions"
        )
    if used:
        return Claim(
            "enters_predictions",
            (column,),
            True,
            f"predictions use each row's {role} (column {column}), as observed",
            "enters",
        )
    return Claim("enters_predictions", (column,), True, f"{column} does not enter the predictions", "not used")


# ------------------------------------------------------------------ contracts
def contract_verdict(
    estimate: Quantity, bound_unit: Unit, verdict: str, statistic: float | None, p_value: float | None
) -> Claim:
    """'met' / 'not met' / 'inconclusive' for an effect contract, only when its bound is in the estimate's
    unit and its statistic is a statistic (finite, its SE above rounding level); else 'not valid: <reason>'."""
    ids = (estimate.id,)
    if bound_unit != estimate.unit:
        return _cannot(
            "contract_verdict",
            ids,
            f"the bound is in {bound_unit.name or 'no unit'}, the estimate in {estimate.unit.name or 'no unit'}",
        )
    if verdict not in ("met", "not met", "inconclusive"):
        return _cannot("contract_verdict", ids, f"unknown verdict {verdict!r}")
    iv = estimate.interval
    magnitude = max(
        abs(float(estimate.value or 0.0)),
        *(abs(float(x)) for x in ((iv.low, iv.high) if iv and iv.computed else ()) if x is not None),
    )
    if statistic is not None and at_rounding_level(estimate.std_error, magnitude):
        return Claim(
            "contract_verdict", ids, True, "not valid: SE at rounding level", "not valid", "SE at rounding level"
        )
    if statistic is not None and not _finite(statistic):
        return Claim(
            "contract_verdict",
            ids,
            True,
            "not valid: the statistic is undefined",
            "not valid",
            "the statistic is undefined",
        )
    p = f" ({p_phrase(p_value)})" if p_value is not None else ""
    return Claim("contract_verdict", ids, True, verdict + p, verdict)


def statistic_cell(statistic: float | None, valid: bool, reason: str = "") -> str:
    """A test statistic's table cell: the number when the test is valid, else 'not valid: <reason>'."""
    if not valid:
        return f"not valid: {reason}" if reason else "not valid"
    return "-" if statistic is None else fmt_num(statistic, 2)


def p_cell(p_value: float | None, valid: bool) -> str:
    """A p-value's table cell: '-' for a test that is not valid (never a p-value of a non-statistic)."""
    return fmt_p(p_value) if valid else "-"


# ------------------------------------------------------------------ not computed
def not_computed(what: str, reason: str, cites: Sequence[str] = ()) -> Claim:
    """'<what>: not computed: <reason>' (the reason comes from the code that declined)."""
    return Claim(
        "not_computed", tuple(cites) or (what,), True, f"{what}: not computed: {reason}", "not computed", reason
    )


def interval_kind_words(iv: Interval | None) -> str:
    """'delta interval', 'fixed-model interval', 'no interval': the words a caption uses for a row's interval."""
    if iv is None or not iv.computed:
        return "no interval"
    return f"{iv.kind} interval"


# ------------------------------------------------------------------ explained share
def explained_share(share: Quantity, test: TestRecord, df2: float | None, alpha: float, effect: str) -> Claim:
    """'The regions explain 42.0 % of the heterogeneity of the fMEs of x1 + 1 (95% CI 30.1 to 51.2, ...) over
    the 206 estimation rows; F test that they explain none ...' (the GADGET decomposition of a joint partition),
    only when the F test is valid and the share has an interval; else the test_not_valid claim with the reason,
    never a share without its interval.

    ``share``: the explained share (unit: %), its interval (its kind named: the unified, Feldman-Cousins, interval
    of the noncentral F's noncentrality, or the equal-tailed one at a huge noncentrality); ``test``: the F test
    that the regions explain nothing (``df``: its numerator degrees of freedom, ``df2`` the denominator's).
    """
    why = test_validity(test)
    if why is None and (share.interval is None or not share.interval.computed):
        why = "the share's interval is undefined"
    what = f"The share of the heterogeneity of the fMEs of {effect} that the regions explain"
    if why is not None:
        return Claim(
            "test_not_valid", (share.id, test.id), True, f"{what} cannot be stated here: {why}", "not valid", why
        )
    value, low, high = share.display()
    rejects = float(test.p_value) < alpha  # type: ignore[arg-type]
    df = f" with {fmt_g(test.df, 4)} and {fmt_g(df2, 6)} df" if _finite(test.df) and _finite(df2) else ""
    verdict = "they explain some of it" if rejects else "the data do not show that they explain any of it"
    text = (
        f"The regions explain {fmt_num(value, 1)} % of the heterogeneity of the fMEs of {effect} "
        f"({fmt_num(100 * share.interval.level, 0)}% CI {fmt_num(low, 1)} % to {fmt_num(high, 1)} %; "  # type: ignore[union-attr]
        f"{share.interval.kind} interval) over the {share.rows.words()}; F test that they explain none{df}: "  # type: ignore[union-attr]
        f"statistic {fmt_num(test.statistic, 2)}, {p_phrase(test.p_value)}: {verdict} at the "
        f"{fmt_num(100 * alpha, 0)}% level"
    )
    return Claim("explained_share", (share.id, test.id), True, text, "explains" if rejects else "not shown")


# ------------------------------------------------------------------ the audit's second path
def agreement(what: str, difference: float | None, tolerance: float, cites: Sequence[str], relative: bool) -> Claim:
    """'<what> agrees to 1e-10' when a second computation differs from the report's by at most ``tolerance``
    (``relative``: a share of the report's value); else "cannot be stated: ..." with the difference, so a
    failing audit raises a flag and is never printed as an agreement."""
    how = "relative difference" if relative else "difference"
    if difference is None or not math.isfinite(float(difference)):
        return _cannot("agreement", cites, f"{what}: no finite difference")
    if float(difference) > tolerance:
        return _cannot(
            "agreement",
            cites,
            f"{what} differs from the report by a {how} of {fmt_g(difference, 3)}, above the tolerance "
            f"{fmt_g(tolerance, 1)}",
        )
    return Claim("agreement", tuple(cites), True, f"{what} agrees to {fmt_g(tolerance, 1)}", "agrees")


def not_applicable(what: str, reason: str, cites: Sequence[str] = ()) -> Claim:
    """A check that does not apply here ('not applicable: <reason>'), a not_computed claim."""
    return Claim("not_computed", tuple(cites) or (what,), True, f"not applicable: {reason}", "not applicable", reason)
