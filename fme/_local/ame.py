"""AME tables in memory: :func:`fme.ame` on a pandas frame (the Dask mirror: :mod:`fme._dask.ame`).

:func:`ame` evaluates one univariate fME per table row (a numeric step or rule, an observation-wise categorical
level, or, with ``categorical='classic'``, every row set to the reference level and then to each other level,
paper Eq. categorical_me), averages each row's fMEs per ``by`` group (paper §3.2; the groups of
:mod:`fme._core.groups`) and attaches the chosen inference: the delta method and the fixed-model interval from
the rows' own ingredients, the bootstrap from one set of refits shared by every row of the table (each refit's
fMEs averaged per group as they arrive).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np
import pandas as pd

from .._core.groups import frame_groups
from .._core.plan import AMEOptions, Plan
from .._core.results import stepped_frames
from .._utils.stats import describe
from .._utils.validation import check_by_missing, is_categorical
from ..exceptions import DataError
from ..inference.estimates import (
    COVERS,
    COVERS_UNCONDITIONAL,
    Estimates,
    RowInference,
    pair_label,
    pairwise_matrix,
)
from ..inference.methods import compute_averages
from ..inference.one_group import OneGroupSums, one_group_sums, selecting_quartiles
from ..inference.table import EstimatesTable
from ..inference.unconditional import Unconditional, deviations_of, empirical_part
from ..inference.wald import stack_estimates
from ..steps import Step, check_training_levels, classic_contrast, levels, parse_steps, set_level
from .effects import evaluate, fit_detector

__all__ = ["ame"]


@dataclass
class _Spec:
    """One AME row (before grouping): its fMEs, evaluated positions in ``data`` and the point sets."""

    feature: str
    step: float
    level: Any
    reference: Any
    values: np.ndarray
    positions: np.ndarray
    pair: tuple[pd.DataFrame, pd.DataFrame] | None
    f0: np.ndarray | None = None
    inf: RowInference | None = None
    est: Estimates | None = None
    #: One group of every row, sample inference, no weights: the sums its estimate and its table row share.
    sums: OneGroupSums | None = None
    #: Their quartiles, selected on a helper from the moment the fMEs are known (:func:`selecting_quartiles`).
    quartiles: Callable[[], tuple[float, float]] | None = None


def ame(
    plan: Plan, data: pd.DataFrame, reference: pd.DataFrame, steps: Mapping[str, Any], table: AMEOptions
) -> EstimatesTable:
    """:func:`fme.ame` on the model's frame ``data`` (``reference``: the rows the detector is fitted on and step
    rules are computed from), with ``plan`` (its fMEs) and ``table`` (the rest) resolved by :func:`fme.ame`
    and ``steps`` resolved: one fME per row of the table (univariate steps, each derived from ``plan`` by
    :meth:`~fme._core.plan.Plan.with_steps`). The table keeps the joint uncertainty of its rows as printed (for
    :func:`fme.hypotheses`)."""
    by_cols, method, wts, conf_level = list(table.by_cols), table.method, table.wts, table.conf_level
    if by_cols and table.by_missing == "raise":
        check_by_missing({c: int(data[c].isna().sum()) for c in by_cols}, len(data))
    model, target_class = plan.model, plan.target_class
    # bootstrap: the fMEs without refits here; one set of refits below serves every row of the table
    direct = fit_detector(replace(plan, method=_direct(method), bootstrap=None), reference)
    # one group of every row with the fixed-model interval: each numeric row's estimate and table figures come
    # from one_group_sums, whose quartiles are selected beside the work that follows its fMEs
    one_group = not by_cols and wts is None and table.hypothesis != "pairwise"
    specs: list[_Spec] = []
    for feature, value in steps.items():
        if is_categorical(data[feature]):
            specs.extend(_categorical_specs(direct, data, reference, feature, value, table.categorical, method))
        else:
            res = evaluate(direct, data, reference, {feature: value})
            specs.append(
                _Spec(
                    feature,
                    res.steps[0].value,
                    None,
                    None,
                    res.results["fme"].to_numpy(dtype=float),
                    cast(np.ndarray, res.positions),
                    *_pair(res, model, method, target_class),
                )
            )
            if one_group and method == "sample":
                specs[-1].quartiles = selecting_quartiles(specs[-1].values)
    codes_all, groups = frame_groups(data, by_cols)
    keys = groups.keys
    live = [s for s in specs if s.pair is not None]
    pairs = cast(list[tuple[pd.DataFrame, pd.DataFrame]], [s.pair for s in live])  # live: each has its pair
    # (codes, groups[, weights]): RowInference.average's arguments, as compute_averages unpacks each
    groupings: list[Any] = [
        (_codes_at(codes_all, s.positions, by_cols), len(keys)) + (() if wts is None else (wts[s.positions],))
        for s in live
    ]
    # The groups are known here: bootstrap refits are averaged per group as they arrive (no n x B draws).
    ests = (
        compute_averages(
            method,
            model,
            pairs,
            [s.values for s in live],
            groupings,
            [s.f0 for s in live],
            table.bootstrap,
            target_class,
        )
        if live
        else []
    )
    for spec, est in zip(live, ests):
        spec.est = est
    rows = []
    hypothesis = table.hypothesis
    for spec in specs:
        if spec.est is None:
            # A level no row could move to keeps its row, with NaN figures and the method asked for.
            inf = spec.inf if spec.inf is not None else RowInference("sample", spec.values)
            if one_group and inf.method == "sample" and _same_array(inf.values, spec.values):
                # the estimate and the table's mean, SD and quartiles from the same two passes over the fMEs
                spec.sums = one_group_sums(inf.values, spec.quartiles)
                if spec.sums is not None:
                    spec.est = spec.sums.estimates()
                    continue
            # without by, one group of every row: no codes to gather
            codes = codes_all[spec.positions] if by_cols else None
            spec.est = inf.average(codes, len(keys), None if wts is None else wts[spec.positions])
    if table.unconditional is not None:
        _add_rows_sampling(table.unconditional, specs, codes_all, len(keys), len(data), wts)
    for spec in specs:
        est = cast(Estimates, spec.est)  # every spec's, set above
        if table.t_df is not None and est.method == "delta":
            spec.est = est = replace(est, df=np.full(est.estimate.size, table.t_df))
        new = _spec_rows(spec, est, codes_all, keys, by_cols, hypothesis, conf_level, wts is not None)
        for row in new:
            row["inference"] = table.delta_label if method == "delta" else method
            row["covers"] = COVERS[method] if est.basis is None else COVERS_UNCONDITIONAL
        rows.extend(new)
    middle = ["hypothesis"] if hypothesis == "pairwise" else by_cols
    columns = list(table.columns)
    out = pd.DataFrame(rows, columns=columns[:4] + middle + columns[4:])
    # the joint uncertainty of the rows as printed, for fme.hypotheses (and hypothesis=/equivalence= there)
    pair_matrix = pairwise_matrix(len(keys))[0] if hypothesis == "pairwise" else None
    done = [cast(Estimates, s.est) for s in specs]  # every row's estimate is set above
    out = EstimatesTable.from_frame(
        out,
        stack_estimates([e if pair_matrix is None else e.contrast(pair_matrix) for e in done]),
        conf_level=conf_level,
    )
    if ests and method == "bootstrap":
        # failed refits are counted with the table, not only warned about
        e = ests[0]
        n_draws = cast(np.ndarray, e.draws).shape[1]  # bootstrap: the draws are there
        out.bootstrap = {
            "n_resamples": int(n_draws + e.n_failed),
            "n_failed": int(e.n_failed),
            "n_nonconverged": int(e.n_nonconverged),
            "errors": list(e.errors),
        }
    adapter = plan.predictor.adapter
    scale = None if adapter is None else adapter.scale_note(data.columns)
    if scale is not None:
        out.scale = scale
    return out


def _spec_rows(
    spec: _Spec,
    est: Estimates,
    codes_all: np.ndarray,
    keys: pd.DataFrame,
    by_cols: list[Any],
    hypothesis: str | None,
    conf_level: float,
    weighted: bool = False,
) -> list[dict[str, Any]]:
    m = len(keys)
    codes = codes_all[spec.positions] if by_cols else None  # without by: one group, nothing to gather
    head = {"feature": spec.feature, "step": spec.step, "level": spec.level, "reference": spec.reference}
    if codes is not None:
        size_all = np.bincount(codes_all[codes_all >= 0], minlength=m)
        size_used = np.bincount(codes[codes >= 0], minlength=m)
    else:  # one group of every row: the counts without counting
        size_all = np.array([codes_all.size], dtype=np.intp)
        size_used = np.array([spec.positions.size], dtype=np.intp)
    if hypothesis == "pairwise":
        L, pairs = pairwise_matrix(m)
        empty_pair = np.array([size_used[i] == 0 or size_used[j] == 0 for i, j in pairs], dtype=bool)
        records = est.contrast(L).records(conf_level, undefined=empty_pair)
        labels = [pair_label(keys, i, j) for i, j in pairs]
        rows = []
        for r, (i, j) in enumerate(pairs):
            diff = np.nan if empty_pair[r] else float(L[r] @ est.estimate)
            rows.append(
                {
                    **head,
                    "hypothesis": labels[r],
                    "ame": diff,
                    **records[r],
                    "sd": np.nan,
                    "q25": np.nan,
                    "q75": np.nan,
                    "n": int(size_used[i] + size_used[j]),
                    "n_excluded": int(size_all[i] + size_all[j] - size_used[i] - size_used[j]),
                }
            )
        return rows
    records = est.records(conf_level, undefined=size_used == 0)
    rows = []
    for g in range(m):
        sums = None if spec.sums is None else (spec.sums.total, spec.sums.sum_sq, spec.sums.quartiles)
        d = describe(spec.values[codes == g] if codes is not None else spec.values, conf_level, sums=sums)
        group = {c: keys[c].iloc[g] for c in by_cols}
        n_ex = int(size_all[g] - size_used[g]) if by_cols else len(codes_all) - spec.positions.size
        ame = d["mean"] if not weighted or d["n"] == 0 else float(est.estimate[g])
        rows.append(
            {
                **head,
                **group,
                "ame": ame,
                **records[g],
                "sd": d["sd"],
                "q25": d["q25"],
                "q75": d["q75"],
                "n": int(d["n"]),
                "n_excluded": n_ex,
            }
        )
    return rows


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` are views of the same memory with the same layout (hence the same values)."""
    ai, bi = a.__array_interface__, b.__array_interface__
    return a.dtype == b.dtype and ai["data"][0] == bi["data"][0] and a.shape == b.shape and a.strides == b.strides


