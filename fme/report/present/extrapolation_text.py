"""The words on extrapolation points: the rows a per-row figure draws (the seeded sample's on Dask data), the
effect's extrapolation line and the extrapolation figure's alt text and caption.
"""

from __future__ import annotations

from ..._utils.numfmt import fmt_int
from ..inputs.claims import count_claim, range_claim
from ..inputs.measures import RANGE_FORMS, range_quantities
from ..inputs.quantities import RowSet
from ..inputs.wording import count_words

__all__ = ["drawn_rows", "ep_line", "extrapolation_words"]


def drawn_rows(sample: dict | None, n: int, noun: str) -> RowSet:
    """The rows a per-row figure or table draws: on Dask data beyond ``sample_size`` those of the seeded sample
    (a row set of its own, drawn from all rows), else the evaluated rows themselves."""
    if sample and not sample.get("all_rows"):
        data = RowSet("rows of the data", int(sample["of"]))
        return RowSet(
            f"{noun} of the seeded sample", int(n), of=RowSet("rows of the seeded sample", int(sample["rows"]), of=data)
        )
    return RowSet(noun, int(n))


def ep_line(v: dict, noun: str, where: str | None, sample: dict | None) -> str | None:
    """'253 of the 1,500 districts left out as extrapolation points (where they are, ...)': the count is of all
    rows; where they are is said of the rows it was found on, which on Dask data beyond ``sample_size`` are the
    seeded sample's (named, never joined to the whole-data count as if they were its)."""
    if v["detector"] is None:
        return None
    whole = RowSet(noun, int(v["n_total"]))
    verb = "kept in the average" if v["policy"] == "keep" else "left out"
    n_ep = int((v.get("n_flagged_kept") if v["policy"] == "keep" else v.get("n_extrapolation")) or 0)
    text = count_claim(RowSet("extrapolation points", n_ep, of=whole), whole, f"{verb} as extrapolation points")
    if not text.holds:
        return text.text
    line = text.text if n_ep != 1 else text.text.replace("as extrapolation points", "as an extrapolation point")
    if where:
        if sample and not sample.get("all_rows"):
            rows = RowSet("rows", int(sample["rows"]), of=RowSet("rows", int(sample["of"])))
            line += (
                f" (where they are, from the seeded sample of {fmt_int(rows.n)} of the "
                f"{count_words(rows.of.n, 'rows')}: {where})"
            )
        else:
            line += f" ({where})"
    return line


def extrapolation_words(v: dict, fig: dict, cells: dict, step: str, noun: str, sample: dict | None) -> tuple[str, str]:
    """Alt text and caption of the extrapolation figure: every count and range is of the rows the figure draws
    (on Dask data beyond ``sample_size`` the seeded sample's, and said so), each count in the number it takes."""
    if fig.get("n_evaluated") is not None:
        n_eval, n_ep = int(fig["n_evaluated"]), int(fig["n_extrapolation"])
    else:  # a results.json written before the figure counted its rows: the effect's counts
        n_eval = int(v["n"])
        n_ep = int((v.get("n_flagged_kept") if v["policy"] == "keep" else v.get("n_extrapolation")) or 0)
    rows = drawn_rows(sample, n_eval, noun)
    of_sample = " of the seeded sample" if rows.of is not None else ""
    where = next(
        (
            w
            for w in v["extrapolation_where"]
            if w["feature"] == fig["feature"] and w.get("kind", "outside range") == "outside range" and "min" in w
        ),
        None,
    )
    loc = ""
    if where:
        eps = RowSet(
            f"extrapolation points{of_sample} outside the reference data in {fig['feature']}", int(where.get("n") or 0)
        )
        # the range as results.json types it (ep_range4_min/max): the caption's 4 significant digits
        q = range_quantities(str(v.get("id", "")), fig["feature"], where["min"], where["max"], eps, "r", RANGE_FORMS[1])
        low, high = (q[k].value if k in q else None for k in ("r_min", "r_max"))
        loc = "; " + range_claim(fig["feature"], low, high, eps).text
    alt = (
        f"Stacked histogram of {fig['feature']}: {count_words(n_eval, noun)}{of_sample} evaluated (solid) and "
        f"{count_words(n_ep, 'extrapolation points')}{of_sample} (hatched){loc}."
    )
    drawn = f"; drawn: {rows.words()} evaluated and {count_words(n_ep, 'extrapolation points')}"
    cap = f"Where the step {step} leaves the data ({v['detector']} detector){drawn}{loc}."
    return alt, cap
