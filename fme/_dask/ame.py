"""AME tables of Dask data: :func:`fme.ame` on a ``dask.dataframe.DataFrame``.

:func:`ame` evaluates every row of the table in one pass of the kernel
(:func:`fme._dask.effects.run_pass`: numeric steps, rules, observation-wise
categorical levels; classic categorical levels, all of a feature's levels in
a pass of their own, :mod:`fme._dask.classic`; delta,
bootstrap (one seed for every row) and sample inference; ``by`` groups and
their pairwise differences from per-group sums of the same pass,
:mod:`fme._dask.groups`; with ``wts=`` weighted sums beside them, one group of
all rows without ``by``). The table keeps the joint uncertainty of its rows
(an :class:`~fme.EstimatesTable`: delta gradients from the Jacobian sums, the refits'
draws, or the groups' fixed-model SEs), so :func:`fme.hypotheses`,
``hypothesis=``, ``equivalence=`` and ``multcomp=`` work as on pandas data.
With ``vcov='unconditional'`` the pass also returns each evaluated row's fME and position in the estimation
sample (:class:`~fme.inference.unconditional.SampledRows`, the chunks' rows checked against it), and the rows'
sampling is added to every row of the table jointly, as in memory.
The cAMEs of Dask data are in :mod:`fme._dask.came`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import Any, cast

import numpy as np
import pandas as pd

from .._adapters import adapt
from .._core.plan import AMEOptions, Plan
from .._utils.validation import is_categorical
from ..exceptions import DataError, ParameterError
from ..inference.estimates import COVERS, COVERS_UNCONDITIONAL, Estimates, pair_label, pairwise_matrix
from ..inference.table import EstimatesTable
from ..inference.unconditional import SampledRows, Unconditional, deviations_of, empirical_part
from ..inference.wald import stack_estimates
from ..steps import classic_contrast, levels
from .classic import classic_results
from .common import POSITION, as_dask, model_frames, with_positions
from .effects import PassOutput, prepare, resolve, run_pass
from .groups import check_weights_dask, group_codes, group_keys, group_sizes, lazy_group_keys, one_group, row_weights
from .quantiles import quantiles as _quantiles
from .result import DaskFMEResult

__all__ = ["ame"]


def ame(plan: Plan, data: Any, reference: Any, steps: Mapping[str, Any], table: AMEOptions) -> pd.DataFrame:
    """:func:`fme.ame` on Dask data (``reference``: the reference data, None for ``data``), with ``plan`` (its
    fMEs) and ``table`` (the rest) resolved by :func:`fme.ame` and ``steps`` resolved: every row of the table
    (univariate steps, each derived from ``plan`` by :meth:`~fme._core.plan.Plan.with_steps`) from one pass
    over the chunks.

    ``table.t_df``: t degrees of freedom of the delta method (``df=``); ``table.delta_label``: the ``inference``
    column's name of the delta method's covariance (``vcov=``); ``table.wts``: the column of the rows' weights
    (weighted means, summed per chunk beside the groups). The table keeps the joint uncertainty of its rows as
    printed (an :class:`~fme.EstimatesTable`, for :func:`fme.hypotheses`), as the pandas table does.

    Computations: one for the first rows, the groups' keys, the levels and the rule steps' reductions;
    the pass with its summaries; one for the quartiles of every row (and group); a classic categorical
    feature's levels have a pass of their own (:mod:`fme._dask.classic`), bootstrap refits theirs.
    """
    model, options = plan.model, plan.options
    method, by_cols, by_missing, hypothesis = table.method, list(table.by_cols), table.by_missing, table.hypothesis
    conf_level, categorical, t_df, wts = table.conf_level, table.categorical, table.t_df, table.wts
    data = model_frames(model, as_dask(data, "data"), options.exposure, options.offset)
    if table.unconditional is not None:
        data = with_positions(data)
    meta = data._meta
    if wts is not None:
        check_weights_dask(data, wts)
    label = table.delta_label if method == "delta" else method
    bootstrap = table.bootstrap
    if bootstrap is not None and dict(bootstrap).get("random_state") is None:
        # one seed for every row of the table: the same resamples, as the pandas path's shared refits
        bootstrap = {**dict(bootstrap), "random_state": int(cast(int, np.random.SeedSequence().entropy) % (2**63))}
    plan = replace(plan, bootstrap=bootstrap)
    fetch = {} if not by_cols else {("groups", k): v for k, v in lazy_group_keys(data, by_cols, by_missing).items()}
    fetch.update({("all levels", f): v for f, v in _lazy_levels(data, steps).items()})
    setup = prepare(plan, data, reference, steps, fetch=fetch)
    fetched = setup.fetched
    groups = None
    if by_cols:
        groups = group_keys(
            data, by_cols, by_missing, fetched={k[1]: v for k, v in fetched.items() if k[0] == "groups"}
        )
    if wts is not None:
        # the weighted sums ride on the groups' per-chunk sums (one group of all rows without by=)
        groups = one_group(wts) if groups is None else replace(groups, weights=wts)
    # the table's rows in order: a classic feature's rows come from its own pass, every other row from one
    entries: list[tuple[Any, ...]] = []
    jobs = []
    for feature, value in setup.steps.items():
        if is_categorical(meta[feature]):
            levels = _all_levels(meta[feature], fetched.get(("all levels", feature))) if value is None else [value]
            if categorical == "classic":
                entries.append(
                    (
                        "classic",
                        feature,
                        value,
                        levels if value is None else _all_levels(meta[feature], fetched.get(("all levels", feature))),
                    )
                )
                continue
            targets = [(np.nan, lv) for lv in levels]
        else:
            targets = [(value, None)]
        for step, level in targets:
            head = {
                "feature": feature,
                "step": np.nan if level is not None else None,
                "level": level,
                "reference": None,
            }
            try:
                # bootstrap: each row refits with the same seeds (the same resamples), not one shared run
                jobs.append(resolve(setup, {feature: level if level is not None else step}))
            except DataError:
                if level is None:
                    raise
                entries.append(("empty", head, None))
                continue
            entries.append(("job", head, len(jobs) - 1))
    unconditional = table.unconditional
    if unconditional is not None and any(e[0] == "classic" for e in entries):
        raise ParameterError(
            "vcov='unconditional' on Dask data pairs each evaluated row with the estimation sample, one pass for "
            "every row of the table; categorical='classic' evaluates its levels in a pass of their own. Use "
            "categorical='observation', or compute the frame (data.compute())."
        )
    out = PassOutput([], [], [])  # only classic rows or levels without rows: no pass
    if jobs:
        out = run_pass(
            setup,
            jobs,
            groups=groups,
            extra=None if unconditional is None else partial(_sampled_rows, groups=groups),
            lazy_rows=False,
            quantiles=None if hypothesis == "pairwise" else "groups" if groups is not None else "overall",
        )
    # vcov='unconditional': every row's estimate with the rows' sampling added, jointly (as in memory)
    joint = {} if unconditional is None else _with_rows_sampling(unconditional, out, groups, t_df)
    ests: list[Estimates] = []
    rows = []
    for entry in entries:
        if entry[0] == "classic":
            _, feature, value, levels = entry
            rows.extend(
                _classic_rows(
                    plan, data, feature, value, levels, method, bootstrap, conf_level, groups, hypothesis, ests, t_df
                )
            )
            continue
        _, head, j = entry
        res = None if j is None else out.results[j]
        if j is not None and not isinstance(res, Exception):
            res = cast(DaskFMEResult, res)  # j is set and not an error: a result
            if head["level"] is None:
                head["step"] = res.steps[0].value
            else:
                head["level"] = res.steps[0].value
            rows.extend(
                _result_rows(
                    res, head, groups, hypothesis, conf_level, method, ests, t_df, out.quantiles[j], joint.get(j)
                )
            )
            continue
        if head["level"] is None:  # a numeric step without an evaluated row: as on the pandas path, an error
            raise cast(DataError, res)  # j is set: the pass's error
        # as the pandas path: a level no row could move to has a fixed-model estimate without figures
        summary = None if j is None else out.summaries[j]
        if groups is not None:
            rows.extend(_empty_group_rows(head, data, groups, hypothesis, method, summary))
        else:
            total = int(summary.codes.sum()) if summary is not None else int(data.shape[0].compute())
            rows.append({**head, **_undefined(method), "n": 0, "n_excluded": total})
        m = (
            1
            if groups is None
            else (len(pairwise_matrix(groups.n_groups)[1]) if hypothesis == "pairwise" else groups.n_groups)
        )
        ests.append(Estimates("sample", np.zeros(m), se=np.full(m, np.nan), df=np.ones(m)))
    middle = ["hypothesis"] if hypothesis == "pairwise" else by_cols
    columns = list(table.columns)
    out = pd.DataFrame(rows, columns=columns[:4] + middle + columns[4:])
    if method == "delta":
        out["inference"] = label
    out = EstimatesTable.from_frame(out, stack_estimates(ests), conf_level=conf_level)
    adapter = plan.predictor.adapter  # an offset or exposure taken into account, as fme.ame says
    scale = None if adapter is None else adapter.scale_note(meta.columns)
    if scale is not None:
        out.scale = scale
    return out


def _classic_rows(
    plan: Plan,
    data: Any,
    feature: str,
    value: Any,
    levels: list[Any],
    method: str,
    bootstrap: Any,
    conf_level: float,
    groups: Any,
    hypothesis: Any,
    ests: list[Estimates],
    t_df: float | None,
) -> list[dict[str, Any]]:
    """The table rows of the categorical ``feature`` with ``categorical='classic'`` (one pass for all levels,
    :mod:`fme._dask.classic`); their estimates are appended to ``ests``."""
    reference, targets = classic_contrast(feature, value, levels)
    results = classic_results(
        plan,
        data,
        feature,
        reference,
        [reference, *targets],
        method=method,
        bootstrap=bootstrap,
        conf_level=conf_level,
        groups=groups,
    )
    rows: list[dict[str, Any]] = []
    for res in results:
        head = {"feature": feature, "step": np.nan, "level": res.steps[0].value, "reference": reference}
        rows.extend(_result_rows(res, head, groups, hypothesis, conf_level, method, ests, t_df))
        res.release()
    return rows


def _covers(est: Estimates, method: str) -> str:
    """The ``covers`` column: with the rows' sampling added (``vcov='unconditional'``) the sampled rows too."""
    return COVERS[method] if est.basis is None else COVERS_UNCONDITIONAL