def _codes_at(codes_all: np.ndarray, positions: np.ndarray, by_cols: list[Any]) -> np.ndarray:
    """The group codes of the rows at ``positions``: without ``by`` every row is in group 0 (no gather)."""
    return codes_all[positions] if by_cols else np.zeros(positions.size, dtype=np.int64)


def _add_rows_sampling(
    unconditional: Unconditional,
    specs: list[_Spec],
    codes_all: np.ndarray,
    n_groups: int,
    n_rows: int,
    wts: np.ndarray | None,
) -> None:
    """The specs' delta estimates with the rows' sampling added (``vcov='unconditional'``), jointly; a spec no
    row could be evaluated for keeps its undefined estimate."""
    delta = [(s, s.est) for s in specs if s.est is not None and s.est.method == "delta"]
    parts = []
    for s, est in delta:
        codes = codes_all[s.positions]
        w = None if wts is None else wts[s.positions]
        dev = deviations_of(s.values, est.estimate, codes)
        parts.append((est, empirical_part(dev, codes, n_groups, s.positions, n_rows, w)))
    for (s, _), combined in zip(delta, unconditional.combine(parts)):
        s.est = combined


def _direct(method: str) -> str:
    """The method the fME engine computes itself: all but bootstrap (whose refits ame() shares across rows)."""
    return "sample" if method == "bootstrap" else method


