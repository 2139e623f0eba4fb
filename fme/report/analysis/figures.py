"""Report figures (SVG for the documents, PNG copies), written deterministically.

SVGs get a fixed ``svg.hashsalt`` and no ``Date``; PNGs no ``Software``
metadata, so rebuilding gives byte-identical files. Colours are the
Okabe-Ito palette with a second encoding (marker, hatch or line style), each
with at least 3:1 contrast on white (checked in the tests via :data:`PALETTE`).
Alt text and captions are written from the numbers in :mod:`fme.report.present.context`.
Drawn with matplotlib, not seaborn: the reasons, figure by figure, are in :mod:`fme.plotting`'s docstring.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..._utils.numfmt import fmt_int, fmt_level
from ..._utils.validation import is_categorical
from ...plotting.data import finite_part, finite_rows, histogram_edges, kde_curve
from ..inputs.config import EffectConfig, ReportConfig
from ._svg import compact_svg

__all__ = ["PALETTE", "RC", "PDF_TEXT", "effect_figures", "save", "shown", "pdf_page", "min_font_pt"]

#: Colours used for data marks; all >= 3:1 against white (WCAG 1.4.11).
PALETTE = {"kept": "#0072B2", "excluded": "#6E6E6E", "reference": "#000000", "accent": "#B35300"}
RC = {
    "svg.hashsalt": "fme-report",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 10,
    "text.usetex": False,
    "axes.unicode_minus": False,
    "figure.dpi": 100,
}


def _t(text: Any) -> str:
    """Text for matplotlib: no mathtext (a ``$`` in a feature name stays literal)."""
    return str(text).replace("\\", "\\\\").replace("$", r"\$")


def save(fig: Any, out_dir: Path, name: str, dpi: int, tight: bool = True) -> dict[str, str]:
    import matplotlib.pyplot as plt

    svg = Path(out_dir) / "figures" / f"{name}.svg"
    png = Path(out_dir) / "figures" / f"{name}.png"
    box = "tight" if tight else None
    fig.savefig(svg, format="svg", metadata={"Date": None}, bbox_inches=box)
    # the HTML embeds every SVG (base64): compacted, the Boston report is ~0.5 MB smaller (<= 2 MB)
    svg.write_text(compact_svg(svg.read_text(encoding="utf-8")), encoding="utf-8")
    fig.savefig(png, format="png", dpi=dpi, metadata={"Software": None}, bbox_inches=box)
    plt.close(fig)
    return {"svg": f"figures/{name}.svg", "png": f"figures/{name}.png"}


def _subsample(n: int, max_points: int, seed: int) -> np.ndarray:
    if n <= max_points:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=max_points, replace=False))


def _unit(cfg: ReportConfig) -> str:
    return f" [{cfg.target_unit}]" if cfg.target_unit else ""


def _fig(cfg: ReportConfig, height: float = 3.4):
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(cfg.figures["width"], height), layout="constrained")


def _extrapolation(res, cfg: ReportConfig, steps: dict, out_dir: Path, vid: str) -> dict | None:
    if res.detector is None:
        return None
    not_drawn = None
    data = res.data
    if "extrapolation" in res.results.columns:
        ep_index = res.results.index[res.results["extrapolation"].to_numpy(dtype=bool)]
    else:
        ep_index = res.extrapolated.index
    evaluated = data.index.isin(res.results.index) & ~data.index.isin(ep_index)
    is_ep = data.index.isin(ep_index)
    feature = next((f for f in steps if not is_categorical(data[f])), next(iter(steps)))
    fig, ax = _fig(cfg, 3.0)
    col = data[feature]
    if is_categorical(col):
        levels = (
            list(col.cat.categories)
            if isinstance(col.dtype, pd.CategoricalDtype)
            else sorted(col.dropna().unique().tolist(), key=str)
        )
        x = np.arange(len(levels))
        a = [int(((col == lv) & evaluated).sum()) for lv in levels]
        b = [int(((col == lv) & is_ep).sum()) for lv in levels]
        ax.bar(x, a, color=PALETTE["kept"], label="evaluated")
        ax.bar(x, b, bottom=a, color="white", edgecolor=PALETTE["excluded"], hatch="///", label="extrapolation point")
        ax.set_xticks(x, [_t(lv) for lv in levels])
    else:
        values = col.to_numpy(dtype=float)
        fin = finite_part(values)
        ok = fin.mask
        ax.hist(
            [values[evaluated & ok], values[is_ep & ok]],
            bins=histogram_edges(fin.values, 30),
            stacked=True,
            color=[PALETTE["kept"], "white"],
            edgecolor=[PALETTE["kept"], PALETTE["excluded"]],
            hatch=[None, "///"],
            label=["evaluated", "extrapolation point"],
        )
        not_drawn = _note(ax, fin.note)
    ax.set_xlabel(_t(f"{feature} (observed value){_feature_unit(cfg, feature)}"))
    ax.set_ylabel("number of observations")
    ax.set_title(_t(f"Where the step {res.describe_steps()} leaves the data"))
    # below the axes, never over the bars (a legend inside covered the tallest bins)
    fig.legend(loc="outside lower center", ncols=2, frameon=False)
    # the counts drawn (on Dask data those of the seeded sample): the caption and alt text count these rows
    return {
        "kind": "extrapolation",
        "feature": feature,
        "not_drawn": not_drawn,
        "n_evaluated": int(evaluated.sum()),
        "n_extrapolation": int(is_ep.sum()),
        **save(fig, out_dir, f"{vid}-extrapolation", cfg.figures["png_dpi"]),
    }


def _note(ax, text: str | None) -> str | None:
    """Say in the figure what it leaves out (non-finite values): a legend line without a mark.

    Returns the text, which the figure's descriptor carries on to its caption."""
    if text:
        ax.plot([], [], linestyle="none", label=text)
    return text


