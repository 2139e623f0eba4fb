"""Quantities of the numbers an effect's diagnostics print: NLM averages, shares of rows, the partition's ARI,
cANLMs and the global test's p-value, contract statistics, data ranges and SDs.

One builder per number kind. The analysis stage writes what they return into ``results.json``
(:func:`fme.report.analysis.typed.typed_payload`); the present stage calls the same builder on the same
summary and prints :func:`~fme.report.inputs.quantities.written` of it, so the printed text is the quantity's
by construction. Each quantity says how it is written (its ``form``): an NLM as
:func:`fme._utils.numfmt.fmt_nlm`, a p-value as :func:`fme._utils.numfmt.fmt_p`, a share of rows as
:func:`fme._utils.numfmt.fmt_share` of its row set, a data range to 6 significant digits.
"""

from __future__ import annotations

from typing import Any

from .constants import NO_ROWS
from .quantities import UNITLESS, Interval, Quantity, RowSet, Unit, written
from .verdicts import contract_not_valid

__all__ = [
    "nlm_quantities",
    "ep_share",
    "ari_median",
    "global_p",
    "leaf_canlm",
    "leaf_cov",
    "dispersion",
    "contract_quantities",
    "feature_quantities",
    "range_quantities",
    "RANGE_FORMS",
    "challenger_ame",
    "leaf_share",
    "global_statistic",
    "alpha_level",
    "p_words",
    "leaf_difference_p",
    "evaluated_ranges",
    "EVALUATED_FORM",
    "fme_spread",
    "stability_quantities",
    "overview_step",
]


def _vid(v: dict) -> str:
    """The variant's id (a summary written by hand in a test may lack one)."""
    return str(v.get("id", "effect"))


def _level(v: dict) -> float:
    return float(v.get("conf_level") or 0.95)


def _evaluated(v: dict) -> RowSet:
    return RowSet("evaluated rows", int(v.get("n") or 0))


def nlm_quantities(v: dict) -> dict[str, Quantity]:
    """The ANLM of an effect variant with its interval (paper §5.4), the median NLM and the share of rows with
    an NLM of at least 0.9; empty when no NLM was computed."""
    if not v.get("nlm") or v.get("anlm") is None:
        return {}
    vid, step = _vid(v), v.get("step_label", _vid(v))
    rows = _evaluated(v)
    kind = "rows' spread"
    out = {
        "anlm": Quantity(
            f"{vid}/anlm",
            f"ANLM of {step}",
            v["anlm"],
            UNITLESS,
            rows,
            Interval(v.get("anlm_ci_low"), v.get("anlm_ci_high"), _level(v), kind),
            form="nlm",
        ),
        "median_nlm": Quantity(f"{vid}/median_nlm", f"median NLM of {step}", v.get("median_nlm"), UNITLESS, rows),
    }
    if v.get("share_linear") is not None:
        out["share_linear"] = Quantity(
            f"{vid}/share_linear",
            f"share of rows with NLM of at least 0.9, {step}",
            v["share_linear"],
            Unit("percent", "%", 100.0),
            rows,
            form="percent:1",
        )
    return out


def ep_share(v: dict) -> Quantity | None:
    """The share of extrapolation points among the rows the step was taken on (policy ``exclude``), as the
    flags table prints it: a count of one row set over the set it is part of."""
    if v.get("detector") is None or v.get("policy") != "exclude":
        return None
    n_ep = int(v.get("n_extrapolation") or 0)
    total = RowSet("rows the step was taken on", int(v.get("n") or 0) + n_ep)
    return Quantity(
        f"{_vid(v)}/ep_share",
        "share of extrapolation points",
        n_ep / total.n if total.n else None,
        Unit("percent", "%", 100.0),
        RowSet("extrapolation points", n_ep, of=total),
        form="share",
    )


def ari_median(v: dict) -> Quantity | None:
    """The median adjusted Rand index of the partition's subsample refits against the full tree."""
    st = v.get("stability") or {}
    if st.get("ari_median") is None:
        return None
    refits = RowSet("successful refits", int(st.get("subsamples") or 0) - int(st.get("n_failed") or 0))
    return Quantity(
        f"{_vid(v)}/ari_median", "median adjusted Rand index", st["ari_median"], UNITLESS, refits, form="fixed:3"
    )


def _global_test(v: dict) -> tuple[dict, RowSet]:
    """The partition's global test that all leaf cAMEs are equal (empty where it has none) and the rows of its
    leaves."""
    part = v.get("partition") or {}
    n = sum(int(leaf.get("n") or 0) for leaf in part.get("leaves") or [])
    return (part.get("tests") or {}).get("global") or {}, RowSet("rows of the leaves", n)


