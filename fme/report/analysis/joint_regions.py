"""The report's joint-regions section: one cAME tree grown on the fMEs of several configured effects at once.

:func:`run_joint_regions` grows :func:`fme.came` of a list of effects (a :class:`fme.JointPartitionResult`) on
the results the effects of ``joint_regions:`` computed already (same model, same rows), for pandas and Dask
builds alike, draws its tree with :class:`fme.plotting.JointPartitionDisplay` in the report's style and returns
the JSON-ready section of ``results.json``: every leaf's figures per effect, the decomposition of each effect's
fME variance into the parts within and between the regions (Herbinger et al., JMLR 2024, GADGET; paper §5.5
for the cAMEs) and its F test. The typed quantities and claims are added where ``results.json`` is written
(:func:`fme.report.analysis.joint_typed.type_joint_regions`).

The joint tree needs the same evaluated rows for every effect. When an extrapolation check, a categorical
step's rows already at its level or a missing value left different rows out of different effects, the
in-memory section recomputes each effect, with the same resolved steps, model, inference and seed, on the rows
that every effect evaluated (each of them passed every effect's own check); on Dask data it says why it was not
computed instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

import fme

from ..._utils.validation import is_dask_collection
from ..inputs.config import ReportConfig
from ..inputs.specs import bootstrap_kwargs
from .details import relabel_table
from .effect_parts import json_num

__all__ = ["run_joint_regions", "grow_joint_partition", "joint_figure", "DEFAULT_TITLE"]

#: The section's heading when the config gives no ``title``.
DEFAULT_TITLE = "Joint regions"

#: The growth parameters of a reduction (as for one effect's tree): a few per cent of the rows per leaf.
_REDUCE_SHARE = 0.02

#: Effect-scale columns of the joint leaves (cAMEs, their spread and every interval).
_EFFECT_COLUMNS = ("came", "sd_fme", "came_ci_low", "came_ci_high", "std_error", "conf_low", "conf_high")


def grow_joint_partition(results: list[Any], spec: dict[str, Any], conf: float, seed: int) -> Any:
    """:func:`fme.came` of the list ``results`` with the ``joint_regions`` settings, as an effect's partition
    grows (:func:`fme.report.analysis.effect_parts.grow_partition`): pruned to at most ``max_leaves`` regions
    (default 8) by the paper's reduction; without tree parameters grown as fmeffects grows a tree to reduce
    (CTree ``alpha`` 0.35 and ``minbucket`` 2 % of the rows, CART ``min_samples_leaf`` 2 %)."""
    params = {k: v for k, v in spec.items() if k not in ("effects", "title")}
    method = params.pop("method", "ctree")
    feats = params.pop("features", None)
    cap = params.pop("max_leaves", None)
    kw: dict[str, Any] = {k: params.pop(k) for k in ("honest", "honest_fraction", "standardize") if k in params}
    kw.update(method=method, features=feats, conf_level=conf, random_state=seed)
    if cap is None or "n_partitions" in params:
        return fme.came(results, **kw, **params)
    n = int(results[0].n)
    if method == "ctree":
        fill = {"alpha": 0.35, "minbucket": _REDUCE_SHARE * n} if not params else {"alpha": 0.05, "minbucket": 7}
    else:
        fill = {"min_samples_leaf": max(1, int(round(_REDUCE_SHARE * n))) if not params else 1}
    params = {**fill, **params}
    grown = fme.came(results, **kw, **params)
    if len(grown.leaf_ids) <= int(cap):
        return grown
    return fme.came(results, n_partitions=int(cap), **kw, **params)


def _common_rows(kept: dict, ids: list[str], cfg: ReportConfig, target_class: Any) -> tuple[list[Any], dict[str, Any]]:
    """The effects' results on one set of rows, and how they were found (see the module docstring)."""
    entries = [kept["effects"][i] for i in ids]
    results = [e["result"] for e in entries]
    by_effect = {i: int(r.n) for i, r in zip(ids, results)}
    rows: dict[str, Any] = {"by_effect": by_effect, "recomputed": False}
    if is_dask_collection(kept["data"]):  # the library checks that Dask effects evaluate the same rows
        rows["n"] = int(results[0].n)
        if len(set(by_effect.values())) > 1:
            each = ", ".join(f"{i}: {n}" for i, n in by_effect.items())
            rows["different"] = (
                f"with engine: dask the effects must evaluate the same rows, and they do not ({each} evaluated rows); "
                "give the effects of joint_regions extrapolation: none, or on_extrapolation: keep"
            )
        return results, rows
    first = results[0].results.index
    if all(r.results.index.equals(first) for r in results[1:]):
        rows["n"] = int(len(first))
        return results, rows
    common = first
    for r in results[1:]:
        common = common.intersection(r.results.index, sort=False)
    rows.update(n=int(len(common)), recomputed=True)
    if len(common) < 2:
        return results, rows
    data = kept["data"].loc[common]
    seed = int(cfg.seed)
    again = []
    for entry, r in zip(entries, results):
        eff = entry["effect"]
        again.append(
            fme.fme(
                kept["model"],
                data,
                {st.feature: st.value for st in r.steps},  # the steps as resolved (an 'sd' rule: on all rows)
                nlm=bool(r.has_nlm),
                nlm_method=eff.nlm_method,
                conf_level=float(cfg.conf_level),
                reference_data=kept["reference"],
                random_state=seed,
                target_class=target_class,
                **bootstrap_kwargs(eff.inference, entry["train"], cfg.target, seed, kept["refits"]),
            )
        )
    return again, rows