def _with_df(est: Estimates, t_df: float | None) -> Estimates:
    """Delta estimates with t degrees of freedom (``df=``), as the pandas path gives them."""
    if t_df is None or est.method != "delta":
        return est
    return replace(est, df=np.full(est.estimate.size, t_df))


def _result_rows(
    res: DaskFMEResult,
    head: dict[str, Any],
    groups: Any,
    hypothesis: Any,
    conf_level: float,
    method: str,
    ests: list[Estimates],
    t_df: float | None,
    quantiles: dict[tuple[Any, ...], float] | None = None,
    given: Estimates | None = None,
) -> list[dict[str, Any]]:
    """The table rows of one pass (one row, or one per group or pair of groups); the rows' estimates, as
    printed, are appended to ``ests``. ``quantiles``: the groups' quartiles found with the pass
    (:func:`fme._dask.effects.run_pass`); those missing are selected here. ``given``: the estimates with the
    rows' sampling added (``vcov='unconditional'``)."""
    if groups is not None:
        return _group_rows(res, head, groups, hypothesis, conf_level, method, ests, t_df, quantiles or {}, given)
    est = given if given is not None else _with_df(res._estimates(), t_df)
    ests.append(est)
    t = res.tidy(conf_level).iloc[0].to_dict()
    for key in ("feature", "step", "level", "reference", "contrast"):
        t.pop(key)
    return [{**head, **t, **est.records(conf_level)[0], "inference": method, "covers": _covers(est, method)}]


