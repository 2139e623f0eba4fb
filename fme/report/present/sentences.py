"""Plain-language sentences generated from the numbers of one effect.

Every number in a sentence is passed in already formatted, from the same
strings the tables show (see :func:`fme.report.present.context.effect_cells`), so a
sentence can never disagree with its table. The direction word ("raises",
"lowers") is used only when the whole CI lies on one side of zero; the model is
the subject ("the model's prediction"), never the world.
"""

from __future__ import annotations

from typing import Any

from ..._utils.numfmt import count, fmt_bound, fmt_int
from ..inputs.constants import LINEARITY, STABILITY
from ..inputs.measures import nlm_quantities
from ..inputs.quantities import written, written_bounds
from ..inputs.wording import count_words, unit_after

__all__ = [
    "step_phrase",
    "unit_for",
    "effect_sentence",
    "linearity_sentence",
    "extrapolation_phrase",
    "LINEARITY",
    "direction_word",
    "sensitivity_sentence",
    "with_eps_phrase",
    "STABILITY",
    "stability_sentence",
]


def _amount(value: Any) -> str:
    """The step's size as the tables print it (6 significant digits, :func:`fmt_bound`), without its sign."""
    return fmt_bound(abs(float(value)))


def unit_for(unit: str, amount: Any) -> str:
    """The unit as it reads after ``amount`` ('1 pupil per teacher', '1 absorbance unit', '1 year'; '1
    thousands of dollars' stays, as do symbols such as '%' or 'mm'): the report's one wording rule,
    :func:`fme.report.inputs.wording.unit_after`."""
    return unit_after(unit, amount)


def step_phrase(steps: dict[str, Any], numeric: bool, units: dict[str, str]) -> str:
    """'Lowering crim by 5', 'Lowering crim by 5 and nox by 0.1 together', 'Switching chas ... to 1'."""
    if not numeric:
        if len(steps) == 1:
            feature, level = next(iter(steps.items()))
            return f"Switching {feature} from its observed level to {level}"
        return "Setting " + ", ".join(f"{f} to {v}" for f, v in steps.items())
    parts = []
    for i, (feature, h) in enumerate(steps.items()):
        unit = f" {unit_for(units[feature], h)}" if units.get(feature) else ""
        verb = "Lowering" if float(h) < 0 else "Raising"
        if i == 0:
            parts.append(f"{verb} {feature} by {_amount(h)}{unit}")
        else:
            parts.append(f"{verb.lower()} {feature} by {_amount(h)}{unit}")
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return text + (" together" if len(parts) > 1 else "")


def extrapolation_phrase(v: dict, cells: dict[str, str], noun: str) -> str:
    """Who is in the average: n, and what the extrapolation check did (never '0 excluded' when unchecked)."""
    n = count_words(cells["n"], noun)  # 'n = 1 district', never '1 districts'
    if v["detector"] is None:
        text = f"n = {n}; not checked for extrapolation"
    elif v["policy"] == "keep":
        are = "is an extrapolation point" if cells["n_flagged"] == "1" else "are extrapolation points"
        text = f"n = {n}, of which {cells['n_flagged']} {are} ({v['detector']} detector) kept in the average"
    elif v["policy"] == "shrink":
        text = (
            f"n = {n}; {count_words(v.get('n_shrunk'), 'steps')} shrunk to stay inside the data and "
            f"{cells['n_extrapolation']} left out as extrapolation ({v['detector']} detector)"
        )
    elif v["n_extrapolation"]:
        text = (
            f"n = {n} where the step stays inside the data; {cells['n_extrapolation']} left out "
            f"as extrapolation by the {v['detector']} detector"
        )
    else:
        text = f"n = {n}; checked with the {v['detector']} detector, no extrapolation points found"
    if v.get("n_at_level"):
        text += f"; {cells['n_at_level']} already at level {v['level_label']} left out"
    return text


def effect_sentence(v: dict, cells: dict[str, str], target: str, unit: str, noun: str, units: dict[str, str]) -> str:
    """One sentence per effect: step, direction (only if the CI excludes zero), AME with CI, who is in it."""
    lo, hi = v["ci_low"], v["ci_high"]
    phrase = step_phrase(v["steps"], v["numeric"], units)
    u = f" {unit}" if unit else ""
    ci = f"{cells['level']} CI {cells['ci_low']} to {cells['ci_high']}"
    if cells.get("ci_phrase"):  # which uncertainty the interval covers (model or fixed-model only)
        ci += f", {cells['ci_phrase']}"
    if lo is not None and hi is not None and lo > 0:
        head = f"{phrase} raises the model's predicted {target} on average: AME {cells['ame']}{u}"
    elif lo is not None and hi is not None and hi < 0:
        head = f"{phrase} lowers the model's predicted {target} on average: AME {cells['ame']}{u}"
    else:
        head = f"{phrase} has no clear direction on the model's predicted {target}: AME {cells['ame']}{u}"
        ci += ", the CI includes zero" if lo is not None else ", no CI (fewer than 2 observations)"
    return f"{head} ({ci}; {extrapolation_phrase(v, cells, noun)})."


