"""results.json + config -> the template context (plain dicts of display strings).

Templates only place these strings; they never compute or format numbers.
Table cells and generated sentences share the same formatted strings.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from ..._utils.numfmt import (
    count,
    decimals_for,
    fmt_est,
    fmt_g,
    fmt_int,
    fmt_level,
    fmt_nlm,
    fmt_num,
    fmt_percent,
    fmt_share,
)
from ..inputs.claims import CANNOT, count_claim, range_claim
from ..inputs.quantities import RowSet, fixed_bounds
from ..inputs.specs import CI_COVERS, CI_SHORT, ci_short
from ..inputs.wording import count_words
from . import audit, changelog, sentences
from .comparisons import challenger_cells, contract_cells, interaction_cells
from .display import (
    ci_method_text,
    effect_title,
    interval_rows,
    model_ci_scope,
    prepare_variant,
    scale_of,
    target_phrase,
    value_unit,
)
from .flags import FLAG, dispersion_text, flag_rows, model_flag_rows, threshold_rows
from .levels import level_flag_rows, level_rows, level_sentences
from .model_context import causes_phrase, detector_text, effective_step_rows, fit_text, whole_model
from .partition_view import (  # noqa: F401
    MAX_LEAVES_SHOWN,
    boxes,
    head_rows,
    honesty_sentence,
    leaf_rows,
    leaf_test_cells,
    shown_leaves,
    splits_sentence,
    where_came_holds,
)

__all__ = [
    "build_context",
    "effect_cells",
    "FLAG_THRESHOLDS",
    "with_eps_rows",
    "sensitivity_rows",
    "stability_cells",
    "sign_agreement",
    "report_id",
]

#: Default flag thresholds (a config's ``flags:`` overrides them; see fme.report.inputs.specs.FLAG_DEFAULTS).
from ..inputs.config import ReportConfig
from ..inputs.specs import FLAG_DEFAULTS as FLAG_THRESHOLDS  # noqa: E402


def effect_cells(v: dict) -> dict[str, str]:
    """All display strings of one effect variant (used by tables *and* sentences); ``v`` is a display copy
    (:func:`~fme.report.present.display.prepare_variant`) or, its fixed-model interval read from
    ``fixed_interval``, a variant of results.json."""
    low, high = (v["ci_low"], v["ci_high"]) if "ci_low" in v else fixed_bounds(v)
    ame, lo, hi = fmt_est(v["ame"], low, high)
    d = {
        "ame": ame,
        "ci_low": lo,
        "ci_high": hi,
        "n": fmt_int(v["n"]),
        "n_total": fmt_int(v["n_total"]),
        "level": fmt_level(v["conf_level"]),
        "sd": fmt_num(v["sd"], 3),
        "q25": fmt_num(v["q25"], 3),
        "q75": fmt_num(v["q75"], 3),
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


def _est_cells(r: dict, level: str) -> dict[str, str]:
    ame, lo, hi = fmt_est(r["ame"], r["ci_low"], r["ci_high"])
    return {
        "ame": ame,
        "ci_low": lo,
        "ci_high": hi,
        "ci": f"[{lo}, {hi}]",
        "n": fmt_int(r["n"]),
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
        **_est_cells(w, cells["level"]),
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
            **_est_cells(r, level),
            "size": STEP_SIZES.get(r["factor"], f"{fmt_g(r['factor'])}h"),
            "step": r["step_label"],
        }
        if r.get("error"):
            c.update(direction=f"not computed: {r['error']}", ci="-", n="-")
        else:
            c["direction"] = sentences.direction_word(r["ci_low"], r["ci_high"])
        rows.append(c)
    return rows


def stability_cells(st: dict, ame_cell_decimals: int) -> dict[str, Any]:
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
    c = {
        "ari_median": fmt_num(st.get("ari_median"), 3),
        "ari_min": fmt_num(st.get("ari_min"), 3),
        "ari_max": fmt_num(st.get("ari_max"), 3),
        "k": fmt_int(k),
        "n_each": fmt_int(st["n_each"]),
    }
    d = ame_cell_decimals
    of = st.get("of_sample")
    rows_of = (
        f"the {fmt_int(st['n_rows'])} evaluated rows of the sample, itself {fmt_share(st['n_rows'], of)} of all "
        f"{fmt_int(of)} evaluated rows"
        if of
        else f"the {fmt_int(st['n_rows'])} evaluated rows"
    )
    full = "the tree grown on the sample" if of else "the full data"
    rows = [
        {
            "quantity": "Subsamples",
            "value": f"{count_words(k, 'random subsamples')} of {count_words(st['n_each'], 'rows')} each "
            f"({fmt_share(st['n_each'], st['n_rows'])} of {rows_of}; drawn without replacement)",
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
                f"refits median {fmt_num(st['leaves_median'], 1)} "
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
            "value": f"{fmt_num(st['ame_min'], d)} to {fmt_num(st['ame_max'], d)} (SD {fmt_num(st['ame_sd'], d)}); "
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


def report_id(config_name: str, config_sha256: str) -> str:
    """'<config name>-<first 12 hex digits of the config's sha256>'."""
    return f"{config_name}-{config_sha256[:12]}"