def global_p(v: dict) -> Quantity | None:
    """The p-value of the global test that all leaf cAMEs are equal (only where the partition has one)."""
    g, rows = _global_test(v)
    if g.get("p_value") is None:
        return None
    return Quantity(
        f"{_vid(v)}/global_test_p",
        "p-value of the global test of equal leaf cAMEs",
        g["p_value"],
        UNITLESS,
        rows,
        form="p",
    )


def _node_key(leaf: dict) -> str:
    return str(leaf.get("node"))


def leaf_canlm(vid: str, leaf: dict, level: float, key: str | None = None) -> Quantity | None:
    """A leaf's cANLM and its interval, as the leaf table and the flags print it (the decimals of its interval);
    ``key`` names a head row ('root', 'estimation_root') instead of a node."""
    if leaf.get("canlm") is None:
        return None
    k = key or f"leaf_{_node_key(leaf)}"
    return Quantity(
        f"{vid}/canlm_{k}",
        f"cANLM of {k.replace('_', ' ')}",
        leaf["canlm"],
        UNITLESS,
        RowSet("rows of the leaf", int(leaf.get("n") or 0)),
        Interval(leaf.get("canlm_ci_low"), leaf.get("canlm_ci_high"), level, "rows' spread"),
    )


def leaf_cov(vid: str, leaf: dict, key: str | None = None) -> Quantity | None:
    """A leaf's coefficient of variation of its fMEs (SD / |cAME|), two decimals."""
    if leaf.get("cov_fme") is None:
        return None
    k = key or f"leaf_{_node_key(leaf)}"
    return Quantity(
        f"{vid}/cov_{k}",
        f"coefficient of variation of the fMEs, {k.replace('_', ' ')}",
        leaf["cov_fme"],
        UNITLESS,
        RowSet("rows of the leaf", int(leaf.get("n") or 0)),
        form="fixed:2",
    )


def dispersion(d: dict | None, n: int) -> Quantity | None:
    """A Poisson or binomial GLM's dispersion (Pearson chi2 / residual df), two decimals."""
    if not d or d.get("dispersion") is None:
        return None
    return Quantity(
        "model/dispersion",
        "dispersion (Pearson chi2 / df)",
        d["dispersion"],
        UNITLESS,
        RowSet("estimation rows", n),
        form="fixed:2",
    )


def contract_quantities(vid: str, r: dict, index: int, rows: RowSet) -> dict[str, Quantity]:
    """A contract's estimate (with the interval its test used, in the contract's unit; a share or an ANLM
    without one, three decimals), test statistic (two decimals) and p-values, raw and Holm-adjusted; a test that
    is not valid (a standard error at rounding level) has no statistic and no p-value: the report prints why."""
    base = f"{vid}/contract_{index}"
    # a contract row keeps its numbers in the contract's own unit ('percentage points of P(yes)': already scaled)
    name, _, of = str(r.get("unit") or "").partition(" of ")
    unit = Unit(name, "pp" if name == "percentage points" else name, 1.0, of)
    interval = None
    if r.get("conf_low") is not None:
        interval = Interval(r["conf_low"], r.get("conf_high"), float(r.get("conf_level") or 0.95), str(r["inference"]))
    out = {
        "estimate": Quantity(
            f"{base}/estimate",
            f"estimate of contract {r['expected']}",
            r.get("estimate"),
            unit,
            rows,
            interval,
            r.get("std_error"),
            form="estimate" if interval is not None else "fixed:3",
        )
    }
    if contract_not_valid(r) is not None:
        return out
    if r.get("statistic") is not None:
        out["statistic"] = Quantity(
            f"{base}/statistic",
            f"test statistic of contract {r['expected']}",
            r["statistic"],
            UNITLESS,
            rows,
            form="fixed:2",
        )
    for key, what in (("p_value", "p-value"), ("p_value_adj", "Holm-adjusted p-value")):
        if r.get(key) is not None:
            out[key] = Quantity(
                f"{base}/{key}", f"{what} of contract {r['expected']}", r[key], UNITLESS, rows, form="p"
            )
    return out


def feature_quantities(r: dict, n: int) -> dict[str, Quantity]:
    """A numeric feature's observed minimum and maximum (6 significant digits) and SD (4) over the data's rows,
    in the feature's own unit, as the feature dictionary prints them."""
    unit = Unit(str(r.get("unit") or ""))
    rows = RowSet("rows of the data", n)
    out: dict[str, Quantity] = {}
    for key, what, digits in (("min", "minimum", 6), ("max", "maximum", 6), ("sd", "SD", 4)):
        if r.get(key) is not None:
            out[key] = Quantity(
                f"feature/{r['feature']}/{key}",
                f"observed {what} of {r['feature']}",
                r[key],
                unit,
                rows,
                form=f"gt:{digits}",
            )
    return out


