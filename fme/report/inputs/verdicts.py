"""The report's verdicts on its tests, from the records ``results.json`` keeps: one verifier for the analysis,
which writes each claim into ``results.json``, and for the present stage, which words it (and checks a
results.json written before the claim was kept)."""

from __future__ import annotations

import math

from .claims import Claim, TestRecord, test_claim
from .quantities import at_rounding_level

__all__ = ["global_test_record", "global_test_claim", "contract_not_valid"]


def global_test_record(tests: dict, leaves: list[dict] | None = None) -> TestRecord:
    """The global test of equal leaf cAMEs as the claims' verifier reads it: its statistic, p-value and df, the
    library's note (a hypothesis that is not identified), the standard errors of the differences, the size of
    the cAMEs they are errors of, and the rows of each leaf tested (``leaves``: the partition's; without them
    the differences' estimates give the size and no leaf count is checked)."""
    g = tests.get("global") or {}
    out = set(tests.get("left_out") or [])
    tested = [leaf for leaf in leaves or [] if leaf.get("node") not in out]
    values = [leaf.get("came") for leaf in tested] or [r.get("estimate") for r in tests["rows"]]
    magnitude = max((abs(float(x)) for x in values if x is not None), default=0.0)
    return TestRecord(
        id="partition/global",
        statistic=g.get("statistic"),
        p_value=g.get("p_value"),
        df=g.get("df"),
        std_errors=tuple(r.get("std_error") for r in tests["rows"]),
        magnitude=magnitude,
        n_per_group=tuple(int(leaf["n"]) for leaf in tested),
        note=str(g.get("note") or ""),
    )


def global_test_claim(tests: dict, conf_level: float, leaves: list[dict] | None = None) -> Claim:
    """The global test's claim: its result when the test is valid, else why it cannot be computed."""
    return test_claim(
        global_test_record(tests, leaves),
        1 - conf_level,
        "Global test that all leaf cAMEs are equal (Wald, chi-squared)",
        "the leaves' cAMEs differ",
        "the data do not show that the leaves' cAMEs differ",
    )


def contract_not_valid(r: dict) -> str | None:
    """Why a contract's test is not valid (None when it is): the analysis's reason, or, for a results.json
    written before it gave one, the same check here (a standard error at rounding level next to the estimate)."""
    if r.get("not_valid"):
        return r["not_valid"]
    if r.get("statistic") is None or r.get("std_error") is None:
        return None
    magnitude = max(abs(float(x)) for x in (r["estimate"], r.get("conf_low"), r.get("conf_high")) if x is not None)
    if not math.isfinite(float(r["statistic"])) or at_rounding_level(r["std_error"], magnitude):
        return "SE at rounding level"
    return None
