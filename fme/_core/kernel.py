"""The batch kernel of :func:`fme.fme`: a batch of rows in, its fMEs, NLMs and mergeable summaries out.

:func:`fme.fme` validates its arguments once and resolves them into a
:class:`~fme._core.plan.Plan` (parsed steps, NLM method, fitted detector, inference method);
:func:`evaluate_batch` then evaluates any batch of rows under that plan
(paper §3.2 fME, §5.1 categorical ME, §5.2 multivariate fME, §5.4 NLM) in
three steps: exclusion bookkeeping (:mod:`fme._core.exclusions`), predictions
(:func:`_evaluate_rows`) and the result frames; and
:func:`fme._core.summary.summarise` turns a batch into a :class:`~fme._core.summary.Summary` of sums that merge
exactly (counts, Chan's pairwise mean and sum of squares, NLM counts, the
delta method's Jacobian sums). The pandas path runs the kernel on the whole
frame (it batches predictions inside); the Dask path (:mod:`fme._dask.effects`) maps
it over partitions and tree-reduces the summaries.

The one quantity that is not local to a batch is the scale of the flat-path
test (the SD of all predictions, :func:`fme._nlm.evaluate.classify`): a plan may
carry it (``Plan.spread``: on Dask merged by the pass itself, :mod:`fme._dask.nlm`, or for
several outputs by a first pass); otherwise the
batch's own predictions give it, as for a pandas frame evaluated at once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from .._adapters.predictor import Predictor
from .._nlm.budget import ROUTES
from .._nlm.evaluate import NLM_STATUS, classify
from .._nlm.evaluate import nlm_values as _nlm_values
from .._utils.columns import frame_of
from .._utils.memory import Scratch, copy_on_write
from .._utils.progress import progress_bar
from .._utils.threads import MIN_ROWS_PER_THREAD, beside, finite_difference, waited_on_error
from ..inference.delta import evaluate_with_jacobian
from ..inference.estimates import RowInference, sample_inference
from ..inference.methods import compute_rows
from ..nlm import QuadratureRule, nlm_from_path
from ..steps import STACK_CELL_BUDGET, Step, all_float, apply_steps, moving, stack_path
from .exclusions import Notes, every_row, excluded_frame, extrapolation_exclusions, value_exclusions
from .plan import Plan

__all__ = ["Batch", "Predicted", "evaluate_batch", "evaluate_steps", "evaluation_points", "results_meta"]

#: Rows of a batch however wide the stacked frame (bounds the per-batch overhead).
_MIN_BATCH = 10_000


@dataclass(eq=False)
class Batch:
    """One evaluated batch: ``results``/``predictions`` of its evaluated rows and its exclusions."""

    results: pd.DataFrame
    predictions: pd.DataFrame
    code: np.ndarray
    notes: Notes
    index: pd.Index
    cand: np.ndarray
    f0: np.ndarray
    f1: np.ndarray
    rows: RowInference | None
    n_candidates: int
    #: The SD of f along each evaluated row's path (the flat-path test's numerator; None without NLMs).
    nlm_sd: np.ndarray | None = None
    #: The ``excluded`` table when :func:`evaluate_batch` was asked for it, else made when first read.
    excluded_table: pd.DataFrame | None = None

    @property
    def excluded(self) -> pd.DataFrame:
        if self.excluded_table is None:
            self.excluded_table = excluded_frame(self.code, self.notes, self.index)
        return self.excluded_table


def _default_batch(n: int, n_cols: int, rule: QuadratureRule | None) -> int:
    if rule is None:
        return max(n, 1)
    per_row = max(1, n_cols) * max(1, rule.n_evaluations)
    return max(_MIN_BATCH, STACK_CELL_BUDGET // per_row)


@dataclass(eq=False)
class Predicted:
    """What :func:`evaluate_steps` predicted for every row: f(x), f(x + h), the fMEs f(x + h) - f(x) (paper
    §3.2) and, with a rule, the NLMs, the SD of f along each path and each path's rounding scale
    (:func:`fme.nlm.nlm_from_path`)."""

    f0: np.ndarray
    f1: np.ndarray
    fme: np.ndarray
    nlm: np.ndarray | None = None
    sd: np.ndarray | None = None
    scale: np.ndarray | None = None

    def classified(
        self, flat_tol: float, spread: np.ndarray | None, codes: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """A rule's NLMs with flat paths NaN, and each one's status (:func:`fme._nlm.evaluate.classify`)."""
        nlm, sd = cast(np.ndarray, self.nlm), cast(np.ndarray, self.sd)  # set with a rule, as is scale
        return classify(nlm, sd, self.f0, self.f1, flat_tol, spread=spread, scale=self.scale, codes=codes)


def evaluate_steps(
    predictor: Predictor,
    X: pd.DataFrame,
    steps: tuple[Step, ...],
    rule: QuadratureRule | None,
    batch_size: int | None,
    h: Mapping[str, np.ndarray] | None = None,
    progress: bool | None = False,
) -> Predicted:
    """f(x), f(x + h), the fMEs and (with ``rule``) the NLM, the SD of f along each path and its rounding scale
    for all rows of ``X``, batched."""
    n = len(X)
    size = batch_size or _default_batch(n, X.shape[1], rule)
    f0_parts, f1_parts, fme_parts, nlm_parts, sd_parts, scale_parts = [], [], [], [], [], []
    label = ", ".join(s.describe() for s in steps) + (" (per-row shrunk)" if h is not None else "")
    t_int = None if rule is None else rule.nodes[rule.interior]
    # One block of memory for every batch's stacked NLM frame (all-float frames), while the model keeps none
    path_scratch = Scratch()
    path_mem = None
    starts = range(0, n, size)
    for start in progress_bar(starts, total=len(starts), desc=f"fME {label}", progress=progress):
        sl = slice(start, min(start + size, n))
        xb = X.iloc[sl]
        hb = None if h is None else {k: v[sl] for k, v in h.items()}
        rows = (start, sl.stop, n)
        # Every frame's source is read before any predict call, so a model that modifies its input in place
        # cannot leak into x + h or the path nodes (each frame goes to predict once): the path nodes are built
        # here, x + h here or, under pandas' copy-on-write, beside the model's f(x) call (steps.moving).
        # x + h goes to predict once and is dropped: its memory is kept for the next batch or call
        scratch = Scratch()
        moved = moving(xb, steps, hb, scratch)
        path = None
        with waited_on_error(moved):  # nothing writes into the scratch once this call has left
            if rule is not None and cast(np.ndarray, t_int).size:
                if path_mem is None and all_float(xb):
                    path_mem = path_scratch.take(X.shape[1] * cast(np.ndarray, t_int).size * min(size, n))
                path = stack_path(xb, steps, cast(np.ndarray, t_int), hb, path_mem)
        f0, f1, fme = _predict_pair(predictor, xb, moved, label, rows)
        del moved
        scratch.give_back()  # only if nothing else refers to it (the model may keep its input)
        f0_parts.append(f0)
        f1_parts.append(f1)
        fme_parts.append(fme)
        if rule is not None:
            t_int = cast(np.ndarray, t_int)  # set with a rule
            if t_int.size:
                stacked = predictor(path, stage=f"the NLM nodes x + t h for the step {label}", rows=rows)
                del path
                f_int = stacked.reshape((t_int.size, len(xb)) + stacked.shape[1:])
                del stacked
            else:
                f_int = np.empty((0,) + f0.shape)
            v, sd, sc = nlm_from_path(f0, f1, f_int, rule, return_scale=True)
            nlm_parts.append(v)
            sd_parts.append(sd)
            scale_parts.append(sc)
            del f_int
            if path_scratch.shared(views=1):
                # the model kept its input (or a view of it): the next batch's frame in fresh memory
                path_scratch, path_mem = Scratch(), None
    del path_mem
    path_scratch.give_back()
    out = Predicted(*(p[0] if len(p) == 1 else np.concatenate(p) for p in (f0_parts, f1_parts, fme_parts)))
    if rule is not None:
        out.nlm, out.sd, out.scale = (np.concatenate(p) for p in (nlm_parts, sd_parts, scale_parts))
    return out


def _predict_pair(
    predictor: Predictor,
    x: pd.DataFrame,
    moved: Callable[[], pd.DataFrame],
    label: str,
    rows: tuple[int, int, int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """f(x), f(x + h) and their difference, the fMEs: x + h written while the model predicts f(x) (``moved``:
    :func:`fme.steps.moving`, waited for even when f(x) fails), both predictions checked finite by the
    subtraction's own pass (:func:`fme._utils.threads.finite_difference`), not by one pass each; a value that is
    not raises the error each prediction's own check gives, f(x)'s first, as if each had been checked as it
    came."""
    stages = ("f(x)", f"f(x + h) for the step {label}")
    with waited_on_error(moved):
        f0 = predictor(x, stage=stages[0], rows=rows, check=False)
    frame = moved()
    try:
        f1 = predictor(frame, stage=stages[1], rows=rows, check=False)
    except BaseException:
        predictor.check(f0, stages[0], rows)  # f(x)'s fault is reported first, as when it was checked on arrival
        raise
    fme, finite = finite_difference(f1, f0)
    if not finite:
        predictor.check(f0, stages[0], rows)
        predictor.check(f1, stages[1], rows)
    return f0, f1, fme


# ----------------------------------------------------------------- the kernel
def evaluate_batch(plan: Plan, data: pd.DataFrame, with_rows: bool = True, with_excluded: bool = False) -> Batch:
    """fMEs (and NLMs, exclusions, inference ingredients) of every row of ``data`` under ``plan``.

    Exclusion bookkeeping first (:mod:`fme._core.exclusions`: missing, already at
    the level, extrapolation), then the predictions of the rows left, then the
    frames. Never raises for a batch without evaluable rows (a Dask partition
    may have none); the caller decides whether the whole data had any. ``with_excluded``: the ``excluded``
    table made before the predictions, for a caller that returns it (made after them, once the passes over the
    rows have streamed the caches out, the same frame takes several times as long).
    """
    cand, X, h, extra_cols, code, notes, n_candidates = _points(plan, data)
    excluded = excluded_frame(code, notes, data.index) if with_excluded else None
    predicted, status, rows, nlm_extra = _evaluate_rows(plan, X, h)
    f0, f1 = predicted.f0, predicted.f1
    out_index = data.index if cand.size == len(data) else data.index[cand]  # every row: the index as it is
    res = _result_columns(plan.names, predicted.fme, predicted.nlm, status, h, extra_cols, nlm_extra)
    results = frame_of(res, out_index)  # the columns are this call's own arrays
    predictions = _predictions_frame(plan.names, f0, f1, out_index)
    if with_rows and plan.names is None and rows is None and cand.size:
        # 'sample' needs only the fMEs: the stepped frame is built for delta and bootstrap alone
        rows = (
            sample_inference(res["fme"])
            if plan.method == "sample"
            else compute_rows(
                plan.method,
                plan.model,
                [(X, apply_steps(X, plan.steps, h))],
                [res["fme"]],
                [f0],
                plan.bootstrap,
                plan.target_class,
            )[0]
        )
    return Batch(
        results=results,
        predictions=predictions,
        code=code,
        notes=notes,
        index=data.index,
        cand=cand,
        f0=f0,
        f1=f1,
        rows=rows,
        n_candidates=n_candidates,
        nlm_sd=predicted.sd if plan.settings is not None else None,
        excluded_table=excluded,
    )


def _points(
    plan: Plan, data: pd.DataFrame
) -> tuple[np.ndarray, pd.DataFrame, dict[str, np.ndarray] | None, dict[str, np.ndarray], np.ndarray, Notes, int]:
    """The exclusion bookkeeping of a batch (no prediction): the rows to evaluate (positions, model columns),
    their effective steps, the detector's extra columns, the exclusion codes and notes, the candidates' count."""
    X_all = plan.predictor.select(data)
    code, notes = value_exclusions(data, plan.steps, plan.complete_cols, plan.known_levels)
    cand = np.flatnonzero(code == 0) if code.any() else every_row(code.size)  # none excluded: no mask
    n_candidates = int(cand.size)
    # Every row a candidate: the frame itself, not a gathered copy of it. The model is then handed columns it
    # shares with ``data`` (fme's own shallow copy of the caller's frame, the front door's), which only
    # copy-on-write keeps safe: a model writing to its input then copies the block first.
    X_cand = X_all if n_candidates == len(data) and copy_on_write() else X_all.iloc[cand]
    cand, X, h, extra_cols = extrapolation_exclusions(plan, X_cand, cand, code, notes)
    return cand, X, h, extra_cols, code, notes, n_candidates


def evaluation_points(plan: Plan, data: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The rows :func:`evaluate_batch` would evaluate, without predicting: their positions, the points x and
    x + h (model columns; the effective steps under ``shrink``) and every row's exclusion code. For quantities
    of the same two point sets that predict them their own way (the delta method's level Jacobians of
    :func:`fme.avg_comparisons` build each design matrix once)."""
    cand, X, h, _, code, _, _ = _points(plan, data)
    return cand, X, apply_steps(X, plan.steps, h), code