def _root_phrase(v: dict, cells: dict) -> str:
    """The AME a partition figure draws at its root, in its alt text: of an honest partition that of the rows
    that estimate the leaves, with the AME of all rows beside."""
    p = v["partition"]
    est = p.get("estimation_root")
    if not p.get("honest") or not est:
        return f"the AME of all rows is {cells['ame']}"
    ame = fmt_est(est["came"], est["came_ci_low"], est["came_ci_high"])[0]
    return (
        f"the AME of its {count_words(est['n'], 'estimation rows')} is {ame} (of all "
        f"{count_words(v['n'], 'rows')}: {cells['ame']})"
    )


def drawn_rows(sample: dict | None, n: int, noun: str) -> RowSet:
    """The rows a per-row figure or table draws: on Dask data beyond ``sample_size`` those of the seeded sample
    (a row set of its own, drawn from all rows), else the evaluated rows themselves."""
    if sample and not sample.get("all_rows"):
        data = RowSet("rows of the data", int(sample["of"]))
        return RowSet(
            f"{noun} of the seeded sample", int(n), of=RowSet("rows of the seeded sample", int(sample["rows"]), of=data)
        )
    return RowSet(noun, int(n))


def unstated_flags(label: str, texts: list[str]) -> list[dict[str, str]]:
    """A flag for every statement whose claim failed its verifier ('cannot be stated: <reason>'): the report
    prints the reason instead of the statement, and the flags table points a reviewer to it."""
    return [
        {
            "effect": label,
            "rule": "statement verified before it is printed",
            "threshold": "holds",
            "value": t[t.index(CANNOT) :],
            "status": FLAG,
        }
        for t in texts
        if CANNOT in t
    ]


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


def _extrapolation_words(v: dict, fig: dict, cells: dict, step: str, noun: str, sample: dict | None) -> tuple[str, str]:
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
        loc = "; " + range_claim(fig["feature"], where["min"], where["max"], eps).text
    alt = (
        f"Stacked histogram of {fig['feature']}: {count_words(n_eval, noun)}{of_sample} evaluated (solid) and "
        f"{count_words(n_ep, 'extrapolation points')}{of_sample} (hatched){loc}."
    )
    drawn = f"; drawn: {rows.words()} evaluated and {count_words(n_ep, 'extrapolation points')}"
    cap = f"Where the step {step} leaves the data ({v['detector']} detector){drawn}{loc}."
    return alt, cap