def _scaled(frame: pd.DataFrame, scale: float) -> pd.DataFrame:
    """The leaves as the tables show them: effect-scale columns times ``scale`` and each leaf's CI the
    model-uncertainty interval where the effect has one (as an effect's tree figure)."""
    out = frame.copy()
    for c in _EFFECT_COLUMNS:
        if c in out:
            out[c] = out[c].astype(float) * scale
    if "conf_low" in out:
        has = out["conf_low"].notna()
        out.loc[has, "came_ci_low"] = out.loc[has, "conf_low"]
        out.loc[has, "came_ci_high"] = out.loc[has, "conf_high"]
    return out


def joint_figure(part: Any, cfg: ReportConfig, out_dir: Path, scale: float = 1.0) -> dict | None:
    """The joint tree of :class:`fme.plotting.JointPartitionDisplay`, styled and saved as an effect's tree
    figure (None for a single region or more than :data:`~fme.report.analysis.figures.MAX_TREE_LEAVES`)."""
    from . import figures

    if not 2 <= len(part.leaf_ids) <= figures.MAX_TREE_LEAVES:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...plotting import JointPartitionDisplay
    from ...plotting.tree import counts_from_leaves

    leaves = _scaled(pd.DataFrame(part.leaves), scale)
    nodes, rows_text = part.nodes, None
    if part.honest:
        nodes = counts_from_leaves(nodes, leaves.drop_duplicates("node"))
        rows_text = "Counts and figures: the rows that estimate the leaves (honest)."
    with plt.rc_context(figures.RC), plt.rc_context({"font.size": 10.0, "figure.dpi": 100}):
        display = JointPartitionDisplay(
            nodes=nodes, leaves=leaves, conf_level=part.conf_level, rows_text=rows_text
        ).plot(style=figures.STYLE)
        fig = display.figure_
        for text in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "set_text")):
            raw = text.get_text()
            if "$" in raw and "\\$" not in raw:  # no mathtext: a '$' in a name stays literal
                text.set_text(raw.replace("$", r"\$"))
        width, height = (float(v) for v in fig.get_size_inches())
        page, fit = figures.pdf_page(width, height)
        smallest = figures.min_font_pt(fig)
        saved = figures.save(fig, out_dir, "joint-regions-tree", cfg.figures["png_dpi"], tight=False)
    return {
        "kind": "joint-tree",
        "pdf_page": page,
        "pdf_width_in": round(width * fit, 3),
        "pdf_min_font_pt": round(smallest * fit, 2),
        **saved,
    }


