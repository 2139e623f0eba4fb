"""One configured effect of a report, for either engine: the JSON-ready summary, its per-row result and cAMEs.

:func:`compute_effect` builds the summary of ``results.json`` from the *public figures* of the effect's
result (:meth:`fme.FMEResult.quantiles`, :meth:`~fme.FMEResult.nlm_figures`,
:meth:`~fme.FMEResult.exclusion_counts`, ``n_negative``, ``n_nlm_linear``, ``n_kept_extrapolation``), which
the in-memory result and the result on Dask data give alike. What differs between the engines is only where
the per-row pieces come from (:class:`InMemory` here; :class:`fme.report.analysis.dask_analysis.DaskRows`
for Dask data: the seeded sample, the extrapolation points of each subspace counted over all rows):

* the per-row result behind the figures, ``tables/<id>-fme.csv``, where the extrapolation points are and the
  shrunk steps;
* each subspace's extrapolation points and, for Dask, the categorical levels of the boxes;
* the partition the stability refits resample (they need every evaluated row in memory, those that grew an
  honest tree and those that estimate its leaves).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

import fme

from ..._utils.validation import is_dask_collection
from ..inputs.config import EffectConfig
from ..inputs.specs import make_detector
from .details import effective_steps, extrapolation_causes, interval_fields, model_interval
from .effect_parts import (
    figures_of,
    grow_partition,
    json_num,
    partition_summary,
    run_effect_fme,
    stability,
    step_sensitivity,
    t_figures,
)

__all__ = ["compute_effect", "effect_summary", "InMemory"]


def effect_summary(res: Any, steps: dict, numeric: bool, det_spec: dict, use_nlm: bool, conf: float) -> dict:
    """The JSON-ready numbers of one effect from its result's public figures (either engine)."""
    st = figures_of(res, conf)
    q = res.quantiles() if res.n else {"q25": None, "q75": None}
    counts = res.exclusion_counts()
    detector = res.detector is not None
    summary: dict[str, Any] = {
        "steps": {f: json_num(x.value) for f, x in zip(steps, res.steps)},
        "step_label": res.describe_steps(),
        "features": list(steps),
        "numeric": numeric,
        "detector": res.detector,
        "policy": res.on_extrapolation,
        "n_total": res.n_total,
        "n": int(res.n),
        "n_extrapolation": counts["extrapolation"] if detector else None,
        "n_flagged_kept": res.n_kept_extrapolation if res.on_extrapolation == "keep" else None,
        "n_at_level": counts["at_level"],
        "n_missing": counts["missing"],
        "n_shrunk": None,
        "conf_level": conf,
        "ame": st["mean"],
        "sd": st["sd"],
        "se": st["se"],
        "ci_low": st["ci_low"],
        "ci_high": st["ci_high"],
        "q25": json_num(q["q25"]),
        "q75": json_num(q["q75"]),
        "n_negative": int(res.n_negative),
        "nlm": use_nlm,
        "nlm_method": res.nlm_method,
        "nlm_nodes": res.nlm_nodes,
        "detector_spec": det_spec,
    }
    summary.update(model_interval(res, conf))
    # both intervals, labelled; conf_low/conf_high the primary one, ci_low/ci_high the fixed-model one ("sample")
    summary.update(interval_fields(summary))
    if use_nlm:
        f = res.nlm_figures()
        t = t_figures(f["n"], f["mean"], f["sd"], conf, upper=1.0)
        summary.update(
            anlm=t["mean"],
            sd_nlm=t["sd"],
            anlm_ci_low=t["ci_low"],
            anlm_ci_high=t["ci_high"],
            anlm_se=t["se"],
            n_nlm=t["n"],
            n_nlm_undefined=f["n_undefined"],
            n_nlm_linear=f["n_linear"],
            median_nlm=json_num(f["median"]),
            share_linear=json_num(f["share_linear"]),
            n_nlm_flat=f["n_flat"],
            n_nlm_constant=f["n_constant"],
            n_nlm_inaccurate=f["n_inaccurate"],
        )
    return summary


class InMemory:
    """The per-row pieces of an in-memory effect: its own result, data and reference (every row in memory)."""

    #: Whether the effect's rows are a seeded sample of the data (Dask: see ``DaskRows``).
    sampled = False

    def rows(
        self,
        model: Any,
        data: Any,
        reference: Any,
        res: Any,
        eff: EffectConfig,
        seed: int,
        target_class: Any,
        use_nlm: bool,
    ) -> tuple[Any, pd.DataFrame, pd.DataFrame]:
        """(per-row result, its data, the reference the detector was fitted on)."""
        return res, data, reference

    def leaf_extrapolation(self, part: Any, res: Any) -> Any:
        """``node -> extrapolation points in its hyperrectangle`` (None: not checked)."""
        counts = part.extrapolation_counts()  # where each cAME holds
        return lambda node: None if counts is None else json_num(counts[node])

    def levels(self, part: Any, data: Any) -> dict | None:
        """Levels of the partition's categorical features over all rows (None: the partition's own data)."""
        return None

    def tree_rows(self, part: Any, summary: dict) -> dict[str, Any]:
        """The rows the tree was grown on (all the growing rows in memory)."""
        return {"tree_rows": int(summary["n_grown"]), "tree_on_sample": False}

    def box_ranges(self, part: Any, rows: Any, summary: dict) -> None:
        """The boxes' evaluated ranges: the partition's own (every evaluated row in memory)."""

    def stability_partition(self, part: Any, rows: Any, eff: EffectConfig, conf: float, seed: int) -> Any:
        """The partition the stability refits resample: the effect's own."""
        return part