#: The forms an extrapolation range is written in: the sentence on where the points are (6 significant digits,
#: thousands separators) and the extrapolation figure's caption (4).
RANGE_FORMS = ("gt:6", "g:4")


def range_quantities(
    vid: str, feature: str, low: Any, high: Any, rows: RowSet, key: str, form: str
) -> dict[str, Quantity]:
    """The range of ``feature`` over ``rows`` (the extrapolation points outside the reference data), its ends
    written in ``form``: 'gt:6' in the sentence on where they are, 'g:4' in the extrapolation figure's caption."""
    return {
        f"{key}_{end}": Quantity(
            f"{vid}/{key}_{end}/{feature}",
            f"{end} of {feature} over the {rows.name}",
            x,
            UNITLESS,
            rows,
            form=form,
        )
        for end, x in (("min", low), ("max", high))
        if x is not None
    }


#: How a leaf's evaluated range is written: as its hyperrectangle's bounds (6 significant digits).
EVALUATED_FORM = "g:6"


def evaluated_ranges(vid: str, leaf: dict) -> dict[str, Quantity]:
    """The range each numeric feature of a leaf's hyperrectangle takes over the leaf's rows ('evaluated 5.09017
    to 14.4383'), keyed 'eval_range_leaf_<node>_<min|max>_<feature>'."""
    rows = RowSet("rows of the leaf", int(leaf.get("n") or 0))
    out: dict[str, Quantity] = {}
    for b in leaf.get("box") or []:
        if b.get("kind", "numeric") != "numeric" or b.get("eval_min") is None:
            continue
        key = f"eval_range_leaf_{_node_key(leaf)}"
        qs = range_quantities(vid, b["feature"], b["eval_min"], b.get("eval_max"), rows, key, EVALUATED_FORM)
        out.update({f"{k}_{b['feature']}": q for k, q in qs.items()})
    return out


def challenger_ame(vid: str, c: dict, unit: Unit, level: float) -> Quantity:
    """The challenger model's own AME and its interval (its primary inference), in the report's unit, over the
    rows it evaluated."""
    return Quantity(
        f"{vid}/challenger/ame",
        "challenger AME",
        c.get("ame"),
        unit,
        RowSet("evaluated rows", int(c.get("n") or 0)),
        Interval(c.get("ci_low"), c.get("ci_high"), level, "challenger's primary"),
    )


def leaf_share(vid: str, leaf: dict, total: RowSet, key: str | None = None) -> Quantity:
    """A leaf's rows as a share of the rows the leaves are counted against (of an honest partition the
    estimation rows), as the leaf table prints it."""
    k = key or f"leaf_{_node_key(leaf)}"
    n = int(leaf.get("n") or 0)
    return Quantity(
        f"{vid}/share_{k}",
        f"share of the rows in {k.replace('_', ' ')}",
        n / total.n if total.n else None,
        Unit("percent", "%", 100.0),
        RowSet("rows of the leaf", n, of=total),
        form="share",
    )


def global_statistic(v: dict) -> Quantity | None:
    """The Wald statistic of the global test that all leaf cAMEs are equal, two decimals."""
    g, rows = _global_test(v)
    if g.get("statistic") is None:
        return None
    return Quantity(
        f"{_vid(v)}/global_test_statistic",
        "Wald statistic of the global test of equal leaf cAMEs",
        g["statistic"],
        UNITLESS,
        rows,
        form="fixed:2",
    )


def alpha_level(v: dict) -> Quantity:
    """The level the report's tests are read at, 1 - ``conf_level`` (0.05), as the flags' thresholds print it."""
    return Quantity(
        f"{_vid(v)}/alpha_level",
        "significance level of the tests (1 - conf_level)",
        1 - _level(v),
        UNITLESS,
        _evaluated(v),
        form="g:6",
    )


def leaf_difference_p(vid: str, r: dict, rows: RowSet) -> dict[str, Quantity]:
    """The p-values, raw and Holm-adjusted, of one leaf-difference test ('[3] - [2]') over the rows of its two
    leaves."""
    return {
        key: Quantity(
            f"{vid}/leaf_difference_{key}_{r['hypothesis']}",
            f"{what} of the difference of leaf cAMEs {r['hypothesis']}",
            r[key],
            UNITLESS,
            rows,
            form="p",
        )
        for key, what in (("p_value", "p-value"), ("p_value_adj", "Holm-adjusted p-value"))
        if r.get(key) is not None
    }