def _feature_unit(cfg: ReportConfig, feature: str) -> str:
    unit = cfg.units.get(feature)
    return f" [{unit}]" if unit else ""


def rug_values(values: np.ndarray, max_points: int) -> tuple[np.ndarray, str]:
    """The marks of a rug of all observed values, at most ``max_points`` (an unsampled rug of
    10^5 rows made one SVG 1.17 MB): the distinct values, or when there are more, ``max_points`` evenly
    spaced quantiles of all rows (the rug's density is kept), and the legend label saying which."""
    v = values[np.isfinite(values)]
    distinct = np.unique(v)
    if distinct.size <= max_points:
        return distinct, "observed values (all rows)"
    q = np.quantile(v, np.linspace(0.0, 1.0, int(max_points)), method="inverted_cdf")
    return q, f"observed values ({fmt_int(max_points)} quantiles of all rows)"


def _fme_plot(res, cfg: ReportConfig, steps: dict, out_dir: Path, vid: str) -> dict:
    fm = res.results["fme"].to_numpy(dtype=float)
    ame = float(fm.mean())
    X = res.data.loc[res.results.index]
    numeric = [f for f in steps if not is_categorical(res.data[f])]
    idx = _subsample(len(fm), cfg.figures["max_points"], cfg.seed)
    ylab = _t(f"fME of {res.describe_steps()}{_unit(cfg)}")
    fig, ax = _fig(cfg)
    info: dict[str, Any] = {"n_drawn": int(idx.size), "n": int(fm.size)}
    if len(steps) == 1 and len(numeric) == 1:
        f = numeric[0]
        x = X[f].to_numpy(dtype=float)
        drawn = finite_rows(fm, x)
        sel = idx[drawn.mask[idx]]
        ax.scatter(
            x[sel],
            fm[sel],
            s=14,
            facecolors="none",
            edgecolors=PALETTE["kept"],
            linewidths=0.9,
            marker="o",
            label="fME of one observation",
        )
        info["not_drawn"] = _note(ax, drawn.note)
        allx, rug_label = rug_values(res.data[f].to_numpy(dtype=float), cfg.figures["max_points"])
        info["rug_drawn"], info["rug_quantiles"] = int(allx.size), "quantiles" in rug_label
        ax.plot(
            allx,
            np.full(allx.size, 0),
            "|",
            color=PALETTE["excluded"],
            markersize=8,
            alpha=0.6,
            transform=ax.get_xaxis_transform(),
            label=rug_label,
        )
        ax.axhline(0, color=PALETTE["reference"], linewidth=0.8)
        ax.axhline(ame, color=PALETTE["accent"], linestyle="--", linewidth=1.4, label="AME")
        ax.set_xlabel(_t(f"{f}{_feature_unit(cfg, f)}"))
        ax.set_ylabel(ylab)
        ax.set_title(_t(f"fMEs against {f}"))
        info["kind"] = "fme-scatter"
        info["feature"] = f
    elif len(steps) == 2 and len(numeric) == 2:
        f1, f2 = numeric
        x1, x2 = X[f1].to_numpy(dtype=float), X[f2].to_numpy(dtype=float)
        drawn = finite_rows(fm, x1, x2)
        ok = drawn.mask
        if ok.any():
            hb = ax.hexbin(
                x1[ok],
                x2[ok],
                C=fm[ok],
                gridsize=18,
                reduce_C_function=np.mean,
                cmap="viridis",
                mincnt=1,
                edgecolors="face",
            )
            cb = fig.colorbar(hb, ax=ax)
            cb.set_label(_t(f"mean fME{_unit(cfg)}"))
        info["not_drawn"] = _note(ax, drawn.note)
        ax.set_xlabel(_t(f"{f1}{_feature_unit(cfg, f1)}"))
        ax.set_ylabel(_t(f"{f2}{_feature_unit(cfg, f2)}"))
        ax.set_title(_t(f"Mean fME of {res.describe_steps()} by {f1} and {f2}"))
        info["kind"] = "fme-hexbin"
        info["features"] = [f1, f2]
    else:
        info["not_drawn"] = _density(ax, fm, ame)
        ax.set_xlabel(ylab)
        ax.set_ylabel("density")
        ax.set_title(_t(f"Distribution of the fMEs of {res.describe_steps()}"))
        info["kind"] = "fme-density"
    if ax.get_legend_handles_labels()[0]:
        ax.legend(frameon=False, fontsize=8)
    info.update(save(fig, out_dir, f"{vid}-fme", cfg.figures["png_dpi"]))
    return info