def nlm_rows_phrase(v: dict) -> str:
    """'over 106 of the 554 observations: the NLM is undefined for 448 (440 flat paths, 8 constant)' (the
    rows an ANLM covers; flat and constant paths counted apart)."""
    n, k = v.get("n"), v.get("n_nlm")
    if k is None or n is None or int(k) == int(n):
        return f"over all {count(n, 'row')}" if n is not None else ""
    flat, const = int(v.get("n_nlm_flat") or 0), int(v.get("n_nlm_constant") or 0)
    other = int(n) - int(k) - flat - const
    parts = [
        count(flat, "flat path") if flat else None,
        count(const, "constant path") if const else None,
        f"{fmt_int(other)} otherwise undefined" if other > 0 else None,
    ]
    why = "; ".join(p for p in parts if p)
    return f"over {fmt_int(k)} of the {count(n, 'row')}: the NLM is undefined for {fmt_int(int(n) - int(k))}" + (
        f" ({why})" if why else ""
    )


def linearity_sentence(v: dict, cells: dict[str, str]) -> str | None:
    """'Along the step the model's prediction is close to linear on average (ANLM 0.997, 95% CI ..., over ...).'
    or None without NLMs; the rows the ANLM covers are stated."""
    if not v.get("nlm") or v.get("anlm") is None:
        return None
    word = next(w for t, w in LINEARITY if v["anlm"] >= t)
    rows = nlm_rows_phrase(v)
    anlm = nlm_quantities(v)["anlm"]  # as results.json types it
    lo, hi = written_bounds(anlm)
    return (
        f"Along the step the model's prediction is {word} on average (ANLM {written(anlm)}, "
        f"{cells['level']} CI {lo} to {hi}" + (f", {rows}" if rows else "") + ")."
    )


def direction_word(lo: float | None, hi: float | None) -> str:
    """'raises' / 'lowers' only when the whole CI is on one side of zero, else 'no clear direction'."""
    if lo is not None and hi is not None and lo > 0:
        return "raises"
    if lo is not None and hi is not None and hi < 0:
        return "lowers"
    return "no clear direction"


def with_eps_phrase(all_rows: dict[str, str], noun: str, table: int) -> str:
    """'over all 506 observations, the 21 extrapolation points included, the AME would be 5.65 (95% CI ...)'."""
    n = count_words(all_rows["n"], noun)
    if all_rows["n_extrapolation"] == "0":
        return (
            f"no extrapolation points were found, so the AME over all {n} evaluated is the reported one (Table {table})"
        )
    eps = count_words(all_rows["n_extrapolation"], "extrapolation points")
    return (
        f"over all {n} evaluated, the {eps} "
        f"included, the AME would be {all_rows['ame']} ({all_rows['level']} CI {all_rows['ci_low']} to "
        f"{all_rows['ci_high']}, fixed model; Table {table})"
    )


def sensitivity_sentence(rows: list[dict], cells: list[dict[str, str]]) -> str | None:
    """One sentence when the CI-based direction word changes across h/2, h, 2h (naming a sign change too); else None.

    ``rows`` are the raw numbers (for the decision), ``cells`` the table's display strings (for the text),
    so every number in the sentence is a cell of the sensitivity table.
    """
    ok = [(r, c) for r, c in zip(rows, cells) if r.get("ame") is not None]
    if len(ok) < 2:
        return None
    # only a change of the CI-based direction word is a change of the conclusion: three
    # "no clear direction" rows whose AMEs differ in sign (or are exactly 0) say nothing
    words = {c["direction"] for _, c in ok}
    if len(words) == 1:
        return None
    signs = {(r["ame"] > 0) - (r["ame"] < 0) for r, _ in ok} - {0}
    what = (
        "the direction supported by the CI changes, and so does the sign of the AME"
        if len(signs) > 1
        else "the direction supported by the CI changes"
    )
    parts = [
        f"at {c['size']} ({c['step']}) the AME is {c['ame']} ({c['level']} CI {c['ci_low']} to "
        f"{c['ci_high']}; {c['direction']})"
        for _, c in ok
    ]
    listing = "; ".join(parts[:-1]) + "; and " + parts[-1]
    return f"The conclusion depends on the step size, {what}: {listing}."


def stability_sentence(cells: dict[str, str], ari_median: float | None, table: int) -> str:
    """One sentence judging the subspaces by the median ARI of the refits (numbers are the table's cells)."""
    if cells.get("not_run"):
        return f"The stability refits did not run (Table {table}): {cells['not_run']}."
    if ari_median is None:
        return f"No refit on a subsample succeeded (Table {table}); the stability of the subspaces is unknown."
    word = next(w for t, w in STABILITY if ari_median >= t)
    text = (
        f"The subspaces are {word} across subsamples: the refitted trees group the rows like the full tree "
        f"with a median adjusted Rand index of {cells['ari_median']} (Table {table})."
    )
    if word != "stable":
        text += " Read the cAMEs of single leaves with care; the first split and the AME are more robust."
    return text