def _figures(
    v: dict, cells: dict, cfg: ReportConfig, counter: list[int], unit: str | None = None, sample: dict | None = None
) -> list[dict]:
    """Alt text and captions of an effect's figures; ``unit`` is the unit the tables give the AME in (a
    classifier's: percentage points, never the config's ``target_unit`` such as "probability"); ``sample``:
    results.json's ``data.sample`` (Dask data), whose rows the per-row figures draw."""
    out = []
    step, unit = cells["step"], cfg.target_unit if unit is None else unit
    u = f" {unit}" if unit else ""
    for fig in v["figures"]:
        counter[0] += 1
        k = fig["kind"]
        if k == "extrapolation":
            alt, cap = _extrapolation_words(v, fig, cells, step, cfg.observations, sample)
        elif k == "fme-scatter":
            alt = (
                f"Scatter plot of the fMEs of {step} against {fig['feature']}: the AME is {cells['ame']}{u} "
                f"(dashed line), half of the fMEs lie between {cells['q25']} and {cells['q75']}, and "
                f"{fmt_int(v['n_negative'])} of {cells['n']} are negative."
            )
            cap = (
                f"fMEs of {step} against {fig['feature']} (n = {cells['n']}; {count(fig['n_drawn'], 'point')} "
                f"drawn), with the AME (dashed), zero (solid) and a rug of all observed {fig['feature']} values"
                + (f" ({count(fig['rug_drawn'], 'quantile')} of all rows drawn)." if fig.get("rug_quantiles") else ".")
            )
        elif k == "fme-hexbin":
            f1, f2 = fig["features"]
            alt = (
                f"Hexagon map of the mean fME of {step} over {f1} and {f2}: the AME is {cells['ame']}{u} and "
                f"half of the fMEs lie between {cells['q25']} and {cells['q75']}."
            )
            cap = f"Mean fME of {step} per hexagon of {f1} and {f2} (n = {cells['n']})."
        elif k == "fme-density":
            alt = (
                f"Histogram and density of the fMEs of {step}: the AME is {cells['ame']}{u} (dashed line) and "
                f"half of the fMEs lie between {cells['q25']} and {cells['q75']}."
            )
            cap = f"Distribution of the fMEs of {step} (n = {cells['n']}), with the AME (dashed) and zero (solid)."
        elif k == "nlm":
            share = fmt_share(v["n_nlm_linear"], v["n_nlm"])
            alt = (
                f"Histogram of the NLM values of {step}: the ANLM is {cells['anlm']} and {share} of the NLMs "
                f"are at least {FLAG_THRESHOLDS['anlm']} (close to linear)."
            )
            cap = (
                f"Non-linearity measure of the fMEs of {step} (n = {fmt_int(v['n_nlm'])}; "
                f"{fmt_int(fig['n_clipped'])} values below -1 drawn at -1; 1 = linear)."
            )
        elif k == "came-tree":
            p = v["partition"]
            split_on = sorted({c["feature"] for leaf in p["leaves"] for c in leaf["box"] if c["restricted"]})
            alt = (
                f"Tree diagram of the {count(len(p['leaves']), 'cAME subspace')} of {step}, split on "
                f"{', '.join(split_on)}, with a histogram of the fMEs in each leaf; {_root_phrase(v, cells)}."
            )
            cap = (
                f"cAME tree of {step} ({p['method']}): each leaf shows n, cAME with CI and the distribution of "
                "its fMEs; the table after the next figure gives the same numbers."
            )
            if p.get("honest"):  # one set of rows: those that estimate the leaves
                cap += (
                    " Every count, share, cAME, CI and fME panel is over the "
                    f"{count_words(p['n_estimated'], 'rows')} that estimate the leaves (honest; the tree grew on the other {fmt_int(p['n_grown'])}), the "
                    "root's AME and the dashed line too; the note under the tree gives the AME of all "
                    f"{count_words(v['n'], 'evaluated rows')}, {cells['ame']}."
                )
                if fig.get("panel_rows") is not None and fig["panel_rows"] < p["n_estimated"]:
                    cap += f" The panels draw a seeded sample of {fmt_int(fig['panel_rows'])} of those rows."
        elif k == "came":
            n_all = len(v["partition"]["leaves"])
            leaves = shown_leaves(v["partition"], v["id"])[0]["leaves"]  # as drawn: the largest 16 of more
            lo = min(leaves, key=lambda r: (r["came"], int(r["node"])))  # ties: the lowest node, in both engines
            hi = max(leaves, key=lambda r: (r["came"], -int(r["node"])))
            d = fmt_est(lo["came"], lo["came_ci_low"], lo["came_ci_high"])[0]
            e = fmt_est(hi["came"], hi["came_ci_low"], hi["came_ci_high"])[0]
            which = (
                count(len(leaves), "subspace")
                if len(leaves) == n_all
                else f"the {len(leaves)} largest of {count_words(n_all, 'subspaces')}"
            )
            alt = (
                f"Dot plot of the cAME with {cells['level']} CI for {which}: from {d} "
                f"(leaf {lo['node']}, {lo['rule']}) to {e} (leaf {hi['node']}, {hi['rule']}); "
                f"{_root_phrase(v, cells)}."
            )
            cap = f"cAMEs of {step} per subspace found by {v['partition']['method']} (n per leaf in the labels)."
            if fig.get("rows"):  # honest: one set of rows, named, and the AME of all rows beside
                r = fig["rows"]
                cap += (
                    f" Every row of the plot, the top one and its dashed line too, is over the "
                    f"{count_words(r['estimation'], 'rows')} that estimate the leaves (honest); the AME of all "
                    f"{count_words(r['all'], 'evaluated rows')} is {cells['ame']}, which differs by the rows the "
                    "tree grew on."
                )
            if fig.get("tree_omitted"):
                cap += (
                    f" The tree diagram is drawn up to 16 leaves; this partition has {fig['tree_omitted']}, so "
                    "the leaf tables give its structure."
                )
        else:  # pragma: no cover - new figure kinds must add wording here
            raise ValueError(f"no alt text for figure kind {k!r}")
        if fig.get("n_undefined"):
            cap += (
                f" The NLM is undefined for {count(fig['n_undefined'], 'row')}, not drawn: "
                f"{count(fig.get('n_flat', 0), 'flat path')} (the prediction varies negligibly) and "
                f"{count(fig.get('n_constant', 0), 'constant path')} (exactly constant)."
            )
        if fig.get("not_drawn"):
            cap += f" {fig['not_drawn'][0].upper()}{fig['not_drawn'][1:]}."
        out.append(
            {
                "svg": fig["svg"],
                "png": fig["png"],
                "alt": alt,
                "caption": f"Figure {counter[0]}: {cap}",
                "id": f"fig-{Path(fig['svg']).stem}",
                "pdf_page": fig.get("pdf_page"),
                "pdf_width": fig.get("pdf_width_in"),
            }
        )
    return out