def _pair(
    res: Any, model: Any, method: str, target_class: Any
) -> tuple[tuple[pd.DataFrame, pd.DataFrame] | None, np.ndarray | None, RowInference | None]:
    """(point sets, f(x), ready ingredients) of a spec: the point sets only where ame() still has to compute."""
    if method == "bootstrap":
        return stepped_frames(res, model, target_class), res.predictions["f_x"].to_numpy(), None
    return None, None, res.inference_rows


def _categorical_specs(
    plan: Plan, data: pd.DataFrame, reference: pd.DataFrame, feature: str, value: Any, categorical: str, method: str
) -> list[_Spec]:
    all_levels = levels(data[feature])
    model, target_class = plan.model, plan.target_class
    if categorical == "observation":
        targets = all_levels if value is None else [parse_steps(data, {feature: value})[0].value]
        specs = []
        for level in targets:
            try:
                res = evaluate(plan, data, reference, {feature: level})
            except DataError:
                # Every row is already at this level: nothing to evaluate.
                specs.append(_Spec(feature, np.nan, level, None, np.empty(0), np.empty(0, dtype=np.int64), None))
                continue
            specs.append(
                _Spec(
                    feature,
                    np.nan,
                    level,
                    None,
                    res.results["fme"].to_numpy(dtype=float),
                    cast(np.ndarray, res.positions),  # in memory: the positions are set
                    *_pair(res, model, method, target_class),
                )
            )
        return specs
    reference_level, targets = classic_contrast(feature, value, all_levels)
    predictor = plan.predictor
    check_training_levels(
        [Step(feature, "categorical", lv) for lv in [reference_level, *targets]], dict(plan.known_levels)
    )
    X0 = predictor.select(data)

    def at_level(level: Any) -> pd.DataFrame:
        # a fresh frame per predict call: a model that modifies its input cannot leak into the next
        out = X0.copy(deep=False)
        out[feature] = set_level(data[feature], level, len(data))
        return out

    X_ref = None if method == "sample" else at_level(reference_level)
    base = predictor(at_level(reference_level), stage=f"{feature} = {reference_level!r}")
    specs = []
    for level in targets:
        pred = predictor(at_level(level), stage=f"{feature} = {level!r}")
        pair = None if method == "sample" else (X_ref, at_level(level))
        specs.append(_Spec(feature, np.nan, level, reference_level, pred - base, np.arange(len(data)), pair, base))
    return specs
