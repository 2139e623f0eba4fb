"""One configured effect of a report out of core (``engine: dask``): all-row summaries, sampled rows.

:func:`fme.report.analysis.compute_effect` hands over here when the evaluation data are a Dask
DataFrame (:func:`fme.report.sources.read_dask`). What comes from where (the report says the same,
:data:`SAMPLE_BASED` and :data:`ALL_ROWS`):

* over **all rows**, in passes on the cluster (:func:`fme.fme` / :func:`fme.came` on Dask data, issue
  14): n and the exclusion counts, AME, SD, standard error and CI, quartiles, the NLM summaries
  (ANLM, its CI, median, share >= 0.9, undefined/flat/inaccurate counts), the count of negative fMEs,
  model-uncertainty intervals (delta method, bootstrap refits evaluated per partition), the AME with
  extrapolation points kept, the h/2-h-2h sensitivity table, and every cAME figure of the subspaces
  (n, cAME, CI, SD, cANLM) and their extrapolation points;
* on a **seeded sample** of ``sample_size`` rows (:func:`fme.report.sources.sample_rows`; default
  :data:`fme.report.effect_parts.REPORT_SAMPLE_SIZE`): the per-row figures (fME and NLM distributions, the extrapolation
  map), ``tables/<id>-fme.csv``, where the extrapolation points are (``extrapolation_where``), the
  shrunk steps (``on_extrapolation: shrink``), and the partition stability refits; the cAME tree
  is grown on fme's own seeded sample (:data:`fme._dask.common.FIT_SAMPLE_SIZE` rows), so the leaves'
  evaluated ranges and the tree figure rest on that sample.

With no more rows than ``sample_size`` the sample is every row (in order) and the report's numbers
equal those of ``engine: pandas`` (tests/test_report_dask.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

import fme

from .details import effective_steps, extrapolation_causes, interval_records, model_interval
from .._utils.validation import is_categorical
from .effect_parts import _grow_partition, _num, _partition_summary, _stability, _step_sensitivity, run_effect_fme
from .specs import bootstrap_kwargs, make_detector

__all__ = ["compute_effect_dask", "leaf_extrapolation"]


def _count_below(a: np.ndarray, x: float) -> int:
    return int(np.searchsorted(a, x, side="left"))


def _count_at_least(a: np.ndarray, x: float) -> int:
    return int(a.size - np.searchsorted(a, x, side="left"))


def _count(parts: list, fn: Any, x: float) -> int:
    """Sum of ``fn(sorted part, x)`` over the sorted values fme kept on the workers (integers come back)."""
    import dask
    from dask import delayed

    return int(sum(dask.compute(*[delayed(fn)(a, x) for a in parts]))) if parts else 0


def _stats(n: int, mean: float, sd: float, q25: float, q75: float, conf: float,
           upper: float | None = None) -> dict[str, Any]:
    """The figures of ``analysis._stats`` from merged moments (same t interval, NLM bound 1)."""
    import math

    from scipy import stats

    out: dict[str, Any] = {"n": n, "mean": None, "sd": None, "se": None, "ci_low": None, "ci_high": None,
                           "q25": None, "q75": None}
    if n == 0:
        return out
    out.update(mean=float(mean), q25=float(q25), q75=float(q75))
    if n >= 2:
        half = float(stats.t.ppf(0.5 + conf / 2, n - 1)) * sd / math.sqrt(n)
        high = mean + half if upper is None else min(mean + half, upper)
        out.update(sd=float(sd), se=float(sd) / math.sqrt(n), ci_low=mean - half, ci_high=high)
    return out


def _fit_reference(reference: Any, det_spec: dict, seed: int) -> Any:
    """A pandas frame on which the detector fits as fme's Dask path fits it on the Dask ``reference``.

    The envelope: the min/max/levels frame of :func:`fme._dask.effects.envelope_frame` (identical fit); other
    detectors: fme's seeded reference sample (all rows when there are no more than its sample size).
    """
    from .._dask.common import FIT_SAMPLE_SIZE as FIT_SIZE, envelope_frame, reference_sample
    from .._utils.validation import is_dask_collection

    if not is_dask_collection(reference):
        return reference
    if det_spec["method"] == "envelope":
        return envelope_frame(reference)
    return reference_sample(reference, FIT_SIZE, seed)[0]


def _sample_result(model: Any, sample: pd.DataFrame, ref: Any, res: Any, eff: dict, seed: int,
                   target_class: Any, use_nlm: bool) -> Any:
    """The pandas FMEResult of the sampled rows, with the all-row steps (rules resolved on all rows)."""
    det_spec = eff["extrapolation"]
    kwargs: dict[str, Any] = {"reference_data": ref, "random_state": seed, "target_class": target_class}
    if det_spec["method"] != "none":
        kwargs.update(extrapolation=make_detector(det_spec, seed), on_extrapolation=eff["on_extrapolation"])
    steps = {st.feature: st.value for st in res.steps}
    out = fme.fme(model, sample, steps, nlm=use_nlm, nlm_method=eff["nlm_method"],
                  conf_level=float(eff["conf_level"]), **kwargs)
    # a rule such as "sd" was resolved on all reference rows: label the sample's figures with it
    return dataclasses.replace(out, steps=res.steps)


def leaf_extrapolation(part: Any, res: Any) -> dict[int, int] | None:
    """Per subspace: the extrapolation points of all rows that fall into it (None: not checked).

    One pass: each partition's excluded rows flagged as extrapolation are dropped down the tree
    (grown on the sample); only the per-leaf counts come back.
    """
    import dask
    from dask import delayed

    if res.detector is None:
        return None
    nodes = [delayed(_leaf_counts)(p, res.plan, part.features, part.tree, part._subspace)
             for p in res.data.to_delayed()]
    counts = {int(n): 0 for n in part.leaf_ids}
    for got in dask.compute(*nodes):
        for node, k in got.items():
            counts[node] = counts.get(node, 0) + k
    return counts


def _leaf_counts(frame: pd.DataFrame, plan: Any, features: list[str], tree: Any, subspace: np.ndarray) -> dict:
    from .._core.kernel import evaluate_batch

    ex = evaluate_batch(plan, frame, with_rows=False).excluded
    idx = ex.index[ex["reason_type"].to_numpy() == "extrapolation"]
    X = frame.loc[idx, features]
    X = X[X.notna().all(axis=1).to_numpy()]
    if not len(X):
        return {}
    leaf = subspace[np.asarray(tree.apply(X), dtype=int)]
    nodes, n = np.unique(leaf, return_counts=True)
    return {int(a): int(b) for a, b in zip(nodes, n)}


def compute_effect_dask(model: Any, data: Any, reference: Any, eff: dict, seed: int, target_class: Any,
                        train: pd.DataFrame | None, target: str | None, sample: pd.DataFrame) -> dict:
    """:func:`fme.report.analysis.compute_effect` for Dask ``data`` (see the module docstring).

    ``sample``: the seeded sample of the rows of ``data`` (pandas). Returns the dict of
    ``compute_effect`` whose ``"result"`` is the sample's FMEResult (figures and per-row table) and
    ``"summary"`` the all-row numbers; ``"dask_result"`` is the all-row :class:`fme._dask.effects.DaskFMEResult`.
    """
    res, steps, numeric, det_spec, use_nlm, conf = run_effect_fme(model, data, reference, eff, seed, target_class,
                                                                  train, target)
    detector = det_spec["method"] != "none"
    s = res.summary_data
    st = _stats(res.n, res.ame, res.sd, res.q25, res.q75, conf)
    codes = s.codes
    summary: dict[str, Any] = {
        "steps": {f: _num(x.value) for f, x in zip(steps, res.steps)},
        "step_label": res.describe_steps(),
        "features": list(steps),
        "numeric": numeric,
        "detector": res.detector,
        "policy": res.on_extrapolation,
        "n_total": int(codes.sum()),
        "n": res.n,
        "n_extrapolation": int(codes[3]) if res.detector is not None else None,
        "n_flagged_kept": int(s.n_kept_extrapolation) if res.on_extrapolation == "keep" else None,
        "n_at_level": int(codes[2]),
        "n_missing": int(codes[1]),
        "n_shrunk": None,
        "conf_level": conf,
        "ame": st["mean"], "sd": st["sd"], "se": st["se"], "ci_low": st["ci_low"], "ci_high": st["ci_high"],
        "q25": st["q25"], "q75": st["q75"], "n_negative": _count(res.sorted_parts["fme"], _count_below, 0.0),
        "nlm": use_nlm, "nlm_method": res.nlm_method, "nlm_nodes": res.nlm_nodes,
        "detector_spec": det_spec,
    }
    summary.update(model_interval(res, conf))
    # issue 22 item 1: both intervals, labelled; ci_low/ci_high are the fixed-model one ("sample")
    summary.update(intervals=interval_records(summary), ci_inference="sample")
    ref_fit = _fit_reference(reference, det_spec, seed) if detector else None
    small = _sample_result(model, sample, ref_fit, res, eff, seed, target_class, use_nlm)
    if res.on_extrapolation == "shrink":  # per-row steps: from the sample
        step_cols = [f"step_{x.feature}" for x in small.steps]
        full = np.array([x.value for x in small.steps], dtype=float)
        summary["n_shrunk"] = int((~np.isclose(small.results[step_cols].to_numpy(dtype=float), full))
                                  .any(axis=1).sum())
        summary["effective_steps"] = effective_steps(small)
    if use_nlm:
        m = s.nlm
        k = int(m.n[0])
        t = _stats(k, float(m.mean[0]) if k else float("nan"), float(m.sd()[0]) if k else float("nan"),
                   float("nan"), float("nan"), conf, upper=1.0)
        summary.update(anlm=t["mean"], sd_nlm=t["sd"], anlm_ci_low=t["ci_low"], anlm_ci_high=t["ci_high"], anlm_se=t["se"],
                       n_nlm=t["n"], n_nlm_undefined=res.n_nlm_undefined,
                       n_nlm_linear=_count(res.sorted_parts["nlm"], _count_at_least, 0.9),
                       median_nlm=_num(res.median_nlm), share_linear=_num(res.share_linear),
                       n_nlm_flat=res.n_nlm_flat, n_nlm_constant=res.n_nlm_constant,
                       n_nlm_inaccurate=res.n_nlm_inaccurate)
    # the causes compare with the reference's min/max and levels: the envelope frame holds exactly those
    summary["extrapolation_where"] = extrapolation_causes(small, sample, ref_fit) if res.detector is not None else []
    summary["with_eps"] = None
    if res.detector is not None and res.on_extrapolation == "exclude":
        with_eps = fme.fme(model, data, steps, extrapolation=make_detector(det_spec, seed), on_extrapolation="keep",
                           reference_data=reference, random_state=seed, target_class=target_class)
        w = _stats(with_eps.n, with_eps.ame, with_eps.sd, float("nan"), float("nan"), conf)
        summary["with_eps"] = {"n": w["n"], "n_extrapolation": int(with_eps.summary_data.n_kept_extrapolation),
                               "ame": w["mean"], "ci_low": w["ci_low"], "ci_high": w["ci_high"]}
    summary["sensitivity"] = _step_sensitivity(model, data, reference, res, summary, eff, seed, target_class,
                                               row_figures=_dask_row_figures)
    part = _grow_partition(res, eff, conf, random_state=seed)
    summary["partition"] = None
    if part is not None:
        eps = leaf_extrapolation(part, res)  # over all rows; the boxes' evaluated ranges: the tree's rows
        from .validate import levels_of

        levels = {f: levels_of(data, f) for f in part.features if f in data.columns and is_categorical(data[f])}
        summary["partition"] = _partition_summary(part, eff,
                                                  lambda node: None if eps is None else int(eps.get(node, 0)),
                                                  levels)
        summary["partition"].update(tree_rows=int(part.sample_rows), tree_on_sample=bool(part.grown_on_sample))
    stab, summary["stability"] = _stability(part, eff, seed, summary["ame"])
    res.sorted_parts.clear()  # the quantiles used above are cached; free the workers' sorted values
    return {"result": small, "partition": part, "summary": summary, "stability": stab, "dask_result": res}


def _dask_row_figures(r: Any, conf: float) -> dict:
    """A sensitivity row's numbers from the all-row summaries of a :class:`fme._dask.effects.DaskFMEResult`."""
    st = _stats(r.n, r.ame, r.sd, float("nan"), float("nan"), conf)
    r.sorted_parts.clear()  # drop the sorted values kept on the workers (no quantile needed here)
    return {"n": st["n"], "n_extrapolation": int(r.summary_data.codes[3]) if r.detector is not None else None,
            "ame": st["mean"], "ci_low": st["ci_low"], "ci_high": st["ci_high"]}
