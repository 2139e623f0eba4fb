"""An effect's table cells: the display strings of a variant (shared by its tables and sentences), the AME with
and without extrapolation points, at h/2, h and 2h, the partition's stability across subsamples and the sign
check against the expected sign.
"""

from __future__ import annotations

from typing import Any

from ..._utils.numfmt import fmt_est, fmt_g, fmt_int, fmt_level, fmt_nlm, fmt_num, fmt_percent, fmt_share
from ..inputs.quantities import Quantity, fixed_bounds, written
from ..inputs.specs import CI_COVERS, CI_SHORT, ci_short
from ..inputs.wording import count_words
from . import sentences

__all__ = [
    "effect_cells",
    "level_label",
    "with_eps_rows",
    "eps_intervals",
    "STEP_SIZES",
    "sensitivity_rows",
    "stability_cells",
    "sign_agreement",
]


def effect_cells(v: dict) -> dict[str, str]:
    """All display strings of one effect variant (used by tables *and* sentences); ``v`` is a display copy
    (:func:`~fme.report.present.display.prepare_variant`) or, its fixed-model interval read from
    ``fixed_interval``, a variant of results.json."""
    q = _typed(v, "ame")
    if q is not None:  # the AME results.json lists: its value, the interval the report shows and its rows
        (ame, lo, hi), n = fmt_est(*q.display()), q.rows.n
    else:  # a results.json of an older fme
        low, high = (v["ci_low"], v["ci_high"]) if "ci_low" in v else fixed_bounds(v)
        (ame, lo, hi), n = fmt_est(v["ame"], low, high), v["n"]
    d = {
        "ame": ame,
        "ci_low": lo,
        "ci_high": hi,
        "n": fmt_int(n),
        "n_total": fmt_int(v["n_total"]),
        "level": fmt_level(v["conf_level"]),
        **{key: _written(v, f"fme_{key}", v[key], 3) for key in ("sd", "q25", "q75")},
        "step": v["step_label"],
        "n_extrapolation": "not checked" if v["detector"] is None else fmt_int(v["n_extrapolation"] or 0),
        "n_flagged": fmt_int(v.get("n_flagged_kept")),
        "n_shrunk": fmt_int(v.get("n_shrunk")),
        "n_at_level": fmt_int(v.get("n_at_level")),
        "detector": "not checked" if v["detector"] is None else f"{v['detector']} ({v['policy']})",
    }
    method = v.get("ci_inference", "sample")
    # a delta interval computed with the overdispersed model's scaled covariance says so wherever it is shown
    covariance = (v.get("model_ci") or {}).get("covariance") if method == "delta" else None
    d["covers"] = CI_COVERS[method] if covariance is None else v["intervals"][0]["covers"]
    d["ci_kind"] = CI_SHORT[method] if covariance is None else ci_short(f"delta ({covariance})")
    d["ci_phrase"] = (
        "fixed model only: model-estimation uncertainty not computed"
        if method == "sample"
        else f"model uncertainty by {'the delta method' if method == 'delta' else 'bootstrap refits'}"
        + (f" with the covariance scaled by the {covariance}" if covariance else "")
    )
    if v["detector"] is not None and v["policy"] == "exclude":
        d["ep_share"] = fmt_share(v["n_extrapolation"] or 0, v["n"] + (v["n_extrapolation"] or 0))
    else:
        d["ep_share"] = "-"
    if v.get("nlm") and v.get("anlm") is not None:
        a, alo, ahi = fmt_nlm(v["anlm"], v["anlm_ci_low"], v["anlm_ci_high"])
        d.update(
            anlm=a,
            anlm_ci_low=alo,
            anlm_ci_high=ahi,
            median_nlm=fmt_est(v.get("median_nlm"), None, None)[0],
            share_linear=fmt_percent(v.get("share_linear")),
            n_nlm_flat=fmt_int(v.get("n_nlm_flat") or 0),
            n_nlm_constant=fmt_int(v.get("n_nlm_constant") or 0),
            nlm_method=_nlm_method(v),
        )
    else:
        d.update(
            anlm="-",
            anlm_ci_low="-",
            anlm_ci_high="-",
            median_nlm="-",
            share_linear="-",
            n_nlm_flat="-",
            n_nlm_constant="-",
            nlm_method="not computed",
        )
    return d


def _typed(v: dict, key: str) -> Quantity | None:
    """The variant's quantity ``key`` of results.json (None: a results.json of an older fme)."""
    d = (v.get("quantities") or {}).get(key)
    return None if d is None else Quantity.from_dict(d)