def build_context(results: dict, cfg: ReportConfig, config_text: str, build_info: dict) -> dict[str, Any]:
    """Everything the report template needs, as display strings."""
    target, unit, prediction_scale = target_phrase(results, cfg)
    scale = scale_of(results)
    thresholds = cfg.flags or dict(FLAG_THRESHOLDS)
    # tables are numbered in reading order, one counter for the whole document (the template places them in
    # this order; tests/test_report_typed.py reads the rendered captions back)
    table_no = [0]

    def next_table() -> int:
        table_no[0] += 1
        return table_no[0]

    table_signoff = next_table()
    contracts = contract_cells(results["effects"])
    table_contracts = next_table() if contracts else None
    value = value_unit(results, cfg)
    challenger = challenger_cells(results["effects"], value)
    table_challenger = next_table() if challenger else None
    table_overview, table_flags, table_thresholds = next_table(), next_table(), next_table()
    model_view = whole_model(results, cfg, scale, table_no[0] + 1)
    table_no[0] = model_view["table_dictionary"]
    noun = cfg.observations
    units = cfg.units
    fig_counter = [0]
    effects, summary, overview, flags, plausibility = [], [], [], [], []
    ci_methods: set[str] = set()
    ci_captions: set[str] = set()
    for group in results["effects"]:
        variants = []
        for v in group["variants"]:
            if "error" in v:  # results.json of an older fme: the analysis now fails loudly instead
                raise ValueError(f"effect {v['id']} was not computed ({v['error']}); rebuild the report")
            v = prepare_variant(v, scale)
            v["level_label"] = level_label(v)
            v["expected_sign"] = group.get("config", {}).get("expected_sign")
            cells = effect_cells(v)
            ci_methods.add(v["ci_inference"])
            ci_captions.add(cells["ci_kind"])
            sentence = sentences.effect_sentence(v, cells, target, unit, noun, units)
            lin = sentences.linearity_sentence(v, cells)
            label = effect_title(group)
            if v.get("level") is not None:
                label = f"{label}: to level {v['level']}"
            summary.append({"text": sentence + (" " + lin if lin else ""), "anchor": f"sec-{v['id']}"})
            overview.append({"label": label, **cells})
            flags.extend(flag_rows(v, cells, label, thresholds))
            flags.extend(level_flag_rows(v, label))
            plausibility.append(
                {
                    "label": label,
                    "ame": cells["ame"],
                    "ci": f"[{cells['ci_low']}, {cells['ci_high']}]",
                    **sign_agreement(v["expected_sign"], v["ame"], v["ci_low"], v["ci_high"]),
                }
            )
            eps = with_eps_rows(v, cells)
            sens = sensitivity_rows(v, cells["level"])
            sens_sentence = sentences.sensitivity_sentence(v["sensitivity"], sens) if sens else None
            var = {
                "id": v["id"],
                "label": label,
                "error": None,
                "partition": None,
                "cells": cells,
                "sentence": sentence,
                "linearity": lin,
                "heading": f"Level {v['level']}" if v.get("level") is not None else None,
                "detector": v["detector"],
                "policy": v["policy"],
                "nlm": v.get("nlm"),
                "nlm_method": v.get("nlm_method"),
                "nlm_nodes": v.get("nlm_nodes"),
                "where": causes_phrase(
                    v["extrapolation_where"], v.get("n_extrapolation") or v.get("n_flagged_kept") or 0
                ),
                "with_eps": eps,
                "table_eps": next_table() if eps else None,
                "table_effect": next_table(),
                "intervals": interval_rows(v, cells["level"]),
                "table_intervals": next_table(),
                "effective_steps": effective_step_rows(v),
                "table_shrink": next_table() if v.get("effective_steps") else None,
                "levels": level_rows(v, cells, noun),
                "table_levels": next_table() if v.get("levels") else None,
                "level_sentences": level_sentences(v, label, unit, noun),
                "sensitivity": sens,
                "sensitivity_sentence": sens_sentence,
                "table_sensitivity": next_table() if sens else None,
                "figures": _figures(v, cells, cfg, fig_counter, unit, results["data"].get("sample")),
            }
            var["with_eps_phrase"] = sentences.with_eps_phrase(eps[1], noun, var["table_eps"]) if eps else None
            var["eps_intervals"] = eps_intervals(eps) if eps else None
            var["ep_line"] = ep_line(v, noun, var["where"], results["data"].get("sample"))
            flags.extend(
                unstated_flags(
                    label,
                    [
                        var["ep_line"] or "",
                        *(f["alt"] for f in var["figures"]),
                        *(f["caption"] for f in var["figures"]),
                    ],
                )
            )
            if v.get("partition"):
                p, omitted = shown_leaves(v["partition"], v["id"])
                var["partition"] = {
                    "method": p["method"],
                    "omitted": omitted,
                    "params": ", ".join(f"{k} = {val}" for k, val in sorted(p["params"].items()) if k != "method")
                    or "defaults",
                    "rows": leaf_rows(p, v["n"], thresholds["leaf_n"]),
                    "boxes": boxes(p),
                    "notes": p["notes"],
                    "holds": where_came_holds(p, noun, results["data"].get("sample")),
                    "table_leaves": next_table(),
                    "table_boxes": None,
                    "stability": None,
                    "honesty": honesty_sentence(p),
                    "tests": None,
                    "splits": splits_sentence(p.get("splits")),
                    "star": head_rows(p)[1],
                }
                if p.get("tests"):
                    var["partition"]["tests"] = leaf_test_cells(
                        p["tests"], float(v.get("conf_level", 0.95)), next_table(), v["partition"]["leaves"]
                    )
                var["partition"]["table_boxes"] = next_table()  # after the differences, as the template reads
                if v.get("stability"):
                    half = None if v["ci_low"] is None else (v["ci_high"] - v["ci_low"]) / 2
                    sc = stability_cells(v["stability"], decimals_for(half))
                    tab = next_table()
                    var["partition"]["stability"] = {
                        "rows": sc["rows"],
                        "table": tab,
                        "sentence": sentences.stability_sentence(sc["cells"], v["stability"].get("ari_median"), tab),
                    }
            variants.append(var)
        effects.append({"id": group["id"], "title": effect_title(group), "why": group["why"], "variants": variants})
    flags.extend(model_flag_rows(results.get("model") or {}, thresholds))
    flags.extend(unstated_flags("the report", [c["text"] for c in results.get("claims") or [] if not c["holds"]]))
    interactions = interaction_cells(results.get("interactions"), value, noun)
    table_interactions = next_table() if interactions else None
    table_plausibility = next_table()
    changes = changelog.changelog(results, build_info.get("previous"))
    table_changes = next_table() if changes and changes["rows"] else None
    n_fig_tables = table_no[0]
    versions = [{"name": k, "version": val} for k, val in sorted(results["versions"].items())]
    versions += [{"name": k, "version": val} for k, val in sorted(build_info.get("tools", {}).items())]
    fence = "`" * max(3, _longest_backtick_run(config_text) + 1)
    env = results.get("environment") or {}
    ctx = {
        "title": cfg.title,
        "owner": cfg.owner,
        "status": cfg.status,
        "intended_use": cfg.intended_use,
        "out_of_scope": cfg.out_of_scope,
        "target": target,
        "target_unit": unit,
        "prediction_scale": prediction_scale,
        "target_class": results.get("target_class"),
        "whole_model": model_view,
        "threshold_rows": threshold_rows(thresholds),
        "table_thresholds": table_thresholds,
        "ci_method": ci_method_text(ci_methods, fmt_level(cfg.conf_level)),
        "ci_caption": "; ".join(sorted(ci_captions)),
        "only_fixed": ci_methods == {"sample"},
        "model_ci_scope": model_ci_scope(ci_methods),
        "dispersion": dispersion_text((results.get("model") or {}).get("dispersion"), thresholds),
        "extrapolation_method": detector_text([e.extrapolation for e in cfg.effects]),
        "model": {"description": cfg.model.get("description", ""), **results["model"]},
        "data": results["data"],
        "reference": results["reference_data"],
        "test_fit": fit_text(results["test_fit"]),
        "config_name": results["config_name"],
        "config_sha256": results["config_sha256"],
        "inputs_sha256": build_info.get("inputs_sha256", ""),
        "seed": cfg.seed,
        "conf_level": fmt_level(cfg.conf_level),
        "versions": versions,
        "summary": summary,
        "contracts": contracts,
        "table_contracts": table_contracts,
        "challenger": challenger,
        "table_challenger": table_challenger,
        "interactions": interactions,
        "table_interactions": table_interactions,
        "overview": overview,
        "flags": flags,
        "effects": effects,
        "warnings": results["warnings"],
        "config_text": config_text,
        "fence": fence,
        "thresholds": thresholds,
        "linearity": [{"min": t, "word": w} for t, w in sentences.LINEARITY if t > float("-inf")],
        "stability_words": [{"min": t, "word": w} for t, w in sentences.STABILITY if t > float("-inf")],
        "generated": (_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC") if cfg.timestamp else None),
        "rebuild": rebuild_command(results, build_info),
        "table_signoff": table_signoff,
        "table_overview": table_overview,
        "table_flags": table_flags,
        "table_plausibility": table_plausibility,
        "table_versions": n_fig_tables + 1,
        "table_hashes": n_fig_tables + 2,
        "report_id": report_id(results["config_name"], results["config_sha256"]),
        "signoff": [{"role": r["role"], "name": r.get("name", "")} for r in cfg.signoff],
        "changes": changes,
        "table_changes": table_changes,
        "plausibility": plausibility,
        "any_expected": any(p["expected"] != "not stated" for p in plausibility),
        "fme_version": results["versions"].get("forward-marginal-effects", results["versions"].get("fme", "")),
        "environment": _environment_line(env),
        "sample_note": sample_note(results["data"]),
    }
    ctx.update(audit.audit_context(results, cfg, build_info))
    return ctx


def rebuild_command(results: dict, build_info: dict) -> str:
    """The command that rebuilds this report, run in the config's directory: the config's file name only, so a
    build through any path from any working directory prints the same line (and the report stays
    byte-identical)."""
    arg = build_info.get("config_arg") or f"{results['config_name']}.yaml"
    return f"fme report {Path(str(arg).replace(chr(92), '/')).name} --force"


def sample_note(data: dict) -> dict[str, str] | None:
    """engine: dask: which numbers are over all rows and which rest on the seeded sample (None otherwise).

    ``effect``: the sentence beside each effect's figures; ``appendix``: the reproducibility entry.
    """
    info = data.get("sample")
    if not info:
        return None
    tree = info.get("tree_sample_size")  # results.json of an older fme lack it
    at_most = f"at most {fmt_int(tree)} evaluated rows" if tree is not None else "evaluated rows"
    n, k = fmt_int(info["of"]), fmt_int(info["rows"])
    drawn = (
        f"every one of the {n} rows (the data have no more rows than sample_size {fmt_int(info['size'])})"
        if info["all_rows"]
        else f"a seeded sample of {k} of the {n} rows (seed {info['seed']}, sample_size {fmt_int(info['size'])})"
    )
    effect = (
        f"Computed out of core (engine: dask). Over all {n} rows: the row counts and exclusions, the AME with "
        "its CI and quartiles, the NLM summaries, the AME with extrapolation points, the step sensitivity "
        f"and the cAMEs of the subspaces. From {drawn}: the figures below, the per-row table, where the "
        "extrapolation points are, the evaluated ranges of the subspaces and the stability refits; the cAME "
        f"tree is grown on fme's own seeded sample of {at_most}."
    )
    appendix = (
        f"engine: dask; summaries over all {n} rows, per-row figures and tables from {drawn}. Based on the "
        f"sample: {', '.join(info['based_on_sample'])}; the cAME tree's splits: fme's seeded sample of "
        f"{at_most}. Over all "
        f"rows: {', '.join(info['all_rows_items'])}."
    )
    return {"effect": effect, "appendix": appendix}


def cluster_phrase(c: dict | None) -> str:
    """' Cluster: <scheduler address or local> (2 workers, 1 thread per worker, 2 threads).' ('' without)."""
    if not c:
        return ""
    per = c.get("threads_per_worker")  # results.json of an older fme lack it
    each = (
        ""
        if not per
        else (
            f"{count(per[0], 'thread')} per worker, "
            if len(per) == 1
            else f"{fmt_int(per[0])} to {fmt_int(per[-1])} threads per worker, "
        )
    )
    return (
        f" Cluster: {c['scheduler']} ({count(c['workers'], 'worker')}, {each}{count(c['threads'], 'thread')} in all)."
    )


def _environment_line(env: dict) -> str:
    """One sentence on where the report ran: OS, architecture and the lock (or its absence)."""
    where = f"{env.get('os', '?')} {env.get('os_release', '')} on {env.get('machine', '?')}".replace("  ", " ")
    lock = env.get("lock") or {}
    cluster = cluster_phrase(env.get("cluster"))
    if not lock.get("sha256"):
        return (
            f"{where}; no requirements.lock found (fme was installed from a wheel or an sdist), "
            "so the package versions listed are the only record of the environment." + cluster
        )
    text = f"{where}; {lock['file']} sha256 {lock['sha256']}"
    diff = lock.get("differences") or []
    if not diff:
        return text + "; every installed package equals its pin in the lock." + cluster
    shown = ", ".join(f"{d['name']} {d['installed'] or 'not installed'} (locked {d['locked']})" for d in diff[:5])
    more = f" and {len(diff) - 5} more" if len(diff) > 5 else ""
    return text + f"; {len(diff)} installed package(s) differ from the lock: {shown}{more}." + cluster


def _longest_backtick_run(text: str) -> int:
    best = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        best = max(best, run)
    return best