def _density(ax, values: np.ndarray, mean: float) -> str | None:
    fin = finite_part(values)
    v = fin.values
    ax.hist(
        v,
        bins=histogram_edges(v, 30),
        density=v.size > 0,
        color="#CFE3F2",
        edgecolor=PALETTE["kept"],
        label="histogram",
    )
    curve = kde_curve(v, n_grid=200, pad=0.0)
    if curve is not None:
        ax.plot(*curve, color=PALETTE["kept"], linewidth=1.6, label="kernel density")
    ax.axvline(0, color=PALETTE["reference"], linewidth=0.8)
    if np.isfinite(mean):
        ax.axvline(mean, color=PALETTE["accent"], linestyle="--", linewidth=1.4, label="mean")
    return _note(ax, fin.note)


def _nlm_plot(res, cfg: ReportConfig, out_dir: Path, vid: str) -> dict:
    raw = res.results["nlm"].to_numpy(dtype=float)
    v = raw[np.isfinite(raw)]  # NaN: undefined NLM (constant path), counted in the legend
    clipped = np.clip(v, -1, 1)
    fig, ax = _fig(cfg, 3.0)
    ax.hist(clipped, bins=np.linspace(-1, 1, 41), color="#CFE3F2", edgecolor=PALETTE["kept"], label="NLM")
    if v.size:
        ax.axvline(float(v.mean()), color=PALETTE["accent"], linestyle="--", linewidth=1.4, label="ANLM")
    n_undefined = int(np.isnan(raw).sum())
    n_flat, n_constant = int(getattr(res, "n_nlm_flat", 0) or 0), int(getattr(res, "n_nlm_constant", 0) or 0)
    if n_undefined:  # flat and constant paths counted apart
        _note(ax, f"NLM undefined: {n_undefined} of {raw.size} ({n_flat} flat, {n_constant} constant paths)")
    not_drawn = _note(ax, finite_part(raw[~np.isnan(raw)]).note)
    ax.axvline(1, color=PALETTE["reference"], linewidth=0.8, linestyle=":", label="linear (NLM = 1)")
    ax.set_xlabel("NLM (values below -1 shown at -1)")
    ax.set_ylabel("number of observations")
    ax.set_title(_t(f"Non-linearity of the fMEs of {res.describe_steps()}"))
    ax.legend(frameon=False, fontsize=8, loc="upper left")
    return {
        "kind": "nlm",
        "n_clipped": int((v < -1).sum()),
        "n_undefined": n_undefined,
        "not_drawn": not_drawn,
        "n_flat": n_flat,
        "n_constant": n_constant,
        **save(fig, out_dir, f"{vid}-nlm", cfg.figures["png_dpi"]),
    }