def _written(v: dict, key: str, fallback: Any, decimals: int) -> str:
    """The variant's quantity ``key`` as the report writes it (its unit and form), or, in a results.json of an
    older fme, ``fallback`` (already on the display scale) to ``decimals`` decimals."""
    q = _typed(v, key)
    return fmt_num(fallback, decimals) if q is None else written(q)


def level_label(v: dict) -> str:
    """The level rows already at are left out at: the variant's level (``all`` or a list), else the level of a
    single categorical step (``{feature: level}``), else ``feature level`` per stepped feature (never
    "level None")."""
    if v.get("level") is not None:
        return str(v["level"])
    steps = v.get("steps") or {}
    if len(steps) == 1:
        return str(next(iter(steps.values())))
    return ", ".join(f"{f} {val}" for f, val in steps.items())


def _nlm_method(v: dict) -> str:
    """The NLM method actually used ('exact', 'gauss-legendre'), as the effect's NLM line says it (the number
    of nodes is in the effect table's caption)."""
    return v.get("nlm_method") or "-"


def _est_cells(r: dict, level: str, q: Quantity | None = None) -> dict[str, str]:
    """An AME's cells from its quantity ``q`` (value, interval and rows in the report's unit), or from the row
    of a results.json of an older fme."""
    if q is not None:
        (ame, lo, hi), n = fmt_est(*q.display()), q.rows.n
    else:
        (ame, lo, hi), n = fmt_est(r["ame"], r["ci_low"], r["ci_high"]), r["n"]
    return {
        "ame": ame,
        "ci_low": lo,
        "ci_high": hi,
        "ci": f"[{lo}, {hi}]",
        "n": fmt_int(n),
        "level": level,
        "n_extrapolation": "not checked" if r.get("n_extrapolation") is None else fmt_int(r["n_extrapolation"]),
    }


def with_eps_rows(v: dict, cells: dict[str, str]) -> list[dict[str, str]] | None:
    """§1.6: the reported AME (extrapolation points left out) and the AME over all rows, EPs included."""
    w = v.get("with_eps")
    if not w:
        return None
    reported = {
        "rows": "extrapolation points left out (reported)",
        "n": cells["n"],
        "n_extrapolation": "0",
        "ame": cells["ame"],
        "ci_low": cells["ci_low"],
        "ci_high": cells["ci_high"],
        "ci": f"[{cells['ci_low']}, {cells['ci_high']}]",
        "level": cells["level"],
        "interval": cells["ci_kind"],
    }
    everything = {
        **_est_cells(w, cells["level"], _typed(v, "ame_with_eps")),
        "rows": "all evaluated rows, extrapolation points included",
        "interval": CI_SHORT["sample"],
    }  # the AME with the points is computed with the model held fixed
    everything["n_extrapolation"] = fmt_int(w["n_extrapolation"])
    return [reported, everything]


def eps_intervals(rows: list[dict[str, str]]) -> str:
    """The caption's words on the intervals of the with/without-extrapolation table, from its rows: 'first row:
    delta, second row: fixed model (rows)', or one kind for both rows when they share it."""
    kinds = [r["interval"] for r in rows]
    if len(set(kinds)) == 1:
        return f"both rows: {kinds[0]}"
    return "; ".join(f"{w} row: {k}" for w, k in zip(("first", "second"), kinds))


#: Display names of the step multipliers in the sensitivity table.
STEP_SIZES = {0.5: "h/2", 1.0: "h", 2.0: "2h"}


def sensitivity_rows(v: dict, level: str) -> list[dict[str, str]] | None:
    """§1.7: display cells of the AME at h/2, h and 2h (None for categorical steps)."""
    if v.get("sensitivity") is None:
        return None
    rows = []
    for r in v["sensitivity"]:
        c = {
            **_est_cells(r, level, _typed(v, f"ame_step_x{r['factor']:g}") if r.get("ame") is not None else None),
            "size": STEP_SIZES.get(r["factor"], f"{fmt_g(r['factor'])}h"),
            "step": r["step_label"],
        }
        if r.get("error"):
            c.update(direction=f"not computed: {r['error']}", ci="-", n="-")
        else:
            c["direction"] = sentences.direction_word(r["ci_low"], r["ci_high"])
        rows.append(c)
    return rows