def compute_effect(
    model: Any,
    data: pd.DataFrame,
    reference: pd.DataFrame,
    eff: EffectConfig,
    seed: int,
    target_class: Any = None,
    train: pd.DataFrame | None = None,
    target: str | None = None,
    engine: Any = None,
    refits: Any = None,
) -> dict:
    """fMEs, NLMs, extrapolation counts, inference and cAMEs of one configured effect, for either engine.

    Parameters
    ----------
    model, data, reference
        The fitted model, the evaluation data and the reference data (pandas, or Dask with ``engine``).
    eff : EffectConfig
        The effect (a variant for one level of ``all`` or a list of levels).
    seed : int
        The config's seed (detectors, trees, subsamples).
    target_class : label, optional
        The class whose probability is explained (classifiers).
    train : DataFrame, optional
        The loaded ``inference.train_data`` (features and ``target``) for bootstrap inference.
    engine : InMemory or DaskRows, optional
        Where the per-row pieces come from; default :class:`InMemory`. Dask data need
        :func:`fme.report.analysis.dask_analysis.compute_effect_dask`, which passes its ``DaskRows``.
    refits : fme.inference.RefitCache, optional
        The bootstrap refits the build shares between its effects (refitted once, reused).

    Returns
    -------
    dict
        ``result`` (the per-row FMEResult: the effect's, or the seeded sample's), ``partition`` (the
        PartitionResult or None), ``summary`` (JSON-ready numbers), ``stability`` (the refits' table or None)
        and ``dask_result`` (the all-row result on Dask data, else None).
    """
    if engine is None:
        if is_dask_collection(data):
            raise fme.FMEError(
                "compute_effect needs the Dask engine's parts for Dask data: call "
                "fme.report.analysis.dask_analysis.compute_effect_dask"
            )
        engine = InMemory()
    res, steps, numeric, det_spec, use_nlm, conf = run_effect_fme(
        model, data, reference, eff, seed, target_class, train, target, refits
    )
    summary = effect_summary(res, steps, numeric, det_spec, use_nlm, conf)
    rows, rows_data, rows_ref = engine.rows(model, data, reference, res, eff, seed, target_class, use_nlm)
    if res.on_extrapolation == "shrink":  # per-row steps
        step_cols = [f"step_{x.feature}" for x in rows.steps]
        full = np.array([x.value for x in rows.steps], dtype=float)
        summary["n_shrunk"] = int((~np.isclose(rows.results[step_cols].to_numpy(dtype=float), full)).any(axis=1).sum())
        summary["effective_steps"] = effective_steps(rows)
    # where the extrapolation points are: the features that put x or x + h outside the reference data
    summary["extrapolation_where"] = extrapolation_causes(rows, rows_data, rows_ref) if res.detector is not None else []
    summary["with_eps"] = None
    if res.detector is not None and res.on_extrapolation == "exclude":
        # §1.6: the same effect over all rows, extrapolation points included (fMEs computed for them too)
        with_eps = fme.fme(
            model,
            data,
            steps,
            extrapolation=make_detector(det_spec, seed),
            on_extrapolation="keep",
            reference_data=reference,
            random_state=seed,
            target_class=target_class,
        )
        w = figures_of(with_eps, conf)
        summary["with_eps"] = {
            "n": w["n"],
            "n_extrapolation": with_eps.n_kept_extrapolation,
            "ame": w["mean"],
            "ci_low": w["ci_low"],
            "ci_high": w["ci_high"],
        }
        with_eps.release()
    summary["sensitivity"] = step_sensitivity(model, data, reference, res, summary, eff, seed, target_class)
    summary["partition"], summary["partition_not_run"] = None, None
    try:
        part = grow_partition(res, eff, conf, random_state=seed)
    except fme.FMEError as exc:  # e.g. too few rows for an honest split: the report says it did not run
        part, summary["partition_not_run"] = None, str(exc)
    if part is None and eff.partition is not False and summary["partition_not_run"] is None:
        summary["partition_not_run"] = f"fewer than 2 evaluated rows ({int(res.n)})"
    if part is not None:
        summary["partition"] = partition_summary(
            part, eff, engine.leaf_extrapolation(part, res), engine.levels(part, data)
        )
        summary["partition"].update(engine.tree_rows(part, summary["partition"]))
        engine.box_ranges(part, rows, summary["partition"])
    why = None if part is not None else f"no cAME partition ({summary['partition_not_run']})"
    try:
        spart = engine.stability_partition(part, rows, eff, conf, seed)
    except fme.FMEError as exc:  # the Dask sample's own tree could not be grown
        spart, why = None, f"no partition of the sampled rows to resample ({exc})"
    stab, summary["stability"] = stability(
        spart, eff, seed, summary["ame"], summary["n"] if engine.sampled else None, why
    )
    res.release()  # the quantiles used above are kept; a Dask result frees the workers' sorted values
    return {
        "result": rows,
        "partition": part,
        "summary": summary,
        "stability": stab,
        "dask_result": res if engine.sampled else None,
    }