def _records(frame: pd.DataFrame, label_to_id: dict[str, str]) -> list[dict]:
    """JSON-ready rows of a joint table, each with its effect's config id (``effect``) and step label (``label``)."""
    out = []
    for _, row in frame.iterrows():
        rec = {str(k): json_num(v) for k, v in row.items()}
        rec["label"] = rec["effect"]
        rec["effect"] = label_to_id[str(row["effect"])]
        out.append(rec)
    return out


def run_joint_regions(
    kept: dict, cfg: ReportConfig, out_dir: Path, target_class: Any = None, scale: float = 1.0
) -> dict[str, Any] | None:
    """The joint-regions section of ``results.json`` (None when the config has no ``joint_regions``).

    Parameters
    ----------
    kept : dict
        What :func:`fme.report.analysis.run.run_effects` kept (its ``keep`` argument): the effects' results,
        the model, data, reference data and bootstrap refits they were computed with.
    cfg : ReportConfig
    out_dir : Path
        The report folder: the tree goes to ``figures/joint-regions-tree.{svg,png}``, the leaves to
        ``tables/joint-regions-leaves.csv``.
    target_class : label, optional
        The class whose probability the effects explain (classifiers).
    scale : float
        Factor of the effect-scale numbers as the report shows them (100: a probability in percentage points).

    Returns
    -------
    dict
        ``effects`` (ids), ``labels`` (id -> step label), ``method``, ``params``, ``rows`` (the rows used and
        each effect's evaluated rows), ``leaves`` (one row per leaf and effect), ``heterogeneity`` (one row per
        effect), ``estimation_root``, ``honest``, ``honesty``, ``n_grown``, ``n_estimated``, ``notes``,
        ``features``, ``conf_level``, ``figure`` and ``not_computed`` (the reason, or None).
    """
    spec = cfg.joint_regions
    if not spec:
        return None
    ids = [str(i) for i in spec["effects"]]
    conf = float(cfg.conf_level)
    results, rows = _common_rows(kept, ids, cfg, target_class)
    params = {k: v for k, v in spec.items() if k not in ("effects", "title", "method")}
    out: dict[str, Any] = {
        "title": spec.get("title") or DEFAULT_TITLE,
        "effects": ids,
        "labels": {i: r.describe_steps() for i, r in zip(ids, results)},
        "method": spec.get("method", "ctree"),
        "params": params,
        "rows": rows,
        "conf_level": conf,
        "scale": float(scale),
        "figure": None,
        "not_computed": None,
    }
    if rows.get("different"):
        out["not_computed"] = rows.pop("different")
        return out
    if rows["n"] < 2:
        out["not_computed"] = f"the effects evaluate {rows['n']} row(s) in common; a tree needs at least 2"
        return out
    try:
        part = grow_joint_partition(results, dict(spec), conf, int(cfg.seed))
    except fme.FMEError as exc:  # e.g. Dask effects on different rows, too few rows for an honest split
        out["not_computed"] = " ".join(str(exc).split())
        return out
    labels = list(part.effect_labels)
    label_to_id = dict(zip(labels, ids))
    out["labels"] = dict(zip(ids, labels))
    leaves = relabel_table(pd.DataFrame(part.leaves), kept.get("covariance"))  # a scaled covariance says so
    out["leaves"] = _records(leaves, label_to_id)
    out["heterogeneity"] = _records(part.heterogeneity(), label_to_id)
    out["estimation_root"] = _records(pd.DataFrame(part.estimation_root), label_to_id)
    counts = part.row_counts
    out.update(
        honest=bool(part.honest),
        honesty=str(part.honesty),
        n_grown=int(counts["grown"]),
        n_estimated=int(counts["estimated"]),
        n_leaves=int(len(part.leaf_ids)),
        notes=[str(n) for n in part.notes],
        features=[str(f) for f in part.features],
    )
    (Path(out_dir) / "tables").mkdir(parents=True, exist_ok=True)
    leaves.to_csv(Path(out_dir) / "tables" / "joint-regions-leaves.csv", index=False, lineterminator="\n")
    out["figure"] = joint_figure(part, cfg, Path(out_dir), scale)
    return out