def stability_cells(st: dict, ame_cell_decimals: int, quantities: dict | None = None) -> dict[str, Any]:
    """§1.7: display rows (quantity, value) of the partition's stability across subsamples, and the cells.

    Every share names its denominator: the evaluated rows the refits resample, which on a Dask sample
    (``of_sample``: the evaluated rows of all the data) are the sample's; refits that could not run
    (``not_run``) say why in one row."""
    k = st["subsamples"]
    if st.get("not_run"):
        return {
            "rows": [{"quantity": "Refits", "value": f"not run: {st['not_run']}"}],
            "cells": {"k": fmt_int(k), "not_run": st["not_run"]},
        }
    qs = quantities or {}

    def num(key: str, fallback: Any, decimals: int) -> str:
        """The number ``key`` as its quantity (``quantities``: the variant's in results.json) writes it, else
        (an older results.json) the record's ``fallback`` to ``decimals`` decimals."""
        return fmt_num(fallback, decimals) if key not in qs else written(Quantity.from_dict(qs[key]))

    def share(key: str, n: int, of: int) -> str:
        return fmt_share(n, of) if key not in qs else written(Quantity.from_dict(qs[key]))

    c = {
        "ari_median": num("ari_median", st.get("ari_median"), 3),
        **{k: num(f"stability_{k}", st.get(k), 3) for k in ("ari_min", "ari_max")},
        "k": fmt_int(k),
        "n_each": fmt_int(st["n_each"]),
    }
    d = ame_cell_decimals

    def ame(key: str) -> str:
        """The subsamples' AME ``key`` in the AME's unit with the decimals of its cell (``d``): as its quantity
        writes it, or (a results.json whose quantity has no such form, or none) its value to ``d`` decimals."""
        q = None if f"stability_{key}" not in qs else Quantity.from_dict(qs[f"stability_{key}"])
        if q is not None and q.form != "estimate":
            return written(q)
        return fmt_num(st.get(key) if q is None else q.display()[0], d)

    of = st.get("of_sample")
    rows_of = (
        f"the {fmt_int(st['n_rows'])} evaluated rows of the sample, itself "
        f"{share('stability_share_sample', st['n_rows'], of)} of all {fmt_int(of)} evaluated rows"
        if of
        else f"the {fmt_int(st['n_rows'])} evaluated rows"
    )
    full = "the tree grown on the sample" if of else "the full data"
    rows = [
        {
            "quantity": "Subsamples",
            "value": f"{count_words(k, 'random subsamples')} of {count_words(st['n_each'], 'rows')} each "
            f"({share('stability_share_each', st['n_each'], st['n_rows'])} of {rows_of}; drawn without replacement)",
        }
    ]
    root = st["root_split"]
    if st["n_refits"]:
        same = fmt_int(st["n_same_root"])
        rows.append(
            {
                "quantity": f"First split ({root} in {full})" if root else f"First split (none in {full})",
                "value": f"the same in {same} of {count_words(st['n_refits'], 'refits')}",
            }
        )
        rows.append(
            {
                "quantity": "Subspaces (leaves)",
                "value": f"{'tree grown on the sample' if of else 'full data'} {fmt_int(st['n_leaves_full'])}; "
                f"refits median {num('stability_leaves_median', st['leaves_median'], 1)} "
                f"(range {fmt_int(st['leaves_min'])} to {fmt_int(st['leaves_max'])})",
            }
        )
        rows.append(
            {
                "quantity": f"Agreement with {'the sample' if of else 'the full'} partition (adjusted Rand index: 1 "
                "same grouping, 0 chance)",
                "value": f"median {c['ari_median']} (range {c['ari_min']} to {c['ari_max']})",
            }
        )
    rows.append(
        {
            "quantity": "AME in the subsamples",
            "value": f"{ame('ame_min')} to {ame('ame_max')} (SD {ame('ame_sd')}); "
            f"same sign as the AME in {fmt_int(st['n_same_sign'])} of {c['k']}",
        }
    )
    failed = fmt_int(st["n_failed"])
    if st["n_failed"]:
        failed += ": " + "; ".join(st["errors"])
    rows.append({"quantity": "Refits that failed", "value": failed})
    return {"rows": rows, "cells": c}


def _sign(x: float | None) -> str:
    if x is None:
        return "-"
    return "+" if x > 0 else ("-" if x < 0 else "0")


def sign_agreement(expected: str | None, ame: float | None, lo: float | None, hi: float | None) -> dict[str, str]:
    """§1.8: observed sign of the AME and whether it agrees with the expected sign.

    ``agree`` is "yes" only when the whole CI lies on the expected side of zero, "no" when it lies wholly on
    the other side, "unclear" when the CI includes zero (or there is none), "-" without an expected sign.
    """
    observed = _sign(ame)
    if expected is None:
        agree = "-"
    elif lo is None or hi is None or lo <= 0 <= hi:
        agree = "unclear"
    else:
        ci_side = "+" if lo > 0 else "-"
        agree = "yes" if ci_side == expected else "no"
    return {
        "expected": expected or "not stated",
        "observed": observed,
        "agree": agree,
        "differs": expected is not None and observed != expected,
    }
