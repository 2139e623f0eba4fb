"""fMEs, NLMs and AMEs of a Dask DataFrame: the batch kernel mapped over partitions.

:func:`fme` is what :func:`fme.fme` runs when ``data`` (or
``reference_data``) is a ``dask.dataframe.DataFrame``:

1. the front door validated the options into a plan on the frames' columns
   and dtypes (:func:`fme._core.plan.front_plan`); each step specification's
   plan is derived from it on the first rows (and on the stepped columns of
   the reference data when a step is a rule such as ``"sd"`` or a level of a
   non-categorical column: their moments or distinct values are reduced); the
   first rows and those reductions are one computation (:func:`prepare`);
2. a detector is fitted: the envelope from min/max reductions and the
   categorical levels over all reference rows (identical to pandas); every
   other detector on a seeded sample of at most ``sample_size`` reference rows
   (default :data:`fme._dask.common.FIT_SAMPLE_SIZE`; all rows when there are no more);
3. one pass of :func:`fme._core.kernel.evaluate_batch` per partition gives the
   mergeable :class:`~fme._core.summary.Summary` (tree-reduced) and, kept on the
   workers, the partition's sorted fMEs and NLMs, from which exact quartiles
   and medians are selected by small rounds of counting
   (:mod:`fme._dask.quantiles`); the pass returns the sorted values' pivots with
   the summaries, so a caller that asks for quantiles at once needs one round;
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

Small jobs pay for every round trip to the scheduler and every copy of the
model, so :func:`run_pass` evaluates several jobs (the table rows of
:func:`fme.ame`, :mod:`fme._dask.ame`) in one task per chunk, the plans go to
each worker once (:func:`fme._dask.common.ship`), and the summaries, the
pivots and the caller's reductions come back in as few computations as the
dependencies allow: :func:`fme` takes three (the set-up, the pass, its
summaries).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
import pandas as pd

from .._core.exclusions import check_evaluated, excluded_frame
from .._core.kernel import evaluate_batch, results_meta
from .._core.plan import FMEOptions, Plan
from .._core.summary import Summary, summarise
from .._nlm.evaluate import NLMSettings
from .._utils.progress import dask_progress
from .._utils.validation import is_categorical, seed_of
from ..exceptions import DataError
from ..extrapolation import EnvelopeDetector
from ..extrapolation.guards import call_detector, detector_name
from .common import (
    Shipped,
    as_dask,
    as_delayed,
    check_sample_size,
    checked_probe,
    envelope_frame,
    lazy_probe,
    merge_summaries,
    model_frames,
    reference_sample,
    require_dask,
    ship,
    tree_reduce,
)
from .groups import group_codes, group_sums, row_weights
from .nlm import finish, flat_scale, pending
from .outputs import DaskMultiFMEResult, sorted_outputs
from .quantiles import select, store_pivots
from .result import DaskFMEResult

__all__ = ["fme", "Setup", "Job", "PassOutput", "prepare", "resolve", "run_pass"]


# ----------------------------------------------------------------- per-chunk workers
def _chunk_results(part: pd.DataFrame, plan: Any) -> pd.DataFrame:
    return evaluate_batch(plan.value, part, with_rows=False).results


def _chunk_excluded(part: pd.DataFrame, plan: Any) -> pd.DataFrame:
    return evaluate_batch(plan.value, part, with_rows=False).excluded


def _sorted(values: np.ndarray) -> np.ndarray:
    v = np.sort(values)
    return cast(np.ndarray, v[~np.isnan(v)])  # numpy: a boolean mask indexes to Any


def _chunk_pass(
    part: pd.DataFrame, shipped: Any, threshold: float, groups: Any, deferred: tuple[bool, ...], extra: Any
) -> tuple[tuple[list[Summary], list[Any]], dict[tuple[Any, ...], Any]]:
    """One chunk under every plan of ``shipped``: per plan its :class:`Summary` (with the ``by`` groups'
    sums, the caller's ``extra`` sums), and a store of the sorted values the quantiles select from, keyed
    ``(plan, "fme" | "nlm" | "group" | "pending", output or group)``, with the store's pivots."""
    plans = shipped.value
    codes = weights = None
    if groups is not None:  # the rows' groups, once for every plan
        codes, weights = group_codes(part, groups), row_weights(part, groups)
    summaries: list[Summary] = []
    store: dict[tuple[Any, ...], Any] = {}
    for j, plan in enumerate(plans):
        batch = evaluate_batch(plan, part, with_rows=plan.method == "delta")
        summary = summarise(batch, plan, threshold)
        if extra is not None:  # a caller's sums over the same evaluated rows (Summary.extra)
            summary = replace(summary, extra=extra(part, batch, plan))
        if groups is not None:
            sums, group_parts = group_sums(batch, cast(np.ndarray, codes), groups.n_groups, weights)  # set with groups
            summary = replace(summary, groups=sums)
            store.update({(j, "group", g): a for g, a in group_parts.items()})
        summaries.append(summary)
        if plan.names is not None:  # several outputs: sorted values per output (fme._dask.outputs)
            fm, nl = sorted_outputs(batch.results, plan)
            store.update({(j, "fme", k): a for k, a in enumerate(fm)})
            store.update({(j, "nlm", k): a for k, a in enumerate(nl or ())})
            continue
        store[(j, "fme", 0)] = _sorted(batch.results["fme"].to_numpy(dtype=float))
        if "nlm" in batch.results.columns and deferred[j]:
            store[(j, "pending", 0)] = pending(batch)  # the flat-path test waits for the pass's scale
        elif "nlm" in batch.results.columns:
            store[(j, "nlm", 0)] = _sorted(batch.results["nlm"].to_numpy(dtype=float))
    piv = store_pivots({k: v for k, v in store.items() if k[1] != "pending"})
    return (summaries, [piv]), store


def _finish_chunk(
    store: dict[tuple[Any, ...], Any], scales: dict[int, float], flat_tol: dict[int, float], threshold: float
) -> tuple[Any, ...]:
    """The deferred NLMs of a chunk classified with their pass's scale (:func:`fme._dask.nlm.finish`):
    per plan the NLM figures, and the store with the sorted defined NLMs instead of the open rows."""
    out, pieces = dict(store), {}
    for j, scale in scales.items():
        pieces[j], out[(j, "nlm", 0)] = finish(out.pop((j, "pending", 0)), scale, flat_tol[j], threshold)
    new = {k: v for k, v in out.items() if k[1] == "nlm" and k[0] in scales}
    return (pieces, [store_pivots(new)]), out


def _merge_heads(*heads: tuple[Any, ...]) -> tuple[Any, ...]:
    """Merge the chunks' (per-plan summaries, [pivots]) in chunk order: summaries added, pivots listed."""
    summaries, piv = heads[0][0], list(heads[0][1])
    for s, p in heads[1:]:
        summaries = (
            [a.merge(b) for a, b in zip(summaries, s)]
            if isinstance(summaries, list)
            else {j: summaries[j].merge(s[j]) for j in summaries}
        )
        piv += p
    return summaries, piv


def _spread_pass(part: pd.DataFrame, shipped: Any) -> list[Summary]:
    return [summarise(evaluate_batch(plan, part, with_rows=False), plan) for plan in shipped.value]


def _merge_lists(*lists: list[Summary]) -> list[Summary]:
    return [merge_summaries(*items) for items in zip(*lists)]


def _store_get(store: dict[tuple[Any, ...], Any], key: tuple[Any, ...]) -> np.ndarray:
    return cast(np.ndarray, store.get(key, np.empty(0)))  # the store's values are sorted arrays


def _store_outputs(store: dict[tuple[Any, ...], Any], j: int, which: str, n: int) -> tuple[np.ndarray, ...]:
    return tuple(store.get((j, which, k), np.empty(0)) for k in range(n))


def _store_groups(store: dict[tuple[Any, ...], Any], j: int) -> dict[Any, np.ndarray]:
    return {k[2]: a for k, a in store.items() if k[0] == j and k[1] == "group"}


# ----------------------------------------------------------------- set-up (before the pass)
@dataclass
class Setup:
    """What a verb on Dask data reads before its pass: the plan the front door resolved, the model frames of the
    data and the reference data, the probe (first rows), the rule steps resolved from all-row reductions, and
    caches of the detectors' reference frames. Built by :func:`prepare` with one computation."""

    plan: Plan
    data: Any
    reference: Any
    probe: pd.DataFrame
    rule_ref: pd.DataFrame
    steps: Any
    rules: dict[str, str]
    fetched: dict[Any, Any]
    detector_frames: dict[tuple[str, tuple[str, ...]], tuple[pd.DataFrame, int | None]] = field(default_factory=dict)
    #: What the plan's detector was fitted on, in words and as the pandas frame, once it is (every job of the
    #: set-up shares the detector).
    fit_info: dict[str, Any] | None = None
    fit_frame: pd.DataFrame | None = None

    @property
    def model(self) -> Any:
        return self.plan.model

    @property
    def options(self) -> FMEOptions:
        return self.plan.options


#: Marks the set-up's own entries among the reductions computed with the caller's.
_SETUP = "fme setup"


def _need(steps: Any, meta: pd.DataFrame) -> list[str]:
    """Rules ("sd", "iqr", ...) and levels of non-categorical columns need the stepped columns in full."""
    need = []
    if hasattr(steps, "items"):
        for f, v in steps.items():
            if f not in meta.columns:
                continue
            text = is_categorical(meta[f]) and not isinstance(meta[f].dtype, pd.CategoricalDtype)
            if isinstance(v, str) and not is_categorical(meta[f]) or text:
                need.append(f)
    return need


def prepare(plan: Plan, data: Any, reference_data: Any, steps: Any, fetch: dict[Any, Any] | None = None) -> Setup:
    """The :class:`Setup` of ``steps`` (a mapping of every step the verb will take) on ``data`` (and
    ``reference_data``, None for ``data``) under the front door's ``plan``: the probe,
    the reductions behind the rule steps and the caller's ``fetch`` (``{name: lazy Dask object}``, e.g. the
    ``by`` groups' keys) computed together in one round trip (``Setup.fetched``; the caller's names are
    strings or tuples not starting with the set-up's own marker)."""
    from dask.base import compute

    from .steps import column_sd_steps, lazy_moments, rule_frame, sd_columns, text_levels

    require_dask()
    model, options = plan.model, plan.options
    data = model_frames(model, as_dask(data, "data"), options.exposure, options.offset)
    reference = data if reference_data is None else model_frames(model, as_dask(reference_data, "reference_data"))
    need = _need(steps, data._meta)
    lazy: dict[Any, Any] = {**(fetch or {}), (_SETUP, "probe"): lazy_probe(data)}
    if reference_data is not None:
        lazy[(_SETUP, "reference probe")] = lazy_probe(reference)
    in_ref = bool(need) and all(f in reference.columns for f in need)
    if in_ref:
        sd_cols = sd_columns(steps, reference, need)
        if sd_cols:
            lazy[(_SETUP, "sd moments")] = lazy_moments(reference, sd_cols)
        lazy.update({(_SETUP, "levels", f): v for f, v in text_levels(reference, need).items()})
    names = list(lazy)
    fetched = dict(zip(names, compute(*[as_delayed(lazy[k]) for k in names])))  # type: ignore[no-untyped-call]  # dask: untyped
    probe = checked_probe(fetched.pop((_SETUP, "probe")), data, "data")
    rules: dict[str, str] = {}
    if in_ref:
        # sd/unit rules by a moments reduction, iqr/mad by exact order statistics: no column is gathered
        steps, rules = column_sd_steps(steps, reference, need, moments=fetched.pop((_SETUP, "sd moments"), None))
        need = [f for f in need if f not in rules]
    levels = {k[2]: fetched.pop(k) for k in list(fetched) if k[:2] == (_SETUP, "levels")}
    if need and all(f in reference.columns for f in need):
        rule_ref = rule_frame(reference, need, levels=levels)
    elif reference_data is None:
        rule_ref = probe
    else:
        rule_ref = checked_probe(fetched.pop((_SETUP, "reference probe")), reference, "reference_data")
    fetched.pop((_SETUP, "reference probe"), None)
    return Setup(plan, data, reference, probe, rule_ref, steps, rules, fetched)


@dataclass
class Job:
    """One resolved computation of a pass: its plan, confidence level, whether its inference is the
    bootstrap (whose refits run their own passes), what its detector was fitted on (in words) and the pandas
    frame it was fitted on."""

    plan: Plan
    conf_level: float
    boot: bool
    fit_info: dict[str, Any]
    fit_frame: pd.DataFrame | None = None


def resolve(setup: Setup, steps: Any) -> Job:
    """The :class:`Job` of ``steps`` (with the set-up's resolved values of its rules): the set-up's plan with
    these steps (:meth:`~fme._core.plan.Plan.with_steps` on the probe), its detector fitted once per set-up
    (the envelope or the seeded sample)."""
    plan = setup.plan.with_steps(setup.probe, steps, setup.rule_ref)
    if any(st.feature in setup.rules for st in plan.steps):
        # the steps resolved here keep their rule's label ("x2 + 1.02 (sd)"), as on the pandas path
        plan = replace(
            plan,
            steps=tuple(
                replace(st, rule=setup.rules[st.feature]) if st.feature in setup.rules else st for st in plan.steps
            ),
        )
    boot = plan.method == "bootstrap"
    if boot:  # the main pass needs only the fMEs; the refits' sums come from their own passes
        plan = replace(plan, method="sample", bootstrap=None)
    plan = replace(plan, progress=False)  # per-partition bars would interleave; distributed's progress instead
    if plan.detector is not None and setup.fit_info is None:
        setup.fit_info, setup.fit_frame = _fit_detector(setup, plan)
    if plan.detector is None:
        return Job(plan, plan.conf_level, boot, {}, None)
    return Job(plan, plan.conf_level, boot, cast(dict[str, Any], setup.fit_info), setup.fit_frame)


def _fit_detector(setup: Setup, plan: Plan) -> tuple[dict[str, Any], pd.DataFrame]:
    """Fit ``plan.detector`` on the reference data: the envelope from min/max reductions and the levels
    over all reference rows (identical to pandas), every other detector on a seeded sample of at most
    ``sample_size`` reference rows; returns what it was fitted on, in words and as the pandas frame."""
    detector, cols = plan.detector, cast(list[str], plan.detector_cols)  # set with the detector
    ref = setup.reference[cols]
    envelope = isinstance(detector, EnvelopeDetector)
    key = ("envelope" if envelope else "sample", tuple(cols))
    if key not in setup.detector_frames:
        if envelope:
            setup.detector_frames[key] = (envelope_frame(ref), None)
        else:
            sample_size = check_sample_size(setup.options.sample_size)
            setup.detector_frames[key] = reference_sample(ref, sample_size, seed_of(setup.options.random_state))
    frame, n_ref = setup.detector_frames[key]
    if envelope:
        call_detector(detector, "fit", frame, "fit(reference_data)")
        return {"fitted_on": "min/max reductions over all reference rows", "n_fit": None}, frame
    call_detector(detector, "fit", frame, "fit(reference_data sample)")
    return {"fitted_on": f"a seeded sample of {len(frame)} of {n_ref} reference rows", "n_fit": len(frame)}, frame


# ----------------------------------------------------------------- the pass
@dataclass
class PassOutput:
    """What :func:`run_pass` leaves: per job its result (or the error :func:`check_evaluated` raised), its
    merged summary, and the quantiles asked for (``{("fme", 0, p) | ("group", g, p): value}``)."""

    results: list[DaskFMEResult | DataError]
    summaries: list[Summary]
    quantiles: list[dict[tuple[Any, ...], float]]


def run_pass(
    setup: Setup,
    jobs: list[Job],
    groups: Any = None,
    extra: Any = None,
    lazy_rows: bool = True,
    quantiles: str | None = None,
) -> PassOutput:
    """Every job of ``jobs`` in one pass over the chunks (see the module docstring): one task per chunk
    evaluates them all, the summaries are tree-reduced and fetched with the pivots of the sorted values,
    which stay on the workers. ``lazy_rows``: give each result its lazy ``results``/``excluded`` frames.

    ``quantiles``: ``"overall"``, the quartiles and median of every job's fMEs (cached in its result);
    ``"groups"``, the quartiles of every ``by`` group's fMEs; both in one more computation for all jobs."""
    from dask.base import persist
    from dask.delayed import delayed

    options, data = setup.options, setup.data
    threshold = float(options.nlm_linear_threshold)
    parts = data.to_delayed()
    plans = [job.plan for job in jobs]
    # The flat-path test's scale (the SD of all f(x), f(x + h)) is known at the end of the pass: single-output
    # NLMs are classified then (fme._dask.nlm); multi-output ones get it from a first pass without the NLM.
    # Only the opt-in relative rule (nlm_flat_tol > 0) needs that scale; the default rounding rule is per row.
    relative = [p.settings is not None and p.settings.flat_tol > 0 for p in plans]
    deferred = tuple(r and p.names is None for r, p in zip(relative, plans))
    first = [j for j, (r, d) in enumerate(zip(relative, deferred)) if r and not d]
    if first:
        shipped = ship([replace(plans[j], settings=None, method="sample") for j in first], shared=(setup.model,))
        spreads = tree_reduce([delayed(_spread_pass)(p, shipped) for p in parts], merge=_merge_lists).compute()
        for j, s in zip(first, spreads):
            plans[j] = replace(plans[j], spread=flat_scale(s.spread))  # one per output
    shipped = ship([replace(p, spread=np.zeros(1)) if d else p for p, d in zip(plans, deferred)], shared=(setup.model,))
    outs = [delayed(_chunk_pass, nout=2)(p, shipped, threshold, groups, deferred, extra) for p in parts]
    persisted = persist(tree_reduce([o[0] for o in outs], merge=_merge_heads), *[o[1] for o in outs])  # type: ignore[no-untyped-call]  # dask: untyped
    dask_progress(list(persisted), options.progress)
    summaries, pivots = persisted[0].compute()
    stores: list[Any] | None  # None while the deferred NLMs are classified
    stores = list(persisted[1:])
    del persisted, outs
    if any(deferred):
        scales = {j: float(flat_scale(summaries[j].spread)[0]) for j, d in enumerate(deferred) if d}
        tols = {j: cast(NLMSettings, plans[j].settings).flat_tol for j in scales}  # deferred: NLMs set
        fin = [delayed(_finish_chunk, nout=2)(s, scales, tols, threshold) for s in stores]
        done = persist(tree_reduce([f[0] for f in fin], merge=_merge_heads), *[f[1] for f in fin])  # type: ignore[no-untyped-call]  # dask: untyped
        # the client lets go of the open rows now, so each chunk's are freed as soon as they are classified
        # (not all at the end: at 10^8 rows on 2 workers that held 0.4 GiB more per worker)
        del fin
        stores = None
        pieces, new_pivots = done[0].compute()
        stores = list(done[1:])
        del done
        for piv, new in zip(pivots, new_pivots):
            piv.update(new)
        for j, scale in scales.items():
            summaries[j] = replace(
                summaries[j], nlm=pieces[j].nlm, n_linear=pieces[j].n_linear, status=pieces[j].status
            )
            plans[j] = replace(plans[j], spread=np.asarray(scale))
    results: list[DaskFMEResult | DataError] = []
    for j, (job, plan, summary) in enumerate(zip(jobs, plans, summaries)):
        try:
            results.append(_result(setup, job, plan, summary, j, stores, groups, lazy_rows))
        except DataError as exc:  # no row evaluated (check_evaluated): the caller decides
            results.append(exc)
    found = _pass_quantiles(results, summaries, stores, pivots, groups, quantiles)
    return PassOutput(results, summaries, found)


def _pass_quantiles(
    results: list[DaskFMEResult | DataError],
    summaries: list[Summary],
    stores: list[Any],
    pivots: list[dict[Any, tuple[np.ndarray, int]]],
    groups: Any,
    which: str | None,
) -> list[dict[tuple[Any, ...], float]]:
    """The quantiles :func:`run_pass` was asked for, per job, in one round (:func:`fme._dask.quantiles.select`)."""
    found: list[dict[tuple[Any, ...], float]] = [{} for _ in results]
    if which is None:
        return found
    problems, owners = [], []
    for j, (res, summary) in enumerate(zip(results, summaries)):
        if isinstance(res, Exception) or res.output_names is not None:
            continue
        if which == "overall":
            problems.append(((j, "fme", 0), int(summary.fme.n[0]), [0.25, 0.5, 0.75]))
            owners.append((j, ("fme", 0)))
        else:
            for g, n in enumerate(summary.groups.fme.n):
                problems.append(((j, "group", g), int(n), [0.25, 0.75]))
                owners.append((j, ("group", g)))
    for (j, head), values in zip(owners, select(stores, pivots, problems)):
        found[j].update({(*head, p): v for p, v in values.items()})
        if head[0] == "fme":  # what the result's own quartiles and median would select
            cast(DaskFMEResult, results[j])._cache.update({("fme", 0, p): v for p, v in values.items()})
    return found


def _result(
    setup: Setup, job: Job, plan: Plan, summary: Summary, j: int, stores: list[Any], groups: Any, lazy_rows: bool
) -> DaskFMEResult:
    """The :class:`DaskFMEResult` of job ``j`` of a pass."""
    from dask.base import compute
    from dask.delayed import delayed

    data, reference, options = setup.data, setup.reference, setup.options

    def bounds() -> pd.DataFrame:
        cols = [s.feature for s in plan.steps if s.is_numeric and s.feature in reference.columns]
        lo, hi = compute(reference[cols].min(), reference[cols].max())  # type: ignore[no-untyped-call]  # dask: untyped
        return pd.DataFrame([lo, hi])

    check_evaluated(plan, None, bounds, counts=summary.codes)
    boot = None
    if job.boot:
        from .bootstrap import bootstrap_draws

        # the draws are (weighted) sums over these totals: rows, or with wts= the groups' weights
        counts = (
            summary.codes[:1]
            if groups is None
            else (summary.groups.fme.n if summary.groups.weighted is None else summary.groups.weighted.w)
        )
        boot = bootstrap_draws(setup.model, data, plan, setup.plan.bootstrap, counts, groups)
    results = excluded = None
    if lazy_rows:
        # the column dtypes of a real batch (pandas may infer str for text columns)
        probe_batch = evaluate_batch(plan, setup.probe.iloc[:50], with_rows=False)
        meta = probe_batch.results.iloc[:0] if len(probe_batch.results) else results_meta(plan, data._meta.index)
        token = Shipped(plan, shared=(plan.model,))  # a fixed token: Dask need not pickle the model to name them
        results = data.map_partitions(_chunk_results, token, meta=meta)
        ex_meta = excluded_frame(np.zeros(0, dtype=np.int8), [], data._meta.index[:0])
        excluded = data.map_partitions(_chunk_excluded, token, meta=ex_meta)
    settings = plan.settings
    if plan.names is None:
        fm_p = [delayed(_store_get)(s, (j, "fme", 0)) for s in stores]
        nl_p = [delayed(_store_get)(s, (j, "nlm", 0)) for s in stores] if settings is not None else []
    else:
        k = len(plan.names)
        fm_p = [delayed(_store_outputs)(s, j, "fme", k) for s in stores]
        nl_p = [delayed(_store_outputs)(s, j, "nlm", k) for s in stores] if settings is not None else []
    gp_p = [delayed(_store_groups)(s, j) for s in stores] if groups is not None else []
    # several outputs: figures per class (fme._dask.outputs)
    cls = DaskFMEResult if plan.names is None else DaskMultiFMEResult
    return cls(
        results=results,
        excluded=excluded,
        steps=plan.steps,
        summary_data=summary,
        model_description=plan.predictor.description,
        explained_class=plan.predictor.explained_class,
        nlm_method=None if settings is None else settings.method,
        nlm_nodes=None if settings is None else settings.nodes,
        nlm_tol=None if settings is None or settings.method != "gauss-kronrod" else settings.tol,
        nlm_linear_threshold=float(options.nlm_linear_threshold),
        detector=None if plan.detector is None else detector_name(plan.detector),
        on_extrapolation=plan.policy,
        inference_method="bootstrap" if job.boot else plan.method,
        conf_level=job.conf_level,
        detector_fit=job.fit_info,
        detector_frame=job.fit_frame,
        bootstrap_draws=boot,
        sorted_parts={"fme": fm_p, "nlm": nl_p},
        data=data,
        plan=plan,
        groups=groups,
        group_parts=gp_p,
        output_names=None if plan.names is None else tuple(plan.names),
        model_features=None if plan.predictor.feature_names is None else tuple(plan.predictor.feature_names),
        scale=None if plan.predictor.adapter is None else plan.predictor.adapter.scale_note(data.columns),
    )


# ----------------------------------------------------------------- entry point
def fme(plan: Plan, data: Any, reference: Any, steps: Any, groups: Any = None, extra: Any = None) -> DaskFMEResult:
    """:func:`fme.fme` on Dask data (see the module docstring), with ``plan`` resolved by the front door
    (``reference``: the reference data, None for ``data``).

    ``groups`` (a :class:`fme._dask.groups.GroupSpec`, for ``fme.ame(by=)``):
    the same pass also sums every ``by`` group (``summary_data.groups``,
    ``group_parts``; bootstrap draws per group). ``extra(part, batch, plan)``:
    sums of the caller's over each chunk's evaluated rows, merged into
    ``summary_data.extra`` (an object with ``merge``).
    """
    check_sample_size(plan.options.sample_size)
    setup = prepare(plan, data, reference, steps)
    out = run_pass(setup, [resolve(setup, setup.steps)], groups=groups, extra=extra)
    if isinstance(out.results[0], Exception):
        raise out.results[0]
    return out.results[0]