# ----------------------------------------------------------------- vcov='unconditional'
def _sampled_rows(part: pd.DataFrame, batch: Any, plan: Any, *, groups: Any) -> SampledRows:
    """A chunk's evaluated rows for the rows' sampling (run_pass's ``extra``): their positions in the
    estimation sample (checked by the shipped plan's adapter), fMEs, groups and weights."""
    rows = part.iloc[batch.cand]
    if groups is None:
        codes, w = np.zeros(batch.cand.size, dtype=np.int64), None
    else:
        codes = group_codes(part, groups)[batch.cand]
        weights = row_weights(part, groups)
        w = None if weights is None else weights[batch.cand]
    values = batch.results["fme"].to_numpy(dtype=float)
    check = adapt(plan.model).check_estimation_rows
    return SampledRows.of(check, rows, rows[POSITION].to_numpy(), values, codes, w, len(part))


def _with_rows_sampling(
    unconditional: Unconditional, out: PassOutput, groups: Any, t_df: float | None
) -> dict[int, Estimates]:
    """Each job's delta estimates with the rows' sampling added, jointly over the jobs (the table's rows share
    the estimation sample), as :func:`fme._local.ame.ame` adds it in memory; keyed by the job."""
    n_groups = 1 if groups is None else groups.n_groups
    keyed, parts = [], []
    for j, res in enumerate(out.results):
        if isinstance(res, Exception):
            continue
        rows = cast(SampledRows, out.summaries[j].extra)
        unconditional.check_count(rows.n_rows)
        est = _with_df(res._estimates() if groups is None else _group_estimates(res), t_df)
        dev = deviations_of(rows.values[:, 0], est.estimate, rows.codes)
        keyed.append(j)
        parts.append((est, empirical_part(dev, rows.codes, n_groups, rows.positions, rows.n_rows, rows.weights)))
    return dict(zip(keyed, unconditional.combine(parts)))