def _evaluate_rows(
    plan: Plan, X: pd.DataFrame, h: Mapping[str, np.ndarray] | None
) -> tuple[Predicted, np.ndarray | None, RowInference | None, dict[str, Any]]:
    """What was predicted for the rows ``X`` to evaluate (f(x), f(x + h), the fMEs and, if the plan asks for NLMs,
    the NLMs and path SDs), the NLMs' status, from the delta method's design-matrix route only the inference rows,
    and the NLM method's extra columns (Gauss-Kronrod: ``err``, ``route``)."""
    predictor, parsed, rule, settings, names = plan.predictor, plan.steps, plan.rule, plan.settings, plan.names
    shape0 = (0,) if names is None else (0, len(names))
    fast = None
    status = None
    rows = None
    extra: dict[str, Any] = {}
    if len(X) == 0:
        out = Predicted(np.empty(shape0), np.empty(shape0), np.empty(shape0))
        if settings is not None:
            out.nlm, status, out.sd = np.empty(shape0), np.empty(shape0, dtype=object), np.empty(shape0)
            if settings.method == "gauss-kronrod":
                extra = {"err": np.empty(shape0), "route": np.empty(0, dtype=object)}
        return out, status, rows, extra
    if plan.method == "delta" and settings is None and names is None:
        # statsmodels GLM-type models: predictions and Jacobian from one design matrix per point set
        fast = evaluate_with_jacobian(plan.model, X, apply_steps(X, parsed, h))
    if fast is not None:
        f0, f1, rows = fast
        return Predicted(f0, f1, f1 - f0), status, rows, extra
    out = evaluate_steps(predictor, X, parsed, rule, plan.batch_size, h, plan.progress)
    if settings is not None and rule is not None:
        out.nlm, status = out.classified(settings.flat_tol, plan.spread, codes=True)
    elif settings is not None:
        out.nlm, status, out.sd, extra = _nlm_values(
            settings,
            predictor,
            X,
            parsed,
            h,
            out.f0,
            out.f1,
            plan.batch_size,
            spread=plan.spread,
            return_sd=True,
            progress=plan.progress,
            codes=True,
        )
    return out, status, rows, extra


