"""Alt text and captions of an effect's figures, numbered in reading order."""

from __future__ import annotations

from pathlib import Path

from ..._utils.numfmt import count, fmt_est, fmt_int, fmt_share
from ..inputs.config import ReportConfig
from ..inputs.specs import FLAG_DEFAULTS as FLAG_THRESHOLDS
from ..inputs.wording import count_words
from .extrapolation_text import extrapolation_words
from .partition_view import shown_leaves

__all__ = ["figure_entries"]

#: Figures drawn on the effects' scale and what of theirs is in the report's unit (the caption names it).
_EFFECT_SCALE = {
    "fme-scatter": "fMEs and AME",
    "fme-hexbin": "Mean fMEs and AME",
    "fme-density": "fMEs and AME",
    "came-tree": "cAMEs, CIs and fMEs",
    "came": "cAMEs and CIs",
}


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


def figure_entries(
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
            alt, cap = extrapolation_words(v, fig, cells, step, cfg.observations, sample)
        elif k == "fme-scatter":
            alt = (
                f"Scatter plot of the fMEs of {step} against {fig['feature']}: the AME is {cells['ame']}{u} "
                f"(dashed line), half of the fMEs lie between {cells['q25']} and {cells['q75']}, and "
                f"{fmt_int(v['n_negative'])} of {cells['n']} are negative."
            )
            left_out = fig.get("n_left_out")  # the rows without an fME: tall ticks on the rug
            cap = (
                f"fMEs of {step} against {fig['feature']} (n = {cells['n']}; {count(fig['n_drawn'], 'point')} "
                f"drawn), with the AME (dashed), zero (solid) and a rug of all observed {fig['feature']} values"
                + (f" ({count(fig['rug_drawn'], 'quantile')} of all rows drawn)" if fig.get("rug_quantiles") else "")
                + (f"; taller ticks mark the {count(left_out, 'extrapolation point')} left out." if left_out else ".")
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
                f"{count(fig['n_clipped'], 'value')} below -1 drawn at -1; 1 = linear)."
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
                    f"{count_words(p['n_estimated'], 'rows')} that estimate the leaves (honest; the tree grew on the "
                    f"other {fmt_int(p['n_grown'])}), the "
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
        if k in ("came-tree", "came") and not v["partition"].get("honest"):
            # paper mode: one set of rows grows the tree and estimates its leaves; the caption names it
            n_tree = sum(int(r["n"]) for r in v["partition"]["leaves"])
            cap += (
                f" The tree grew on and its leaves are estimated on the same {count_words(n_tree, 'evaluated rows')}."
            )
        if unit and k in _EFFECT_SCALE:  # the axis of effects: the unit the tables give the AME in
            cap += f" {_EFFECT_SCALE[k]} in {unit}."
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