def _known_categories(col: pd.Series) -> bool:
    from dask.dataframe.utils import has_known_categories

    return isinstance(col.dtype, pd.CategoricalDtype) and has_known_categories(col)  # type: ignore[no-untyped-call]  # dask: untyped


def _lazy_levels(data: Any, steps: Mapping[str, Any]) -> dict[str, Any]:
    """The distinct values of the stepped categorical columns whose levels the dtype does not list, not yet
    computed (with the set-up's other reductions)."""
    meta = data._meta
    return {
        f: data[f].dropna().drop_duplicates(split_out=1)
        for f in steps
        if is_categorical(meta[f]) and not _known_categories(meta[f])
    }


def _all_levels(col: pd.Series, distinct: Any) -> list[Any]:
    """The levels of a categorical column (``col``: its Dask meta; ``distinct``: its computed distinct values
    when the dtype does not list them), as :func:`fme.steps.levels` of all rows."""
    return levels(col) if _known_categories(col) else levels(distinct)


# ----------------------------------------------------------------- by groups
def _group_estimates(res: DaskFMEResult) -> Any:
    """The groups' AMEs with their uncertainty, as :meth:`RowInference.average` gives them in memory."""
    g = res.summary_data.groups
    if g.weighted is not None:
        return _weighted_estimates(res)
    n = g.fme.n.astype(float)
    # a group without evaluated rows: estimate 0 and zero gradient, as the pandas averaging matrix gives
    est = np.where(n > 0, g.fme.mean, 0.0)
    if res.inference_method == "delta":
        with np.errstate(invalid="ignore", divide="ignore"):
            grad = np.where(n[:, None] > 0, g.jacobian / n[:, None], 0.0)
        return Estimates("delta", est, grad=grad, vcov=res.summary_data.vcov)
    if res.inference_method == "bootstrap":
        _, info = cast(tuple[np.ndarray, dict[str, Any]], res.bootstrap_draws)  # set for bootstrap
        return Estimates("bootstrap", est, draws=info["group_draws"], ci=info["ci"])
    sd = g.fme.sd()
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.where(n >= 2, sd / np.sqrt(n), np.nan)
    return Estimates("sample", est, se=se, df=np.maximum(n - 1.0, 1.0))


def _weighted_estimates(res: DaskFMEResult) -> Estimates:
    """The groups' weighted AMEs (``wts=``) with their uncertainty: the weighted mean Jacobian (delta), the
    refits' weighted means (bootstrap) or the weighted mean's fixed-weights SE (sample)."""
    g = res.summary_data.groups
    wm = g.weighted
    est = wm.mean[:, 0]
    if res.inference_method == "delta":
        with np.errstate(invalid="ignore", divide="ignore"):
            grad = np.where(wm.w[:, None] > 0, g.jacobian / np.where(wm.w > 0, wm.w, 1.0)[:, None], 0.0)
        return Estimates("delta", est, grad=grad, vcov=res.summary_data.vcov)
    if res.inference_method == "bootstrap":
        _, info = cast(tuple[np.ndarray, dict[str, Any]], res.bootstrap_draws)  # set for bootstrap
        return Estimates("bootstrap", est, draws=info["group_draws"], ci=info["ci"])
    return Estimates("sample", est, se=wm.se()[:, 0], df=np.maximum(wm.n - 1.0, 1.0))