def _came_plot(part, cfg: ReportConfig, out_dir: Path, vid: str) -> dict:
    """Dot plot of the cAMEs; of a partition with more than :data:`MAX_TREE_LEAVES` leaves the largest ones
    by n (ties: node order), as the report's tables show them (184 leaves made 1.6 MB)."""
    leaves = part.leaves
    n_all = len(leaves)
    if n_all > MAX_TREE_LEAVES:
        leaves = leaves.assign(_neg=-leaves["n"]).sort_values(["_neg", "node"], kind="stable")
        leaves = leaves.head(MAX_TREE_LEAVES).drop(columns="_neg").sort_values("node", kind="stable")
    fig, ax = _fig(cfg, 0.9 + 0.55 * (len(leaves) + 1))
    honest = bool(getattr(part, "honest", False))
    # honest: one set of rows, those that estimate the leaves: the top row is their AME, not all rows'
    root = part.estimation_root if honest else part.root
    first = "estimation rows" if honest else "all rows"
    labels = [f"{first} (n = {int(root['n'])})"] + [
        f"leaf {int(r['node'])}: {r['rule']} (n = {int(r['n'])})" for _, r in leaves.iterrows()
    ]
    est = np.r_[root["came"], leaves["came"].to_numpy(dtype=float)]
    lo = np.r_[root["came_ci_low"], leaves["came_ci_low"].to_numpy(dtype=float)]
    hi = np.r_[root["came_ci_high"], leaves["came_ci_high"].to_numpy(dtype=float)]
    y = np.arange(len(est))[::-1]
    ax.errorbar(
        est[1:],
        y[1:],
        xerr=[est[1:] - lo[1:], hi[1:] - est[1:]],
        fmt="o",
        color=PALETTE["kept"],
        capsize=3,
        label="cAME with CI",
    )
    ax.errorbar(
        est[:1],
        y[:1],
        xerr=[est[:1] - lo[:1], hi[:1] - est[:1]],
        fmt="D",
        color=PALETTE["reference"],
        capsize=3,
        label=f"AME ({first}) with CI",
    )
    ax.axvline(0, color=PALETTE["excluded"], linewidth=0.8)
    ax.axvline(est[0], color=PALETTE["reference"], linewidth=0.8, linestyle="--")
    ax.set_yticks(y, [_t(s) for s in labels])
    ax.set_xlabel(_t(f"cAME of {part.effects.describe_steps()}{_unit(cfg)}"))
    which = (
        f"{len(leaves)} subspace" + ("s" if len(leaves) != 1 else "")
        if len(leaves) == n_all
        else f"the {len(leaves)} largest of {n_all} subspaces"
    )
    ax.set_title(_t(f"cAMEs on {which} ({part.method}, {fmt_level(part.conf_level)} CIs)"))
    rows = None
    if honest:
        rows = {"all": int(part.root["n"]), "estimation": int(root["n"])}
        _note(ax, f"Every row: the {rows['estimation']:,} rows that estimate the leaves (honest)")
    ax.legend(frameon=False, fontsize=8, loc="best")
    return {
        "kind": "came",
        "leaves_drawn": int(len(leaves)),
        "rows": rows,
        **save(fig, out_dir, f"{vid}-came", cfg.figures["png_dpi"]),
    }


#: Largest tree drawn as a diagram: up to this many leaves the boxes never overlap or clip (tested
#: geometrically); a larger partition gets the dot plot and the leaf tables only.
MAX_TREE_LEAVES = 16


#: Text area of a PDF page in inches (US letter; the typst template's 1.25 in margins, 0.75 in on a landscape
#: page), less 1 in of height for the caption.
PDF_TEXT = {"portrait": (6.0, 7.5), "landscape": (9.5, 6.0)}


def pdf_page(width: float, height: float) -> tuple[str, float]:
    """(page orientation, scale) that shows a ``width`` x ``height`` inch figure largest in the PDF.

    Landscape only when it shows the figure more than 15 % larger.

    typst shrinks a figure to the text area; its text shrinks with it (follow-up 7: a wide tree goes on a
    landscape page when that shrinks it less).
    """
    scales = {o: min(1.0, w / width, h / height) for o, (w, h) in PDF_TEXT.items()}
    # a landscape page breaks the reading flow: only for a clear gain
    best = "landscape" if scales["landscape"] > 1.15 * scales["portrait"] else "portrait"
    return best, scales[best]


def min_font_pt(fig: Any) -> float:
    """Smallest font size (pt, before any scaling) of the visible texts of a figure."""
    sizes = [
        t.get_fontsize()
        for t in fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"))
        if t.get_text().strip() and t.get_visible()
    ]
    return float(min(sizes)) if sizes else 0.0


