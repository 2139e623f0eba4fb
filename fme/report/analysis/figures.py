"""Report figures (SVG for the documents, PNG copies), written deterministically.

Every figure is drawn by a display of :mod:`fme.plotting` (:class:`~fme.plotting.ExtrapolationDisplay`,
:class:`~fme.plotting.FMEDisplay`, :class:`~fme.plotting.NLMDisplay`, :class:`~fme.plotting.PartitionDisplay`,
:class:`~fme.plotting.CAMEDisplay`) with the report's :data:`STYLE` passed in; this module only chooses which,
gives each its axes (the figure's size from the rows it draws), the units of the config and a title, and saves
it. The displays take each axis unit and row count from the numbers they draw.

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

from ..._utils.numfmt import count, fmt_level
from ..._utils.validation import is_categorical
from ...plotting import PlotStyle
from ...plotting.data import rug_values
from ..inputs.config import EffectConfig, ReportConfig
from ..inputs.schema import DEFAULTS
from ._svg import compact_svg

__all__ = [
    "PALETTE",
    "STYLE",
    "RC",
    "PDF_TEXT",
    "effect_figures",
    "save",
    "shown",
    "style",
    "pdf_page",
    "min_font_pt",
    "rug_values",
]

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
#: The report's styling of :mod:`fme.plotting`'s displays: :data:`PALETTE` by role with second encodings
#: (hollow points, a dashed AME, a solid zero, hatched extrapolation points, tall ticks for the rows left out
#: beside the short ticks of every observed value) and font sizes of at least 8 pt before the PDF scales them.
STYLE = PlotStyle(
    colors={
        "points": PALETTE["kept"],
        "bars": PALETTE["kept"],
        "came": PALETTE["kept"],
        "average": PALETTE["accent"],
        "negative": PALETTE["accent"],
        "extrapolation": PALETTE["excluded"],
        "edge": PALETTE["excluded"],
        "reference": PALETTE["reference"],
        "arrow": PALETTE["reference"],
        "text": PALETTE["reference"],
        "rug": PALETTE["reference"],
        "fill": "#CFE3F2",
    },
    fontsize={"label": 9, "tick": 9, "legend": 8, "note": 8},
    hollow_points=True,
    fill_alpha=1.0,
    fill_edge=PALETTE["kept"],
    zero_linestyle="-",
    average_linewidth=1.4,
)


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


def _unit(cfg: ReportConfig) -> str | None:
    return cfg.target_unit or None


def _fig(cfg: ReportConfig, height: float = 3.4):
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(cfg.figures["width"], height), layout="constrained")


def style(cfg: ReportConfig) -> PlotStyle:
    """The report's :class:`fme.plotting.PlotStyle`: :data:`STYLE` with the config's point limit (scatter points
    and rug marks; the schema's default when a config object lacks it) and seed."""
    limit = int(cfg.figures.get("max_points", DEFAULTS["figures"]["max_points"]))
    return STYLE.replace(max_points=limit, rug_points=limit, seed=int(cfg.seed))


def _literal(fig: Any) -> None:
    """Every text of ``fig`` read literally: a ``$`` in a feature name is no mathtext."""
    for text in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "set_text")):
        raw = text.get_text()
        if "$" in raw and "\\$" not in raw:
            text.set_text(_t(raw))


def _finish(fig: Any, title: str, out_dir: Path, name: str, cfg: ReportConfig, tight: bool = True) -> dict[str, str]:
    """Title the figure (above the display's legend), make its texts literal and save it."""
    _literal(fig)
    fig.suptitle(_t(title), fontsize=RC["axes.titlesize"])
    return save(fig, out_dir, name, cfg.figures["png_dpi"], tight)


def _extrapolation(res, cfg: ReportConfig, steps: dict, out_dir: Path, vid: str) -> dict | None:
    """:class:`fme.plotting.ExtrapolationDisplay` of the first numeric stepped feature (None without a check)."""
    if res.detector is None:
        return None
    from ...plotting import ExtrapolationDisplay

    data = res.data
    feature = next((f for f in steps if not is_categorical(data[f])), next(iter(steps)))
    _, ax = _fig(cfg, 3.0)
    disp = ExtrapolationDisplay.from_effects(res, feature=feature, units=cfg.units, ax=ax, style=style(cfg))
    # the counts drawn (on Dask data those of the seeded sample): the caption and alt text count these rows
    return {
        "kind": "extrapolation",
        "feature": feature,
        "not_drawn": disp.not_drawn_,
        "n_evaluated": disp.n_evaluated_,
        "n_extrapolation": disp.n_extrapolation_,
        **_finish(
            disp.figure_, f"Where the step {res.describe_steps()} leaves the data", out_dir, f"{vid}-extrapolation", cfg
        ),
    }