def _group_quartiles(res: DaskFMEResult, g: int, n: int, found: dict[tuple[Any, ...], float]) -> dict[float, float]:
    """Group ``g``'s quartiles: found with the pass, else selected from the sorted values on the workers."""
    if ("group", g, 0.25) in found:
        return {p: found[("group", g, p)] for p in (0.25, 0.75)}
    from dask.delayed import delayed

    parts = [delayed(lambda d, k=g: (d or {}).get(k, np.empty(0)))(p) for p in res.group_parts]
    return _quantiles(parts, n, [0.25, 0.75])


def _group_rows(
    res: DaskFMEResult,
    head: dict[str, Any],
    groups: Any,
    hypothesis: Any,
    conf_level: float,
    method: str,
    ests: list[Estimates],
    t_df: float | None,
    found: dict[tuple[Any, ...], float],
    given: Estimates | None = None,
) -> list[dict[str, Any]]:
    """The table rows of one step: one per group, or one per pair of groups (``hypothesis='pairwise'``)."""
    g = res.summary_data.groups
    used = g.fme.n.astype(np.int64)
    size_all = g.size_all
    est = given if given is not None else _with_df(_group_estimates(res), t_df)
    keys = groups.keys
    if hypothesis == "pairwise":
        L, pairs = pairwise_matrix(groups.n_groups)
        empty_pair = np.array([used[i] == 0 or used[j] == 0 for i, j in pairs], dtype=bool)
        ests.append(est.contrast(L))
        records = est.contrast(L).records(conf_level, undefined=empty_pair)
        labels = [pair_label(keys, i, j) for i, j in pairs]
        return [
            {
                **head,
                "hypothesis": labels[r],
                "ame": np.nan if empty_pair[r] else float(L[r] @ est.estimate),
                **records[r],
                "inference": method,
                "covers": _covers(est, method),
                "sd": np.nan,
                "q25": np.nan,
                "q75": np.nan,
                "n": int(used[i] + used[j]),
                "n_excluded": int(size_all[i] + size_all[j] - used[i] - used[j]),
            }
            for r, (i, j) in enumerate(pairs)
        ]
    ests.append(est)
    records = est.records(conf_level, undefined=used == 0)
    sd = g.fme.sd()
    # the weighted mean with wts=; sd and quartiles stay the unweighted spread (as in memory)
    mean = g.fme.mean if g.weighted is None else est.estimate
    rows = []
    for k in range(groups.n_groups):
        n = int(used[k])
        q = _group_quartiles(res, k, n, found)
        rows.append(
            {
                **head,
                **{c: keys[c].iloc[k] for c in groups.by},
                "ame": float(mean[k]) if n else np.nan,
                **records[k],
                "inference": method,
                "covers": _covers(est, method),
                "sd": float(sd[k]),
                "q25": q[0.25],
                "q75": q[0.75],
                "n": n,
                "n_excluded": int(size_all[k] - n),
            }
        )
    return rows


def _undefined(method: str) -> dict[str, Any]:
    """The figures of a row no evaluated row supports (a level no row could move to): NaN, the method asked for."""
    nan = dict.fromkeys(["ame", "std_error", "statistic", "p_value", "conf_low", "conf_high"], np.nan)
    return {**nan, "inference": method, "covers": COVERS[method], "sd": np.nan, "q25": np.nan, "q75": np.nan}


def _empty_group_rows(
    head: dict[str, Any], data: Any, groups: Any, hypothesis: Any, method: str, summary: Any = None
) -> list[dict[str, Any]]:
    """A level no row could move to: its rows per group (or pair) with NaN figures, as the pandas path
    (the groups' sizes from the pass's ``summary``, else counted)."""
    size = group_sizes(data, groups) if summary is None else summary.groups.size_all
    nan = _undefined(method)
    keys = groups.keys
    if hypothesis == "pairwise":
        _, pairs = pairwise_matrix(groups.n_groups)
        return [
            {**head, "hypothesis": pair_label(keys, i, j), **nan, "n": 0, "n_excluded": int(size[i] + size[j])}
            for i, j in pairs
        ]
    return [
        {**head, **{c: keys[c].iloc[k] for c in groups.by}, **nan, "n": 0, "n_excluded": int(size[k])}
        for k in range(groups.n_groups)
    ]


# ----------------------------------------------------------------- cAMEs
