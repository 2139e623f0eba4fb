"""fMEs, NLMs and AMEs of a Dask DataFrame (issue 14): the batch kernel mapped over partitions.

:func:`fme_dask` is what :func:`fme.fme` runs when ``data`` (or
``reference_data``) is a ``dask.dataframe.DataFrame``:

1. the arguments are validated on the first rows (and on the stepped columns
   of the reference data when a step is a rule such as ``"sd"`` or a level of
   a non-categorical column: those columns are computed);
2. a detector is fitted: the envelope from min/max reductions and the
   categorical levels over all reference rows (identical to pandas); every
   other detector on a seeded sample of at most ``sample_size`` reference rows
   (default :data:`fme._dask.common.FIT_SAMPLE_SIZE`; all rows when there are no more);
3. one pass of :func:`fme._core.kernel.evaluate_batch` per partition gives the
   mergeable :class:`~fme._core.kernel.Summary` (tree-reduced) and, kept on the
   workers, the partition's sorted fMEs and NLMs, from which exact quartiles
   and medians are selected by two small rounds of counting;
4. with NLMs and the opt-in relative flat rule (``nlm_flat_tol`` > 0), its
   scale (the SD of all f(x), f(x + h), :func:`fme._nlm.evaluate.classify`)
   is merged by that pass, and the rows it left open are classified on the
   workers (:mod:`fme._dask.nlm`; a multi-output model gets the scale from a
   first pass instead). The default rule (rounding of the path's own values)
   is decided per row in the pass.

``results`` and ``excluded`` are lazy Dask DataFrames (the kernel again, per
partition, when computed) with the index and columns of the pandas result.
Bootstrap inference refits in memory and evaluates each refit per partition
(:mod:`fme._dask.bootstrap`). ``by`` groups of :func:`fme.ame` are summed in
the same pass (:mod:`fme._dask.groups`). Several outputs (``target_class='all'``,
multi-output models) give a :class:`fme._dask.outputs.DaskMultiFMEResult`
with figures per class.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from .._core.exclusions import _excluded_frame, check_evaluated
from .._core.kernel import evaluate_batch, results_meta
from .._core.plan import FMEOptions, Plan, resolve_plan
from .._core.summary import Summary, summarise
from .._utils.guards import call_detector
from .._utils.progress import dask_progress
from .._utils.validation import is_categorical
from ..extrapolation import EnvelopeDetector
from .common import (_check_sample_size, _model_frames, _probe, _seed, _tree_reduce, as_dask, envelope_frame,
                     reference_sample, require_dask)
from .groups import group_codes, group_sums, row_weights
from .nlm import finish, flat_scale, pending
from .outputs import DaskMultiFMEResult, sorted_outputs
from .result import DaskFMEResult

__all__ = ["fme_dask"]


# ----------------------------------------------------------------- per-chunk workers
def _chunk_results(part: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    return evaluate_batch(plan, part, with_rows=False).results


def _chunk_excluded(part: pd.DataFrame, plan: Plan) -> pd.DataFrame:
    return evaluate_batch(plan, part, with_rows=False).excluded


def _chunk_pass(part: pd.DataFrame, plan: Plan, threshold: float, groups: Any = None,
                    defer_flat: bool = False, extra: Any = None) -> tuple:
    batch = evaluate_batch(plan, part, with_rows=plan.method == "delta")
    summary = summarise(batch, plan, threshold)
    if extra is not None:  # a caller's sums over the same evaluated rows (Summary.extra)
        summary = replace(summary, extra=extra(part, batch, plan))
    group_parts = None
    if groups is not None:
        sums, group_parts = group_sums(batch, group_codes(part, groups), groups.n_groups, row_weights(part, groups))
        summary = replace(summary, groups=sums)
    if plan.names is not None:  # several outputs: sorted values per output (fme._dask.outputs)
        fm, nl = sorted_outputs(batch.results, plan)
        return summary, fm, nl, group_parts
    fm = np.sort(batch.results["fme"].to_numpy(dtype=float))
    fm = fm[~np.isnan(fm)]
    nl = None
    if "nlm" in batch.results.columns and defer_flat:
        nl = pending(batch)  # the flat-path test waits for the scale of the whole pass (fme._dask.nlm)
    elif "nlm" in batch.results.columns:
        nl = np.sort(batch.results["nlm"].to_numpy(dtype=float))
        nl = nl[~np.isnan(nl)]
    return summary, fm, nl, group_parts


def _spread_pass(part: pd.DataFrame, plan: Plan) -> Summary:
    return summarise(evaluate_batch(plan, part, with_rows=False), plan)


def _fit_detector(plan: Plan, reference: Any, sample_size: int, seed: int) -> dict:
    """Fit ``plan.detector`` on the reference data (see module docstring); returns what it was fitted on."""
    detector, cols = plan.detector, plan.detector_cols
    ref = reference[cols]
    if isinstance(detector, EnvelopeDetector):
        call_detector(detector, "fit", envelope_frame(ref), "fit(reference_data)")
        return {"fitted_on": "min/max reductions over all reference rows", "n_fit": None}
    sample, n_ref = reference_sample(ref, sample_size, seed)
    call_detector(detector, "fit", sample, "fit(reference_data sample)")
    return {"fitted_on": f"a seeded sample of {len(sample)} of {n_ref} reference rows", "n_fit": len(sample)}


# ----------------------------------------------------------------- entry point
def fme_dask(model: Any, data: Any, steps: Any, options: FMEOptions, groups: Any = None,
             extra: Any = None) -> DaskFMEResult:
    """:func:`fme.fme` on Dask data (see the module docstring).

    ``groups`` (a :class:`fme._dask.groups.GroupSpec`, for ``fme.ame(by=)``):
    the same pass also sums every ``by`` group (``summary_data.groups``,
    ``group_parts``; bootstrap draws per group). ``extra(part, batch, plan)``:
    sums of the caller's over each chunk's evaluated rows, merged into
    ``summary_data.extra`` (an object with ``merge``).
    """
    import dask

    require_dask()
    sample_size = _check_sample_size(options.sample_size)
    reference_data, random_state = options.reference_data, options.random_state
    data = _model_frames(model, as_dask(data, "data"), options.exposure, options.offset)
    reference = data if reference_data is None else _model_frames(model, as_dask(reference_data, "reference_data"))
    probe = _probe(data, "data")
    # Rules ("sd", "iqr", ...) and levels of non-categorical columns need the stepped columns in full.
    need = []
    if hasattr(steps, "items"):
        for f, v in steps.items():
            if f in probe.columns and (isinstance(v, str) and not is_categorical(probe[f])
                                       or is_categorical(probe[f])
                                       and not isinstance(probe[f].dtype, pd.CategoricalDtype)):
                need.append(f)
    rules: dict[str, str] = {}
    if need and all(f in reference.columns for f in need):
        # sd/unit rules by a moments reduction, iqr/mad by exact order statistics: no column is gathered
        from .steps import column_sd_steps

        steps, rules = column_sd_steps(steps, reference, need)
        need = [f for f in need if f not in rules]
    if need and all(f in reference.columns for f in need):
        from .steps import rule_frame

        rule_ref = rule_frame(reference, need)
    elif reference_data is None:
        rule_ref = probe
    else:
        rule_ref = _probe(reference, "reference_data")
    plan, conf_level = resolve_plan(model, probe, steps, rule_ref, **options.plan_kwargs())
    if rules:  # the steps resolved here keep their rule's label ("x2 + 1.02 (sd)"), as on the pandas path
        plan = replace(plan, steps=tuple(replace(st, rule=rules[st.feature]) if st.feature in rules else st
                                         for st in plan.steps))
    boot_method = plan.method == "bootstrap"
    if boot_method:  # the main pass needs only the fMEs; the refits' sums come from their own passes
        plan = replace(plan, method="sample", bootstrap=None)
    plan = replace(plan, progress=False)  # per-partition bars would interleave; distributed's progress instead
    fit_info: dict = {}
    if plan.detector is not None:
        fit_info = _fit_detector(plan, reference, sample_size, _seed(random_state))
    threshold = float(options.nlm_linear_threshold)
    parts = data.to_delayed()
    from dask import delayed

    # The flat-path test's scale (the SD of all f(x), f(x + h)) is known at the end of the pass: single-output
    # NLMs are classified then (fme._dask.nlm); multi-output ones get it from a first pass without the NLM.
    # Only the opt-in relative rule (nlm_flat_tol > 0) needs that scale; the default rounding rule is per row.
    relative = plan.settings is not None and plan.settings.flat_tol > 0
    deferred = relative and plan.names is None
    if relative and not deferred:
        first = replace(plan, settings=None, method="sample")
        spread = _tree_reduce([delayed(_spread_pass)(p, first) for p in parts]).compute().spread
        plan = replace(plan, spread=flat_scale(spread))  # one per output
    pass_plan = replace(plan, spread=np.zeros(1)) if deferred else plan
    outs = [delayed(_chunk_pass, nout=4)(p, pass_plan, threshold, groups, deferred, extra) for p in parts]
    tree = _tree_reduce([o[0] for o in outs])
    fm = [o[1] for o in outs]
    nl = [o[2] for o in outs] if plan.settings is not None else []
    gp = [o[3] for o in outs] if groups is not None else []
    persisted = dask.persist(tree, *fm, *nl, *gp)
    dask_progress(list(persisted), options.progress)
    summary = persisted[0].compute()
    fm_p = list(persisted[1:1 + len(fm)])
    nl_p = list(persisted[1 + len(fm):1 + len(fm) + len(nl)])
    gp_p = list(persisted[1 + len(fm) + len(nl):])
    if deferred:
        scale = float(flat_scale(summary.spread)[0])
        plan = replace(plan, spread=np.asarray(scale))
        fin = [delayed(finish, nout=2)(p, scale, plan.settings.flat_tol, threshold) for p in nl_p]
        done = dask.persist(_tree_reduce([f[0] for f in fin]), *[f[1] for f in fin])
        # the client lets go of the open rows now, so each partition's are freed as soon as they are classified
        # (not all at the end: at 10^8 rows on 2 workers that held 0.4 GiB more per worker)
        del fin
        persisted = nl_p = None
        pieces = done[0].compute()
        nl_p = list(done[1:])
        summary = replace(summary, nlm=pieces.nlm, n_linear=pieces.n_linear, status=pieces.status)
        del done

    def bounds() -> pd.DataFrame:
        cols = [s.feature for s in plan.steps if s.is_numeric and s.feature in reference.columns]
        lo, hi = dask.compute(reference[cols].min(), reference[cols].max())
        return pd.DataFrame([lo, hi])

    check_evaluated(plan, None, bounds, counts=summary.codes)
    boot = None
    if boot_method:
        from .bootstrap import bootstrap_draws

        # the draws are (weighted) sums over these totals: rows, or with wts= the groups' weights
        counts = summary.codes[:1] if groups is None else (
            summary.groups.fme.n if summary.groups.weighted is None else summary.groups.weighted.w)
        boot = bootstrap_draws(model, data, plan, options.bootstrap, counts, groups)
    # the column dtypes of a real batch (pandas may infer str for text columns)
    probe_batch = evaluate_batch(plan, probe.iloc[:50], with_rows=False)
    meta = probe_batch.results.iloc[:0] if len(probe_batch.results) else results_meta(plan, data._meta.index)
    results = data.map_partitions(_chunk_results, plan, meta=meta)
    ex_meta = _excluded_frame(np.zeros(0, dtype=np.int8), [], data._meta.index[:0])
    excluded = data.map_partitions(_chunk_excluded, plan, meta=ex_meta)
    settings = plan.settings
    # several outputs: figures per class (fme._dask.outputs)
    cls = DaskFMEResult if plan.names is None else DaskMultiFMEResult
    return cls(
        results=results, excluded=excluded, steps=plan.steps, summary_data=summary,
        model_description=plan.predictor.description,
        nlm_method=None if settings is None else settings.method,
        nlm_nodes=None if settings is None else settings.nodes,
        nlm_tol=None if settings is None or settings.method != "gauss-kronrod" else settings.tol,
        nlm_linear_threshold=threshold,
        detector=None if plan.detector is None else getattr(plan.detector, "name", type(plan.detector).__name__),
        on_extrapolation=plan.policy, inference_method="bootstrap" if boot_method else plan.method,
        conf_level=conf_level, detector_fit=fit_info, bootstrap_draws=boot,
        sorted_parts={"fme": fm_p, "nlm": nl_p}, data=data, plan=plan, groups=groups, group_parts=gp_p,
        output_names=None if plan.names is None else tuple(plan.names),
        model_features=None if plan.predictor.feature_names is None else tuple(plan.predictor.feature_names),
        scale=None if plan.predictor.adapter is None else plan.predictor.adapter.scale_note(data.columns))