def _fme_plot(res, cfg: ReportConfig, steps: dict, out_dir: Path, vid: str) -> dict:
    """:class:`fme.plotting.FMEDisplay`: against the feature (one numeric step), a map of the mean (two), or the
    distribution (else)."""
    from ...plotting import FMEDisplay

    numeric = [f for f in steps if not is_categorical(res.data[f])]
    fig, ax = _fig(cfg)
    kw: dict[str, Any] = {"units": cfg.units, "prediction_unit": _unit(cfg), "ax": ax, "style": style(cfg)}
    info: dict[str, Any] = {"n": int(res.n)}
    if len(steps) == 1 and len(numeric) == 1:
        f = numeric[0]
        disp = FMEDisplay.from_effects(res, features=[f], kind="scatter", rug=True, **kw)
        info.update(kind="fme-scatter", feature=f, rug_drawn=int(len(disp.rug_.get_xdata())))
        info["n_left_out"] = int(len(disp.extrapolation_.get_offsets())) if disp.extrapolation_ is not None else 0
        info["rug_quantiles"] = bool(disp.rug_quantiles_)
        title = f"fMEs against {f}"
    elif len(steps) == 2 and len(numeric) == 2:
        disp = FMEDisplay.from_effects(res, features=numeric, kind="map", gridsize=18, **kw)
        info.update(kind="fme-hexbin", features=list(numeric))
        title = f"Mean fME of {res.describe_steps()} by {numeric[0]} and {numeric[1]}"
    else:
        disp = FMEDisplay.from_effects(res, kind="density", **kw)
        info["kind"] = "fme-density"
        title = f"Distribution of the fMEs of {res.describe_steps()}"
    info["n_drawn"] = disp.n_drawn_ if disp.kind_ == "scatter" else int(disp.drawn_.mask.sum())
    info["not_drawn"] = disp.not_drawn_
    info.update(_finish(fig, title, out_dir, f"{vid}-fme", cfg))
    return info


def _nlm_plot(res, cfg: ReportConfig, out_dir: Path, vid: str) -> dict:
    """:class:`fme.plotting.NLMDisplay` as a histogram on [-1, 1] (lower values drawn at -1), without a KDE."""
    from ...plotting import NLMDisplay

    raw = res.results["nlm"].to_numpy(dtype=float)
    v = raw[np.isfinite(raw)]  # NaN: undefined NLM (constant path), counted in the legend
    fig, ax = _fig(cfg, 3.0)
    disp = NLMDisplay.from_effects(
        res, kind="density", value_range=(-1.0, 1.0), kde=False, units=cfg.units, ax=ax, style=style(cfg)
    )
    return {
        "kind": "nlm",
        "n_clipped": int((v < -1).sum()),
        "n_undefined": int(np.isnan(raw).sum()),
        "not_drawn": disp.not_drawn_,
        "n_flat": int(getattr(res, "n_nlm_flat", 0) or 0),
        "n_constant": int(getattr(res, "n_nlm_constant", 0) or 0),
        **_finish(fig, f"Non-linearity of the fMEs of {res.describe_steps()}", out_dir, f"{vid}-nlm", cfg),
    }


def _came_plot(part, cfg: ReportConfig, out_dir: Path, vid: str) -> dict:
    """:class:`fme.plotting.CAMEDisplay`; of a partition with more than :data:`MAX_TREE_LEAVES` leaves the largest
    ones by n (ties: node order), as the report's tables show them (184 leaves made 1.6 MB)."""
    from ...plotting import CAMEDisplay

    n_all = len(part.leaves)
    n_drawn = min(n_all, MAX_TREE_LEAVES)
    fig, ax = _fig(cfg, 1.3 + 0.55 * (n_drawn + 1))
    CAMEDisplay.from_partition(
        part, max_leaves=MAX_TREE_LEAVES, units=cfg.units, prediction_unit=_unit(cfg), ax=ax, style=style(cfg)
    )
    honest = bool(getattr(part, "honest", False))
    which = (
        f"{n_drawn} subspace" + ("s" if n_drawn != 1 else "")
        if n_drawn == n_all
        else f"the {n_drawn} largest of {count(n_all, 'subspace')}"
    )
    rows = {"all": int(part.root["n"]), "estimation": int(part.estimation_root["n"])} if honest else None
    return {
        "kind": "came",
        "leaves_drawn": n_drawn,
        "rows": rows,
        **_finish(
            fig, f"cAMEs on {which} ({part.method}, {fmt_level(part.conf_level)} CIs)", out_dir, f"{vid}-came", cfg
        ),
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
        # the leaves' cAME lines in the accent over the kept-colour histograms; units would widen its note
        display = PartitionDisplay.from_partition(part, style=STYLE.replace(colors={"came": PALETTE["accent"]}))
    fig = display.figure_
    _literal(fig)
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