def _tree_plot(part, cfg: ReportConfig, out_dir: Path, vid: str) -> dict | None:
    """The cAME tree of :class:`fme.plotting.PartitionDisplay` (None for a single-node tree or one with more
    than :data:`MAX_TREE_LEAVES` leaves)."""
    if not 2 <= len(part.leaves) <= MAX_TREE_LEAVES:
        return None
    import matplotlib.pyplot as plt

    from ...plotting import PartitionDisplay

    with plt.rc_context({"font.size": 10.0, "figure.dpi": 100}):  # the display's own layout
        display = PartitionDisplay.from_partition(part)  # units make its note wider than the tree
    fig = display.figure_
    for text in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "set_text")):
        raw = text.get_text()
        if "$" in raw and "\\$" not in raw:
            text.set_text(_t(raw))
    width, height = (float(v) for v in fig.get_size_inches())
    page, scale = pdf_page(width, height)
    smallest = min_font_pt(fig)
    # the rows the panels draw (honest: the estimation rows, on Dask data a seeded sample of them beyond sample_size)
    panel_rows = int(sum(len(v) for v in display.leaf_values.values()))
    return {
        "kind": "came-tree",
        "pdf_page": page,
        "pdf_width_in": round(width * scale, 3),
        "panel_rows": panel_rows,
        "pdf_min_font_pt": round(smallest * scale, 2),
        **save(fig, out_dir, f"{vid}-tree", cfg.figures["png_dpi"], tight=False),
    }


#: Effect-scale columns of a partition's leaves and root (cAMEs, their spread and every interval).
_LEAF_EFFECT_COLUMNS = ("came", "sd_fme", "came_ci_low", "came_ci_high", "std_error", "conf_low", "conf_high")


def shown(res, part, conf_level: float, scale: float = 1.0) -> tuple[Any, Any]:
    """Shallow copies of ``res`` and ``part`` carrying the numbers the report's tables show.

    Every effect-scale number (fMEs, cAMEs, CIs) is multiplied by ``scale`` (100 for a class probability:
    percentage points, as :func:`fme.report.present.display.prepare_variant` does for the tables), and when the
    effect has a model-uncertainty interval (delta method, bootstrap) each leaf's CI is that interval, as
    in the leaf table. So a tree figure's numbers are the table cells. The caller's
    objects are not modified.
    """
    import copy

    from .details import model_interval

    use_model = model_interval(res, conf_level)["model_ci"] is not None
    if scale == 1.0 and not use_model:
        return res, part
    res2 = res
    if scale != 1.0:  # a frozen dataclass: a new one with the scaled fME columns
        import dataclasses

        cols = [c for c in res.results.columns if c == "fme" or str(c).startswith("fme_")]
        res2 = dataclasses.replace(res, results=res.results.assign(**{c: res.results[c] * scale for c in cols}))
    if part is None:
        return res2, None

    def table(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.copy()
        for c in _LEAF_EFFECT_COLUMNS:
            if c in frame:
                frame[c] = frame[c].astype(float) * scale
        if use_model and "conf_low" in frame:
            has = frame["conf_low"].notna()
            frame.loc[has, "came_ci_low"] = frame.loc[has, "conf_low"]
            frame.loc[has, "came_ci_high"] = frame.loc[has, "conf_high"]
        return frame

    part2 = copy.copy(part)
    root = part.root.to_frame().T if isinstance(part.root, pd.Series) else part.root
    part2.effects, part2.leaves = res2, table(part.leaves)
    part2.root = table(root).iloc[0] if isinstance(part.root, pd.Series) else table(root)
    part2.estimation_root = table(part.estimation_root.to_frame().T).iloc[0]
    if getattr(part, "estimation_sample", None) is not None:  # Dask: the estimation rows drawn in the panels
        part2.estimation_sample = part.estimation_sample.assign(fme=part.estimation_sample["fme"] * scale)
    return res2, part2


def effect_figures(
    res: Any, part: Any, eff: EffectConfig, cfg: ReportConfig, out_dir: Path, vid: str, scale: float = 1.0
) -> list[dict]:
    """Write the figures of one effect; return their descriptors (files and facts).

    ``scale``: factor of the effect-scale numbers as the tables show them (100 for a class probability,
    with ``cfg.target_unit`` naming percentage points); see :func:`shown`.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res, part = shown(res, part, float(eff.conf_level), scale)
    out = []
    with plt.rc_context(RC):
        ex = _extrapolation(res, cfg, eff.steps, out_dir, vid)
        if ex is not None:
            out.append(ex)
        out.append(_fme_plot(res, cfg, eff.steps, out_dir, vid))
        if res.has_nlm:
            out.append(_nlm_plot(res, cfg, out_dir, vid))
        if part is not None and len(part.leaves) >= 1:
            tree = _tree_plot(part, cfg, out_dir, vid)
            if tree is not None:
                out.append(tree)
            dots = _came_plot(part, cfg, out_dir, vid)
            if len(part.leaves) > MAX_TREE_LEAVES:
                dots["tree_omitted"] = len(part.leaves)
            out.append(dots)
    return out