def p_words(q: Quantity) -> str:
    """'p = 0.034' or 'p < 0.001': a p-value quantity in a sentence or a flag's value cell."""
    text = written(q)
    return "p undefined" if text == "-" else (f"p {text}" if text.startswith("<") else f"p = {text}")


def fme_spread(v: dict, unit: Unit) -> dict[str, Quantity]:
    """The SD and the first and third quartiles of an effect's fMEs over its evaluated rows (paper §5.1: the
    fMEs' distribution beside their mean), in the AME's unit, three decimals, as the effect table and the
    figures' alt text print them; keyed 'fme_sd', 'fme_q25', 'fme_q75'."""
    vid, step = _vid(v), v.get("step_label", _vid(v))
    rows = _evaluated(v)
    return {
        f"fme_{key}": Quantity(
            f"{vid}/fme_{key}", f"{what} of the fMEs of {step}", v.get(key), unit, rows, form="fixed:3"
        )
        for key, what in (("sd", "SD"), ("q25", "first quartile"), ("q75", "third quartile"))
        if key in v
    }


def stability_quantities(v: dict, unit: Unit, ame_decimals: int) -> dict[str, Quantity]:
    """The numbers of the partition's stability across subsamples (paper §6): the rows of each subsample as a
    share of the evaluated rows they are drawn from (and, on a Dask sample, the sample's share of all evaluated
    rows), the median number of leaves of the refits, the range of their adjusted Rand index, and the smallest,
    largest and SD of the subsamples' AMEs in the AME's unit with the decimals of the AME's cell
    (``ame_decimals``); keyed 'stability_<name>'."""
    st = v.get("stability") or {}
    if not st or st.get("not_run"):
        return {}
    vid = _vid(v)
    evaluated = RowSet("evaluated rows", int(st.get("n_rows") or 0))
    if st.get("of_sample"):
        evaluated = RowSet(
            "evaluated rows of the sample", evaluated.n, of=RowSet("evaluated rows", int(st["of_sample"]))
        )
    each = RowSet("rows of one subsample", int(st.get("n_each") or 0), of=evaluated)
    refits = RowSet("refits on subsamples", int(st.get("n_refits") or 0))
    pct = Unit("percent", "%", 100.0)
    out = {
        "stability_share_each": Quantity(
            f"{vid}/stability_share_each",
            "share of the evaluated rows in one subsample",
            each.n / evaluated.n if evaluated.n else None,
            pct,
            each,
            form="share",
        )
    }
    if evaluated.of is not None:
        out["stability_share_sample"] = Quantity(
            f"{vid}/stability_share_sample",
            "share of all evaluated rows in the sample",
            evaluated.n / evaluated.of.n if evaluated.of.n else None,
            pct,
            evaluated,
            form="share",
        )
    for key, what, q_unit, form in (
        ("leaves_median", "median number of leaves of the refits", UNITLESS, "fixed:1"),
        ("ari_min", "smallest adjusted Rand index of the refits", UNITLESS, "fixed:3"),
        ("ari_max", "largest adjusted Rand index of the refits", UNITLESS, "fixed:3"),
        ("ame_min", "smallest AME of the subsamples", unit, f"fixed:{ame_decimals}"),
        ("ame_max", "largest AME of the subsamples", unit, f"fixed:{ame_decimals}"),
        ("ame_sd", "SD of the AMEs of the subsamples", unit, f"fixed:{ame_decimals}"),
    ):
        if st.get(key) is not None:
            out[f"stability_{key}"] = Quantity(f"{vid}/stability_{key}", what, st[key], q_unit, refits, form=form)
    return out


def overview_step(r: dict, kind: str, unit: str, n_reference: int) -> Quantity | None:
    """The step of a numeric feature in the ranked overview, in the feature's unit, written as its table does
    (4 significant digits, thousands separators): one SD of the feature over the reference data's rows
    (``kind`` 'sd'), else one unit (a stated constant of the method, over no rows); None for a categorical
    level or a feature whose AME was not computed."""
    if r.get("level") is not None or r.get("step") is None:
        return None
    sd = kind == "sd"
    return Quantity(
        f"overview/{r['feature']}/step",
        f"SD of {r['feature']} over the reference data, the overview's step"
        if sd
        else f"one unit of {r['feature']}, the overview's step",
        r["step"],
        Unit(unit),
        RowSet("rows of the reference data", n_reference) if sd else NO_ROWS,
        form="gt:4",
    )