def _result_columns(
    names: list[Any] | None,
    fme: np.ndarray,
    nlm_values: np.ndarray | None,
    status: np.ndarray | None,
    h: Mapping[str, np.ndarray] | None,
    extra_cols: dict[str, np.ndarray],
    nlm_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The columns of ``results``: fME (``fme``, rows x outputs for several), NLM and status per output
    (Gauss-Kronrod: ``nlm_error`` per output and ``nlm_route``), effective steps, extrapolation flags. ``status``
    and the route come as codes (int8, indices into :data:`~fme._nlm.status.NLM_STATUS`,
    :data:`~fme._nlm.budget.ROUTES`) or labels."""
    res: dict[str, Any] = {}
    nlm_extra = nlm_extra or {}
    # the route's labels decoded on a helper while the status labels are decoded here (pyarrow leaves the GIL)
    route = nlm_extra.get("route", np.empty(0, dtype=object))
    route_labels = beside(lambda: _labels(route, ROUTES), now=route.size < MIN_ROWS_PER_THREAD)
    if names is None:
        res["fme"] = fme
        if nlm_values is not None:
            res["nlm"] = nlm_values
            res["nlm_status"] = _labels(cast(np.ndarray, status), NLM_STATUS)
            if "err" in nlm_extra:
                res["nlm_error"] = nlm_extra["err"]
                res["nlm_route"] = route_labels()
    else:
        for j, c in enumerate(names):
            res[f"fme_{c}"] = np.ascontiguousarray(fme[:, j])
        if nlm_values is not None:
            for j, c in enumerate(names):
                res[f"nlm_{c}"] = nlm_values[:, j]
            for j, c in enumerate(names):
                res[f"nlm_status_{c}"] = _labels(cast(np.ndarray, status)[:, j], NLM_STATUS)  # set with the NLMs
            if "err" in nlm_extra:
                for j, c in enumerate(names):
                    res[f"nlm_error_{c}"] = nlm_extra["err"][:, j]
                res["nlm_route"] = route_labels()
    if h is not None:
        for feat, values in h.items():
            res[f"step_{feat}"] = values
    res.update(extra_cols)
    return res


def _labels(values: np.ndarray, labels: tuple[str, ...]) -> Any:
    """The column of labels ``labels[values]`` (``values``: int8 codes; other arrays are labels already), as the
    result frame would hold the labels: pandas' string dtype where it is pyarrow-backed, built from the codes in
    one pass (pandas converts 10^6 Python strings one by one: 0.1 s), else an object array."""
    if values.dtype != np.int8:
        return values
    dtype = _label_dtype()
    if dtype is None:
        return np.asarray(labels, dtype=object)[values]
    import pyarrow as pa

    if values.size and values.min() == values.max():  # one label for every row (the usual status): repeated
        same = pa.repeat(pa.scalar(labels[int(values[0])], type=pa.large_string()), values.size)
        return pd.array(same, dtype=dtype)
    decoded = pa.DictionaryArray.from_arrays(pa.array(values), pa.array(labels, type=pa.large_string()))
    return pd.array(decoded.dictionary_decode(), dtype=dtype)


@functools.cache
def _label_dtype() -> Any:
    """The dtype pandas gives a column of strings when it is pyarrow's (else None: the labels stay objects)."""
    dtype = pd.DataFrame({"s": np.asarray(["ok"], dtype=object)})["s"].dtype
    return dtype if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow" else None


def _predictions_frame(names: list[Any] | None, f0: np.ndarray, f1: np.ndarray, index: pd.Index) -> pd.DataFrame:
    if names is None:  # the predictions' own arrays, not copied into one block
        return frame_of({"f_x": f0, "f_x_step": f1}, index)
    return pd.DataFrame(
        {
            **{f"f_x_{c}": f0[:, j] for j, c in enumerate(names)},
            **{f"f_x_step_{c}": f1[:, j] for j, c in enumerate(names)},
        },
        index=index,
    )


def results_meta(plan: Plan, index: pd.Index) -> pd.DataFrame:
    """The empty ``results`` frame of ``plan`` (the columns and dtypes every batch gives)."""
    empty = pd.DataFrame(index=index[:0])
    names = plan.names
    cols: dict[str, Any] = {}
    outs = [""] if names is None else [f"_{c}" for c in names]
    for o in outs:
        cols[f"fme{o}"] = np.empty(0)
    if plan.settings is not None:
        for o in outs:
            cols[f"nlm{o}"] = np.empty(0)
        for o in outs:
            cols[f"nlm_status{o}"] = np.empty(0, dtype=object)
        if plan.settings.method == "gauss-kronrod":
            for o in outs:
                cols[f"nlm_error{o}"] = np.empty(0)
            cols["nlm_route"] = np.empty(0, dtype=object)
    if plan.detector is not None and plan.policy == "shrink":
        for s in plan.steps:
            cols[f"step_{s.feature}"] = np.empty(0)
    if plan.detector is not None and plan.policy == "keep":
        cols["extrapolation"] = np.empty(0, dtype=bool)
        cols["extrapolation_point"] = np.empty(0, dtype=object)
    return pd.DataFrame(cols, index=empty.index)
